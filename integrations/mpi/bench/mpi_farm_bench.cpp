// mpi_farm_bench - one point of the distributed-farm benchmark (run.py runs
// the sweep and writes the report):
//
//   mpi_farm_bench calibrate GRAIN_US
//       prints the iterations of runner::farm_work that take GRAIN_US here
//   mpi_farm_bench single ITERATIONS TASKS WORKERS
//       this process alone, no MPI: the sequential loop, then an lfcore::farm
//       of WORKERS workers (round-robin)
//   mpiexec -np R mpi_farm_bench distributed ITERATIONS TASKS LOCAL_WORKERS CREDIT BATCH...
//       lfcore::mpi::farm, R - 1 worker ranks of LOCAL_WORKERS workers each,
//       CREDIT batches outstanding per rank, one run per batch size
//   mpiexec -np R mpi_farm_bench handwritten ITERATIONS TASKS BATCH...
//       what one writes by hand with MPI: rank 0 sends a batch of task values
//       to each worker rank with a blocking MPI_Send, then waits (MPI_Recv
//       from any rank) for a batch of results and answers that rank with its
//       next batch, one batch in flight per rank; an empty batch stops a rank
//
// Every run streams the task ids 0..TASKS-1; a task computes
// farm_work(id, ITERATIONS) and returns (id, value). Rank 0 (or the single
// process) counts the results and sums their ids, and the run fails unless
// every id came back once (count and sum). Output, one CSV line per run:
//   contender,batch,tasks,seconds
#include "farm_work.hpp"

#include "lfcore/farm.hpp"
#include "lfcore/mpi_farm.hpp"

#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct outcome {
  std::uint64_t id;
  std::uint64_t value;
};

// What rank 0 checks: every id once.
struct tally {
  std::uint64_t count = 0, id_sum = 0, value_sum = 0;
  void add(const outcome& o) {
    ++count;
    id_sum += o.id;
    value_sum += o.value; // keeps the work observable
  }
  void verify(std::uint64_t tasks, const char* who) const {
    if (count != tasks || id_sum != tasks * (tasks - 1) / 2)
      throw std::runtime_error(std::string(who) + ": lost or duplicated results");
  }
};

