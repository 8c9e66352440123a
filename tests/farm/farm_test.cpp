// tests/farm/farm_test.cpp - lfcore::farm and lfcore::pipeline: exactly-once
// delivery, order, freeze/thaw, exceptions, feedback, pipelines of farms.
#include <lfcore/farm.hpp>
#include <lfcore/farm_model.hpp>
#include <lfcore/pipeline.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <sched.h>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/resource.h>

namespace {

using namespace std::chrono_literals;

// Sanitizers slow everything 5-20x: smaller streams there, same checks.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr std::uint64_t big_stream = 100'000;
#else
constexpr std::uint64_t big_stream = 1'000'000;
#endif

auto counting_source(std::uint64_t n) {
  return [i = std::uint64_t{0}, n]() mutable -> std::optional<std::uint64_t> {
    if (i == n) return std::nullopt;
    return i++;
  };
}

// A value derived from the input, so that a result that is torn or sent to
// the wrong place is caught.
std::uint64_t transform(std::uint64_t x) {
  return x * 0x9E3779B97F4A7C15ULL + 12345;
}
// The input of transform: the multiplier's inverse modulo 2^64 recovers it.
std::uint64_t untransform(std::uint64_t r) {
  return (r - 12345) * 0xF1DE83E19937733DULL;
}

// What a sink saw of the results of transform over tasks 0..n-1.
class delivery_log {
public:
  explicit delivery_log(std::uint64_t n) : seen_(n, 0) {}
  void operator()(std::uint64_t result) {
    const std::uint64_t x = untransform(result);
    if (x >= seen_.size()) {
      ++wrong_;
      return;
    }
    in_order_ = in_order_ && x == count_;
    ++seen_[x];
    ++count_;
  }
  // Every task's result arrived exactly once, and in input order if `ordered`.
  ::testing::AssertionResult exactly_once(bool ordered) const {
    if (wrong_ != 0) return ::testing::AssertionFailure() << wrong_ << " results of no task";
    for (std::uint64_t i = 0; i < seen_.size(); ++i)
      if (seen_[i] != 1)
        return ::testing::AssertionFailure()
               << "task " << i << " delivered " << int(seen_[i]) << " times";
    if (ordered && !in_order_) return ::testing::AssertionFailure() << "out of order";
    return ::testing::AssertionSuccess();
  }

private:
  std::vector<std::uint8_t> seen_;
  std::uint64_t count_ = 0, wrong_ = 0;
  bool in_order_ = true;
};

// Waits until flag is set or 10 s have passed; returns the flag. A task that
// must see its own earlier result delivered waits with it: a result held
// back shows as a time-out instead of a hang.
bool wait_for(const std::atomic<bool>& flag) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!flag.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100us);
  return flag.load();
}

// How a farm of one worker runs: on one thread (the default), with an
// emitter thread, or with an emitter and a collector thread.
enum class one_worker { one_thread, own_emitter, own_emitter_and_collector };

lfcore::farm_options options(unsigned nw, lfcore::scheduling policy, bool ordered = false,
                             one_worker threads = one_worker::one_thread) {
  lfcore::farm_options o;
  o.workers = nw;
  o.policy = policy;
  o.ordered = ordered;
  o.fuse_emitter_with_one_worker = threads == one_worker::one_thread;
  o.fuse_collector_with_one_worker = threads != one_worker::own_emitter_and_collector;
  return o;
}
constexpr one_worker every_one_worker_shape[] = {one_worker::one_thread, one_worker::own_emitter,
                                                 one_worker::own_emitter_and_collector};

struct scheduling_case {
  lfcore::scheduling policy;
  bool ordered;
};

class farm_exactly_once : public ::testing::TestWithParam<scheduling_case> {};

TEST_P(farm_exactly_once, every_task_once_for_nw_1_to_8) {
  const auto [policy, ordered] = GetParam();
  // One worker in each of its shapes, then 2..8.
  std::vector<lfcore::farm_options> cases;
  for (const one_worker shape : every_one_worker_shape)
    cases.push_back(options(1, policy, ordered, shape));
  for (unsigned nw = 2; nw <= 8; ++nw) cases.push_back(options(nw, policy, ordered));
  for (const lfcore::farm_options& o : cases) {
    const unsigned nw = o.workers;
    SCOPED_TRACE("nw " + std::to_string(nw) + (o.fuse_emitter_with_one_worker ? "" : ", emitter") +
                 (o.fuse_collector_with_one_worker ? "" : ", collector"));
    lfcore::farm<std::uint64_t> f(transform, o);
    delivery_log log(big_stream);
    f.run_and_wait(counting_source(big_stream), [&](std::uint64_t r) { log(r); });
    ASSERT_TRUE(log.exactly_once(ordered));
    const lfcore::farm_sensors s = f.sensors();
    EXPECT_EQ(s.arrivals, big_stream);
    EXPECT_EQ(s.completed, big_stream);
    std::uint64_t tasks = 0;
    for (const auto& w : s.workers) tasks += w.tasks;
    EXPECT_EQ(tasks, big_stream);
  }
}

