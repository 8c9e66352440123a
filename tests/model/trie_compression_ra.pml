/* tests/model/trie_compression_ra.pml - the memory orders of hash_trie_map's
 * level compression (include/lfcore/hash_trie_map.hpp, "compression":
 * remove_if_empty, try_remove, settle_frozen, thaw, detach) under C++'s
 * release/acquire (tests/model/ra.pml), checked by Spin over every
 * interleaving of three threads and every value each load - and each
 * compare_exchange that fails - may read (tests/model/check.sh runs it).
 * trie_compression.pml checks the protocol for linearizability and progress
 * under sequential consistency; this model asks whether the orders the code
 * gives its accesses keep it correct where loads may be stale, as on Arm.
 *
 * What is modelled: trie_compression.pml's level L below the root, one bucket
 * per key, reached through the root's bucket (hoisted, its overflow chain
 * already empty); each access with the C++ code's order: the root's bucket
 * (hoisted_word(L), then to_word(root) once detached), L's buckets
 * (to_word(L), a leaf, or frozen_word(id)), L's compression word (id and
 * phase), each leaf's next word (its mark). After the detach the keys go to
 * the root's own chain, here one word per key (in the chain or not) changed
 * by CAS, whose publication trie_publication.pml checks. A thread reaches a
 * word through protect(), here its acquire load (hazard_pointer.pml checks
 * its validation); leaves' keys are published with them (trie_publication
 * .pml) and nothing is freed (hazard pointers are assumed).
 *
 * What is checked, in every execution, on the modification order's last
 * words (a read-modify-write reads them): an insert links into L only while
 * L is attached and no attempt committed; a detach finds every bucket of L
 * frozen by the attempt that committed; L is detached once; at the end, what
 * is reachable is exactly the ghost set of keys, changed at each CAS that
 * takes effect. And a lookup that acquired the flag of the thread that
 * inserted its key finds it (nobody erases that key).
 *
 * SCENARIO 1: key 0 in L; thread 0 erases it, so L is empty and thread 0
 * removes it; thread 1 inserts key 1 and raises its flag; thread 2 reads the
 * flag and looks key 1 up. SCENARIO 2: key 0 in L; thread 0 erases and
 * inserts it again, thread 1 inserts and erases it. SCENARIO 3: keys 0 and
 * 1 in L; threads 0 and 1 erase one each (either may empty L), thread 2
 * inserts key 0.
 * MUTANT (0 = the C++ code): 1: [trie.freeze] relaxed: an insert that read
 * the frozen bucket may then read, in its failing CAS on the compression
 * word, a phase from before the attempt; it thaws the bucket without
 * aborting, and the attempt commits over the key the insert then links;
 * 2: the insert's acquire load of L's bucket relaxed, the same way round.
 * Not shown needed - MUTANT 3 makes them all relaxed at once, and every
 * scenario must still pass: [trie.detach]'s release (to_word(root)
 * publishes nothing new) and the acquire of detach()'s load (its CAS
 * validates it); any order on the compression word's CASes - the attempt,
 * the commit, the aborts - since a read-modify-write reads the word's last
 * value whatever its order, and the one read that can be stale, a failing
 * CAS in settle_frozen(), is bounded by the freeze the insert acquired
 * (mutant 1). The code keeps these orders.
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NK 2     /* keys 0 and 1 */
#define NL 4     /* leaves: 0 and 1 at the start, 2 and 3 the inserts' */
#define MAX_ID 2 /* compression attempts, ids 1..MAX_ID */
#define NTH 3
#define ROOT_BUCKET 0 /* locations */
#define IN_ROOT(k) (1 + (k))
#define BUCKET(k) (3 + (k))
#define COMPRESSION 5
#define NEXT(l) (6 + (l))
#define FLAG (6 + NL)
#define NLOC (7 + NL)
#define MAXMSG 9
#include "ra.pml"

