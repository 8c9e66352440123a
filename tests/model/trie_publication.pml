/* tests/model/trie_publication.pml - the memory orders of a hash_trie_map
 * chain (include/lfcore/hash_trie_map.hpp) under C++'s release/acquire
 * (tests/model/ra.pml), checked by Spin over every interleaving of three
 * threads and every value each load may read (tests/model/check.sh runs it).
 * trie_chain.pml checks the same operations for linearizability under
 * sequential consistency; this model asks what x86 gives for free and Arm
 * does not: does every thread that reaches a leaf see what its inserter
 * wrote before linking it?
 *
 * What is modelled: one bucket of the root (closing into a new level only
 * in scenario 3; no compression), its summary bits, and each access of lookup(), walk() (its validations
 * and the unlinking of marked leaves), link_at_end() with add_summary(),
 * link_at_head() and erase's mark, with the C++ code's orders; the load,
 * publish, load again of hazard_pointer::protect (its fence and the
 * reclamation are hazard_pointer.pml's: leaves here are never freed). A
 * bucket word is a leaf (or END, the chain's end) and three summary bits;
 * a leaf's next word is a leaf or END and the deleted mark. A leaf's key
 * and value are one location, written by its inserter with a plain store.
 * Each thread that inserts raises a flag with a release store when its
 * first operation returns.
 *
 * What is checked, in every execution: a thread that reaches a leaf reads
 * its key (not the memory's earlier content) and its next word as written
 * before the leaf was linked, and a new level's bucket, tags and overflow
 * as written before they were published; a lookup that acquired the flag
 * of the thread that inserted its key (erased by nobody) finds the key, and
 * one of a key in the map throughout always does; and, on the
 * modification order's last words (each CAS reads them), each key has one
 * live leaf in the chain if it is in the map and none otherwise, and the
 * bucket's summary holds the bits of every key in its chain.
 * Not shown needed (load buffering, which ra.pml leaves out): [trie.mark]'s
 * release, which orders the eraser's reads of the leaf before a reclaimer
 * can free it.
 *
 * SCENARIO 1 (no head inserts, as a map has it): an empty bucket; thread 0
 * inserts key 0, thread 1 key 1 (into the empty bucket or after key 0,
 * adding its summary bit by a relaxed CAS) and then erases key 0, thread 2
 * looks both up. SCENARIO 2 (head inserts, as an atom table has them): key
 * 0 in the chain; thread 0 inserts key 1 at the head, thread 1 erases key 0
 * and inserts key 2, thread 2 looks keys 1 and 2 up. SCENARIO 3 (expansion,
 * trie_expansion.pml's protocol): keys 0 and 1 in the chain, which closes at
 * two live leaves; thread 0 inserts key 2, so closes the chain (the relaxed
 * CAS that sets every summary bit, a new level with one bucket, its tags and
 * overflow, [trie.link] on the last leaf's next word), hoists it (overflow
 * stored relaxed, then [trie.hoist]) and links key 2 into the new level's
 * bucket; threads 1 and 2 look keys up through whatever they read: keys 0
 * and 1 must always be found, key 2 once thread 0's flag is seen.
 * MUTANT (0 = the C++ code): 1: link_at_end's CAS relaxed; 2:
 * link_at_head's CAS relaxed; 3: lookup's [trie.read] relaxed; 4: protect's
 * second load relaxed; 5: unlink's CAS relaxed (a reader that reads the
 * successor from the bucket has not seen its key); 6: add_summary's OR a
 * compare and store, not a read-modify-write: the relaxed OR is enough only
 * because C++ keeps a read-modify-write in the release sequence of the link
 * it follows; 7: [trie.hoist] relaxed (a reader that reads the hoisted
 * word has not seen the level's tags or overflow); 8: the closing
 * [trie.link] relaxed (a reader that follows the closed chain has not seen
 * the level's bucket).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#if SCENARIO == 1
#define HEAD_INSERTS 0
#else
#define HEAD_INSERTS 1
#endif

#define NK 3       /* keys 0, 1, 2 */
#define NL 3       /* leaves: those at the start from 0, then thread p's 1 + p (2 in scenario 3) */
#define NTH 3
#define NFLAG 2    /* threads 0 and 1 raise flags */
#define BUCKET 0   /* locations */
#define NEXT(l) (1 + (l))
#define CONTENT(l) (1 + NL + (l))
#define FLAG(p) (1 + 2 * NL + (p))
#if SCENARIO == 3  /* the new level's bucket, overflow and tags */
#define CHILD_BUCKET (1 + 2 * NL + NFLAG)
#define OVERFLOW (CHILD_BUCKET + 1)
#define TAGS (CHILD_BUCKET + 2)
#define NLOC (CHILD_BUCKET + 3)
#else
#define NLOC (1 + 2 * NL + NFLAG)
#define CHILD_BUCKET BUCKET /* never read: scenarios 1 and 2 do not expand */
#define OVERFLOW BUCKET
#define TAGS BUCKET
#endif
#if SCENARIO == 3
#define MAXMSG 4 /* a location's initial message and at most three stores */
#else
#define MAXMSG 6
#endif
#include "ra.pml"

