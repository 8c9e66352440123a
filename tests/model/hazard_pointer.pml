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
 * Scenarios 3 and 4 run the same under release/acquire with seq_cst fences
 * (ra.pml: a load may read a store its thread has not seen past, as on Arm)
 * with the code's memory orders: the first load of the source relaxed, the
 * hazard stored with release, the validating load acquire, the scan's load
 * of the hazard acquire, the unlinking CAS acq_rel; membarrier is a full
 * fence in every thread wherever it is. The reclaimer writes each node's
 * contents before the CAS that links it, and the reader checks what it
 * reads there. ([hp.reset]'s release, which orders the reader's use before
 * a scan that frees the node, is not shown needed: only load buffering,
 * which ra.pml has none of, would break it.)
 *
 * SCENARIO 1: membarrier mode (light() a compiler barrier, heavy() membarrier);
 * SCENARIO 2: symmetric mode (both a full fence; LFCORE_HP_FENCE=symmetric).
 * SCENARIOS 3 and 4: 1 and 2 under release/acquire.
 * MUTANT 1: heavy() does nothing (scenario 1: the reader's hazard may still be
 * in its buffer when the reclaimer reads it; scenario 3: the reclaimer reads
 * an older hazard); MUTANT 2: light() does nothing in symmetric mode
 * (scenarios 2 and 4, the same); MUTANT 3: protect() does not load the
 * source again after publishing the hazard (any scenario); MUTANT 4: the
 * validating load is relaxed (scenarios 3 and 4: the reader reads a node's
 * contents from before they were written).
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
#define MEMBARRIER_MODE (SCENARIO == 1 || SCENARIO == 3)
#define CONTENTS 42 /* what a node holds once written */

bool freed[4];    /* nodes 1..3 */

#if SCENARIO <= 2
#include "tso.pml"
#define LOAD(th, l, v, acquire) load(th, l, v)
#define STORE(th, l, v, release) store(th, l, v)
#define FENCE(th) fence(th)
#define MEMBARRIER() membarrier()
#else
#define NTH NT
#define NLOC (NM + 4) /* then each node's contents (1..3) */
#define DATA(n) (NM + (n))
#define MAXMSG 8
#include "ra.pml"
#define LOAD(th, l, v, acquire) ra_load(l, v, acquire)
#define STORE(th, l, v, release) ra_store(l, v, release)
#define FENCE(th) ra_fence_sc()
#define MEMBARRIER() ra_membarrier()
#endif

inline light(t) {
#if !MEMBARRIER_MODE && MUTANT != 2
  FENCE(t)
#else
  skip /* std::atomic_signal_fence: orders nothing at run time */
#endif
}

inline heavy(t) {
#if MEMBARRIER_MODE && MUTANT != 1
  FENCE(t);
  MEMBARRIER()
#elif !MEMBARRIER_MODE
  FENCE(t)
#else
  skip
#endif
}

proctype reader() {
  byte me = 0, p, q, rounds = 0, c;
  do
  :: rounds == 2 -> break
  :: else ->
     LOAD(0, SRC, p, false);
     do /* protect(): publish, then validate */
     :: STORE(0, HAZARD, p, true); /* [hp.reset] */
        light(0);
#if MUTANT == 3
        q = p;
#else
        LOAD(0, SRC, q, MUTANT != 4);
#endif
        if
        :: q == p -> break
        :: else -> p = q
        fi
     od;
     assert(!freed[p]); /* reads the node */
#if SCENARIO >= 3
     ra_load(DATA(p), c, false);
     assert(c == CONTENTS);
     c = 0;
#endif
     STORE(0, HAZARD, 0, true); /* reset_protection() */
     rounds++
  od
}

/* Frees node n unless the hazard holds it. */
inline scan(n) {
  heavy(1);
  LOAD(1, HAZARD, h, true);
  if
  :: h != n -> freed[n] = true
  :: else -> skip
  fi
}

proctype reclaimer() {
  byte me = 1, h, n = 1;
  bool ok;
  do
  :: n == 3 -> break
  :: else ->
#if SCENARIO <= 2
     fence(1);
     atomic { assert(mem[SRC] == n); mem[SRC] = n + 1 }; /* the unlinking CAS */
#else
     ra_store(DATA(n + 1), CONTENTS, false); /* the new node's contents */
     h = n;
     ra_cas(SRC, h, n + 1, ok, RA_ACQ_REL); /* the unlinking CAS */
     assert(ok);
     h = 0;
#endif
     scan(n);
     n++
  od
}

init {
  atomic {
#if SCENARIO <= 2
    mem[SRC] = 1;
    run flusher(0); run flusher(1);
#else
    ra_init(SRC, 1);
    ra_init(HAZARD, 0);
    ra_init(DATA(1), CONTENTS);
    ra_init(DATA(2), 0);
    ra_init(DATA(3), 0);
#endif
    run reader(); run reclaimer()
  }
#if SCENARIO <= 2
  (_nr_pr == 3 && !buffered[0] && !buffered[1]);
  assert(mem[HAZARD] == 0) /* a node still retired is free to go now */
#else
  (_nr_pr == 1);
  assert(mval[RA_MSG(HAZARD, nmsg[HAZARD] - 1)] == 0)
#endif
}
