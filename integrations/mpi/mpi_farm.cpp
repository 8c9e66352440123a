// integrations/mpi/mpi_farm.cpp - the message protocol of lfcore::mpi::farm.
//
// Messages on the farm's own communicator (a duplicate of the caller's);
// bodies are bytes, a batch_header first where there are counts:
//
//   rank 0 -> r   tasks      header {count, first_seq} + count encoded tasks
//                 end        (empty) no more tasks in this run
//                 stop       verdict: the run failed, give up now
//                 release    verdict, or empty if the run succeeded: last message of the run to r
//   r -> rank 0   results    header {count, busy_ns} + count (seq, result) pairs
//                 error      text: a task threw here
//                 heartbeat  (empty) alive; sent when nothing else was sent for rank_timeout / 4
//                 done       header {busy_ns}: last message of the run from r
//
// MPI keeps the order of messages between two ranks on one communicator
// (non-overtaking; every receive here matches any tag), so `end` or `stop`
// arrives after every batch sent before it, and `done` after every result.
// (verdict = stop_header + text.) A run ends at rank 0 once every rank has
// sent `done` (or was lost) and rank 0 has sent every rank `release` with
// the run's verdict; at a worker rank when `release` arrives. So every rank
// learns the same verdict - a rank that finished its share before another
// rank failed too - and a `stop` that crossed `done` on the way arrives
// before `release` and is dropped: no message of a run is left for the next.
#include "lfcore/mpi_farm.hpp"

#include <algorithm>
#include <limits>
#include <string_view>
#include <thread>

namespace lfcore::mpi {
namespace {

enum tag : int {
  tasks = 1,
  end = 2,
  stop = 3,
  release = 4,
  results = 5,
  error = 6,
  heartbeat = 7,
  done = 8
};

struct batch_header {
  std::uint64_t count = 0;
  std::uint64_t first_seq = 0; // tasks
  std::uint64_t busy_ns = 0;   // results, done
};
struct stop_header {
  std::int32_t cause = 0;
  std::int32_t rank = 0;
};

using clock = std::chrono::steady_clock;

// Reserves room for a header at the front of a message being built.
template <class Header>
void begin_message(std::vector<std::byte>& bytes) {
  bytes.assign(sizeof(Header), std::byte{0});
}
template <class Header>
void write_header(std::vector<std::byte>& bytes, const Header& h) {
  std::memcpy(bytes.data(), &h, sizeof h);
}
template <class Header>
Header read_header(const std::vector<std::byte>& bytes) {
  Header h{};
  if (bytes.size() < sizeof h) throw std::length_error("lfcore::mpi::farm: truncated message");
  std::memcpy(&h, bytes.data(), sizeof h);
  return h;
}
std::vector<std::byte> text_bytes(std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}
std::string bytes_text(const std::vector<std::byte>& bytes, std::size_t from = 0) {
  return {reinterpret_cast<const char*>(bytes.data()) + from, bytes.size() - from};
}

std::vector<std::byte> verdict(const farm_error& e) {
  std::vector<std::byte> bytes;
  begin_message<stop_header>(bytes);
  write_header(bytes, stop_header{static_cast<std::int32_t>(e.reason()), e.rank()});
  const std::vector<std::byte> text = text_bytes(e.what());
  bytes.insert(bytes.end(), text.begin(), text.end());
  return bytes;
}
farm_error read_verdict(const std::vector<std::byte>& bytes) {
  const auto h = read_header<stop_header>(bytes);
  return {static_cast<farm_error::cause>(h.cause), h.rank, bytes_text(bytes, sizeof h)};
}

// An idle loop yields for its first 250 us (a message's round trip between
// ranks on one node is tens of microseconds: sleeping at once would add a
// timer slice to every hop of a ping-pong), then sleeps 25, 50, 100 and then
// 200 us at a time: a loop with nothing to do gives its core away (two
// cores, many processes), a frozen rank costs almost nothing, and new work
// is seen within 200 us.
class idle_wait {
public:
  void reset() noexcept { idle_ = false; }
  void pause() {
    const clock::time_point now = clock::now();
    if (!idle_) {
      idle_ = true;
      since_ = now;
      sleep_ = std::chrono::microseconds(25);
    }
    if (now - since_ < std::chrono::microseconds(250)) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    sleep_ = std::min(sleep_ * 2, std::chrono::microseconds(200));
  }

private:
  bool idle_ = false;
  clock::time_point since_;
  std::chrono::microseconds sleep_{25};
};

lfcore::farm_options worker_ranks(const farm_options& options) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) throw std::logic_error("lfcore::mpi::farm: MPI is not initialised");
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_FUNNELED)
    throw std::logic_error("lfcore::mpi::farm: MPI must be initialised with at least "
                           "MPI_THREAD_FUNNELED (the ranks run threads)");
  int size = 0;
  MPI_Comm_size(options.comm, &size);
  if (size < 2) throw std::invalid_argument("lfcore::mpi::farm: needs at least 2 ranks");
  if (options.batch == 0)
    throw std::invalid_argument("lfcore::mpi::farm: batch must be at least 1");
  if (options.local_workers == 0)
    throw std::invalid_argument("lfcore::mpi::farm: local_workers must be at least 1");
  if (options.credit == 0)
    throw std::invalid_argument("lfcore::mpi::farm: credit must be at least 1");
  if (options.rank_timeout < std::chrono::milliseconds(4))
    throw std::invalid_argument("lfcore::mpi::farm: rank_timeout must be at least 4 ms");
  lfcore::farm_options ranks_as_workers;
  ranks_as_workers.workers = static_cast<unsigned>(size - 1);
  return ranks_as_workers;
}

