// tests/fuzz/atoms_fuzz.cpp - the atom table's C API (lfcore_atoms.h) against
// a model, one thread.
//
// The input is a program of calls: interning (permanent or referenced, with
// or without UTF-8 validation, texts of any bytes, NUL included), lookups,
// names, iteration, references, collection, properties, functors, and each
// misuse the header lists. Checked: every status and output; that a handle
// names its text for as long as the rules say it is valid; that collect()
// frees exactly the atoms neither permanent nor referenced; and that UTF-8
// validation agrees with a second, independent decoder (below) on every
// byte string, at the same offset. Any call can also meet a failing
// allocation (failing_new.hpp): it must then return LFCORE_ATOM_ENOMEM and
// change nothing (collect: it may have collected some atoms).
#include "failing_new.hpp"
#include "fuzz_input.hpp"

#include <lfcore/atom_table.hpp>
#include <lfcore_atoms.h>

#include <lfcore/detail/utf8.hpp>
#include <lfcore/hazard_pointer.hpp>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>

namespace {

// The offset of the first ill-formed sequence, by decoding code points and
// checking them (RFC 3629: shortest form, no surrogates, at most U+10FFFF),
// where lfcore's validator checks byte ranges (Unicode's Table 3-7).
std::size_t reference_utf8_error(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto lead = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (lead < 0x80)
      len = 1, cp = lead;
    else if ((lead >> 5) == 0x6)
      len = 2, cp = lead & 0x1Fu;
    else if ((lead >> 4) == 0xE)
      len = 3, cp = lead & 0x0Fu;
    else if ((lead >> 3) == 0x1E)
      len = 4, cp = lead & 0x07u;
    else
      return i;
    // A truncated or broken sequence is ill-formed from its lead byte on.
    if (s.size() - i < len) return i;
    for (std::size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c >> 6) != 0x2) return i;
      cp = cp << 6 | (c & 0x3Fu);
    }
    constexpr std::uint32_t shortest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < shortest[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

class session {
  struct atom_model {
    lfcore_atom handle;
    bool permanent;
    unsigned refs;
    std::map<std::uint32_t, std::uintptr_t> properties;
    std::map<std::uint32_t, lfcore_functor> functors; // by arity
  };

public:
  explicit session(fuzz::input& in) : in_(in), table_(lfcore_atoms_create(in.byte())) {
    FUZZ_CHECK(table_ != nullptr);
  }
  session(const session&) = delete;
  session& operator=(const session&) = delete;
  ~session() { lfcore_atoms_destroy(table_); }

  void run() {
    while (!in_.empty()) step();
    check_all();
  }

private:
  // A text: a present atom's, or bytes of the input (NULs and invalid UTF-8
  // included), or a present atom's with one more byte.
  std::string pick_text() {
    switch (in_.below(3)) {
    case 0:
      if (!atoms_.empty()) return pick_atom()->first;
      [[fallthrough]];
    case 1:
      return std::string(in_.bytes(10));
    default:
      return (atoms_.empty() ? std::string() : pick_atom()->first) + char(in_.byte());
    }
  }
  std::map<std::string, atom_model>::iterator pick_atom() {
    auto it = atoms_.begin();
    std::advance(it, in_.below(atoms_.size()));
    return it;
  }
  std::uint32_t pick_kind() {
    constexpr std::uint32_t kinds[] = {0, LFCORE_PROPERTY_OP, LFCORE_PROPERTY_PREDICATE,
                                       LFCORE_PROPERTY_FUNCTOR, LFCORE_PROPERTY_FIRST_USER,
                                       LFCORE_PROPERTY_FIRST_USER + 1, 0xFFFFFFFFu};
    return kinds[in_.below(std::size(kinds))];
  }
  static bool reserved(std::uint32_t kind) { return kind == 0 || kind == LFCORE_PROPERTY_FUNCTOR; }

  void check_name(const std::string& text, lfcore_atom a) {
    std::size_t len = 0;
    const char* name = lfcore_atoms_name(a, &len);
    FUZZ_CHECK(name != nullptr && len == text.size());
    FUZZ_CHECK(std::memcmp(name, text.data(), len) == 0 && name[len] == '\0');
    FUZZ_CHECK(lfcore_atoms_name(a, nullptr) == name);
    FUZZ_CHECK(a % (1u << LFCORE_ATOM_FREE_LOW_BITS) == 0);
  }

  void step() {
    switch (in_.below(13)) {
    case 12:
      call_failing_allocation();
      break;
    case 0:
      intern();
      break;
    case 1: { // lookup: a reference for the caller, never an insert
      const std::string text = pick_text();
      lfcore_atom a = 0;
      const int status = lfcore_atoms_lookup(table_, text.data(), text.size(), &a);
      const auto m = atoms_.find(text);
      if (m == atoms_.end()) {
        FUZZ_CHECK(status == LFCORE_ATOM_ENOTFOUND && a == 0);
        break;
      }
      if (full(m->second)) {
        FUZZ_CHECK(status == LFCORE_ATOM_EOVERFLOW && a == 0);
        break;
      }
      FUZZ_CHECK(status == LFCORE_ATOM_OK && a == m->second.handle);
      if (!m->second.permanent) ++m->second.refs;
      break;
    }
    case 2:
      check_all();
      break;
    case 3:
      for_each_stopping_early();
      break;
    case 4:
    case 5: { // retain, release, make_permanent on a present atom
      if (atoms_.empty()) break;
      atom_model& m = pick_atom()->second;
      switch (in_.below(3)) {
      case 0:
        FUZZ_CHECK(lfcore_atoms_retain(table_, m.handle) ==
                   (full(m) ? LFCORE_ATOM_EOVERFLOW : LFCORE_ATOM_OK));
        if (!m.permanent && !full(m)) ++m.refs;
        break;
      case 1:
        if (m.permanent) {
          FUZZ_CHECK(lfcore_atoms_release(table_, m.handle) == LFCORE_ATOM_OK);
        } else if (m.refs == 0) {
          FUZZ_CHECK(lfcore_atoms_release(table_, m.handle) == LFCORE_ATOM_ENOREF);
        } else {
          FUZZ_CHECK(lfcore_atoms_release(table_, m.handle) == LFCORE_ATOM_OK);
          --m.refs;
        }
        break;
      default:
        FUZZ_CHECK(lfcore_atoms_make_permanent(table_, m.handle) == LFCORE_ATOM_OK);
        m.permanent = true;
        m.refs = 0;
        break;
      }
      break;
    }
    case 6: { // collect: exactly the atoms neither permanent nor referenced
      std::size_t expected =
          std::erase_if(atoms_, [](const auto& kv) { return !kv.second.permanent && kv.second.refs == 0; });
      std::size_t collected = ~std::size_t(0);
      FUZZ_CHECK(lfcore_atoms_collect(table_, in_.coin() ? &collected : nullptr) == LFCORE_ATOM_OK);
      FUZZ_CHECK(collected == expected || collected == ~std::size_t(0));
      if (in_.coin()) lfcore::hazard_pointer_default_domain().reclaim();
      break;
    }
    case 7:
      property();
      break;
    case 8:
      functor();
      break;
    case 9:
      misuse();
      break;
    case 10:
      too_long();
      break;
    case 11: { // the validator against the reference decoder, on any bytes
      const std::string_view s = in_.bytes(16);
      FUZZ_CHECK(lfcore::detail::utf8_error_offset(s) == reference_utf8_error(s));
      break;
    }
    }
  }

  // One call whose k-th allocation fails, sometimes on a new thread (which
  // also allocates its hazard records): LFCORE_ATOM_ENOMEM and no change, or
  // success as usual. (The model allocates only outside the armed scope.)
  void call_failing_allocation() {
    const int fail_at = 1 + static_cast<int>(in_.below(8));
    const bool new_thread = in_.below(8) == 0;
    const std::string text = pick_text();
    const unsigned which = atoms_.empty() ? 0 : in_.below(5);
    atom_model* m = which >= 2 ? &pick_atom()->second : nullptr;
    const std::uint32_t kind = LFCORE_PROPERTY_FIRST_USER + in_.below(2);
    const std::uint32_t arity = in_.below(3);
    const unsigned flags = in_.below(2); // permanent or LFCORE_ATOM_REF
    lfcore_atom a = 0;
    lfcore_functor f = 0;
    std::size_t collected = 0;
    int status = LFCORE_ATOM_OK;
    const auto call = [&] {
      fuzz::failing_new armed(fail_at);
      switch (which) {
      case 0:
        status = lfcore_atoms_intern(table_, text.data(), text.size(), flags, &a);
        break;
      case 1:
        status = lfcore_atoms_collect(table_, &collected);
        break;
      case 2:
        status = lfcore_atoms_set_property(table_, m->handle, kind, 7);
        break;
      case 3:
        status = lfcore_atoms_remove_property(table_, m->handle, kind);
        break;
      default:
        status = lfcore_atoms_functor(table_, m->handle, arity, &f);
      }
    };
    if (new_thread)
      std::thread(call).join();
    else
      call();
    const bool overflows = which == 0 && (flags & LFCORE_ATOM_REF) != 0 && full(text);
    FUZZ_CHECK(status == (overflows ? LFCORE_ATOM_EOVERFLOW : LFCORE_ATOM_OK) ||
               status == LFCORE_ATOM_ENOMEM || (which == 3 && status == LFCORE_ATOM_ENOTFOUND));
    const bool failed = status == LFCORE_ATOM_ENOMEM;
    switch (which) {
    case 0:
      if (status != LFCORE_ATOM_OK) {
        FUZZ_CHECK(a == 0);
      } else {
        interned(text, a, (flags & LFCORE_ATOM_REF) != 0);
      }
      break;
    case 1: // collect is not atomic: on failure, some collectable atoms may be gone
      if (!failed) {
        FUZZ_CHECK(collected == std::erase_if(atoms_, [](const auto& kv) {
                     return !kv.second.permanent && kv.second.refs == 0;
                   }));
      } else {
        std::set<lfcore_atom> present;
        lfcore_atoms_for_each(
            table_,
            [](lfcore_atom x, void* ctx) {
              static_cast<std::set<lfcore_atom>*>(ctx)->insert(x);
              return 0;
            },
            &present);
        std::erase_if(atoms_, [&](const auto& kv) {
          const bool collectable = !kv.second.permanent && kv.second.refs == 0;
          FUZZ_CHECK(collectable || present.count(kv.second.handle) == 1);
          return collectable && present.count(kv.second.handle) == 0;
        });
      }
      break;
    case 2:
      if (!failed) m->properties[kind] = 7;
      break;
    case 3:
      FUZZ_CHECK(status == (m->properties.count(kind) != 0 ? LFCORE_ATOM_OK
                                                           : LFCORE_ATOM_ENOTFOUND) ||
                 failed);
      if (status == LFCORE_ATOM_OK) m->properties.erase(kind);
      break;
    default:
      if (!failed) {
        auto [known, created] = m->functors.try_emplace(arity, f);
        FUZZ_CHECK(known->second == f);
      }
    }
    check_all(); // which also reads every property below
    for (const auto& [t, am] : atoms_)
      for (const std::uint32_t k : {LFCORE_PROPERTY_FIRST_USER, LFCORE_PROPERTY_FIRST_USER + 1}) {
        std::uintptr_t v = 0;
        const auto p = am.properties.find(k);
        FUZZ_CHECK(lfcore_atoms_get_property(table_, am.handle, k, &v) ==
                   (p != am.properties.end() ? LFCORE_ATOM_OK : LFCORE_ATOM_ENOTFOUND));
        FUZZ_CHECK(p == am.properties.end() || v == p->second);
      }
  }

  void intern() {
    const std::string text = pick_text();
    unsigned flags = in_.below(4); // LFCORE_ATOM_REF | LFCORE_ATOM_UTF8
    const bool bad_flag = in_.below(16) == 0;
    if (bad_flag) flags |= 4u << in_.below(8);
    lfcore_atom a = 0;
    const int status = lfcore_atoms_intern(table_, text.data(), text.size(), flags, &a);
    if (bad_flag) {
      FUZZ_CHECK(status == LFCORE_ATOM_EINVAL && a == 0);
      return;
    }
    if ((flags & LFCORE_ATOM_UTF8) != 0 && reference_utf8_error(text) != std::string_view::npos) {
      FUZZ_CHECK(status == LFCORE_ATOM_EUTF8 && a == 0);
      return;
    }
    if ((flags & LFCORE_ATOM_REF) != 0 && full(text)) {
      FUZZ_CHECK(status == LFCORE_ATOM_EOVERFLOW && a == 0);
      return;
    }
    FUZZ_CHECK(status == LFCORE_ATOM_OK && a != 0);
    interned(text, a, (flags & LFCORE_ATOM_REF) != 0);
    check_name(text, a);
  }

  // A call that takes a reference to an atom that holds max_references
  // already (64 in the stress builds that fuzz) is LFCORE_ATOM_EOVERFLOW.
  static bool full(const atom_model& m) {
    return !m.permanent && m.refs == lfcore::atom_table::max_references;
  }
  bool full(const std::string& text) const {
    const auto m = atoms_.find(text);
    return m != atoms_.end() && full(m->second);
  }

  // The model after a successful intern of text that gave atom a.
  void interned(const std::string& text, lfcore_atom a, bool counted) {
    auto [m, created] = atoms_.try_emplace(text, atom_model{a, false, 0, {}, {}});
    FUZZ_CHECK(m->second.handle == a); // the same atom for the same text
    if (!counted)
      m->second.permanent = true, m->second.refs = 0; // intern pins it
    else if (!m->second.permanent)
      ++m->second.refs; // a reference for the caller
  }

  void check_all() {
    FUZZ_CHECK(lfcore_atoms_size(table_) == atoms_.size());
    std::set<lfcore_atom> seen;
    FUZZ_CHECK(lfcore_atoms_for_each(
                   table_,
                   [](lfcore_atom a, void* ctx) {
                     FUZZ_CHECK(static_cast<std::set<lfcore_atom>*>(ctx)->insert(a).second);
                     return 0;
                   },
                   &seen) == 0);
    FUZZ_CHECK(seen.size() == atoms_.size());
    for (const auto& [text, m] : atoms_) {
      FUZZ_CHECK(seen.count(m.handle) == 1);
      check_name(text, m.handle);
    }
  }

  void for_each_stopping_early() {
    struct visits {
      std::size_t stop_after, seen;
    } v{in_.below(6), 0};
    const int r = lfcore_atoms_for_each(
        table_,
        [](lfcore_atom, void* ctx) {
          auto& n = *static_cast<visits*>(ctx);
          return ++n.seen > n.stop_after ? -9 : 0;
        },
        &v);
    const bool stopped = atoms_.size() > v.stop_after;
    FUZZ_CHECK(r == (stopped ? -9 : 0));
    FUZZ_CHECK(v.seen == (stopped ? v.stop_after + 1 : atoms_.size()));
  }

  void property() {
    if (atoms_.empty()) return;
    atom_model& m = pick_atom()->second;
    const std::uint32_t kind = pick_kind();
    const std::uintptr_t value = in_.u64();
    auto p = m.properties.find(kind);
    const bool present = p != m.properties.end();
    std::uintptr_t got = 0;
    switch (in_.below(4)) {
    case 0: {
      const int status = lfcore_atoms_add_property(table_, m.handle, kind, value);
      if (reserved(kind))
        FUZZ_CHECK(status == LFCORE_ATOM_EINVAL);
      else if (present)
        FUZZ_CHECK(status == LFCORE_ATOM_EEXIST);
      else {
        FUZZ_CHECK(status == LFCORE_ATOM_OK);
        m.properties.emplace(kind, value);
      }
      break;
    }
    case 1: {
      const int status = lfcore_atoms_set_property(table_, m.handle, kind, value);
      FUZZ_CHECK(status == (reserved(kind) ? LFCORE_ATOM_EINVAL : LFCORE_ATOM_OK));
      if (!reserved(kind)) m.properties[kind] = value;
      break;
    }
    case 2: {
      const int status = lfcore_atoms_get_property(table_, m.handle, kind, &got);
      if (reserved(kind))
        FUZZ_CHECK(status == LFCORE_ATOM_EINVAL);
      else if (!present)
        FUZZ_CHECK(status == LFCORE_ATOM_ENOTFOUND && got == 0);
      else
        FUZZ_CHECK(status == LFCORE_ATOM_OK && got == p->second);
      break;
    }
    default: {
      const int status = lfcore_atoms_remove_property(table_, m.handle, kind);
      if (reserved(kind))
        FUZZ_CHECK(status == LFCORE_ATOM_EINVAL);
      else if (!present)
        FUZZ_CHECK(status == LFCORE_ATOM_ENOTFOUND);
      else {
        FUZZ_CHECK(status == LFCORE_ATOM_OK);
        m.properties.erase(p);
      }
      break;
    }
    }
  }

  void functor() {
    if (atoms_.empty()) return;
    atom_model& m = pick_atom()->second;
    const std::uint32_t arity = in_.coin() ? in_.below(4) : static_cast<std::uint32_t>(in_.u64());
    lfcore_functor f = 0;
    FUZZ_CHECK(lfcore_atoms_functor(table_, m.handle, arity, &f) == LFCORE_ATOM_OK && f != 0);
    auto [known, created] = m.functors.try_emplace(arity, f);
    FUZZ_CHECK(known->second == f); // the same functor for the same name/arity
    FUZZ_CHECK(lfcore_functor_name(f) == m.handle && lfcore_functor_arity(f) == arity);
    FUZZ_CHECK(f % (1u << LFCORE_ATOM_FREE_LOW_BITS) == 0);
    if (created) // distinct from every other functor of any atom
      for (const auto& [text, other] : atoms_)
        for (const auto& [ar, g] : other.functors)
          FUZZ_CHECK(g != f || (&other == &m && ar == arity));
  }

  // Each misuse the header lists: LFCORE_ATOM_EINVAL, and nothing changes.
  void misuse() {
    lfcore_atom a = atoms_.empty() ? 0 : pick_atom()->second.handle;
    lfcore_atom out = 0;
    lfcore_functor f = 0;
    std::uintptr_t value = 0;
    std::size_t collected = 0;
    constexpr char text[] = "x";
    switch (in_.below(12)) {
    case 0:
      FUZZ_CHECK(lfcore_atoms_intern(nullptr, text, 1, 0, &out) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_intern(table_, text, 1, 0, nullptr) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_intern(table_, nullptr, 1 + in_.byte(), 0, &out) ==
                 LFCORE_ATOM_EINVAL);
      break;
    case 1:
      FUZZ_CHECK(lfcore_atoms_lookup(nullptr, text, 1, &out) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_lookup(table_, text, 1, nullptr) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_lookup(table_, nullptr, 1, &out) == LFCORE_ATOM_EINVAL);
      break;
    case 2:
      FUZZ_CHECK(lfcore_atoms_retain(nullptr, a) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_retain(table_, 0) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_release(nullptr, a) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_release(table_, 0) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_make_permanent(nullptr, a) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_make_permanent(table_, 0) == LFCORE_ATOM_EINVAL);
      break;
    case 3:
      FUZZ_CHECK(lfcore_atoms_collect(nullptr, &collected) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_size(nullptr) == 0);
      lfcore_atoms_destroy(nullptr); // a no-op
      break;
    case 4:
      FUZZ_CHECK(lfcore_atoms_for_each(nullptr, [](lfcore_atom, void*) { return 0; }, nullptr) ==
                 LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_for_each(table_, nullptr, nullptr) == LFCORE_ATOM_EINVAL);
      break;
    case 5:
      FUZZ_CHECK(lfcore_atoms_add_property(nullptr, a, 16, 1) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_add_property(table_, 0, 16, 1) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_set_property(nullptr, a, 16, 1) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_set_property(table_, 0, 16, 1) == LFCORE_ATOM_EINVAL);
      break;
    case 6:
      FUZZ_CHECK(lfcore_atoms_get_property(nullptr, a, 16, &value) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_get_property(table_, 0, 16, &value) == LFCORE_ATOM_EINVAL);
      if (a != 0)
        FUZZ_CHECK(lfcore_atoms_get_property(table_, a, 16, nullptr) == LFCORE_ATOM_EINVAL);
      break;
    case 7:
      FUZZ_CHECK(lfcore_atoms_remove_property(nullptr, a, 16) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_remove_property(table_, 0, 16) == LFCORE_ATOM_EINVAL);
      break;
    case 8:
      FUZZ_CHECK(lfcore_atoms_functor(nullptr, a, 1, &f) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_atoms_functor(table_, 0, 1, &f) == LFCORE_ATOM_EINVAL);
      if (a != 0) FUZZ_CHECK(lfcore_atoms_functor(table_, a, 1, nullptr) == LFCORE_ATOM_EINVAL);
      FUZZ_CHECK(lfcore_functor_name(0) == 0 && lfcore_functor_arity(0) == 0);
      break;
    case 9:
      FUZZ_CHECK(lfcore_atoms_name(0, nullptr) == nullptr);
      break;
    case 10: { // every status has its own message; an unknown one says so
      const int codes[] = {LFCORE_ATOM_OK,       LFCORE_ATOM_EINVAL, LFCORE_ATOM_EUTF8,
                           LFCORE_ATOM_ETOOLONG, LFCORE_ATOM_ENOMEM, LFCORE_ATOM_ENOTFOUND,
                           LFCORE_ATOM_EEXIST,   LFCORE_ATOM_ENOREF, LFCORE_ATOM_EOVERFLOW};
      std::set<std::string> messages;
      for (const int c : codes) messages.insert(lfcore_atoms_strerror(c));
      FUZZ_CHECK(messages.size() == std::size(codes));
      const int unknown = static_cast<int>(in_.u64() % 1000) + 1;
      FUZZ_CHECK(std::string(lfcore_atoms_strerror(unknown)) == "unknown status");
      break;
    }
    default: // empty text: NULL is allowed when the length is 0
      FUZZ_CHECK(lfcore_atoms_lookup(table_, nullptr, 0, &out) ==
                 (atoms_.count("") == 0 ? LFCORE_ATOM_ENOTFOUND
                  : full("")            ? LFCORE_ATOM_EOVERFLOW
                                        : LFCORE_ATOM_OK));
      if (atoms_.count("") != 0 && !atoms_[""].permanent && !full("")) ++atoms_[""].refs;
      break;
    }
    FUZZ_CHECK(out == 0 || atoms_.count("") != 0);
    FUZZ_CHECK(f == 0 && value == 0);
  }

  // A length beyond LFCORE_ATOM_MAX_LENGTH is refused before any byte is
  // read (the buffer here is one byte: AddressSanitizer would see a read).
  void too_long() {
    const char one = 'x';
    const std::size_t len = LFCORE_ATOM_MAX_LENGTH + 1 + in_.below(4);
    lfcore_atom out = 0;
    FUZZ_CHECK(lfcore_atoms_intern(table_, &one, len, in_.below(4), &out) ==
               LFCORE_ATOM_ETOOLONG);
    FUZZ_CHECK(lfcore_atoms_lookup(table_, &one, len, &out) == LFCORE_ATOM_ETOOLONG);
    FUZZ_CHECK(out == 0);
  }

  fuzz::input& in_;
  lfcore_atom_table* table_;
  std::map<std::string, atom_model> atoms_;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::input in(data, size);
  session(in).run();
  // Collected atoms were retired; reclaim them so that each input ends clean.
  lfcore::hazard_pointer_default_domain().reclaim();
  return 0;
}
