// README.md's RCU snippet as a program, built against the installed package
// with find_package(lfcore COMPONENTS urcu).
#include <lfcore/unbounded_mpmc_queue.hpp>
#include <lfcore/urcu.hpp>

#include <cstdio>
#include <string>

int main() {
  lfcore::urcu::hash_trie_map<std::string, int> m; // hash_trie_map<..., lfcore::urcu::memb>
  m.insert({"alpha", 1});                          // the same API as under hazard pointers
  m.erase("alpha");                                // freed after a grace period, by call_rcu
  lfcore::unbounded_mpmc_queue<int, 1024, lfcore::urcu::memb> q;
  q.push(42);
  const int v = q.try_pop().value_or(0);
  lfcore::urcu::memb::default_domain().reclaim(); // waits for the callbacks (no iterator held)
  const auto pending = lfcore::urcu::memb::default_domain().stats().pending();
  std::printf("urcu consumer: %d, pending %llu\n", v, static_cast<unsigned long long>(pending));
  return v == 42 && pending == 0 ? 0 : 1;
}
