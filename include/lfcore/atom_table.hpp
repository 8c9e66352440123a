// lfcore/atom_table.hpp - a Prolog-style atom (symbol) table on the hash trie.
//
// What YAP gained by moving its atom table onto the LFHT (Moreno, Areias and
// Rocha, "On the Implementation of a Lock-Free Atom Table in a Prolog System";
// ../shared/seeds/lock-free-atom-table.txt), as a library: interning, O(1)
// names, per-atom property lists, a functor table, iteration and atom garbage
// collection, for C++ here and C in lfcore_atoms.h.
//
// Structure
// * The atoms are the elements of a hash_trie_map whose leaf is the atom's
//   entry (as in the paper's Fig. 4, less the hash): chain link, state,
//   size, properties and the text, in one allocation. The trie hashes a
//   text again where it needs a leaf's hash (iteration, closing a chain):
//   8 bytes less per atom; interns one at a time ran as fast within
//   noise, prefetched ones 1.1x-1.2x (bench/results/README.md, "The
//   atom's hash, dropped"). Leaves never move
//   (hash_trie_map closes full chains instead of moving leaves), so a handle
//   is the entry's address: name() is one dereference, never a hash lookup.
// * Properties (the paper's PropsOfAE: operators, predicates, any kind the
//   interpreter defines) are an immutable block of (kind, value) items per
//   atom, replaced whole by a CAS (copy on write); old blocks go to the
//   hazard-pointer domain. Most atoms have none, a few have two or three, so
//   a block scan beats a linked list and makes every reader one hazard
//   pointer. The functor table is part of it: a functor (name/arity) is an
//   item of kind `property::functor` on its name's block, and its handle is
//   the address of a small entry that lives as long as the atom.
//
// Atom garbage collection (reference counts; cf. SWI-Prolog's
// PL_register_atom and Wielemaker & Harris, TPLP 16(5-6), 2016)
// * Each atom has a state word: a permanent bit, a dead bit and a reference
//   count. intern() returns a permanent atom (never collected - what YAP does
//   for every atom). intern_ref() and find() return an atom with one
//   reference for the caller, given back with release(); on a permanent atom
//   both are no-ops, so "release what intern_ref/find gave you" is always
//   right. make_permanent() pins an atom for good.
// * collect() kills each atom whose state is exactly 0 (not permanent, no
//   reference) with one CAS to "dead" - the linearization point of its
//   death, so a concurrent intern_ref either took its reference first (the
//   CAS fails) or sees "dead", helps unlink it and inserts a new atom. The
//   dead entry is erased from the trie; its text, properties and functors
//   are freed when the hazard-pointer domain reclaims the leaf.
// * The rule for handles: the address of a reclaimed atom may be reused by a
//   new atom, but only after the old one had no reference, was not permanent,
//   and no thread was still inside a lookup that reached it. A handle you hold
//   by the rules above therefore never changes meaning. Handles you do not
//   hold a reference to (an unpinned atom seen during iteration, a released
//   one) must not be used after the next collect() may have run.
//
// Progress: intern, intern_ref, find, name, retain, release and all property
// and functor calls are lock-free (name is wait-free); collect() is lock-free
// towards them and serialized with other collect() calls by a mutex, which
// fork() waits for (detail/fork_guard.hpp: a child never inherits it held).
// Ordering: intern/intern_ref/find are linearizable (hash_trie_map's insert
// or lookup, and the CAS on the state word); what the thread that created
// an atom wrote before interning it is visible to every thread that obtains it.
// Memory: per atom, one block of 25 bytes plus the text, rounded up to 8,
// plus its share of the trie's buckets (bench/results/README.md measures
// it). Atoms created permanent (intern) are carved from the table's arena:
// chunks per thread, freed with the table, no allocator header. Atoms that
// may be collected (intern_ref, find's callers) come from operator new, and
// go back to it through the hazard-pointer domain.
//
// Not provided: atom texts are bytes (any bytes, NUL included, up to
// max_length); intern_utf8() validates UTF-8 but nothing normalizes Unicode.
// The table does not order atoms alphabetically (iteration is in hash order).
#pragma once

