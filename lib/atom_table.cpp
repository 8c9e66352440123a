// lib/atom_table.cpp - atom_table over hash_trie_map (design: atom_table.hpp).
#include "lfcore/atom_table.hpp"

#include "lfcore/cache_padded.hpp"
#include "lfcore/detail/fork_guard.hpp"
#include "lfcore/detail/prefault.hpp"
#include "lfcore/detail/stress.hpp"
#include "lfcore/hash_trie_map.hpp"
#include "lfcore/hazard_pointer.hpp"
#include "lfcore/thread_registry.hpp"

#include <algorithm>
#include <mutex>
#include <new>

namespace lfcore {
namespace detail {

// An atom's properties: an immutable array, replaced whole.
struct property_item {
  property_kind kind;
  std::uint32_t arity;  // functors only
  std::uintptr_t value; // functors: their functor_entry*
};
struct property_block {
  std::size_t count;
  property_item* items() noexcept { return reinterpret_cast<property_item*>(this + 1); }
  const property_item* items() const noexcept {
    return reinterpret_cast<const property_item*>(this + 1);
  }
  const property_item* begin() const noexcept { return items(); }
  const property_item* end() const noexcept { return items() + count; }

  static property_block* make(std::size_t count) {
    void* raw = ::operator new(sizeof(property_block) + count * sizeof(property_item));
    return ::new (raw) property_block{count};
  }
  struct deleter { // stateless: the hazard-pointer domain calls it
    void operator()(property_block* b) const noexcept { ::operator delete(static_cast<void*>(b)); }
  };
};
static_assert(alignof(property_block) >= alignof(property_item));

atom_entry::~atom_entry() {
  // Nobody can reach the atom any more: no hazard pointer, no reference.
  // relaxed: sole owner. [atom.kill] acquired the last [atom.release], so
  // the last [atom.props.publish] happened before (atom_table_ra.pml).
  property_block* b = properties.load(std::memory_order_relaxed);
  if (b == nullptr) return;
  for (const property_item& p : *b)
    if (p.kind == property::functor) delete reinterpret_cast<functor_entry*>(p.value);
  property_block::deleter()(b);
}

} // namespace detail

namespace {

using detail::atom_entry;
using detail::property_block;
using detail::property_item;

// The state word of an atom.
constexpr std::uint32_t permanent_bit = 1u << 31;
constexpr std::uint32_t dead_bit = 1u << 30;
constexpr std::uint32_t refs_mask = dead_bit - 1;
static_assert(atom_table::max_references <= refs_mask);

// Permanent atoms (intern) live as long as their table: nothing frees one
// before the table's destructor, so they need no allocator of their own. The
// arena carves them from chunks, one chain per thread slot (a dense thread
// id below `slots`: owned by one live thread, so a slot's bump pointer needs
// no atomics; a recycled id passes the slot on after the registry's
// hand-over, which orders the two threads), and frees the chunks with the
// table. A block costs its size rounded up to 8 bytes, where glibc's malloc
// adds an 8-byte header and rounds to 16: 46 bytes per atom beyond the text
// instead of 58 on the paper's workload, with the 8-byte hash the entry then
// held (bench/results/README.md). Blocks
// above max_block, threads with larger ids, and atoms that may be collected
// use operator new.
class atom_arena {
public:
  static constexpr std::size_t slots = 64;
  static constexpr std::size_t max_block = 1024;
  static constexpr std::size_t first_chunk = 4096, last_chunk = std::size_t(1) << 20;

  atom_arena() = default;
  atom_arena(const atom_arena&) = delete;
  atom_arena& operator=(const atom_arena&) = delete;
  ~atom_arena() {
    for (auto& s : slots_)
      for (chunk* c = s->chunks; c != nullptr;) {
        chunk* prev = c->prev;
        ::operator delete(static_cast<void*>(c));
        c = prev;
      }
  }

