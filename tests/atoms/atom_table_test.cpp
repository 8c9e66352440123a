#include <lfcore/atom_table.hpp>
#include <lfcore/config.hpp>
#include <lfcore_atoms.h>

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

using lfcore::atom;
using lfcore::atom_table;
using lfcore::functor;
using namespace std::string_literals;

namespace {

std::vector<std::string> names_of(const atom_table& t) {
  std::vector<std::string> out;
  t.for_each([&](atom a) { out.emplace_back(atom_table::name(a)); });
  return out;
}

std::string text_of(int i) {
  return "atom_" + std::to_string(i) + (i % 3 == 0 ? "_with_a_long_tail" : "");
}

} // namespace

// The concurrent tests run on a growing table (no size hint) and on a sized
// one, whose inserts link new atoms at their chain's head (a small hint, so
// that its chains still fill and close).
class AtomTableSizes : public ::testing::TestWithParam<std::size_t> {};
static std::string hint_name(const ::testing::TestParamInfo<std::size_t>& p) {
  return p.param == 0 ? "growing" : "sized";
}
INSTANTIATE_TEST_SUITE_P(Hint, AtomTableSizes, ::testing::Values(0, 64), hint_name);

TEST(AtomTable, InternIsGetOrInsert) {
  atom_table t;
  const atom a = t.intern("hello");
  const atom b = t.intern("world");
  EXPECT_NE(a, b);
  EXPECT_EQ(t.intern("hello"), a);
  EXPECT_EQ(atom_table::name(a), "hello");
  EXPECT_STREQ(atom_table::c_str(b), "world");
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.find("hello"), a);
  EXPECT_EQ(t.find("absent"), std::nullopt);
  EXPECT_EQ(t.size(), 2u); // find never inserts
}

