// README.md's hazard-pointer, queue, map and atom-table snippets as a program, built against
// the installed package with find_package(lfcore).
#include <lfcore/lfcore.hpp>

#include <atomic>
#include <cstdio>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <string_view>

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

  lfcore::atom_table atoms;
  lfcore::atom foo = atoms.intern("foo");                // get-or-insert; permanent
  const bool same = atoms.intern("foo") == foo;          // same text, same handle
  std::string_view text = lfcore::atom_table::name(foo); // O(1): the handle is the entry
  lfcore::functor f = atoms.functor_of(foo, 2);          // foo/2, lock-free get-or-insert
  atoms.add_property(foo, lfcore::property::op, 700);    // opaque word per (atom, kind)
  lfcore::atom tmp = atoms.intern_ref("scratch");        // counted: collectable once released
  atoms.release(tmp);
  const std::size_t collected = atoms.collect(); // frees unreferenced atoms
  std::size_t n = 0;
  atoms.for_each([&](lfcore::atom) { ++n; }); // every atom, hash order
  const bool atoms_ok = same && text == "foo" && f.arity() == 2 && f.name() == foo &&
                        atoms.find_property(foo, lfcore::property::op) == 700u && collected == 1 &&
                        n == 1;

  lfcore::work_stealing_pool pool(4); // 4 workers (0: one per hardware thread)
  std::future<int> answer = pool.submit([] { return 6 * 7; });
  lfcore::task_group group(pool); // fork-join; nests without deadlock
  std::atomic<int> ran{0};
  group.run([&] { ran += 1; });
  group.wait(); // helps run tasks; rethrows the first exception
  lfcore::parallel_for(pool, 0, 1'000'000, 4096, [&](std::size_t i) {
    if (i == 0) ran += 1;
  });
  long sum = lfcore::parallel_reduce(
      pool, 0, 1000, 64, 0L, [](std::size_t lo, std::size_t hi) { return long(hi - lo); },
      std::plus<>());
  const bool pool_ok = answer.get() == 42 && ran == 2 && sum == 1000;

  const bool queues_ok = s == "hello" && got && v == 42 && x == 7 && !channel.pop();
  return id == 7 && pending == 0 && queues_ok && map_ok && atoms_ok && pool_ok ? 0 : 1;
}
