// tests/fuzz/hash_trie_fuzz.cpp - hash_trie_map against a model, one thread.
//
// The input chooses the trie's shape (root and level widths, chain threshold,
// compression) and a program of calls: every modifier (update and upsert
// too), lookups, successor, erase_if (of the map and of one key), and up to
// four iterators held across the other calls, which must keep their element
// readable (with the value they reached) after it was erased or replaced and
// reclaimed, advance to its successor in the current contents, and erase it
// only if it is still the element they reached.
// Keys are placed (placed_hash.hpp) so that few bytes build towers of levels
// that compression takes down again and chains of fully colliding keys.
// The input can also make the next call's KeyEqual or allocation throw at
// its k-th use: a call that throws must have changed nothing (the map equals
// the model) and leaked nothing (every element is destroyed by the end).
#include "../placed_hash.hpp"
#include "fuzz_input.hpp"

#include <lfcore/hash_trie_map.hpp>

#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <utility>

namespace {

using key = std::uint64_t;

long live_values = 0; // one thread: plain counters
long made_values = 0; // constructed from a number (not moved)

// Move-only and owning heap memory, so that AddressSanitizer reports any read
// of a destroyed element; counted, so that each input ends by checking that
// every element was destroyed exactly once.
class value {
public:
  explicit value(std::uint64_t v) : v_(std::make_unique<std::uint64_t>(v)) {
    ++live_values;
    ++made_values;
  }
  value(value&& o) noexcept : v_(std::move(o.v_)) {}
  value& operator=(value&&) = delete;
  ~value() {
    if (v_) --live_values;
  }
  std::uint64_t get() const { return *v_; }

private:
  std::unique_ptr<std::uint64_t> v_;
};

// The hash the trie consumes for key k (a byte): bits 0-2 of k pick the
// top of the hash (root, first levels), bits 3-5 bits 38-40 (a tower of
// levels under them), bit 6 the lowest bit (a tower down to the last level);
// bit 7 is left out, so k and k ^ 128 collide completely.
constexpr std::uint64_t placement(key k) noexcept {
  return (k & 7) << 61 | (k >> 3 & 7) << 38 | (k >> 6 & 1);
}
struct placing_hash {
  std::size_t operator()(key k) const noexcept { return test::unmix_hash(placement(k)); }
};

// Fault injection: armed with k, a fault fires at its k-th use from now.
struct fault {
  int countdown = 0; // 0: disarmed
  bool fires() { return countdown > 0 && --countdown == 0; }
};
fault equality_fault, allocation_fault;
struct injected {}; // what a KeyEqual that fires throws

struct faulty_equal {
  bool operator()(key a, key b) const {
    if (equality_fault.fires()) throw injected{};
    return a == b;
  }
};
template <class T>
struct faulty_allocator { // stateless, as the map requires
  using value_type = T;
  faulty_allocator() = default;
  template <class U>
  faulty_allocator(const faulty_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (allocation_fault.fires()) throw std::bad_alloc();
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(faulty_allocator, faulty_allocator) noexcept { return true; }
};

template <class Hash>
class session {
  using map = lfcore::hash_trie_map<key, value, Hash, faulty_equal,
                                    faulty_allocator<std::pair<const key, value>>>;
  using iterator = typename map::const_iterator;
  // The model: the map's iteration order is (mixed hash, key).
  struct entry {
    std::uint64_t value, version;
    std::uint64_t since; // the version at which the key became present
  };
  using position = std::pair<std::uint64_t, key>;
  // An iterator kept across calls, with what it reached.
  struct held {
    iterator it;
    key k = 0;
    entry reached{};
    std::uint64_t since = 0; // the last version before the iterator was made
  };

public:
  explicit session(fuzz::input& in) : in_(in), map_(shape(in)) {}

  void run() {
    while (!in_.empty()) step();
    check_contents();
  }

private:
  static lfcore::hash_trie_config shape(fuzz::input& in) {
    lfcore::hash_trie_config c;
    c.root_bits = 1 + in.below(4);
    c.level_bits = 1 + in.below(3);
    c.chain_threshold = 1 + in.below(4);
    // One byte for both, so that the corpus keeps its meaning.
    const unsigned b = in.byte();
    c.compress_empty_levels = b % 4 != 0;
    c.deep_level_bits = 1 + b / 4 % 3;
    return c;
  }
  static position position_of(key k) { return {lfcore::detail::mix_hash(Hash()(k)), k}; }

  key next_key() { return in_.byte(); }
  held& next_slot() { return slots_[in_.below(slots_.size())]; }
  std::uint64_t next_value() { return ++values_; }