TEST(AtomTable, TextsOfEveryShape) {
  atom_table t;
  // Empty, NUL bytes, every length around the entry's alignment, and large.
  std::vector<std::string> texts = {"", "\0"s, "a\0b"s, std::string(100'000, 'y'),
                                    "\xff\xfe not UTF-8 is fine here"};
  for (std::size_t n = 5; n <= 40; ++n) texts.push_back(std::string(n, 'x'));
  std::vector<atom> atoms;
  for (const auto& s : texts) atoms.push_back(t.intern(s));
  EXPECT_EQ(t.size(), texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(atom_table::name(atoms[i]), texts[i]) << i;
    EXPECT_EQ(atom_table::c_str(atoms[i])[texts[i].size()], '\0') << i;
    EXPECT_EQ(t.intern(texts[i]), atoms[i]) << i;
  }
}

// prefetch only reads ahead: on texts present or absent, of any length, it
// inserts nothing and changes no answer (and, under the sanitizers, reads
// nothing it must not, through levels in the growing table).
TEST_P(AtomTableSizes, PrefetchChangesNothing) {
  atom_table t(GetParam());
  std::vector<atom> atoms;
  for (int i = 0; i < 2000; ++i) atoms.push_back(t.intern(text_of(i)));
  const std::vector<std::string> texts = {
      "", text_of(7), text_of(1999), text_of(5000), std::string(100'000, 'z'), "a\0b"s};
  for (const std::string& s : texts) t.prefetch(s);
  const std::vector<std::string_view> views(texts.begin(), texts.end());
  t.prefetch(views);
  t.prefetch(std::span<const std::string_view>());
  EXPECT_EQ(t.size(), 2000u);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(t.find(text_of(i)), atoms[i]) << i;
  EXPECT_EQ(t.find(text_of(5000)), std::nullopt);
  EXPECT_EQ(t.find(""), std::nullopt);
}

TEST(AtomTable, HandlesAreTaggableWords) {
  atom_table t;
  for (int i = 0; i < 1000; ++i) {
    const atom a = t.intern(text_of(i));
    EXPECT_EQ(a.bits() & ((1u << atom::free_low_bits) - 1), 0u);
    EXPECT_EQ(atom::from_bits(a.bits()), a);
  }
  EXPECT_FALSE(atom());
  EXPECT_FALSE(atom::from_bits(0));
}

TEST(AtomTable, RejectsTooLongText) {
  atom_table t;
  const char byte = 'x';
  // Checked before the text is read, so a short buffer is enough.
  const std::string_view huge(&byte, atom_table::max_length + 1);
  EXPECT_THROW(t.intern(huge), std::length_error);
  EXPECT_EQ(t.size(), 0u);
}

TEST(AtomTable, Utf8Validation) {
  struct bad_case {
    std::string text;
    std::size_t offset;
  };
  const std::vector<bad_case> bad = {
      {"\x80", 0},             // stray continuation byte
      {"ab\xc0\x80", 2},       // overlong NUL
      {"\xc1\xbf", 0},         // overlong
      {"\xe0\x80\x80", 0},     // overlong 3-byte
      {"\xed\xa0\x80", 0},     // UTF-16 surrogate
      {"\xf0\x80\x80\x80", 0}, // overlong 4-byte
      {"\xf4\x90\x80\x80", 0}, // above U+10FFFF
      {"\xf5\x80\x80\x80", 0}, // never valid
      {"ok\xe2\x82", 2},       // truncated
      {"\xe2\x28\xa1", 0},     // bad continuation
      {"caf\xc3\xa9\xff", 5},  // valid, then 0xFF
  };
  atom_table t;
  for (const auto& c : bad) {
    try {
      t.intern_utf8(c.text);
      ADD_FAILURE() << "accepted invalid UTF-8 at case with offset " << c.offset;
    } catch (const lfcore::invalid_utf8& e) {
      EXPECT_EQ(e.offset(), c.offset);
    }
  }
  EXPECT_EQ(t.size(), 0u); // nothing interned
  for (const char* good : {"", "ascii", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                           "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf"})
    EXPECT_EQ(atom_table::name(t.intern_utf8(good)), good);
}

TEST(AtomTable, Properties) {
  atom_table t;
  const atom a = t.intern("+");
  constexpr lfcore::property_kind mine = lfcore::property::first_user;
  EXPECT_EQ(t.find_property(a, lfcore::property::op), std::nullopt);
  EXPECT_TRUE(t.add_property(a, lfcore::property::op, 500));
  EXPECT_FALSE(t.add_property(a, lfcore::property::op, 700)); // kind present: unchanged
  EXPECT_TRUE(t.add_property(a, mine, 42));
  EXPECT_EQ(t.find_property(a, lfcore::property::op), 500u);
  t.set_property(a, lfcore::property::op, 700);
  EXPECT_EQ(t.find_property(a, lfcore::property::op), 700u);
  EXPECT_EQ(t.find_property(a, mine), 42u);
  EXPECT_TRUE(t.remove_property(a, lfcore::property::op));
  EXPECT_FALSE(t.remove_property(a, lfcore::property::op));
  EXPECT_EQ(t.find_property(a, lfcore::property::op), std::nullopt);
  EXPECT_EQ(t.find_property(a, mine), 42u);
  // Misuse.
  EXPECT_THROW(t.add_property(a, 0, 1), std::invalid_argument);
  EXPECT_THROW(t.add_property(a, lfcore::property::functor, 1), std::invalid_argument);
  EXPECT_THROW(t.find_property(atom(), mine), std::invalid_argument);
}

TEST(AtomTable, Functors) {
  atom_table t;
  const atom foo = t.intern("foo");
  const functor f2 = t.functor_of(foo, 2);
  EXPECT_EQ(f2.name(), foo);
  EXPECT_EQ(f2.arity(), 2u);
  EXPECT_EQ(t.functor_of(foo, 2), f2);
  EXPECT_NE(t.functor_of(foo, 3), f2);
  EXPECT_NE(t.functor_of(t.intern("bar"), 2), f2);
  EXPECT_EQ(t.find_functor(foo, 2), f2);
  EXPECT_EQ(t.find_functor(foo, 7), std::nullopt);
  // Functors and properties share the block without disturbing each other.
  EXPECT_TRUE(t.add_property(foo, lfcore::property::predicate, 9));
  EXPECT_TRUE(t.remove_property(foo, lfcore::property::predicate));
  EXPECT_EQ(t.find_functor(foo, 2), f2);
  EXPECT_EQ(f2.bits() & 7u, 0u);
}

TEST(AtomTable, ReferencesAndCollection) {
  atom_table t;
  const atom keep = t.intern("permanent");
  const atom held = t.intern_ref("held");
  const atom dropped = t.intern_ref("dropped");
  EXPECT_TRUE(atom_table::is_permanent(keep));
  EXPECT_FALSE(atom_table::is_permanent(held));
  t.add_property(dropped, lfcore::property::op, 1); // freed with the atom
  t.functor_of(dropped, 1);
  t.release(dropped);
  EXPECT_THROW(t.release(dropped), std::logic_error); // no reference left
  EXPECT_EQ(t.collect(), 1u);
  EXPECT_EQ(t.find("dropped"), std::nullopt);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(atom_table::name(held), "held");
  EXPECT_EQ(t.collect(), 0u);

  // find() takes a reference too; release twice and the atom goes.
  std::optional<atom> again = t.find("held");
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, held);
  t.release(*again);
  t.release(held);
  EXPECT_EQ(t.collect(), 1u);
  EXPECT_EQ(t.size(), 1u);

  // A collected text comes back as a new atom.
  const atom reborn = t.intern_ref("dropped");
  EXPECT_EQ(atom_table::name(reborn), "dropped");
  EXPECT_EQ(t.find_property(reborn, lfcore::property::op), std::nullopt);
  t.make_permanent(reborn);
  t.release(reborn); // a no-op now
  EXPECT_EQ(t.collect(), 0u);
  // intern() of a counted atom pins it.
  const atom counted = t.intern_ref("counted");
  EXPECT_EQ(t.intern("counted"), counted);
  t.release(counted);
  EXPECT_EQ(t.collect(), 0u);
  EXPECT_EQ(t.size(), 3u);
  t.release(keep); // release on permanent atoms is always allowed
  EXPECT_THROW(t.release(atom()), std::invalid_argument);
}

// References stop at max_references: one more throws std::overflow_error
// (LFCORE_ATOM_EOVERFLOW from the C API) and takes nothing, however many
// threads race for the last ones. Stress builds (TSan, ASan) lower the limit
// to 64; reaching the others' 2^30 - 1 would take seconds, so they skip.
// An interpreter's per-thread state, a thread_local, releases its atoms as
// its thread ends, after the table's own per-thread state has gone: the
// releases and interns still work, and collect() then reclaims those atoms.
TEST(AtomTable, AThreadLocalMayReleaseItsAtomsAsTheThreadEnds) {
  static atom_table* table;
  struct interpreter_thread {
    std::vector<atom> held;
    ~interpreter_thread() {
      for (const atom a : held) table->release(a);
      const atom late = table->intern_ref("interned as the thread ends");
      EXPECT_EQ(table->name(late), "interned as the thread ends");
      table->release(late);
    }
  };
  atom_table t;
  table = &t;
  const atom permanent = t.intern("permanent");
  for (int round = 0; round < 3; ++round)
    std::thread([round] {
      static thread_local interpreter_thread state; // destroyed after the table's
      for (int i = 0; i < 50; ++i)
        state.held.push_back(
            table->intern_ref("thread " + std::to_string(round) + " atom " + std::to_string(i)));
    }).join();
  EXPECT_EQ(t.size(), 1u + 3 * 50 + 1);
  EXPECT_EQ(t.collect(), 3u * 50 + 1); // nothing referenced them any more
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.find("permanent"), permanent);
}

TEST(AtomTable, ReferencesStopAtTheLimit) {
  if (atom_table::max_references > 100000) GTEST_SKIP() << "only in stress builds";
  atom_table t;
  const atom a = t.intern_ref("popular");
  std::atomic<unsigned> taken{0}, refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (;;) {
        try {
          if (i % 2 == 0)
            t.retain(a);
          else
            EXPECT_EQ(t.find("popular"), a);
          taken.fetch_add(1);
        } catch (const std::overflow_error&) {
          refused.fetch_add(1);
          return;
        }
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(taken.load(), atom_table::max_references - 1);
  EXPECT_EQ(refused.load(), 4u);
  EXPECT_THROW(t.intern_ref("popular"), std::overflow_error);
  EXPECT_THROW(t.try_retain(a), std::overflow_error);
  for (std::uint32_t i = 0; i < atom_table::max_references; ++i) t.release(a);
  EXPECT_THROW(t.release(a), std::logic_error);
  EXPECT_EQ(t.collect(), 1u);

  lfcore_atom_table* c = lfcore_atoms_create(0);
  ASSERT_NE(c, nullptr);
  lfcore_atom ca = 0, other = 0;
  ASSERT_EQ(lfcore_atoms_intern(c, "x", 1, LFCORE_ATOM_REF, &ca), LFCORE_ATOM_OK);
  std::uint32_t held = 1;
  while (lfcore_atoms_retain(c, ca) == LFCORE_ATOM_OK) ++held;
  EXPECT_EQ(held, atom_table::max_references);
  EXPECT_EQ(lfcore_atoms_retain(c, ca), LFCORE_ATOM_EOVERFLOW);
  EXPECT_EQ(lfcore_atoms_intern(c, "x", 1, LFCORE_ATOM_REF, &other), LFCORE_ATOM_EOVERFLOW);
  EXPECT_EQ(lfcore_atoms_lookup(c, "x", 1, &other), LFCORE_ATOM_EOVERFLOW);
  EXPECT_EQ(other, 0u) << "outputs are left alone";
  for (; held > 0; --held) ASSERT_EQ(lfcore_atoms_release(c, ca), LFCORE_ATOM_OK);
  EXPECT_EQ(lfcore_atoms_release(c, ca), LFCORE_ATOM_ENOREF);
  lfcore_atoms_destroy(c);
}

TEST(AtomTable, IterationVisitsEachAtomOnce) {
  atom_table t;
  std::set<std::string> expected;
  for (int i = 0; i < 5000; ++i)
    expected.insert(std::string(atom_table::name(t.intern(text_of(i)))));
  const std::vector<std::string> seen = names_of(t);
  EXPECT_EQ(seen.size(), expected.size());
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), expected);
  int visited = 0;
  t.for_each([&](atom) { return ++visited < 10; }); // false stops
  EXPECT_EQ(visited, 10);
  EXPECT_THROW(t.for_each([](atom) { throw std::runtime_error("user"); }), std::runtime_error);
  EXPECT_EQ(t.size(), expected.size());
}