// Restores farm_base's running flag however a run ends.
struct run_scope {
  explicit run_scope(std::function<void()> end) : end_run(std::move(end)) {}
  ~run_scope() { end_run(); }
  std::function<void()> end_run;
};

} // namespace

// ---------------------------------------------------------------- environment
environment::environment(int& argc, char**& argv, int required) {
  if (MPI_Init_thread(&argc, &argv, required, &provided_) != MPI_SUCCESS)
    throw std::runtime_error("lfcore::mpi::environment: MPI_Init_thread failed");
  if (provided_ < required) {
    MPI_Finalize();
    throw std::runtime_error("lfcore::mpi::environment: MPI provides a lower thread level than "
                             "required");
  }
}

environment::~environment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// ---------------------------------------------------------------- plumbing
struct farm_core::outgoing {
  MPI_Request request = MPI_REQUEST_NULL;
  int dest = 0;
  std::vector<std::byte> bytes; // alive until the send completes
};

struct farm_core::message {
  int source = 0;
  int tag = 0;
  std::vector<std::byte> bytes;
};

farm_core::farm_core(const farm_options& options)
    : farm_base(worker_ranks(options)), options_mpi_(options) {
  check(MPI_Comm_dup(options.comm, &comm_), "MPI_Comm_dup");
  // Errors come back as codes (check() turns them into farm_error) instead
  // of aborting the job: a lost rank is reported, not fatal at once.
  check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &ranks_);
}

farm_core::~farm_core() {
  for (auto& s : sending_) // only after a lost rank: let MPI finish or drop them
    if (s->request != MPI_REQUEST_NULL) MPI_Request_free(&s->request);
  MPI_Comm_free(&comm_);
}

void farm_core::check(int code, const char* call) const {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw farm_error(farm_error::cause::mpi_failed, rank_,
                   std::string("lfcore::mpi::farm: ") + call + " failed on rank " +
                       std::to_string(rank_) + ": " + std::string(text, length));
}

std::vector<std::byte> farm_core::take_buffer() {
  if (spare_buffers_.empty()) return {};
  std::vector<std::byte> b = std::move(spare_buffers_.back());
  spare_buffers_.pop_back();
  b.clear();
  return b;
}

