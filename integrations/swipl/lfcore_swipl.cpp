// integrations/swipl/lfcore_swipl.cpp - lfcore as a SWI-Prolog foreign
// library: shared lock-free tables that every Prolog thread sees, and an
// lfcore atom table. Loaded by lfcore.pl (use_module(lfcore)); predicates:
//
//   lfht_create(+Name)             a new named table (existing: no-op)
//   lfht_put(+Name, +Key, +Value)  insert or replace (Value is copied)
//   lfht_get(+Name, +Key, -Value)  a copy of the value; fails if absent
//   lfht_delete(+Name, +Key)       fails if absent
//   lfht_pairs(+Name, -Pairs)      Key-Value pairs present during the call
//                                  (weakly consistent, in hash order)
//   lfht_size(+Name, -Size)
//   lfcore_intern(+Text, -Handle)  interns Text in the process's lfcore atom
//                                  table; Handle is an integer
//   lfcore_atom_text(+Handle, -Atom)
//   lfcore_atom_count(-Count)
//
// Keys are text: an atom or a string (so 'k' and "k" are the same key); keys
// come back as atoms. Values are any terms, stored as records (PL_record) and
// erased when the hazard-pointer domain reclaims the replaced or deleted
// element - never while another thread may still copy it. Tables and the
// atom table live until the process exits (they are never freed: a record
// must not be erased after Prolog halts). Errors are Prolog exceptions:
// type_error(text, Key), existence_error(lfht_table, Name),
// existence_error(lfcore_atom, Handle).
#include <lfcore/atom_table.hpp>
#include <lfcore/hash_trie_map.hpp>

#include <SWI-Prolog.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace {

struct text_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>()(s);
  }
};
struct text_equal {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const noexcept { return a == b; }
};

// A stored term; erased with the element that holds it.
class stored_term {
public:
  explicit stored_term(record_t r) noexcept : record_(r) {}
  stored_term(const stored_term&) = delete;
  stored_term& operator=(const stored_term&) = delete;
  ~stored_term() { PL_erase(record_); }
  bool copy_to(term_t t) const { return PL_recorded(record_, t) != 0; }

private:
  record_t record_;
};

using table = lfcore::hash_trie_map<std::string, stored_term, text_hash, text_equal>;
using registry = lfcore::hash_trie_map<std::string, table*, text_hash, text_equal>;

registry& tables() {
  static registry* r = new registry(lfcore::hash_trie_config::for_expected_size(64)); // never freed
  return *r;
}
lfcore::atom_table& atoms() {
  static lfcore::atom_table* t = new lfcore::atom_table(); // never freed
  return *t;
}
// The handles lfcore_intern gave out, so that a made-up integer is refused.
lfcore::hash_trie_map<std::uintptr_t, bool>& issued() {
  static auto* m = new lfcore::hash_trie_map<std::uintptr_t, bool>(); // never freed
  return *m;
}

bool get_text(term_t t, std::string_view& out) {
  char* s = nullptr;
  std::size_t len = 0;
  if (!PL_get_nchars(t, &len, &s, CVT_ATOM | CVT_STRING | REP_UTF8 | CVT_EXCEPTION)) return false;
  out = std::string_view(s, len);
  return true;
}

bool unify_text(term_t t, std::string_view s) {
  return PL_unify_chars(t, PL_ATOM | REP_UTF8, s.size(), s.data()) != 0;
}

// The table called Name, or null after raising existence_error.
table* find_table(term_t name) {
  std::string_view n;
  if (!get_text(name, n)) return nullptr;
  table* found = nullptr;
  tables().visit(n, [&](const registry::value_type& kv) { found = kv.second; });
  if (found == nullptr) PL_existence_error("lfht_table", name);
  return found;
}

foreign_t lfht_create(term_t name) {
  std::string_view n;
  if (!get_text(name, n)) return false;
  if (tables().contains(n)) return true;
  auto* fresh = new table();
  if (!tables().try_emplace(std::string(n), fresh).second) delete fresh; // created meanwhile
  return true;
}

foreign_t lfht_put(term_t name, term_t key, term_t value) {
  table* t = find_table(name);
  std::string_view k;
  if (t == nullptr || !get_text(key, k)) return false;
  t->insert_or_assign(std::string(k), PL_record(value));
  return true;
}

foreign_t lfht_get(term_t name, term_t key, term_t value) {
  table* t = find_table(name);
  std::string_view k;
  if (t == nullptr || !get_text(key, k)) return false;
  term_t copy = PL_new_term_ref();
  bool found = false;
  // The element is protected while the callback copies its term.
  t->visit(k, [&](const table::value_type& kv) { found = kv.second.copy_to(copy); });
  return found && PL_unify(value, copy);
}

