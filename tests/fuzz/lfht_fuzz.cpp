// tests/fuzz/lfht_fuzz.cpp - the C API of the hash trie (lfht.h) against a
// model, one thread.
//
// The input picks the callbacks - each of hash, compare and free present or
// NULL, with the paper's meaning for NULL - the table's size (init_lfht or
// init_lfht_sized) and a program of calls: inserts of new and present keys,
// searches, removes, lfht_next_key from NULL, from a present key and from an
// absent one, lfht_for_each stopped early or changing the table from inside its
// callback, and every misuse the header lists. Keys are heap blobs (a length
// byte, then the bytes) or, with every callback NULL, plain integers. Checked:
// every return value and errno, the (hash, key) order of iteration, that the
// table hands back its own key pointers, and that each key the table took is
// freed exactly once - after lfht_remove (once reclaimed) or in lfht_free - and
// no other key ever. Any call can also meet a failing allocation
// (failing_new.hpp): it must then report ENOMEM and change nothing.
#include "../placed_hash.hpp"
#include "failing_new.hpp"
#include "fuzz_input.hpp"

#include <lfht.h>

#include <lfcore/hash_trie_map.hpp>
#include <lfcore/hazard_pointer.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

// ---- keys: a length byte, then the bytes
void* new_blob(std::string_view s) {
  auto* p = static_cast<unsigned char*>(std::malloc(1 + s.size()));
  FUZZ_CHECK(p != nullptr);
  p[0] = static_cast<unsigned char>(s.size());
  if (!s.empty()) std::memcpy(p + 1, s.data(), s.size());
  return p;
}
std::string_view blob(void* key) {
  const auto* p = static_cast<const unsigned char*>(key);
  return {reinterpret_cast<const char*>(p + 1), p[0]};
}

// ---- the callbacks a table may be given
std::size_t fnv1a_hash(void* key) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : blob(key)) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}
std::size_t weak_hash(void* key) { // four hashes in all: chains of equal hashes
  return blob(key).size() % 4;
}
// The hash the trie consumes is placed by the first byte (as in
// hash_trie_fuzz.cpp): towers of levels below the default root too.
std::size_t placing_hash(void* key) {
  const std::string_view b = blob(key);
  const std::uint64_t k = b.empty() ? 0 : static_cast<unsigned char>(b[0]);
  return test::unmix_hash((k & 7) << 61 | (k >> 3 & 7) << 38 | (k >> 6 & 1));
}
int blob_compare(void* a, void* b) { // std::string's order
  const int c = blob(a).compare(blob(b));
  return c < 0 ? -1 : c > 0;
}

std::set<void*> owned_keys; // keys the table took and has not freed yet
void counting_free(void* key) {
  FUZZ_CHECK(owned_keys.erase(key) == 1); // a key the table owns, freed once
  std::free(key);
}

class session {
public:
  explicit session(fuzz::input& in) : in_(in) {
    const unsigned mode = in.byte();
    integer_keys_ = (mode & 1) != 0;
    if (!integer_keys_) {
      std::size_t (*const hashes[])(void*) = {nullptr, fnv1a_hash, weak_hash, placing_hash};
      hash_ = hashes[mode >> 1 & 3];
      compare_ = (mode & 8) != 0 ? blob_compare : nullptr;
      free_ = (mode & 16) != 0 ? counting_free : nullptr;
    }
    // Bit 5: init_lfht_sized for 16, 256, 4,096 or 65,536 keys (bits 6-7),
    // whose chains close at 8 leaves, not 4 (hash_trie_config).
    head_ = (mode & 32) != 0
                ? init_lfht_sized(hash_, compare_, free_, std::size_t(16) << 4 * (mode >> 6 & 3))
                : init_lfht(hash_, compare_, free_);
    FUZZ_CHECK(head_ != nullptr);
  }
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  ~session() {
    lfht_free(head_);
    // Removed elements were retired; nothing protects them now.
    lfcore::hazard_pointer_default_domain().reclaim();
    FUZZ_CHECK(owned_keys.empty());
    for (void* k : harness_keys_) std::free(k);
  }

