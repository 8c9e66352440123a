/* The C API (lfht.h) from C11: no C++ in sight. Each check aborts with a
 * message on failure; the program returns 0 when all pass. */
#include <lfht.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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
  CHECK(lfht_count(t) == 999);
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

/* init_lfht_sized: any size gives a working table, below, at and far past
 * the keys it was sized for (0 is init_lfht's default). */
static void sized_tables(void) {
  const size_t sizes[] = {0, 1, 100, 5000, 100000};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
    struct lfht_head *t = init_lfht_sized(NULL, NULL, NULL, sizes[s]);
    CHECK(t != NULL);
    for (uintptr_t k = 1; k <= 5000; ++k) CHECK(lfht_insert(t, AS_PTR(k), AS_PTR(k + 1)) == AS_PTR(k + 1));
    for (uintptr_t k = 1; k <= 5000; ++k) CHECK(lfht_search(t, AS_PTR(k)) == AS_PTR(k + 1));
    CHECK(lfht_search(t, AS_PTR(5001)) == NULL);
    for (uintptr_t k = 2; k <= 5000; k += 2) CHECK(lfht_remove(t, AS_PTR(k)) == AS_PTR(k + 1));
    CHECK(lfht_count(t) == 2500);
    size_t visited = 0;
    for (void *k = lfht_next_key(t, NULL); k != NULL; k = lfht_next_key(t, k)) {
      CHECK((uintptr_t)k % 2 == 1 && lfht_search(t, k) == AS_PTR((uintptr_t)k + 1));
      ++visited;
    }
    CHECK(visited == 2500);
    lfht_free(t);
  }
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

/* Without hash_func the key pointer is the hash: two pointers are two keys,
 * even when key_cmp calls their texts equal. 64 of them in a 16-bucket first
 * level must share buckets, where a key_cmp-only equality would merge them.
 * Without key_free the table keeps bare pointers; with it, keys it owns. */
static int same_freed;
static void same_free(void *k) {
  ++same_freed;
  free(k);
}
static void pointer_keys_with_compare(void (*key_free)(void *)) {
  struct lfht_head *t = init_lfht_sized(NULL, text_cmp, key_free, 16);
  char *keys[64];
  for (int i = 0; i < 64; ++i) {
    keys[i] = malloc(8);
    strcpy(keys[i], "same");
    CHECK(lfht_insert(t, keys[i], AS_PTR(i + 1)) == AS_PTR(i + 1));
  }
  CHECK(lfht_count(t) == 64);
  for (int i = 0; i < 64; ++i) CHECK(lfht_search(t, keys[i]) == AS_PTR(i + 1));
  CHECK(lfht_search(t, "same") == NULL); /* another pointer: absent */
  CHECK(lfht_remove(t, keys[7]) == AS_PTR(8) && lfht_search(t, keys[8]) == AS_PTR(9));
  same_freed = 0;
  lfht_free(t);
  if (key_free == NULL) {
    CHECK(same_freed == 0);
    for (int i = 0; i < 64; ++i) free(keys[i]);
  } else { /* all but keys[7], whose reclamation may come later */
    CHECK(same_freed == 63 || same_freed == 64);
  }
}

/* A hash_func whose result the table's mixing turns back into the key's value
 * (MurmurHash3's finalizer undone, as tests/placed_hash.hpp does): keys whose
 * values differ only in their low bits share a bucket, and its summary. */
static size_t placed(void *k) {
  uint64_t h = *(const uint64_t *)k;
  h ^= h >> 33;
  h *= 0x9cb4b2f8129337dbu;
  h ^= h >> 33;
  h *= 0x4f74430c22a54005u;
  h ^= h >> 33;
  return (size_t)h;
}

/* Without key_cmp, keys are equal exactly when their hashes are: keys of one
 * chain with other hashes are other keys. */
