/* tests/model/hazard_pointer.pml - a hazard pointer's protect() against a
 * reclaimer's scan, on x86-TSO, with lfcore's two fence pairings
 * (include/lfcore/detail/asymmetric_fence.hpp), checked by Spin over every
 * interleaving (tests/model/check.sh runs it): no node is read after it was
 * freed.
 *
 * Why a model: protect() publishes the hazard and then re-reads the source;
 * the reclaimer unlinks and then reads the hazards - a store-buffering
 * pattern, safe only with a store-load fence on both sides. lfcore's light()
 * side is a compiler barrier alone when membarrier(2) is there, because the
 * reclaimer's heavy() membarrier runs a full barrier on every CPU that runs a
 * thread of the process; ThreadSanitizer does not model either (it runs the
 * portable mode, and no fence). Here each thread has an x86-TSO store buffer
 * (tso.pml: a plain store waits in it, the thread's own loads see it, a
 * fence or a locked instruction drains it, and membarrier drains every
 * thread's, as the barrier its interrupt runs on each CPU does).
 *
 * The program: a source pointer holds node 1; a reader protects what the
 * source holds (load, store the hazard, light(), load again until both loads
 * agree), reads the node and resets the hazard, twice; a reclaimer swings the
 * source to node 2 and then to node 3 with CAS (locked: it drains), retiring
 * each node it replaced: heavy(), read the hazard, free the node unless the
 * hazard holds it (else it stays retired: at the end no hazard holds anything).
 *
 * SCENARIO 1: membarrier mode (light() a compiler barrier, heavy() membarrier);
 * SCENARIO 2: symmetric mode (both a full fence; LFCORE_HP_FENCE=symmetric).
 * MUTANT 1: heavy() does nothing (scenario 1: the reader's hazard may still be
 * in its buffer when the reclaimer reads it); MUTANT 2: light() does nothing
 * in symmetric mode (scenario 2, the same); MUTANT 3: protect() does not
 * load the source again after publishing the hazard (either scenario).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NT 2     /* threads: the reader 0, the reclaimer 1 */
#define SRC 0    /* memory: the source pointer */
#define HAZARD 1 /* the reader's hazard slot (0: none) */
#define NM 2

#include "tso.pml"

bool freed[4];    /* nodes 1..3 */

inline light(t) {
#if SCENARIO == 2 && MUTANT != 2
  fence(t)
#else
  skip /* std::atomic_signal_fence: orders nothing at run time */
#endif
}

inline heavy(t) {
#if SCENARIO == 1 && MUTANT != 1
  fence(t);
  membarrier()
#elif SCENARIO == 2
  fence(t)
#else
  skip
#endif
}

proctype reader() {
  byte p, q, rounds = 0;
  do
  :: rounds == 2 -> break
  :: else ->
     load(0, SRC, p);
     do /* protect(): publish, then validate */
     :: store(0, HAZARD, p);
        light(0);
#if MUTANT == 3
        q = p;
#else
        load(0, SRC, q);
#endif
        if
        :: q == p -> break
        :: else -> p = q
        fi
     od;
     assert(!freed[p]); /* reads the node */
     store(0, HAZARD, 0); /* reset_protection() */
     rounds++
  od
}

/* Frees node n unless the hazard holds it. */
inline scan(n) {
  heavy(1);
  load(1, HAZARD, h);
  if
  :: h != n -> freed[n] = true
  :: else -> skip
  fi
}

proctype reclaimer() {
  byte h, n = 1;
  do
  :: n == 3 -> break
  :: else ->
     fence(1);
     atomic { assert(mem[SRC] == n); mem[SRC] = n + 1 }; /* the unlinking CAS */
     scan(n);
     n++
  od
}

init {
  atomic {
    mem[SRC] = 1;
    run flusher(0); run flusher(1);
    run reader(); run reclaimer()
  }
  (_nr_pr == 3 && !buffered[0] && !buffered[1]);
  assert(mem[HAZARD] == 0) /* a node still retired is free to go now */
}