  /// An 8-aligned block of `bytes`, or nullptr: then use operator new.
  void* allocate(std::size_t bytes) {
    const thread_registry::id_type id = thread_registry::current_id();
    if (id >= slots || bytes > max_block) return nullptr;
    slot& s = *slots_[id];
    bytes = (bytes + 7) & ~std::size_t(7);
    if (static_cast<std::size_t>(s.end - s.next) < bytes) refill(s);
    void* block = s.next;
    s.next += bytes;
    return block;
  }

private:
  struct chunk {
    chunk* prev;
    // the blocks follow, 8-aligned
  };
  struct slot {
    char* next = nullptr;
    char* end = nullptr;
    chunk* chunks = nullptr; // the newest; each links to the one before
    std::size_t next_size = first_chunk;
  };
  // Chunks double from 4 KiB to 1 MiB, so a table with few atoms stays
  // small; a chunk's unused tail is less than max_block.
  static void refill(slot& s) {
    void* raw = ::operator new(s.next_size);
    detail::prefault(raw, s.next_size); // it will be filled: map its pages at once
    chunk* c = ::new (raw) chunk{s.chunks};
    s.chunks = c;
    s.next = reinterpret_cast<char*>(c + 1);
    s.end = static_cast<char*>(raw) + s.next_size;
    if (s.next_size < last_chunk) s.next_size *= 2;
  }
  static_assert(sizeof(chunk) % 8 == 0);

