/* The atom table's C API (lfcore_atoms.h) from C11, the way a C interpreter
 * uses it: intern, names, properties, functors, references, collection,
 * iteration, several threads, and every misuse answered by a status code. */
#include <lfcore_atoms.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static lfcore_atom intern(lfcore_atom_table *t, const char *s, unsigned flags) {
  lfcore_atom a = 0;
  CHECK(lfcore_atoms_intern(t, s, strlen(s), flags, &a) == LFCORE_ATOM_OK);
  CHECK(a != 0);
  return a;
}

static void basics(void) {
  lfcore_atom_table *t = lfcore_atoms_create(0);
  CHECK(t != NULL);
  lfcore_atom hello = intern(t, "hello", 0);
  CHECK(intern(t, "hello", 0) == hello);
  CHECK(intern(t, "world", 0) != hello);
  CHECK((hello & ((1u << LFCORE_ATOM_FREE_LOW_BITS) - 1)) == 0);
  size_t len = 0;
  CHECK(strcmp(lfcore_atoms_name(hello, &len), "hello") == 0 && len == 5);
  CHECK(lfcore_atoms_size(t) == 2);

  /* Bytes, not C strings: an embedded NUL is part of the text. */
  lfcore_atom nul = 0;
  CHECK(lfcore_atoms_intern(t, "a\0b", 3, 0, &nul) == LFCORE_ATOM_OK);
  CHECK(nul != intern(t, "a", 0));
  CHECK(memcmp(lfcore_atoms_name(nul, &len), "a\0b", 3) == 0 && len == 3);
  lfcore_atom empty = 0;
  CHECK(lfcore_atoms_intern(t, NULL, 0, 0, &empty) == LFCORE_ATOM_OK); /* '' */
  CHECK(strcmp(lfcore_atoms_name(empty, NULL), "") == 0);

  lfcore_atom found = 0;
  CHECK(lfcore_atoms_lookup(t, "hello", 5, &found) == LFCORE_ATOM_OK && found == hello);
  CHECK(lfcore_atoms_lookup(t, "absent", 6, &found) == LFCORE_ATOM_ENOTFOUND && found == hello);

  /* UTF-8 checking is asked for by a flag. */
  lfcore_atom u = 0;
  CHECK(lfcore_atoms_intern(t, "caf\xc3\xa9", 5, LFCORE_ATOM_UTF8, &u) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_intern(t, "caf\xc3", 4, LFCORE_ATOM_UTF8, &u) == LFCORE_ATOM_EUTF8);
  CHECK(lfcore_atoms_intern(t, "\xed\xa0\x80", 3, LFCORE_ATOM_UTF8, &u) == LFCORE_ATOM_EUTF8);
  CHECK(lfcore_atoms_intern(t, "x", LFCORE_ATOM_MAX_LENGTH + 1, 0, &u) == LFCORE_ATOM_ETOOLONG);
  CHECK(lfcore_atoms_size(t) == 6);

  /* A prefetch is a hint: present, absent, empty and over-long texts alike
   * leave the table as it was. */
  {
    const char *texts[4] = {"hello", "absent", NULL, "x"};
    size_t lengths[4] = {5, 6, 0, LFCORE_ATOM_MAX_LENGTH + 1};
    CHECK(lfcore_atoms_prefetch(t, texts, lengths, 4) == LFCORE_ATOM_OK);
    CHECK(lfcore_atoms_size(t) == 6);
    CHECK(intern(t, "hello", 0) == hello);
    CHECK(lfcore_atoms_lookup(t, "absent", 6, &found) == LFCORE_ATOM_ENOTFOUND);
  }
  lfcore_atoms_destroy(t);
}

