// lfcore/topology.hpp - the machine's processors and caches, and pinning
// threads to them.
//
// Discovered once, with hwloc when lfcore was built with it (Debian:
// libhwloc-dev), else from the OS (every CPU the process may run on, one core
// each, no cache sizes). Pinning policies for a pool's workers:
//   none      the OS places threads
//   compact   worker i on the i-th hardware thread in hwloc's order: hardware
//             threads of a core, then cores of a cache, then packages - workers
//             that share data share caches
//   scatter   round-robin over cores first, then their second hardware threads:
//             each worker gets as much cache and memory bandwidth as possible
//   list      worker i on cpus[i % cpus.size()] (OS numbering)
// With more workers than hardware threads the assignment wraps around
// (oversubscription is allowed: two workers then share a CPU).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace lfcore {

struct topology_info {
  unsigned packages = 1;
  unsigned numa_nodes = 1;
  unsigned cores = 1;
  unsigned hardware_threads = 1;
  std::size_t l2_bytes = 0; ///< the first core's L2 (0: unknown)
  std::size_t l3_bytes = 0; ///< the first core's L3 (0: unknown)
  /// OS CPU numbers in compact and in scatter order (hardware_threads each).
  std::vector<unsigned> compact_order, scatter_order;
  bool from_hwloc = false;
  /// One line, e.g. "1 package, 1 NUMA node, 2 cores, 2 hardware threads,
  /// L2 4 MiB, L3 105 MiB (hwloc)".
  std::string describe() const;
};

/// The machine as discovered at the first call (thread-safe, cached).
const topology_info& topology();

enum class pinning { none, compact, scatter, list };

struct pin_policy {
  pinning kind = pinning::none;
  std::vector<unsigned> cpus; ///< for pinning::list (OS numbering); must not be empty then
};

/// The CPU worker i runs on under policy, or nullopt for pinning::none.
/// Throws std::invalid_argument for pinning::list with no CPUs.
std::optional<unsigned> cpu_for_worker(const pin_policy& policy, unsigned worker);

/// Binds the calling thread to one CPU (OS numbering). False if the OS
/// refused (e.g. the CPU is not in the process's allowed set); the thread
/// then keeps its previous binding.
bool pin_current_thread(unsigned cpu) noexcept;

} // namespace lfcore