  cache_padded<slot> slots_[slots];
};

// The trie's leaves are the atom entries, text included (see
// hash_trie_map's LeafPolicy).
struct atom_leaf_policy {
  using leaf = atom_entry;
  using value_type = atom_entry;
  using position_key = std::string;
  static constexpr bool position_key_borrows = false;
  static std::string_view key(const leaf& l) noexcept { return l.text(); }
  static const value_type& value(const leaf& l) noexcept { return l; }
  // As atom_table::get calls hash_trie_map::try_emplace_and_visit(text, f,
  // state, arena) (or try_emplace, after meeting a dead atom).
  template <class TextTuple, class Args>
  static leaf* make(std::uint64_t, std::piecewise_construct_t, TextTuple&& text, Args&& args) {
    const std::string_view t = std::get<0>(text);
    const std::uint32_t state = std::get<0>(args);
    atom_arena& arena = std::get<1>(args);
    const std::size_t bytes = sizeof(atom_entry) + t.size() + 1;
    void* raw = (state & permanent_bit) != 0 ? arena.allocate(bytes) : nullptr;
    const bool carved = raw != nullptr;
    if (!carved) raw = ::operator new(bytes);
    return ::new (raw) atom_entry(t, state, carved); // noexcept
  }
  // Stateless: the hazard-pointer domain calls it, after the table may be
  // gone - but only for atoms that died, which were never carved. Carved
  // blocks are freed with the arena's chunks; one dropped here (an insert
  // that lost a race for the same text) stays unused until then.
  struct deleter {
    void operator()(leaf* l) const noexcept {
      const bool carved = l->carved;
      l->~atom_entry();
      if (!carved) ::operator delete(static_cast<void*>(l));
    }
  };
};

using trie = hash_trie_map<std::string_view, void, std::hash<std::string_view>,
                           std::equal_to<std::string_view>, std::allocator<char>,
                           hazard_pointer_reclamation, atom_leaf_policy>;

// Takes the atom for the caller: a reference (counted) or the permanent bit.
// False if the atom is dead: it is being collected and must be treated as absent.
// With release() and collect(), model-checked by Spin: tests/model/atom_collection.pml
// (the protocol), atom_table_ra.pml (its memory orders, under release/acquire).
bool claim(const atom_entry& d, bool counted) {
  std::uint32_t s = d.state.load(std::memory_order_relaxed); // relaxed: the CAS validates it
  for (;;) {
    if (s & permanent_bit) return true; // permanent atoms never die: nothing to take
    if (s & dead_bit) return false;
    if (counted && (s & refs_mask) == atom_table::max_references)
      throw std::overflow_error("atom_table: more than max_references references to one atom");
    const std::uint32_t want = counted ? s + 1 : s | permanent_bit;
    // [atom.claim] acq_rel: against [atom.kill], exactly one of the two CASes
    // on a state of 0 succeeds (atomicity: any order would do). The acquire
    // is not needed (atom_table_ra.pml's MUTANT 5, relaxed, passes): a
    // claim and the release after it are read-modify-writes, so they
    // continue the release sequence of the release they follow, and
    // [atom.kill] still synchronizes with every earlier release. Kept: on
    // x86 it is free.
    if (d.state.compare_exchange_weak(s, want, std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
      return true;
  }
}

const atom_entry& data(atom a) {
  if (!a) throw std::invalid_argument("atom_table: null atom");
  return *reinterpret_cast<const atom_entry*>(a.bits());
}

void check_kind(property_kind kind) {
  if (kind == 0 || kind == property::functor)
    throw std::invalid_argument("atom_table: property kind 0 is invalid and kind 3 (functor) "
                                "is reserved for functor_of");
}

void retire(property_block* b) {
  if (b != nullptr) hazard_pointer_default_domain().retire(b, property_block::deleter());
}

// Reads the atom's current block under a hazard pointer and calls
// f(const property_block*) (null: no properties).
template <class F>
auto with_properties(const atom_entry& d, F f) {
  hazard_pointer hp = make_hazard_pointer();
  // [atom.props.read] protect's acquire pairs with [atom.props.publish].
  const property_block* b = hp.protect(d.properties);
  return f(b);
}

// Copy-on-write update: edit(old) returns a new block to publish, or null
// for "no change". Lock-free: a CAS fails only when another update succeeded.
// Returns whether a block was published.
template <class Edit>
bool update_properties(const atom_entry& d, Edit edit) {
  hazard_pointer hp = make_hazard_pointer();
  for (;;) {
    property_block* old = hp.protect(d.properties);
    property_block* fresh = edit(old);
    if (fresh == nullptr) return false;
    try {
      hazard_pointer_default_domain().reserve_retire(); // retiring old cannot fail below
    } catch (...) {
      property_block::deleter()(fresh);
      throw;
    }
    // [atom.props.publish] release: the new block's items are written first.
    // No ABA: old is protected, so it cannot be freed and reused meanwhile.
    if (d.properties.compare_exchange_strong(old, fresh, std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
      hp.reset_protection();
      retire(old);
      return true;
    }
    property_block::deleter()(fresh);
  }
}

const property_item* find_item(const property_block* b, property_kind kind, std::uint32_t arity) {
  if (b == nullptr) return nullptr;
  for (const property_item& p : *b)
    if (p.kind == kind && p.arity == arity) return &p;
  return nullptr;
}

// A copy of old (may be null) with `item` appended.
property_block* with_item(const property_block* old, const property_item& item) {
  const std::size_t n = old != nullptr ? old->count : 0;
  property_block* b = property_block::make(n + 1);
  if (n != 0) std::copy(old->begin(), old->end(), b->items());
  b->items()[n] = item;
  return b;
}

} // namespace

struct atom_table::impl {
  explicit impl(std::size_t expected) : atoms(config(expected)) {}
  // Sized, a new atom goes in at its chain's head when the bucket's summary
  // allows (no walk of the chain's leaves; an interpreter uses what it just
  // interned): the paper's workload ran 1.13x / 1.16x at 1 / 2 threads. A
  // growing table gained nothing (0.96x / 1.02x): its chains sit in levels
  // below the root, short already (bench/results/head_insert/).
  // Stress builds keep the tiny shape, whose chains close at one leaf and so
  // never take a head insert; closing at 4 there lets sanitized runs see
  // head inserts race interning, collection and expansion. for_expected_size
  // sets head_inserts only for a root with a bucket per key; the table sets
  // it for stress builds and for tables past the largest root as well.
  static hash_trie_config config(std::size_t expected) {
    if (expected == 0) return {};
    hash_trie_config c = hash_trie_config::for_expected_size(expected);
    if constexpr (stress_build) c.chain_threshold = 4;
    c.head_inserts = true;
    return c;
  }
  atom_arena arena; // destroyed after the trie, which destroys the atoms in it
  trie atoms;
  std::mutex collecting; // one collect() at a time
  // fork() takes `collecting` first, so that a child never inherits it held.
  struct fork_registration {
    std::mutex& mutex;
    explicit fork_registration(std::mutex& m) : mutex(m) { detail::fork_guard::add(m); }
    ~fork_registration() { detail::fork_guard::remove(mutex); }
    fork_registration(const fork_registration&) = delete;
    fork_registration& operator=(const fork_registration&) = delete;
  } fork_registration{collecting};
};

atom_table::atom_table(std::size_t expected_atoms)
    : impl_(std::make_unique<impl>(expected_atoms)) {}
atom_table::~atom_table() = default;

atom atom_table::get(std::string_view text, bool counted) {
  if (text.size() > max_length)
    throw std::length_error("atom_table: text longer than atom_table::max_length");
  trie& atoms = impl_->atoms;
  const std::uint32_t state = counted ? std::uint32_t(1) : permanent_bit; // of a new atom
  // One search; the text is copied only if it is absent. The element is
  // claimed while the search still protects it: no iterator, whose hazard
  // pointer cost 8% of an intern (bench/results/try_emplace_and_visit/).
  const atom_entry* entry = nullptr;
  atoms.try_emplace_and_visit(
      text,
      [&](const atom_entry& e, bool inserted) {
        if (inserted || claim(e, counted)) entry = &e;
      },
      state, impl_->arena);
  if (entry != nullptr) return atom(entry);
  // The text's atom was dead, being collected: take it again with an
  // iterator to help unlink it (its collector may stall), then retry.
  for (;;) {
    auto [it, inserted] = atoms.try_emplace(text, state, impl_->arena);
    if (inserted || claim(*it, counted)) return atom(&*it);
    atoms.erase(it);
  }
}

void atom_table::prefetch(std::string_view text) const {
  impl_->atoms.prefetch(text);
}
void atom_table::prefetch(std::span<const std::string_view> texts) const {
  impl_->atoms.prefetch(texts.begin(), texts.end());
}

std::optional<atom> atom_table::find(std::string_view text) const {
  const atom_entry* found = nullptr;
  // A dead atom is absent: it died (at [atom.kill]) before this lookup read it.
  impl_->atoms.visit(text, [&](const atom_entry& e) {
    if (claim(e, true)) found = &e;
  });
  return found != nullptr ? std::optional<atom>(atom(found)) : std::nullopt;
}

void atom_table::retain(atom a) {
  if (!claim(data(a), true)) throw std::logic_error("atom_table::retain: the atom was collected");
}
bool atom_table::try_retain(atom a) {
  return claim(data(a), true);
}

void atom_table::release(atom a) {
  const atom_entry& d = data(a);
  std::uint32_t s = d.state.load(std::memory_order_relaxed); // relaxed: the CAS validates it
  do {
    if (s & permanent_bit) return;
    if ((s & refs_mask) == 0)
      throw std::logic_error("atom_table::release: the atom holds no reference");
    // [atom.release] release: the caller's uses of the atom happen before its
    // collection, which acquires in [atom.kill].
  } while (!d.state.compare_exchange_weak(s, s - 1, std::memory_order_release,
                                          std::memory_order_relaxed));
}

void atom_table::make_permanent(atom a) {
  // relaxed: only atomicity matters; the caller holds the atom alive.
  data(a).state.fetch_or(permanent_bit, std::memory_order_relaxed);
}

bool atom_table::is_permanent(atom a) noexcept {
  // relaxed: a snapshot; once set the bit never clears.
  return a &&
         (reinterpret_cast<const atom_entry*>(a.bits())->state.load(std::memory_order_relaxed) &
          permanent_bit) != 0;
}

std::size_t atom_table::collect() {
  std::lock_guard<std::mutex> one_at_a_time(impl_->collecting);
  trie& atoms = impl_->atoms;
  std::size_t collected = 0;
  for (auto it = atoms.begin(); it != atoms.end(); ++it) {
    std::uint32_t unreferenced = 0;
    // [atom.kill] the atom's death; acq_rel: pairs with [atom.claim] (only
    // one wins on a state of 0) and acquires the last [atom.release].
    if (it->state.compare_exchange_strong(unreferenced, dead_bit, std::memory_order_acq_rel,
                                          std::memory_order_relaxed)) {
      // Dead but still in the trie: an intern of its text meets it here and
      // must unlink it itself before it can make a new atom.
      detail::stress_point();
      atoms.erase(it); // the leaf, text and properties go to the hazard-pointer domain
      ++collected;
    }
  }
  return collected;
}

std::size_t atom_table::size() const noexcept {
  return impl_->atoms.size();
}

void atom_table::visit_all(bool (*f)(void*, atom), void* ctx) const {
  const trie& atoms = impl_->atoms;
  for (auto it = atoms.begin(); it != atoms.end(); ++it) {
    // The iterator's hazard pointer keeps the entry readable during f.
    if (it->state.load(std::memory_order_relaxed) & dead_bit) continue; // relaxed: a hint
    if (!f(ctx, atom(&*it))) return;
  }
}

// ------------------------------------------------------------- properties

bool atom_table::add_property(atom a, property_kind kind, std::uintptr_t value) {
  check_kind(kind);
  return update_properties(data(a), [&](const property_block* old) -> property_block* {
    if (find_item(old, kind, 0) != nullptr) return nullptr;
    return with_item(old, {kind, 0, value});
  });
}

void atom_table::set_property(atom a, property_kind kind, std::uintptr_t value) {
  check_kind(kind);
  update_properties(data(a), [&](const property_block* old) -> property_block* {
    const property_item* at = find_item(old, kind, 0);
    if (at == nullptr) return with_item(old, {kind, 0, value});
    property_block* b = property_block::make(old->count);
    std::copy(old->begin(), old->end(), b->items());
    b->items()[at - old->items()].value = value;
    return b;
  });
}

std::optional<std::uintptr_t> atom_table::find_property(atom a, property_kind kind) const {
  check_kind(kind);
  return with_properties(data(a), [&](const property_block* b) -> std::optional<std::uintptr_t> {
    if (const property_item* p = find_item(b, kind, 0)) return p->value;
    return std::nullopt;
  });
}

bool atom_table::remove_property(atom a, property_kind kind) {
  check_kind(kind);
  return update_properties(data(a), [&](const property_block* old) -> property_block* {
    if (find_item(old, kind, 0) == nullptr) return nullptr;
    property_block* b = property_block::make(old->count - 1);
    std::copy_if(old->begin(), old->end(), b->items(),
                 [&](const property_item& p) { return p.kind != kind; });
    return b;
  });
}

functor atom_table::functor_of(atom name, std::uint32_t arity) {
  const atom_entry& d = data(name);
  const detail::functor_entry* result = nullptr;
  // Allocated once; freed if another thread's functor won or anything threw.
  std::unique_ptr<detail::functor_entry> mine;
  update_properties(d, [&](const property_block* old) -> property_block* {
    if (const property_item* p = find_item(old, property::functor, arity)) {
      result = reinterpret_cast<const detail::functor_entry*>(p->value);
      return nullptr;
    }
    if (mine == nullptr) mine.reset(new detail::functor_entry{name, arity});
    result = mine.get();
    return with_item(old, {property::functor, arity, reinterpret_cast<std::uintptr_t>(mine.get())});
  });
  if (result == mine.get()) static_cast<void>(mine.release()); // published: the atom owns it
  return functor(result);
}

std::optional<functor> atom_table::find_functor(atom name, std::uint32_t arity) const {
  return with_properties(data(name), [&](const property_block* b) -> std::optional<functor> {
    if (const property_item* p = find_item(b, property::functor, arity))
      return functor(reinterpret_cast<const detail::functor_entry*>(p->value));
    return std::nullopt;
  });
}

} // namespace lfcore