/* Words of L's buckets. */
#define EMPTY 0                /* to_word(L): an empty chain */
#define LEAF(l) (1 + (l))      /* a leaf; its next word is to_word(L) */
#define FROZEN(id) (16 + (id)) /* frozen_word(id) */
#define IS_LEAF(w) ((w) >= 1 && (w) < 16)
#define IS_FROZEN(w) ((w) >= 16)
#define LEAF_OF(w) ((w) - 1)
#define ID_OF(w) ((w) - 16)
/* The root's bucket: hoisted_word(L), or to_word(root) once detached. */
#define TO_L 0
#define OPEN 1
/* The compression word: (id << 2) | phase. */
#define IDLE 0
#define FREEZING 1
#define COMMITTED 2
#define ATTEMPT(id, phase) (((id) << 2) | (phase))
#define PHASE(a) ((a) & 3)
#define ID(a) ((a) >> 2)
#define MARKED 1 /* a leaf's next word: to_word(L), or marked */

#define FREEZE_ORDER (MUTANT == 1 -> RA_RLX : RA_REL)
#define READ_ACQUIRE (MUTANT != 2)
#define COMPRESSION_ORDER (MUTANT == 3 -> RA_RLX : (RA_ACQ_REL | RA_ACQ_FAIL))
#define DETACH_ORDER (MUTANT == 3 -> RA_RLX : RA_REL)
#define DETACH_ACQUIRE (MUTANT != 3)

#define NONE 0
#define FIND 1
#define INSERT 2
#define ERASE 3
#define REMOVED 0 /* try_remove's outcomes */
#define BUSY 1
#define FAILED 2
#define NOBODY 255 /* a worker that reads no flag */
#define LAST(loc) mval[RA_MSG(loc, nmsg[loc] - 1)]

/* Ghost: the abstract map, changed at each operation's CAS. */
bool present[NK];
bool detached = false;
byte next_leaf = 2;

/* walk()'s unlink of the marked leaf in w from bucket k. */
inline unlink(k, w) {
  expected = w;
  ra_cas(BUCKET(k), expected, EMPTY, ok, RA_REL) /* [trie.unlink] */
}

/* [trie.thaw] */
inline thaw(k, w) {
  expected = w;
  ra_cas(BUCKET(k), expected, EMPTY, ok, RA_RLX)
}

/* Step 4 ([trie.detach]): the root's bucket from L back to the root. */
inline detach() {
  ra_load(ROOT_BUCKET, w, DETACH_ACQUIRE);
  if
  :: w == TO_L ->
     atomic {
       ra_cas(ROOT_BUCKET, w, OPEN, ok, DETACH_ORDER);
       if
       :: ok ->
          assert(PHASE(LAST(COMPRESSION)) == COMMITTED);
          assert(LAST(BUCKET(0)) == FROZEN(ID(LAST(COMPRESSION))) &&
                 LAST(BUCKET(1)) == FROZEN(ID(LAST(COMPRESSION))));
          assert(!detached);
          detached = true
       :: else -> skip
       fi
     }
  :: else -> skip
  fi
}

/* An insert found bucket k frozen (w): abort a freezing attempt and thaw,
 * or help a committed one detach. One CAS, acq_rel (acquire on failure). */
inline settle_frozen(k, w) {
  id = ID_OF(w);
  a = ATTEMPT(id, FREEZING);
  ra_cas(COMPRESSION, a, ATTEMPT(id, IDLE), ok, COMPRESSION_ORDER);
  if
  :: !ok && a == ATTEMPT(id, COMMITTED) -> detach()
  :: else -> thaw(k, w)
  fi
}

