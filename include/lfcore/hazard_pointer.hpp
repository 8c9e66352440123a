// lfcore/hazard_pointer.hpp - hazard-pointer memory reclamation.
//
// The algorithm is Michael's (IEEE TPDS 2004, "Hazard Pointers: Safe Memory
// Reclamation for Lock-Free Objects"); the interface is the one C++26 adopted
// (P2530, <hazard_pointer>) in namespace lfcore, plus what real users need:
// several domains, retire() for objects that do not derive from the base class,
// a synchronous reclaim(), and counters.
//
//   struct node : lfcore::hazard_pointer_obj_base<node> { int value; std::atomic<node*> next; };
//
//   lfcore::hazard_pointer hp = lfcore::make_hazard_pointer();
//   node* n = hp.protect(head);        // n stays valid while hp protects it
//   ...                                // unlink n with a CAS, then:
//   n->retire();                       // deleted once no hazard pointer protects it
//
// Design
// ------
// * Hazard records belong to a domain, live in a lock-free list that only
//   grows (records are reused, never freed before the domain), and are each
//   alone on a cache line. make_hazard_pointer() takes a record from the calling
//   thread's cache (no atomic RMW), else claims a free one with a CAS, else
//   allocates one. A hazard_pointer object is one pointer to its record.
// * Each thread keeps its own retired entries {address, reclaim function} in
//   blocks of contiguous arrays: retire is an append, with no atomic RMW and
//   no write to the retired object (other threads may still be reading its
//   cache line). When the thread holds R = max(scan_threshold,
//   scan_multiplier * H) entries, H being the number of hazard records, it
//   scans its own entries: it reads every hazard record once, reclaims what no
//   record protects and compacts the survivors. At most H survive and R >= 2H,
//   so a scan frees at least half of what it looks at: O(1) amortised per
//   object, plus O(log H) for the binary search among the sorted hazards.
// * Owner scans (Michael's design, also libcds' and xenium's) keep frees on
//   the thread that retired: an earlier lfcore design shared one retired list
//   among threads, and its cross-thread frees made retire+reclaim 2.5x slower
//   at 2 threads under glibc malloc (bench/results/hazard_pointer.md).
// * A thread that exits hands its entries to the domain's orphan list, which
//   the next scan of any thread adopts; it returns its cached records. Per-
//   thread state sits in a table indexed by thread_registry ids (exit
//   listener). No attach/detach call exists.
// * A container whose every operation takes the same few hazard pointers keeps
//   them between operations with thread_cached<T>(): an object per thread and
//   type, kept in the thread's table entry, so that the domain reaches it at
//   thread exit and at its own destruction, whichever comes first. A
//   thread_local per type remembers the last one found, with the domain's
//   serial number and the thread's count of exit hooks, so that an operation
//   finds it without the table while both still match.
// * hazard_pointer_obj_base<T> adds no bytes to T (it holds only the deleter,
//   an empty base for std::default_delete), and retire(p, deleter) of any type
//   allocates nothing when the deleter is stateless.
//
// Garbage bound
// -------------
// Each thread holds fewer than R of its own retired entries, so with T
// threads that have used the domain the objects retired but not yet
// reclaimed are fewer than  T * R  (garbage_bound()), plus the entries of
// threads that exited since the last scan (each fewer than R). This holds
// however long a thread stalls while protecting objects: a stalled hazard
// pointer keeps exactly the object it protects, and R counts it.
//
// Memory orders (labels pair across files; search for them)
// ---------------------------------------------------------
// [hp.protect]  reader: hazard store; asymmetric_fence::light(); re-load of the
//               source. Pairs with [hp.scan].
// [hp.scan]     reclaimer: asymmetric_fence::heavy() after the object was
//               unlinked (by this thread before retire, or by an exited thread
//               whose entries were adopted through [hp.orphan]/[hp.adopt]) and
//               before the hazards are read. Either the reader's re-load sees
//               the unlink (it retries and never dereferences) or the
//               reclaimer sees the hazard (it keeps the object). This is the
//               store-load (Dekker) pattern and needs the pair of full fences;
//               acquire/release alone would not do. Model-checked on x86-TSO
//               and under release/acquire with seq_cst fences, membarrier a
//               fence in every thread (tests/model/hazard_pointer.pml).
// [hp.reset]    release store that clears or moves a hazard: the reader's
//               accesses to the object happen before a reclaimer that reads the
//               new value with acquire and then frees the object.
// [hp.orphan]/[hp.adopt]  release CAS that pushes an exited thread's blocks
//               onto the orphan list / acquire exchange that takes them.
//
// Progress: protect() is lock-free (it retries only when the source changed,
// i.e. when another thread made progress); try_protect() and reset_protection()
// are wait-free; retire() is wait-free but for the scan it runs every R
// retirements (bounded work, O(R + H log H)) and the deleters that scan runs.
// make_hazard_pointer() is lock-free; it allocates when no free record exists.
// Thread exit and domain construction/destruction take the thread registry's
// mutex.
//
// What it does not do: reclaim() reaches only the caller's entries and the
// orphans, not other live threads' (fewer than R each), which wait for their
// owner's next scan or exit; the default domain is never destroyed, so objects
// still pending at exit are not reclaimed (they stay reachable, leak checkers
// stay quiet) - call reclaim() first if their deleters have effects. The
// default domain is built while the program starts (its accessor is
// noexcept, so a later first use could not report running out of memory).
#pragma once

