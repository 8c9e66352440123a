// Unit tests of lfcore/hazard_pointer.hpp: every operation, its failure cases,
// thread exit with pending retirements, and the domain's counters.
#include <lfcore/detail/guard_lease.hpp>
#include <lfcore/hazard_pointer.hpp>
#include <lfcore/marked_ptr.hpp>
#include <lfcore/reclamation.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using lfcore::hazard_pointer;
using lfcore::hazard_pointer_domain;
using lfcore::make_hazard_pointer;

std::atomic<int> live_nodes{0};

struct node : lfcore::hazard_pointer_obj_base<node> {
  explicit node(int v = 0) : value(v) { live_nodes.fetch_add(1); }
  ~node() { live_nodes.fetch_sub(1); }
  int value;
};

// A type whose deleter is not std::default_delete.
struct counted;
struct counting_delete {
  static inline int calls = 0;
  void operator()(counted* p) const;
};
struct counted : lfcore::hazard_pointer_obj_base<counted, counting_delete> {};
void counting_delete::operator()(counted* p) const {
  ++calls;
  delete p;
}

// Scan on every retire: makes reclamation immediate and observable.
hazard_pointer_domain::config_type eager() {
  hazard_pointer_domain::config_type c;
  c.scan_threshold = 0;
  return c;
}

class HazardPointer : public ::testing::Test {
protected:
  void SetUp() override { live_nodes = 0; }
  void TearDown() override { EXPECT_EQ(live_nodes.load(), 0) << "a node leaked"; }
};

TEST_F(HazardPointer, DefaultConstructedIsEmptyMadeIsNot) {
  hazard_pointer empty;
  EXPECT_TRUE(empty.empty());
  hazard_pointer hp = make_hazard_pointer();
  EXPECT_FALSE(hp.empty());
}

TEST_F(HazardPointer, MoveAndSwapTransferTheRecord) {
  hazard_pointer_domain domain(eager());
  hazard_pointer a = make_hazard_pointer(domain);
  hazard_pointer b(std::move(a));
  EXPECT_TRUE(a.empty()); // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_FALSE(b.empty());
  swap(a, b);
  EXPECT_FALSE(a.empty());
  EXPECT_TRUE(b.empty());
  b = std::move(a);
  EXPECT_FALSE(b.empty());
  b = hazard_pointer();
  EXPECT_TRUE(b.empty());
}

TEST_F(HazardPointer, ProtectReturnsTheCurrentValue) {
  hazard_pointer_domain domain(eager());
  node n(42);
  std::atomic<node*> src{&n};
  hazard_pointer hp = make_hazard_pointer(domain);
  EXPECT_EQ(hp.protect(src), &n);
  std::atomic<node*> null_src{nullptr};
  EXPECT_EQ(hp.protect(null_src), nullptr);
}

TEST_F(HazardPointer, TryProtectFailsAndReportsTheNewValue) {
  hazard_pointer_domain domain(eager());
  node a(1), b(2);
  std::atomic<node*> src{&b};
  hazard_pointer hp = make_hazard_pointer(domain);
  node* p = &a;
  EXPECT_FALSE(hp.try_protect(p, src));
  EXPECT_EQ(p, &b);
  EXPECT_TRUE(hp.try_protect(p, src));
  EXPECT_EQ(p, &b);
}

TEST_F(HazardPointer, UnprotectedObjectIsReclaimed) {
  hazard_pointer_domain domain(eager());
  (new node(1))->retire({}, domain);
  EXPECT_EQ(live_nodes.load(), 0);
  EXPECT_EQ(domain.stats().retired, 1u);
  EXPECT_EQ(domain.stats().reclaimed, 1u);
}

