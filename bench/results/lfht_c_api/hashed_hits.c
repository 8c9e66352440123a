/* Instructions per lfht_search hit on a table WITH a hash function (8-byte
 * integer keys behind pointers, hashed and compared through the callbacks):
 * the path the key-is-its-own-hash count (../instructions/atom_count.cpp) does
 * not take. 65,536 keys, each searched twice inside hashed_hits(). With the
 * argument "nocmp" the table has no key_cmp (hashes never collide).
 *   gcc -O2 -std=c11 -IROOT/include hashed_hits.c BUILD/liblfcore.a -lstdc++ -lpthread -o hashed_hits
 *   valgrind --tool=callgrind --toggle-collect=hashed_hits ./hashed_hits [nocmp]
 *   # PROGRAM TOTALS / 131,072 searches (includes the callbacks' own instructions) */
#include <lfht.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t hash_u64(void *k) {
  uint64_t x = *(uint64_t *)k;
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}
static int compare_u64(void *a, void *b) {
  const uint64_t x = *(uint64_t *)a, y = *(uint64_t *)b;
  return x < y ? -1 : x > y;
}

__attribute__((noinline)) size_t hashed_hits(struct lfht_head *t, uint64_t *keys, int n) {
  size_t sum = 0;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < n; ++i) sum += (uintptr_t)lfht_search(t, &keys[i]);
  return sum;
}

int main(int argc, char **argv) {
  enum { n = 65536 };
  const int nocmp = argc > 1 && strcmp(argv[1], "nocmp") == 0;
  struct lfht_head *t = init_lfht(hash_u64, nocmp ? NULL : compare_u64, NULL);
  /* The table keeps pointers into stored; searches pass copies (keys). */
  uint64_t *stored = malloc(n * sizeof *stored), *keys = malloc(n * sizeof *keys);
  if (t == NULL || stored == NULL || keys == NULL) return 1;
  for (int i = 0; i < n; ++i) {
    keys[i] = stored[i] = (uint64_t)i * 7919 + 1;
    lfht_insert(t, &stored[i], (void *)(uintptr_t)(i + 1));
  }
  printf("%zu\n", hashed_hits(t, keys, n));
  lfht_free(t);
  free(stored);
  free(keys);
  return 0;
}
