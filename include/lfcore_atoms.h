/* lfcore_atoms.h - the C interface of lfcore's atom table (lfcore/atom_table.hpp):
 * a lock-free symbol table for interpreters written in C.
 *
 * Atoms and functors are machine words (uintptr_t). 0 is "no atom"; every
 * other atom has its 3 low bits zero (LFCORE_ATOM_FREE_LOW_BITS), so an
 * interpreter can keep one in a tagged cell. A handle is valid while the
 * caller holds a reference to it or the atom is permanent (see "Garbage
 * collection"); a handle that never came from this table, or one used after
 * it became invalid, is undefined behaviour like a dangling pointer - the
 * only misuse a handle check can catch is 0, and it is caught.
 *
 * Threads: any number may call any function concurrently, except
 * lfcore_atoms_destroy; no registration. Everything is lock-free but
 * lfcore_atoms_collect, which waits for another collect on the same table.
 *
 * Errors: every function that can fail returns an int status, LFCORE_ATOM_OK
 * (0) or a negative LFCORE_ATOM_E* code, and then changes nothing (outputs
 * are left alone). NULL table, NULL output pointer, NULL text with a non-zero
 * length, atom 0 and a reserved property kind are LFCORE_ATOM_EINVAL.
 * lfcore_atoms_strerror names each code.
 *
 * Garbage collection: lfcore_atoms_intern without flags returns a permanent
 * atom (never collected). With LFCORE_ATOM_REF, and from lfcore_atoms_lookup,
 * the atom comes with one reference for the caller, which it gives back with
 * lfcore_atoms_release (a no-op for permanent atoms, so always call it).
 * lfcore_atoms_collect frees every atom that is neither permanent nor
 * referenced, while other threads go on.
 */
#ifndef LFCORE_ATOMS_H
#define LFCORE_ATOMS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lfcore_atom_table lfcore_atom_table;
typedef uintptr_t lfcore_atom;
typedef uintptr_t lfcore_functor;

#define LFCORE_ATOM_FREE_LOW_BITS 3
/* The longest text, in bytes. */
#define LFCORE_ATOM_MAX_LENGTH (((size_t)1 << 30) - 1)

enum {
  LFCORE_ATOM_OK = 0,
  LFCORE_ATOM_EINVAL = -1,    /* NULL or invalid argument */
  LFCORE_ATOM_EUTF8 = -2,     /* not well-formed UTF-8 (LFCORE_ATOM_UTF8) */
  LFCORE_ATOM_ETOOLONG = -3,  /* text longer than LFCORE_ATOM_MAX_LENGTH */
  LFCORE_ATOM_ENOMEM = -4,    /* out of memory */
  LFCORE_ATOM_ENOTFOUND = -5, /* no such atom, property or functor */
  LFCORE_ATOM_EEXIST = -6,    /* the property kind is already there */
  LFCORE_ATOM_ENOREF = -7,    /* release without a reference, or the atom was collected */
  LFCORE_ATOM_EOVERFLOW = -8  /* one reference more than an atom can hold (2^30 - 1) */
};

/* Flags of lfcore_atoms_intern. */
#define LFCORE_ATOM_REF 1u  /* return a reference instead of making the atom permanent */
#define LFCORE_ATOM_UTF8 2u /* reject text that is not well-formed UTF-8 */

/* Property kinds; any other non-zero kind is the caller's. */
#define LFCORE_PROPERTY_OP 1u
#define LFCORE_PROPERTY_PREDICATE 2u
#define LFCORE_PROPERTY_FUNCTOR 3u /* reserved for the functor table */
#define LFCORE_PROPERTY_FIRST_USER 16u

/* A new table sized for about expected_atoms (0: a small default, 2^16
 * buckets), or NULL when out of memory. The size never grows: a table that
 * goes far past it slows as it grows (see atom_table's constructor), so pass
 * an estimate whenever more than about 250,000 atoms may come. */
lfcore_atom_table *lfcore_atoms_create(size_t expected_atoms);
/* Frees the table and every atom; NULL is ignored. No concurrent calls. */
void lfcore_atoms_destroy(lfcore_atom_table *table);

/* The atom with the len bytes at text (any bytes, NUL included), created if
 * absent, in *out. flags: LFCORE_ATOM_REF, LFCORE_ATOM_UTF8. A len above
 * LFCORE_ATOM_MAX_LENGTH is LFCORE_ATOM_ETOOLONG before any byte is read. */