TEST_F(HazardPointer, ProtectedObjectSurvivesUntilReset) {
  hazard_pointer_domain domain(eager());
  std::atomic<node*> src{new node(7)};
  hazard_pointer hp = make_hazard_pointer(domain);
  node* p = hp.protect(src);
  src.store(nullptr);
  p->retire({}, domain);
  domain.reclaim();
  ASSERT_EQ(live_nodes.load(), 1);
  EXPECT_EQ(p->value, 7);
  EXPECT_EQ(domain.stats().pending(), 1u);
  hp.reset_protection();
  EXPECT_EQ(domain.reclaim(), 1u);
  EXPECT_EQ(live_nodes.load(), 0);
}

TEST_F(HazardPointer, DestroyingTheHazardPointerReleasesProtection) {
  hazard_pointer_domain domain(eager());
  std::atomic<node*> src{new node(3)};
  node* p;
  {
    hazard_pointer hp = make_hazard_pointer(domain);
    p = hp.protect(src);
    src.store(nullptr);
    p->retire({}, domain);
    domain.reclaim();
    EXPECT_EQ(live_nodes.load(), 1);
  }
  domain.reclaim();
  EXPECT_EQ(live_nodes.load(), 0);
}

TEST_F(HazardPointer, ResetProtectionWithPointerProtectsIt) {
  hazard_pointer_domain domain(eager());
  node* n = new node(9);
  hazard_pointer hp = make_hazard_pointer(domain);
  hp.reset_protection(n); // caller guarantees n is not yet retired
  n->retire({}, domain);
  domain.reclaim();
  EXPECT_EQ(live_nodes.load(), 1);
  hp.reset_protection(nullptr);
  domain.reclaim();
  EXPECT_EQ(live_nodes.load(), 0);
}

TEST_F(HazardPointer, RetireWithCustomDeleterForAnyType) {
  hazard_pointer_domain domain(eager());
  int deleted = 0;
  auto deleter = [&deleted](std::vector<int>* v) {
    ++deleted;
    delete v;
  };
  std::atomic<std::vector<int>*> src{new std::vector<int>{1, 2, 3}};
  hazard_pointer hp = make_hazard_pointer(domain);
  auto* v = hp.protect(src);
  src.store(nullptr);
  domain.retire(v, deleter);
  domain.reclaim();
  EXPECT_EQ(deleted, 0);
  EXPECT_EQ(v->size(), 3u);
  hp.reset_protection();
  domain.reclaim();
  EXPECT_EQ(deleted, 1);
}

TEST_F(HazardPointer, ObjBaseCustomDeleterRunsOnceAfterProtection) {
  hazard_pointer_domain domain(eager());
  counting_delete::calls = 0;
  std::atomic<counted*> src{new counted};
  hazard_pointer hp = make_hazard_pointer(domain);
  counted* p = hp.protect(src);
  src.store(nullptr);
  p->retire({}, domain);
  domain.reclaim();
  EXPECT_EQ(counting_delete::calls, 0);
  hp.reset_protection();
  domain.reclaim();
  domain.reclaim();
  EXPECT_EQ(counting_delete::calls, 1);
}

TEST_F(HazardPointer, ProtectMarkedWordProtectsThePointer) {
  hazard_pointer_domain domain(eager());
  using word = lfcore::marked_ptr<node, 1>;
  node* n = new node(5);
  std::atomic<word> src{word(n, 1)};
  hazard_pointer hp = make_hazard_pointer(domain);
  const word w = hp.protect(src, [](word x) { return x.get(); });
  EXPECT_EQ(w.get(), n);
  EXPECT_EQ(w.mark(), 1u);
  src.store(word());
  n->retire({}, domain);
  domain.reclaim();
  EXPECT_EQ(live_nodes.load(), 1) << "the unmarked address must be what is protected";
  hp.reset_protection();
  domain.reclaim();
  EXPECT_EQ(live_nodes.load(), 0);
}