TEST_P(AtomTableSizes, ConcurrentInternAgreesOnEveryAtom) {
  atom_table t(GetParam());
  constexpr int threads = 4, texts = 20'000;
  std::vector<std::vector<atom>> got(threads, std::vector<atom>(texts));
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      for (int k = 0; k < texts; ++k) {
        const int i = (w % 2 == 0) ? k : texts - 1 - k; // half of them go backwards
        got[w][i] = t.intern(text_of(i));
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(t.size(), static_cast<std::size_t>(texts));
  for (int i = 0; i < texts; ++i) {
    ASSERT_EQ(atom_table::name(got[0][i]), text_of(i));
    for (int w = 1; w < threads; ++w) ASSERT_EQ(got[w][i], got[0][i]) << i;
  }
}

// Permanent atoms are carved from per-thread arena slots (64 of them), the
// rest come from operator new: more threads than slots, texts on both sides
// of the arena's largest block, and the same texts interned permanent by
// some threads while others take references, all agree and read back right.
TEST(AtomTable, ArenaAndHeapAtomsFromMoreThreadsThanSlots) {
  atom_table t;
  constexpr int threads = 80;
  const int texts = lfcore::stress_build ? 60 : 400;
  auto text = [](int i) {
    return std::to_string(i) + std::string(static_cast<std::size_t>(i * 7 % 1500), 'z');
  };
  std::vector<std::vector<atom>> got(threads, std::vector<atom>(static_cast<std::size_t>(texts)));
  std::atomic<int> alive{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      ++alive; // all alive at once: thread ids (arena slots) up to 80
      while (alive.load() < threads) std::this_thread::yield();
      for (int k = 0; k < texts; ++k) {
        const int i = (w % 2 == 0) ? k : texts - 1 - k;
        got[w][i] = (w % 3 == 0) ? t.intern_ref(text(i)) : t.intern(text(i));
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(t.size(), static_cast<std::size_t>(texts));
  for (int i = 0; i < texts; ++i) {
    ASSERT_EQ(atom_table::name(got[0][i]), text(i));
    for (int w = 1; w < threads; ++w) ASSERT_EQ(got[w][i], got[0][i]) << i;
  }
  for (int w = 0; w < threads; w += 3)
    for (const atom a : got[w]) t.release(a); // no-ops where the atom became permanent
  EXPECT_EQ(t.collect(), 0u);                 // every text was interned permanent by someone
  for (int i = 0; i < texts; ++i) ASSERT_EQ(atom_table::name(t.intern(text(i))), text(i));
}

TEST(AtomTable, ConcurrentFunctorsAndPropertiesHaveOneWinner) {
  atom_table t;
  const atom name = t.intern("f");
  constexpr int threads = 4, rounds = 200;
  std::vector<std::vector<functor>> got(threads, std::vector<functor>(rounds));
  std::atomic<int> added{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      for (int r = 0; r < rounds; ++r) {
        got[w][r] = t.functor_of(name, static_cast<std::uint32_t>(r));
        if (t.add_property(name, lfcore::property::first_user + static_cast<std::uint32_t>(r),
                           static_cast<std::uintptr_t>(w)))
          added.fetch_add(1);
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(added.load(), rounds);
  for (int r = 0; r < rounds; ++r) {
    EXPECT_EQ(got[0][r].arity(), static_cast<std::uint32_t>(r));
    for (int w = 1; w < threads; ++w) ASSERT_EQ(got[w][r], got[0][r]);
  }
}

// Collects a table again and again on a thread of its own until stopped.
class background_collector {
public:
  explicit background_collector(atom_table& t) : t_(t) {}
  ~background_collector() { stop(); }
  background_collector(const background_collector&) = delete;
  background_collector& operator=(const background_collector&) = delete;
  /// Stops the thread, collects once more and returns the atoms collected in all.
  std::size_t stop() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
      collected_ += t_.collect();
    }
    return collected_;
  }

private:
  atom_table& t_;
  std::atomic<bool> stop_{false};
  std::size_t collected_ = 0; // the thread's until joined
  std::thread thread_{[this] {
    while (!stop_.load()) collected_ += t_.collect();
  }};
};

// Interning, releasing and collecting at once: every atom a thread holds a
// reference to keeps its text and properties; at the end every counted atom
// is collected and only the permanent ones stay.
TEST_P(AtomTableSizes, CollectWhileOthersInternAndRelease) {
  atom_table t(GetParam());
  constexpr int threads = 3, texts = 300;
  const int rounds = lfcore::stress_build ? 2000 : 20000;
  for (int i = 0; i < texts; i += 10) t.intern(text_of(i)); // a few permanent ones
  background_collector collector(t);
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      std::vector<std::pair<atom, int>> held; // (atom, index of its text)
      for (int r = 0; r < rounds; ++r) {
        const int i = (r * 7 + w * 13) % texts;
        const atom a = t.intern_ref(text_of(i));
        ASSERT_EQ(atom_table::name(a), text_of(i));
        t.set_property(a, lfcore::property::first_user, static_cast<std::uintptr_t>(i));
        held.emplace_back(a, i);
        if (held.size() > 8) { // keep a few, check them, release the oldest
          const auto [old, j] = held.front();
          // Whoever set it, the value is its own text's index: the atom was
          // neither freed nor reused while held.
          ASSERT_EQ(atom_table::name(old), text_of(j));
          ASSERT_EQ(t.find_property(old, lfcore::property::first_user),
                    static_cast<std::uintptr_t>(j));
          ASSERT_EQ(t.functor_of(old, 2).name(), old);
          t.release(old);
          held.erase(held.begin());
        }
      }
      for (const auto& [a, j] : held) t.release(a);
    });
  for (auto& th : pool) th.join();
  EXPECT_GT(collector.stop(), 0u);
  EXPECT_EQ(t.size(), static_cast<std::size_t>(texts / 10));
  for (const std::string& s : names_of(t)) {
    std::optional<atom> a = t.find(s);
    ASSERT_TRUE(a);
    EXPECT_TRUE(atom_table::is_permanent(*a)) << s;
  }
}

// Interning the text of an atom being collected - killed, not yet unlinked:
// the intern unlinks the dead atom itself and makes a new one, and an atom a
// thread holds a reference to is the text's atom until released (another
// intern or find of the text returns it), whatever the collector does. Few
// texts, so that the collector's victims are the texts being interned.
TEST_P(AtomTableSizes, InterningTheTextOfAnAtomBeingCollected) {
  atom_table t(GetParam());
  constexpr int threads = 2, texts = 3;
  const int rounds = lfcore::stress_build ? 20'000 : 200'000;
  background_collector collector(t);
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      for (int r = 0; r < rounds; ++r) {
        const std::string text = text_of((r + w) % texts);
        const atom a = t.intern_ref(text);
        ASSERT_EQ(atom_table::name(a), text);
        const std::optional<atom> again = t.find(text);
        ASSERT_TRUE(again) << "a held atom's text was absent";
        ASSERT_EQ(*again, a) << "a held atom lost its text to another";
        t.release(*again);
        t.release(a);
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_GT(collector.stop(), 0u);
  EXPECT_EQ(t.size(), 0u);
}

TEST_P(AtomTableSizes, IterationUnderConcurrentInterning) {
  atom_table t(GetParam());
  constexpr int base = 2000, extra = 20'000;
  for (int i = 0; i < base; ++i) t.intern(text_of(i));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = base; i < base + extra && !stop.load(); ++i) t.intern(text_of(i));
  });
  for (int pass = 0; pass < 3; ++pass) {
    std::map<std::string, int> seen;
    t.for_each([&](atom a) { ++seen[std::string(atom_table::name(a))]; });
    for (const auto& [s, n] : seen) ASSERT_EQ(n, 1) << s;                      // never twice
    for (int i = 0; i < base; ++i) ASSERT_EQ(seen.count(text_of(i)), 1u) << i; // present throughout
  }
  stop = true;
  writer.join();
}
