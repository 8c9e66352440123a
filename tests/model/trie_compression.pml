/* tests/model/trie_compression.pml - hash_trie_map's level compression
 * (include/lfcore/hash_trie_map.hpp, "compression": remove_if_empty,
 * try_remove, settle_frozen, thaw, detach), checked by Spin over every
 * interleaving of three threads (tests/model/check.sh runs it).
 *
 * What is modelled: a level L below the root, reached through the root's
 * bucket (hoisted, its overflow chain already empty), with one bucket per key:
 * key k goes to L's bucket k. Each step of a thread is one load, store or CAS
 * of the C++ code, on the same words: L's buckets (to_word(L), a leaf, or
 * frozen_word(id)), L's compression word (id, phase), a leaf's mark and the
 * root's bucket. After the detach the keys go to the root's own chain, a
 * Michael list that is not what is checked here: it is a set, changed
 * atomically. Sequential consistency: the memory orders are ThreadSanitizer's
 * to check, not this model's. Hazard pointers are assumed: a thread may read
 * a level or leaf that was retired after it reached it.
 *
 * What is checked, in every interleaving:
 * - no key is lost: an insert never links into L once an attempt committed
 *   (every bucket frozen for good) or after L was detached, and the detach
 *   finds every bucket frozen;
 * - the map stays a set: each insert or erase that succeeds takes effect
 *   exactly once at its CAS (the ghost `present`), so no key is ever in L
 *   twice or in L and the root's chain at once;
 * - each result is linearizable: a find or an insert that meets the key saw it
 *   present at some instant of its call, one that reports it absent saw it
 *   absent at some instant;
 * - L and each leaf are retired once, and only when unreachable;
 * - at the end, what is reachable is exactly the ghost set;
 * - no execution runs forever without an operation completing (Spin's
 *   non-progress cycles, `check.sh`'s second pass); attempts are bounded by
 *   MAX_ID here, so this says that no retry loop repeats a state.
 *
 * MUTANT (0 = the C++ protocol) breaks one rule, to show that the checks can
 * fail (check.sh expects Spin to find an error in each):
 * 1: an insert that meets a bucket frozen by a running attempt thaws it
 *    without aborting the attempt, which may then commit over its key;
 * 2: the commit does not check that the attempt is still its own
 *    (a plain store of `committed` instead of the CAS from `freezing`);
 * 3: an attempt takes over any frozen bucket, even one a later attempt froze;
 * 4: an insert that meets a frozen bucket waits for the attempt to end (it
 *    searches again) instead of aborting or helping it: blocking, not
 *    lock-free - the progress pass must find the insert looping forever
 *    while the attempt's thread does not run.
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NK 2     /* keys 0 and 1 */
#define NL 8     /* leaves: 0 and 1 are there at the start, 2p+2.. are thread p's */
#define MAX_ID 3 /* compression attempts, ids 1..MAX_ID */

/* A word of L's buckets. */
#define EMPTY 0               /* to_word(L): an empty chain */
#define LEAF(l) (1 + (l))     /* a leaf; its next word is to_word(L) */
#define FROZEN(id) (16 + (id)) /* frozen_word(id) */
#define IS_LEAF(w) ((w) >= 1 && (w) < 16)
#define IS_FROZEN(w) ((w) >= 16)
#define LEAF_OF(w) ((w) - 1)
#define ID_OF(w) ((w) - 16)

/* The root's bucket for both keys. */
#define TO_L 0 /* hoisted_word(L) */
#define OPEN 1 /* to_word(root), after the detach: the root's own chain */

#define IDLE 0
#define FREEZING 1
#define COMMITTED 2

#define NONE 0
#define FIND 1
#define INSERT 2
#define ERASE 3

byte root = TO_L;
byte bucket[NK];
byte cid = 0;        /* L's compression word: (cid << 2) | cphase */
byte cphase = IDLE;
bool level_retired = false;
byte leaf_key[NL];
bool leaf_marked[NL];
bool leaf_retired[NL];
bool in_root_chain[NK];

/* Ghost: the abstract map, changed at each operation's linearization point. */
bool present[NK];
byte changes[NK]; /* inserts and erases of key k so far */

/* A CAS that unlinks the marked leaf in w from bucket i (walk()'s unlink).
 * Its next word is to_word(L): the bucket becomes empty. */
inline unlink(i, w) {
  atomic {
    if
    :: bucket[i] == w ->
       bucket[i] = EMPTY;
       assert(leaf_marked[LEAF_OF(w)] && !leaf_retired[LEAF_OF(w)]);
       leaf_retired[LEAF_OF(w)] = true
    :: else -> skip
    fi
  }
}

/* [trie.thaw] */
inline thaw(i, w) {
  atomic {
    if
    :: bucket[i] == w -> bucket[i] = EMPTY
    :: else -> skip
    fi
  }
}