#include "lfcore/cache_padded.hpp"
#include "lfcore/config.hpp"
#include "lfcore/detail/asymmetric_fence.hpp"
#include "lfcore/detail/stress.hpp"
#include "lfcore/thread_registry.hpp"

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

namespace lfcore {

class hazard_pointer_domain;
class hazard_pointer;
hazard_pointer_domain& hazard_pointer_default_domain() noexcept;

namespace detail {

/// One retired object: what hazard pointers compare against, and how to free it.
struct retired_entry {
  const void* address;
  void* context; // a box for stateful deleters, else unused
  void (*reclaim)(const void* address, void* context) noexcept;
};

/// A block of a thread's retired entries. Blocks are small enough for the
/// allocator's per-thread cache (glibc's tcache stops at 1032 bytes; larger
/// requests consolidate its fast bins, which cost 10% of a queue benchmark).
struct retired_block {
  static constexpr std::size_t capacity = stress_build ? 2 : 32;
  retired_block* next = nullptr;
  std::size_t count = 0;
  retired_entry entries[capacity];
};
static_assert(sizeof(retired_block) <= 1024);

/// An object a thread keeps in a domain (thread_cached<T>()). `type` is the
/// address of type_tag<T>: one per T in the program.
struct cached_object {
  const void* type = nullptr;
  void* object = nullptr;
  void (*destroy)(void* object) noexcept = nullptr;
};
template <class T>
inline constexpr char type_tag = 0;

/// One hazard pointer's slot. Single writer (the owning hazard_pointer),
/// many readers (scans). Alone on its cache line so readers do not false-share.
struct alignas(cache_line_size) hazard_record {
  std::atomic<const void*> protected_ptr{nullptr};
  std::atomic<bool> in_use{false};
  hazard_record* next = nullptr; // immutable once the record is published
  hazard_pointer_domain* domain = nullptr;
};

/// How retire(p, deleter) frees p: inline for stateless deleters, through a
/// heap box (freed with it) for deleters that carry state.
template <class T, class D>
retired_entry make_retired_entry(T* p, D&& deleter) {
  using deleter_type = std::decay_t<D>;
  if constexpr (std::is_empty_v<deleter_type> && std::is_default_constructible_v<deleter_type>) {
    return {p, nullptr, [](const void* a, void*) noexcept {
              deleter_type()(const_cast<T*>(static_cast<const T*>(a)));
            }};
  } else {
    auto* box = new deleter_type(std::forward<D>(deleter));
    return {p, box, [](const void* a, void* ctx) noexcept {
              std::unique_ptr<deleter_type> d(static_cast<deleter_type*>(ctx));
              (*d)(const_cast<T*>(static_cast<const T*>(a)));
            }};
  }
}

} // namespace detail

/// Tuning of a domain. Defaults are chosen by the micro-benchmarks in
/// bench/micro (see bench/results/); stress builds shrink them to the minimum.
struct hazard_pointer_domain_config {
  /// Minimum number of entries a thread holds before it scans (R_min).
  /// Measured (bench/results/README.md): with 1000, memory freed by a scan is
  /// reused so soon that a Michael-Scott queue ran at 0.85x libcds at 2-8
  /// threads; from about 4000 on it is at parity, and 8192 is the default.
  /// Lower it when retired objects are large: up to T * R stay pending.
  /// About R objects per thread circulate between retire and reuse, past
  /// jemalloc's thread cache: a lower R made one thread's upserts up to 2x
  /// faster there, and two threads' up to 2x slower (scans, each with its
  /// heavy fence, come 8192 / R times as often); pool_allocator is the
  /// better remedy (bench/results/scan_recycling/).
  std::size_t scan_threshold = stress_build ? 0 : 8192;
  /// R = max(scan_threshold, scan_multiplier * hazard records). At least 2.
  std::size_t scan_multiplier = 2;
};

struct hazard_pointer_domain_stats {
  std::uint64_t retired = 0;   ///< objects ever retired to the domain
  std::uint64_t reclaimed = 0; ///< of those, deleted
  std::uint64_t scans = 0;     ///< scans that found a non-empty shared list
  std::size_t hazard_records = 0;
  std::uint64_t pending() const noexcept { return retired - reclaimed; }
};

/// A set of hazard pointers and the objects retired against them. Objects
/// retired to one domain are only checked against that domain's hazard
/// pointers.
///
/// Thread safety: every member may be called concurrently except the
/// destructor. Destruction requires that no hazard_pointer of the domain is
/// alive and no other thread uses the domain; it reclaims every retired object.
class hazard_pointer_domain final : thread_registry::exit_listener {
public:
  using config_type = hazard_pointer_domain_config;

