// Word frequencies of a text, counted by the threads of a work_stealing_pool
// into one lfcore::hash_trie_map, in the two ways the map offers:
// * a count kept in place: the value holds a mutable std::atomic bumped
//   through visit() (an element never moves while it is in the map), and
//   try_emplace_and_visit() from the word's std::string_view inserts a word
//   seen for the first time - the only time a std::string is built - or
//   bumps the element another thread inserted meanwhile;
// * upsert(word, f, 1): read-copy-update, one new element per count. It is
//   the general tool (values replaced whole: records, strings), and the
//   slower one for counters (bench/results/README.md, "Counting").
// Both counts are checked against a sequential std::unordered_map, and the
// ten most frequent words printed.
//
//   word_count [--threads N] [--words N] [FILE]
//
// Without FILE, a generated text of --words words (default two million; a
// vocabulary of 50,000 made-up words, frequencies roughly Zipf's law).
// --threads defaults to the number of CPUs. A word is a run of ASCII letters,
// lowercased. The exit status is 1 if a count differs from the sequential
// one, 2 on bad arguments.
#include <lfcore/hash_trie_map.hpp>
#include <lfcore/work_stealing_pool.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

// Transparent, so that a std::string_view finds a std::string key.
struct text_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>()(s);
  }
};

struct counter {
  explicit counter(long first) : n(first) {}
  mutable std::atomic<long> n; // mutable: the map hands out const elements
};
using in_place_counts = lfcore::hash_trie_map<std::string, counter, text_hash, std::equal_to<>>;
using upserted_counts = lfcore::hash_trie_map<std::string, long, text_hash, std::equal_to<>>;

void count_in_place(in_place_counts& counts, std::string_view word) {
  // relaxed: a count orders nothing else; the pool's join publishes them.
  const auto bump = [](const auto& kv) { kv.second.n.fetch_add(1, std::memory_order_relaxed); };
  if (counts.visit(word, bump)) return; // a word seen before: a read-only search
  counts.try_emplace_and_visit(
      word,
      [&](const auto& kv, bool inserted) {
        if (!inserted) bump(kv);
      },
      1L);
}

void count_by_upsert(upserted_counts& counts, std::string_view word) {
  const auto add_one = [](long n) { return n + 1; };
  counts.upsert(word, add_one, 1L); // 1 for a new word
}