  void run() {
    while (!in_.empty()) step();
    check_contents();
  }

private:
  // ---- the model: identity and order of a key as the table sees them
  using position = std::pair<std::uint64_t, std::string>; // (mixed hash, text if compared)
  struct entry {
    void* key; // the table's own pointer
    void* value;
  };
  position position_of(void* key) const {
    const std::uint64_t h = hash_ != nullptr ? hash_(key) : reinterpret_cast<std::uintptr_t>(key);
    return {lfcore::detail::mix_hash(h), compare_ != nullptr ? std::string(blob(key)) : ""};
  }

  // ---- keys for one call: a present one (the table's pointer, or a copy of
  // it) or a new one; probe() gives back what the call did not keep.
  void* pick_key() {
    if (!model_.empty() && in_.coin()) {
      auto it = model_.begin();
      std::advance(it, in_.below(model_.size()));
      if (integer_keys_ || in_.coin()) return it->second.key;
      return fresh_blob(blob(it->second.key));
    }
    if (integer_keys_) return reinterpret_cast<void*>(std::uintptr_t(1) + in_.byte());
    return fresh_blob(in_.bytes(6));
  }
  void* fresh_blob(std::string_view s) {
    void* k = new_blob(s);
    if (free_ == nullptr) harness_keys_.push_back(k); // freed at the end
    return k;
  }
  // After a call with key k: free k unless the table took it or owns it.
  void done_with(void* k, bool table_took_it) {
    if (table_took_it) {
      if (free_ != nullptr) owned_keys.insert(k);
      return;
    }
    // The table's own keys (present, or removed and not yet freed) are all
    // in owned_keys; without key_free, harness_keys_ frees every blob at the end.
    if (free_ != nullptr && !integer_keys_ && owned_keys.count(k) == 0) std::free(k);
  }
  void* next_value() { return reinterpret_cast<void*>(++values_ * 8); }

  std::map<position, entry>::iterator successor(void* key) {
    return key == nullptr ? model_.begin() : model_.upper_bound(position_of(key));
  }

  void step() {
    switch (in_.below(10)) {
    case 9:
      call_failing_allocation();
      break;
    case 0: { // insert: get-or-insert
      void* k = pick_key();
      void* v = next_value();
      const auto m = model_.find(position_of(k));
      void* got = lfht_insert(head_, k, v);
      if (m != model_.end()) {
        FUZZ_CHECK(got == m->second.value);
        done_with(k, false);
      } else {
        FUZZ_CHECK(got == v);
        model_.emplace(position_of(k), entry{k, v});
        done_with(k, true);
      }
      break;
    }
    case 1: { // search
      void* k = pick_key();
      const auto m = model_.find(position_of(k));
      FUZZ_CHECK(lfht_search(head_, k) == (m != model_.end() ? m->second.value : nullptr));
      done_with(k, false);
      break;
    }
    case 2: { // remove
      void* k = pick_key();
      const auto m = model_.find(position_of(k));
      void* expected = nullptr;
      if (m != model_.end()) {
        expected = m->second.value;
        model_.erase(m); // the table's key stays owned until it is freed
      }
      FUZZ_CHECK(lfht_remove(head_, k) == expected);
      done_with(k, false);
      break;
    }
    case 3: { // next_key from nothing, a present key or an absent one
      void* k = in_.coin() ? nullptr : pick_key();
      const auto m = successor(k);
      FUZZ_CHECK(lfht_next_key(head_, k) == (m != model_.end() ? m->second.key : nullptr));
      if (k != nullptr) done_with(k, false);
      break;
    }
    case 4:
      check_contents();
      break;
    case 5:
      for_each_stopping_early();
      break;
    case 6:
      for_each_changing_the_table();
      break;
    case 7:
      misuse();
      break;
    case 8:
      lfcore::hazard_pointer_default_domain().reclaim();
      break;
    }
  }