// protect(src, guess, to_pointer): a stale guess is not what gets protected
// or returned, src's current value is.
TEST_F(HazardPointer, ProtectFromAStaleGuessProtectsTheCurrentValue) {
  hazard_pointer_domain domain(eager());
  node* stale = new node(1);
  node* current = new node(2);
  std::atomic<node*> src{current};
  hazard_pointer hp = make_hazard_pointer(domain);
  EXPECT_EQ(hp.protect(src, stale, [](node* x) { return x; }), current);
  src.store(nullptr);
  current->retire({}, domain);
  domain.reclaim();
  EXPECT_EQ(live_nodes.load(), 2) << "the current value must stay protected";
  stale->retire({}, domain);
  domain.reclaim();
  EXPECT_EQ(live_nodes.load(), 1) << "the guess must not stay protected";
  hp.reset_protection();
  domain.reclaim();
  EXPECT_EQ(live_nodes.load(), 0);
}

TEST_F(HazardPointer, DomainsAreIndependent) {
  hazard_pointer_domain a(eager()), b(eager());
  std::atomic<node*> src{new node(1)};
  hazard_pointer hp_in_a = make_hazard_pointer(a);
  node* p = hp_in_a.protect(src);
  src.store(nullptr);
  p->retire({}, b); // only b's hazard pointers count for it
  b.reclaim();
  EXPECT_EQ(live_nodes.load(), 0);
}

TEST_F(HazardPointer, DestroyingTheDomainReclaimsEverything) {
  {
    hazard_pointer_domain::config_type lazy;
    lazy.scan_threshold = 1000; // nothing is reclaimed before the destructor
    hazard_pointer_domain domain(lazy);
    for (int i = 0; i < 10; ++i) (new node(i))->retire({}, domain);
    EXPECT_EQ(live_nodes.load(), 10);
  }
  EXPECT_EQ(live_nodes.load(), 0);
}

TEST_F(HazardPointer, ThreadExitHandsOverPendingRetirements) {
  hazard_pointer_domain::config_type c;
  c.scan_threshold = 100000; // the thread never scans: all its entries are pending at exit
  hazard_pointer_domain domain(c);
  std::thread([&] {
    for (int i = 0; i < 10; ++i) (new node(i))->retire({}, domain);
  }).join();
  EXPECT_EQ(live_nodes.load(), 10);
  EXPECT_EQ(domain.stats().retired, 10u);
  EXPECT_EQ(domain.reclaim(), 10u); // reachable only if the exit hook made them orphans
  EXPECT_EQ(live_nodes.load(), 0);
}

TEST_F(HazardPointer, DeleterThatRetiresMoreIsHandled) {
  hazard_pointer_domain domain(eager());
  struct chain : lfcore::hazard_pointer_obj_base<chain> {
    hazard_pointer_domain* dom = nullptr;
    chain* next = nullptr;
    ~chain() {
      if (next) next->retire({}, *dom); // retire from inside a scan
    }
  };
  chain* head = nullptr;
  for (int i = 0; i < 50; ++i) {
    auto* c = new chain;
    c->dom = &domain;
    c->next = head;
    head = c;
  }
  head->retire({}, domain);
  while (domain.reclaim() > 0) {
  }
  EXPECT_EQ(domain.stats().retired, 50u);
  EXPECT_EQ(domain.stats().pending(), 0u);
}

// Deleters that retire during a scan must not disturb the blocks the scan is
// compacting. With 32-entry blocks the older block holds the 10 spawners and 22
// protected nodes, the head block 5 protected nodes: the scan reads the head
// first, then the spawners' deleters retire while survivors are still being
// compacted into the head block.
TEST_F(HazardPointer, RetiringFromADeleterDuringAScanLosesNothing) {
  struct spawner : lfcore::hazard_pointer_obj_base<spawner> {
    hazard_pointer_domain* dom = nullptr;
    ~spawner() { (new node(-1))->retire({}, *dom); }
  };
  hazard_pointer_domain::config_type c;
  c.scan_threshold = 1'000'000; // scans happen only in reclaim()
  hazard_pointer_domain domain(c);
  for (int i = 0; i < 10; ++i) {
    auto* s = new spawner;
    s->dom = &domain;
    s->retire({}, domain);
  }
  std::vector<hazard_pointer> guards;
  constexpr int protected_nodes = 27;
  for (int i = 0; i < protected_nodes; ++i) {
    auto* n = new node(i);
    guards.push_back(make_hazard_pointer(domain));
    guards.back().reset_protection(n);
    n->retire({}, domain);
  }
  EXPECT_EQ(domain.reclaim(), 10u); // the spawners; their nodes wait for the next scan
  EXPECT_EQ(live_nodes.load(), protected_nodes + 10);
  guards.clear();
  EXPECT_EQ(domain.reclaim(), protected_nodes + 10u);
  EXPECT_EQ(domain.stats().pending(), 0u);
}