void farm_core::post(int dest, int tag, std::vector<std::byte>&& bytes) {
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::length_error("lfcore::mpi::farm: a batch of more than 2 GiB; lower the batch size");
  auto s = std::make_unique<outgoing>();
  s->dest = dest;
  s->bytes = std::move(bytes);
  check(MPI_Isend(s->bytes.data(), static_cast<int>(s->bytes.size()), MPI_BYTE, dest, tag, comm_,
                  &s->request),
        "MPI_Isend");
  sending_.push_back(std::move(s));
}

void farm_core::progress_sends() {
  for (std::size_t i = 0; i < sending_.size();) {
    int complete = 0;
    check(MPI_Test(&sending_[i]->request, &complete, MPI_STATUS_IGNORE), "MPI_Test");
    if (!complete) {
      ++i;
      continue;
    }
    spare_buffers_.push_back(std::move(sending_[i]->bytes));
    sending_[i] = std::move(sending_.back());
    sending_.pop_back();
  }
}

// Waits for the sends to live ranks; a send to a lost rank may never
// complete, so the destructor frees its request instead.
void farm_core::finish_sends(const std::vector<bool>& lost) {
  idle_wait idle;
  for (;;) {
    progress_sends();
    const bool pending = std::any_of(sending_.begin(), sending_.end(),
                                     [&](const auto& s) { return !lost[s->dest]; });
    if (!pending) return;
    idle.pause();
  }
}

bool farm_core::receive(int source, message& m) {
  int flag = 0;
  MPI_Status status;
  check(MPI_Iprobe(source, MPI_ANY_TAG, comm_, &flag, &status), "MPI_Iprobe");
  if (!flag) return false;
  int size = 0;
  MPI_Get_count(&status, MPI_BYTE, &size);
  m.source = status.MPI_SOURCE;
  m.tag = status.MPI_TAG;
  m.bytes.resize(static_cast<std::size_t>(size));
  check(MPI_Recv(m.bytes.data(), size, MPI_BYTE, m.source, m.tag, comm_, MPI_STATUS_IGNORE),
        "MPI_Recv");
  return true;
}

