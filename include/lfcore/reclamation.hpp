// lfcore/reclamation.hpp - how a container keeps unlinked nodes alive for the
// threads still reading them: the Reclamation policy of hash_trie_map and
// unbounded_mpmc_queue.
//
// A policy R provides
//   R::domain_type      where nodes go once unlinked: d.retire(p, deleter) runs
//                       deleter(p) once no reader can still hold p, and
//                       d.reclaim() frees now what it can (the caller must not
//                       be inside a section nor hold a guard). retire may
//                       allocate (std::bad_alloc); d.reserve_retire() does that
//                       allocation ahead, so that a node unlinked after it is
//                       retired without a failure in between.
//   R::default_domain() the domain a container uses unless given another.
//   R::section          RAII read-side section, movable. R::read_section()
//                       enters one; a default-constructed section is outside.
//                       A container holds one around every traversal, and an
//                       iterator holds one for its life.
//   R::guard            protects one pointer inside a section, with
//                       hazard_pointer's interface: protect(src[, to_pointer]),
//                       protect(src, guess, to_pointer),
//                       try_protect_if(p, still_reachable), reset_protection([p]),
//                       swap. R::make_guard(domain) makes one. A guard that
//                       holds state (a hazard pointer) is costly to make, so
//                       the domain also keeps objects per thread:
//                       d.thread_cached<T>() (see hazard_pointer_domain),
//                       which detail::guard_lease lends to one operation.
//   R::bounded_garbage  whether a reader stalled inside a section bounds the
//                       number of retired, unreclaimed nodes.
//
// Two families implement it:
// * hazard_pointer_reclamation (here; the default). The guard is a hazard
//   pointer: every node a reader steps on costs a store, a (light) fence and
//   a re-validation; the section is empty. A stalled reader keeps only the
//   nodes its hazard pointers hold: garbage stays below
//   hazard_pointer_domain::garbage_bound().
// * lfcore::urcu::memb / lfcore::urcu::qsbr (integrations/urcu, liburcu). The
//   section is an RCU read-side critical section and the guard does nothing:
//   every node reachable at some point of a section stays allocated until the
//   section ends, so readers write nothing per node. Retired nodes wait for a
//   grace period: a reader stalled inside a section (or an iterator kept)
//   holds back everything retired after it began - garbage without bound.
#pragma once

#include "lfcore/hazard_pointer.hpp"

namespace lfcore {

/// The default Reclamation policy: lfcore's hazard pointers.
struct hazard_pointer_reclamation {
  using domain_type = hazard_pointer_domain;
  using guard = hazard_pointer;
  struct section {}; // hazard pointers need no read-side section

  static domain_type& default_domain() noexcept { return hazard_pointer_default_domain(); }
  /// Lock-free; may allocate a hazard record (std::bad_alloc).
  static guard make_guard(domain_type& domain) { return make_hazard_pointer(domain); }
  static section read_section() noexcept { return {}; }
  static constexpr bool bounded_garbage = true;
};

} // namespace lfcore
