/* The C API (lfht.h) from C11: no C++ in sight. Each check aborts with a
 * message on failure; the program returns 0 when all pass. */
#include <lfht.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define AS_PTR(i) ((void *)(uintptr_t)(i))

static void integer_keys(void) {
  /* No callbacks: the key pointer is the hash, and hashes never collide. */
  struct lfht_head *t = init_lfht(NULL, NULL, NULL);
  CHECK(t != NULL);
  for (uintptr_t k = 1; k <= 1000; ++k) CHECK(lfht_insert(t, AS_PTR(k), AS_PTR(k * 10)) == AS_PTR(k * 10));
  CHECK(lfht_insert(t, AS_PTR(5), AS_PTR(99)) == AS_PTR(50)); /* present: the old value */
  for (uintptr_t k = 1; k <= 1000; ++k) CHECK(lfht_search(t, AS_PTR(k)) == AS_PTR(k * 10));
  CHECK(lfht_search(t, AS_PTR(1001)) == NULL);
  CHECK(lfht_remove(t, AS_PTR(7)) == AS_PTR(70));
  CHECK(lfht_remove(t, AS_PTR(7)) == NULL);
  CHECK(lfht_search(t, AS_PTR(7)) == NULL);
  /* Iteration: every key once. */
  static unsigned char seen[1001];
  size_t count = 0;
  for (void *k = lfht_next_key(t, NULL); k != NULL; k = lfht_next_key(t, k)) {
    uintptr_t i = (uintptr_t)k;
    CHECK(i >= 1 && i <= 1000 && i != 7 && !seen[i]);
    seen[i] = 1;
    ++count;
  }
  CHECK(count == 999);
  lfht_free(t);
}

static int frees[64];
static size_t text_hash(void *k) {
  size_t h = 1469598103934665603u;
  for (const char *s = k; *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}
static size_t same_hash(void *k) {
  (void)k;
  return 3;
}
static int text_cmp(void *a, void *b) { return strcmp(a, b); }
/* Counts frees per key name; freeing one allocation twice is what ASan checks. */
static void text_free(void *k) {
  int i = atoi((char *)k + 1); /* keys are "k<number>" */
  CHECK(i >= 0 && i < 64);
  ++frees[i];
  free(k);
}
static char *text_key(int i) {
  char *s = malloc(16);
  snprintf(s, 16, "k%d", i);
  return s;
}

static void string_keys(size_t (*hash)(void *)) {
  memset(frees, 0, sizeof frees);
  struct lfht_head *t = init_lfht(hash, text_cmp, text_free);
  CHECK(t != NULL);
  for (int i = 0; i < 64; ++i) CHECK(lfht_insert(t, text_key(i), AS_PTR(i + 1)) == AS_PTR(i + 1));
  char probe[16];
  for (int i = 0; i < 64; ++i) {
    snprintf(probe, sizeof probe, "k%d", i);
    CHECK(lfht_search(t, probe) == AS_PTR(i + 1));
  }
  char *dup = text_key(3); /* present: the table does not take it */
  CHECK(lfht_insert(t, dup, AS_PTR(100)) == AS_PTR(4));
  free(dup);
  CHECK(lfht_remove(t, "k10") == AS_PTR(11));
  if (hash == same_hash) { /* equal hashes: iteration in strcmp order */
    char last[16] = "";
    int n = 0;
    for (void *k = lfht_next_key(t, NULL); k != NULL; k = lfht_next_key(t, k), ++n) {
      CHECK(strcmp(last, k) < 0);
      snprintf(last, sizeof last, "%s", (char *)k);
    }
    CHECK(n == 63);
  }
  lfht_free(t);
  /* Every key the table owned is freed by now, but the removed one only once
   * no thread can read it: possibly later, by the hazard-pointer domain. */
  for (int i = 0; i < 64; ++i) CHECK(i == 10 || frees[i] == 1);
  /* k10 was removed: freed once no thread can read it, maybe later. */
}

/* A removed key is freed once no thread can read it, which may be after the
 * table itself is gone: the reclamation must not need the table. */
static void reclaimed_after_the_table_is_freed(void) {
  memset(frees, 0, sizeof frees);
  struct lfht_head *t = init_lfht(text_hash, text_cmp, text_free);
  for (int i = 50; i < 54; ++i) lfht_insert(t, text_key(i), AS_PTR(i));
  CHECK(lfht_remove(t, "k51") == AS_PTR(51));
  lfht_free(t); /* frees k50, k52, k53 now; k51 waits for reclamation */
  CHECK(frees[50] == 1 && frees[52] == 1 && frees[53] == 1);
  /* Enough removals on this thread to make it reclaim what it retired. */
  struct lfht_head *other = init_lfht(NULL, NULL, NULL);
  for (uintptr_t k = 1; k <= 40000; ++k) {
    lfht_insert(other, AS_PTR(k), AS_PTR(k));
    lfht_remove(other, AS_PTR(k));
  }
  lfht_free(other);
  CHECK(frees[51] == 1);
}

static void misuse(void) {
  struct lfht_head *t = init_lfht(NULL, NULL, NULL);
  errno = 0;
  CHECK(lfht_search(NULL, AS_PTR(1)) == NULL && errno == EINVAL);
  errno = 0;
  CHECK(lfht_insert(t, NULL, AS_PTR(1)) == NULL && errno == EINVAL);
  errno = 0;
  CHECK(lfht_insert(t, AS_PTR(1), NULL) == NULL && errno == EINVAL);
  CHECK(lfht_search(t, AS_PTR(1)) == NULL); /* nothing was inserted */
  errno = 0;
  CHECK(lfht_remove(NULL, AS_PTR(1)) == NULL && errno == EINVAL);
  errno = 0;
  CHECK(lfht_next_key(NULL, NULL) == NULL && errno == EINVAL);
  lfht_free(NULL);
  lfht_free(t);
}

struct worker {
  struct lfht_head *t;
  uintptr_t id;
  int mismatches;
};
static void *insert_same_keys(void *arg) {
  struct worker *w = arg;
  for (uintptr_t k = 1; k <= 20000; ++k) {
    void *got = lfht_insert(w->t, AS_PTR(k), AS_PTR(k << 4 | w->id));
    if (((uintptr_t)got >> 4) != k) ++w->mismatches; /* a value of another key */
  }
  return NULL;
}

static void threads(void) {
  struct lfht_head *t = init_lfht(NULL, NULL, NULL);
  pthread_t th[4];
  struct worker w[4];
  for (int i = 0; i < 4; ++i) {
    w[i] = (struct worker){t, (uintptr_t)i + 1, 0};
    CHECK(pthread_create(&th[i], NULL, insert_same_keys, &w[i]) == 0);
  }
  for (int i = 0; i < 4; ++i) {
    pthread_join(th[i], NULL);
    CHECK(w[i].mismatches == 0);
  }
  /* One winner per key, and every thread got the winner's value. */
  for (uintptr_t k = 1; k <= 20000; ++k) CHECK(((uintptr_t)lfht_search(t, AS_PTR(k)) >> 4) == k);
  lfht_free(t);
}

int main(void) {
  integer_keys();
  string_keys(text_hash);
  string_keys(same_hash);
  reclaimed_after_the_table_is_freed();
  misuse();
  threads();
  puts("lfht C API: all checks passed");
  return 0;
}