// ---------------------------------------------------------------- rank 0
void farm_core::run_master(master_io& io) {
  begin_run(true);
  run_scope scope([this] { end_run(); });
  const std::size_t batch = options_mpi_.batch;
  const std::size_t window = options_mpi_.credit * batch; // outstanding tasks per rank
  const auto timeout = options_mpi_.rank_timeout;
  struct rank_state {
    std::uint64_t outstanding = 0;
    clock::time_point heard;
    bool done = false;
  };
  std::vector<rank_state> ranks(static_cast<std::size_t>(ranks_)); // [0] unused
  std::vector<bool> lost(static_cast<std::size_t>(ranks_), false);
  for (rank_state& r : ranks) r.heard = clock::now();

  std::uint64_t seq = 0;
  std::uint64_t arrived = emitter_->arrivals.load(std::memory_order_relaxed); // one writer: us
  std::uint64_t completed = completed_->load(std::memory_order_relaxed);
  bool source_end = false, end_sent = false, stop_sent = false;
  std::optional<farm_error> failure; // a worker rank's task threw, or a rank was lost
  std::exception_ptr local_failure;  // the source or the sink threw
  bool blocked = false;              // no rank had credit ...
  clock::time_point blocked_since;   // ... since then
  const auto failed = [&] { return failure.has_value() || local_failure != nullptr; };
  // A failure found after `stop` went out (a rank lost while the others
  // stop) is not sent again: the first one is the run's verdict.
  // Counters have one writer (this thread); relaxed: the manager reads estimates.
  const auto add = [](std::atomic<std::uint64_t>& counter, std::uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  };

  idle_wait idle;
  message m;
  for (;;) {
    bool progress = false;
    while (receive(MPI_ANY_SOURCE, m)) {
      progress = true;
      rank_state& r = ranks[static_cast<std::size_t>(m.source)];
      r.heard = clock::now();
      worker_control& c = control(static_cast<unsigned>(m.source - 1));
      if (m.tag == tag::results) {
        const auto h = read_header<batch_header>(m.bytes);
        r.outstanding -= std::min(r.outstanding, h.count);
        add(c.tasks, h.count);
        c.busy_ns.store(h.busy_ns, std::memory_order_relaxed); // cumulative at the rank
        if (!failed()) {
          try {
            completed +=
                io.deliver(m.bytes.data() + sizeof h, m.bytes.data() + m.bytes.size(), h.count);
          } catch (...) {
            local_failure = std::current_exception();
          }
          completed_->store(completed, std::memory_order_relaxed);
        }
      } else if (m.tag == tag::error) {
        if (!failed())
          failure.emplace(farm_error::cause::task_failed, m.source,
                          "lfcore::mpi::farm: a task failed on rank " + std::to_string(m.source) +
                              ": " + bytes_text(m.bytes));
      } else if (m.tag == tag::done) {
        r.done = true;
        c.busy_ns.store(read_header<batch_header>(m.bytes).busy_ns, std::memory_order_relaxed);
      } // heartbeat: `heard` is all it says
    }

    // Send the next batch to the active rank with the most credit left.
    if (!failed() && !source_end) {
      // relaxed: a freeze seen late sends one more batch to a rank that does
      // it anyway; a thaw seen late is read again on the next round.
      const unsigned active = active_.load(std::memory_order_relaxed);
      int target = 0;
      for (unsigned i = 1; i <= active; ++i)
        if (ranks[i].outstanding + batch <= window &&
            (target == 0 ||
             ranks[i].outstanding < ranks[static_cast<std::size_t>(target)].outstanding))
          target = static_cast<int>(i);
      if (target != 0) {
        if (blocked) { // waited for credit with the source not yet asked: the farm was full
          add(emitter_->blocked_ns,
              static_cast<std::uint64_t>(
                  std::chrono::nanoseconds(clock::now() - blocked_since).count()));
          blocked = false;
        }
        std::vector<std::byte> bytes = take_buffer();
        begin_message<batch_header>(bytes);
        std::size_t n = 0;
        try {
          n = io.fill(bytes, batch, source_end);
        } catch (...) {
          local_failure = std::current_exception();
        }
        if (n > 0) {
          write_header(bytes, batch_header{n, seq, 0});
          post(target, tag::tasks, std::move(bytes));
          seq += n;
          ranks[static_cast<std::size_t>(target)].outstanding += n;
          add(control(static_cast<unsigned>(target - 1)).sent, n);
          emitter_->arrivals.store(arrived += n, std::memory_order_relaxed);
          progress = true;
        }
      } else if (!blocked) {
        blocked = true;
        blocked_since = clock::now();
      }
    }

    if (!failed() && source_end && !end_sent) {
      for (int r = 1; r < ranks_; ++r) post(r, tag::end, take_buffer());
      end_sent = true;
    }
    if (failed() && !stop_sent) {
      if (!failure) { // the source or the sink: the others learn what
        std::string what = "lfcore::mpi::farm: the source or the sink threw on rank 0";
        try {
          std::rethrow_exception(local_failure);
        } catch (const std::exception& e) {
          what += std::string(": ") + e.what();
        } catch (...) {
        }
        failure.emplace(farm_error::cause::master_failed, 0, what);
      }
      const std::vector<std::byte> bytes = verdict(*failure);
      for (int r = 1; r < ranks_; ++r) {
        if (ranks[static_cast<std::size_t>(r)].done) continue;
        post(r, tag::stop, std::vector<std::byte>(bytes));
        // A lost rank is not waited for; if it was only slow, it may leave.
        if (lost[static_cast<std::size_t>(r)]) post(r, tag::release, std::vector<std::byte>(bytes));
      }
      stop_sent = true;
    }

    bool all_done = end_sent || stop_sent;
    const clock::time_point now = clock::now();
    for (int i = 1; i < ranks_; ++i) {
      rank_state& r = ranks[static_cast<std::size_t>(i)];
      if (r.done || lost[static_cast<std::size_t>(i)]) continue;
      all_done = false;
      if (now - r.heard > timeout) {
        lost[static_cast<std::size_t>(i)] = true;
        if (!failed())
          failure.emplace(farm_error::cause::rank_lost, i,
                          "lfcore::mpi::farm: rank " + std::to_string(i) + " sent nothing for " +
                              std::to_string(timeout.count()) + " ms (" +
                              std::to_string(r.outstanding) +
                              " tasks outstanding); it died or hangs");
      }
    }
    if (all_done) break;
    progress_sends();
    if (progress)
      idle.reset();
    else
      idle.pause();
  }
  const std::vector<std::byte> bytes = failure ? verdict(*failure) : std::vector<std::byte>{};
  for (int r = 1; r < ranks_; ++r)
    if (!lost[static_cast<std::size_t>(r)]) post(r, tag::release, std::vector<std::byte>(bytes));
  finish_sends(lost);
  if (local_failure) std::rethrow_exception(local_failure);
  if (failure) throw *failure;
}

