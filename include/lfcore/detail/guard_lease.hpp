// lfcore/detail/guard_lease.hpp - the guards of one container operation,
// inside its read-side section.
//
// Taking hazard pointers costs more than a short operation (four per trie
// lookup, bench/results/micro/trie_domain.txt; one per queue push,
// bench/results/queue_kept_guard/ab.md), so a lease lends the set of Guards
// the calling thread keeps in the domain
// (hazard_pointer_domain::thread_cached), and takes a fresh set only when
// the kept one is in use - a callback, hash, equality, move constructor or
// destructor run by the operation that calls into a container using the
// same Guards type - or when the thread keeps too many types in that domain.
// A call from a thread_local destructor that runs after the thread's exit
// hook gave its sets back (an interpreter's per-thread state releasing its
// atoms as the thread ends) runs under a new thread id, and that id's own
// hook gives back what it keeps. Protections are cleared when the lease
// ends, so nothing retired stays pinned.
//
// Guards that hold no state (RCU's) need neither keeping nor clearing: the
// lease is then the section and a Guards of its own (the specialization
// below: no thread-local lookup, flag or pointer).
//
// Guards: constructible from domain_type&; reset() noexcept clears every
// protection.
#pragma once

#include <optional>
#include <type_traits>

namespace lfcore::detail {

template <class Reclamation, class Guards,
          bool Stateless = std::is_empty_v<typename Reclamation::guard>>
class guard_lease {
public:
  using domain_type = typename Reclamation::domain_type;

  /// May throw std::bad_alloc (the thread's first guards of the domain).
  /// Always inlined, as the destructor: GCC 12 kept that out of line, and
  /// the call it cost every lookup made hits 5% slower
  /// (bench/results/lease_inline/).
  [[gnu::always_inline]] explicit guard_lease(domain_type& domain)
      : section_(Reclamation::read_section()) {
    guards_ = kept_busy ? nullptr : domain.template thread_cached<Guards>();
    if (guards_ != nullptr)
      kept_busy = true;
    else
      take_fresh(domain);
  }
  [[gnu::always_inline]] ~guard_lease() {
    if (!own_) { // own guards clear their protections as their records go back
      guards_->reset();
      kept_busy = false;
    }
  }
  guard_lease(const guard_lease&) = delete;
  guard_lease& operator=(const guard_lease&) = delete;

  Guards* operator->() noexcept { return guards_; }
  Guards& operator*() noexcept { return *guards_; }

private:
  // Out of line: rare, and GCC 12 inlined saw a use of own_ uninitialised.
  [[gnu::noinline]] void take_fresh(domain_type& domain) { guards_ = &own_.emplace(domain); }

  // Whether a lease of this thread holds kept Guards (of any domain).
  // Trivially destructible: readable until the thread's very end.
  static constinit inline thread_local bool kept_busy = false;

  [[no_unique_address]] typename Reclamation::section section_;
  Guards* guards_;
  std::optional<Guards> own_;
};

// Stateless guards: nothing to keep, so no pointer to them either (the
// pointer into the lease itself kept GCC 12 from holding the lease in
// registers: an RCU lookup stored three words to the stack, the section's
// flag among them).
template <class Reclamation, class Guards>
class guard_lease<Reclamation, Guards, true> {
public:
  using domain_type = typename Reclamation::domain_type;

  [[gnu::always_inline]] explicit guard_lease(domain_type& domain)
      : section_(Reclamation::read_section()), guards_(domain) {}
  guard_lease(const guard_lease&) = delete;
  guard_lease& operator=(const guard_lease&) = delete;

  Guards* operator->() noexcept { return &guards_; }
  Guards& operator*() noexcept { return guards_; }

private:
  typename Reclamation::section section_;
  Guards guards_;
};

} // namespace lfcore::detail