TEST_F(HazardPointer, RecordsAreReusedNotLeaked) {
  hazard_pointer_domain domain(eager());
  for (int i = 0; i < 1000; ++i) {
    hazard_pointer a = make_hazard_pointer(domain);
    hazard_pointer b = make_hazard_pointer(domain);
  }
  EXPECT_EQ(domain.stats().hazard_records, 2u);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) hazard_pointer hp = make_hazard_pointer(domain);
    });
  for (auto& t : threads) t.join();
  EXPECT_LE(domain.stats().hazard_records, 2u + 4u);
}

// A thread caches up to 8 released records; the rest go back to the domain's
// list (release_record's other branch), where the next acquisitions find them.
TEST_F(HazardPointer, RecordsPastTheThreadsCacheAreReused) {
  hazard_pointer_domain domain(eager());
  constexpr std::size_t held = 20; // more than a thread's record cache holds
  for (int round = 0; round < 3; ++round) {
    std::vector<hazard_pointer> many;
    for (std::size_t i = 0; i < held; ++i) many.push_back(make_hazard_pointer(domain));
    EXPECT_EQ(domain.stats().hazard_records, held) << "round " << round;
  }
}

// ------------------------------------------ objects a thread keeps in a domain

std::atomic<int> kept_live{0};
// What a container keeps: a hazard pointer of the domain it is made for.
template <int Type>
struct kept {
  explicit kept(hazard_pointer_domain& d) : hp(make_hazard_pointer(d)), domain(&d) { ++kept_live; }
  ~kept() { --kept_live; }
  hazard_pointer hp;
  hazard_pointer_domain* domain;
};

TEST_F(HazardPointer, AThreadKeepsOneObjectPerTypeInEachDomain) {
  kept_live = 0;
  {
    hazard_pointer_domain a, b;
    kept<0>* mine = a.thread_cached<kept<0>>();
    ASSERT_NE(mine, nullptr);
    EXPECT_EQ(mine->domain, &a);
    EXPECT_EQ(a.thread_cached<kept<0>>(), mine) << "made once, then found";
    EXPECT_NE(a.thread_cached<kept<1>>(), nullptr);
    EXPECT_NE(static_cast<void*>(a.thread_cached<kept<1>>()), static_cast<void*>(mine));
    kept<0>* in_b = b.thread_cached<kept<0>>();
    EXPECT_NE(in_b, mine);
    EXPECT_EQ(in_b->domain, &b);
    kept<0>* theirs = nullptr;
    std::thread([&] { theirs = a.thread_cached<kept<0>>(); }).join();
    EXPECT_NE(theirs, nullptr);
    EXPECT_NE(theirs, mine);
    EXPECT_EQ(kept_live.load(), 3) << "the other thread's went with it";
  }
  EXPECT_EQ(kept_live.load(), 0) << "the domains destroyed the rest";
}

TEST_F(HazardPointer, AThreadKeepsAFewTypesThenGetsNull) {
  kept_live = 0;
  {
    hazard_pointer_domain domain;
    static_assert(hazard_pointer_domain::thread_cache_capacity == 4);
    EXPECT_NE(domain.thread_cached<kept<0>>(), nullptr);
    EXPECT_NE(domain.thread_cached<kept<1>>(), nullptr);
    EXPECT_NE(domain.thread_cached<kept<2>>(), nullptr);
    EXPECT_NE(domain.thread_cached<kept<3>>(), nullptr);
    EXPECT_EQ(domain.thread_cached<kept<4>>(), nullptr);
    EXPECT_NE(domain.thread_cached<kept<2>>(), nullptr) << "what is kept stays found";
    EXPECT_EQ(kept_live.load(), 4);
  }
  EXPECT_EQ(kept_live.load(), 0);
}

