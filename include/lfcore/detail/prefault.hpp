// lfcore/detail/prefault.hpp - map a fresh block's pages in one call before
// they are filled.
//
// A large block that is about to be written through (an arena chunk, a pool
// chunk, a hash trie's root) otherwise takes one page fault per 4 KiB page
// as it fills. Under virtualisation a fault is expensive - 12 us a page on
// the project's KVM guest, where madvise(MADV_POPULATE_WRITE) over the same
// range costs 7 us a page (bench/results/README.md, atom table) - and on bare
// metal it still saves an exception entry and exit per page.
//
// prefault() is only a hint: blocks below prefault_min_bytes are left alone
// (a system call would cost more than their few faults), pages already
// mapped cost a page-table walk, and any error (a kernel before 5.14, a
// system without the call) leaves the block as it was, to be faulted in as
// it is written. The cost: a chunk's unused tail is resident from the start
// (per thread, at most one atom-table arena chunk of 1 MiB and one 64 KiB
// pool_allocator chunk per block size).
#pragma once

#include <cstddef>

namespace lfcore::detail {

inline constexpr std::size_t prefault_min_bytes = 32 * 1024; // 8 pages of 4 KiB

/// Maps the pages that lie wholly inside [block, block + bytes) for writing,
/// when bytes >= prefault_min_bytes and the system offers it (lib/prefault.cpp).
void prefault(void* block, std::size_t bytes) noexcept;

} // namespace lfcore::detail
