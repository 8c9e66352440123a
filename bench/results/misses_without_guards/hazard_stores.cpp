// Probe: does publishing hazard pointers (stores, then a re-read) cost a lookup its overlap with the next?
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
using u64 = std::uint64_t;
static inline u64 fmix(u64 k) { k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL; k ^= k >> 33; return k; }
struct leaf { std::atomic<leaf*> next; u64 key, value; };
alignas(64) std::atomic<const void*> slots[4];
struct table {
  unsigned bits; std::vector<std::atomic<leaf*>> b;
  explicit table(unsigned bits_) : bits(bits_), b(std::size_t(1) << bits_) {}
  std::size_t idx(u64 k) const { return fmix(k) >> (64 - bits); }
  void insert(u64 k, u64 v) { auto& h = b[idx(k)]; h.store(new leaf{{h.load()}, k, v}); }
  template <int Mode> const leaf* find(u64 k) const {
    const std::atomic<leaf*>* link = &b[idx(k)];
    leaf* l = link->load(std::memory_order_acquire);
    int s = 0;
    while (l) {
      if constexpr (Mode >= 1) { // protect: publish, compiler barrier, re-read
        for (;;) {
          slots[s & 3].store(l, std::memory_order_relaxed);
          std::atomic_signal_fence(std::memory_order_seq_cst);
          leaf* again = link->load(std::memory_order_acquire);
          if (again == l) break;
          l = again;
        }
        ++s;
      }
      if (l->key == k) break;
      link = &l->next;
      l = link->load(std::memory_order_acquire);
    }
    if constexpr (Mode == 2) for (auto& x : slots) x.store(nullptr, std::memory_order_release);
    if constexpr (Mode == 3) for (int i = 0; i < s && i < 4; ++i) slots[i].store(nullptr, std::memory_order_release);
    if constexpr (Mode == 4) for (auto& x : slots) if (x.load(std::memory_order_relaxed) != nullptr) x.store(nullptr, std::memory_order_release);
    if constexpr (Mode == 6) slots[2].store(nullptr, std::memory_order_release);
    if constexpr (Mode == 7) { std::atomic_signal_fence(std::memory_order_seq_cst); slots[0].store(nullptr, std::memory_order_relaxed); }
    if constexpr (Mode == 5) { slots[3].store(l, std::memory_order_relaxed); for (auto& x : slots) x.store(nullptr, std::memory_order_release); }
    return l;
  }
};
template <int Mode>
double run(const table& t, const std::vector<u64>& q, u64& sink) {
  auto t0 = std::chrono::steady_clock::now();
  u64 s = 0;
  for (u64 k : q) { const leaf* l = t.find<Mode>(k); s += l ? l->value : 1; }
  auto t1 = std::chrono::steady_clock::now();
  sink += s;
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / q.size();
}
int main(int argc, char** argv) {
  std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  unsigned bits = 4; while ((std::size_t(1) << bits) < n) ++bits;
  std::mt19937_64 rng(42);
  std::vector<u64> keys(n); for (auto& k : keys) k = rng() | 1;
  table t(bits); for (auto k : keys) t.insert(k, k + 1);
  std::vector<u64> q = keys; std::shuffle(q.begin(), q.end(), rng);
  u64 sink = 0; std::vector<double> r[8];
  for (int i = 0; i < rounds; ++i) { r[0].push_back(run<0>(t, q, sink)); r[1].push_back(run<1>(t, q, sink)); r[2].push_back(run<2>(t, q, sink)); r[3].push_back(run<3>(t, q, sink)); r[4].push_back(run<4>(t, q, sink)); r[5].push_back(run<5>(t, q, sink)); r[6].push_back(run<6>(t, q, sink)); r[7].push_back(run<7>(t, q, sink)); }
  const char* nm[8] = {"plain", "protect", "protect+reset4", "protect+reset used", "protect+reset nonnull", "protect+1+reset4", "protect+reset other", "protect+reset0 relaxed"};
  for (int m = 0; m < 8; ++m) { auto v = r[m]; std::sort(v.begin(), v.end()); std::printf("%-22s %.1f ns\n", nm[m], v[v.size()/2]); }
  return int(sink & 0);
}
