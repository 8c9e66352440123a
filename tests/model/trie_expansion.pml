/* tests/model/trie_expansion.pml - hash_trie_map's expansion (include/
 * lfcore/hash_trie_map.hpp, "Expansion" and "Hoisting": close_if_full(),
 * hoist(), locate(), lookup()), checked by Spin over every interleaving of
 * three threads (tests/model/check.sh runs it).
 *
 * What is modelled: one bucket of the root whose chain closes at
 * chain_threshold = 2 live leaves, with a new level below it (one bucket
 * there; that level does not expand), under inserts (appends after
 * add_summary, as a map has them: no head inserts; trie_chain.pml has those),
 * erases and lookups of three keys. Each step is one load or CAS of the C++
 * code, the walk's validations included: the closer's CAS that sets every
 * summary bit, the closing CAS on the chain's end word, the hoisting CAS
 * (the level's overflow takes over the chain), unlinks in every chain,
 * the search through the hoisted chain when the level's tags may hold the
 * key. Lookups follow lookup() without its hazard-pointer validations. No
 * compression (trie_compression.pml has it). Sequential consistency; hazard
 * pointers assumed.
 *
 * What is checked after every step that changes a chain: each key in the map
 * has one live leaf reachable and a key out of it none (nothing linked twice,
 * nothing lost), no retired leaf is reachable, each bucket's summary covers
 * its chain, the hoisted chain's keys are among the level's tags; each result
 * is linearizable; each leaf is retired once; no livelock (progress pass).
 *
 * MUTANT (0 = the C++ code):
 * 1: the closer does not set every summary bit first: until it hoists, a key
 *    inserted below is behind a root bucket whose summary rules it out;
 * 2: an insert does not search the hoisted chain, even when the tags say it
 *    may hold its key;
 * 3: hoist() stores the bucket word instead of its CAS (an unlink of the
 *    chain's first leaf meanwhile is undone).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NK 3
#define NL 8          /* leaves: 0, 1 at the start; 2 + 2p + n thread p's */
#define THRESHOLD 2   /* chain_threshold of the root */
#define ALLBITS 7

/* words: a leaf index, or a hash word */
#define END_ROOT 13   /* to_word(root): the root chain's end */
#define CHILD 14      /* to_word(level): the level's chain end, or a closed root chain */
#define HOISTED 15    /* hoisted_word(level), in the root's bucket */
#define NO_OVF 12     /* the level's overflow before its hoisting */
#define IS_HASH(w) ((w) >= END_ROOT)

/* links */
#define RB 20         /* the root's bucket */
#define OVF 21        /* the level's overflow */
#define CB 22         /* the level's bucket */

#define ROOT 0        /* levels */
#define LEVEL 1

#define NONE 0
#define FIND 1
#define INSERT 2
#define ERASE 3

#define RESTART 0
#define FOUND 1
#define AT_END 2

#define KEYBIT(k) (1 << (k))

byte rb_ptr = END_ROOT;
byte rb_bits = 0;
byte ovf = NO_OVF;
byte cb_ptr = CHILD;
byte cb_bits = 0;
byte level_tags = 0;   /* keys whose tags the level keeps (set when it is linked) */
byte leaf_key[NL];
byte leaf_next[NL];
bool leaf_marked[NL];
bool leaf_retired[NL];

bool present[NK];
byte changes[NK];

/* One chain's invariants; c walks it (ends at a hash word). */
inline check_run(bits, tagged) {
  do
  :: IS_HASH(c) -> break
  :: else ->
     assert(!leaf_retired[c]);
     assert((bits & KEYBIT(leaf_key[c])) != 0);
     assert(!tagged || (level_tags & KEYBIT(leaf_key[c])) != 0);
     if
     :: !leaf_marked[c] -> live[leaf_key[c]]++
     :: else -> skip
     fi;
     c = leaf_next[c]
  od
}
inline check_all() {
  live[0] = 0; live[1] = 0; live[2] = 0;
  if
  :: rb_ptr == HOISTED ->
     c = ovf;
     if
     :: c != NO_OVF -> check_run(ALLBITS, true)
     :: else -> assert(false) /* hoisted before its overflow was set */
     fi;
     assert(c == CHILD)
  :: else ->
     c = rb_ptr;
     check_run(rb_bits, false);
     assert(c != HOISTED && (rb_ptr != END_ROOT && rb_ptr != CHILD || rb_bits == 0))
  fi;
  if
  :: c == CHILD -> c = cb_ptr; check_run(cb_bits, false); assert(c == CHILD)
  :: else -> assert(c == END_ROOT)
  fi;
  assert(live[0] == present[0] && live[1] == present[1] && live[2] == present[2])
}

