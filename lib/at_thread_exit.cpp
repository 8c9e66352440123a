// lib/at_thread_exit.cpp - see detail/at_thread_exit.hpp.
#include "lfcore/detail/at_thread_exit.hpp"

#include <cxxabi.h>
#include <new>

// This library's handle (as its own thread_locals use): the call keeps the
// library loaded until it has run.
extern "C" void* __dso_handle;

namespace lfcore::detail {

void at_thread_exit(void (*f)(void*), void* arg) {
  if (__cxxabiv1::__cxa_thread_atexit(f, arg, &__dso_handle) != 0) throw std::bad_alloc();
}

} // namespace lfcore::detail