#include "lfcore/config.hpp"
#include "lfcore/detail/utf8.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace lfcore {

class atom_table;

namespace detail {

struct property_block;

/// An atom: a leaf of the hash trie (next is the trie's), with its text
/// right after it in the same block, NUL-terminated (the text itself may
/// contain NULs). 24 bytes plus the text.
struct atom_entry {
  atom_entry(std::string_view text, std::uint32_t initial_state, bool in_arena) noexcept
      : state(initial_state), size(static_cast<std::uint32_t>(text.size()) & max_size),
        carved(in_arena ? 1u : 0u) {
    char* dst = reinterpret_cast<char*>(this + 1);
    if (!text.empty()) std::memcpy(dst, text.data(), text.size());
    dst[text.size()] = '\0';
  }
  atom_entry(const atom_entry&) = delete;
  atom_entry& operator=(const atom_entry&) = delete;
  ~atom_entry(); // frees the property block and the functors (lib/atom_table.cpp)

  const char* c_str() const noexcept { return reinterpret_cast<const char*>(this + 1); }
  std::string_view text() const noexcept { return {c_str(), size}; }

  std::atomic<std::uintptr_t> next{0};                      // the trie's chain link
  mutable std::atomic<std::uint32_t> state;                 // permanent, dead, reference count
  static constexpr std::uint32_t max_size = (1u << 31) - 1; // atom_table::max_length is less
  const std::uint32_t size : 31;
  const std::uint32_t carved : 1; // from the table's arena, not operator new
  mutable std::atomic<property_block*> properties{nullptr};
};
static_assert(sizeof(atom_entry) == 24);
struct functor_entry;

} // namespace detail

/// A handle to an atom of an atom_table: the address of its entry, which
/// never moves. Trivially copyable, one machine word; the free_low_bits low
/// bits are always zero, so an interpreter can tag it. The null atom (default
/// constructed, or from_bits(0)) names nothing.
class atom {
public:
  static constexpr unsigned free_low_bits = 3;

  constexpr atom() noexcept = default;
  std::uintptr_t bits() const noexcept { return reinterpret_cast<std::uintptr_t>(entry_); }
  /// Precondition: b is 0 or came from bits() of an atom that is still valid.
  static atom from_bits(std::uintptr_t b) noexcept {
    return atom(reinterpret_cast<const detail::atom_entry*>(b));
  }
  explicit operator bool() const noexcept { return entry_ != nullptr; }
  friend bool operator==(atom, atom) noexcept = default;

private:
  friend class atom_table;
  friend struct detail::functor_entry;
  explicit atom(const detail::atom_entry* e) noexcept : entry_(e) {}
  const detail::atom_entry* entry_ = nullptr;
};
static_assert(std::is_trivially_copyable_v<atom> && sizeof(atom) == sizeof(void*));
static_assert(alignof(detail::atom_entry) >= (1u << atom::free_low_bits));

namespace detail {
struct functor_entry {
  atom name;
  std::uint32_t arity;
};
} // namespace detail

/// A handle to a functor name/arity: the address of its entry, which lives as
/// long as its name atom. Trivially copyable; 3 free low bits like atom.
class functor {
public:
  static constexpr unsigned free_low_bits = 3;

  constexpr functor() noexcept = default;
  atom name() const noexcept { return entry_->name; }
  std::uint32_t arity() const noexcept { return entry_->arity; }
  std::uintptr_t bits() const noexcept { return reinterpret_cast<std::uintptr_t>(entry_); }
  static functor from_bits(std::uintptr_t b) noexcept {
    return functor(reinterpret_cast<const detail::functor_entry*>(b));
  }
  explicit operator bool() const noexcept { return entry_ != nullptr; }
  friend bool operator==(functor, functor) noexcept = default;

private:
  friend class atom_table;
  explicit functor(const detail::functor_entry* e) noexcept : entry_(e) {}
  const detail::functor_entry* entry_ = nullptr;
};
static_assert(alignof(detail::functor_entry) >= (1u << functor::free_low_bits));