/* try_remove(): steps 1-3, then the detach. Sets outcome. */
inline try_remove() {
  ra_load(COMPRESSION, a, false); /* relaxed: the CAS validates it */
  if
  :: PHASE(a) != IDLE || ID(a) == MAX_ID -> outcome = BUSY /* (MAX_ID: the model's bound) */
  :: else ->
     id = ID(a) + 1;
     ra_cas(COMPRESSION, a, ATTEMPT(id, FREEZING), ok, COMPRESSION_ORDER); /* [trie.attempt] */
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
           :: ra_cas(BUCKET(i), expected, FROZEN(id), ok, FREEZE_ORDER); /* [trie.freeze] */
              if
              :: ok -> break
              :: !ok && (!IS_FROZEN(expected) || ID_OF(expected) > id) -> all_frozen = false; break
              :: else -> skip /* a stale freeze of an aborted attempt: take it over */
              fi
           od;
           i++
        od;
        i = 0;
        ok = false;
        if
        :: all_frozen ->
           a = ATTEMPT(id, FREEZING);
           ra_cas(COMPRESSION, a, ATTEMPT(id, COMMITTED), ok, COMPRESSION_ORDER)
        :: else -> skip
        fi;
        if
        :: ok -> detach(); outcome = REMOVED
        :: else ->
           a = ATTEMPT(id, FREEZING); /* abort, unless an insert did */
           ra_cas(COMPRESSION, a, ATTEMPT(id, IDLE), ok, COMPRESSION_ORDER);
           thaw(0, FROZEN(id));
           thaw(1, FROZEN(id));
           outcome = FAILED
        fi
     fi
  fi;
  a = 0; expected = 0
}

/* unlink_and_compress() after an erase of key k: search again (unlinking a
 * marked leaf) and, while the search ends in an empty bucket of L whose
 * other buckets look empty (relaxed loads), try to remove L. */
inline compress(k) {
  do
  :: ra_load(ROOT_BUCKET, w, true);
     if
     :: w == OPEN -> break /* the search ends at the root: no parent */
     :: else ->
        ra_load(BUCKET(k), w, true);
        if
        :: IS_LEAF(w) ->
           ra_load(NEXT(LEAF_OF(w)), nw, true);
           if
           :: nw == MARKED -> unlink(k, w)
           :: else -> break
           fi
        :: w == EMPTY ->
           outcome = BUSY;
           do
           :: ra_load(BUCKET(0), w0, false);
              ra_load(BUCKET(1), w1, false);
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
           w0 = 0; w1 = 0;
           if
           :: outcome == REMOVED -> skip /* search again: now from the root's chain */
           :: else -> break
           fi
        :: else -> break /* frozen: not an empty bucket of L */
        fi
     fi
  od;
  nw = 0
}

proctype worker(byte me; byte op1; byte key1; byte op2; byte key2; bool raises; byte expect_of) {
  byte op, k, w, nw, w0, w1, i, id, a, expected, outcome, fresh, flag;
  bool result, done, ok, all_frozen;
  byte n = 0;
  do
  :: n == 2 -> break
  :: n < 2 ->
     if
     :: n == 0 -> op = op1; k = key1
     :: else -> op = op2; k = key2
     fi;
     done = false;
     if
     :: op == NONE -> skip
     :: op == FIND ->
        if
        :: expect_of == k -> ra_load(FLAG, flag, true)
        :: else -> skip
        fi;
        ra_load(ROOT_BUCKET, w, true);
        if
        :: w == TO_L ->
           ra_load(BUCKET(k), w, READ_ACQUIRE); /* a frozen bucket reads as empty */
           if
           :: IS_LEAF(w) -> ra_load(NEXT(LEAF_OF(w)), nw, true); result = nw != MARKED
           :: else -> result = false
           fi
        :: else -> ra_load(IN_ROOT(k), w, true); result = w
        fi;
        assert(!flag || result);
        flag = 0
     :: op == INSERT ->
        atomic { fresh = next_leaf; next_leaf++ };
        do
        :: done -> break
        :: else ->
           ra_load(ROOT_BUCKET, w, true);
           if
           :: w == TO_L ->
              ra_load(BUCKET(k), w, READ_ACQUIRE);
              if
              :: IS_LEAF(w) ->
                 ra_load(NEXT(LEAF_OF(w)), nw, true);
                 if
                 :: nw == MARKED -> unlink(k, w)
                 :: else -> done = true /* found */
                 fi
              :: IS_FROZEN(w) -> settle_frozen(k, w)
              :: w == EMPTY ->
                 atomic { /* [trie.link] */
                   ra_cas(BUCKET(k), w, LEAF(fresh), ok, RA_REL);
                   if
                   :: ok ->
                      assert(LAST(ROOT_BUCKET) == TO_L && PHASE(LAST(COMPRESSION)) != COMMITTED);
                      assert(!present[k]);
                      present[k] = true;
                      done = true
                   :: else -> skip /* search again */
                   fi
                 }
              fi
           :: else ->
              w = 0;
              atomic {
                ra_cas(IN_ROOT(k), w, 1, ok, RA_REL); /* the root chain's link */
                if
                :: ok -> assert(!present[k]); present[k] = true
                :: else -> skip /* found */
                fi
              };
              done = true
           fi
        od
     :: op == ERASE ->
        do
        :: done -> break
        :: else ->
           ra_load(ROOT_BUCKET, w, true);
           if
           :: w == TO_L ->
              ra_load(BUCKET(k), w, true);
              if
              :: IS_LEAF(w) ->
                 ra_load(NEXT(LEAF_OF(w)), nw, true);
                 if
                 :: nw == MARKED -> unlink(k, w)
                 :: else ->
                    atomic { /* [trie.mark] */
                      ra_cas(NEXT(LEAF_OF(w)), nw, MARKED, ok, RA_REL);
                      if
                      :: ok -> assert(present[k]); present[k] = false
                      :: else -> skip
                      fi
                    };
                    if
                    :: ok ->
                       done = true;
                       unlink(k, w); /* tidy_after's first CAS */
                       compress(k)
                    :: else -> skip
                    fi
                 fi
              :: else -> done = true /* empty or frozen: absent */
              fi
           :: else ->
              w = 1;
              atomic {
                ra_cas(IN_ROOT(k), w, 0, ok, RA_REL);
                if
                :: ok -> assert(present[k]); present[k] = false
                :: else -> skip /* absent */
                fi
              };
              done = true
           fi
        od
     fi;
     if
     :: n == 0 && raises -> ra_store(FLAG, 1, true)
     :: else -> skip
     fi;
     n++;
     w = 0; nw = 0; ok = false; result = false; id = 0; outcome = 0
  od
}