INSTANTIATE_TEST_SUITE_P(modes, farm_exactly_once,
                         ::testing::Values(scheduling_case{lfcore::scheduling::round_robin, false},
                                           scheduling_case{lfcore::scheduling::on_demand, false},
                                           scheduling_case{lfcore::scheduling::round_robin, true},
                                           scheduling_case{lfcore::scheduling::on_demand, true}),
                         [](const auto& param_info) {
                           return std::string(param_info.param.policy ==
                                                      lfcore::scheduling::on_demand
                                                  ? "on_demand"
                                                  : "round_robin") +
                                  (param_info.param.ordered ? "_ordered" : "");
                         });

// Tasks of very uneven cost, so that results finish far out of order.
TEST(farm, ordered_mode_restores_order_of_uneven_tasks) {
  lfcore::farm<int> f(
      [](int x) {
        if (x % 7 == 0) std::this_thread::sleep_for(50us);
        return x;
      },
      options(4, lfcore::scheduling::round_robin, true));
  std::vector<int> out;
  f.run_and_wait(counting_source(5000), [&](int x) { out.push_back(x); });
  std::vector<int> expected(5000);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(out, expected);
}

// Workers wake the collector once per batch of results, but a result of a
// long task must not wait for the batch: here the worker's fourth task waits
// until the sink has seen the first result, so a result held back until the
// worker goes idle would show as a wait that times out.
TEST(farm, results_of_long_tasks_reach_the_sink_while_the_worker_is_busy) {
  for (const one_worker shape : every_one_worker_shape) {
    std::atomic<bool> first_delivered{false};
    std::atomic<bool> seen_by_fourth_task{false};
    lfcore::farm<int> f(
        [&](int x) {
          std::this_thread::sleep_for(1ms); // longer than the farm's result latency
          if (x == 3) seen_by_fourth_task = wait_for(first_delivered);
          return x;
        },
        options(1, lfcore::scheduling::round_robin, false, shape));
    std::vector<int> out;
    f.run_and_wait(counting_source(5), [&](int x) {
      if (x == 0) first_delivered = true;
      out.push_back(x);
    });
    EXPECT_TRUE(seen_by_fourth_task) << "shape " << static_cast<int>(shape);
    EXPECT_EQ(out, (std::vector<int>{0, 1, 2, 3, 4}));
  }
}

// After a pause the collector parks; the first result after it must wake
// the collector at once, not wait for a batch: the task after it waits
// until the sink has seen that result (with a time-out that fails the test).
TEST(farm, first_result_after_a_pause_reaches_a_parked_collector) {
  std::atomic<bool> delivered{false};
  std::atomic<bool> seen{false};
  lfcore::farm<int> f(
      [&](int x) {
        if (x == 2) seen = wait_for(delivered);
        return x;
      },
      options(1, lfcore::scheduling::round_robin, false, one_worker::own_emitter_and_collector));
  int next = 0;
  std::vector<int> out;
  f.run_and_wait(
      [&]() -> std::optional<int> {
        if (next == 1) std::this_thread::sleep_for(50ms); // the collector polls, then parks
        if (next == 3) return std::nullopt;
        return next++;
      },
      [&](int x) {
        if (x == 1) delivered = true;
        out.push_back(x);
      });
  EXPECT_TRUE(seen);
  EXPECT_EQ(out, (std::vector<int>{0, 1, 2}));
}