/// Property kinds. Any non-zero kind but `functor` is the caller's to use;
/// the named ones are conventions for interpreters, not special.
using property_kind = std::uint32_t;
namespace property {
inline constexpr property_kind op = 1;        ///< an operator definition
inline constexpr property_kind predicate = 2; ///< a predicate (e.g. of arity 0)
inline constexpr property_kind functor = 3;   ///< reserved: the functor table (functor_of)
inline constexpr property_kind first_user = 16;
} // namespace property

/// Thrown by intern_utf8 for text that is not well-formed UTF-8.
class invalid_utf8 : public std::invalid_argument {
public:
  invalid_utf8(std::size_t offset)
      : std::invalid_argument("atom_table: invalid UTF-8 at byte " + std::to_string(offset)),
        offset_(offset) {}
  /// The offset of the first byte that does not start a well-formed sequence.
  std::size_t offset() const noexcept { return offset_; }

private:
  std::size_t offset_;
};

/// Any number of threads may call any member concurrently, except the
/// destructor. Errors are exceptions: std::length_error (text longer than
/// max_length), lfcore::invalid_utf8, std::invalid_argument (a null atom, a
/// reserved property kind), std::logic_error (release without a reference),
/// std::overflow_error (more than max_references references to one atom),
/// std::bad_alloc; the table is unchanged when one is thrown.
class atom_table {
public:
  static constexpr std::size_t max_length = (std::size_t(1) << 30) - 1; ///< bytes
  /// References one atom can hold at once: its count shares a 32-bit word with
  /// the permanent and dead bits. Stress builds lower it so that tests reach
  /// it. One more (retain, try_retain, or intern_ref / find of that atom)
  /// throws std::overflow_error and takes nothing.
  static constexpr std::uint32_t max_references = stress_build ? 64 : (1u << 30) - 1;

  /// expected_atoms sizes the trie's root as hash_trie_config::for_expected_size
  /// does: at least one bucket per atom, up to 2^24 (128 MiB; 0: 2^16). At 6.8
  /// million atoms of the paper's benchmark, 2^23 buckets against 2^22 was 8%
  /// faster on one thread and 12% on two, for 3 more bytes per atom
  /// (bench/results/README.md). The root never grows: a table that goes far
  /// past its root slows as it grows (with 0, the paper's benchmark ran at
  /// 0.39x-0.49x the sized table's rate, bench/results/atoms_unsized/, in 39.8
  /// bytes per atom beyond the text against 38.5), so pass an estimate
  /// whenever more than about 250,000 atoms may come. A sized table also
  /// links a new atom at its chain's head without walking the chain
  /// (hash_trie_config::head_inserts).
  explicit atom_table(std::size_t expected_atoms = 0);
  /// Frees every atom. No concurrent calls; every handle becomes invalid.
  ~atom_table();
  atom_table(const atom_table&) = delete;
  atom_table& operator=(const atom_table&) = delete;

  // --------------------------------------------------------------- interning
  /// The atom with this text, created if absent; it is (made) permanent.
  atom intern(std::string_view text) { return get(text, false); }
  /// intern() after checking that text is well-formed UTF-8 (else throws
  /// invalid_utf8 and interns nothing).
  atom intern_utf8(std::string_view text) {
    check_utf8(text);
    return intern(text);
  }
  /// The atom with this text, created if absent, with one reference for the
  /// caller (none if it is permanent): give it back with release().
  atom intern_ref(std::string_view text) { return get(text, true); }
  /// The atom with this text if present, never inserting; with one reference
  /// for the caller as intern_ref().
  std::optional<atom> find(std::string_view text) const;
  /// Hints that change nothing: start loading what interning or finding
  /// these texts reads first (hash_trie_map::prefetch). A reader that
  /// prefetches all the atoms of a clause, then interns them, overlaps
  /// their cache misses: the paper's workload, each sequence's pieces
  /// prefetched together, ran 2.6x as fast on one thread. The one-text form
  /// starts the bucket only; call it a few interns ahead.
  void prefetch(std::string_view text) const;
  void prefetch(std::span<const std::string_view> texts) const;