  /// Throws std::invalid_argument when scan_multiplier < 2.
  explicit hazard_pointer_domain(config_type config = {});
  ~hazard_pointer_domain();
  hazard_pointer_domain(const hazard_pointer_domain&) = delete;
  hazard_pointer_domain& operator=(const hazard_pointer_domain&) = delete;

  /// Retires an object that does not derive from hazard_pointer_obj_base:
  /// `deleter(p)` runs once no hazard pointer of this domain protects p.
  /// A deleter with state is moved to a heap box; that allocation may throw
  /// std::bad_alloc, and then p is not retired (the caller still owns it).
  /// Precondition: p is unreachable for new readers. May run other deleters.
  template <class T, class D = std::default_delete<T>>
  void retire(T* p, D deleter = D()) {
    push_retired(detail::make_retired_entry(p, std::move(deleter)));
  }

  /// Makes the calling thread's next retire() with a stateless deleter
  /// allocate nothing (it would otherwise allocate a block now and then).
  /// A container calls it before the CAS that unlinks a node, which cannot be
  /// undone: retiring the node afterwards then cannot fail. May throw
  /// std::bad_alloc, and then nothing changed.
  void reserve_retire() {
    thread_state& ts = local();
    if (ts.retired == nullptr || ts.retired->count == detail::retired_block::capacity)
      add_block(ts);
  }

  /// Synchronous cleanup: scans the caller's retired entries and the orphans of
  /// exited threads, deleting every object no hazard pointer protects. Other
  /// live threads' entries are not reached (see the header). Returns the
  /// number of objects this call deleted. Runs deleters.
  std::size_t reclaim();

  /// Counters, read without stopping anyone: each is exact at some instant
  /// during the call, and pending() never underflows.
  hazard_pointer_domain_stats stats() const noexcept;

  /// The bound on pending objects documented above, for the current number of
  /// hazard records and threads.
  std::size_t garbage_bound() const noexcept;

  const config_type& config() const noexcept { return config_; }

  /// How many types of object a thread can keep in one domain.
  static constexpr std::size_t thread_cache_capacity = 4;

  /// The calling thread's T in this domain, made with T(*this) on the
  /// thread's first call, or nullptr when the thread keeps
  /// thread_cache_capacity objects of other types already. For containers
  /// that take the same few hazard pointers in every operation: taking them
  /// from the domain each time made hash_trie_map's lookups up to 2x slower
  /// (bench/results/micro/trie_domain.txt). The object is the thread's
  /// alone. It is destroyed when the thread exits (on that thread, under the
  /// thread registry's mutex) or when the domain is, whichever comes first:
  /// its destructor may release hazard pointers of this domain and must do
  /// nothing else with lfcore. Hazard pointers kept this way hold their
  /// records until then, so they count in H (and so in R) meanwhile: a
  /// thread keeps 10 for all the hash_trie_maps it used in the domain, and
  /// 1 for its unbounded_mpmc_queues. Key T on what it holds, not on the
  /// container's type, so that every instantiation shares one of the few
  /// slots (detail::trie_reader_guards<R>, detail::queue_guard<R>).
  /// Wait-free: two thread_local loads when the thread's last call for T
  /// was on this domain (a container's every operation), else a look
  /// through the thread's few slots; the first call per type allocates and
  /// throws what T(*this) throws, or std::bad_alloc, keeping nothing then.
  template <class T>
  [[gnu::always_inline]] T* thread_cached() {
    // The last answer holds while its domain lives (serials are never
    // reused, addresses are) and the thread's exit hook, which destroys
    // what the thread kept, has not run since. Only this thread reads or
    // writes it, and only the destructor (no concurrent calls) or the
    // thread's own exit hook destroy the object: plain loads suffice.
    // In front of the slots: looking them up cost a map's hit on an integer
    // key 16-21 of its 145-148 instructions (bench/results/instructions/).
    const last_kept& last = last_kept_of<T>;
    if (last.domain_serial == serial_ && last.thread_exits == thread_registry::exits()) [[likely]]
      return static_cast<T*>(last.object);
    return find_thread_cached<T>();
  }

private:
  template <class T, class D>
  friend class hazard_pointer_obj_base;
  friend class hazard_pointer;
  friend hazard_pointer make_hazard_pointer(hazard_pointer_domain&);

