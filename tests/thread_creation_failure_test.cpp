// tests/thread_creation_failure_test.cpp - what the pool, the farm, the
// pipeline and the farm manager do when the OS refuses them a thread.
//
// This program defines pthread_create, so std::thread's calls (from
// libstdc++) come here first; fail_thread_creation_in(n) makes the n-th
// creation from now on, by any thread, return EAGAIN, as the kernel does at
// a thread or memory limit, and std::thread throws std::system_error.
// Every other creation goes on to the next definition (the sanitizer's
// interceptor in the TSan and ASan builds, whose runtimes GCC links as
// shared libraries, then glibc's). Each component must report the error
// to its caller, join the threads it did start, destroy what they held and
// stay usable: no std::terminate, no hang, no leak (LeakSanitizer).
#include "queues/tracked.hpp"

#include <lfcore/farm.hpp>
#include <lfcore/farm_manager.hpp>
#include <lfcore/pipeline.hpp>
#include <lfcore/work_stealing_pool.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <dlfcn.h>
#include <optional>
#include <pthread.h>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace {

std::atomic<int> creations_until_failure{0}; // 0: never fail
std::atomic<bool> creation_failed{false};

/// Makes the n-th thread creation from now on (by any thread) fail; 0 disarms.
void fail_thread_creation_in(int n) {
  creation_failed = false;
  creations_until_failure = n;
}

} // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                              void* arg) noexcept {
  using create_fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const auto next_create = reinterpret_cast<create_fn>(dlsym(RTLD_NEXT, "pthread_create"));
  // Decrements a positive count; a failed CAS means another creation took a step.
  int left = creations_until_failure.load();
  while (left > 0 && !creations_until_failure.compare_exchange_weak(left, left - 1)) {
  }
  if (left == 1) {
    creation_failed = true;
    // Refuse late, so that the threads started before run into full or
    // empty channels first: what is tested is how they are stopped there.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return EAGAIN;
  }
  return next_create(thread, attr, start, arg);
}

namespace {

// Live instances are counted, so that a test sees items left in channels destroyed.
using test::tracked;

auto tracked_source(long n) {
  return [i = 0L, n]() mutable -> std::optional<tracked> {
    if (i == n) return std::nullopt;
    return tracked(i++);
  };
}

// The interposer works: a refused std::thread throws, the next one starts.
TEST(thread_creation_failure, std_thread_throws_system_error) {
  fail_thread_creation_in(1);
  EXPECT_THROW(std::thread([] {}), std::system_error);
  EXPECT_TRUE(creation_failed);
  std::thread t([] {});
  t.join();
}

TEST(thread_creation_failure, pool_constructor_throws_and_joins_the_started_workers) {
  constexpr unsigned workers = 4;
  for (int n = 1; n <= static_cast<int>(workers); ++n) {
    SCOPED_TRACE("creation " + std::to_string(n) + " fails");
    fail_thread_creation_in(n);
    EXPECT_THROW(lfcore::work_stealing_pool pool(workers), std::system_error);
    EXPECT_TRUE(creation_failed);
  }
  fail_thread_creation_in(0);
  lfcore::work_stealing_pool pool(workers);
  EXPECT_EQ(pool.submit([] { return 42; }).get(), 42);
}

lfcore::farm_options farm_options(unsigned nw, lfcore::scheduling policy, bool ordered) {
  lfcore::farm_options o;
  o.workers = nw;
  o.policy = policy;
  o.ordered = ordered;
  o.capacity = 8; // small channels: started threads block on them
  o.prefetch = 1;
  return o;
}

// Fails each of a run's thread creations in turn (workers, then collector,
// then emitter); then the same farm runs the whole stream exactly once.
void farm_reports_the_failure_and_runs_again(unsigned nw, lfcore::scheduling policy, bool ordered,
                                             bool with_sink) {
  SCOPED_TRACE("nw " + std::to_string(nw) + (ordered ? ", ordered" : "") +
               (with_sink ? ", with a sink" : ", no sink"));
  std::atomic<long> ran{0};
  lfcore::farm<tracked> f(
      [&](tracked t) {
        ran.fetch_add(1);
        return t;
      },
      farm_options(nw, policy, ordered));
  constexpr long n = 5'000;
  std::vector<std::uint8_t> seen(n, 0);
  auto sink = [&](tracked t) { ++seen.at(static_cast<std::size_t>(t.value)); };
  const int creations = static_cast<int>(nw) + 2; // at most: workers, collector, emitter
  for (int k = 1; k <= creations; ++k) {
    fail_thread_creation_in(k);
    try {
      if (with_sink)
        f.run_and_wait(tracked_source(n), sink);
      else
        f.run_and_wait(tracked_source(n));
      EXPECT_FALSE(creation_failed) << "creation " << k << " failed, and the run returned";
    } catch (const std::system_error&) {
      EXPECT_TRUE(creation_failed) << "creation " << k;
    }
    EXPECT_EQ(tracked::live.load(), 0) << "creation " << k;
  }
  fail_thread_creation_in(0);
  std::fill(seen.begin(), seen.end(), 0);
  ran = 0;
  if (with_sink) {
    f.run_and_wait(tracked_source(n), sink);
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "task " << i;
  } else {
    f.run_and_wait(tracked_source(n));
  }
  EXPECT_EQ(ran.load(), n);
  EXPECT_EQ(tracked::live.load(), 0);
}

TEST(thread_creation_failure, farm_run_rethrows_it_joins_and_runs_again) {
  for (const bool with_sink : {true, false})
    for (unsigned nw = 1; nw <= 3; ++nw) {
      farm_reports_the_failure_and_runs_again(nw, lfcore::scheduling::round_robin, false,
                                              with_sink);
      farm_reports_the_failure_and_runs_again(nw, lfcore::scheduling::on_demand, true, with_sink);
    }
}

TEST(thread_creation_failure, pipeline_rethrows_it_and_stops_the_started_stages) {
  lfcore::farm<tracked> doubling([](tracked t) { return tracked(t.value * 2); },
                                 farm_options(2, lfcore::scheduling::round_robin, false));
  constexpr long n = 5'000;
  // Eight creations: the stage threads (source, +1, the farm stage, +0) by
  // run_and_wait, and the farm's (2 workers, a collector, an emitter) by the
  // farm stage's thread, concurrently with the last stage's.
  for (int k = 1; k <= 8; ++k) {
    SCOPED_TRACE("creation " + std::to_string(k) + " fails");
    long sunk = 0;
    fail_thread_creation_in(k);
    EXPECT_THROW(lfcore::make_pipeline(tracked_source(n), 8)
                     .then([](tracked t) { return tracked(t.value + 1); })
                     .then(doubling)
                     .then([](tracked t) { return t; })
                     .run_and_wait([&](tracked) { ++sunk; }),
                 std::system_error);
    EXPECT_TRUE(creation_failed);
    EXPECT_LT(sunk, n);
    EXPECT_EQ(tracked::live.load(), 0);
  }
  fail_thread_creation_in(0);
}

TEST(thread_creation_failure, farm_manager_start_throws_and_can_start_later) {
  lfcore::farm<int, void> f([](int) {}, farm_options(2, lfcore::scheduling::round_robin, false));
  lfcore::farm_manager manager(f, lfcore::farm_contract::keep_up());
  fail_thread_creation_in(1);
  EXPECT_THROW(manager.start(), std::system_error);
  EXPECT_TRUE(creation_failed);
  manager.start();
  manager.stop();
}

} // namespace