/* Words: a leaf 0..11 or a hash word, with a bucket's summary bits or a
 * next word's mark. */
#define END 15          /* to_word(root): the root chain's end */
#define CHILD 14        /* to_word(level): a closed chain's end, the level's empty bucket */
#define HOISTED 13      /* hoisted_word(level) */
#define NO_OVERFLOW 12  /* the level's overflow before the hoisting */
#define IS_LEAF(w) (((w) & 15) < 12)
#define ROOT 0          /* levels */
#define LEVEL 1
#define STABLE(k) (SCENARIO == 3 && (k) < 2) /* in the map throughout */
#define PTR(w) ((w) & 15)
#define BITS(w) (((w) >> 4) & 7)
#define MARK 128        /* a next word's deleted bit */
#define GARBAGE 127     /* fresh memory (a leaf's next word, a level's fields) before its writer's store */
#define BUCKET_LINK 255 /* `link` is the bucket, not a leaf's next word */
#define LOC(link) ((link) == BUCKET_LINK -> BUCKET : NEXT(link))
#define LAST(loc) mval[RA_MSG(loc, nmsg[loc] - 1)]
#define MAX_BITS 3 /* chain_threshold */
#define KEYBITS(k) ((k) == 0 -> 1 : ((k) == 1 -> 2 : 5))
#define POPCOUNT(b) (((b) & 1) + (((b) >> 1) & 1) + (((b) >> 2) & 1))

#define LINK_END_ORDER (MUTANT == 1 -> RA_RLX : RA_REL)
#define LINK_HEAD_ORDER (MUTANT == 2 -> RA_RLX : RA_REL)
#define READ_ACQUIRE (MUTANT != 3)
#define PROTECT_ACQUIRE (MUTANT != 4)
#define UNLINK_ORDER (MUTANT == 5 -> RA_RLX : RA_REL)
#define HOIST_ORDER (MUTANT == 7 -> RA_RLX : RA_REL | RA_ACQ_FAIL)
#define CLOSE_ORDER (MUTANT == 8 -> RA_RLX : RA_REL)

#define NONE 0
#define FIND 1
#define INSERT 2
#define ERASE 3
#define RESTART 0 /* walk()'s outcomes */
#define FOUND 1
#define AT_END 2
#define AT_HEAD 3
#define NOBODY 255

/* Ghost: the abstract map, changed at each operation's CAS. */
bool present[NK];
byte ck, cb, cl; /* check_chain's scratch, 0 between steps */
byte live[NK];

/* The invariants of the chain's last words. */
inline check_chain() {
  ck = PTR(LAST(BUCKET));
  cb = BITS(LAST(BUCKET));
  assert(ck != END || cb == 0);
  do
  :: ck == END -> break
  :: else ->
     cl = LAST(CONTENT(ck)) - 1;
     assert((cb & KEYBITS(cl)) == KEYBITS(cl));
     if
     :: (LAST(NEXT(ck)) & MARK) == 0 -> live[cl]++
     :: else -> skip
     fi;
     ck = PTR(LAST(NEXT(ck)))
  od;
  assert(live[0] == present[0] && live[1] == present[1] && live[2] == present[2]);
  live[0] = 0; live[1] = 0; live[2] = 0; ck = 0; cb = 0; cl = 0
}

inline protect(loc) { ra_protect(loc, w, again, PROTECT_ACQUIRE) }

/* Reads leaf cur's key (key + 1 in its content), which must be published. */
inline read_key() {
  ra_load(CONTENT(cur), key, false);
  assert(key != 0)
}

/* unlink(): CAS link from w (cur's word) to cur's successor; a bucket keeps
 * its summary while a leaf follows. */
