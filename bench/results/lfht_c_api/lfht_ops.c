/* The C API's calls alone, one thread: n inserts of new keys into a fresh
 * table, n inserts of present keys, n removes; 5 rounds, mean ns per call.
 * Keys are their own hash (no callbacks), as in the paper's Fig. 5 usage.
 *   gcc -O2 -std=c11 -IROOT/include lfht_ops.c BUILD/liblfcore.a -lstdc++ -lpthread -o lfht_ops
 *   taskset -c 0 ./lfht_ops 100000 */
#define _POSIX_C_SOURCE 199309L
#include <lfht.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
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
  const int rounds = 5;
  double insert = 0, present = 0, removal = 0;
  for (int r = 0; r < rounds; ++r) {
    struct lfht_head *t = init_lfht(NULL, NULL, NULL);
    const double t0 = now();
    for (long i = 0; i < n; ++i) lfht_insert(t, key_of(i), value_of(i));
    const double t1 = now();
    for (long i = 0; i < n; ++i)
      if (lfht_insert(t, key_of(i), value_of(-2)) != value_of(i)) abort();
    const double t2 = now();
    for (long i = 0; i < n; ++i)
      if (lfht_remove(t, key_of(i)) != value_of(i)) abort();
    const double t3 = now();
    insert += t1 - t0;
    present += t2 - t1;
    removal += t3 - t2;
    lfht_free(t);
  }
  const double scale = 1e9 / rounds / (double)n;
  printf("ns/op insert %.1f  insert-present %.1f  remove %.1f\n", insert * scale,
         present * scale, removal * scale);
  return 0;
}
