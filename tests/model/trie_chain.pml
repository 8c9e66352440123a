/* tests/model/trie_chain.pml - a chain of hash_trie_map (include/lfcore/
 * hash_trie_map.hpp): appends, head inserts, erases and lookups on one
 * bucket with its summary bits, checked by Spin over every interleaving of
 * three threads (tests/model/check.sh runs it).
 *
 * What is modelled: one bucket of a level that does not expand (its chain
 * never reaches chain_threshold live leaves) and is the root (no
 * compression; trie_compression.pml has that), with head inserts on, as an
 * atom table has them. Each step is one load or CAS of the C++ code: walk()
 * (its validations included, and the rule that an insert searches again
 * after it unlinked the chain's first leaf), link_at_end() with
 * add_summary(), link_at_head(), unlink(), the erase's mark, and lookup()'s
 * reads (without the validations its hazard pointers need: a lookup here may
 * follow any stale link, which only allows more executions). A bucket word
 * is a pointer and three summary bits: key 0 sets bit 1, key 1 bit 2 and
 * key 2 bits 1 and 4, so that key 0's bit also passes key 2 through the
 * filter. Sequential consistency; hazard pointers assumed, so a thread may
 * read a leaf that was retired after it reached it.
 *
 * What is checked, in every interleaving, after every step that changes the
 * chain: each key has one live leaf if it is in the map and none otherwise
 * (no key linked twice, the ghost `present` changed exactly at each
 * operation's CAS), the bucket's summary holds the bits of every key in its
 * chain, no retired leaf is reachable; each result is linearizable (a find
 * or an insert that meets the key saw it present at some instant of its
 * call, one that reports it absent saw it absent at some instant); each leaf
 * is retired once; and, in the progress pass, no execution loops without an
 * operation completing.
 *
 * MUTANT (0 = the C++ code) breaks one rule, to show that the checks can fail:
 * 1: an insert goes on walking after it unlinked the chain's first leaf
 *    (the chain may have emptied and refilled since it read the bucket);
 * 2: an append does not add its key's bits to the summary first;
 * 3: a head insert's CAS compares the bucket's pointer, not its summary;
 * 4: unlinking the chain's first leaf drops the summary.
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#if SCENARIO == 6
#define HEAD_INSERTS 0 /* as a map has it by default */
#else
#define HEAD_INSERTS 1 /* as an atom table has it */
#endif

#define NK 3        /* keys 0, 1, 2 */
#define NL 10       /* leaves: 0 and 1 at the start, 2 + 2p + n thread p's n-th insert */
#define END 15      /* to_word(node): the end of the chain (a hash word) */
#define BUCKET 255  /* `link` is the bucket, not a leaf's next word */
#define MAX_BITS 3  /* chain_threshold: a head insert needs fewer summary bits */

#define KEYBITS(k) ((k) == 0 -> 1 : ((k) == 1 -> 2 : 5))
#define POPCOUNT(b) (((b) & 1) + (((b) >> 1) & 1) + (((b) >> 2) & 1))

#define NONE 0
#define FIND 1
#define INSERT 2
#define ERASE 3

/* walk()'s outcomes */
#define RESTART 0
#define FOUND 1
#define AT_END 2
#define AT_HEAD 3

byte bucket_ptr = END; /* the bucket's word: the first leaf and the summary, */
byte bucket_bits = 0;  /* or END (and no bits) */
byte leaf_key[NL];
byte leaf_next[NL];    /* a leaf's next word: a leaf or END, */
bool leaf_marked[NL];  /* and its deleted bit */
bool leaf_retired[NL];

/* Ghost: the abstract map, changed at each operation's linearization point. */
bool present[NK];
byte changes[NK]; /* inserts and erases of key k so far */

/* The invariants of the chain, checked after every step that changes it. */
inline check_chain() {
  c = bucket_ptr;
  live[0] = 0; live[1] = 0; live[2] = 0;
  do
  :: c == END -> break
  :: else ->
     assert(!leaf_retired[c]);
     assert((bucket_bits & KEYBITS(leaf_key[c])) == KEYBITS(leaf_key[c]));
     if
     :: !leaf_marked[c] -> live[leaf_key[c]]++
     :: else -> skip
     fi;
     c = leaf_next[c]
  od;
  assert(bucket_ptr != END || bucket_bits == 0);
  assert(live[0] == present[0] && live[1] == present[1] && live[2] == present[2])
}

inline publish() { /* inside the linking CAS */
  assert(!present[k]);
  present[k] = true;
  changes[k]++;
  check_chain()
}

/* Reads the word at link. */
inline read_link() {
  atomic {
    if
    :: link == BUCKET -> w_ptr = bucket_ptr; w_bits = bucket_bits; w_marked = false
    :: else -> w_ptr = leaf_next[link]; w_bits = 0; w_marked = leaf_marked[link]
    fi
  }
}