inline publish() {
  assert(!present[k]);
  present[k] = true;
  changes[k]++;
  check_all()
}

inline read_link() {
  atomic {
    if
    :: link == RB -> w_ptr = rb_ptr; w_bits = rb_bits; w_marked = false
    :: link == OVF -> w_ptr = ovf; w_bits = 0; w_marked = false
    :: link == CB -> w_ptr = cb_ptr; w_bits = cb_bits; w_marked = false
    :: else -> w_ptr = leaf_next[link]; w_bits = 0; w_marked = leaf_marked[link]
    fi
  }
}
inline link_holds_w() {
  atomic {
    if
    :: link == RB -> ok = rb_ptr == w_ptr && rb_bits == w_bits
    :: link == OVF -> ok = ovf == w_ptr
    :: link == CB -> ok = cb_ptr == w_ptr && cb_bits == w_bits
    :: else -> ok = leaf_next[link] == w_ptr && !leaf_marked[link]
    fi
  }
}

/* unlink(): CAS link from w to cur's successor nw_ptr (a bucket keeps its
 * summary while a leaf follows); retires cur. Sets ok. */
inline unlink() {
  atomic {
    ok = false;
    if
    :: link == RB && rb_ptr == w_ptr && rb_bits == w_bits ->
       rb_ptr = nw_ptr; rb_bits = (IS_HASH(nw_ptr) -> 0 : w_bits); ok = true
    :: link == OVF && ovf == w_ptr -> ovf = nw_ptr; ok = true
    :: link == CB && cb_ptr == w_ptr && cb_bits == w_bits ->
       cb_ptr = nw_ptr; cb_bits = (IS_HASH(nw_ptr) -> 0 : w_bits); ok = true
    :: link < RB && leaf_next[link] == w_ptr && !leaf_marked[link] ->
       leaf_next[link] = nw_ptr; ok = true
    :: else -> skip
    fi;
    if
    :: ok ->
       assert(leaf_marked[cur] && !leaf_retired[cur]);
       leaf_retired[cur] = true;
       check_all()
    :: else -> skip
    fi
  }
}

/* walk() of the chain at `first` for key k: FOUND (found; link holds w =
 * found), AT_END (w_ptr: the hash word that ends it, at link) or RESTART.
 * live and seen: the live leaves passed and their keys. */
inline walk(first) {
  link = first;
  read_link();
  head_ptr = w_ptr; head_bits = w_bits;
  live_count = 0; seen = 0;
  do
  :: IS_HASH(w_ptr) || w_ptr == NO_OVF -> outcome = AT_END; break
  :: else ->
     cur = w_ptr;
     atomic { nw_ptr = leaf_next[cur]; nw_marked = leaf_marked[cur] };
     link_holds_w();
     if
     :: !ok -> outcome = RESTART; break
     :: ok && nw_marked ->
        unlink();
        if
        :: !ok -> outcome = RESTART; break
        :: else -> skip
        fi;
        read_link();
        if
        :: w_marked -> outcome = RESTART; break
        :: else -> skip
        fi;
        if
        :: link == first -> head_ptr = w_ptr; head_bits = w_bits
        :: else -> skip
        fi
     :: ok && !nw_marked && leaf_key[cur] == k -> found = cur; outcome = FOUND; break
     :: else ->
        live_count++; seen = seen | KEYBIT(leaf_key[cur]);
        atomic { ok = leaf_next[cur] == nw_ptr && !leaf_marked[cur] };
        if
        :: !ok -> outcome = RESTART; break
        :: else -> skip
        fi;
        link = cur; w_ptr = nw_ptr; w_bits = 0; w_marked = false
     fi
  od
}

/* locate(): FOUND, or AT_END with node the level whose bucket chain ends at
 * link (w_ptr == its own end word). */