inline unlink() {
  succ = (nw & ~MARK) | (PTR(nw) != END && link == BUCKET_LINK -> (w & 112) : 0);
  atomic {
    ra_cas(LOC(link), w, succ, ok, UNLINK_ORDER);
    if
    :: ok -> check_chain()
    :: else -> skip
    fi
  };
  succ = 0
}

/* walk() from the bucket, for key k: FOUND (found; w the word at link that
 * holds it, nw its next word), AT_END (link holds END), AT_HEAD (filter !=
 * 0 and the summary rules k out: head is the bucket's word) or RESTART. */
inline walk(filter) {
  link = BUCKET_LINK;
  protect(BUCKET);
  head = w;
  if
  :: filter != 0 && PTR(w) != END && (BITS(w) & filter) != filter &&
     POPCOUNT(BITS(w)) < MAX_BITS -> outcome = AT_HEAD
  :: else ->
     do
     :: PTR(w) == END -> outcome = AT_END; break
     :: else ->
        cur = PTR(w);
        ra_load(NEXT(cur), nw, true); /* [trie.read] */
        assert(nw != GARBAGE);
        ra_load(LOC(link), again, true); /* link still holds cur */
        if
        :: again != w -> outcome = RESTART; break
        :: again == w && (nw & MARK) != 0 ->
           unlink();
           if
           :: !ok -> outcome = RESTART; break
           :: ok && filter != 0 && link == BUCKET_LINK -> outcome = RESTART; break
           :: else -> skip
           fi;
           protect(LOC(link));
           if
           :: (w & MARK) != 0 -> outcome = RESTART; break /* link's owner died meanwhile */
           :: link == BUCKET_LINK -> head = w
           :: else -> skip
           fi
        :: else ->
           read_key();
           if
           :: key == k + 1 -> found = cur; outcome = FOUND; break
           :: key != k + 1 && PTR(nw) != END -> /* try_protect_if: cur's next word is still nw */
              ra_load(NEXT(cur), again, true);
              if
              :: again != nw -> outcome = RESTART; break
              :: else -> skip
              fi
           :: else -> skip
           fi;
           link = cur;
           w = nw
        fi;
        again = 0; key = 0
     od
  fi;
  again = 0; key = 0
}

/* lookup(): true if key k is found; a chain may continue in the level
 * (scenario 3), through its hoisted chain if its tags may hold k. */
inline lookup() {
  node = ROOT;
  hoisted = false;
  do
  :: anchor = (hoisted -> OVERFLOW : (node == ROOT -> BUCKET : CHILD_BUCKET));
     protect(anchor);
     assert(w != GARBAGE && (!hoisted || w != NO_OVERFLOW)); /* published */
     anchor_value = w;
     if
     :: !hoisted && IS_LEAF(w) && (BITS(w) & kb) != kb -> result = false; break /* the summary rules k out */
     :: else -> skip
     fi;
     valid = true;
     last = NOBODY;
     do
     :: !IS_LEAF(w) -> break
     :: else ->
        cur = PTR(w);
        ra_load(NEXT(cur), nw, READ_ACQUIRE); /* [trie.read] */
        assert(nw != GARBAGE);
        read_key();
        if
        :: (nw & MARK) == 0 && key == k + 1 -> result = true; break
        :: ((nw & MARK) != 0 || key != k + 1) && !IS_LEAF(nw) -> skip
        :: (nw & MARK) == 0 && key != k + 1 && IS_LEAF(nw) -> /* step(): cur becomes the anchor */
           ra_load(NEXT(cur), again, true);
           valid = again == nw;
           anchor = NEXT(cur);
           anchor_value = nw
        :: (nw & MARK) != 0 && IS_LEAF(nw) -> /* step() past a marked leaf: the anchor unchanged */
           ra_load(anchor, again, true);
           valid = again == anchor_value
        fi;
        again = 0; key = 0;
        last = cur;
        last_next = nw;
        if
        :: !valid -> break
        :: else -> w = nw & ~MARK
        fi
     od;
     if
     :: result -> break
     :: !result && valid && PTR(w) == END && node == ROOT && !hoisted -> break /* the chain's end */
     :: !result && valid && PTR(w) == CHILD && node == LEVEL && !hoisted -> break /* the level's end */
     :: !result && valid && (PTR(w) == CHILD || PTR(w) == HOISTED) && (node == ROOT || hoisted) ->
        /* descend(): the level below, validated like a step */
        if
        :: last != NOBODY && (last_next & MARK) == 0 -> ra_load(NEXT(last), again, true); valid = again == last_next
        :: else -> ra_load(anchor, again, true); valid = again == anchor_value
        fi;
        again = 0;
        if
        :: valid ->
           if
           :: node == ROOT && PTR(w) == HOISTED -> /* overflow_may_hold(h): the level's tags */
              ra_load(TAGS, key, false);
              assert(key != GARBAGE);
              hoisted = k < 2;
              key = 0
           :: else -> hoisted = false
           fi;
           node = LEVEL
        :: else -> node = ROOT; hoisted = false
        fi
     :: else -> node = ROOT; hoisted = false /* start over */
     fi
  od;
  again = 0; key = 0; anchor = 0; anchor_value = 0; node = 0; hoisted = false; last = 0; last_next = 0
}