/* unlink(): a CAS on link, expecting the word read (w), to cur's successor;
 * a bucket keeps its summary while a leaf follows. Retires cur. */
inline unlink() {
  atomic {
    ok = false;
    if
    :: link == BUCKET && bucket_ptr == w_ptr && bucket_bits == w_bits ->
       bucket_ptr = nw_ptr;
#if MUTANT == 4
       bucket_bits = 0;
#else
       bucket_bits = (nw_ptr == END -> 0 : w_bits);
#endif
       ok = true
    :: link != BUCKET && leaf_next[link] == w_ptr && !leaf_marked[link] ->
       leaf_next[link] = nw_ptr;
       ok = true
    :: else -> skip
    fi;
    if
    :: ok ->
       assert(leaf_marked[cur] && !leaf_retired[cur]);
       leaf_retired[cur] = true;
       check_chain()
    :: else -> skip
    fi
  }
}

/* walk() from the bucket, for key k: FOUND (found, with link and w holding
 * it), AT_END (link holds END), AT_HEAD (filter != 0 and the summary rules k
 * out: head_ptr/head_bits are the bucket's word) or RESTART. */
inline walk(filter) {
  link = BUCKET;
  read_link();
  head_ptr = w_ptr;
  head_bits = w_bits;
  if
  :: filter != 0 && w_ptr != END && (w_bits & filter) != filter && POPCOUNT(w_bits) < MAX_BITS ->
     outcome = AT_HEAD
  :: else ->
     do
     :: w_ptr == END -> outcome = AT_END; break
     :: else ->
        cur = w_ptr;
        atomic { nw_ptr = leaf_next[cur]; nw_marked = leaf_marked[cur] }; /* [trie.read] */
        /* validation: link still holds w */
        atomic {
          if
          :: link == BUCKET -> ok = bucket_ptr == w_ptr && bucket_bits == w_bits
          :: else -> ok = leaf_next[link] == w_ptr && !leaf_marked[link]
          fi
        };
        if
        :: !ok -> outcome = RESTART; break
        :: ok && nw_marked ->
           unlink();
           if
           :: !ok -> outcome = RESTART; break
#if MUTANT != 1
           :: ok && filter != 0 && link == BUCKET -> outcome = RESTART; break
#endif
           :: else -> skip
           fi;
           read_link();
           if
           :: w_marked -> outcome = RESTART; break /* link's owner died meanwhile */
           :: else -> skip
           fi;
           if
           :: link == BUCKET -> head_ptr = w_ptr; head_bits = w_bits
           :: else -> skip
           fi
        :: ok && !nw_marked && leaf_key[cur] == k -> found = cur; outcome = FOUND; break
        :: else ->
           /* try_protect_if(next): cur's next word is still nw */
           atomic { ok = leaf_next[cur] == nw_ptr && !leaf_marked[cur] };
           if
           :: !ok -> outcome = RESTART; break
           :: else -> skip
           fi;
           link = cur;
           w_ptr = nw_ptr; w_bits = 0; w_marked = false
        fi
     od
  fi
}