/* Step 4 ([trie.detach]): swing the root's bucket from L back to the root. */
inline detach() {
  w = root;
  if
  :: w == TO_L ->
     atomic {
       if
       :: root == TO_L ->
          root = OPEN;
          assert(cphase == COMMITTED);
          assert(IS_FROZEN(bucket[0]) && IS_FROZEN(bucket[1]));
          assert(!level_retired);
          level_retired = true
       :: else -> skip
       fi
     }
  :: else -> skip
  fi
}

/* An insert found bucket k frozen (w): abort a freezing attempt, then thaw,
 * or help a committed one detach. */
inline settle_frozen(k, w) {
  id = ID_OF(w);
  atomic {
#if MUTANT == 1
    a_id = cid; a_phase = cphase
#else
    if
    :: cid == id && cphase == FREEZING -> cphase = IDLE; a_id = id; a_phase = IDLE
    :: else -> a_id = cid; a_phase = cphase
    fi
#endif
  }
  if
  :: a_id == id && a_phase == COMMITTED -> detach()
  :: else -> thaw(k, w)
  fi
}

/* try_remove(): steps 1-3, then the detach. Sets outcome. */
#define REMOVED 0
#define BUSY 1
#define FAILED 2
inline try_remove() {
  atomic { a_id = cid; a_phase = cphase }; /* relaxed: the CAS validates it */
  if
  :: a_phase != IDLE || a_id == MAX_ID -> outcome = BUSY /* (MAX_ID: the model's bound) */
  :: else ->
     id = a_id + 1;
     atomic { /* [trie.attempt] */
       if
       :: cid == a_id && cphase == IDLE -> cid = id; cphase = FREEZING; ok = true
       :: else -> ok = false
       fi
     }
     if
     :: !ok -> outcome = BUSY
     :: else ->
        all_frozen = true;
        i = 0;
        do
        :: i == NK || !all_frozen -> break
        :: else ->
           expected = EMPTY;
           do
           :: atomic { /* [trie.freeze] */
                if
                :: bucket[i] == expected -> bucket[i] = FROZEN(id); ok = true
                :: else -> expected = bucket[i]; ok = false
                fi
              }
              if
              :: ok -> break
#if MUTANT == 3
              :: !ok && !IS_FROZEN(expected) -> all_frozen = false; break
#else
              :: !ok && (!IS_FROZEN(expected) || ID_OF(expected) > id) -> all_frozen = false; break
#endif
              :: else -> skip /* a stale freeze of an aborted attempt: take it over */
              fi
           od;
           i++
        od;
        ok = false;
        if
        :: all_frozen ->
           atomic { /* commit */
#if MUTANT == 2
             cphase = COMMITTED; ok = true
#else
             if
             :: cid == id && cphase == FREEZING -> cphase = COMMITTED; ok = true
             :: else -> skip
             fi
#endif
           }
        :: else -> skip
        fi;
        if
        :: ok -> detach(); outcome = REMOVED
        :: else ->
           atomic { /* abort, unless an insert did */
             if
             :: cid == id && cphase == FREEZING -> cphase = IDLE
             :: else -> skip
             fi
           };
           thaw(0, FROZEN(id));
           thaw(1, FROZEN(id));
           outcome = FAILED
        fi
     fi
  fi
}

/* unlink_and_compress() after an erase of key k: search again (unlinking a
 * marked leaf) and, while the search ends in an empty bucket of L whose other
 * buckets look empty, try to remove L. */
inline compress(k) {
  do
  :: root == OPEN -> break /* the search ends at the root: no parent */
  :: root == TO_L ->
     w = bucket[k];
     if
     :: IS_LEAF(w) && leaf_marked[LEAF_OF(w)] -> unlink(k, w)
     :: w == EMPTY ->
        /* remove_if_empty: for (;;) { if (!looks_empty) return; try_remove } */
        outcome = BUSY;
        do
        :: w0 = bucket[0];
           w1 = bucket[1];
           if
           :: !((w0 == EMPTY || IS_FROZEN(w0)) && (w1 == EMPTY || IS_FROZEN(w1))) -> break
           :: else ->
              try_remove();
              if
              :: outcome == FAILED -> skip
              :: else -> break
              fi
           fi
        od;
        if
        :: outcome == REMOVED -> outcome = BUSY /* search again: now from the root's chain */
        :: else -> break
        fi
     :: else -> break /* a live leaf, or frozen: not an empty bucket of L */
     fi
  od
}

