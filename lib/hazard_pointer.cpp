// Hazard-pointer domain: the cold paths (record allocation, batch hand-over,
// scan, thread exit, destruction). The design and the memory-order labels are
// in include/lfcore/hazard_pointer.hpp.
#include "lfcore/hazard_pointer.hpp"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <vector>

namespace lfcore {
namespace {

// Set while this thread runs a scan's deleters: a deleter that retires more
// objects must not start a nested scan (it would reuse the hazard buffer).
thread_local bool tls_in_scan = false;

// Reused between scans so that a scan does not allocate in the steady state.
thread_local std::vector<const void*> tls_hazards;

struct scan_guard {
  scan_guard() { tls_in_scan = true; }
  ~scan_guard() { tls_in_scan = false; }
  scan_guard(const scan_guard&) = delete;
  scan_guard& operator=(const scan_guard&) = delete;
};

// Reclaims every object of a list, ignoring hazards (destruction only).
std::size_t reclaim_all(detail::retired_node* list) noexcept {
  std::size_t n = 0;
  while (list != nullptr) {
    detail::retired_node* next = list->next_retired;
    list->reclaim(list);
    list = next;
    ++n;
  }
  return n;
}

} // namespace

hazard_pointer_domain::hazard_pointer_domain(config_type config) : config_(config) {
  if (config_.batch == 0) throw std::invalid_argument("hazard_pointer_domain: batch must be >= 1");
  if (config_.scan_multiplier < 2)
    throw std::invalid_argument("hazard_pointer_domain: scan_multiplier must be >= 2 "
                                "(a scan must free at least half of what it takes)");
  detail::asymmetric_fence::init();
  thread_registry::add_exit_listener(this);
}

hazard_pointer_domain::~hazard_pointer_domain() {
  thread_registry::remove_exit_listener(this); // after this, no exit hook runs on us
  // Deleters may retire further objects into this domain: loop until dry.
  for (;;) {
    std::size_t freed = reclaim_all(shared_head_->exchange(nullptr, std::memory_order_acquire));
    for (auto& slot : chunks_) {
      thread_state* chunk = slot.load(std::memory_order_acquire);
      if (chunk == nullptr) continue;
      for (std::size_t i = 0; i < states_per_chunk; ++i) {
        thread_state& ts = chunk[i];
        detail::retired_node* batch = std::exchange(ts.batch_head, nullptr);
        ts.batch_tail = nullptr;
        ts.batch_size = 0;
        freed += reclaim_all(batch);
      }
    }
    if (freed == 0) break;
  }
  for (auto& slot : chunks_) delete[] slot.load(std::memory_order_relaxed);
  detail::hazard_record* r = records_head_->load(std::memory_order_acquire);
  while (r != nullptr) {
    assert(!r->in_use.load(std::memory_order_relaxed) || r->protected_ptr.load() == nullptr);
    delete std::exchange(r, r->next);
  }
}

hazard_pointer_domain::thread_state* hazard_pointer_domain::allocate_chunk(std::size_t index) {
  auto* fresh = new thread_state[states_per_chunk];
  thread_state* expected = nullptr;
  // release: publishes the constructed states; pairs with the acquire in local().
  if (chunks_[index].compare_exchange_strong(expected, fresh, std::memory_order_release,
                                             std::memory_order_acquire))
    return fresh;
  delete[] fresh; // another thread of the same chunk won the race
  return expected;
}

detail::hazard_record* hazard_pointer_domain::acquire_record() {
  thread_state& ts = local();
  if (ts.cached_records > 0) return ts.record_cache[--ts.cached_records];

  // acquire: pairs with the release push below, so `next` and `domain` of every
  // record we walk are visible.
  for (detail::hazard_record* r = records_head_->load(std::memory_order_acquire); r != nullptr;
       r = r->next) {
    // relaxed test, then acquire exchange: pairs with the release store in
    // release_record, so the previous owner's last reset is ordered before us.
    if (!r->in_use.load(std::memory_order_relaxed) &&
        !r->in_use.exchange(true, std::memory_order_acquire))
      return r;
  }

  auto* r = new detail::hazard_record;
  r->in_use.store(true, std::memory_order_relaxed); // relaxed: not yet published
  r->domain = this;
  detail::hazard_record* head = records_head_->load(std::memory_order_relaxed);
  do {
    r->next = head;
    // release: publishes next/domain to walkers (acquire_record, scan).
  } while (!records_head_->compare_exchange_weak(head, r, std::memory_order_release,
                                                 std::memory_order_relaxed));
  record_count_.fetch_add(1, std::memory_order_relaxed); // relaxed: feeds a heuristic
  return r;
}

void hazard_pointer_domain::release_record(detail::hazard_record* r) noexcept {
  // [hp.reset] release: the owner's last accesses to the protected object happen
  // before a scan that reads null here.
  r->protected_ptr.store(nullptr, std::memory_order_release);
  thread_state& ts = local();
  if (ts.cached_records < thread_state::record_cache_capacity) {
    ts.record_cache[ts.cached_records++] = r;
    return;
  }
  r->in_use.store(false, std::memory_order_release); // pairs with the exchange in acquire_record
}

std::size_t hazard_pointer_domain::scan_threshold() const noexcept {
  // relaxed: a heuristic; a stale count only moves the next scan a little.
  const std::size_t h = record_count_.load(std::memory_order_relaxed);
  return std::max(config_.scan_threshold, config_.scan_multiplier * h);
}

void hazard_pointer_domain::flush_batch(thread_state& ts, bool may_scan) noexcept {
  if (ts.batch_head == nullptr) return;
  detail::retired_node* head = std::exchange(ts.batch_head, nullptr);
  detail::retired_node* tail = std::exchange(ts.batch_tail, nullptr);
  const auto n = static_cast<std::int64_t>(std::exchange(ts.batch_size, 0));

  detail::retired_node* old = shared_head_->load(std::memory_order_relaxed);
  do {
    tail->next_retired = old;
    // [hp.publish] release: the unlinking of every object in the batch (done by
    // this thread before retire) happens before the scan that takes them.
  } while (!shared_head_->compare_exchange_weak(old, head, std::memory_order_release,
                                                std::memory_order_relaxed));
  // relaxed: the count only decides when to scan; the list itself is ordered by the CAS.
  const std::int64_t total = shared_count_->fetch_add(n, std::memory_order_relaxed) + n;
  if (may_scan && !tls_in_scan && total >= static_cast<std::int64_t>(scan_threshold())) scan();
}

std::size_t hazard_pointer_domain::scan() noexcept {
  // [hp.take] acquire: pairs with [hp.publish]; every unlink of a taken object
  // happens before the heavy fence below.
  detail::retired_node* list = shared_head_->exchange(nullptr, std::memory_order_acquire);
  if (list == nullptr) return 0;
  scan_guard guard;
  detail::stress_point();
  detail::asymmetric_fence::heavy(); // [hp.scan] pairs with [hp.protect]

  std::vector<const void*>& hazards = tls_hazards;
  hazards.clear();
  try {
    for (detail::hazard_record* r = records_head_->load(std::memory_order_acquire); r != nullptr;
         r = r->next) {
      // acquire: pairs with [hp.reset]; a reader that moved off an object has
      // finished reading it before we free it.
      if (const void* p = r->protected_ptr.load(std::memory_order_acquire)) hazards.push_back(p);
    }
  } catch (const std::bad_alloc&) {
    // No room to remember the hazards: keep everything, try again next time.
    hazards.clear();
    detail::retired_node* tail = list;
    while (tail->next_retired != nullptr) tail = tail->next_retired;
    detail::retired_node* old = shared_head_->load(std::memory_order_relaxed);
    do tail->next_retired = old;
    while (!shared_head_->compare_exchange_weak(old, list, std::memory_order_release,
                                                std::memory_order_relaxed));
    return 0;
  }
  std::sort(hazards.begin(), hazards.end(), std::less<>());

  detail::retired_node* kept_head = nullptr;
  detail::retired_node* kept_tail = nullptr;
  std::int64_t freed = 0;
  while (list != nullptr) {
    detail::retired_node* n = list;
    list = n->next_retired;
    if (std::binary_search(hazards.begin(), hazards.end(), n->protected_address, std::less<>())) {
      n->next_retired = kept_head;
      if (kept_head == nullptr) kept_tail = n;
      kept_head = n;
    } else {
      n->reclaim(n); // may retire more objects: they go to this thread's batch
      ++freed;
    }
  }

  if (kept_head != nullptr) {
    detail::retired_node* old = shared_head_->load(std::memory_order_relaxed);
    do kept_tail->next_retired = old;
    while (!shared_head_->compare_exchange_weak(old, kept_head, std::memory_order_release,
                                                std::memory_order_relaxed));
  }
  shared_count_->fetch_sub(freed, std::memory_order_relaxed); // relaxed: heuristic count
  // release: pairs with the acquire in stats(), so that retired >= reclaimed there.
  reclaimed_.fetch_add(static_cast<std::uint64_t>(freed), std::memory_order_release);
  scans_.fetch_add(1, std::memory_order_relaxed); // relaxed: statistic
  return static_cast<std::size_t>(freed);
}

std::size_t hazard_pointer_domain::reclaim() {
  flush_batch(local(), /*may_scan=*/false);
  return tls_in_scan ? 0 : scan();
}

void hazard_pointer_domain::on_thread_exit(thread_registry::id_type id) noexcept {
  thread_state* chunk = chunks_[id / states_per_chunk].load(std::memory_order_acquire);
  if (chunk == nullptr) return; // this thread never used the domain
  thread_state& ts = chunk[id % states_per_chunk];
  // No scan here: we run under the registry's mutex and a deleter might need it.
  flush_batch(ts, /*may_scan=*/false);
  while (ts.cached_records > 0) {
    detail::hazard_record* r = ts.record_cache[--ts.cached_records];
    r->in_use.store(false, std::memory_order_release); // pairs with acquire_record
  }
}

hazard_pointer_domain_stats hazard_pointer_domain::stats() const noexcept {
  hazard_pointer_domain_stats s;
  // acquire first: every retirement counted in a reclaimed object happens
  // before, so the retired sum read afterwards is at least as large.
  s.reclaimed = reclaimed_.load(std::memory_order_acquire);
  s.scans = scans_.load(std::memory_order_relaxed);
  for (const auto& slot : chunks_) {
    const thread_state* chunk = slot.load(std::memory_order_acquire);
    if (chunk == nullptr) continue;
    for (std::size_t i = 0; i < states_per_chunk; ++i)
      s.retired += chunk[i].retired_total.load(std::memory_order_relaxed);
  }
  s.hazard_records = record_count_.load(std::memory_order_relaxed);
  return s;
}

std::size_t hazard_pointer_domain::garbage_bound() const noexcept {
  const std::size_t threads = thread_registry::high_water();
  return scan_threshold() + 2 * threads * config_.batch;
}

hazard_pointer_domain& hazard_pointer_default_domain() noexcept {
  // Immortal: threads may retire and exit during static destruction.
  static hazard_pointer_domain* domain = new hazard_pointer_domain();
  return *domain;
}

} // namespace lfcore