foreign_t lfht_delete(term_t name, term_t key) {
  table* t = find_table(name);
  std::string_view k;
  if (t == nullptr || !get_text(key, k)) return false;
  return t->erase(k) == 1;
}

foreign_t lfht_pairs(term_t name, term_t pairs) {
  table* t = find_table(name);
  if (t == nullptr) return false;
  term_t list = PL_copy_term_ref(pairs), head = PL_new_term_ref();
  term_t k = PL_new_term_ref(), v = PL_new_term_ref();
  static const functor_t minus = PL_new_functor(PL_new_atom("-"), 2);
  for (const auto& kv : *t) { // the iterator keeps the element alive
    PL_put_variable(k);
    PL_put_variable(v);
    if (!unify_text(k, kv.first) || !kv.second.copy_to(v) || !PL_unify_list(list, head, list) ||
        !PL_unify_term(head, PL_FUNCTOR, minus, PL_TERM, k, PL_TERM, v))
      return false;
  }
  return PL_unify_nil(list);
}

foreign_t lfht_size(term_t name, term_t size) {
  table* t = find_table(name);
  return t != nullptr && PL_unify_uint64(size, t->size());
}

foreign_t lfcore_intern(term_t text, term_t handle) {
  std::string_view s;
  if (!get_text(text, s)) return false;
  const lfcore::atom a = atoms().intern(s); // permanent: the handle stays valid
  issued().try_emplace(a.bits(), true);
  return PL_unify_uint64(handle, a.bits());
}

foreign_t lfcore_atom_text(term_t handle, term_t text) {
  std::uint64_t bits = 0;
  if (!PL_get_uint64_ex(handle, &bits)) return false;
  if (!issued().contains(static_cast<std::uintptr_t>(bits)))
    return PL_existence_error("lfcore_atom", handle);
  return unify_text(text, lfcore::atom_table::name(lfcore::atom::from_bits(bits)));
}

foreign_t lfcore_atom_count(term_t count) {
  return PL_unify_uint64(count, atoms().size());
}

// Runs a predicate body, turning a C++ exception (bad_alloc, length_error)
// into a Prolog resource or representation error instead of a crash.
template <class F>
foreign_t guarded(F f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return PL_resource_error("memory");
  } catch (const std::exception& e) {
    return PL_representation_error(e.what());
  }
}

} // namespace

extern "C" {

static foreign_t pl_lfht_create(term_t a) {
  return guarded([&] { return lfht_create(a); });
}
static foreign_t pl_lfht_put(term_t a, term_t b, term_t c) {
  return guarded([&] { return lfht_put(a, b, c); });
}
static foreign_t pl_lfht_get(term_t a, term_t b, term_t c) {
  return guarded([&] { return lfht_get(a, b, c); });
}
static foreign_t pl_lfht_delete(term_t a, term_t b) {
  return guarded([&] { return lfht_delete(a, b); });
}
static foreign_t pl_lfht_pairs(term_t a, term_t b) {
  return guarded([&] { return lfht_pairs(a, b); });
}
static foreign_t pl_lfht_size(term_t a, term_t b) {
  return guarded([&] { return lfht_size(a, b); });
}
static foreign_t pl_lfcore_intern(term_t a, term_t b) {
  return guarded([&] { return lfcore_intern(a, b); });
}
static foreign_t pl_lfcore_atom_text(term_t a, term_t b) {
  return guarded([&] { return lfcore_atom_text(a, b); });
}
static foreign_t pl_lfcore_atom_count(term_t a) {
  return guarded([&] { return lfcore_atom_count(a); });
}

install_t install_lfcore_swipl() {
  PL_register_foreign("lfht_create", 1, reinterpret_cast<pl_function_t>(pl_lfht_create), 0);
  PL_register_foreign("lfht_put", 3, reinterpret_cast<pl_function_t>(pl_lfht_put), 0);
  PL_register_foreign("lfht_get", 3, reinterpret_cast<pl_function_t>(pl_lfht_get), 0);
  PL_register_foreign("lfht_delete", 2, reinterpret_cast<pl_function_t>(pl_lfht_delete), 0);
  PL_register_foreign("lfht_pairs", 2, reinterpret_cast<pl_function_t>(pl_lfht_pairs), 0);
  PL_register_foreign("lfht_size", 2, reinterpret_cast<pl_function_t>(pl_lfht_size), 0);
  PL_register_foreign("lfcore_intern", 2, reinterpret_cast<pl_function_t>(pl_lfcore_intern), 0);
  PL_register_foreign("lfcore_atom_text", 2, reinterpret_cast<pl_function_t>(pl_lfcore_atom_text),
                      0);
  PL_register_foreign("lfcore_atom_count", 1, reinterpret_cast<pl_function_t>(pl_lfcore_atom_count),
                      0);
}

} // extern "C"
