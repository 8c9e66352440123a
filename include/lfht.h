/* lfht.h - the C interface of lfcore's lock-free hash trie, as in Fig. 5 of
 * "A Lock-Free Atom Table for Prolog Interpreters" (Moreno, Areias, Rocha):
 * keys and values are void pointers; the table calls back for hashing,
 * comparing and freeing keys.
 *
 * Callbacks (each may be NULL, with the paper's meaning):
 *   hash_func(key)  the key's hash. NULL: the key pointer's value is the hash,
 *                   so two keys are equal exactly when they are the same
 *                   pointer (key_cmp is then never called).
 *   key_cmp(a, b)   0 when equal, <0 / >0 to order keys whose hashes are equal
 *                   (iteration order). NULL: hashes never collide - two keys
 *                   are equal exactly when their hashes are.
 *   key_free(key)   frees a key the table owns, once no thread can still read
 *                   it (after lfht_remove, and for every key in lfht_free).
 *                   NULL: keys are never freed.
 *
 * Memory: each key takes one leaf from malloc - 48 bytes with hash_func (it
 * stores the hash), 40 without, 24 with no callback at all - besides its
 * share of the buckets (8 bytes each; see init_lfht_sized).
 *
 * Threads: any number of threads may call any function concurrently except
 * lfht_free, with no registration. Every call is lock-free.
 *
 * Errors: a NULL head, a NULL key or a NULL value is a misuse: the call does
 * nothing, sets errno to EINVAL and returns NULL. (NULL is reserved as "absent"
 * in every return value, so NULL values cannot be stored.) An allocation
 * failure sets errno to ENOMEM and returns NULL; nothing is changed then.
 */
#ifndef LFHT_H
#define LFHT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lfht_head;

/* Creates an empty table. Returns NULL (errno ENOMEM) if out of memory. */
struct lfht_head *init_lfht(size_t (*hash_func)(void *), int (*key_cmp)(void *, void *),
                            void (*key_free)(void *));

/* The same, sized for about expected_keys keys: its first level gets a bucket
 * (8 bytes) per expected key, rounded up to a power of two from 16 to 2^24,
 * allocated now; 0 gives init_lfht's default of 2^16. The first level never
 * grows: keys past it go into deeper levels, and lookups slow as those fill
 * (one thread, 1e6 integer keys: a search took about 100 ns sized, 200 ns
 * with the default), so pass an estimate when more than about 100,000 keys
 * may come. Returns NULL (errno ENOMEM) if out of memory. */
struct lfht_head *init_lfht_sized(size_t (*hash_func)(void *), int (*key_cmp)(void *, void *),
                                  void (*key_free)(void *), size_t expected_keys);

/* The value associated with key, or NULL if key is absent. */
void *lfht_search(struct lfht_head *head, void *key);

/* If key is present, returns its value and leaves the table unchanged (the
 * caller keeps ownership of the key it passed). Otherwise inserts (key, value),
 * takes ownership of key, and returns value. Get-or-insert: of many threads
 * inserting the same key, one inserts and all get that one's value. */
void *lfht_insert(struct lfht_head *head, void *key, void *value);

/* Removes key and returns the value it had, or NULL if it was absent. The
 * table's key is passed to key_free once no thread can still read it. */
void *lfht_remove(struct lfht_head *head, void *key);

/* The key after key in (hash, key) order; key NULL gives the first key; NULL
 * when there is none. key need not be present. The iteration guarantees are
 * those of hash_trie_map (every key present throughout is returned once, in
 * order). The returned pointer is the table's key: it stays valid until the
 * key is removed, so a caller that iterates while others remove must not
 * dereference it after such a removal could have happened - nor pass it back
 * to lfht_next_key, which hashes and compares it (pass a copy, or iterate
 * with lfht_for_each). */
void *lfht_next_key(struct lfht_head *head, void *key);

/* Calls fn(key, value, arg) for every element, in (hash, key) order, with the
 * guarantees of lfht_next_key; while a call runs, its key and value stay valid
 * even if another thread removes them (key_free waits). fn returns 0 to go on,
 * anything else to stop; fn may call any function of this header on the table
 * but lfht_free, and must not unwind (no C++ exception, no longjmp out of it).
 * Returns 0 when every element was visited, the nonzero value fn returned to
 * stop, or -1 with errno EINVAL (NULL head or fn) or ENOMEM (out of memory;
 * some elements may have been visited). */
int lfht_for_each(struct lfht_head *head, int (*fn)(void *key, void *value, void *arg),
                  void *arg);

/* The number of keys: exact when no other thread changes the table, otherwise
 * off by at most the inserts and removes running meanwhile. Wait-free; never
 * allocates. A NULL head gives 0 and sets errno to EINVAL (an empty table
 * gives 0 and leaves errno alone). */
size_t lfht_count(struct lfht_head *head);

/* Destroys the table: key_free on every key. No concurrent calls. NULL: no-op. */
void lfht_free(struct lfht_head *head);

#ifdef __cplusplus
}
#endif

#endif /* LFHT_H */
