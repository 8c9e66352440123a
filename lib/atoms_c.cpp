// lib/atoms_c.cpp - the C interface (include/lfcore_atoms.h) over lfcore::atom_table.
#include "lfcore_atoms.h"

#include "lfcore/atom_table.hpp"

#include <new>
#include <span>
#include <stdexcept>

struct lfcore_atom_table {
  lfcore::atom_table table;
  explicit lfcore_atom_table(std::size_t expected) : table(expected) {}
};

namespace {

using lfcore::atom;
using lfcore::atom_table;

static_assert(LFCORE_ATOM_FREE_LOW_BITS == lfcore::atom::free_low_bits);
static_assert(LFCORE_ATOM_MAX_LENGTH == atom_table::max_length);
static_assert(lfcore::stress_build || atom_table::max_references == (1u << 30) - 1);
static_assert(LFCORE_PROPERTY_FUNCTOR == lfcore::property::functor);

// Runs f and maps what it throws to a status; nothing escapes into C.
template <class F>
int guarded(F f) noexcept {
  try {
    return f();
  } catch (const lfcore::invalid_utf8&) {
    return LFCORE_ATOM_EUTF8;
  } catch (const std::length_error&) {
    return LFCORE_ATOM_ETOOLONG;
  } catch (const std::bad_alloc&) {
    return LFCORE_ATOM_ENOMEM;
  } catch (const std::overflow_error&) {
    return LFCORE_ATOM_EOVERFLOW;
  } catch (const std::logic_error&) { // release without a reference, retain of a dead atom
    return LFCORE_ATOM_ENOREF;
  } catch (...) { // nothing else is thrown; never let anything cross into C
    return LFCORE_ATOM_EINVAL;
  }
}

bool valid_text(const char* text, std::size_t len) {
  return text != nullptr || len == 0;
}
bool valid_kind(std::uint32_t kind) {
  return kind != 0 && kind != LFCORE_PROPERTY_FUNCTOR;
}
std::string_view view(const char* text, std::size_t len) {
  return len == 0 ? std::string_view() : std::string_view(text, len);
}

} // namespace