  /// The atom's text, valid while the atom is. O(1), wait-free.
  static std::string_view name(atom a) noexcept { return a.entry_->text(); }
  /// The same text, NUL-terminated (it may contain NULs itself).
  static const char* c_str(atom a) noexcept { return a.entry_->c_str(); }

  // ---------------------------------------------------------- references
  /// Adds a reference. Precondition: the caller holds one, or the atom is permanent.
  void retain(atom a);
  /// Adds a reference unless the atom was collected meanwhile (then false):
  /// for atoms seen by for_each, which the caller does not hold.
  bool try_retain(atom a);
  /// Gives back a reference (no-op on a permanent atom). Throws logic_error
  /// if the atom has no reference left.
  void release(atom a);
  /// Pins the atom for the table's life. Precondition as for retain().
  void make_permanent(atom a);
  static bool is_permanent(atom a) noexcept;
  /// Reclaims every atom that is neither permanent nor referenced, while
  /// other threads go on; returns how many. Not atomic: an atom released
  /// during the call may or may not be collected by it.
  std::size_t collect();

  // ----------------------------------------------------------- properties
  /// Adds (kind, value) to the atom unless it has that kind; true if added.
  /// Values are opaque words: the table never frees what they point to.
  bool add_property(atom a, property_kind kind, std::uintptr_t value);
  /// Sets the value of kind, adding it if absent.
  void set_property(atom a, property_kind kind, std::uintptr_t value);
  std::optional<std::uintptr_t> find_property(atom a, property_kind kind) const;
  /// Removes kind from the atom; true if this call removed it.
  bool remove_property(atom a, property_kind kind);

  /// The functor name/arity, created if absent; it lives as long as the atom.
  functor functor_of(atom name, std::uint32_t arity);
  std::optional<functor> find_functor(atom name, std::uint32_t arity) const;

  // ------------------------------------------------------------ iteration
  /// Calls f(atom) for the atoms in the table, in hash order (the paper's
  /// lfht_next_key): an atom present for the whole call is visited once, no
  /// atom twice, a collected atom never after its collection. The atom is
  /// readable during f; to keep a non-permanent one, try_retain() it. f may
  /// return bool: false stops the iteration. An exception from f propagates
  /// and leaves the table unchanged.
  template <class F>
  void for_each(F&& f) const {
    visit_all(
        [](void* ctx, atom a) -> bool {
          F& fn = *static_cast<std::remove_reference_t<F>*>(ctx);
          if constexpr (std::is_same_v<std::invoke_result_t<F&, atom>, bool>)
            return fn(a);
          else
            return fn(a), true;
        },
        const_cast<void*>(static_cast<const void*>(std::addressof(f))));
  }

  /// Atoms in the table (not yet collected): exact when quiescent,
  /// otherwise within the number of concurrent inserts and collections.
  std::size_t size() const noexcept;

private:
  struct impl;
  atom get(std::string_view text, bool counted);
  void visit_all(bool (*f)(void*, atom), void* ctx) const;
  static void check_utf8(std::string_view text) {
    if (const std::size_t at = detail::utf8_error_offset(text); at != std::string_view::npos)
      throw invalid_utf8(at);
  }
  std::unique_ptr<impl> impl_;
};

} // namespace lfcore

template <>
struct std::hash<lfcore::atom> {
  std::size_t operator()(lfcore::atom a) const noexcept {
    return std::hash<std::uintptr_t>()(a.bits());
  }
};
template <>
struct std::hash<lfcore::functor> {
  std::size_t operator()(lfcore::functor f) const noexcept {
    return std::hash<std::uintptr_t>()(f.bits());
  }
};