// By default one worker calls the source and the sink itself, in input
// order, and no other thread does; told not to, the source runs on an
// emitter thread, and then the sink too may get a collector thread. The
// counters read the same whichever threads ran.
TEST(farm, one_worker_runs_source_and_sink_on_the_threads_its_options_say) {
  for (const one_worker shape : every_one_worker_shape) {
    SCOPED_TRACE("shape " + std::to_string(static_cast<int>(shape)));
    std::set<std::thread::id> source_threads, worker_threads, sink_threads;
    lfcore::farm<int> f(
        [&](int x) {
          worker_threads.insert(std::this_thread::get_id());
          return x;
        },
        options(1, lfcore::scheduling::round_robin, false, shape));
    std::vector<int> out;
    f.run_and_wait(
        [&, next = 0]() mutable -> std::optional<int> {
          source_threads.insert(std::this_thread::get_id());
          if (next == 10000) return std::nullopt;
          return next++;
        },
        [&](int x) {
          sink_threads.insert(std::this_thread::get_id());
          out.push_back(x);
        });
    std::vector<int> expected(10000);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(out, expected);
    ASSERT_EQ(source_threads.size(), 1u);
    ASSERT_EQ(worker_threads.size(), 1u);
    ASSERT_EQ(sink_threads.size(), 1u);
    const std::thread::id source = *source_threads.begin(), worker = *worker_threads.begin(),
                          sink = *sink_threads.begin();
    EXPECT_NE(source, std::this_thread::get_id());
    EXPECT_EQ(source == worker, shape == one_worker::one_thread);
    EXPECT_EQ(sink == worker, shape != one_worker::own_emitter_and_collector);
    if (shape == one_worker::own_emitter_and_collector) {
      EXPECT_NE(sink, source);
    }
    const lfcore::farm_sensors s = f.sensors();
    EXPECT_EQ(s.arrivals, 10000u);
    EXPECT_EQ(s.completed, 10000u);
    EXPECT_EQ(s.workers[0].sent, 10000u);
    EXPECT_EQ(s.workers[0].tasks, 10000u);
    EXPECT_EQ(s.workers[0].queued, 0u);
  }
}

TEST(farm, without_collector_runs_every_task) {
  std::atomic<std::uint64_t> sum{0};
  lfcore::farm<std::uint64_t, void> f([&](std::uint64_t x) { sum.fetch_add(x); },
                                      options(3, lfcore::scheduling::on_demand));
  f.run_and_wait(counting_source(100000));
  EXPECT_EQ(sum.load(), 100000ull * 99999 / 2);
  EXPECT_EQ(f.sensors().completed, 100000u);
}

TEST(farm, runs_again_after_a_run) {
  lfcore::farm<int> f([](int x) { return x + 1; }, options(2, lfcore::scheduling::on_demand));
  for (int run = 0; run < 5; ++run) {
    long sum = 0;
    f.run_and_wait(counting_source(1000), [&](int x) { sum += x; });
    EXPECT_EQ(sum, 1000L * 1001 / 2);
  }
}

TEST(farm, empty_stream_ends) {
  lfcore::farm<int> f([](int x) { return x; }, options(4, lfcore::scheduling::round_robin, true));
  int n = 0;
  f.run_and_wait([]() -> std::optional<int> { return std::nullopt; }, [&](int) { ++n; });
  EXPECT_EQ(n, 0);
}

TEST(farm, move_only_tasks_and_results) {
  lfcore::farm<std::unique_ptr<int>> f(
      [](std::unique_ptr<int> p) {
        *p *= 2;
        return p;
      },
      options(3, lfcore::scheduling::on_demand, true));
  int i = 0;
  std::vector<int> out;
  f.run_and_wait(
      [&]() -> std::optional<std::unique_ptr<int>> {
        if (i == 1000) return std::nullopt;
        return std::make_unique<int>(i++);
      },
      [&](std::unique_ptr<int> p) { out.push_back(*p); });
  ASSERT_EQ(out.size(), 1000u);
  for (int k = 0; k < 1000; ++k) EXPECT_EQ(out[k], 2 * k);
}

TEST(farm, from_range_source) {
  const std::vector<int> in{5, 6, 7, 8};
  lfcore::farm<int> f([](int x) { return x * 10; },
                      options(2, lfcore::scheduling::on_demand, true));
  std::vector<int> out;
  f.run_and_wait(lfcore::from_range(in.begin(), in.end()), [&](int x) { out.push_back(x); });
  EXPECT_EQ(out, (std::vector<int>{50, 60, 70, 80}));
}