extern "C" {

lfcore_atom_table* lfcore_atoms_create(size_t expected_atoms) {
  // Not new (std::nothrow): that covers the object's own allocation only, and
  // the table's constructor allocates its root and arena as well.
  try {
    return new lfcore_atom_table(expected_atoms);
  } catch (...) { // std::bad_alloc; nothing may cross into C
    return nullptr;
  }
}

void lfcore_atoms_destroy(lfcore_atom_table* table) {
  delete table;
}

int lfcore_atoms_intern(lfcore_atom_table* table, const char* text, size_t len, unsigned flags,
                        lfcore_atom* out) {
  if (table == nullptr || out == nullptr || !valid_text(text, len) ||
      (flags & ~(LFCORE_ATOM_REF | LFCORE_ATOM_UTF8)) != 0)
    return LFCORE_ATOM_EINVAL;
  // Before reading a byte: a length beyond the maximum may not be backed by memory.
  if (len > atom_table::max_length) return LFCORE_ATOM_ETOOLONG;
  return guarded([&] {
    const std::string_view s = view(text, len);
    if (flags & LFCORE_ATOM_UTF8) {
      if (const std::size_t at = lfcore::detail::utf8_error_offset(s); at != std::string_view::npos)
        return LFCORE_ATOM_EUTF8;
    }
    const atom a = (flags & LFCORE_ATOM_REF) ? table->table.intern_ref(s) : table->table.intern(s);
    *out = a.bits();
    return LFCORE_ATOM_OK;
  });
}

int lfcore_atoms_lookup(lfcore_atom_table* table, const char* text, size_t len, lfcore_atom* out) {
  if (table == nullptr || out == nullptr || !valid_text(text, len)) return LFCORE_ATOM_EINVAL;
  if (len > atom_table::max_length) return LFCORE_ATOM_ETOOLONG;
  return guarded([&] {
    const std::optional<atom> a = table->table.find(view(text, len));
    if (!a) return LFCORE_ATOM_ENOTFOUND;
    *out = a->bits();
    return LFCORE_ATOM_OK;
  });
}

int lfcore_atoms_prefetch(const lfcore_atom_table* table, const char* const* texts,
                          const size_t* lengths, size_t n) {
  if (table == nullptr || (n > 0 && (texts == nullptr || lengths == nullptr)))
    return LFCORE_ATOM_EINVAL;
  for (size_t i = 0; i < n; ++i)
    if (!valid_text(texts[i], lengths[i])) return LFCORE_ATOM_EINVAL;
  // In groups, so that no call allocates; each group is one range prefetch.
  constexpr size_t group = 64;
  std::string_view views[group];
  for (size_t first = 0; first < n; first += group) {
    size_t k = 0;
    for (size_t i = first; i < n && i < first + group; ++i)
      if (lengths[i] <= atom_table::max_length) views[k++] = view(texts[i], lengths[i]);
    table->table.prefetch(std::span<const std::string_view>(views, k));
  }
  return LFCORE_ATOM_OK;
}

const char* lfcore_atoms_name(lfcore_atom a, size_t* len) {
  if (a == 0) return nullptr;
  const atom at = atom::from_bits(a);
  if (len != nullptr) *len = atom_table::name(at).size();
  return atom_table::c_str(at);
}

size_t lfcore_atoms_size(const lfcore_atom_table* table) {
  return table != nullptr ? table->table.size() : 0;
}

int lfcore_atoms_for_each(const lfcore_atom_table* table, int (*f)(lfcore_atom, void*),
                          void* context) {
  if (table == nullptr || f == nullptr) return LFCORE_ATOM_EINVAL;
  int stopped = 0;
  const int status = guarded([&] {
    table->table.for_each([&](atom a) { return (stopped = f(a.bits(), context)) == 0; });
    return LFCORE_ATOM_OK;
  });
  return status != LFCORE_ATOM_OK ? status : stopped;
}

int lfcore_atoms_retain(lfcore_atom_table* table, lfcore_atom a) {
  if (table == nullptr || a == 0) return LFCORE_ATOM_EINVAL;
  return guarded([&] { // std::overflow_error past max_references
    return table->table.try_retain(atom::from_bits(a)) ? LFCORE_ATOM_OK : LFCORE_ATOM_ENOREF;
  });
}

int lfcore_atoms_release(lfcore_atom_table* table, lfcore_atom a) {
  if (table == nullptr || a == 0) return LFCORE_ATOM_EINVAL;
  return guarded([&] {
    table->table.release(atom::from_bits(a));
    return LFCORE_ATOM_OK;
  });
}

int lfcore_atoms_make_permanent(lfcore_atom_table* table, lfcore_atom a) {
  if (table == nullptr || a == 0) return LFCORE_ATOM_EINVAL;
  table->table.make_permanent(atom::from_bits(a));
  return LFCORE_ATOM_OK;
}

int lfcore_atoms_collect(lfcore_atom_table* table, size_t* collected) {
  if (table == nullptr) return LFCORE_ATOM_EINVAL;
  return guarded([&] {
    const std::size_t n = table->table.collect();
    if (collected != nullptr) *collected = n;
    return LFCORE_ATOM_OK;
  });
}

int lfcore_atoms_add_property(lfcore_atom_table* table, lfcore_atom a, uint32_t kind,
                              uintptr_t value) {
  if (table == nullptr || a == 0 || !valid_kind(kind)) return LFCORE_ATOM_EINVAL;
  return guarded([&] {
    return table->table.add_property(atom::from_bits(a), kind, value) ? LFCORE_ATOM_OK
                                                                      : LFCORE_ATOM_EEXIST;
  });
}

int lfcore_atoms_set_property(lfcore_atom_table* table, lfcore_atom a, uint32_t kind,
                              uintptr_t value) {
  if (table == nullptr || a == 0 || !valid_kind(kind)) return LFCORE_ATOM_EINVAL;
  return guarded([&] {
    table->table.set_property(atom::from_bits(a), kind, value);
    return LFCORE_ATOM_OK;
  });
}

int lfcore_atoms_get_property(lfcore_atom_table* table, lfcore_atom a, uint32_t kind,
                              uintptr_t* value) {
  if (table == nullptr || a == 0 || value == nullptr || !valid_kind(kind))
    return LFCORE_ATOM_EINVAL;
  return guarded([&] {
    const std::optional<std::uintptr_t> v = table->table.find_property(atom::from_bits(a), kind);
    if (!v) return LFCORE_ATOM_ENOTFOUND;
    *value = *v;
    return LFCORE_ATOM_OK;
  });
}

int lfcore_atoms_remove_property(lfcore_atom_table* table, lfcore_atom a, uint32_t kind) {
  if (table == nullptr || a == 0 || !valid_kind(kind)) return LFCORE_ATOM_EINVAL;
  return guarded([&] {
    return table->table.remove_property(atom::from_bits(a), kind) ? LFCORE_ATOM_OK
                                                                  : LFCORE_ATOM_ENOTFOUND;
  });
}

int lfcore_atoms_functor(lfcore_atom_table* table, lfcore_atom name, uint32_t arity,
                         lfcore_functor* out) {
  if (table == nullptr || name == 0 || out == nullptr) return LFCORE_ATOM_EINVAL;
  return guarded([&] {
    *out = table->table.functor_of(atom::from_bits(name), arity).bits();
    return LFCORE_ATOM_OK;
  });
}

lfcore_atom lfcore_functor_name(lfcore_functor f) {
  return f != 0 ? lfcore::functor::from_bits(f).name().bits() : 0;
}

uint32_t lfcore_functor_arity(lfcore_functor f) {
  return f != 0 ? lfcore::functor::from_bits(f).arity() : 0;
}

const char* lfcore_atoms_strerror(int status) {
  switch (status) {
  case LFCORE_ATOM_OK:
    return "success";
  case LFCORE_ATOM_EINVAL:
    return "invalid argument (NULL table, output or text, atom 0, or a "
           "reserved property kind)";
  case LFCORE_ATOM_EUTF8:
    return "text is not well-formed UTF-8";
  case LFCORE_ATOM_ETOOLONG:
    return "text longer than LFCORE_ATOM_MAX_LENGTH";
  case LFCORE_ATOM_ENOMEM:
    return "out of memory";
  case LFCORE_ATOM_ENOTFOUND:
    return "not found";
  case LFCORE_ATOM_EEXIST:
    return "the atom already has a property of this kind";
  case LFCORE_ATOM_ENOREF:
    return "the atom holds no reference (released too often, or collected)";
  case LFCORE_ATOM_EOVERFLOW:
    return "the atom holds as many references as it can";
  default:
    return "unknown status";
  }
}

} // extern "C"
