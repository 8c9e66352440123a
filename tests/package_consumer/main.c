/* A C11 program built against the installed package the way a C interpreter
 * without CMake would: cc -std=c11 main.c $(pkg-config --cflags --libs lfcore).
 * It uses both C APIs and fails (exit 1) if a result is wrong. */
#include <lfcore_atoms.h>
#include <lfcore_version.h>
#include <lfht.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "c consumer: %s failed (line %d)\n", #cond, __LINE__);                       \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main(void) {
  /* The installed headers and the library linked are one version. */
  CHECK(lfcore_version() == LFCORE_VERSION);
  CHECK(strcmp(lfcore_version_string(), LFCORE_VERSION_STRING) == 0);

  /* No hash function: the key is its own hash; no comparison: hashes never collide. */
  struct lfht_head *table = init_lfht_sized(NULL, NULL, NULL, 100);
  CHECK(table != NULL);
  static int values[100];
  for (uintptr_t k = 1; k <= 100; ++k)
    CHECK(lfht_insert(table, (void *)k, &values[k - 1]) == &values[k - 1]);
  CHECK(lfht_search(table, (void *)42) == &values[41]);
  CHECK(lfht_remove(table, (void *)42) == &values[41]);
  CHECK(lfht_search(table, (void *)42) == NULL);
  size_t keys = 0;
  for (void *k = lfht_next_key(table, NULL); k != NULL; k = lfht_next_key(table, k)) ++keys;
  CHECK(keys == 99);
  lfht_free(table);

  lfcore_atom_table *atoms = lfcore_atoms_create(0);
  CHECK(atoms != NULL);
  lfcore_atom a = 0, b = 0;
  CHECK(lfcore_atoms_intern(atoms, "foo", 3, 0, &a) == LFCORE_ATOM_OK);
  CHECK(lfcore_atoms_intern(atoms, "foo", 3, 0, &b) == LFCORE_ATOM_OK);
  CHECK(a == b && (a & ((1u << LFCORE_ATOM_FREE_LOW_BITS) - 1)) == 0);
  size_t len = 0;
  const char *name = lfcore_atoms_name(a, &len);
  CHECK(len == 3 && memcmp(name, "foo", 3) == 0);
  CHECK(lfcore_atoms_intern(atoms, "\xff", 1, LFCORE_ATOM_UTF8, &b) == LFCORE_ATOM_EUTF8);
  CHECK(lfcore_atoms_size(atoms) == 1);
  lfcore_atoms_destroy(atoms);
  printf("c consumer: lfht and atoms ok\n");
  return 0;
}
