// Counts the bytes a test program holds from operator new, so that tests can
// show memory going back to the allocator (e.g. after a queue drains).
// Linking heap_counter.cpp replaces the global operator new and delete.
#pragma once

#include <cstddef>

namespace test {

/// Bytes allocated with operator new and not yet deleted, by the whole process.
long long live_heap_bytes() noexcept;

} // namespace test
