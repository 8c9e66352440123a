// Micro-costs of lfcore::pool_allocator beside std::allocator (glibc malloc,
// or whatever malloc the binary runs on) for a hash-trie leaf's 24 bytes:
//   alloc_free_lifo - allocate a batch, free it in reverse (a stack's pattern)
//   alloc_free_fifo - allocate a batch, free it in allocation order (a
//                     queue's pattern, and a map's fill-then-destroy)
//   cross_thread    - one thread allocates, another frees what it is handed
//                     (the pool's depot; glibc's remote frees), real time
// Every result is per block: one allocation plus one free.
#include <lfcore/pool_allocator.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace {

struct leaf { // as a uint64 -> uint64 hash-trie leaf: link, key, value
  std::uintptr_t link;
  std::uint64_t key, value;
};
constexpr int batch = 1024;

template <class Alloc>
void alloc_free_lifo(benchmark::State& state) {
  Alloc a;
  std::vector<leaf*> blocks(batch);
  for (auto _ : state) {
    for (auto& p : blocks) benchmark::DoNotOptimize(p = a.allocate(1));
    for (int i = batch - 1; i >= 0; --i) a.deallocate(blocks[static_cast<std::size_t>(i)], 1);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(alloc_free_lifo<std::allocator<leaf>>)->Threads(1)->Threads(2);
BENCHMARK(alloc_free_lifo<lfcore::pool_allocator<leaf>>)->Threads(1)->Threads(2);

template <class Alloc>
void alloc_free_fifo(benchmark::State& state) {
  Alloc a;
  std::vector<leaf*> blocks(batch);
  for (auto _ : state) {
    for (auto& p : blocks) benchmark::DoNotOptimize(p = a.allocate(1));
    for (leaf* p : blocks) a.deallocate(p, 1);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(alloc_free_fifo<std::allocator<leaf>>)->Threads(1)->Threads(2);
BENCHMARK(alloc_free_fifo<lfcore::pool_allocator<leaf>>)->Threads(1)->Threads(2);

// Batches travel through a one-slot mailbox: the allocating thread fills a
// batch, waits until the slot is empty, posts it; the freeing thread takes
// it and frees every block.
template <class Alloc>
void cross_thread(benchmark::State& state) {
  Alloc a;
  std::atomic<std::vector<leaf*>*> mailbox{nullptr};
  std::atomic<bool> done{false};
  std::thread freer([&] {
    for (;;) {
      // acquire: pairs with [bench.post], so the batch's pointers are visible
      std::vector<leaf*>* got = mailbox.exchange(nullptr, std::memory_order_acquire);
      if (got == nullptr) {
        if (done.load(std::memory_order_acquire) && // pairs with [bench.done]: no post after it
            mailbox.load(std::memory_order_acquire) == nullptr)
          return;
        std::this_thread::yield();
        continue;
      }
      for (leaf* p : *got) a.deallocate(p, 1);
      delete got;
    }
  });
  for (auto _ : state) {
    auto* blocks = new std::vector<leaf*>(batch); // one malloc per 1024 blocks, for both
    for (auto& p : *blocks) benchmark::DoNotOptimize(p = a.allocate(1));
    std::vector<leaf*>* empty = nullptr;
    // [bench.post] release: publishes the batch; relaxed on failure: nothing posted
    while (!mailbox.compare_exchange_weak(empty, blocks, std::memory_order_release,
                                          std::memory_order_relaxed)) {
      empty = nullptr;
      std::this_thread::yield();
    }
  }
  done.store(true, std::memory_order_release); // [bench.done] after the last post
  freer.join();
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(cross_thread<std::allocator<leaf>>)->UseRealTime();
BENCHMARK(cross_thread<lfcore::pool_allocator<leaf>>)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