// ---------------------------------------------------------------- worker ranks
void farm_core::run_worker(worker_io& io) {
  begin_run(false);
  run_scope scope([this] { end_run(); });
  const auto heartbeat_every = options_mpi_.rank_timeout / 4;
  std::uint64_t received = 0, sent = 0; // tasks in; results out
  bool end_seen = false, error_sent = false;
  std::optional<std::string> local_error; // a task threw, or could not be decoded
  std::optional<farm_error> stopped_by;
  clock::time_point last_send = clock::now();

  idle_wait idle;
  message m;
  try {
    for (;;) {
      bool progress = false;
      while (!stopped_by && receive(0, m)) {
        progress = true;
        if (m.tag == tag::tasks) {
          const auto h = read_header<batch_header>(m.bytes);
          received += h.count;
          if (local_error) continue; // the run fails: drop
          try {
            io.accept(m.bytes.data() + sizeof h, m.bytes.data() + m.bytes.size(), h.count,
                      h.first_seq);
          } catch (const std::exception& e) {
            local_error = std::string("cannot decode a task: ") + e.what();
          }
        } else if (m.tag == tag::end) {
          end_seen = true;
        } else if (m.tag == tag::stop) {
          stopped_by.emplace(read_verdict(m.bytes));
          io.cancel();
        }
      }
      if (stopped_by) break;

      if (!local_error) local_error = io.failure();
      if (local_error && !error_sent) {
        io.cancel();
        post(0, tag::error, text_bytes(*local_error));
        error_sent = true;
        last_send = clock::now();
      }
      if (!error_sent) {
        std::vector<std::byte> results = take_buffer();
        begin_message<batch_header>(results);
        if (const std::size_t n = io.take_results(results); n > 0) {
          write_header(results, batch_header{n, 0, io.busy_ns()});
          post(0, tag::results, std::move(results));
          sent += n;
          progress = true;
          last_send = clock::now();
        } else {
          spare_buffers_.push_back(std::move(results));
        }
        if (end_seen && sent == received) break;
        // Compute for up to 50 us, then look at MPI again.
        progress |= io.run_tasks(clock::now() + std::chrono::microseconds(50));
      }
      if (clock::now() - last_send > heartbeat_every) {
        post(0, tag::heartbeat, take_buffer());
        last_send = clock::now();
      }
      progress_sends();
      if (progress)
        idle.reset();
      else
        idle.pause();
    }
  } catch (...) { // an MPI failure, or a task that cannot be decoded
    io.cancel();
    io.join();
    throw;
  }
  io.join();
  std::vector<std::byte> last = take_buffer();
  begin_message<batch_header>(last);
  write_header(last, batch_header{0, 0, io.busy_ns()});
  post(0, tag::done, std::move(last));
  // Until rank 0 sends the verdict, drop what crossed `done` (a stop).
  for (bool released = false; !released;) {
    if (receive(0, m)) {
      released = m.tag == tag::release;
      if (released && !m.bytes.empty() && !stopped_by) stopped_by.emplace(read_verdict(m.bytes));
    } else {
      idle.pause();
    }
    progress_sends();
  }
  finish_sends(std::vector<bool>(static_cast<std::size_t>(ranks_), false));
  if (stopped_by) throw *stopped_by;
}

} // namespace lfcore::mpi