static void distinct_hashes_in_one_chain(void) {
  static uint64_t values[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  struct lfht_head *t = init_lfht(placed, NULL, NULL);
  CHECK(lfht_insert(t, &values[0], AS_PTR(1)) == AS_PTR(1));
  for (int i = 1; i < 8; ++i) {
    CHECK(lfht_search(t, &values[i]) == NULL);
    CHECK(lfht_insert(t, &values[i], AS_PTR(i + 1)) == AS_PTR(i + 1));
  }
  uint64_t copy = 5; /* another pointer, the same hash: the same key */
  CHECK(lfht_search(t, &copy) == AS_PTR(6) && lfht_count(t) == 8);
  lfht_free(t);
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

/* The paper's way to empty a table: lfht_next_key from NULL, then
 * lfht_remove of the table's own key pointer, which that call may free (its
 * element reclaimed) and must not read afterwards, nor may any later call.
 * Keys are never really freed here: key_free marks them dead, and hash and
 * compare check that they are not. Eight hashes in all, so that searches
 * compare keys. (Whether a reclamation lands inside a remove depends on
 * scan timing; hash_trie_map_test's
 * EraseOfAKeyBorrowedFromItsElementKeepsTheElement forces it.) */
enum { tracked_count = 3000, live_mark = 0x11, dead_mark = 0xdd };
struct tracked_key {
  int mark;
  int id;
};
static struct tracked_key tracked[tracked_count];
static int tracked_freed;
static size_t tracked_hash(void *key) {
  const struct tracked_key *k = key;
  CHECK(k->mark == live_mark);
  return (size_t)(k->id % 8);
}
static int tracked_cmp(void *a, void *b) {
  const struct tracked_key *x = a, *y = b;
  CHECK(x->mark == live_mark && y->mark == live_mark);
  return (x->id > y->id) - (x->id < y->id);
}
static void tracked_free(void *key) {
  struct tracked_key *k = key;
  CHECK(k->mark == live_mark);
  k->mark = dead_mark;
  ++tracked_freed;
}
static void removed_by_the_tables_own_key(void) {
  struct lfht_head *t = init_lfht(tracked_hash, tracked_cmp, tracked_free);
  for (int i = 0; i < tracked_count; ++i) {
    tracked[i] = (struct tracked_key){live_mark, i};
    CHECK(lfht_insert(t, &tracked[i], AS_PTR(i + 1)) == AS_PTR(i + 1));
  }
  for (void *k; (k = lfht_next_key(t, NULL)) != NULL;) {
    const int id = ((struct tracked_key *)k)->id;
    CHECK(lfht_remove(t, k) == AS_PTR(id + 1));
  }
  CHECK(lfht_count(t) == 0);
  lfht_free(t);
  /* Freed once reclaimed, by this thread's later removals or scans: at
   * most once each (tracked_free checks), all of them by the end of a churn. */
  struct lfht_head *other = init_lfht(NULL, NULL, NULL);
  for (uintptr_t k = 1; k <= 40000; ++k) {
    lfht_insert(other, AS_PTR(k), AS_PTR(k));
    lfht_remove(other, AS_PTR(k));
  }
  lfht_free(other);
  CHECK(tracked_freed == tracked_count);
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
  errno = 0;
  CHECK(lfht_count(NULL) == 0 && errno == EINVAL);
  CHECK(lfht_count(t) == 0); /* nothing was inserted */
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

static size_t scrambled(void *k) { return (uintptr_t)k * 0x9e3779b97f4a7c15u; }

/* Two kinds of table: the key its own hash, and hashed. */
static void threads(size_t (*hash)(void *)) {
  struct lfht_head *t = init_lfht(hash, NULL, NULL);
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
  CHECK(lfht_count(t) == 20000); /* each key counted once */
  lfht_free(t);
}

/* lfht_for_each: every element once, early stop, misuse. */
struct tally {
  uintptr_t sum;
  int calls, stop_after;
};
static int add_value(void *key, void *value, void *arg) {
  struct tally *t = arg;
  CHECK((uintptr_t)value == (uintptr_t)key * 10);
  t->sum += (uintptr_t)value;
  return ++t->calls == t->stop_after ? 42 : 0;
}
static int remove_even(void *key, void *value, void *arg) {
  (void)value;
  if ((uintptr_t)key % 2 == 0) CHECK(lfht_remove(arg, key) == AS_PTR((uintptr_t)key * 10));
  return 0;
}
static void for_each(void) {
  struct lfht_head *t = init_lfht(NULL, NULL, NULL);
  struct tally all = {0, 0, -1};
  CHECK(lfht_for_each(t, add_value, &all) == 0 && all.calls == 0); /* empty */
  for (uintptr_t k = 1; k <= 500; ++k) lfht_insert(t, AS_PTR(k), AS_PTR(k * 10));
  CHECK(lfht_for_each(t, add_value, &all) == 0);
  CHECK(all.calls == 500 && all.sum == 10 * 500 * 501 / 2);
  struct tally some = {0, 0, 7};
  CHECK(lfht_for_each(t, add_value, &some) == 42 && some.calls == 7);
  CHECK(lfht_for_each(t, remove_even, t) == 0); /* fn may change the table */
  struct tally odd = {0, 0, -1};
  CHECK(lfht_for_each(t, add_value, &odd) == 0 && odd.calls == 250 && odd.sum == 10 * 250 * 250);
  errno = 0;
  CHECK(lfht_for_each(NULL, add_value, &all) == -1 && errno == EINVAL);
  errno = 0;
  CHECK(lfht_for_each(t, NULL, &all) == -1 && errno == EINVAL);
  lfht_free(t);
}

/* Owned string keys under churn while another thread iterates with
 * lfht_for_each and reads every key it is given: under ASan a key freed
 * while fn runs is a use after free. Keys "s<i>" stay throughout and must be
 * visited exactly once per pass; keys "c<i>" come and go. At the end, the
 * inserts that took a key minus the removals equal what is left. */
#define STABLE 8
#define CHURNED 32
#if defined(LFCORE_STRESS) && LFCORE_STRESS /* stress constants and injected yields: slower */
#define CHURN_ROUNDS 20000
#else
#define CHURN_ROUNDS 200000
#endif
static atomic_int keys_freed;
static size_t churn_hash(void *k) { return text_hash(k); }
static void churn_free(void *k) {
  atomic_fetch_add_explicit(&keys_freed, 1, memory_order_relaxed);
  free(k);
}
static int next_random(uint32_t *state) { /* xorshift32 (Marsaglia) */
  *state ^= *state << 13;
  *state ^= *state >> 17;
  *state ^= *state << 5;
  return (int)(*state >> 1);
}
static uintptr_t churn_value(int key, int thread, int round) {
  return ((uintptr_t)(key + 1) << 32) | ((uintptr_t)thread << 28) | (uintptr_t)round;
}
struct churner {
  struct lfht_head *t;
  int id;
  long inserted, removed;
};
static void *churn(void *arg) {
  struct churner *c = arg;
  uint32_t seed = 7919u * (uint32_t)(c->id + 1);
  char probe[16];
  for (int r = 0; r < CHURN_ROUNDS; ++r) {
    int k = next_random(&seed) % CHURNED;
    char *key = malloc(16);
    snprintf(key, 16, "c%d", k);
    void *v = AS_PTR(churn_value(k, c->id, r));
    void *got = lfht_insert(c->t, key, v);
    if (got == v) {
      ++c->inserted; /* the table owns key now */
    } else {
      CHECK(((uintptr_t)got >> 32) == (uintptr_t)(k + 1)); /* the value of this key */
      free(key);
    }
    snprintf(probe, sizeof probe, "c%d", next_random(&seed) % CHURNED);
    void *removed = lfht_remove(c->t, probe);
    if (removed != NULL) {
      CHECK(((uintptr_t)removed >> 32) == (uintptr_t)atoi(probe + 1) + 1);
      ++c->removed;
    }
  }
  return NULL;
}
struct pass {
  unsigned char stable_seen[STABLE];
  long churned, calls;
};
static int check_element(void *key, void *value, void *arg) {
  struct pass *p = arg;
  const char *text = key;
  char copy[16];
  snprintf(copy, sizeof copy, "%s", text);
  if (p->calls++ % 4 == 0) sched_yield(); /* let the churners remove it meanwhile */
  CHECK(strcmp(copy, text) == 0);          /* still readable, unchanged */
  const int i = atoi(text + 1);
  if (text[0] == 's') {
    CHECK(i >= 0 && i < STABLE && (uintptr_t)value == (uintptr_t)(i + 1));
    CHECK(p->stable_seen[i]++ == 0); /* never twice */
  } else {
    CHECK(text[0] == 'c' && i >= 0 && i < CHURNED);
    CHECK(((uintptr_t)value >> 32) == (uintptr_t)(i + 1));
    ++p->churned;
  }
  return 0;
}
static atomic_int churning;
static void *iterate(void *arg) {
  struct lfht_head *t = arg;
  int passes = 0;
  while (atomic_load(&churning) || passes == 0) {
    struct pass p;
    memset(&p, 0, sizeof p);
    CHECK(lfht_for_each(t, check_element, &p) == 0);
    for (int i = 0; i < STABLE; ++i) CHECK(p.stable_seen[i] == 1); /* present throughout */
    ++passes;
  }
  return NULL;
}
static void for_each_under_churn(void) {
  atomic_store(&keys_freed, 0);
  struct lfht_head *t = init_lfht(churn_hash, text_cmp, churn_free);
  for (int i = 0; i < STABLE; ++i) {
    char *key = malloc(16);
    snprintf(key, 16, "s%d", i);
    CHECK(lfht_insert(t, key, AS_PTR(i + 1)) == AS_PTR(i + 1));
  }
  atomic_store(&churning, 1);
  pthread_t reader, writers[2];
  struct churner c[2] = {{t, 0, 0, 0}, {t, 1, 0, 0}};
  CHECK(pthread_create(&reader, NULL, iterate, t) == 0);
  for (int w = 0; w < 2; ++w) CHECK(pthread_create(&writers[w], NULL, churn, &c[w]) == 0);
  for (int w = 0; w < 2; ++w) CHECK(pthread_join(writers[w], NULL) == 0);
  atomic_store(&churning, 0);
  CHECK(pthread_join(reader, NULL) == 0);
  struct pass last;
  memset(&last, 0, sizeof last);
  CHECK(lfht_for_each(t, check_element, &last) == 0);
  CHECK(c[0].inserted + c[1].inserted - c[0].removed - c[1].removed == last.churned);
  lfht_free(t);
  /* lfht_free freed every key still in the table; removed ones go as they are reclaimed. */
  CHECK(atomic_load(&keys_freed) >= STABLE + last.churned);
}

/* Keys the table owns but hashes by their address (no hash_func, key_free
 * given): two threads insert fresh keys and remove some of their own while a
 * third walks the table and reads every key it is given. A removed key's
 * memory may come back from malloc as another thread's new key. */
struct pointer_churner {
  struct lfht_head *t;
  int id;
  long live;
};
static uintptr_t pointer_value(int id, int round) {
  return ((uintptr_t)(id + 1) << 32) | (uintptr_t)round;
}
static void *churn_own_pointers(void *arg) {
  struct pointer_churner *c = arg;
  enum { kept = 16 };
  char *mine[kept] = {0};
  uint32_t seed = 104729u * (uint32_t)(c->id + 1);
  for (int r = 0; r < CHURN_ROUNDS / 4; ++r) {
    char *key = malloc(16);
    snprintf(key, 16, "p%d:%d", c->id, r);
    const uintptr_t v = pointer_value(c->id, r);
    CHECK(lfht_insert(c->t, key, AS_PTR(v)) == AS_PTR(v)); /* a new pointer: a new key */
    ++c->live;
    const int slot = next_random(&seed) % kept;
    if (mine[slot] != NULL) { /* remove an older key of ours; it is not ours to read after */
      const int older = atoi(strchr(mine[slot], ':') + 1);
      CHECK(lfht_remove(c->t, mine[slot]) == AS_PTR(pointer_value(c->id, older)));
      --c->live;
    }
    mine[slot] = key;
  }
  return NULL;
}
static int check_pointer_key(void *key, void *value, void *arg) {
  int id, r;
  CHECK(sscanf(key, "p%d:%d", &id, &r) == 2); /* readable while given */
  CHECK((uintptr_t)value == pointer_value(id, r));
  ++*(long *)arg;
  return 0;
}
static void *walk_pointer_keys(void *arg) {
  while (atomic_load(&churning)) {
    long seen = 0;
    CHECK(lfht_for_each(arg, check_pointer_key, &seen) == 0);
  }
  return NULL;
}
static void owned_pointer_keys_under_churn(void) {
  atomic_store(&keys_freed, 0);
  struct lfht_head *t = init_lfht(NULL, NULL, churn_free);
  atomic_store(&churning, 1);
  pthread_t reader, writers[2];
  struct pointer_churner c[2] = {{t, 0, 0}, {t, 1, 0}};
  CHECK(pthread_create(&reader, NULL, walk_pointer_keys, t) == 0);
  for (int w = 0; w < 2; ++w)
    CHECK(pthread_create(&writers[w], NULL, churn_own_pointers, &c[w]) == 0);
  for (int w = 0; w < 2; ++w) CHECK(pthread_join(writers[w], NULL) == 0);
  atomic_store(&churning, 0);
  CHECK(pthread_join(reader, NULL) == 0);
  long seen = 0;
  CHECK(lfht_for_each(t, check_pointer_key, &seen) == 0);
  CHECK(seen == c[0].live + c[1].live && lfht_count(t) == (size_t)seen);
  const int before = atomic_load(&keys_freed);
  lfht_free(t);
  CHECK(atomic_load(&keys_freed) - before == seen); /* every key still in the table, once */
}

int main(void) {
  integer_keys();
  sized_tables();
  string_keys(text_hash);
  string_keys(same_hash);
  pointer_keys_with_compare(NULL);
  pointer_keys_with_compare(same_free);
  distinct_hashes_in_one_chain();
  reclaimed_after_the_table_is_freed();
  removed_by_the_tables_own_key();
  misuse();
  threads(NULL);
  threads(scrambled);
  for_each();
  for_each_under_churn();
  owned_pointer_keys_under_churn();
  puts("lfht C API: all checks passed");
  return 0;
}