proctype worker(byte p; byte op1; byte key1; byte op2; byte key2) {
  byte op, k, w, w0, w1, l, i, id, expected, a_id, a_phase, outcome, start_changes;
  bool result, done, ok, all_frozen, start_present;
  byte n = 0;
  do
  :: n == 2 -> break
  :: n < 2 ->
     if
     :: n == 0 -> op = op1; k = key1
     :: else -> op = op2; k = key2
     fi;
     atomic { start_present = present[k]; start_changes = changes[k] };
     done = false;
     if
     :: op == NONE -> skip
     :: op == FIND ->
        if
        :: root == TO_L ->
           w = bucket[k];
           /* a frozen bucket reads as empty */
           result = IS_LEAF(w) && !leaf_marked[LEAF_OF(w)]
        :: root == OPEN -> result = in_root_chain[k]
        fi;
        assert(result -> (start_present || changes[k] != start_changes)
                       : (!start_present || changes[k] != start_changes))
     :: op == INSERT ->
        l = 2 + 2 * p + n;
        leaf_key[l] = k; /* unpublished until the CAS */
        do
        :: done -> break
        :: else ->
           if
           :: root == TO_L ->
              w = bucket[k];
              if
              :: IS_LEAF(w) && leaf_marked[LEAF_OF(w)] -> unlink(k, w)
              :: IS_LEAF(w) && !leaf_marked[LEAF_OF(w)] ->
                 /* found: the key was present */
                 assert(start_present || changes[k] != start_changes);
                 done = true
#if MUTANT == 4
              :: IS_FROZEN(w) -> skip /* search again until the attempt is over */
#else
              :: IS_FROZEN(w) -> settle_frozen(k, w)
#endif
              :: w == EMPTY ->
                 atomic { /* [trie.link] */
                   if
                   :: bucket[k] == EMPTY ->
                      bucket[k] = LEAF(l);
                      assert(root == TO_L && !level_retired && cphase != COMMITTED);
                      assert(!present[k]);
                      present[k] = true; changes[k]++;
                      done = true
                   :: else -> skip /* search again */
                   fi
                 }
              fi
           :: root == OPEN ->
              atomic {
                if
                :: in_root_chain[k] -> assert(start_present || changes[k] != start_changes)
                :: else ->
                   in_root_chain[k] = true;
                   assert(!present[k]);
                   present[k] = true; changes[k]++
                fi
              };
              done = true
           fi
        od
     :: op == ERASE ->
        do
        :: done -> break
        :: else ->
           if
           :: root == TO_L ->
              w = bucket[k];
              if
              :: IS_LEAF(w) && leaf_marked[LEAF_OF(w)] -> unlink(k, w)
              :: IS_LEAF(w) && !leaf_marked[LEAF_OF(w)] ->
                 atomic { /* [trie.mark] */
                   if
                   :: !leaf_marked[LEAF_OF(w)] ->
                      leaf_marked[LEAF_OF(w)] = true;
                      assert(present[k]);
                      present[k] = false; changes[k]++;
                      ok = true
                   :: else -> ok = false
                   fi
                 };
                 if
                 :: ok ->
                    done = true;
                    unlink(k, w); /* tidy_after's first CAS */
                    compress(k)
                 :: else -> skip
                 fi
              :: else -> /* empty or frozen: absent */
                 assert(!start_present || changes[k] != start_changes);
                 done = true
              fi
           :: root == OPEN ->
              atomic {
                if
                :: in_root_chain[k] ->
                   in_root_chain[k] = false;
                   assert(present[k]);
                   present[k] = false; changes[k]++
                :: else -> assert(!start_present || changes[k] != start_changes)
                fi
              };
              done = true
           fi
        od
     fi;
progress:
     n++
  od
}

init {
  byte k, w;
  atomic {
    /* key 0 is in L at the start (leaf 0); key 1 too in scenario 3 (leaf 1) */
    leaf_key[0] = 0; bucket[0] = LEAF(0); present[0] = true;
    leaf_key[1] = 1;
#if SCENARIO == 3
    bucket[1] = LEAF(1); present[1] = true;
#endif
#if SCENARIO == 1
    /* an erase that empties L, an insert into its other bucket, lookups */
    run worker(0, ERASE, 0, FIND, 1);
    run worker(1, INSERT, 1, ERASE, 1);
    run worker(2, FIND, 1, FIND, 0);
#elif SCENARIO == 2
    /* the same key erased and inserted again by everyone */
    run worker(0, ERASE, 0, INSERT, 0);
    run worker(1, INSERT, 0, ERASE, 0);
    run worker(2, FIND, 0, NONE, 0);
#elif SCENARIO == 3
    /* two erasers that each may empty L, an insert of both keys */
    run worker(0, ERASE, 0, NONE, 0);
    run worker(1, ERASE, 1, INSERT, 0);
    run worker(2, INSERT, 1, ERASE, 0);
#endif
  }
  (_nr_pr == 1); /* every worker is done */
  k = 0;
  do
  :: k == NK -> break
  :: else ->
     w = bucket[k];
     if
     :: root == TO_L ->
        assert(!in_root_chain[k]);
        assert(present[k] == (IS_LEAF(w) && !leaf_marked[LEAF_OF(w)]))
     :: root == OPEN ->
        assert(level_retired);
        assert(!(IS_LEAF(w) && !leaf_marked[LEAF_OF(w)]));
        assert(present[k] == in_root_chain[k])
     fi;
     if
     :: IS_LEAF(w) && root == TO_L -> assert(!leaf_retired[LEAF_OF(w)])
     :: else -> skip
     fi;
     k++
  od
}
