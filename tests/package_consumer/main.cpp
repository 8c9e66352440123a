// README.md's hazard-pointer and queue snippets as a program, built against
// the installed package with find_package(lfcore).
#include <lfcore/lfcore.hpp>

#include <atomic>
#include <cstdio>
#include <optional>
#include <string>

struct widget : lfcore::hazard_pointer_obj_base<widget> {
  int id = 7;
};
std::atomic<widget*> slot{new widget};

int main() {
  lfcore::hazard_pointer hp = lfcore::make_hazard_pointer();
  widget* w = hp.protect(slot); // w cannot be freed while hp protects it
  int id = w->id;
  widget* old = slot.exchange(nullptr); // unlink ...
  hp.reset_protection();
  old->retire(); // ... then retire: deleted once unprotected

  auto& domain = lfcore::hazard_pointer_default_domain();
  domain.reclaim();
  const auto pending = domain.stats().pending();
  std::printf("consumer: id %d, pending %llu\n", id, static_cast<unsigned long long>(pending));

  lfcore::spsc_queue<std::string> ring(1024); // one producer, one consumer
  ring.try_push("hello");                     // false when full
  std::optional<std::string> s = ring.try_pop();

  lfcore::unbounded_mpmc_queue<int> q; // any threads; push never fails
  q.push(42);
  int v = 0;
  bool got = q.try_pop(v);

  lfcore::blocking_queue<lfcore::mpmc_queue<int>> channel(256);
  channel.push(7);
  std::optional<int> x = channel.pop();
  channel.close();

  lfcore::hash_trie_map<std::string, int> m(lfcore::hash_trie_config::for_expected_size(1 << 20));
  m.insert({"alpha", 1});         // get-or-insert: {iterator, inserted}
  m.insert_or_assign("alpha", 2); // atomic replace
  int mv = 0;
  if (auto it = m.find("alpha"); it != m.end()) // the iterator keeps its element alive
    mv = it->second;
  m.visit("alpha", [&](const auto& kv) { mv += kv.second; }); // read under protection
  m.erase("alpha");
  for (const auto& [key, value] : m) mv += value; // empty by now
  const bool map_ok = mv == 4 && m.empty();

  const bool queues_ok = s == "hello" && got && v == 42 && x == 7 && !channel.pop();
  return id == 7 && pending == 0 && queues_ok && map_ok ? 0 : 1;
}