static void properties_and_functors(void) {
  lfcore_atom_table *t = lfcore_atoms_create(100);
  lfcore_atom plus = intern(t, "+", 0);
  uintptr_t v = 0;
  CHECK(lfcore_atoms_get_property(t, plus, LFCORE_PROPERTY_OP, &v) == LFCORE_ATOM_ENOTFOUND);
  CHECK(lfcore_atoms_add_property(t, plus, LFCORE_PROPERTY_OP, 500) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_add_property(t, plus, LFCORE_PROPERTY_OP, 1) == LFCORE_ATOM_EEXIST);
  CHECK(lfcore_atoms_get_property(t, plus, LFCORE_PROPERTY_OP, &v) == LFCORE_ATOM_OK && v == 500);
  CHECK(lfcore_atoms_set_property(t, plus, LFCORE_PROPERTY_OP, 200) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_get_property(t, plus, LFCORE_PROPERTY_OP, &v) == LFCORE_ATOM_OK && v == 200);
  CHECK(lfcore_atoms_remove_property(t, plus, LFCORE_PROPERTY_OP) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_remove_property(t, plus, LFCORE_PROPERTY_OP) == LFCORE_ATOM_ENOTFOUND);

  lfcore_functor f = 0, g = 0;
  CHECK(lfcore_atoms_functor(t, plus, 2, &f) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_functor(t, plus, 2, &g) == LFCORE_ATOM_OK && g == f);
  CHECK(lfcore_atoms_functor(t, plus, 1, &g) == LFCORE_ATOM_OK && g != f);
  CHECK(lfcore_functor_name(f) == plus && lfcore_functor_arity(f) == 2);
  CHECK(lfcore_functor_name(0) == 0 && lfcore_functor_arity(0) == 0);
  lfcore_atoms_destroy(t);
}

static void references_and_collection(void) {
  lfcore_atom_table *t = lfcore_atoms_create(0);
  lfcore_atom keep = intern(t, "keep", 0);
  lfcore_atom temp = intern(t, "temp", LFCORE_ATOM_REF);
  CHECK(lfcore_atoms_add_property(t, temp, LFCORE_PROPERTY_FIRST_USER, 7) == LFCORE_ATOM_OK);
  size_t n = 99;
  CHECK(lfcore_atoms_collect(t, &n) == LFCORE_ATOM_OK && n == 0); /* still referenced */
  CHECK(lfcore_atoms_retain(t, temp) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_release(t, temp) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_release(t, temp) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_release(t, temp) == LFCORE_ATOM_ENOREF); /* none left */
  CHECK(lfcore_atoms_collect(t, &n) == LFCORE_ATOM_OK && n == 1);
  lfcore_atom found = 0;
  CHECK(lfcore_atoms_lookup(t, "temp", 4, &found) == LFCORE_ATOM_ENOTFOUND);
  CHECK(lfcore_atoms_release(t, keep) == LFCORE_ATOM_OK); /* permanent: a no-op */
  lfcore_atom pinned = intern(t, "pinned", LFCORE_ATOM_REF);
  CHECK(lfcore_atoms_make_permanent(t, pinned) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_release(t, pinned) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_collect(t, NULL) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_size(t) == 2);
  lfcore_atoms_destroy(t);
}

struct count_ctx {
  size_t atoms, bytes;
  size_t stop_after;
};
static int count_atom(lfcore_atom a, void *context) {
  struct count_ctx *c = context;
  size_t len = 0;
  CHECK(lfcore_atoms_name(a, &len) != NULL);
  c->atoms++;
  c->bytes += len;
  return c->atoms == c->stop_after ? 42 : 0;
}

static void iteration(void) {
  lfcore_atom_table *t = lfcore_atoms_create(0);
  char buf[32];
  size_t bytes = 0;
  for (int i = 0; i < 1000; ++i) {
    int len = snprintf(buf, sizeof buf, "atom%d", i);
    bytes += (size_t)len;
    intern(t, buf, 0);
  }
  struct count_ctx c = {0, 0, 0};
  CHECK(lfcore_atoms_for_each(t, count_atom, &c) == 0);
  CHECK(c.atoms == 1000 && c.bytes == bytes);
  struct count_ctx early = {0, 0, 10};
  CHECK(lfcore_atoms_for_each(t, count_atom, &early) == 42 && early.atoms == 10);
  lfcore_atoms_destroy(t);
}

enum { THREADS = 4, TEXTS = 5000 };
static lfcore_atom_table *shared;
static lfcore_atom results[THREADS][TEXTS];