auto ids(std::uint64_t n) {
  return [i = std::uint64_t{0}, n]() mutable -> std::optional<std::uint64_t> {
    if (i == n) return std::nullopt;
    return i++;
  };
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

void print(const char* contender, std::size_t batch, std::uint64_t tasks, double seconds) {
  std::printf("%s,%zu,%llu,%.6f\n", contender, batch, static_cast<unsigned long long>(tasks),
              seconds);
  std::fflush(stdout);
}

void single(std::uint64_t iterations, std::uint64_t tasks, unsigned workers) {
  {
    tally t;
    const clock_type::time_point start = clock_type::now();
    for (std::uint64_t i = 0; i < tasks; ++i) t.add({i, runner::farm_work(i, iterations)});
    const double s = seconds_since(start);
    t.verify(tasks, "sequential");
    print("sequential", 0, tasks, s);
  }
  lfcore::farm_options o;
  o.workers = workers;
  lfcore::farm<std::uint64_t, outcome> farm(
      [iterations](std::uint64_t i) {
        return outcome{i, runner::farm_work(i, iterations)};
      },
      o);
  tally t;
  const clock_type::time_point start = clock_type::now();
  farm.run_and_wait(ids(tasks), [&](outcome&& r) { t.add(r); });
  const double s = seconds_since(start);
  t.verify(tasks, "single");
  print("single", 0, tasks, s);
}

void distributed(std::uint64_t iterations, std::uint64_t tasks, unsigned local_workers,
                 std::size_t credit, const std::vector<std::size_t>& batches) {
  for (const std::size_t batch : batches) {
    lfcore::mpi::farm_options o;
    o.batch = batch;
    o.credit = credit;
    o.local_workers = local_workers;
    lfcore::mpi::farm<std::uint64_t, outcome> farm(
        [iterations](std::uint64_t i) {
          return outcome{i, runner::farm_work(i, iterations)};
        },
        o);
    tally t;
    MPI_Barrier(MPI_COMM_WORLD);
    const clock_type::time_point start = clock_type::now();
    farm.run_and_wait(ids(tasks), [&](outcome&& r) { t.add(r); });
    const double s = seconds_since(start);
    if (farm.is_master()) {
      t.verify(tasks, "distributed");
      print("distributed", batch, tasks, s);
    }
  }
}

// The hand-written master-worker (see the header). Messages: tasks as an
// array of uint64 ids, results as an array of outcome; both MPI_BYTE.
void handwritten(std::uint64_t iterations, std::uint64_t tasks,
                 const std::vector<std::size_t>& batches) {
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  constexpr int task_tag = 1, result_tag = 2;
  for (const std::size_t batch : batches) {
    std::vector<std::uint64_t> task_buffer(batch);
    std::vector<outcome> result_buffer(batch);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      const clock_type::time_point start = clock_type::now();
      std::uint64_t next = 0;
      tally t;
      const auto send_batch = [&](int dest) {
        std::size_t n = 0;
        for (; n < batch && next < tasks; ++n) task_buffer[n] = next++;
        MPI_Send(task_buffer.data(), static_cast<int>(n * sizeof(std::uint64_t)), MPI_BYTE, dest,
                 task_tag, MPI_COMM_WORLD);
      };
      for (int r = 1; r < ranks; ++r) send_batch(r);
      while (t.count < tasks) {
        MPI_Status status;
        MPI_Recv(result_buffer.data(), static_cast<int>(batch * sizeof(outcome)), MPI_BYTE,
                 MPI_ANY_SOURCE, result_tag, MPI_COMM_WORLD, &status);
        int bytes = 0;
        MPI_Get_count(&status, MPI_BYTE, &bytes);
        for (std::size_t i = 0; i < static_cast<std::size_t>(bytes) / sizeof(outcome); ++i)
          t.add(result_buffer[i]);
        send_batch(status.MPI_SOURCE); // empty once the tasks are out: that rank stops
      }
      const double s = seconds_since(start);
      t.verify(tasks, "handwritten");
      print("handwritten", batch, tasks, s);
    } else {
      for (;;) {
        MPI_Status status;
        MPI_Recv(task_buffer.data(), static_cast<int>(batch * sizeof(std::uint64_t)), MPI_BYTE, 0,
                 task_tag, MPI_COMM_WORLD, &status);
        int bytes = 0;
        MPI_Get_count(&status, MPI_BYTE, &bytes);
        const std::size_t n = static_cast<std::size_t>(bytes) / sizeof(std::uint64_t);
        if (n == 0) break;
        for (std::size_t i = 0; i < n; ++i)
          result_buffer[i] = outcome{task_buffer[i], runner::farm_work(task_buffer[i], iterations)};
        MPI_Send(result_buffer.data(), static_cast<int>(n * sizeof(outcome)), MPI_BYTE, 0,
                 result_tag, MPI_COMM_WORLD);
      }
    }
  }
}

std::uint64_t number(const char* s) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0' || v == 0)
    throw std::invalid_argument(std::string("not a positive number: ") + s);
  return v;
}

std::vector<std::size_t> numbers(int argc, char** argv, int from) {
  std::vector<std::size_t> v;
  for (int i = from; i < argc; ++i) v.push_back(static_cast<std::size_t>(number(argv[i])));
  if (v.empty()) throw std::invalid_argument("no batch size given");
  return v;
}

int usage() {
  std::fprintf(stderr,
               "usage: mpi_farm_bench calibrate GRAIN_US\n"
               "       mpi_farm_bench single ITERATIONS TASKS WORKERS\n"
               "       mpiexec -np R mpi_farm_bench distributed ITERATIONS TASKS LOCAL_WORKERS "
               "CREDIT BATCH...\n"
               "       mpiexec -np R mpi_farm_bench handwritten ITERATIONS TASKS BATCH...\n");
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string mode = argv[1];
  if (mode == "calibrate" || mode == "single") {
    try {
      if (mode == "calibrate") {
        std::printf("%lld\n", std::llround(static_cast<double>(number(argv[2])) *
                                           runner::iterations_per_us()));
      } else {
        if (argc != 5) return usage();
        single(number(argv[2]), number(argv[3]), static_cast<unsigned>(number(argv[4])));
      }
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mpi_farm_bench: %s\n", e.what());
      return 1;
    }
  }
  if ((mode != "distributed" && mode != "handwritten") || argc < 5) return usage();
  lfcore::mpi::environment env(argc, argv);
  try {
    const std::uint64_t iterations = number(argv[2]);
    const std::uint64_t tasks = number(argv[3]);
    if (mode == "distributed")
      distributed(iterations, tasks, static_cast<unsigned>(number(argv[4])), number(argv[5]),
                  numbers(argc, argv, 6));
    else
      handwritten(iterations, tasks, numbers(argc, argv, 4));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_farm_bench: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1); // the other ranks may wait for this one
  }
  return 0;
}
