// lib/topology.cpp - discovery (hwloc when available) and pinning (design:
// topology.hpp).
#include "lfcore/topology.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <thread>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif
#if defined(LFCORE_HAVE_HWLOC)
#include <hwloc.h>
#endif

namespace lfcore {
namespace {

#if defined(LFCORE_HAVE_HWLOC)
unsigned count(hwloc_topology_t t, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(t, type);
  return n > 0 ? static_cast<unsigned>(n) : 1u;
}

bool discover_hwloc(topology_info& info) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0) return false;
  if (hwloc_topology_load(t) != 0) {
    hwloc_topology_destroy(t);
    return false;
  }
  info.packages = count(t, HWLOC_OBJ_PACKAGE);
  info.numa_nodes = count(t, HWLOC_OBJ_NUMANODE);
  info.cores = count(t, HWLOC_OBJ_CORE);
  info.hardware_threads = count(t, HWLOC_OBJ_PU);
  // hwloc's logical order walks the tree depth first: compact.
  for (unsigned i = 0; i < info.hardware_threads; ++i)
    if (hwloc_obj_t pu = hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, i))
      info.compact_order.push_back(pu->os_index);
  // Scatter: the first hardware thread of every core, then the second, ...
  for (unsigned round = 0; info.scatter_order.size() < info.compact_order.size(); ++round) {
    const std::size_t before = info.scatter_order.size();
    for (unsigned c = 0; c < info.cores; ++c) {
      hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, c);
      if (core == nullptr) continue;
      if (hwloc_obj_t pu =
              hwloc_get_obj_inside_cpuset_by_type(t, core->cpuset, HWLOC_OBJ_PU, round))
        info.scatter_order.push_back(pu->os_index);
    }
    if (info.scatter_order.size() == before) break; // no core has that many threads
  }
  if (info.scatter_order.size() != info.compact_order.size())
    info.scatter_order = info.compact_order;
  if (hwloc_obj_t pu = hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, 0))
    for (hwloc_obj_t o = pu->parent; o != nullptr; o = o->parent) {
      if (o->type == HWLOC_OBJ_L2CACHE && info.l2_bytes == 0) info.l2_bytes = o->attr->cache.size;
      if (o->type == HWLOC_OBJ_L3CACHE && info.l3_bytes == 0) info.l3_bytes = o->attr->cache.size;
    }
  hwloc_topology_destroy(t);
  info.from_hwloc = !info.compact_order.empty();
  return info.from_hwloc;
}
#endif

// Without hwloc: the CPUs this process may use, each its own core.
void discover_os(topology_info& info) {
  info.compact_order.clear();
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (unsigned c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) info.compact_order.push_back(c);
#endif
  if (info.compact_order.empty())
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c)
      info.compact_order.push_back(c);
  info.scatter_order = info.compact_order;
  info.cores = info.hardware_threads = static_cast<unsigned>(info.compact_order.size());
}

topology_info discover() {
  topology_info info;
#if defined(LFCORE_HAVE_HWLOC)
  if (discover_hwloc(info)) return info;
  info = topology_info();
#endif
  discover_os(info);
  return info;
}

std::string bytes(std::size_t b) {
  std::ostringstream o;
  if (b % (1u << 20) == 0)
    o << (b >> 20) << " MiB";
  else
    o << (b >> 10) << " KiB";
  return o.str();
}

} // namespace

std::string topology_info::describe() const {
  std::ostringstream o;
  o << packages << (packages == 1 ? " package, " : " packages, ") << numa_nodes
    << (numa_nodes == 1 ? " NUMA node, " : " NUMA nodes, ") << cores
    << (cores == 1 ? " core, " : " cores, ") << hardware_threads << " hardware threads";
  if (l2_bytes != 0) o << ", L2 " << bytes(l2_bytes);
  if (l3_bytes != 0) o << ", L3 " << bytes(l3_bytes);
  o << (from_hwloc ? " (hwloc)" : " (OS: no hwloc)");
  return o.str();
}

const topology_info& topology() {
  static const topology_info info = discover(); // thread-safe initialization
  return info;
}

std::optional<unsigned> cpu_for_worker(const pin_policy& policy, unsigned worker) {
  switch (policy.kind) {
  case pinning::none:
    return std::nullopt;
  case pinning::compact: {
    const auto& order = topology().compact_order;
    return order[worker % order.size()];
  }
  case pinning::scatter: {
    const auto& order = topology().scatter_order;
    return order[worker % order.size()];
  }
  case pinning::list:
    if (policy.cpus.empty()) throw std::invalid_argument("pin_policy: pinning::list needs CPUs");
    return policy.cpus[worker % policy.cpus.size()];
  }
  return std::nullopt;
}

bool pin_current_thread(unsigned cpu) noexcept {
#if defined(__linux__)
  if (cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
#else
  (void)cpu;
  return false;
#endif
}

} // namespace lfcore
