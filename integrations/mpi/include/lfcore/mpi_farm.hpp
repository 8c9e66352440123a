// lfcore/mpi_farm.hpp - the task farm across processes: Open MPI between
// ranks, lock-free queues and a work-stealing pool inside each.
//
// Where one machine is not enough, the farm of farm.hpp runs on an MPI
// communicator: rank 0 is the emitter and the collector, every other rank a
// worker with local_workers threads of its own. The layout of FastFlow's
// distributed run-time (lock-free channels inside a node, messages between
// nodes), with the transport left to MPI:
//
//   rank 0: source -> [batch of tasks] --MPI--> rank r: local workers -> [batch of results]
//   --MPI--> rank 0: sink
//
// Batches: tasks travel in messages of up to `batch` tasks, so one message's
// latency is paid per batch, not per task (the notes' advice for fine
// grains). A worker rank queues a batch's tasks (unbounded_mpmc_queue); its
// calling thread runs them between its looks at MPI, and the threads of a
// work_stealing_pool (local_workers - 1 of them) help. The results of a
// batch go back in one message as soon as its last task is done.
//
// Why the rank's MPI thread computes too: measured on 2 cores with 2 worker
// ranks, 10 us tasks, batch 64 (bench/results/mpi), a rank with a local
// lfcore::farm (emitter, worker, collector threads) beside its MPI thread
// ran at 0.48 of ideal; the pool alone beside the MPI thread at 0.6-0.8 (the
// waiting thread either takes CPU from the tasks or, asleep, answers late);
// the MPI thread computing, as a hand-written MPI worker does, at 0.89.
//
// Credit (on-demand scheduling between ranks): rank 0 keeps at most
// `credit` x `batch` tasks outstanding at each rank and sends the next batch
// to the active rank with the fewest outstanding, so fast ranks get more
// work and a rank is never idle while its next batch travels (credit >= 2).
// Ordered mode tags each task with its sequence number; rank 0 holds the
// results that arrive early in a reorder window, bounded by
// (ranks - 1) x credit x batch results because nothing more is outstanding.
//
// The farm at rank 0 is a farm_base: its "workers" are the worker ranks, so
// the autonomic manager (farm_manager.hpp) drives it unchanged -
// set_active_workers(n) freezes every rank past the first n (rank 0 stops
// sending to them; they finish what they hold and then sleep), sensors()
// reports per rank the tasks sent and done and the rank's busy time divided
// by its local workers (its service time per task as rank 0 sees it).
//
// Failure (never a hang):
// * a task that throws on rank r: r reports the exception's text, rank 0
//   stops the stream, and run_and_wait throws farm_error(task_failed, r) on
//   every rank;
// * the source or the sink throws on rank 0: the other ranks get
//   farm_error(master_failed, 0), rank 0 rethrows the original exception;
// * a rank that stops answering: every worker rank's MPI thread sends a
//   heartbeat every rank_timeout / 4 when it has sent nothing else, so a rank
//   silent for rank_timeout is dead or hung (that thread also runs tasks:
//   rank_timeout must exceed the longest task, by default 30 s); rank 0 throws
//   farm_error(rank_lost, r) and stops the others. MPI cannot finalize with a
//   dead peer: call MPI_Abort then (Open MPI's mpirun itself kills the job
//   when a process dies, unless started with --enable-recovery).
// MPI calls on the farm's communicator return errors instead of aborting
// (MPI_ERRORS_RETURN); a failed call throws farm_error(mpi_failed).
//
// Threads and MPI: only the thread that calls run_and_wait makes MPI calls
// (rank 0's loop; a worker rank's loop, between tasks), so
// MPI_THREAD_FUNNELED is enough (environment below asks for it). An idle
// loop yields for 250 us (a ping-pong between ranks stays fast), then sleeps
// in growing steps up to 200 us: a frozen rank costs almost no CPU, and
// thawing it takes effect within a batch.
//
// Who may call what: the constructor, run_and_wait and the destructor are
// collective over the communicator (every rank calls them, in the same
// order); rank 0's source and sink are called on rank 0's calling thread;
// set_active_workers, sensors and the other farm_base members at rank 0 from
// any thread. Tasks and results are trivially copyable types, or any type
// with a codec (see codec below).
#pragma once

#include "lfcore/farm_base.hpp"
#include "lfcore/unbounded_mpmc_queue.hpp"
#include "lfcore/work_stealing_pool.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace lfcore::mpi {

/// Why a distributed run failed; rank() says where.
class farm_error : public std::runtime_error {
public:
  enum class cause { task_failed, master_failed, rank_lost, mpi_failed };
  farm_error(cause c, int rank, const std::string& message)
      : std::runtime_error(message), cause_(c), rank_(rank) {}
  cause reason() const noexcept { return cause_; }
  int rank() const noexcept { return rank_; }

private:
  cause cause_;
  int rank_;
};

