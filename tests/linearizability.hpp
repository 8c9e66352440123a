// tests/linearizability.hpp - checks that a recorded concurrent history is
// linearizable (Herlihy & Wing, TOPLAS 1990).
//
// Threads record each operation with the ticks of a shared clock taken just
// before it starts (invoked) and just after it returns (returned): a
// fetch_add, so every tick is unique and "a returned before b was invoked"
// is real-time order. The history is linearizable if some order of the
// operations that respects real-time order replays on the sequential
// specification and reproduces every recorded result. (The clock's seq_cst
// RMWs are full fences between one thread's operations: reorderings inside
// an operation are exercised, reorderings across two are not.)
//
// The search is Wing & Gong's (JPDC 1993) with Lowe's memoization ("Testing
// for linearizability", CCPE 2017): place next an unplaced operation invoked
// before the earliest return among the unplaced ones, if its recorded result
// agrees with the specification's state; backtrack otherwise. Each thread's
// operations are placed in its program order, so a configuration is a count
// per thread plus a state, and each is explored once: at most
// prod(ops of thread t + 1) x (states) of them. Keep histories short (a few
// threads, tens of operations each): a history with no linearization is
// only rejected after all of them were tried. Linearizability is local (a
// property of each object alone), so a map's history is checked key by key.
//
// A Spec provides
//   Spec::state    regular (copyable, ==), the object's state;
//   Spec::state_hash  a hash of it;
//   Spec::op       an operation with its recorded result;
//   std::optional<state> Spec::apply(const state&, const op&): the state
//                  after op, or nullopt if op's result is impossible there;
//   std::string Spec::describe(const op&) for the failure message.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace test {

/// A state_hash for states that are sequences (a queue's or deque's contents).
struct sequence_hash {
  template <class Sequence>
  std::size_t operator()(const Sequence& s) const noexcept {
    std::size_t h = s.size();
    for (const auto& v : s) h = h * 1000003 ^ std::hash<std::decay_t<decltype(v)>>()(v);
    return h;
  }
};

template <class Op>
struct timed {
  Op op;
  std::uint64_t invoked = 0, returned = 0;
  int thread = 0;
};

/// Records what `threads` threads do, on one clock. Each thread calls start()
/// first, then record() around each operation; history() after they joined.
template <class Op>
class recorder {
public:
  explicit recorder(int threads) : logs_(static_cast<std::size_t>(threads)) {}

  /// Returns once every thread called it, so that they run together.
  void start() {
    ready_.fetch_add(1);
    while (ready_.load() < static_cast<int>(logs_.size())) std::this_thread::yield();
  }
  /// Runs call(), which performs one operation and returns it as an Op with
  /// its result, as thread t's next operation.
  template <class Call>
  void record(int t, Call&& call) {
    timed<Op> e;
    e.thread = t;
    e.invoked = clock_.fetch_add(1);
    e.op = call();
    e.returned = clock_.fetch_add(1);
    logs_[static_cast<std::size_t>(t)].push_back(e);
  }
  std::vector<timed<Op>> history() const {
    std::vector<timed<Op>> all;
    for (const auto& log : logs_) all.insert(all.end(), log.begin(), log.end());
    return all;
  }

private:
  std::atomic<std::uint64_t> clock_{0}; // seq_cst: its ticks order the operations in real time
  std::atomic<int> ready_{0};
  std::vector<std::vector<timed<Op>>> logs_;
};

template <class Spec>
class linearizability_checker {
  using state = typename Spec::state;
  using op = typename Spec::op;

public:
  /// Configurations explored before the search gives up (and reports the
  /// history as a failure it could not decide): a guard against a history
  /// too wide to check, not a limit a test should reach.
  static constexpr std::size_t budget = 2'000'000;

  /// True if history (any order) is linearizable from `initial`; otherwise
  /// false, and *why (if given) says so and lists the history in invocation
  /// order.
  static bool check(std::vector<timed<op>> history, const state& initial,
                    std::string* why = nullptr) {
    std::sort(history.begin(), history.end(),
              [](const auto& a, const auto& b) { return a.invoked < b.invoked; });
    linearizability_checker c(history);
    if (c.search(initial)) return true;
    if (why != nullptr) {
      std::ostringstream out;
      if (c.seen_.size() >= budget)
        out << "undecided after " << budget << " configurations (shorten the history); ";
      else
        out << "not linearizable; ";
      out << "the history in invocation order (thread: [invoked, returned] op):\n";
      for (const auto& e : history)
        out << "  " << e.thread << ": [" << e.invoked << ", " << e.returned << "] "
            << Spec::describe(e.op) << "\n";
      *why = out.str();
    }
    return false;
  }

private:
  explicit linearizability_checker(const std::vector<timed<op>>& history) {
    for (const auto& e : history) {
      std::size_t t = 0;
      while (t < threads_.size() && threads_[t].front().thread != e.thread) ++t;
      if (t == threads_.size()) threads_.emplace_back();
      threads_[t].push_back(e); // in invocation order, which is program order
    }
    placed_.assign(threads_.size(), 0);
  }

  bool search(const state& s) {
    // An operation can come next only if it was invoked before every other
    // unplaced one returned: those are each thread's next one.
    std::uint64_t first_return = std::numeric_limits<std::uint64_t>::max();
    bool all_placed = true;
    for (std::size_t t = 0; t < threads_.size(); ++t)
      if (placed_[t] < threads_[t].size()) {
        all_placed = false;
        first_return = std::min(first_return, threads_[t][placed_[t]].returned);
      }
    if (all_placed) return true;
    // Try the candidates in the order they returned: a linearization usually
    // follows the execution closely, so this finds one with little backtracking.
    std::vector<std::size_t> candidates;
    for (std::size_t t = 0; t < threads_.size(); ++t)
      if (placed_[t] < threads_[t].size() && threads_[t][placed_[t]].invoked <= first_return)
        candidates.push_back(t);
    std::sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
      return threads_[a][placed_[a]].returned < threads_[b][placed_[b]].returned;
    });
    for (const std::size_t t : candidates) {
      const timed<op>& next = threads_[t][placed_[t]];
      const std::optional<state> after = Spec::apply(s, next.op);
      if (!after) continue;
      if (seen_.size() >= budget) return false; // gives up: see check()
      ++placed_[t];
      const bool found = seen_.insert({placed_, *after}).second && search(*after);
      --placed_[t];
      if (found) return true;
    }
    return false;
  }

  // A configuration: how many operations of each thread are placed, and the state.
  using configuration = std::pair<std::vector<std::size_t>, state>;
  struct configuration_hash {
    std::size_t operator()(const configuration& c) const {
      std::size_t h = typename Spec::state_hash()(c.second);
      for (const std::size_t n : c.first) h = h * 31 + n;
      return h;
    }
  };

  std::vector<std::vector<timed<op>>> threads_; // each thread's operations in program order
  std::vector<std::size_t> placed_;             // how many of each are placed
  std::unordered_set<configuration, configuration_hash> seen_;
};

} // namespace test
