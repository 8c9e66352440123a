// lfcore_version.h: the macros agree with each other, with the library's
// answer and with the version CMake read from the header.
#include <lfcore/lfcore.hpp>

#include <gtest/gtest.h>

#include <string>

TEST(Version, HeadersLibraryAndBuildAgree) {
  const std::string dotted = std::to_string(LFCORE_VERSION_MAJOR) + "." +
                             std::to_string(LFCORE_VERSION_MINOR) + "." +
                             std::to_string(LFCORE_VERSION_PATCH);
  EXPECT_EQ(dotted, LFCORE_VERSION_STRING);
  EXPECT_EQ(dotted, LFCORE_TEST_PROJECT_VERSION); // CMake's PROJECT_VERSION
  EXPECT_EQ(lfcore_version(), LFCORE_VERSION);
  EXPECT_STREQ(lfcore_version_string(), LFCORE_VERSION_STRING);
  static_assert(LFCORE_VERSION_MINOR < 100 && LFCORE_VERSION_PATCH < 100,
                "LFCORE_VERSION packs each part in two decimal digits");
}