static void *interner(void *arg) {
  int w = (int)(intptr_t)arg;
  char buf[32];
  for (int i = 0; i < TEXTS; ++i) {
    int k = w % 2 ? TEXTS - 1 - i : i;
    int len = snprintf(buf, sizeof buf, "text-%d", k);
    CHECK(lfcore_atoms_intern(shared, buf, (size_t)len, 0, &results[w][k]) == LFCORE_ATOM_OK);
  }
  return NULL;
}

static void threads(void) {
  shared = lfcore_atoms_create(TEXTS);
  pthread_t th[THREADS];
  for (int w = 0; w < THREADS; ++w) CHECK(pthread_create(&th[w], NULL, interner, (void *)(intptr_t)w) == 0);
  for (int w = 0; w < THREADS; ++w) CHECK(pthread_join(th[w], NULL) == 0);
  CHECK(lfcore_atoms_size(shared) == TEXTS);
  for (int k = 0; k < TEXTS; ++k)
    for (int w = 1; w < THREADS; ++w) CHECK(results[w][k] == results[0][k]);
  lfcore_atoms_destroy(shared);
}

static void misuse(void) {
  lfcore_atom_table *t = lfcore_atoms_create(0);
  lfcore_atom a = intern(t, "a", 0), out = 0;
  uintptr_t v = 0;
  lfcore_functor f = 0;
  CHECK(lfcore_atoms_intern(NULL, "a", 1, 0, &out) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_intern(t, NULL, 1, 0, &out) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_intern(t, "a", 1, 0, NULL) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_intern(t, "a", 1, 0x100, &out) == LFCORE_ATOM_EINVAL); /* unknown flag */
  CHECK(lfcore_atoms_lookup(NULL, "a", 1, &out) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_lookup(t, "a", 1, NULL) == LFCORE_ATOM_EINVAL);
  CHECK(out == 0);
  {
    const char *texts[2] = {"a", NULL};
    size_t lengths[2] = {1, 1};
    CHECK(lfcore_atoms_prefetch(NULL, texts, lengths, 1) == LFCORE_ATOM_EINVAL);
    CHECK(lfcore_atoms_prefetch(t, NULL, lengths, 1) == LFCORE_ATOM_EINVAL);
    CHECK(lfcore_atoms_prefetch(t, texts, NULL, 1) == LFCORE_ATOM_EINVAL);
    CHECK(lfcore_atoms_prefetch(t, texts, lengths, 2) == LFCORE_ATOM_EINVAL); /* NULL text */
    CHECK(lfcore_atoms_prefetch(t, NULL, NULL, 0) == LFCORE_ATOM_OK);
  }
  CHECK(lfcore_atoms_name(0, NULL) == NULL);
  CHECK(lfcore_atoms_size(NULL) == 0);
  CHECK(lfcore_atoms_for_each(NULL, count_atom, NULL) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_for_each(t, NULL, NULL) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_retain(t, 0) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_release(NULL, a) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_make_permanent(t, 0) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_collect(NULL, NULL) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_add_property(t, a, 0, 1) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_add_property(t, a, LFCORE_PROPERTY_FUNCTOR, 1) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_add_property(t, 0, LFCORE_PROPERTY_OP, 1) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_get_property(t, a, LFCORE_PROPERTY_OP, NULL) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_get_property(t, a, LFCORE_PROPERTY_OP, &v) == LFCORE_ATOM_ENOTFOUND);
  CHECK(lfcore_atoms_remove_property(NULL, a, LFCORE_PROPERTY_OP) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_functor(t, 0, 1, &f) == LFCORE_ATOM_EINVAL);
  CHECK(lfcore_atoms_functor(t, a, 1, NULL) == LFCORE_ATOM_EINVAL);
  CHECK(strcmp(lfcore_atoms_strerror(LFCORE_ATOM_EUTF8), "text is not well-formed UTF-8") == 0);
  CHECK(strcmp(lfcore_atoms_strerror(12345), "unknown status") == 0);
  CHECK(lfcore_atoms_size(t) == 1); /* nothing changed */
  lfcore_atoms_destroy(t);
  lfcore_atoms_destroy(NULL);
}

int main(void) {
  basics();
  properties_and_functors();
  references_and_collection();
  iteration();
  threads();
  misuse();
  puts("lfcore_atoms C API: all checks passed");
  return 0;
}
