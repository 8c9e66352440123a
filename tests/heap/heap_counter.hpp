// Counts the bytes a test program holds from operator new, so that tests can
// show memory going back to the allocator (e.g. after a queue drains), and
// makes a chosen allocation fail, so that tests can show what running out of
// memory does (the out-of-memory tests, and the fuzz targets of the C APIs
// through tests/fuzz/failing_new.hpp). Linking heap_counter.cpp replaces the
// global operator new and delete.
#pragma once

#include <cstddef>

namespace test {

/// Bytes allocated with operator new and not yet deleted, by the whole process.
long long live_heap_bytes() noexcept;

/// Makes the n-th operator new from now on the calling thread fail: throw
/// std::bad_alloc (the nothrow forms return null); other threads allocate as
/// usual. n = 0 disarms.
void fail_allocation_in(int n) noexcept;
/// Whether the failure armed last on this thread (n > 0) has fired.
bool allocation_failed() noexcept;

} // namespace test