/* A thread's two operations. If the first is a FIND, it reads the flag of
 * thread `flag_of` first (acquire): raised, it expects `expect`. */
proctype worker(byte me; byte op1; byte key1; byte op2; byte key2; byte flag_of; byte expect) {
  byte op, k, kb, w, nw, again, succ, head, link, cur, found, key, outcome, anchor, anchor_value,
       flag, b, filter, node, last, last_next;
  bool ok, done, result, valid, hoisted;
  byte n = 0;
  byte fresh = 1 + me; /* this thread's leaf */
  do
  :: n == 2 -> break
  :: n < 2 ->
     if
     :: n == 0 -> op = op1; k = key1
     :: else -> op = op2; k = key2
     fi;
     kb = KEYBITS(k);
     done = false;
     result = false;
     if
     :: op == NONE -> skip
     :: op == FIND ->
        if
        :: n == 0 && flag_of != NOBODY -> ra_load(FLAG(flag_of), flag, true)
        :: else -> skip
        fi;
        lookup();
        assert(flag == 0 || result == expect);
        assert(!STABLE(k) || result);
        flag = 0
     :: op == INSERT ->
        ra_store(CONTENT(fresh), k + 1, false); /* the leaf's key and value */
        do
        :: done -> break
        :: else ->
           filter = (HEAD_INSERTS -> kb : 0);
           walk(filter);
           if
           :: outcome == RESTART -> skip
           :: outcome == FOUND -> done = true
           :: outcome == AT_HEAD -> /* link_at_head() */
              ra_store(NEXT(fresh), PTR(head), false);
              atomic {
                ra_cas(BUCKET, head, (head & 112) | (kb << 4) | fresh, ok, LINK_HEAD_ORDER);
                if
                :: ok -> present[k] = true; check_chain(); done = true
                :: else -> skip
                fi
              }
           :: outcome == AT_END && link == BUCKET_LINK -> /* link_at_end(), empty bucket */
              ra_store(NEXT(fresh), END, false);
              w = END;
              atomic {
                ra_cas(BUCKET, w, (kb << 4) | fresh, ok, LINK_END_ORDER);
                if
                :: ok -> present[k] = true; check_chain(); done = true
                :: else -> skip
                fi
              }
           :: outcome == AT_END && link != BUCKET_LINK -> /* link_at_end() */
              ra_store(NEXT(fresh), END, false);
              ra_load(BUCKET, b, false); /* add_summary() */
              do
              :: PTR(b) == END -> ok = false; break
              :: (BITS(b) & kb) == kb -> ok = true; break
              :: else ->
#if MUTANT == 6
                 atomic {
                   RA_TVIEW(BUCKET) = nmsg[BUCKET] - 1;
                   if
                   :: LAST(BUCKET) == b -> ra_store(BUCKET, b | (kb << 4), false); ok = true
                   :: else -> b = LAST(BUCKET); ok = false
                   fi
                 };
#else
                 ra_cas(BUCKET, b, b | (kb << 4), ok, RA_RLX);
#endif
                 if
                 :: ok -> break
                 :: else -> skip
                 fi
              od;
              b = 0;
              if
              :: ok ->
                 w = END;
                 atomic {
                   ra_cas(NEXT(link), w, fresh, ok, LINK_END_ORDER);
                   if
                   :: ok -> present[k] = true; check_chain(); done = true
                   :: else -> skip
                   fi
                 }
              :: else -> skip
              fi
           fi
        od
     :: op == ERASE ->
        do
        :: done -> break
        :: else ->
           walk(0);
           if
           :: outcome == RESTART -> skip
           :: outcome == AT_END -> done = true
           :: outcome == FOUND ->
              again = nw;
              atomic { /* [trie.mark] */
                ra_cas(NEXT(found), again, nw | MARK, ok, RA_REL);
                if
                :: ok -> present[k] = false; check_chain(); done = true
                :: else -> skip
                fi
              };
              again = 0;
              if
              :: done ->
                 cur = found;
                 nw = nw | MARK;
                 unlink(); /* else a search unlinks it */
                 do
                 :: ok -> break
                 :: else -> walk(0); ok = outcome != RESTART
                 od
              :: else -> skip
              fi
           fi
        od
     fi;
     if
     :: n == 0 && me < NFLAG -> ra_store(FLAG(me), 1, true)
     :: else -> skip
     fi;
     n++;
     w = 0; nw = 0; head = 0; link = 0; cur = 0; found = 0; outcome = 0; ok = false
  od
}

