// lfcore/pipeline.hpp - a pipeline of stages, any of which may be a farm.
//
//   lfcore::make_pipeline(source)          // std::optional<A>() ; nullopt ends
//       .then([](A a) { return B{...}; })  // a sequential stage: a thread of its own
//       .then(my_farm)                     // a farm<B, C>&: its emitter reads the
//                                          // stage before, its collector feeds the next
//       .run_and_wait([](C c) { ... });    // the sink, on the calling thread
//
// Stages are connected by bounded channels (blocking_queue over spsc_queue,
// `capacity` slots): a fast stage waits for a slow one instead of growing
// memory. The pipeline's service time is its slowest stage's (notes 1.2).
// Items leave every stage in the order they entered it, except through a
// farm that is not ordered.
//
// End of stream: the source returns std::nullopt; each stage closes its
// output after its input ends. Exceptions: the first exception of any stage
// (or the sink) stops the pipeline - upstream stages find their output closed
// and stop, downstream stages see their input end - and run_and_wait()
// rethrows it after every stage thread has joined; items still in channels
// are destroyed. If the OS refuses a stage its thread, run_and_wait closes
// every channel, so that the stages already started stop wherever they
// wait, joins them and throws std::system_error. A pipeline runs once
// (run_and_wait consumes it). Spin checks this shutdown for a pipeline of a
// source, a sequential stage and the sink, any of which throws at any item
// (tests/model/blocking_queue.pml, scenario 3): every thread ends, even one
// asleep on a full channel, which is why a stage closes its input too.
#pragma once

#include "lfcore/blocking_queue.hpp"
#include "lfcore/farm.hpp"
#include "lfcore/spsc_queue.hpp"

#include <atomic>
#include <bit>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace lfcore {

namespace detail {

template <class T>
using pipeline_channel = blocking_queue<spsc_queue<T>>;

// Shared by the stages of one pipeline.
struct pipeline_state {
  std::atomic<bool> failed{false};
  std::exception_ptr error; // written once, by the thread that set failed

  void fail(std::exception_ptr e) noexcept {
    if (!failed.exchange(true, std::memory_order_acq_rel)) error = std::move(e);
  }
  bool stopped() const noexcept { return failed.load(std::memory_order_relaxed); }
};

// Thrown through a farm's sink (on its collector, or its one worker) when
// the next stage has stopped.
struct pipeline_stopped {};

} // namespace detail

template <class T>
class pipeline {
public:
  using value_type = T;

  /// A sequential stage running f(T) -> U on a thread of its own.
  template <class F>
  auto then(F f) && -> pipeline<std::invoke_result_t<F&, T>> {
    using U = std::invoke_result_t<F&, T>;
    auto out = make_channel<U>();
    stages_.push_back([in = tail_, out, state = state_, f = std::move(f)]() mutable {
      try {
        while (std::optional<T> v = in->pop()) {
          if (state->stopped() || !out->push(f(std::move(*v)))) break;
        }
      } catch (...) {
        state->fail(std::current_exception());
      }
      in->close(); // if we stopped early, the stage before stops at its next push
      out->close();
    });
    return pipeline<U>(std::move(*this), std::move(out));
  }

  /// A farm as a stage (it runs on threads of its own and a stage thread
  /// that waits for it). The farm must outlive run_and_wait().
  template <class U>
  pipeline<U> then(farm<T, U>& f) && {
    auto out = make_channel<U>();
    stages_.push_back([in = tail_, out, state = state_, &f] {
      try {
        f.run_and_wait(
            [&]() -> std::optional<T> { return state->stopped() ? std::nullopt : in->pop(); },
            [&](U&& u) {
              if (!out->push(std::move(u))) throw detail::pipeline_stopped{};
            });
      } catch (const detail::pipeline_stopped&) {
        // The next stage stopped: its failure is the one to report.
      } catch (...) {
        state->fail(std::current_exception());
      }
      in->close();
      out->close();
    });
    return pipeline<U>(std::move(*this), std::move(out));
  }

  /// Runs every stage and feeds the results to sink(T&&) on the calling
  /// thread; returns when the stream has ended, rethrows the first exception.
  template <class Sink>
  void run_and_wait(Sink sink) && {
    std::vector<std::thread> threads;
    try {
      threads.reserve(stages_.size());
      for (auto& stage : stages_) threads.emplace_back(std::move(stage));
      while (std::optional<T> v = tail_->pop()) {
        if (state_->stopped()) break;
        sink(std::move(*v));
      }
    } catch (...) { // the sink threw, or std::system_error starting a stage
      state_->fail(std::current_exception());
      // A stage that never started would never close its channels.
      for (auto& close : close_channels_) close();
    }
    tail_->close();
    for (std::thread& t : threads) t.join();
    close_channels_.clear(); // the last owners of the channels: what a stop left
    tail_.reset();           // in them is destroyed now, not with the pipeline
    if (state_->error) std::rethrow_exception(state_->error);
  }

private:
  template <class>
  friend class pipeline;
  template <class Source>
  friend auto make_pipeline(Source source, std::size_t capacity);

  pipeline(std::size_t capacity, std::shared_ptr<detail::pipeline_channel<T>> tail)
      : capacity_(capacity), state_(std::make_shared<detail::pipeline_state>()),
        tail_(std::move(tail)) {
    close_channels_.push_back([c = tail_] { c->close(); });
  }
  template <class P>
  pipeline(P&& before, std::shared_ptr<detail::pipeline_channel<T>> tail)
      : capacity_(before.capacity_), state_(std::move(before.state_)),
        stages_(std::move(before.stages_)), close_channels_(std::move(before.close_channels_)),
        tail_(std::move(tail)) {
    close_channels_.push_back([c = tail_] { c->close(); });
  }

  template <class U>
  std::shared_ptr<detail::pipeline_channel<U>> make_channel() const {
    return std::make_shared<detail::pipeline_channel<U>>(capacity_);
  }

  std::size_t capacity_;
  std::shared_ptr<detail::pipeline_state> state_;
  std::vector<std::function<void()>> stages_;
  std::vector<std::function<void()>> close_channels_; // one per channel
  std::shared_ptr<detail::pipeline_channel<T>> tail_; // the last stage's output
};

/// Starts a pipeline at `source`, a callable returning std::optional<T>
/// (std::nullopt ends the stream), run on a thread of its own. `capacity`:
/// slots of each channel between stages (rounded up to a power of two; at
/// least 1, else std::invalid_argument).
template <class Source>
auto make_pipeline(Source source, std::size_t capacity = 512) {
  using T = typename std::invoke_result_t<Source&>::value_type;
  if (capacity == 0)
    throw std::invalid_argument("lfcore::make_pipeline: capacity must be at least 1");
  capacity = std::bit_ceil(capacity < 2 ? std::size_t{2} : capacity);
  auto out = std::make_shared<detail::pipeline_channel<T>>(capacity);
  pipeline<T> p(capacity, out);
  p.stages_.push_back([out, state = p.state_, source = std::move(source)]() mutable {
    try {
      while (!state->stopped()) {
        std::optional<T> v = source();
        if (!v || !out->push(std::move(*v))) break;
      }
    } catch (...) {
      state->fail(std::current_exception());
    }
    out->close();
  });
  return p;
}

} // namespace lfcore