  // One call whose k-th allocation fails: either it succeeds as usual, or it
  // returns its failure value with errno ENOMEM and the table is unchanged.
  // (The model's own allocations happen outside the armed scope.) On a new
  // thread, the call also allocates that thread's guards (hazard records).
  void call_failing_allocation() {
    const int fail_at = 1 + static_cast<int>(in_.below(6));
    const unsigned which = in_.below(5);
    const bool new_thread = in_.below(8) == 0;
    void* key = which == 4 ? nullptr : pick_key();
    const auto m = key != nullptr ? model_.find(position_of(key)) : model_.end();
    const bool present = m != model_.end();
    void* const value = next_value();
    std::vector<void*> seen;
    seen.reserve(model_.size() + 1); // the callback must not allocate
    void* got = nullptr;
    int status = 0;
    int error = 0;
    const auto call = [&] {
      errno = 0;
      fuzz::failing_new armed(fail_at);
      switch (which) {
      case 0:
        got = lfht_insert(head_, key, value);
        break;
      case 1:
        got = lfht_search(head_, key);
        break;
      case 2:
        got = lfht_remove(head_, key);
        break;
      case 3:
        got = lfht_next_key(head_, key);
        break;
      default:
        status = lfht_for_each(
            head_,
            [](void* k, void*, void* arg) {
              static_cast<std::vector<void*>*>(arg)->push_back(k);
              return 0;
            },
            &seen);
      }
      error = errno;
    };
    if (new_thread)
      std::thread(call).join();
    else
      call();
    const bool failed = error == ENOMEM;
    if (failed) {
      FUZZ_CHECK(got == nullptr && (which != 4 || status == -1));
      if (which == 4) { // what it visited before failing is a prefix, in order
        auto e = model_.begin();
        for (void* k : seen) FUZZ_CHECK(e != model_.end() && (e++)->second.key == k);
      }
      if (key != nullptr) done_with(key, false);
      check_contents(); // unchanged
      return;
    }
    FUZZ_CHECK(error == 0);
    switch (which) {
    case 0:
      FUZZ_CHECK(got == (present ? m->second.value : value));
      if (!present) model_.emplace(position_of(key), entry{key, value});
      done_with(key, !present);
      break;
    case 1:
      FUZZ_CHECK(got == (present ? m->second.value : nullptr));
      done_with(key, false);
      break;
    case 2:
      FUZZ_CHECK(got == (present ? m->second.value : nullptr));
      if (present) model_.erase(m);
      done_with(key, false);
      break;
    case 3: {
      const auto next = successor(key);
      FUZZ_CHECK(got == (next != model_.end() ? next->second.key : nullptr));
      done_with(key, false);
      break;
    }
    default:
      FUZZ_CHECK(status == 0 && seen.size() == model_.size());
    }
  }

  void check_contents() {
    auto m = model_.begin();
    for (void* k = lfht_next_key(head_, nullptr); k != nullptr; k = lfht_next_key(head_, k), ++m) {
      FUZZ_CHECK(m != model_.end());
      FUZZ_CHECK(k == m->second.key);
      FUZZ_CHECK(lfht_search(head_, k) == m->second.value);
    }
    FUZZ_CHECK(m == model_.end());
    FUZZ_CHECK(lfht_count(head_) == model_.size());
  }

  struct visit_log {
    session* self;
    std::size_t stop_after; // visits before returning non-zero
    std::vector<std::pair<void*, void*>> seen;
  };

  void for_each_stopping_early() {
    visit_log log{this, in_.below(8), {}};
    const int r = lfht_for_each(
        head_,
        [](void* k, void* v, void* arg) {
          auto& l = *static_cast<visit_log*>(arg);
          l.seen.emplace_back(k, v);
          return l.seen.size() > l.stop_after ? 42 : 0;
        },
        &log);
    const bool stopped = model_.size() > log.stop_after;
    FUZZ_CHECK(r == (stopped ? 42 : 0));
    FUZZ_CHECK(log.seen.size() == (stopped ? log.stop_after + 1 : model_.size()));
    auto m = model_.begin();
    for (const auto& [k, v] : log.seen) {
      FUZZ_CHECK(k == m->second.key && v == m->second.value);
      ++m;
    }
  }

