// The reclamation policies the container suites run on (typed tests): hazard
// pointers always, liburcu's memb flavour when the build found liburcu.
#pragma once

#include <lfcore/reclamation.hpp>
#if defined(LFCORE_TEST_URCU)
#include <lfcore/urcu.hpp>
#endif

// CTest names the typed cases after the policy type, e.g.
// HashTrieMap.InsertFindErase<lfcore::urcu::reclamation<...memb_api>>: no
// name generator, since CMake's gtest_discover_tests only parses numbered
// type-parameter suites.
#include <gtest/gtest.h>

namespace test {

#if defined(LFCORE_TEST_URCU)
using reclamation_policies =
    ::testing::Types<lfcore::hazard_pointer_reclamation, lfcore::urcu::memb>;
#else
using reclamation_policies = ::testing::Types<lfcore::hazard_pointer_reclamation>;
#endif

} // namespace test
