// Instructions per push + pop of lfcore::unbounded_mpmc_queue, one thread,
// counted by callgrind inside queue_round_trips (see README.md here).
#include <cstdio>
#include <cstdlib>
#include <lfcore/unbounded_mpmc_queue.hpp>
extern "C" [[gnu::noinline]] long queue_round_trips(lfcore::unbounded_mpmc_queue<long>& q, long n) {
  long s = 0;
  for (long i = 0; i < n; ++i) {
    q.push(i);
    s += q.try_pop().value_or(0);
  }
  return s;
}
volatile long sink;
int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 100000;
  lfcore::unbounded_mpmc_queue<long> q;
  sink = queue_round_trips(q, n);
  sink = queue_round_trips(q, n);
  std::printf("%ld\n", n);
}