inline locate() {
  node = ROOT; hoisted = false;
  do
  :: if
     :: hoisted -> walk(OVF)
     :: !hoisted && node == ROOT -> walk(RB)
     :: else -> walk(CB)
     fi;
     if
     :: outcome == RESTART -> skip /* the same chain again */
     :: outcome == FOUND -> break
     :: outcome == AT_END && hoisted -> hoisted = false /* then the level's bucket */
     :: outcome == AT_END && !hoisted && (node == ROOT && w_ptr == END_ROOT || node == LEVEL && w_ptr == CHILD) ->
        break /* absent */
     :: else -> /* the chain goes on one level down */
        assert(node == ROOT && (w_ptr == CHILD || w_ptr == HOISTED));
        node = LEVEL;
#if MUTANT == 2
        hoisted = false
#else
        hoisted = w_ptr == HOISTED && (level_tags & KEYBIT(k)) != 0
#endif
     fi
  od
}

proctype worker(byte p; byte op1; byte key1; byte op2; byte key2) {
  byte op, k, kb, w_ptr, w_bits, nw_ptr, head_ptr, head_bits, link, cur, found, c, l;
  byte outcome, start_changes, b_ptr, b_bits, node, live_count, seen, first_ptr, first_bits;
  byte live[NK];
  bool w_marked, nw_marked, ok, done, result, start_present, hoisted;
  byte n = 0;
  do
  :: n == 2 -> break
  :: n < 2 ->
     if
     :: n == 0 -> op = op1; k = key1
     :: else -> op = op2; k = key2
     fi;
     kb = KEYBIT(k);
     atomic { start_present = present[k]; start_changes = changes[k] };
     done = false;
     if
     :: op == NONE -> skip
     :: op == FIND -> /* lookup() */
        node = ROOT; hoisted = false;
        do
        :: if
           :: hoisted -> atomic { w_ptr = ovf; w_bits = 0 }
           :: !hoisted && node == ROOT -> atomic { w_ptr = rb_ptr; w_bits = rb_bits }
           :: else -> atomic { w_ptr = cb_ptr; w_bits = cb_bits }
           fi;
           if
           :: !hoisted && !IS_HASH(w_ptr) && (w_bits & kb) == 0 -> result = false; break
           :: else -> skip
           fi;
           do
           :: IS_HASH(w_ptr) || w_ptr == NO_OVF -> break
           :: else ->
              cur = w_ptr;
              atomic { nw_ptr = leaf_next[cur]; nw_marked = leaf_marked[cur] };
              if
              :: !nw_marked && leaf_key[cur] == k -> result = true; break
              :: else -> w_ptr = nw_ptr
              fi
           od;
           if
           :: !IS_HASH(w_ptr) && w_ptr != NO_OVF -> break /* found */
           :: w_ptr == END_ROOT || w_ptr == NO_OVF -> result = false; break
           :: w_ptr == CHILD && node == LEVEL && !hoisted -> result = false; break
           :: w_ptr == CHILD && node == LEVEL && hoisted -> hoisted = false
           :: else -> /* CHILD or HOISTED from the root */
              node = LEVEL;
              hoisted = w_ptr == HOISTED && (level_tags & kb) != 0
           fi
        od;
        assert(result -> (start_present || changes[k] != start_changes)
                       : (!start_present || changes[k] != start_changes))
     :: op == INSERT ->
        l = 2 + 2 * p + n;
        leaf_key[l] = k;
        do
        :: done -> break
        :: else ->
           locate();
           if
           :: outcome == FOUND ->
              assert(start_present || changes[k] != start_changes);
              done = true
           :: outcome == AT_END && node == ROOT && live_count >= THRESHOLD -> /* close_if_full() */
#if MUTANT != 1
              atomic { /* every summary bit, from the word the walk read */
                if
                :: rb_ptr == head_ptr && rb_bits == head_bits -> rb_bits = ALLBITS; ok = true
                :: else -> ok = false
                fi
              };
#else
              ok = true;
#endif
              if
              :: ok ->
                 atomic { /* [trie.link] the closing CAS; the level's tags: `seen` */
                   if
                   :: leaf_next[link] == END_ROOT && !leaf_marked[link] ->
                      leaf_next[link] = CHILD; level_tags = seen; ok = true; check_all()
                   :: else -> ok = false
                   fi
                 };
                 if
                 :: ok -> /* hoist() */
                    atomic { first_ptr = rb_ptr; first_bits = rb_bits };
                    do
                    :: IS_HASH(first_ptr) -> ovf = CHILD; break /* the chain emptied */
                    :: else ->
                       ovf = first_ptr;
                       atomic { /* [trie.hoist] */
#if MUTANT == 3
                         rb_ptr = HOISTED; rb_bits = 0; ok = true; check_all()
#else
                         if
                         :: rb_ptr == first_ptr && rb_bits == first_bits ->
                            rb_ptr = HOISTED; rb_bits = 0; ok = true; check_all()
                         :: else -> first_ptr = rb_ptr; first_bits = rb_bits; ok = false
                         fi
#endif
                       };
                       if
                       :: ok -> break
                       :: else -> skip
                       fi
                    od
                 :: else -> skip
                 fi
              :: else -> skip
              fi
              /* search again */
           :: outcome == AT_END && !(node == ROOT && live_count >= THRESHOLD) -> /* link_at_end() */
              leaf_next[l] = (node == ROOT -> END_ROOT : CHILD);
              if
              :: link == RB ->
                 atomic {
                   if
                   :: rb_ptr == END_ROOT -> rb_ptr = l; rb_bits = kb; publish(); done = true
                   :: else -> skip
                   fi
                 }
              :: link == CB ->
                 atomic {
                   if
                   :: cb_ptr == CHILD -> cb_ptr = l; cb_bits = kb; publish(); done = true
                   :: else -> skip
                   fi
                 }
              :: else ->
                 /* add_summary() on node's bucket */
                 do
                 :: atomic {
                      if
                      :: node == ROOT -> b_ptr = rb_ptr; b_bits = rb_bits
                      :: else -> b_ptr = cb_ptr; b_bits = cb_bits
                      fi
                    };
                    if
                    :: IS_HASH(b_ptr) -> ok = false; break
                    :: (b_bits & kb) != 0 -> ok = true; break
                    :: else ->
                       atomic {
                         if
                         :: node == ROOT && rb_ptr == b_ptr && rb_bits == b_bits ->
                            rb_bits = b_bits | kb; ok = true
                         :: node == LEVEL && cb_ptr == b_ptr && cb_bits == b_bits ->
                            cb_bits = b_bits | kb; ok = true
                         :: else -> ok = false
                         fi
                       };
                       if
                       :: ok -> break
                       :: else -> skip
                       fi
                    fi
                 od;
                 if
                 :: ok ->
                    atomic {
                      if
                      :: leaf_next[link] == (node == ROOT -> END_ROOT : CHILD) && !leaf_marked[link] ->
                         leaf_next[link] = l; publish(); done = true
                      :: else -> skip
                      fi
                    }
                 :: else -> skip
                 fi
              fi
           fi
        od
     :: op == ERASE ->
        do
        :: done -> break
        :: else ->
           locate();
           if
           :: outcome == AT_END ->
              assert(!start_present || changes[k] != start_changes);
              done = true
           :: outcome == FOUND ->
              atomic { /* [trie.mark] */
                if
                :: leaf_next[found] == nw_ptr && !leaf_marked[found] ->
                   leaf_marked[found] = true;
                   assert(present[k]);
                   present[k] = false; changes[k]++;
                   check_all();
                   done = true
                :: else -> skip
                fi
              };
              if
              :: done ->
                 cur = found;
                 unlink(); /* tidy_after's CAS; else a search unlinks it */
                 do
                 :: ok -> break
                 :: else -> locate(); ok = true
                 od
              :: else -> skip
              fi
           fi
        od
     fi;
progress:
     n++
  od
}

init {
  atomic {
    /* keys 0 and 1 in the root's chain: one more live leaf closes it */
    leaf_key[0] = 0; leaf_key[1] = 1;
    rb_ptr = 0; rb_bits = KEYBIT(0) | KEYBIT(1);
    leaf_next[0] = 1; leaf_next[1] = END_ROOT;
    present[0] = true; present[1] = true;
#if SCENARIO == 1
    /* a close by the insert of key 2 while key 0 is erased and inserted again */
    run worker(0, INSERT, 2, FIND, 0);
    run worker(1, ERASE, 0, INSERT, 0);
    run worker(2, FIND, 2, FIND, 1);
#elif SCENARIO == 2
    /* two inserts of key 2 racing to close; key 1 erased */
    run worker(0, INSERT, 2, ERASE, 2);
    run worker(1, INSERT, 2, FIND, 2);
    run worker(2, ERASE, 1, FIND, 0);
#elif SCENARIO == 3
    /* the closed chain emptied before (or while) it is hoisted */
    run worker(0, INSERT, 2, FIND, 1);
    run worker(1, ERASE, 0, FIND, 2);
    run worker(2, ERASE, 1, INSERT, 0);
#endif
  }
}