/// How a value travels: encode appends its bytes to `out`; decode reads one
/// value at `p`, advances `p` past it and never reads at or past `end`
/// (throw on truncated input). This primary template copies the object
/// representation, so it accepts trivially copyable types only; give the
/// farm your own codec type (same two static members) for anything else.
template <class T>
struct codec {
  static_assert(std::is_trivially_copyable_v<T>,
                "lfcore::mpi::farm: a task or result type that is not trivially copyable needs a "
                "codec (a type with static encode and decode, see lfcore::mpi::codec)");
  static void encode(const T& value, std::vector<std::byte>& out) {
    const auto* bytes = reinterpret_cast<const std::byte*>(&value);
    out.insert(out.end(), bytes, bytes + sizeof(T));
  }
  static T decode(const std::byte*& p, const std::byte* end) {
    if (static_cast<std::size_t>(end - p) < sizeof(T))
      throw std::length_error("lfcore::mpi::codec: truncated message");
    struct raw {
      std::byte bytes[sizeof(T)];
    } r;
    std::memcpy(r.bytes, p, sizeof(T));
    p += sizeof(T);
    return std::bit_cast<T>(r);
  }
};

struct farm_options {
  /// The ranks of the farm (rank 0 of it is the master); the farm works on a
  /// duplicate, so its messages never mix with the caller's.
  MPI_Comm comm = MPI_COMM_WORLD;
  std::size_t batch = 32; ///< tasks (and results) per message, at least 1
  std::size_t credit = 2; ///< batches outstanding per rank, at least 1
  bool ordered = false;   ///< deliver results in input order
  /// Threads that run tasks on each worker rank: the rank's calling thread
  /// (which also talks to rank 0) and local_workers - 1 threads of a
  /// work_stealing_pool, pinned by local_pinning. At least 1; one per core
  /// the rank may use (with several ranks on one machine, divide).
  unsigned local_workers = 1;
  pin_policy local_pinning{};
  /// A rank that has sent nothing (not even a heartbeat) for this long is
  /// declared lost. At least 4 ms, and longer than the longest task (a
  /// worker rank's MPI thread sends heartbeats between the tasks it runs).
  std::chrono::milliseconds rank_timeout{30'000};
};

/// MPI_Init_thread with MPI_THREAD_FUNNELED (or `required`) for the
/// lifetime of the object, MPI_Finalize at its end. Throws std::runtime_error
/// if MPI provides less than `required`. Optional: a program may initialise
/// MPI itself (at least MPI_THREAD_FUNNELED).
class environment {
public:
  environment(int& argc, char**& argv, int required = MPI_THREAD_FUNNELED);
  ~environment();
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;
  int thread_level() const noexcept { return provided_; }

private:
  int provided_ = MPI_THREAD_SINGLE;
};

/// The type-independent half (lib: mpi_farm.cpp): the message protocol,
/// credit, timeouts and heartbeats. farm<> below adds the types.
class farm_core : public farm_base {
public:
  int rank() const noexcept { return rank_; }
  int ranks() const noexcept { return ranks_; }
  bool is_master() const noexcept { return rank_ == 0; }
  const farm_options& distribution() const noexcept { return options_mpi_; }

protected:
  /// Collective. Throws std::logic_error if MPI is not initialised with at
  /// least MPI_THREAD_FUNNELED, std::invalid_argument for fewer than 2 ranks,
  /// batch or credit 0, or a timeout under 4 ms.
  explicit farm_core(const farm_options& options);
  ~farm_core();

  // What rank 0's loop needs from the typed half.
  struct master_io {
    /// Appends up to `max` encoded tasks taken from the source; sets `end`
    /// when the source is exhausted. Returns how many.
    virtual std::size_t fill(std::vector<std::byte>& out, std::size_t max, bool& end) = 0;
    /// Decodes `count` (sequence number, result) pairs and hands them to the
    /// sink (in order if ordered). Returns how many reached the sink.
    virtual std::size_t deliver(const std::byte* p, const std::byte* end, std::size_t count) = 0;

  protected:
    ~master_io() = default;
  };
  // What a worker rank's loop needs from the typed half: tasks wait in a
  // queue that this (MPI) thread and the rank's pool threads work off.
  struct worker_io {
    /// Decodes `count` tasks numbered first_seq.. and queues them.
    virtual void accept(const std::byte* p, const std::byte* end, std::size_t count,
                        std::uint64_t first_seq) = 0;
    /// Runs queued tasks on the calling thread until none is left or
    /// `until` has passed (at least one, if any). Returns whether it ran one.
    virtual bool run_tasks(std::chrono::steady_clock::time_point until) = 0;
    virtual void cancel() = 0; ///< tasks not yet started are skipped
    /// Takes one finished batch: appends its encoded (sequence number,
    /// result) pairs to `out` and returns how many (0: none finished).
    virtual std::size_t take_results(std::vector<std::byte>& out) = 0;
    /// The text of the first exception a task threw, if one did.
    virtual std::optional<std::string> failure() = 0;
    virtual std::uint64_t busy_ns() = 0; ///< time in tasks / local workers
    virtual void join() = 0;             ///< waits until no task runs

