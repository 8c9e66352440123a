/* The C API's calls alone, one thread: n inserts of new keys into a fresh
 * table, n searches of present keys, n inserts of present keys, n removes;
 * 5 rounds, mean ns per call; and the heap the table holds per key after the
 * inserts (glibc's mallinfo2, main arena: one thread). Keys are their own hash
 * (no callbacks), as in the paper's Fig. 5 usage. A second argument "sized"
 * makes the table with init_lfht_sized(..., n) instead of init_lfht.
 *   gcc -O2 -std=c11 -IROOT/include lfht_ops.c BUILD/liblfcore.a -lstdc++ -lpthread -o lfht_ops
 *   taskset -c 0 ./lfht_ops 100000 [sized] */
#define _GNU_SOURCE
#include <lfht.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static double heap_bytes(void) {
  const struct mallinfo2 m = mallinfo2();
  return (double)(m.uordblks + m.hblkhd);
}
/* Distinct, non-NULL, well spread keys. */
static void *key_of(long i) {
  uint64_t x = (uint64_t)i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (void *)(uintptr_t)(x | 1);
}
static void *value_of(long i) { return (void *)(uintptr_t)(i + 1); }

int main(int argc, char **argv) {
  const long n = argc > 1 ? atol(argv[1]) : 1000000;
  const int sized = argc > 2 && strcmp(argv[2], "sized") == 0;
  const int rounds = 5;
  double insert = 0, search = 0, present = 0, removal = 0, bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    const double heap0 = heap_bytes();
    struct lfht_head *t =
        sized ? init_lfht_sized(NULL, NULL, NULL, (size_t)n) : init_lfht(NULL, NULL, NULL);
    const double t0 = now();
    for (long i = 0; i < n; ++i) lfht_insert(t, key_of(i), value_of(i));
    const double t1 = now();
    bytes += heap_bytes() - heap0;
    for (long i = 0; i < n; ++i)
      if (lfht_search(t, key_of(i)) != value_of(i)) abort();
    const double t2 = now();
    for (long i = 0; i < n; ++i)
      if (lfht_insert(t, key_of(i), value_of(-2)) != value_of(i)) abort();
    const double t3 = now();
    for (long i = 0; i < n; ++i)
      if (lfht_remove(t, key_of(i)) != value_of(i)) abort();
    const double t4 = now();
    insert += t1 - t0;
    search += t2 - t1;
    present += t3 - t2;
    removal += t4 - t3;
    lfht_free(t);
  }
  const double scale = 1e9 / rounds / (double)n;
  printf("ns/op insert %.1f  search %.1f  insert-present %.1f  remove %.1f  heap bytes/key %.1f\n",
         insert * scale, search * scale, present * scale, removal * scale,
         bytes / rounds / (double)n);
  return 0;
}