  // The callback inserts or removes keys (any function but lfht_free is
  // allowed there). The walk must then be weakly consistent: in strictly
  // increasing order, every visited key present when visited, and every key
  // present from start to end visited.
  void for_each_changing_the_table() {
    std::set<void*> throughout;
    for (const auto& [pos, e] : model_) throughout.insert(e.key);
    struct state {
      session* self;
      std::set<void*>* throughout;
      std::vector<position> visited;
    } st{this, &throughout, {}};
    const int r = lfht_for_each(
        head_,
        [](void* k, void* v, void* arg) {
          auto& s = *static_cast<state*>(arg);
          session& self = *s.self;
          const position p = self.position_of(k); // k stays readable during the call
          const auto m = self.model_.find(p);
          FUZZ_CHECK(m != self.model_.end() && m->second.key == k && m->second.value == v);
          FUZZ_CHECK(s.visited.empty() || s.visited.back() < p);
          s.visited.push_back(p);
          if (self.in_.coin()) { // remove a key: maybe this one, maybe one ahead
            void* victim = self.pick_key();
            const auto vm = self.model_.find(self.position_of(victim));
            if (vm != self.model_.end()) {
              s.throughout->erase(vm->second.key);
              self.model_.erase(vm);
              FUZZ_CHECK(lfht_remove(self.head_, victim) != nullptr);
            }
            self.done_with(victim, false);
          } else { // insert a new key, perhaps ahead of the walk
            void* nk = self.pick_key();
            void* nv = self.next_value();
            const bool absent = self.model_.count(self.position_of(nk)) == 0;
            if (absent) self.model_.emplace(self.position_of(nk), entry{nk, nv});
            FUZZ_CHECK(lfht_insert(self.head_, nk, nv) == (absent ? nv : self.model_.at(self.position_of(nk)).value));
            self.done_with(nk, absent);
          }
          return self.in_.below(4) == 0 ? 1 : 0;
        },
        &st);
    FUZZ_CHECK(r == 0 || r == 1);
    if (r == 0)
      for (void* k : throughout) {
        bool seen = false;
        for (const auto& p : st.visited) seen |= p == position_of(k);
        FUZZ_CHECK(seen);
      }
  }

  // Each misuse the header lists: nothing changes, errno says EINVAL.
  void misuse() {
    void* v = next_value();
    void* k = pick_key();
    errno = 0;
    switch (in_.below(8)) {
    case 0:
      FUZZ_CHECK(lfht_search(nullptr, k) == nullptr);
      break;
    case 1:
      FUZZ_CHECK(lfht_insert(nullptr, k, v) == nullptr);
      break;
    case 2:
      FUZZ_CHECK(lfht_insert(head_, k, nullptr) == nullptr);
      break;
    case 3:
      FUZZ_CHECK(lfht_insert(head_, nullptr, v) == nullptr);
      break;
    case 4:
      FUZZ_CHECK(lfht_remove(head_, nullptr) == nullptr);
      break;
    case 5:
      FUZZ_CHECK(lfht_search(head_, nullptr) == nullptr);
      break;
    case 6:
      FUZZ_CHECK(lfht_next_key(nullptr, k) == nullptr);
      FUZZ_CHECK(errno == EINVAL);
      errno = 0;
      FUZZ_CHECK(lfht_count(nullptr) == 0);
      break;
    case 7:
      FUZZ_CHECK(lfht_for_each(head_, nullptr, nullptr) == -1);
      FUZZ_CHECK(errno == EINVAL);
      errno = 0;
      FUZZ_CHECK(lfht_for_each(nullptr, [](void*, void*, void*) { return 0; }, nullptr) == -1);
      break;
    }
    FUZZ_CHECK(errno == EINVAL);
    lfht_free(nullptr); // a no-op
    done_with(k, false);
  }

  fuzz::input& in_;
  bool integer_keys_ = false;
  std::size_t (*hash_)(void*) = nullptr;
  int (*compare_)(void*, void*) = nullptr;
  void (*free_)(void*) = nullptr;
  lfht_head* head_ = nullptr;
  std::map<position, entry> model_;
  std::vector<void*> harness_keys_; // with free_ NULL: every blob, freed at the end
  std::uintptr_t values_ = 0;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::input in(data, size);
  session(in).run();
  return 0;
}