  struct alignas(cache_line_size) thread_state {
    // Owner-only, except under the exit hook and the destructor.
    detail::retired_block* retired = nullptr; // head block is the one filling
    std::size_t retired_count = 0;            // entries in `retired`
    detail::retired_block* spare = nullptr;   // empty blocks kept for reuse
    static constexpr std::size_t record_cache_capacity = 8;
    std::size_t cached_records = 0;
    detail::hazard_record* record_cache[record_cache_capacity];
    // Written by the owner only; read by stats().
    std::atomic<std::uint64_t> retired_total{0};
    // Owner-only, except under the exit hook and the destructor. Filled
    // from the front, emptied all at once.
    detail::cached_object cached_objects[thread_cache_capacity];
  };
  static constexpr std::size_t states_per_chunk = 64;
  static constexpr std::size_t chunk_count = thread_registry::capacity / states_per_chunk;

  thread_state& local() {
    const auto id = thread_registry::current_id();
    // acquire: pairs with the release CAS in allocate_chunk, so the chunk's
    // initialised states are visible.
    thread_state* chunk = chunks_[id / states_per_chunk].load(std::memory_order_acquire);
    if (chunk == nullptr) chunk = allocate_chunk(id / states_per_chunk);
    return chunk[id % states_per_chunk];
  }