init {
  byte b;
  atomic {
    ra_init(ROOT_BUCKET, TO_L);
    for (b : 0 .. NK - 1) {
      ra_init(IN_ROOT(b), 0);
      ra_init(BUCKET(b), EMPTY)
    };
    ra_init(COMPRESSION, ATTEMPT(0, IDLE));
    for (b : 0 .. NL - 1) { ra_init(NEXT(b), 0) };
    ra_init(FLAG, 0);
    b = 0;
    /* key 0 is in L at the start (leaf 0); key 1 too in scenario 3 (leaf 1) */
    mval[RA_MSG(BUCKET(0), 0)] = LEAF(0); present[0] = true;
#if SCENARIO == 3
    mval[RA_MSG(BUCKET(1), 0)] = LEAF(1); present[1] = true;
#endif
#if SCENARIO == 1
    run worker(0, ERASE, 0, NONE, 0, false, NOBODY);
    run worker(1, INSERT, 1, NONE, 0, true, NOBODY);
    run worker(2, FIND, 1, NONE, 0, false, 1);
#elif SCENARIO == 2
    run worker(0, ERASE, 0, INSERT, 0, false, NOBODY);
    run worker(1, INSERT, 0, ERASE, 0, false, NOBODY);
#elif SCENARIO == 3
    run worker(0, ERASE, 0, NONE, 0, false, NOBODY);
    run worker(1, ERASE, 1, NONE, 0, false, NOBODY);
    run worker(2, INSERT, 0, NONE, 0, false, NOBODY);
#endif
  }
  (_nr_pr == 1); /* every worker is done */
  for (b : 0 .. NK - 1) {
    if
    :: LAST(ROOT_BUCKET) == TO_L ->
       assert(LAST(IN_ROOT(b)) == 0);
       assert(present[b] == (IS_LEAF(LAST(BUCKET(b))) && LAST(NEXT(LEAF_OF(LAST(BUCKET(b))))) != MARKED))
    :: else ->
       assert(detached && present[b] == LAST(IN_ROOT(b)));
       assert(!IS_LEAF(LAST(BUCKET(b))) || LAST(NEXT(LEAF_OF(LAST(BUCKET(b))))) == MARKED)
    fi
  }
}
