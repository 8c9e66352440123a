// lfcore/detail/at_thread_exit.hpp - run a function when the calling thread
// ends, even when asked while the thread's thread_local destructors run.
//
// A thread_local object is constructed at most once per thread. Per-thread
// state that a later thread_local destructor brings back to life (lfcore
// used from an interpreter's per-thread state as its thread ends) cannot
// count on one to be flushed a second time. at_thread_exit puts f(arg) on
// the list that thread_local destructors themselves go on (the C++ ABI's
// __cxa_thread_atexit); the C library runs that list until it is empty, so a
// call added while it runs still runs, after the destructor that added it.
#pragma once

namespace lfcore::detail {

/// Calls f(arg) on this thread when it ends. Throws std::bad_alloc if the C
/// library cannot record the call.
void at_thread_exit(void (*f)(void*), void* arg);

} // namespace lfcore::detail
