/* tests/model/atom_collection.pml - the atom table's garbage collection
 * (lib/atom_table.cpp: claim(), release(), collect() and atom_table::get()),
 * checked by Spin over every interleaving (tests/model/check.sh runs it).
 *
 * What is modelled: one text, whose atom the trie holds in one slot (the
 * map's element for that key: find, insert-if-absent, and erase(it), which
 * removes that element only if it is still there). An atom's state word is
 * [permanent bit | dead bit | references]; claim() CASes a reference (or the
 * permanent bit) onto a state that is not dead ([atom.claim]); collect() CASes
 * a state of 0 to dead ([atom.kill]) and then erases the element; an intern
 * that claims a dead atom erases it itself (the collector may stall between
 * the two) and tries again. Sequential consistency: the CASes' orders are
 * ThreadSanitizer's to check.
 *
 * What is checked: an atom is killed only while no one holds a reference to
 * it or has made it permanent; every intern returns a live atom, the text's
 * only one; a dead atom never comes back; each atom is erased from the trie
 * once; and, in the progress pass, no execution loops without an operation
 * completing (in particular, an intern does not wait for a stalled collector).
 *
 * SCENARIO 1: two threads intern the text and release it; a third collects
 * twice. SCENARIO 2: one of them interns it permanently.
 * MUTANT 1: collect() reads that the state is 0 and then stores dead (no CAS):
 * a claim between the two is lost. MUTANT 2: claim() does not check the dead
 * bit: an intern can return a dead atom. MUTANT 3: an intern that meets a dead
 * atom tries again without erasing it: it waits for the collector
 * (livelock, found by the progress pass).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NONE 0
#define NA 5              /* atoms 1..4 */
#define PERMANENT 128
#define DEAD 64
#define REFS 63

byte slot = NONE;         /* the trie's element for the text: an atom or none */
byte state[NA];           /* each atom's state word */
byte next_atom = 1;       /* atoms are made fresh, never reused (the handle rule) */
byte holders[NA];         /* ghost: references held, and permanent claims */
bool erased[NA];          /* ghost: erased from the trie */

/* claim(a, counted): sets ok. */
inline claim(a, counted) {
  s = state[a];
  do
  :: s & PERMANENT -> ok = true; break
#if MUTANT != 2
  :: !(s & PERMANENT) && (s & DEAD) -> ok = false; break
#endif
  :: else ->
     atomic { /* [atom.claim] */
       if
       :: state[a] == s ->
          state[a] = (counted -> s + 1 : s | PERMANENT);
          ok = true
       :: else -> s = state[a]; ok = false
       fi
     };
     if
     :: ok -> break
     :: else -> skip
     fi
  od
}

/* erase(it): removes the element a, if it is still the text's. */
inline erase(a) {
  atomic {
    if
    :: slot == a -> slot = NONE; assert(!erased[a] && (state[a] & DEAD)); erased[a] = true
    :: else -> skip
    fi
  }
}

/* atom_table::get(text, counted): the text's atom, claimed. */
inline intern(counted) {
  do
  :: a = slot;
     if
     :: a == NONE ->
        atomic { /* insert if absent: a new atom with its claim */
          if
          :: slot == NONE ->
             a = next_atom; next_atom++;
             state[a] = (counted -> 1 : PERMANENT);
             slot = a; ok = true
          :: else -> ok = false
          fi
        }
     :: else ->
        claim(a, counted);
        if
        :: !ok ->
#if MUTANT != 3
           erase(a) /* dead: unlink it for the stalled collector, then again */
#else
           skip
#endif
        :: else -> skip
        fi
     fi;
     if
     :: ok ->
        atomic { assert(!(state[a] & DEAD) && slot == a); holders[a]++ };
        break
     :: else -> skip
     fi
  od
}

inline release(a) {
  s = state[a];
  do
  :: s & PERMANENT -> break
  :: else ->
     assert((s & REFS) != 0);
     atomic { /* [atom.release] */
       if
       :: state[a] == s -> state[a] = s - 1; holders[a]--; ok = true
       :: else -> s = state[a]; ok = false
       fi
     };
     if
     :: ok -> break
     :: else -> skip
     fi
  od
}

proctype mutator(bool counted) {
  byte a, s;
  bool ok;
  intern(counted);
progress_interned:
  if
  :: counted -> release(a)
  :: else -> skip
  fi
}

proctype collector() {
  byte a, s, n = 0;
  bool ok;
  do
  :: n == 2 -> break
  :: else ->
     a = slot;
     if
     :: a != NONE ->
#if MUTANT == 1
        s = state[a];
        if
        :: s == 0 -> state[a] = DEAD; ok = true
        :: else -> ok = false
        fi;
#else
        atomic { /* [atom.kill] */
          if
          :: state[a] == 0 -> state[a] = DEAD; ok = true
          :: else -> ok = false
          fi
        };
#endif
        if
        :: ok ->
           assert(holders[a] == 0);
           erase(a)
        :: else -> skip
        fi
     :: else -> skip
     fi;
progress_collected:
     n++
  od
}

init {
  atomic {
    run mutator(true);
#if SCENARIO == 1
    run mutator(true);
#else
    run mutator(false);
#endif
    run collector()
  }
  (_nr_pr == 1);
  /* a permanent atom is never dead; a killed atom is out of the trie */
  assert(slot == NONE || !(state[slot] & DEAD))
}