struct throws_when_made {
  explicit throws_when_made(hazard_pointer_domain&) { throw std::runtime_error("no"); }
};

TEST_F(HazardPointer, AKeptObjectThatThrowsAsItIsMadeTakesNoPlace) {
  kept_live = 0;
  hazard_pointer_domain domain;
  for (int i = 0; i < 10; ++i)
    EXPECT_THROW(domain.thread_cached<throws_when_made>(), std::runtime_error);
  EXPECT_NE(domain.thread_cached<kept<0>>(), nullptr);
  EXPECT_NE(domain.thread_cached<kept<3>>(), nullptr);
}

// A thread that ends while its kept hazard pointer protects a node: the
// exit releases the record, so the node is reclaimed and the record reused.
TEST_F(HazardPointer, AnEndingThreadsKeptHazardPointersProtectNothing) {
  kept_live = 0;
  hazard_pointer_domain domain(eager());
  std::atomic<node*> src{new node(1)};
  for (int round = 0; round < 20; ++round) {
    std::thread([&] {
      kept<0>* k = domain.thread_cached<kept<0>>();
      ASSERT_EQ(k->hp.protect(src)->value, 1);
    }).join();
    EXPECT_EQ(kept_live.load(), 0) << round;
  }
  node* n = src.exchange(nullptr);
  n->retire({}, domain);
  domain.reclaim();
  EXPECT_EQ(live_nodes.load(), 0) << "the protection outlived its thread";
  EXPECT_LE(domain.stats().hazard_records, 2u) << "the ended threads' records were not reused";
}

// A domain destroyed before a thread that keeps objects in it ends: the
// domain destroys them, and the thread's end touches nothing of it
// (AddressSanitizer would report a use after free).
TEST_F(HazardPointer, ADomainMayGoBeforeTheThreadsThatKeepObjectsInIt) {
  kept_live = 0;
  auto domain = std::make_unique<hazard_pointer_domain>();
  std::atomic<int> stage{0};
  std::thread t([&] {
    domain->thread_cached<kept<0>>()->hp.reset_protection(&stage);
    stage = 1;
    while (stage.load() != 2) std::this_thread::yield();
  });
  while (stage.load() != 1) std::this_thread::yield();
  EXPECT_EQ(kept_live.load(), 1);
  domain.reset();
  EXPECT_EQ(kept_live.load(), 0);
  stage = 2;
  t.join();
  auto next = std::make_unique<hazard_pointer_domain>(); // may take the same address
  std::thread([&] { EXPECT_NE(next->thread_cached<kept<0>>(), nullptr); }).join();
  EXPECT_EQ(kept_live.load(), 0);
}

// A thread remembers its last kept object per type in front of the slots.
// That memory must not outlive the domain, even when a new domain takes the
// old one's address, nor the thread's exit hook, after which a thread_local
// destructor may still ask. Keyed on the domain's address, or without the
// registry's count of exits, each call below returns an object already
// destroyed (kept_live stays low; AddressSanitizer reports the use).
TEST_F(HazardPointer, AKeptObjectIsNotFoundInANewDomainAtTheSameAddress) {
  kept_live = 0;
  alignas(hazard_pointer_domain) std::byte storage[sizeof(hazard_pointer_domain)];
  auto* first = new (storage) hazard_pointer_domain();
  ASSERT_NE(first->thread_cached<kept<0>>(), nullptr);
  EXPECT_EQ(first->thread_cached<kept<0>>(), first->thread_cached<kept<0>>());
  first->~hazard_pointer_domain();
  EXPECT_EQ(kept_live.load(), 0);
  auto* second = new (storage) hazard_pointer_domain();
  kept<0>* k = second->thread_cached<kept<0>>();
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(kept_live.load(), 1) << "the first domain's object was handed out again";
  EXPECT_EQ(k->domain, second);
  second->~hazard_pointer_domain();
  EXPECT_EQ(kept_live.load(), 0);
}

