// ThreadSanitizer suppressions for the test binaries that link liburcu,
// compiled into each of them in TSan builds. The runtime asks every program
// for __tsan_default_suppressions(), so a binary run by hand (a soak with
// LFCORE_STRESS_SCALE, a single --gtest_filter) is checked exactly as ctest
// checks it, with no TSAN_OPTIONS to remember.
//
// What is suppressed: liburcu's own allocations. rcu_barrier() allocates a
// completion that liburcu's call_rcu thread frees, ordered by futexes and
// atomics inside the (uninstrumented) library, which TSan cannot see; without
// these lines a stress run reports that free as a race with the calloc. They
// ignore only the allocation calls liburcu itself makes: lfcore's callbacks
// free from lfcore's code and stay checked, through the annotations in
// lfcore/urcu.hpp.
extern "C" const char* __tsan_default_suppressions();

extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:liburcu-memb.so\n"
         "called_from_lib:liburcu-qsbr.so\n"
         "called_from_lib:liburcu-common.so\n";
}
