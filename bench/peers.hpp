// bench/peers.hpp - the peer libraries the benchmarks compare against, and the
// set-up each one needs. A peer missing at configure time compiles to nothing.
#pragma once

#if defined(LFCORE_HAVE_LIBCDS)
#include <cds/container/msqueue.h>
#include <cds/gc/hp.h>
#include <cds/init.h>
#include <cds/threading/model.h>
#endif
#if defined(LFCORE_HAVE_XENIUM)
#include <xenium/michael_scott_queue.hpp>
#include <xenium/policy.hpp>
#include <xenium/ramalhete_queue.hpp>
#include <xenium/reclamation/hazard_pointer.hpp>
#endif

#if defined(LFCORE_HAVE_BOOST_LOCKFREE)
#include <boost/lockfree/queue.hpp>
#include <boost/lockfree/spsc_queue.hpp>
#endif
#if defined(LFCORE_HAVE_MOODYCAMEL)
#include <concurrentqueue/concurrentqueue.h>
#include <readerwriterqueue/readerwriterqueue.h>
#endif
#if defined(LFCORE_HAVE_URCU)
#define _LGPL_SOURCE // liburcu's fast paths inline, as its performance-minded users build it
#include <urcu/wfcqueue.h>
#endif
#if defined(LFCORE_HAVE_TBB)
#include <oneapi/tbb/concurrent_queue.h>
#endif

#include <optional>

namespace peers {

#if defined(LFCORE_HAVE_LIBCDS)
/// libcds wants cds::Initialize(), one HP garbage collector object for the
/// process, and every thread attached before it uses a container.
class libcds_runtime {
public:
  libcds_runtime() {
    cds::Initialize();
    gc_.emplace();
    cds::threading::Manager::attachThread();
  }
  ~libcds_runtime() {
    cds::threading::Manager::detachThread();
    gc_.reset();
    cds::Terminate();
  }

private:
  std::optional<cds::gc::HP> gc_;
};

/// Attaches the calling thread for this scope unless it already is.
class libcds_thread {
public:
  libcds_thread() : attached_here_(!cds::threading::Manager::isThreadAttached()) {
    if (attached_here_) cds::threading::Manager::attachThread();
  }
  ~libcds_thread() {
    if (attached_here_) cds::threading::Manager::detachThread();
  }
  libcds_thread(const libcds_thread&) = delete;
  libcds_thread& operator=(const libcds_thread&) = delete;

private:
  bool attached_here_;
};
#else
struct libcds_runtime {};
struct libcds_thread {};
#endif

} // namespace peers