bool is_letter(char c) { // ASCII: c | 0x20 lowercases A-Z and nothing into a-z
  return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

// Calls f(word) for each word of text, lowercased into a reused buffer.
template <class F>
void for_each_word(std::string_view text, F f) {
  std::string word;
  for (char c : text) {
    if (is_letter(c)) {
      word += static_cast<char>(c | 0x20);
    } else if (!word.empty()) {
      f(std::string_view(word));
      word.clear();
    }
  }
  if (!word.empty()) f(std::string_view(word));
}

std::string generated_text(std::size_t words, std::size_t vocabulary) {
  std::uint64_t state = 2026;
  auto next = [&state] { // splitmix64
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::string text;
  for (std::size_t i = 0; i < words; ++i) {
    // vocabulary^u - 1 for u uniform in [0, 1): log-uniform ranks, which is
    // Zipf's law with exponent 1.
    const double u = static_cast<double>(next() >> 11) * 0x1.0p-53;
    auto rank = static_cast<std::size_t>(std::pow(static_cast<double>(vocabulary), u)) - 1;
    static constexpr const char* syllables[16] = {"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo",
                                                  "ze", "po", "da", "fe", "gu", "hi", "jo", "bu"};
    do { // the rank's hexadecimal digits as syllables: ka, lo, ..., kalo, ...
      text += syllables[rank % 16];
      rank /= 16;
    } while (rank != 0);
    text += (i % 12 == 11) ? ".\n" : " ";
  }
  return text;
}

// [begin, end) offsets of pieces of about `size` bytes, cut at non-letters.
std::vector<std::pair<std::size_t, std::size_t>> pieces_of(std::string_view text,
                                                           std::size_t size) {
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = std::min(text.size(), begin + size);
    while (end < text.size() && is_letter(text[end])) ++end;
    pieces.emplace_back(begin, end);
    begin = end;
  }
  return pieces;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

int main(int argc, char** argv) {
  unsigned long threads = 0, generated_words = 2'000'000;
  const char* file = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    unsigned long* number = arg == "--threads" ? &threads
                            : arg == "--words" ? &generated_words
                                               : nullptr;
    if (number != nullptr && i + 1 < argc) {
      char* end = nullptr;
      *number = std::strtoul(argv[++i], &end, 10);
      if (*end == '\0') continue;
    } else if (number == nullptr && !arg.starts_with("--") && file == nullptr) {
      file = argv[i];
      continue;
    }
    std::fprintf(stderr, "usage: word_count [--threads N] [--words N] [FILE]\n");
    return 2;
  }
  std::string text;
  if (file != nullptr) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "word_count: cannot read %s\n", file);
      return 2;
    }
    std::ostringstream all;
    all << in.rdbuf();
    text = std::move(all).str();
  } else {
    text = generated_text(generated_words, 50'000);
  }
  lfcore::work_stealing_pool pool(static_cast<unsigned>(threads));
  const auto pieces = pieces_of(text, 64 * 1024);

  std::unordered_map<std::string, long> expected;
  auto start = std::chrono::steady_clock::now();
  for_each_word(text, [&](std::string_view w) { ++expected[std::string(w)]; });
  const double sequential = seconds_since(start);

  // Sized as reserve() would be: from the reference count here; a program
  // without one gives its estimate (a map that outgrows its root slows).
  const auto shape = lfcore::hash_trie_config::for_expected_size(expected.size());
  in_place_counts in_place(shape);
  upserted_counts upserted(shape);
  auto count_all = [&](auto& counts, auto count_word) {
    start = std::chrono::steady_clock::now();
    lfcore::parallel_for(pool, 0, pieces.size(), 1, [&](std::size_t i) {
      const auto [begin, end] = pieces[i];
      for_each_word(std::string_view(text).substr(begin, end - begin),
                    [&](std::string_view w) { count_word(counts, w); });
    });
    return seconds_since(start);
  };
  const double in_place_time = count_all(in_place, count_in_place);
  const double upsert_time = count_all(upserted, count_by_upsert);

  long words = 0, wrong = 0;
  for (const auto& [word, n] : expected) {
    words += n;
    long seen = -1;
    in_place.visit(word, [&](const auto& kv) { seen = kv.second.n.load(); });
    wrong += seen != n;
    const auto it = upserted.find(word);
    wrong += it == upserted.end() || it->second != n;
  }
  wrong += in_place.size() != expected.size();
  wrong += upserted.size() != expected.size();

  std::printf("%ld words, %zu distinct, %zu pieces, %u threads\n", words, expected.size(),
              pieces.size(), pool.size());
  std::printf("one run, not a benchmark: sequential std::unordered_map %.3f s; in place %.3f s; "
              "upsert %.3f s\n",
              sequential, in_place_time, upsert_time);
  // Copies of the words: an element is kept alive only while an iterator
  // (or visit) holds it.
  std::vector<std::pair<long, std::string>> top;
  for (const auto& kv : in_place) top.emplace_back(kv.second.n.load(), kv.first);
  const auto shown =
      top.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(10, top.size()));
  std::partial_sort(top.begin(), shown, top.end(), std::greater<>());
  for (auto it = top.begin(); it != shown; ++it)
    std::printf("%10ld  %s\n", it->first, it->second.c_str());
  if (wrong != 0) {
    std::printf("%ld counts differ from the sequential count\n", wrong);
    return 1;
  }
  std::printf("every count matches the sequential count\n");
  return 0;
}
