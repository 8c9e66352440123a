// Two producers and two consumers pass 200,000 numbers through the
// Michael-Scott queue of michael_scott_queue.hpp; every number must come out
// exactly once and the hazard-pointer domain must end with nothing pending.
#include "michael_scott_queue.hpp"

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

int main() {
  constexpr int producers = 2, consumers = 2, per_producer = 100'000;
  constexpr int total = producers * per_producer;
  example::michael_scott_queue<int> queue;
  std::vector<std::atomic<int>> seen(total);
  std::atomic<int> popped{0};

  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (int i = 0; i < per_producer; ++i) queue.push(p * per_producer + i);
    });
  for (int c = 0; c < consumers; ++c)
    threads.emplace_back([&] {
      while (popped.load(std::memory_order_relaxed) < total)
        if (auto v = queue.try_pop()) {
          seen[*v].fetch_add(1, std::memory_order_relaxed);
          popped.fetch_add(1, std::memory_order_relaxed);
        }
    });
  for (auto& t : threads) t.join();

  int wrong = 0;
  for (auto& s : seen) wrong += s.load() != 1;
  auto& domain = lfcore::hazard_pointer_default_domain();
  domain.reclaim();
  const auto stats = domain.stats();
  std::printf("popped %d values, %d not seen exactly once; retired %llu, reclaimed %llu\n",
              popped.load(), wrong, static_cast<unsigned long long>(stats.retired),
              static_cast<unsigned long long>(stats.reclaimed));
  // Every popped node was retired; all of them are reclaimable now that the
  // threads are gone (their batches were handed over when they exited).
  return wrong == 0 && stats.retired == static_cast<unsigned long long>(total) &&
                 stats.pending() == 0
             ? 0
             : 1;
}