  protected:
    ~worker_io() = default;
  };

  void run_master(master_io& io);
  void run_worker(worker_io& io);

private:
  struct outgoing;
  struct message;
  std::vector<std::byte> take_buffer();
  void post(int dest, int tag, std::vector<std::byte>&& bytes);
  void progress_sends();
  void finish_sends(const std::vector<bool>& lost);
  bool receive(int source, message& m);
  void check(int code, const char* call) const;

  farm_options options_mpi_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int ranks_ = 0;
  std::vector<std::unique_ptr<outgoing>> sending_;
  std::vector<std::vector<std::byte>> spare_buffers_;
};

/// A farm of `Out f(In)` over the ranks of a communicator (see the header).
/// Every rank constructs it with the same function and options and calls
/// run_and_wait; rank 0's source and sink are used, other ranks' ignored.
template <class In, class Out, class InCodec = codec<In>, class OutCodec = codec<Out>>
class farm : public farm_core {
  static_assert(!std::is_void_v<Out>, "lfcore::mpi::farm: workers must return a result");

public:
  using input_type = In;
  using output_type = Out;
  using worker_function = std::function<Out(In)>;

  /// Collective. Throws as farm_core, and std::invalid_argument for an empty
  /// function or invalid local options.
  farm(worker_function worker, const farm_options& options = {})
      : farm_core(options), worker_(std::move(worker)) {
    if (!worker_) throw std::invalid_argument("lfcore::mpi::farm: empty worker function");
    if (!is_master() && options.local_workers > 1) // this thread is the first worker
      pool_.emplace(options.local_workers - 1, options.local_pinning);
  }

  /// Collective. On rank 0, streams every item of `source` (a callable
  /// returning std::optional<In>; std::nullopt ends the stream) through the
  /// worker ranks into `sink` (a callable taking Out&&), called on this
  /// thread in completion order, or input order if ordered. On other ranks,
  /// serves until rank 0 ends the stream. Throws farm_error (see the header)
  /// or, on rank 0, what the source or the sink threw.
  template <class Source, class Sink>
  void run_and_wait(Source&& source, Sink&& sink) {
    if (is_master()) {
      master_glue<std::remove_reference_t<Source>, std::remove_reference_t<Sink>> glue{
          source, sink, distribution().ordered};
      run_master(glue);
    } else {
      worker_glue glue{*this};
      run_worker(glue);
    }
  }

private:
  using sequence_codec = codec<std::uint64_t>;

  template <class Source, class Sink>
  struct master_glue final : master_io {
    master_glue(Source& s, Sink& k, bool o) : source(s), sink(k), ordered(o) {}
    Source& source;
    Sink& sink;
    const bool ordered;
    std::uint64_t next_out = 0;            // ordered: the next sequence number due
    std::deque<std::optional<Out>> window; // ordered: results next_out, next_out + 1, ...

    std::size_t fill(std::vector<std::byte>& out, std::size_t max, bool& end) override {
      std::size_t n = 0;
      for (; n < max; ++n) {
        std::optional<In> item = source();
        if (!item) {
          end = true;
          break;
        }
        InCodec::encode(*item, out);
      }
      return n;
    }

    std::size_t deliver(const std::byte* p, const std::byte* end, std::size_t count) override {
      std::size_t delivered = 0;
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint64_t seq = sequence_codec::decode(p, end);
        Out value = OutCodec::decode(p, end);
        if (!ordered) {
          sink(std::move(value));
          ++delivered;
          continue;
        }
        if (seq < next_out) throw std::logic_error("lfcore::mpi::farm: result delivered twice");
        const std::size_t slot = seq - next_out; // < ranks x credit x batch: all outstanding
        if (slot >= window.size()) window.resize(slot + 1);
        window[slot].emplace(std::move(value));
        for (; !window.empty() && window.front(); ++next_out, ++delivered) {
          sink(std::move(*window.front()));
          window.pop_front();
        }
      }
      return delivered;
    }
  };