  // What an iterator from the map must show, given the model's element.
  void check_reached(const iterator& it, typename std::map<position, entry>::const_iterator m) {
    if (m == model_.end()) {
      FUZZ_CHECK(it == map_.end());
      return;
    }
    FUZZ_CHECK(it != map_.end());
    FUZZ_CHECK(it->first == m->first.second);
    FUZZ_CHECK(it->second.get() == m->second.value);
  }
  void hold(held& h, iterator it) {
    h.it = std::move(it);
    h.since = versions_;
    remember(h);
  }
  // After ++ on h.it, which had reached h.k: the next key present now, or one
  // further on, past keys that became present after the iterator was made
  // (iteration is weakly consistent: those may or may not be visited).
  void check_stepped(const held& h) {
    auto m = model_.upper_bound(position_of(h.k));
    for (; m != model_.end(); ++m) {
      if (h.it != map_.end() && m->first.second == h.it->first) break;
      FUZZ_CHECK(m->second.since > h.since); // skipped: newer than the iterator
    }
    check_reached(h.it, m);
  }
  void remember(held& h) { // call right after h.it was checked against the model
    if (h.it == map_.end()) return;
    h.k = h.it->first;
    h.reached = model_.at(position_of(h.k));
  }
  // After an insert of k: the iterator returned and the model.
  void inserted(key k, const std::pair<iterator, bool>& r, std::uint64_t v, bool assign) {
    const auto m = model_.find(position_of(k));
    FUZZ_CHECK(r.second == (m == model_.end()));
    if (m == model_.end()) {
      ++versions_;
      model_.emplace(position_of(k), entry{v, versions_, versions_});
    } else if (assign) {
      m->second = entry{v, ++versions_, m->second.since};
    }
    check_reached(r.first, model_.find(position_of(k)));
  }