  // Never throws but for the allocation of a block, which happens only while
  // a thread's retired set grows past its largest size so far.
  void push_retired(const detail::retired_entry& e) {
    thread_state& ts = local();
    detail::retired_block* b = ts.retired;
    if (b == nullptr || b->count == detail::retired_block::capacity) b = add_block(ts);
    b->entries[b->count++] = e;
    // relaxed: single writer; stats() only needs an eventually exact count.
    ts.retired_total.store(ts.retired_total.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
    if (++ts.retired_count >= scan_threshold()) scan(ts);
  }

  // A record from the thread's cache, else from the list (acquire_free_record).
  // The cache hits are inline: every iterator a map hands out takes a record
  // and gives it back, and the two calls out of line made a find() of 1e6
  // keys 1.25x slower (bench/results/hp_record_inline/). Progress: the cache
  // paths are wait-free; acquire_free_record is lock-free (its push's CAS
  // fails only when another thread pushed a record).
  detail::hazard_record* acquire_record() {
    thread_state& ts = local();
    if (ts.cached_records > 0) [[likely]]
      return ts.record_cache[--ts.cached_records];
    return acquire_free_record();
  }
  void release_record(detail::hazard_record* r) noexcept {
    // [hp.reset] release: the owner's last accesses to the protected object
    // happen before a scan that reads null here.
    r->protected_ptr.store(nullptr, std::memory_order_release);
    // A kept object's, destroyed with the domain: the record goes with it, and
    // local() might have to allocate for a thread that never used the domain.
    if (tearing_down_) [[unlikely]]
      return;
    thread_state& ts = local();
    if (ts.cached_records < thread_state::record_cache_capacity) [[likely]]
      ts.record_cache[ts.cached_records++] = r;
    else
      r->in_use.store(false, std::memory_order_release); // pairs with acquire_free_record
  }
  detail::hazard_record* acquire_free_record();

  // The thread's last thread_cached<T>() answer that was not null. Trivial
  // and constant-initialized (to zeros: serial 0 is no domain's), so it is
  // readable until the thread's very end.
  struct last_kept {
    std::uint64_t domain_serial;
    std::uint32_t thread_exits;
    void* object;
  };
  template <class T>
  static constinit inline thread_local last_kept last_kept_of{};

  template <class T>
  [[gnu::noinline]] T* find_thread_cached() {
    thread_state& ts = local();
    T* found = nullptr;
    for (detail::cached_object& c : ts.cached_objects) {
      if (c.type == &detail::type_tag<T>) {
        found = static_cast<T*>(c.object);
        break;
      }
      if (c.type == nullptr) {
        found = keep_for_thread<T>(c);
        break;
      }
    }
    if (found != nullptr) last_kept_of<T> = {serial_, thread_registry::exits(), found};
    return found;
  }
  template <class T>
  T* keep_for_thread(detail::cached_object& c) {
    auto object = std::make_unique<T>(*this);
    c.object = object.get();
    c.destroy = [](void* o) noexcept { delete static_cast<T*>(o); };
    c.type = &detail::type_tag<T>;
    return object.release();
  }
  static void destroy_cached_objects(thread_state& ts) noexcept;

  thread_state* allocate_chunk(std::size_t index);
  detail::retired_block* add_block(thread_state& ts);
  std::size_t scan(thread_state& ts) noexcept;
  void trim_spares(thread_state& ts) noexcept;
  std::size_t scan_threshold() const noexcept {
    // relaxed: a heuristic; a stale count only moves the next scan a little.
    const std::size_t h = record_count_.load(std::memory_order_relaxed);
    return config_.scan_threshold > config_.scan_multiplier * h ? config_.scan_threshold
                                                                : config_.scan_multiplier * h;
  }
  void on_thread_exit(thread_registry::id_type id) noexcept override;

  const config_type config_;
  const std::uint64_t serial_; // this domain's, unique in the process (never 0)
  std::atomic<thread_state*> chunks_[chunk_count] = {};

  // Blocks left by exited threads, adopted by the next scan of any thread.
  cache_padded<std::atomic<detail::retired_block*>> orphans_{};

  // Hazard records: a grow-only list.
  cache_padded<std::atomic<detail::hazard_record*>> records_head_{};
  std::atomic<std::size_t> record_count_{0};

  std::atomic<std::uint64_t> reclaimed_{0};
  std::atomic<std::uint64_t> scans_{0};

  // Set by the destructor: records released then need not go anywhere.
  bool tearing_down_ = false;
};

/// P2530's hazard_pointer: owns one hazard record; movable, not copyable.
/// A hazard_pointer is used by one thread at a time; it may be moved to, and
/// destroyed on, another thread.
class hazard_pointer {
public:
  /// An empty hazard pointer (owns no record); only assignment and destruction apply.
  hazard_pointer() noexcept = default;
  hazard_pointer(hazard_pointer&& other) noexcept : rec_(std::exchange(other.rec_, nullptr)) {}
  hazard_pointer& operator=(hazard_pointer&& other) noexcept {
    if (this != &other) {
      release();
      rec_ = std::exchange(other.rec_, nullptr);
    }
    return *this;
  }
  ~hazard_pointer() { release(); }

  [[nodiscard]] bool empty() const noexcept { return rec_ == nullptr; }

  /// Protects the pointer currently in src and returns it. Precondition: !empty().
  /// Lock-free: loops only while src keeps changing.
  template <class T>
  T* protect(const std::atomic<T*>& src) noexcept {
    return protect(src, [](T* p) noexcept { return p; });
  }

  /// Extension for tagged words (marked pointers, variants): protects
  /// to_pointer(v) for the value v in src, and returns v.
  template <class U, class ToPointer>
  U protect(const std::atomic<U>& src, ToPointer to_pointer) noexcept {
    // relaxed: a first guess, which the loop below validates.
    return protect(src, src.load(std::memory_order_relaxed), to_pointer);
  }

  /// Extension: protect(src, to_pointer) from `guess`, a value the caller
  /// read from src before (any value: it is validated as protect's own first
  /// read would be), which saves that read.
  template <class U, class ToPointer>
  U protect(const std::atomic<U>& src, U guess, ToPointer to_pointer) noexcept {
    U value = guess;
    for (;;) {
      set(to_pointer(value));
      detail::stress_point();
      detail::asymmetric_fence::light(); // [hp.protect] pairs with [hp.scan]
      // acquire: the protected object's contents, published by whoever stored it in src.
      const U again = src.load(std::memory_order_acquire);
      if (again == value) return value;
      value = again;
    }
  }

