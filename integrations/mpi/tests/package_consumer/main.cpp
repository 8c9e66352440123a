// README.md's distributed-farm snippet as a program, built against the
// installed package with find_package(lfcore COMPONENTS mpi) and run under
// mpiexec: squares 0..9999 in order across the ranks.
#include <lfcore/mpi_farm.hpp>

#include <cstdint>
#include <cstdio>
#include <optional>

int main(int argc, char** argv) {
  lfcore::mpi::environment mpi(argc, argv); // MPI_Init_thread(FUNNELED) ... MPI_Finalize
  lfcore::mpi::farm_options o;
  o.batch = 64; // tasks per message; credit 2 batches per rank
  o.ordered = true;
  lfcore::mpi::farm<std::uint64_t, std::uint64_t> farm([](std::uint64_t x) { return x * x; }, o);
  std::uint64_t next = 0, wrong = 0;
  farm.run_and_wait(
      [i = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
        if (i == 10'000) return std::nullopt;
        return i++;
      },
      [&](std::uint64_t&& r) {
        wrong += r != next * next;
        ++next;
      });
  if (!farm.is_master()) return 0;
  std::printf("mpi consumer: %llu results in order, %llu wrong\n",
              static_cast<unsigned long long>(next), static_cast<unsigned long long>(wrong));
  return next == 10'000 && wrong == 0 ? 0 : 1;
}
