// lfcore/thread_registry.hpp - small dense thread ids, recycled at thread exit.
//
// Per-thread state in lfcore (hazard-pointer caches and retire lists, queue
// tokens, worker slots) lives in arrays indexed by a dense id rather than in
// thread_local objects, so that a structure can visit every thread's state and
// take over the state of threads that have gone. The registry hands out the
// lowest free id in [0, capacity) the first time a thread asks, and takes it
// back when the thread exits; users never attach or detach.
//
// Exit listeners (e.g. each hazard_pointer_domain) are told, on the exiting
// thread and before its id is handed out again, that the id is being released,
// so they can hand that thread's leftovers to a shared place.
//
// Progress: current_id() is wait-free after a thread's first call (one
// thread_local load). The first call is lock-free (a CAS on a bitmap word).
// Thread exit and add/remove_exit_listener take a mutex: they are cold paths,
// and the mutex is what lets a listener be removed while threads exit.
// fork() takes it first (detail/fork_guard.hpp), and listeners must take
// no other lock of lfcore's (fork_guard's lock order). In a child, the
// threads that were running at the fork keep their ids.
//
// Limits: at most `capacity` threads alive at once (std::length_error beyond).
// A thread that asks for its id again while its thread_local destructors run,
// after the registry's own has run, gets a fresh id, whose exit hook (the
// listeners, then the release) runs after that destructor: lfcore may be used
// from any thread_local destructor.
#pragma once

#include <cstdint>

namespace lfcore {

class thread_registry {
public:
  using id_type = std::uint32_t;
  static constexpr id_type capacity = 1u << 16;

  /// The calling thread's id, registering it on first use.
  static id_type current_id() {
    id_type id = tls_id;
    return id != unassigned ? id : acquire_slow();
  }

  /// How many times the calling thread has handed its id back: its exit
  /// hook ran, and the listeners dropped what they kept for that id. A
  /// thread_local destructor that runs afterwards gets a new id. Wait-free
  /// (one thread_local load): per-thread caches in front of the listeners'
  /// tables compare it to know that what they point to still exists.
  static std::uint32_t exits() noexcept { return tls_exits; }

  /// One more than the largest id ever handed out: every id in use is below it.
  static id_type high_water() noexcept;

  /// Threads holding an id right now.
  static id_type live_threads() noexcept;

  class exit_listener {
  public:
    /// Runs on the exiting thread, before `id` can be handed out again. It runs
    /// under the registry's mutex: it must not add or remove listeners.
    virtual void on_thread_exit(id_type id) noexcept = 0;

  protected:
    ~exit_listener() = default;
  };

  /// Blocking (mutex). After remove_exit_listener returns, the listener is not
  /// running and will not be called again.
  static void add_exit_listener(exit_listener* l);
  static void remove_exit_listener(exit_listener* l);

private:
  static constexpr id_type unassigned = ~id_type{0};
  static id_type acquire_slow();
  // Trivial type with constant initialisation: accessed without a TLS wrapper.
  static inline thread_local id_type tls_id = unassigned;
  static inline thread_local std::uint32_t tls_exits = 0;
  friend struct thread_exit_guard;
};

} // namespace lfcore