  /// P2530: protects ptr and checks that src still holds it. On failure, ptr
  /// is updated to src's current value, the protection is reset, and false is
  /// returned. Wait-free. Precondition: !empty().
  template <class T>
  bool try_protect(T*& ptr, const std::atomic<T*>& src) noexcept {
    T* const old = ptr;
    set(old);
    detail::stress_point();
    detail::asymmetric_fence::light();         // [hp.protect] pairs with [hp.scan]
    ptr = src.load(std::memory_order_acquire); // acquire: see protect()
    if (ptr == old) return true;
    reset_protection();
    return false;
  }

  /// Extension: protects ptr, then evaluates still_reachable() (which must
  /// read with acquire). If it returns true, ptr is protected and safe to use,
  /// provided the condition implies ptr had not been retired when it was
  /// evaluated (for example "the link I read ptr from is unchanged and its
  /// owner is not deleted"). Otherwise the protection is reset and false is
  /// returned. Wait-free but for still_reachable(). Precondition: !empty().
  template <class T, class Predicate>
  bool try_protect_if(const T* ptr, Predicate still_reachable) {
    set(ptr);
    detail::stress_point();
    detail::asymmetric_fence::light(); // [hp.protect] pairs with [hp.scan]
    if (still_reachable()) return true;
    reset_protection();
    return false;
  }

  /// Protects ptr without validation: the caller guarantees ptr cannot be
  /// reclaimed before this call returns (e.g. it is protected by another hazard
  /// pointer, or not yet retired). Wait-free.
  template <class T>
  void reset_protection(const T* ptr) noexcept {
    set(ptr);
  }
  void reset_protection(std::nullptr_t = nullptr) noexcept { set(nullptr); }

  void swap(hazard_pointer& other) noexcept { std::swap(rec_, other.rec_); }

private:
  friend hazard_pointer make_hazard_pointer(hazard_pointer_domain&);
  explicit hazard_pointer(detail::hazard_record* r) noexcept : rec_(r) {}

  void set(const void* p) noexcept {
    assert(rec_ != nullptr && "hazard_pointer: use of an empty hazard pointer");
    // [hp.reset] release: accesses through the previously protected pointer
    // happen before a scan that reads this value and frees that object.
    rec_->protected_ptr.store(p, std::memory_order_release);
  }

  void release() noexcept {
    if (rec_ != nullptr) rec_->domain->release_record(std::exchange(rec_, nullptr));
  }

  detail::hazard_record* rec_ = nullptr;
};

inline void swap(hazard_pointer& a, hazard_pointer& b) noexcept {
  a.swap(b);
}

/// A hazard pointer of `domain`, protecting nothing. Lock-free; may allocate
/// (throws std::bad_alloc).
[[nodiscard]] inline hazard_pointer
make_hazard_pointer(hazard_pointer_domain& domain = hazard_pointer_default_domain()) {
  return hazard_pointer(domain.acquire_record());
}

/// P2530's base class for objects that can be retired. T derives from
/// hazard_pointer_obj_base<T, D>; D is the deleter called on a T*.
template <class T, class D = std::default_delete<T>>
class hazard_pointer_obj_base {
public:
  /// Hands the object to `domain`: deleter(this) runs once no hazard pointer of
  /// the domain protects it. Precondition: the object is unreachable for new
  /// readers and was not retired before. noexcept: the rare allocation of a
  /// block failing terminates (see push_retired). May run other deleters.
  void retire(D deleter = D(),
              hazard_pointer_domain& domain = hazard_pointer_default_domain()) noexcept {
    static_assert(std::is_base_of_v<hazard_pointer_obj_base, T>,
                  "T must derive from hazard_pointer_obj_base<T, D>");
    deleter_ = std::move(deleter);
    domain.push_retired({static_cast<const T*>(this), nullptr, &reclaim_object});
  }

protected:
  hazard_pointer_obj_base() = default;
  hazard_pointer_obj_base(const hazard_pointer_obj_base&) = default;
  hazard_pointer_obj_base(hazard_pointer_obj_base&&) = default;
  hazard_pointer_obj_base& operator=(const hazard_pointer_obj_base&) = default;
  hazard_pointer_obj_base& operator=(hazard_pointer_obj_base&&) = default;
  ~hazard_pointer_obj_base() = default;

private:
  static void reclaim_object(const void* address, void*) noexcept {
    T* object = const_cast<T*>(static_cast<const T*>(address));
    auto* self = static_cast<hazard_pointer_obj_base*>(object);
    D deleter = std::move(self->deleter_);
    deleter(object);
  }

  [[no_unique_address]] D deleter_{};
};

} // namespace lfcore
