// Stress for farm and pipeline: many short-lived farms with random shapes
// (1-8 workers; channels of 1-4 slots so that every hand-over meets a full or
// empty ring, or in a quarter of the runs of 256, where results are left to
// gather and a filling ring must wake the collector; both policies, ordered
// or not), freeze/thaw from another thread throughout, and exceptions at
// random points. Every run must deliver each
// task exactly once (in order when ordered), or rethrow and leak nothing.
// LFCORE_STRESS_SCALE=N multiplies the work.
#include "scale.hpp"
#include <lfcore/farm.hpp>
#include <lfcore/pipeline.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

long scaled(long n) {
  return lfcore_stress::scaled(n, 10);
}

struct counted {
  static inline std::atomic<long> live{0};
  std::uint64_t value;
  explicit counted(std::uint64_t v) : value(v) { ++live; }
  counted(counted&& o) noexcept : value(o.value) { ++live; }
  counted& operator=(counted&&) = default;
  ~counted() { --live; }
};

lfcore::farm_options random_shape(std::mt19937& rng) {
  lfcore::farm_options o;
  o.workers = 1 + rng() % 8;
  o.policy = rng() % 2 ? lfcore::scheduling::on_demand : lfcore::scheduling::round_robin;
  o.capacity = rng() % 4 == 0 ? 256 : 1 + rng() % 4;
  o.prefetch = 1 + rng() % 3;
  o.ordered = rng() % 2;
  return o;
}

TEST(farm_stress, random_shapes_with_freeze_thaw_and_failures) {
  std::mt19937 rng(2026);
  const long runs = scaled(400);
  for (long run = 0; run < runs; ++run) {
    const lfcore::farm_options o = random_shape(rng);
    const std::uint64_t n = 1 + rng() % 3000;
    // A third of the runs throw from a worker at a random task.
    const std::uint64_t bad = rng() % 3 == 0 ? rng() % n : n;
    lfcore::farm<counted> f(
        [bad](counted c) {
          if (c.value == bad) throw std::runtime_error("bad task");
          c.value = c.value * 3 + 1;
          return c;
        },
        o);
    std::atomic<bool> done{false};
    std::thread storm([&, seed = rng()] {
      std::mt19937 r(seed);
      while (!done.load(std::memory_order_relaxed)) {
        f.set_active_workers(1 + static_cast<unsigned>(r() % o.workers));
        std::this_thread::yield();
      }
    });
    std::vector<std::uint8_t> seen(n, 0);
    std::uint64_t next = 0;
    bool in_order = true, threw = false;
    try {
      f.run_and_wait(
          [i = std::uint64_t{0}, n]() mutable -> std::optional<counted> {
            if (i == n) return std::nullopt;
            return counted(i++);
          },
          [&](counted c) {
            const std::uint64_t x = (c.value - 1) / 3;
            ASSERT_LT(x, n);
            ++seen[x];
            if (x != next++) in_order = false;
          });
    } catch (const std::runtime_error&) {
      threw = true;
    }
    done = true;
    storm.join();
    ASSERT_EQ(threw, bad < n) << "run " << run;
    if (!threw) {
      for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "run " << run << " task " << i;
      if (o.ordered) {
        ASSERT_TRUE(in_order) << "run " << run;
      }
    } else {
      for (std::uint64_t i = 0; i < n; ++i) ASSERT_LE(seen[i], 1) << "run " << run << " task " << i;
    }
    ASSERT_EQ(counted::live.load(), 0) << "run " << run;
  }
}

// Master-worker loops of random shapes: every generated task comes back
// once; one run in four throws from on_result at a random result, which
// run_with_feedback rethrows after no further on_result call.
TEST(farm_stress, feedback_loops_terminate) {
  std::mt19937 rng(11);
  const long runs = scaled(200);
  for (long run = 0; run < runs; ++run) {
    lfcore::farm_options o = random_shape(rng);
    lfcore::farm<std::uint32_t> f([](std::uint32_t depth) { return depth; }, o);
    const auto roots = static_cast<std::uint32_t>(1 + rng() % 20);
    const auto depth = static_cast<std::uint32_t>(1 + rng() % 8);
    const std::uint64_t total = static_cast<std::uint64_t>(roots) * ((1u << depth) - 1);
    const std::uint64_t fail_at = run % 4 == 0 ? 1 + rng() % total : 0; // 0: no failure
    std::uint64_t results = 0;
    try {
      f.run_with_feedback(
          [i = std::uint32_t{0}, roots]() mutable -> std::optional<std::uint32_t> {
            if (i == roots) return std::nullopt;
            ++i;
            return 0u;
          },
          [&](std::uint32_t d, const auto& submit) {
            if (++results == fail_at) throw std::runtime_error("on_result");
            if (d + 1 < depth) {
              submit(d + 1);
              submit(d + 1);
            }
          });
      ASSERT_EQ(fail_at, 0u) << "run " << run << ": no exception";
      ASSERT_EQ(results, total) << "run " << run;
    } catch (const std::runtime_error&) {
      ASSERT_EQ(results, fail_at) << "run " << run;
    }
  }
}

// Pipelines whose farm stages have random shapes; one run in four fails in
// its sequential stage.
TEST(farm_stress, pipelines_of_random_farms) {
  std::mt19937 rng(5);
  const long runs = scaled(150);
  for (long run = 0; run < runs; ++run) {
    lfcore::farm_options a = random_shape(rng), b = random_shape(rng);
    a.ordered = b.ordered = true;
    lfcore::farm<counted> first([](counted c) { return c; }, a);
    lfcore::farm<counted> second([](counted c) { return c; }, b);
    const std::uint64_t n = 1 + rng() % 2000;
    const std::uint64_t bad = rng() % 4 == 0 ? rng() % n : n;
    std::uint64_t next = 0;
    bool ok = true, threw = false;
    try {
      lfcore::make_pipeline(
          [i = std::uint64_t{0}, n]() mutable -> std::optional<counted> {
            if (i == n) return std::nullopt;
            return counted(i++);
          },
          1 + rng() % 4)
          .then(first)
          .then([bad](counted c) {
            if (c.value == bad) throw std::logic_error("bad stage");
            return c;
          })
          .then(second)
          .run_and_wait([&](counted c) { ok = ok && c.value == next++; });
    } catch (const std::logic_error&) {
      threw = true;
    }
    ASSERT_EQ(threw, bad < n) << "run " << run;
    ASSERT_TRUE(ok) << "run " << run;
    if (!threw) {
      ASSERT_EQ(next, n) << "run " << run;
    }
    ASSERT_EQ(counted::live.load(), 0) << "run " << run;
  }
}

} // namespace
