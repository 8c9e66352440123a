// Hazard-pointer domain: the cold paths (record allocation, blocks, scan,
// thread exit, destruction). The design and the memory-order labels are
// in include/lfcore/hazard_pointer.hpp.
#include "lfcore/hazard_pointer.hpp"

#include "lfcore/detail/at_thread_exit.hpp"

#include <algorithm>
#include <memory>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

namespace lfcore {
namespace {

// Set while this thread runs a scan's deleters: a deleter that retires more
// objects must not start a nested scan (it would reuse the hazard buffer).
thread_local bool tls_in_scan = false;

// Reused between scans so that a scan does not allocate in the steady state.
// A pointer, freed by an exit hook rather than by a thread_local destructor:
// a scan run by a later thread_local destructor makes itself a new one.
thread_local std::vector<const void*>* tls_hazards = nullptr;

void free_hazard_buffer(void*) {
  delete std::exchange(tls_hazards, nullptr);
}

// Throws std::bad_alloc.
std::vector<const void*>& hazard_buffer() {
  if (tls_hazards == nullptr) {
    auto buffer = std::make_unique<std::vector<const void*>>();
    detail::at_thread_exit(&free_hazard_buffer, nullptr);
    tls_hazards = buffer.release();
  }
  return *tls_hazards;
}

struct scan_guard {
  scan_guard() { tls_in_scan = true; }
  ~scan_guard() { tls_in_scan = false; }
  scan_guard(const scan_guard&) = delete;
  scan_guard& operator=(const scan_guard&) = delete;
};

void delete_blocks(detail::retired_block* b) noexcept {
  while (b != nullptr) delete std::exchange(b, b->next);
}

// Reclaims every entry of a list of blocks, ignoring hazards, and frees the
// blocks (destruction only). Returns how many entries it reclaimed.
std::size_t reclaim_all(detail::retired_block* b) noexcept {
  std::size_t n = 0;
  for (; b != nullptr; delete std::exchange(b, b->next))
    for (std::size_t i = 0; i < b->count; ++i, ++n)
      b->entries[i].reclaim(b->entries[i].address, b->entries[i].context);
  return n;
}

detail::retired_block* last_block(detail::retired_block* b) noexcept {
  while (b->next != nullptr) b = b->next;
  return b;
}

// relaxed: a serial only has to be unique; the domain that holds it is
// published to other threads by whatever publishes the domain.
constinit std::atomic<std::uint64_t> next_domain_serial{1};

} // namespace

hazard_pointer_domain::hazard_pointer_domain(config_type config)
    : config_(config), serial_(next_domain_serial.fetch_add(1, std::memory_order_relaxed)) {
  if (config_.scan_multiplier < 2)
    throw std::invalid_argument("hazard_pointer_domain: scan_multiplier must be >= 2 "
                                "(a scan must free at least half of what it takes)");
  detail::asymmetric_fence::init();
  thread_registry::add_exit_listener(this);
}

hazard_pointer_domain::~hazard_pointer_domain() {
  thread_registry::remove_exit_listener(this); // after this, no exit hook runs on us
  // A plain store: by the precondition, no other thread uses the domain now.
  tearing_down_ = true;
  // Kept objects first: their hazard pointers go back to records freed below.
  for (auto& slot : chunks_) {
    // acquire: as in local(), the chunk's states are initialised.
    thread_state* chunk = slot.load(std::memory_order_acquire);
    if (chunk == nullptr) continue;
    for (std::size_t i = 0; i < states_per_chunk; ++i) destroy_cached_objects(chunk[i]);
  }
  // Deleters may retire further objects into this domain: loop until dry.
  for (;;) {
    std::size_t freed = reclaim_all(orphans_->exchange(nullptr, std::memory_order_acquire));
    for (auto& slot : chunks_) {
      thread_state* chunk = slot.load(std::memory_order_acquire);
      if (chunk == nullptr) continue;
      for (std::size_t i = 0; i < states_per_chunk; ++i) {
        chunk[i].retired_count = 0;
        freed += reclaim_all(std::exchange(chunk[i].retired, nullptr));
      }
    }
    if (freed == 0) break;
  }
  for (auto& slot : chunks_) {
    thread_state* chunk = slot.load(std::memory_order_relaxed);
    if (chunk == nullptr) continue;
    for (std::size_t i = 0; i < states_per_chunk; ++i) delete_blocks(chunk[i].spare);
    delete[] chunk;
  }
  detail::hazard_record* r = records_head_->load(std::memory_order_acquire);
  while (r != nullptr) delete std::exchange(r, r->next);
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

detail::hazard_record* hazard_pointer_domain::acquire_free_record() {
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
    // release: publishes next/domain to walkers (acquire_free_record, scan).
  } while (!records_head_->compare_exchange_weak(head, r, std::memory_order_release,
                                                 std::memory_order_relaxed));
  record_count_.fetch_add(1, std::memory_order_relaxed); // relaxed: feeds a heuristic
  return r;
}

detail::retired_block* hazard_pointer_domain::add_block(thread_state& ts) {
  detail::retired_block* b = ts.spare;
  if (b != nullptr)
    ts.spare = b->next;
  else
    b = new detail::retired_block;
  b->count = 0;
  b->next = ts.retired;
  ts.retired = b;
  return b;
}

// A thread never needs more blocks than R entries fill. Without this cap, a
// thread that keeps adopting orphans would keep their emptied blocks forever.
void hazard_pointer_domain::trim_spares(thread_state& ts) noexcept {
  const std::size_t keep = scan_threshold() / detail::retired_block::capacity + 1;
  detail::retired_block* b = ts.spare;
  for (std::size_t i = 1; b != nullptr && i < keep; ++i) b = b->next;
  if (b != nullptr) delete_blocks(std::exchange(b->next, nullptr));
}

std::size_t hazard_pointer_domain::scan(thread_state& ts) noexcept {
  if (tls_in_scan) return 0; // a deleter retired more: the running scan is enough
  scan_guard guard;

  // Adopt the orphans of exited threads. Relaxed test first: no RMW when none.
  if (orphans_->load(std::memory_order_relaxed) != nullptr) {
    // [hp.adopt] acquire: pairs with [hp.orphan]; the exited thread's unlinks
    // happen before the heavy fence below.
    if (detail::retired_block* adopted = orphans_->exchange(nullptr, std::memory_order_acquire)) {
      detail::retired_block* last = last_block(adopted);
      last->next = ts.retired;
      ts.retired = adopted;
    }
  }
  // Detach the thread's blocks: objects that deleters retire during this scan
  // go to fresh blocks, never into the ones being compacted.
  detail::retired_block* const list = std::exchange(ts.retired, nullptr);
  ts.retired_count = 0;
  if (list == nullptr) return 0;

  detail::stress_point();
  detail::asymmetric_fence::heavy(); // [hp.scan] pairs with [hp.protect]

  std::vector<const void*>* buffer = nullptr;
  try {
    buffer = &hazard_buffer();
    buffer->clear();
    for (detail::hazard_record* r = records_head_->load(std::memory_order_acquire); r != nullptr;
         r = r->next) {
      // acquire: pairs with [hp.reset]; a reader that moved off an object has
      // finished reading it before we free it.
      if (const void* p = r->protected_ptr.load(std::memory_order_acquire)) buffer->push_back(p);
    }
  } catch (const std::bad_alloc&) {
    // No room to remember the hazards: keep everything, try again later.
    for (detail::retired_block* b = list; b != nullptr; b = b->next) ts.retired_count += b->count;
    ts.retired = list;
    return 0;
  }
  std::vector<const void*>& hazards = *buffer;
  std::sort(hazards.begin(), hazards.end(), std::less<>());

  // Survivors are compacted towards the front: the write position (keep, k)
  // never passes the read position, so no entry is overwritten unread. Blocks
  // may be partly filled (the head block, adopted ones); all have one capacity.
  constexpr std::size_t capacity = detail::retired_block::capacity;
  detail::retired_block* keep = list;
  std::size_t k = 0;
  std::size_t freed = 0, kept = 0;
  for (detail::retired_block* b = list; b != nullptr; b = b->next) {
    for (std::size_t i = 0; i < b->count; ++i) {
      const detail::retired_entry e = b->entries[i];
      if (std::binary_search(hazards.begin(), hazards.end(), e.address, std::less<>())) {
        if (k == capacity) {
          keep->count = k;
          keep = keep->next;
          k = 0;
        }
        keep->entries[k++] = e;
        ++kept;
      } else {
        e.reclaim(e.address, e.context); // may retire more: into fresh blocks
        ++freed;
      }
    }
  }
  keep->count = k;
  // Blocks after `keep` are empty now: keep them for reuse.
  if (detail::retired_block* empty = std::exchange(keep->next, nullptr)) {
    last_block(empty)->next = ts.spare;
    ts.spare = empty;
  }
  // Survivors go behind the blocks deleters filled meanwhile: the head block
  // stays the one being filled.
  if (kept == 0) { // `keep` only advances to write a survivor, so keep == list
    list->next = ts.spare;
    ts.spare = list;
  } else if (ts.retired == nullptr) {
    ts.retired = list;
  } else {
    last_block(ts.retired)->next = list;
  }
  ts.retired_count += kept;
  trim_spares(ts);

  // release: pairs with the acquire in stats(), so that retired >= reclaimed there.
  reclaimed_.fetch_add(freed, std::memory_order_release);
  scans_.fetch_add(1, std::memory_order_relaxed); // relaxed: statistic
  return freed;
}

std::size_t hazard_pointer_domain::reclaim() {
  return scan(local());
}

void hazard_pointer_domain::on_thread_exit(thread_registry::id_type id) noexcept {
  thread_state* chunk = chunks_[id / states_per_chunk].load(std::memory_order_acquire);
  if (chunk == nullptr) return; // this thread never used the domain
  thread_state& ts = chunk[id % states_per_chunk];
  // No scan here: we run under the registry's mutex and a deleter might need it.
  if (detail::retired_block* blocks = std::exchange(ts.retired, nullptr)) {
    detail::retired_block* last = last_block(blocks);
    detail::retired_block* old = orphans_->load(std::memory_order_relaxed);
    do {
      last->next = old;
      // [hp.orphan] release: this thread's unlinks happen before the adopting scan.
    } while (!orphans_->compare_exchange_weak(old, blocks, std::memory_order_release,
                                              std::memory_order_relaxed));
  }
  ts.retired_count = 0;
  delete_blocks(std::exchange(ts.spare, nullptr));
  destroy_cached_objects(ts); // their records go to the record cache, emptied next
  while (ts.cached_records > 0) {
    detail::hazard_record* r = ts.record_cache[--ts.cached_records];
    r->in_use.store(false, std::memory_order_release); // pairs with acquire_free_record
  }
}

void hazard_pointer_domain::destroy_cached_objects(thread_state& ts) noexcept {
  for (detail::cached_object& c : ts.cached_objects) {
    if (c.type == nullptr) break;
    // c.destroy is read before the exchange empties the slot: a call's
    // function is sequenced before its arguments (C++17).
    c.destroy(std::exchange(c, {}).object);
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
  return thread_registry::high_water() * scan_threshold();
}

hazard_pointer_domain& hazard_pointer_default_domain() noexcept {
  // Immortal: threads may retire and exit during static destruction.
  static hazard_pointer_domain* domain = new hazard_pointer_domain();
  return *domain;
}

namespace {
// Built while the program starts: building it allocates, and this accessor
// is noexcept, so a first use that ran out of memory later would terminate
// a caller that handles std::bad_alloc (lfht_search reports ENOMEM; found by
// the lfht fuzz target failing that allocation).
[[maybe_unused]] hazard_pointer_domain& built_at_startup = hazard_pointer_default_domain();
} // namespace

} // namespace lfcore