  void step() {
    const unsigned op = in_.below(20);
    if (op < 19) return call(op);
    // One call that reaches a single key, with a fault armed: if it throws,
    // nothing changed.
    constexpr unsigned single_key_calls[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 17, 18};
    fault& f = in_.coin() ? equality_fault : allocation_fault;
    f.countdown = 1 + static_cast<int>(in_.below(8));
    bool threw = false;
    try {
      call(single_key_calls[in_.below(std::size(single_key_calls))]);
    } catch (const injected&) {
      threw = true;
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    equality_fault.countdown = allocation_fault.countdown = 0;
    if (threw) check_contents();
  }

  // The calls. Each updates the model only once the map's call returned.
  void call(unsigned op) {
    switch (op) {
    case 0: { // insert(value_type&&)
      const key k = next_key();
      const std::uint64_t v = next_value();
      inserted(k, map_.insert({k, value(v)}), v, false);
      break;
    }
    case 1: { // insert_or_assign
      const key k = next_key();
      const std::uint64_t v = next_value();
      inserted(k, map_.insert_or_assign(k, value(v)), v, true);
      break;
    }
    case 2: { // try_emplace: the value is built only for an absent key
      const key k = next_key();
      const std::uint64_t v = next_value();
      const long before = live_values;
      const auto r = map_.try_emplace(k, v);
      FUZZ_CHECK(live_values == before + (r.second ? 1 : 0));
      inserted(k, r, v, false);
      break;
    }
    case 3: { // emplace
      const key k = next_key();
      const std::uint64_t v = next_value();
      inserted(k, map_.emplace(k, value(v)), v, false);
      break;
    }
    case 4: { // erase(key), or erase_if(key, pred): pred runs once, on a present key
      const key k = next_key();
      const auto m = model_.find(position_of(k));
      const bool present = m != model_.end();
      if (in_.coin()) {
        FUZZ_CHECK(map_.erase(k) == (present ? 1u : 0u));
        if (present) model_.erase(m);
        break;
      }
      const std::uint64_t mod = 2 + in_.below(3), rest = in_.below(2);
      int calls = 0;
      const std::size_t erased = map_.erase_if(k, [&](const auto& kv) {
        ++calls;
        FUZZ_CHECK(kv.second.get() == m->second.value);
        return kv.second.get() % mod == rest;
      });
      FUZZ_CHECK(calls == (present ? 1 : 0));
      FUZZ_CHECK(erased == (present && m->second.value % mod == rest ? 1u : 0u));
      if (erased == 1) model_.erase(m);
      break;
    }
    case 5: { // find, kept in a slot
      const key k = next_key();
      iterator it = map_.find(k);
      check_reached(it, model_.find(position_of(k)));
      hold(next_slot(), std::move(it));
      break;
    }
    case 6: { // contains, count, visit
      const key k = next_key();
      const auto m = model_.find(position_of(k));
      const bool present = m != model_.end();
      FUZZ_CHECK(map_.contains(k) == present);
      FUZZ_CHECK(map_.count(k) == (present ? 1u : 0u));
      std::uint64_t seen = 0;
      FUZZ_CHECK(map_.visit(k, [&](const auto& kv) { seen = kv.second.get(); }) == present);
      FUZZ_CHECK(!present || seen == m->second.value);
      break;
    }
    case 7: // begin, kept in a slot
      check_reached(map_.begin(), model_.begin());
      hold(next_slot(), map_.begin());
      break;
    case 8: { // ++ on a kept iterator: the next key, as check_stepped allows
      held& h = next_slot();
      if (h.it == map_.end()) break;
      ++h.it;
      check_stepped(h);
      remember(h);
      break;
    }
    case 9: { // erase(it): only the element it reached, if still there
      held& h = next_slot();
      if (h.it == map_.end()) break;
      const auto m = model_.find(position_of(h.k));
      const bool same = m != model_.end() && m->second.version == h.reached.version;
      FUZZ_CHECK(map_.erase(h.it) == (same ? 1u : 0u));
      if (same) model_.erase(m);
      break;
    }
    case 10: // every kept iterator still reads what it reached
      for (const held& h : slots_)
        if (h.it != map_.end()) {
          FUZZ_CHECK(h.it->first == h.k);
          FUZZ_CHECK(h.it->second.get() == h.reached.value);
        }
      break;
    case 11: { // successor of any key, present or not
      const key k = next_key();
      check_reached(map_.successor(k), model_.upper_bound(position_of(k)));
      break;
    }
    case 12:
      check_contents();
      break;
    case 13:
      map_.clear();
      model_.clear();
      break;
    case 14: { // erase_if
      const std::uint64_t mod = 2 + in_.below(3), rest = in_.below(2);
      std::size_t expected = std::erase_if(
          model_, [&](const auto& kv) { return kv.second.value % mod == rest; });
      FUZZ_CHECK(lfcore::erase_if(map_, [&](const auto& kv) {
                   return kv.second.get() % mod == rest;
                 }) == expected);
      break;
    }
    case 15: { // copy one kept iterator into another slot (a second guard)
      held& from = next_slot();
      held& to = next_slot();
      if (&from != &to) to = from;
      break;
    }
    case 16: // let go of a kept iterator, or reclaim what nobody protects
      if (in_.coin())
        next_slot() = held{};
      else
        lfcore::hazard_pointer_default_domain().reclaim();
      break;
    case 17:   // update: f runs once, on a present key's value only
    case 18: { // upsert: update, or a value made from the arguments
      const key k = next_key();
      const std::uint64_t v = next_value();
      int calls = 0;
      const auto add = [&](const value& old) {
        ++calls;
        return value(old.get() + v);
      };
      const long before = made_values; // the old value may be reclaimed meanwhile
      const auto m = model_.find(position_of(k));
      const bool present = m != model_.end();
      iterator it;
      if (op == 17) {
        it = map_.update(k, add);
        FUZZ_CHECK(made_values == before + (present ? 1 : 0));
        FUZZ_CHECK((it == map_.end()) == !present);
      } else {
        auto r = map_.upsert(k, add, v);
        FUZZ_CHECK(made_values == before + 1); // one value made, either way
        if (!present) inserted(k, r, v, false);
        FUZZ_CHECK(!r.second == present);
        it = std::move(r.first);
      }
      FUZZ_CHECK(calls == (present ? 1 : 0));
      if (!present) break;
      m->second = entry{m->second.value + v, ++versions_, m->second.since};
      check_reached(it, m);
      break;
    }
    }
  }

  void check_contents() {
    FUZZ_CHECK(map_.size() == model_.size());
    FUZZ_CHECK(map_.empty() == model_.empty());
    auto m = model_.begin();
    for (auto it = map_.begin(); it != map_.end(); ++it, ++m) {
      FUZZ_CHECK(m != model_.end());
      check_reached(it, m);
    }
    FUZZ_CHECK(m == model_.end());
  }

  fuzz::input& in_;
  map map_;
  std::map<position, entry> model_;
  std::array<held, 4> slots_{};
  std::uint64_t values_ = 0, versions_ = 0;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::input in(data, size);
  const long before = live_values;
  if (in.coin())
    session<placing_hash>(in).run();
  else
    session<std::hash<key>>(in).run(); // leaves without a stored hash
  // Everything erased was retired; with no iterator left, all of it goes now.
  lfcore::hazard_pointer_default_domain().reclaim();
  FUZZ_CHECK(live_values == before);
  return 0;
}