  // A worker rank: each batch that arrives becomes `count` queued tasks,
  // run by this (MPI) thread between its looks at MPI and, if the rank has
  // more than one local worker, by the pool's threads. The task that
  // finishes a batch last hands it over; its results go out as one message.
  struct batch_job {
    std::uint64_t first_seq = 0;
    std::vector<In> tasks;
    std::vector<std::optional<Out>> results;
    std::atomic<std::size_t> unfinished{0};
  };
  struct task_ref {
    batch_job* job;
    std::size_t index;
  };
  struct worker_glue final : worker_io {
    explicit worker_glue(farm& f) : owner(f) {
      if (f.pool_) helpers.emplace(*f.pool_);
    }
    ~worker_glue() { join(); }

    farm& owner;
    std::optional<task_group> helpers;                // the pool's share of the work
    std::vector<std::unique_ptr<batch_job>> accepted; // owned here until sent
    unbounded_mpmc_queue<task_ref> ready;             // queued tasks
    unbounded_mpmc_queue<batch_job*> finished;        // last task -> MPI thread
    std::atomic<bool> cancelled{false};
    std::atomic<bool> failed{false};      // a task threw: skip the rest
    std::string error;                    // by the task that set `failed` ...
    std::atomic<bool> error_ready{false}; // ... before this, [mpi.failed]
    std::atomic<std::uint64_t> busy{0};

    void accept(const std::byte* p, const std::byte* end, std::size_t count,
                std::uint64_t first_seq) override {
      auto job = std::make_unique<batch_job>();
      job->first_seq = first_seq;
      job->tasks.reserve(count);
      for (std::size_t i = 0; i < count; ++i) job->tasks.push_back(InCodec::decode(p, end));
      job->results.resize(count);
      job->unfinished.store(count, std::memory_order_relaxed); // published by the pushes
      batch_job* j = job.get();
      accepted.push_back(std::move(job));
      for (std::size_t i = 0; i < count; ++i) ready.push(task_ref{j, i});
      if (helpers) { // one drain per pool thread, at most one per task
        const std::size_t n = std::min<std::size_t>(count, owner.pool_->size());
        for (std::size_t k = 0; k < n; ++k)
          helpers->run([this] {
            while (std::optional<task_ref> t = ready.try_pop()) run_task(*t);
          });
      }
    }

    bool run_tasks(std::chrono::steady_clock::time_point until) override {
      bool ran = false;
      while (std::optional<task_ref> t = ready.try_pop()) {
        run_task(*t);
        ran = true;
        if (std::chrono::steady_clock::now() >= until) break;
      }
      return ran;
    }

    void run_task(task_ref t) noexcept {
      batch_job& j = *t.job;
      // acquire: pairs with cancel()'s and record()'s release (a hint: a
      // task that misses it runs, and its result is dropped with the run).
      if (!cancelled.load(std::memory_order_acquire) && !failed.load(std::memory_order_acquire)) {
        const auto start = std::chrono::steady_clock::now();
        try {
          j.results[t.index].emplace(owner.worker_(std::move(j.tasks[t.index])));
        } catch (...) {
          record(std::current_exception());
        }
        busy.fetch_add(
            static_cast<std::uint64_t>(
                std::chrono::nanoseconds(std::chrono::steady_clock::now() - start).count()),
            std::memory_order_relaxed); // a sensor: an estimate
      }
      // acq_rel: the last task sees every other task's result (release by
      // each, acquire by the last) and publishes them with the push.
      if (j.unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1) finished.push(&j);
    }

    void record(std::exception_ptr e) noexcept {
      bool expected = false;
      if (!failed.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        error = x.what();
      } catch (...) {
        error = "a task threw an exception that is not a std::exception";
      }
      error_ready.store(true, std::memory_order_release); // [mpi.failed]
    }

    void cancel() override { cancelled.store(true, std::memory_order_release); }

    std::size_t take_results(std::vector<std::byte>& out) override {
      while (std::optional<batch_job*> j = finished.try_pop()) {
        batch_job& job = **j;
        std::size_t n = 0;
        for (std::size_t i = 0; i < job.results.size(); ++i) {
          if (!job.results[i]) continue; // skipped or threw: the run fails anyway
          sequence_codec::encode(job.first_seq + i, out);
          OutCodec::encode(*job.results[i], out);
          ++n;
        }
        std::erase_if(accepted, [&](const auto& a) { return a.get() == &job; });
        if (n > 0) return n;
      }
      return 0;
    }

    std::optional<std::string> failure() override {
      if (!error_ready.load(std::memory_order_acquire)) return std::nullopt; // [mpi.failed]
      return error;
    }
    std::uint64_t busy_ns() override {
      return busy.load(std::memory_order_relaxed) / owner.local_workers();
    }
    void join() override {
      cancelled.store(true, std::memory_order_release);
      if (helpers) helpers->wait(); // the drains never throw
    }
  };

  unsigned local_workers() const noexcept { return pool_ ? pool_->size() + 1 : 1; }

  worker_function worker_;
  std::optional<work_stealing_pool> pool_; // worker ranks with local_workers > 1
};

} // namespace lfcore::mpi