TEST(farm, invalid_options_are_rejected) {
  auto id = [](int x) { return x; };
  lfcore::farm_options o;
  o.workers = 0;
  EXPECT_THROW((lfcore::farm<int>(id, o)), std::invalid_argument);
  o = {};
  o.capacity = 0;
  EXPECT_THROW((lfcore::farm<int>(id, o)), std::invalid_argument);
  o = {};
  o.prefetch = 0;
  EXPECT_THROW((lfcore::farm<int>(id, o)), std::invalid_argument);
  o = {};
  o.pinning.kind = lfcore::pinning::list;
  EXPECT_THROW((lfcore::farm<int>(id, o)), std::invalid_argument);
  o = {};
  o.result_latency = 0us;
  EXPECT_THROW((lfcore::farm<int>(id, o)), std::invalid_argument);
  o.result_latency = -5us;
  EXPECT_THROW((lfcore::farm<int>(id, o)), std::invalid_argument);
  EXPECT_THROW((lfcore::farm<int>(nullptr)), std::invalid_argument);
}

// The smallest result latency, and one far longer than a ring takes to fill
// (so the collector cuts its naps to the rate results arrive at): nothing is
// lost, duplicated or (ordered) reordered. (The CPU the cut saves is measured
// in bench/results/farm, not asserted here.)
TEST(farm, any_result_latency_delivers_every_result_once) {
  constexpr std::uint64_t n = 200'000;
  for (const auto latency : {1us, 20'000us})
    for (const bool ordered : {false, true})
      for (unsigned nw = 1; nw <= 3; ++nw) {
        // One worker with a collector thread: the latency applies to it.
        lfcore::farm_options o = options(nw, lfcore::scheduling::round_robin, ordered,
                                         one_worker::own_emitter_and_collector);
        o.result_latency = latency;
        lfcore::farm<std::uint64_t> f(transform, o);
        delivery_log log(n);
        f.run_and_wait(counting_source(n), [&](std::uint64_t r) { log(r); });
        EXPECT_TRUE(log.exactly_once(ordered))
            << "latency " << latency.count() << " us, nw " << nw << (ordered ? ", ordered" : "");
      }
}

TEST(farm, a_second_concurrent_run_is_refused) {
  std::atomic<bool> go{false};
  lfcore::farm<int> f(
      [&](int x) {
        while (!go.load()) std::this_thread::yield();
        return x;
      },
      options(1, lfcore::scheduling::on_demand));
  std::thread first([&] { f.run_and_wait(counting_source(10), [](int) {}); });
  while (!f.sensors().running) std::this_thread::yield();
  EXPECT_THROW(f.run_and_wait(counting_source(10), [](int) {}), std::logic_error);
  go = true;
  first.join();
}

// ------------------------------------------------------------ freeze / thaw

// Freeze and thaw at random while a stream runs: nothing lost, duplicated or
// (in ordered mode) reordered.
class farm_freeze_thaw : public ::testing::TestWithParam<scheduling_case> {};

TEST_P(farm_freeze_thaw, storm_keeps_exactly_once_and_order) {
  const auto [policy, ordered] = GetParam();
  constexpr std::uint64_t n = big_stream / 5;
  lfcore::farm<std::uint64_t> f(transform, options(6, policy, ordered));
  std::atomic<bool> done{false};
  std::atomic<int> changes{0};
  std::thread storm([&] {
    std::mt19937 rng(7);
    while (!done.load()) {
      f.set_active_workers(1 + static_cast<unsigned>(rng() % 6));
      changes.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
    }
  });
  // The stream waits at each of 32 checkpoints until nw changed since the
  // last one, so at least 31 changes fall inside it however the threads are
  // scheduled (on a loaded machine the stream once ended after one change).
  constexpr std::uint64_t checkpoint_every = n / 32;
  auto paced_source = [i = std::uint64_t{0}, seen = -1, &changes]() mutable {
    if (i % checkpoint_every == 0 && i < n) {
      while (changes.load() <= seen) std::this_thread::yield();
      seen = changes.load();
    }
    return i < n ? std::optional<std::uint64_t>(i++) : std::nullopt;
  };
  delivery_log log(n);
  f.run_and_wait(paced_source, [&](std::uint64_t r) { log(r); });
  done = true;
  storm.join();
  EXPECT_TRUE(log.exactly_once(ordered));
}

INSTANTIATE_TEST_SUITE_P(modes, farm_freeze_thaw,
                         ::testing::Values(scheduling_case{lfcore::scheduling::round_robin, false},
                                           scheduling_case{lfcore::scheduling::on_demand, true}),
                         [](const auto& param_info) {
                           return std::string(param_info.param.ordered ? "on_demand_ordered"
                                                                       : "round_robin");
                         });

// After set_active_workers(1) returns, a frozen worker gets at most one more
// task (a send that read the old count), and thawed workers get tasks again.
TEST(farm, frozen_workers_get_no_new_tasks_and_thawed_ones_do) {
  lfcore::farm<int, void> f([](int) { std::this_thread::sleep_for(20us); },
                            options(3, lfcore::scheduling::on_demand));
  std::atomic<int> produced{0};
  std::atomic<bool> stop{false};
  std::thread run([&] {
    f.run_and_wait([&]() -> std::optional<int> {
      if (stop.load()) return std::nullopt;
      return produced.fetch_add(1);
    });
  });
  while (produced.load() < 200) std::this_thread::yield();
  EXPECT_EQ(f.set_active_workers(1), 1u);
  const lfcore::farm_sensors at_freeze = f.sensors();
  const int mark = produced.load();
  while (produced.load() < mark + 500) std::this_thread::yield();
  const lfcore::farm_sensors frozen = f.sensors();
  for (unsigned i = 1; i < 3; ++i) {
    EXPECT_FALSE(frozen.workers[i].active);
    EXPECT_LE(frozen.workers[i].sent, at_freeze.workers[i].sent + 1) << "worker " << i;
  }
  EXPECT_EQ(f.set_active_workers(99), 3u); // clamped
  const int mark2 = produced.load();
  while (produced.load() < mark2 + 500) std::this_thread::yield();
  const lfcore::farm_sensors thawed = f.sensors();
  for (unsigned i = 1; i < 3; ++i) EXPECT_GT(thawed.workers[i].sent, frozen.workers[i].sent + 10);
  stop = true;
  run.join();
}

// A farm whose source waits sleeps: its threads park (this process uses
// little CPU in the meantime). Frozen workers are parked the same way.
TEST(farm, idle_farm_uses_no_cpu) {
  auto cpu_seconds = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  };
  lfcore::farm<int> f([](int x) { return x; }, options(4, lfcore::scheduling::on_demand));
  f.set_active_workers(2);
  double cpu = 0;
  int calls = 0;
  f.run_and_wait(
      [&]() -> std::optional<int> {
        if (calls++ == 1) {
          const double before = cpu_seconds();
          std::this_thread::sleep_for(400ms);
          cpu = cpu_seconds() - before;
        }
        if (calls > 2) return std::nullopt;
        return calls;
      },
      [](int) {});
  EXPECT_LT(cpu, 0.1) << "seconds of CPU while the farm idled for 0.4 s";
}

// The farm runs on one CPU; when both workers have finished their tasks
// (parked, or about to park), repin() moves it to another. Every task sent
// afterwards runs on the new CPU, each worker's first one included: a worker
// re-pins when it wakes with a task, before running it.
TEST(farm, repin_moves_parked_workers_before_their_next_task) {
  const std::vector<unsigned>& cpus = lfcore::topology().compact_order;
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU";
  const unsigned target = cpus.back();
  constexpr int before = 20, after = 200;
  std::atomic<int> done{0}, off_target{0};
  std::atomic<bool> repinned{false};
  lfcore::farm_options o = options(2, lfcore::scheduling::round_robin);
  o.pinning.kind = lfcore::pinning::list;
  o.pinning.cpus = {cpus.front()};
  lfcore::farm<int, void> f(
      [&](int moved) {
        if (moved != 0 && sched_getcpu() != static_cast<int>(target)) ++off_target;
        ++done;
      },
      o);
  std::thread run([&] {
    int sent = 0;
    f.run_and_wait([&]() -> std::optional<int> {
      if (sent == before && !wait_for(repinned)) return std::nullopt;
      if (sent == before + after) return std::nullopt;
      return sent++ < before ? 0 : 1;
    });
  });
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (done.load() < before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(10ms); // long enough for the workers to park
  lfcore::pin_policy p;
  p.kind = lfcore::pinning::list;
  p.cpus = {target};
  f.repin(p);
  repinned = true;
  run.join();
  EXPECT_EQ(done.load(), before + after);
  EXPECT_EQ(off_target.load(), 0);
}

// ------------------------------------------------------------ exceptions

// Counts live instances: nothing leaks when a run stops half-way.
struct tracked {
  static inline std::atomic<long> live{0};
  int value;
  explicit tracked(int v) : value(v) { ++live; }
  tracked(tracked&& o) noexcept : value(o.value) { ++live; }
  tracked& operator=(tracked&&) = default;
  ~tracked() { --live; }
};

TEST(farm, worker_exception_stops_the_farm_and_is_rethrown) {
  for (bool ordered : {false, true}) {
    {
      lfcore::farm<tracked> f(
          [](tracked t) {
            if (t.value == 5000) throw std::runtime_error("task 5000");
            return t;
          },
          options(4, lfcore::scheduling::round_robin, ordered));
      int i = 0;
      try {
        f.run_and_wait(
            [&]() -> std::optional<tracked> {
              if (i == 1'000'000) return std::nullopt;
              return tracked(i++);
            },
            [](tracked) {});
        FAIL() << "no exception";
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "task 5000");
      }
      EXPECT_LT(i, 1'000'000) << "the source kept going after the failure";
      EXPECT_EQ(tracked::live.load(), 0) << "tasks or results leaked";
      // The farm is usable again.
      int sum = 0;
      f.run_and_wait(
          [&, k = 0]() mutable -> std::optional<tracked> {
            if (k == 10) return std::nullopt;
            return tracked(k++);
          },
          [&](tracked t) { sum += t.value; });
      EXPECT_EQ(sum, 45);
    }
    EXPECT_EQ(tracked::live.load(), 0);
  }
}

TEST(farm, source_and_sink_exceptions_are_rethrown) {
  std::vector<lfcore::farm_options> cases;
  for (const one_worker shape : every_one_worker_shape)
    cases.push_back(options(1, lfcore::scheduling::on_demand, false, shape));
  cases.push_back(options(2, lfcore::scheduling::on_demand));
  for (const lfcore::farm_options& o : cases) {
    const unsigned nw = o.workers;
    lfcore::farm<int> f([](int x) { return x; }, o);
    int i = 0;
    EXPECT_THROW(f.run_and_wait(
                     [&]() -> std::optional<int> {
                       if (i == 100) throw std::out_of_range("source");
                       return i++;
                     },
                     [](int) {}),
                 std::out_of_range);
    EXPECT_THROW(f.run_and_wait(counting_source(100000),
                                [](int x) {
                                  if (x == 50) throw std::length_error("sink");
                                }),
                 std::length_error);
    int sum = 0; // usable again
    f.run_and_wait(counting_source(10), [&](int x) { sum += x; });
    EXPECT_EQ(sum, 45) << "nw " << nw << (o.fuse_emitter_with_one_worker ? "" : ", emitter")
                       << (o.fuse_collector_with_one_worker ? "" : ", collector");
  }
}

// ------------------------------------------------------------ feedback

// Feedback loops run on every one-worker shape and on a farm of three
// workers (whose shape, for one worker only, does not matter).
constexpr std::pair<unsigned, one_worker> feedback_shapes[] = {
    {1u, one_worker::one_thread},
    {1u, one_worker::own_emitter},
    {1u, one_worker::own_emitter_and_collector},
    {3u, one_worker::one_thread}};

// Master-worker: each result below a bound sends two new tasks back, a
// binary tree of known size; the stream ends when no task is in flight.
TEST(farm, feedback_loop_terminates_with_every_task) {
  for (auto policy : {lfcore::scheduling::round_robin, lfcore::scheduling::on_demand})
    for (const auto& [nw, shape] : feedback_shapes) {
      SCOPED_TRACE("nw " + std::to_string(nw) + ", shape " +
                   std::to_string(static_cast<int>(shape)));
      lfcore::farm<std::uint64_t> f([](std::uint64_t x) { return x; },
                                    options(nw, policy, false, shape));
      constexpr std::uint64_t roots = 100,
                              depth_nodes = (1u << 10) - 1; // nodes of a tree of depth 10
      std::uint64_t results = 0;
      f.run_with_feedback(counting_source(roots), [&](std::uint64_t node, const auto& submit) {
        ++results;
        // node encodes (root, index in a heap-numbered tree): children 2i+1, 2i+2.
        const std::uint64_t index = node / roots, root = node % roots;
        for (std::uint64_t c = 2 * index + 1; c <= 2 * index + 2; ++c)
          if (c < depth_nodes) submit(c * roots + root);
      });
      EXPECT_EQ(results, roots * depth_nodes);
    }
}

// on_result runs on the emitter's thread, also inside its wait for results
// (farm_base::wait_until_ready): an exception from it, wherever it comes,
// stops the farm, reaches the caller, and leaks no task or result. Workers
// sleep on every other task so that the emitter often waits (and parks) for
// results; in stress builds a yield right after it announces itself as a
// waiter sometimes lets a result arrive there, and on_result throws inside
// the re-check.
TEST(farm, feedback_exception_stops_the_farm_and_is_rethrown) {
  for (auto policy : {lfcore::scheduling::round_robin, lfcore::scheduling::on_demand})
    for (const auto& [nw, shape] : feedback_shapes)
      for (int throw_at : {1, 37, 500}) {
        SCOPED_TRACE("nw " + std::to_string(nw) + ", shape " +
                     std::to_string(static_cast<int>(shape)) + ", throw at " +
                     std::to_string(throw_at));
        {
          lfcore::farm<tracked> f(
              [](tracked t) {
                if (t.value % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
                return t;
              },
              options(nw, policy, false, shape));
          int results = 0;
          try {
            f.run_with_feedback(
                [i = 0]() mutable -> std::optional<tracked> {
                  if (i == 20) return std::nullopt;
                  return tracked(i++);
                },
                [&](tracked r, const auto& submit) {
                  if (++results == throw_at) throw std::invalid_argument("on_result");
                  submit(tracked(r.value + 20)); // one child each: the stream never ends
                });
            FAIL() << "no exception";
          } catch (const std::invalid_argument& e) {
            EXPECT_STREQ(e.what(), "on_result");
          }
          EXPECT_EQ(results, throw_at) << "on_result ran after it threw";
          EXPECT_EQ(tracked::live.load(), 0) << "tasks or results leaked";
          int sum = 0; // usable again
          f.run_and_wait(
              [k = 0]() mutable -> std::optional<tracked> {
                if (k == 10) return std::nullopt;
                return tracked(k++);
              },
              [&](tracked t) { sum += t.value; });
          EXPECT_EQ(sum, 45);
        }
        EXPECT_EQ(tracked::live.load(), 0);
      }
}

// ------------------------------------------------------------ pipeline

TEST(pipeline, sequential_stages_and_nested_ordered_farms_keep_order) {
  lfcore::farm<int> square([](int x) { return x * x; },
                           options(3, lfcore::scheduling::on_demand, true));
  // One worker: it calls the next stage's push itself (no collector thread).
  lfcore::farm<long, std::string> show([](long x) { return std::to_string(x); },
                                       options(1, lfcore::scheduling::round_robin, true));
  std::vector<std::string> out;
  lfcore::make_pipeline(counting_source(20000), 64)
      .then([](std::uint64_t x) { return static_cast<int>(x); })
      .then(square)
      .then([](int x) { return static_cast<long>(x) + 1; })
      .then(show)
      .run_and_wait([&](std::string s) { out.push_back(std::move(s)); });
  ASSERT_EQ(out.size(), 20000u);
  for (int i = 0; i < 20000; ++i) ASSERT_EQ(out[i], std::to_string(static_cast<long>(i) * i + 1));
}

TEST(pipeline, unordered_farm_stage_delivers_each_item_once) {
  lfcore::farm<std::uint64_t> f(transform, options(4, lfcore::scheduling::on_demand));
  std::vector<std::uint8_t> seen(100000, 0);
  lfcore::make_pipeline(counting_source(100000))
      .then(f)
      .then(untransform)
      .run_and_wait([&](std::uint64_t x) { ++seen.at(x); });
  for (auto s : seen) ASSERT_EQ(s, 1);
}

// A source of a million tracked items; `produced` counts them.
auto tracked_source(int& produced) {
  return [&produced]() -> std::optional<tracked> {
    if (produced == 1'000'000) return std::nullopt;
    return tracked(produced++);
  };
}

void a_failing_stage_stops_everything(unsigned nw, one_worker shape = one_worker::one_thread) {
  SCOPED_TRACE("nw " + std::to_string(nw) + ", shape " + std::to_string(static_cast<int>(shape)));
  lfcore::farm<tracked> f([](tracked t) { return t; },
                          options(nw, lfcore::scheduling::on_demand, false, shape));
  int produced = 0;
  EXPECT_THROW(lfcore::make_pipeline(tracked_source(produced), 16)
                   .then(f)
                   .then([](tracked t) {
                     if (t.value == 3000) throw std::runtime_error("stage");
                     return t;
                   })
                   .run_and_wait([](tracked) {}),
               std::runtime_error);
  EXPECT_LT(produced, 1'000'000);
  EXPECT_EQ(tracked::live.load(), 0);
  // The items a stop leaves in the channels go when run_and_wait returns,
  // not when the pipeline object does.
  {
    produced = 0;
    auto p = lfcore::make_pipeline(tracked_source(produced), 16).then(f).then([](tracked t) {
      if (t.value == 3000) throw std::runtime_error("stage");
      return t;
    });
    EXPECT_THROW(std::move(p).run_and_wait([](tracked) {}), std::runtime_error);
    EXPECT_EQ(tracked::live.load(), 0);
  }
  // A failing sink stops the stages before it.
  produced = 0;
  EXPECT_THROW(
      lfcore::make_pipeline(tracked_source(produced), 16).then(f).run_and_wait([](tracked t) {
        if (t.value == 100) throw std::logic_error("sink");
      }),
      std::logic_error);
  EXPECT_LT(produced, 1'000'000);
  EXPECT_EQ(tracked::live.load(), 0);
  // A failing source stops the stages after it; nothing sunk comes after it.
  produced = 0;
  int sunk = 0;
  EXPECT_THROW(lfcore::make_pipeline(
                   [&]() -> std::optional<tracked> {
                     if (produced == 5000) throw std::out_of_range("source");
                     return tracked(produced++);
                   },
                   16)
                   .then(f)
                   .run_and_wait([&](tracked) { ++sunk; }),
               std::out_of_range);
  EXPECT_LE(sunk, 5000);
  EXPECT_EQ(tracked::live.load(), 0);
  // So does a failing worker of a farm stage, reported as its own.
  lfcore::farm<tracked> failing(
      [](tracked t) {
        if (t.value == 2000) throw std::domain_error("worker");
        return t;
      },
      options(nw, lfcore::scheduling::on_demand, false, shape));
  produced = 0;
  EXPECT_THROW(lfcore::make_pipeline(tracked_source(produced), 16)
                   .then(failing)
                   .then([](tracked t) { return t; })
                   .run_and_wait([](tracked) {}),
               std::domain_error);
  EXPECT_LT(produced, 1'000'000);
  EXPECT_EQ(tracked::live.load(), 0);
  EXPECT_THROW(lfcore::make_pipeline(counting_source(1), 0), std::invalid_argument);
}

TEST(pipeline, a_failing_stage_stops_everything_and_is_rethrown) {
  // One worker (of any shape but the last): the stop reaches it through the sink.
  for (const one_worker shape : every_one_worker_shape) a_failing_stage_stops_everything(1, shape);
  a_failing_stage_stops_everything(2);
}

// ------------------------------------------------------------ model

TEST(farm_model, service_time_speedup_and_workers) {
  lfcore::farm_model m{1e-6, 10e-6, 2e-6};
  EXPECT_DOUBLE_EQ(m.service_time(1), 10e-6);
  EXPECT_DOUBLE_EQ(m.service_time(4), 2.5e-6);
  EXPECT_DOUBLE_EQ(m.service_time(8), 2e-6); // the collector is the bottleneck
  EXPECT_DOUBLE_EQ(m.speedup(4), 4.0);
  EXPECT_DOUBLE_EQ(m.efficiency(8), 10.0 / 2 / 8);
  EXPECT_EQ(m.workers_for(5e-6), 2u);
  EXPECT_EQ(m.workers_for(3e-6), 4u);
  EXPECT_EQ(m.workers_for(10e-6), 1u);
  EXPECT_EQ(m.workers_for(0), 1u);
  EXPECT_NEAR(m.completion_time(1000, 4), 1000 * 2.5e-6 + 13e-6, 1e-12);
}

TEST(farm_model, measured_from_sensors) {
  lfcore::farm<int, void> f([](int) { std::this_thread::sleep_for(200us); },
                            options(2, lfcore::scheduling::on_demand));
  const lfcore::farm_sensors before = f.sensors();
  f.run_and_wait(counting_source(200));
  const lfcore::farm_sensors after = f.sensors();
  const lfcore::farm_model m = lfcore::farm_model::measured(before, after);
  EXPECT_GE(m.t_worker, 200e-6); // a sleep lasts at least its time
  EXPECT_LT(m.t_worker, 50e-3);
}

} // namespace
