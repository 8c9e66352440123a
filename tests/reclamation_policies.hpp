// The reclamation policies the container suites run on (typed tests): hazard
// pointers always, liburcu's memb flavour when the build found liburcu.
#pragma once

#include <lfcore/reclamation.hpp>
#if defined(LFCORE_TEST_URCU)
#include <lfcore/urcu.hpp>
#endif

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

namespace test {

#if defined(LFCORE_TEST_URCU)
using reclamation_policies =
    ::testing::Types<lfcore::hazard_pointer_reclamation, lfcore::urcu::memb>;
#else
using reclamation_policies = ::testing::Types<lfcore::hazard_pointer_reclamation>;
#endif

struct reclamation_name {
  template <class R>
  static std::string GetName(int) {
    return std::is_same_v<R, lfcore::hazard_pointer_reclamation> ? "hazard_pointers" : "urcu_memb";
  }
};

} // namespace test