#if SCENARIO == 3
/* Thread 0's insert of key 2 (leaf 2) into a chain only it writes: its walk
 * reads the chain as the scenario starts, so only its writes are shown. */
proctype closer() {
  byte me = 0, w, first;
  bool ok;
  ra_store(CONTENT(2), 3, false);
  /* close_if_full(): every summary bit first, from the word the walk read */
  w = (3 << 4) | 0;
  ra_cas(BUCKET, w, (7 << 4) | 0, ok, RA_RLX);
  assert(ok);
  /* the new level: its bucket empty, no overflow, the chain's tags */
  ra_store(CHILD_BUCKET, CHILD, false);
  ra_store(OVERFLOW, NO_OVERFLOW, false);
  ra_store(TAGS, 1, false);
  w = END;
  ra_cas(NEXT(1), w, CHILD, ok, CLOSE_ORDER); /* [trie.link] */
  assert(ok);
  /* hoist() */
  ra_load(BUCKET, first, true);
  ra_store(OVERFLOW, first & ~112, false);
  ra_cas(BUCKET, first, HOISTED, ok, HOIST_ORDER); /* [trie.hoist] */
  assert(ok);
  /* the search again: through the hoisted word to the level, whose tags
   * rule key 2 out, to its empty bucket: link_at_end() */
  ra_store(NEXT(2), CHILD, false);
  w = CHILD;
  ra_cas(CHILD_BUCKET, w, (KEYBITS(2) << 4) | 2, ok, LINK_END_ORDER); /* [trie.link] */
  assert(ok);
  ra_store(FLAG(0), 1, true)
}
#endif

init {
  byte b;
  atomic {
    ra_init(BUCKET, END);
    for (b : 0 .. NL - 1) {
      ra_init(NEXT(b), GARBAGE);
      ra_init(CONTENT(b), 0)
    };
    for (b : 0 .. NFLAG - 1) { ra_init(FLAG(b), 0) };
    b = 0;
#if SCENARIO == 1
    run worker(0, INSERT, 0, FIND, 1, NOBODY, 0);
    run worker(1, INSERT, 1, ERASE, 0, NOBODY, 0);
    run worker(2, FIND, 1, FIND, 0, 1, 1);
#elif SCENARIO == 3
    /* keys 0 and 1 in the chain, published before the threads start */
    mval[RA_MSG(BUCKET, 0)] = ((KEYBITS(0) | KEYBITS(1)) << 4) | 0;
    mval[RA_MSG(NEXT(0), 0)] = 1;
    mval[RA_MSG(NEXT(1), 0)] = END;
    mval[RA_MSG(CONTENT(0), 0)] = 1;
    mval[RA_MSG(CONTENT(1), 0)] = 2;
    ra_init(CHILD_BUCKET, GARBAGE);
    ra_init(OVERFLOW, GARBAGE);
    ra_init(TAGS, GARBAGE);
    run closer();
    run worker(1, FIND, 0, FIND, 1, NOBODY, 0);
    run worker(2, FIND, 2, FIND, 1, 0, 1);
#else
    /* key 0 in the chain, published before the threads start */
    mval[RA_MSG(BUCKET, 0)] = (KEYBITS(0) << 4) | 0;
    mval[RA_MSG(NEXT(0), 0)] = END;
    mval[RA_MSG(CONTENT(0), 0)] = 1;
    present[0] = true;
    run worker(0, INSERT, 1, FIND, 0, NOBODY, 0);
    run worker(1, ERASE, 0, INSERT, 2, NOBODY, 0);
    run worker(2, FIND, 1, FIND, 2, 0, 1);
#endif
  }
}