int lfcore_atoms_intern(lfcore_atom_table *table, const char *text, size_t len, unsigned flags,
                        lfcore_atom *out);
/* The atom with this text if present (LFCORE_ATOM_ENOTFOUND otherwise), with
 * a reference for the caller; never creates one. LFCORE_ATOM_ETOOLONG as for
 * lfcore_atoms_intern. */
int lfcore_atoms_lookup(lfcore_atom_table *table, const char *text, size_t len, lfcore_atom *out);
/* Hints that change nothing: start loading what interning or looking up the
 * n texts (texts[i], lengths[i] bytes) reads first, so that the interns that
 * follow overlap their cache misses (atom_table::prefetch; the paper's
 * workload ran 2.6x as fast on one thread). LFCORE_ATOM_EINVAL, doing
 * nothing, for a NULL table, NULL arrays when n > 0, or a NULL text with a
 * non-zero length; a text longer than LFCORE_ATOM_MAX_LENGTH is skipped. */
int lfcore_atoms_prefetch(const lfcore_atom_table *table, const char *const *texts,
                          const size_t *lengths, size_t n);
/* The atom's text, NUL-terminated (it may contain NULs: use *len), valid
 * while the atom is; NULL for atom 0. len may be NULL. O(1). */
const char *lfcore_atoms_name(lfcore_atom atom, size_t *len);
/* Atoms in the table (exact when no call runs concurrently). 0 for NULL. */
size_t lfcore_atoms_size(const lfcore_atom_table *table);

/* Calls f(atom, context) for every atom, in hash order, while others
 * intern; a key present for the whole call is visited exactly once. A
 * non-zero return from f stops it and is returned; otherwise 0. To keep a
 * non-permanent atom after f returns, lfcore_atoms_retain it inside f. */
int lfcore_atoms_for_each(const lfcore_atom_table *table, int (*f)(lfcore_atom, void *),
                          void *context);

/* References. retain: adds one (LFCORE_ATOM_ENOREF if the atom was
 * collected; LFCORE_ATOM_EOVERFLOW if it holds 2^30 - 1 already, as for
 * intern and lookup with a reference; fewer in stress builds).
 * release: gives one back (LFCORE_ATOM_ENOREF if it has none).
 * make_permanent: pins the atom for the table's life. */
int lfcore_atoms_retain(lfcore_atom_table *table, lfcore_atom atom);
int lfcore_atoms_release(lfcore_atom_table *table, lfcore_atom atom);
int lfcore_atoms_make_permanent(lfcore_atom_table *table, lfcore_atom atom);
/* Frees every atom neither permanent nor referenced; *collected (may be
 * NULL) gets how many. Not atomic: on LFCORE_ATOM_ENOMEM some of them may
 * have been freed already (the others stay valid). */
int lfcore_atoms_collect(lfcore_atom_table *table, size_t *collected);

/* Properties: one opaque word per (atom, kind); the table never frees it.
 * add: LFCORE_ATOM_EEXIST if the kind is there. set: adds or replaces.
 * get/remove: LFCORE_ATOM_ENOTFOUND if it is not. */
int lfcore_atoms_add_property(lfcore_atom_table *table, lfcore_atom atom, uint32_t kind,
                              uintptr_t value);
int lfcore_atoms_set_property(lfcore_atom_table *table, lfcore_atom atom, uint32_t kind,
                              uintptr_t value);
int lfcore_atoms_get_property(lfcore_atom_table *table, lfcore_atom atom, uint32_t kind,
                              uintptr_t *value);
int lfcore_atoms_remove_property(lfcore_atom_table *table, lfcore_atom atom, uint32_t kind);

/* The functor name/arity, created if absent; it lives as long as its atom. */
int lfcore_atoms_functor(lfcore_atom_table *table, lfcore_atom name, uint32_t arity,
                         lfcore_functor *out);
/* The functor's name and arity (0 for functor 0). */
lfcore_atom lfcore_functor_name(lfcore_functor functor);
uint32_t lfcore_functor_arity(lfcore_functor functor);

/* A readable description of a status code. */
const char *lfcore_atoms_strerror(int status);

#ifdef __cplusplus
}
#endif

#endif /* LFCORE_ATOMS_H */