TEST_F(HazardPointer, AThreadLocalDestructorAfterTheExitHookGetsANewKeptObject) {
  kept_live = 0;
  static hazard_pointer_domain* domain;
  static std::atomic<int> made_late;
  struct late_user {
    ~late_user() {
      const int before = kept_live.load();
      kept<0>* k = domain->thread_cached<kept<0>>();
      if (k != nullptr && k->domain == domain && kept_live.load() == before + 1) ++made_late;
      EXPECT_EQ(domain->thread_cached<kept<0>>(), k) << "then found again";
    }
  };
  hazard_pointer_domain d;
  domain = &d;
  made_late = 0;
  std::thread([] {
    // Constructed before the thread's first call into lfcore, so destroyed
    // after the registry's exit hook (thread_locals end in reverse order).
    static thread_local late_user late;
    (void)&late;
    ASSERT_NE(domain->thread_cached<kept<0>>(), nullptr);
  }).join();
  EXPECT_EQ(made_late.load(), 1) << "the object the exit hook destroyed was handed out";
  EXPECT_EQ(kept_live.load(), 0) << "the late one went with the late id's own exit hook";
}

// What a container's operation leases (detail/guard_lease.hpp).
struct lent_guard {
  explicit lent_guard(hazard_pointer_domain& d) : hp(make_hazard_pointer(d)) {}
  hazard_pointer hp;
  void reset() noexcept { hp.reset_protection(); }
};
using lease = lfcore::detail::guard_lease<lfcore::hazard_pointer_reclamation, lent_guard>;

// A lease lends the thread's kept guard; one taken inside it (a callback
// calling into another container) gets a fresh guard, whose end leaves the
// outer protection in place; the outer's end clears it and frees the kept
// guard for the next lease.
TEST_F(HazardPointer, ALeaseLendsTheKeptGuardAndANestedLeaseAFreshOne) {
  hazard_pointer_domain domain(eager());
  std::atomic<node*> src{new node(1)};
  lent_guard* kept_guard = domain.thread_cached<lent_guard>();
  ASSERT_NE(kept_guard, nullptr);
  {
    lease outer(domain);
    EXPECT_EQ(&*outer, kept_guard);
    node* n = outer->hp.protect(src);
    {
      lease inner(domain);
      EXPECT_NE(&*inner, kept_guard) << "the kept guard is in use";
      EXPECT_EQ(inner->hp.protect(src), n);
    }
    src.store(nullptr);
    n->retire({}, domain);
    domain.reclaim();
    EXPECT_EQ(live_nodes.load(), 1) << "the nested lease's end cleared the outer protection";
  }
  domain.reclaim();
  EXPECT_EQ(live_nodes.load(), 0) << "the lease's end left its protection behind";
  lease again(domain);
  EXPECT_EQ(&*again, kept_guard) << "the kept guard stayed marked as in use";
}

TEST_F(HazardPointer, InvalidConfigIsRejected) {
  hazard_pointer_domain::config_type c;
  c.scan_multiplier = 1;
  EXPECT_THROW(hazard_pointer_domain{c}, std::invalid_argument);
}

TEST_F(HazardPointer, GarbageBoundFollowsTheConfig) {
  hazard_pointer_domain::config_type c;
  c.scan_threshold = 500;
  hazard_pointer_domain domain(c);
  lfcore::thread_registry::current_id(); // this thread counts from now on
  const auto threads = lfcore::thread_registry::high_water();
  ASSERT_GE(threads, 1u);
  EXPECT_EQ(domain.garbage_bound(), threads * 500u);
  std::vector<hazard_pointer> many;
  for (int i = 0; i < 300; ++i) many.push_back(make_hazard_pointer(domain));
  EXPECT_EQ(domain.garbage_bound(), threads * 2u * domain.stats().hazard_records)
      << "R grows with the hazard records: scan_multiplier * H";
}

} // namespace