proctype worker(byte p; byte op1; byte key1; byte op2; byte key2) {
  byte op, k, kb, w_ptr, w_bits, nw_ptr, head_ptr, head_bits, link, cur, found, c, l;
  byte outcome, start_changes, b_ptr, b_bits, head_filter;
  byte live[NK];
  bool w_marked, nw_marked, ok, done, result, start_present;
  byte n = 0;
  do
  :: n == 2 -> break
  :: n < 2 ->
     if
     :: n == 0 -> op = op1; k = key1
     :: else -> op = op2; k = key2
     fi;
     kb = KEYBITS(k);
     head_filter = (HEAD_INSERTS -> kb : 0);
     atomic { start_present = present[k]; start_changes = changes[k] };
     done = false;
     if
     :: op == NONE -> skip
     :: op == FIND -> /* lookup() */
        atomic { w_ptr = bucket_ptr; w_bits = bucket_bits };
        if
        :: w_ptr != END && (w_bits & kb) != kb -> result = false /* the summary rules k out */
        :: else ->
           do
           :: w_ptr == END -> result = false; break
           :: else ->
              cur = w_ptr;
              atomic { nw_ptr = leaf_next[cur]; nw_marked = leaf_marked[cur] };
              if
              :: !nw_marked && leaf_key[cur] == k -> result = true; break
              :: else -> w_ptr = nw_ptr
              fi
           od
        fi;
        assert(result -> (start_present || changes[k] != start_changes)
                       : (!start_present || changes[k] != start_changes))
     :: op == INSERT ->
        l = 2 + 2 * p + n;
        leaf_key[l] = k; /* unpublished until a linking CAS */
        do
        :: done -> break
        :: else ->
           walk(head_filter);
           if
           :: outcome == RESTART -> skip
           :: outcome == FOUND ->
              assert(start_present || changes[k] != start_changes);
              done = true
           :: outcome == AT_HEAD -> /* link_at_head() */
              leaf_next[l] = head_ptr;
              atomic {
#if MUTANT == 3
                if
                :: bucket_ptr == head_ptr ->
                   bucket_ptr = l; bucket_bits = bucket_bits | kb; publish(); done = true
                :: else -> skip
                fi
#else
                if
                :: bucket_ptr == head_ptr && bucket_bits == head_bits ->
                   bucket_ptr = l; bucket_bits = head_bits | kb; publish(); done = true
                :: else -> skip
                fi
#endif
              }
           :: outcome == AT_END -> /* link_at_end() */
              leaf_next[l] = END;
              if
              :: link == BUCKET ->
                 atomic {
                   if
                   :: bucket_ptr == END -> bucket_ptr = l; bucket_bits = kb; publish(); done = true
                   :: else -> skip
                   fi
                 }
              :: else ->
                 ok = true;
#if MUTANT != 2
                 /* add_summary() */
                 atomic { b_ptr = bucket_ptr; b_bits = bucket_bits };
                 do
                 :: b_ptr == END -> ok = false; break
                 :: b_ptr != END && (b_bits & kb) == kb -> break
                 :: else ->
                    atomic {
                      if
                      :: bucket_ptr == b_ptr && bucket_bits == b_bits ->
                         bucket_bits = b_bits | kb; ok = true
                      :: else -> b_ptr = bucket_ptr; b_bits = bucket_bits; ok = false
                      fi
                    };
                    if
                    :: ok -> break
                    :: else -> ok = true
                    fi
                 od;
#endif
                 if
                 :: ok ->
                    atomic {
                      if
                      :: leaf_next[link] == END && !leaf_marked[link] ->
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
           walk(0);
           if
           :: outcome == RESTART -> skip
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
                   check_chain();
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
                 :: else -> walk(0); ok = outcome != RESTART
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
    leaf_key[0] = 0; leaf_key[1] = 1; leaf_next[0] = END; leaf_next[1] = END;
#if SCENARIO == 1
    /* key 0 in the chain; key 2 (whose bits include key 0's) inserted by
     * two threads while key 0 goes */
    bucket_ptr = 0; bucket_bits = KEYBITS(0); present[0] = true;
    run worker(0, INSERT, 2, FIND, 0);
    run worker(1, INSERT, 2, ERASE, 2);
    run worker(2, ERASE, 0, FIND, 2);
#elif SCENARIO == 2
    /* an empty chain filled, emptied and refilled */
    run worker(0, INSERT, 0, ERASE, 0);
    run worker(1, INSERT, 1, INSERT, 0);
    run worker(2, INSERT, 2, FIND, 0);
#elif SCENARIO == 3
    /* keys 0 and 1 in the chain, each erased and inserted again */
    bucket_ptr = 0; bucket_bits = KEYBITS(0) | KEYBITS(1);
    leaf_next[0] = 1; present[0] = true; present[1] = true;
    run worker(0, ERASE, 0, INSERT, 0);
    run worker(1, ERASE, 1, INSERT, 2);
    run worker(2, INSERT, 1, FIND, 1);
#elif SCENARIO == 4
    /* key 2 in the chain, whose bits make an insert of key 0 walk; the chain
     * empties and refills while that walk runs (mutant 1's race) */
    leaf_key[1] = 2;
    bucket_ptr = 1; bucket_bits = KEYBITS(2); present[2] = true;
    run worker(0, ERASE, 2, INSERT, 1);
    run worker(1, INSERT, 0, NONE, 0);
    run worker(2, INSERT, 0, FIND, 0);
#elif SCENARIO == 5
    /* key 1 in the chain; key 2 linked at its head and erased brings the
     * bucket's pointer back with more bits (mutant 3's ABA) */
    leaf_next[1] = END; bucket_ptr = 1; bucket_bits = KEYBITS(1); present[1] = true;
    run worker(0, INSERT, 0, NONE, 0);
    run worker(1, INSERT, 2, ERASE, 2);
    run worker(2, INSERT, 0, FIND, 0);
#elif SCENARIO == 6
    /* no head inserts: every insert appends (mutant 2) */
    bucket_ptr = 0; bucket_bits = KEYBITS(0); present[0] = true;
    run worker(0, INSERT, 2, ERASE, 0);
    run worker(1, INSERT, 1, FIND, 2);
    run worker(2, FIND, 1, INSERT, 0);
#endif
  }
}
