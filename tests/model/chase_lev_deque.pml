/* tests/model/chase_lev_deque.pml - lfcore::chase_lev_deque (include/
 * lfcore/chase_lev_deque.hpp): push, pop and steal on x86-TSO store buffers
 * and under release/acquire with seq_cst fences, checked by Spin over every
 * interleaving (tests/model/check.sh runs it): every element is taken at
 * most once, and what no one took is still in the deque.
 *
 * Why a model: pop() and steal() race for the last element through a
 * store-buffering pattern - the owner stores bottom and then reads top, a
 * thief reads top and then bottom and claims with a CAS - that the owner's
 * full fence ([cl.take]) makes safe on x86 (Lê, Pop, Cohen and Zappa Nardelli,
 * "Correct and efficient work-stealing for weak memory models", PPoPP 2013).
 * Stores wait in an x86-TSO store buffer per thread (tso.pml); a fence or a
 * locked CAS drains it. The thief's fence ([cl.steal.fence]) is there for
 * weaker machines: x86 never reorders a load with a load, so TSO cannot show
 * why it is needed. Scenarios 3 and 4 can: they run under release/acquire
 * (ra.pml), where a load may read a store its thread has not seen past, as
 * on Arm, with the code's memory orders (seq_cst fences as the paper's; a
 * seq_cst CAS as acq_rel, which is weaker). The array does not grow here
 * (the capacity covers every scenario).
 *
 * SCENARIO 1: the owner pushes two elements and pops twice; one thief steals
 * twice. SCENARIO 2: the owner pushes two, pops once, pushes a third and pops
 * again; two thieves steal once each. SCENARIOS 3 and 4: 1 and 2 under
 * release/acquire.
 * MUTANT 1: pop() without its full fence: the owner and a thief can both take
 * the last element. MUTANT 2: pop() takes the last element without the CAS on
 * top. MUTANT 3: steal() claims with a plain store instead of the CAS.
 * MUTANT 4: steal() without its fence ([cl.steal.fence]; scenarios 3 and 4:
 * a thief reads the top an earlier steal wrote but the bottom from before
 * the owner's pop, and takes the element the owner took without a CAS).
 * MUTANT 5: push() publishes bottom relaxed ([cl.publish]; scenario 3: a
 * thief reads the slot before the element is in it).
 * MUTANT 6: pop() stores bottom relaxed, as the paper does ([cl.bottom-
 * again]; scenario 3: a thief acquires the bottom pop() stored, which
 * carries nothing since C++20 (release sequences no longer include the
 * releasing thread's later stores), and reads the slot's old content).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NT 3     /* threads: the owner 0, thieves 1 and 2 */
#define TOP 0    /* memory: top_, bottom_, then the slots */
#define BOTTOM 1
#define SLOT 2
#define CAP 4
#define NM 6
#define NV 4     /* elements 1..3 */

#if SCENARIO <= 2
#include "tso.pml"
#else
#define NTH NT
#define NLOC NM
#define MAXMSG 8 /* bottom: 0, a store per push, one or two per pop */
#include "ra.pml"
#endif

byte times_taken[NV];
byte pushed;    /* elements pushed so far: 1..pushed */
byte index[NV]; /* ghost: the index element v was pushed at */

inline took(v) {
  atomic { assert(v >= 1 && v <= pushed); times_taken[v]++; assert(times_taken[v] == 1) }
}

#if SCENARIO <= 2
/* Owner: push(v). Indices are small: top and bottom never wrap here. */
inline push(v) {
  load(0, BOTTOM, b);
  load(0, TOP, t);
  assert(b - t < CAP);
  store(0, SLOT + b % CAP, v);
  pushed = v;
  index[v] = b;
  store(0, BOTTOM, b + 1) /* [cl.publish] */
}

/* Owner: pop(); takes an element or none. */
inline pop() {
  load(0, BOTTOM, b);
  b = b - 1;
  store(0, BOTTOM, b);
#if MUTANT != 1
  fence(0); /* [cl.take] */
#endif
  load(0, TOP, t);
  if
  :: t > b -> store(0, BOTTOM, b + 1) /* empty */
  :: else ->
     load(0, SLOT + b % CAP, v);
     if
     :: t == b -> /* the last element: race the thieves with a CAS */
#if MUTANT == 2
        won = true;
#else
        fence(0);
        atomic {
          if
          :: mem[TOP] == t -> mem[TOP] = t + 1; won = true
          :: else -> won = false
          fi
        };
#endif
        store(0, BOTTOM, b + 1);
        if
        :: won -> took(v)
        :: else -> skip
        fi
     :: else -> took(v)
     fi
  fi
}

#else /* release/acquire: the code's memory orders */
#define POP_RELEASE (MUTANT != 6)

inline push(v) {
  ra_load(BOTTOM, b, false);
  ra_load(TOP, t, true);
  assert(b - t < CAP);
  ra_store(SLOT + b % CAP, v, false);
  pushed = v;
  index[v] = b;
  ra_store(BOTTOM, b + 1, MUTANT != 5) /* [cl.publish] */
}

inline pop() {
  ra_load(BOTTOM, b, false);
  b = b - 1;
  ra_store(BOTTOM, b, POP_RELEASE); /* [cl.bottom-again] */
#if MUTANT != 1
  ra_fence_sc(); /* [cl.take] */
#endif
  ra_load(TOP, t, false);
  if
  :: t > b -> ra_store(BOTTOM, b + 1, POP_RELEASE) /* empty */
  :: else ->
     ra_load(SLOT + b % CAP, v, false);
     if
     :: t == b -> /* [cl.last] */
#if MUTANT == 2
        won = true;
#else
        ra_cas(TOP, t, t + 1, won, RA_ACQ_REL);
#endif
        ra_store(BOTTOM, b + 1, POP_RELEASE);
        if
        :: won -> took(v)
        :: else -> skip
        fi
     :: else -> took(v)
     fi
  fi;
  v = 0
}
#endif

proctype owner() {
  byte me = 0;
  int b, t;
  byte v;
  bool won;
  push(1);
  push(2);
  pop();
#if SCENARIO == 2 || SCENARIO == 4
  push(3);
#endif
  pop()
}

proctype thief(byte me; byte steals) {
  int b, t;
  byte v, n = 0;
  bool won;
  do
  :: n == steals -> break
  :: else ->
#if SCENARIO >= 3
     ra_load(TOP, t, true);
#if MUTANT != 4
     ra_fence_sc(); /* [cl.steal.fence] */
#endif
     ra_load(BOTTOM, b, true); /* [cl.bottom] */
     if
     :: t >= b -> skip /* empty */
     :: else ->
        ra_load(SLOT + t % CAP, v, false);
#if MUTANT == 3
        ra_store(TOP, t + 1, true);
        took(v)
#else
        ra_cas(TOP, t, t + 1, won, RA_ACQ_REL); /* [cl.steal] */
        if
        :: won -> took(v)
        :: else -> skip /* lost the race */
        fi
#endif
     fi;
     b = 0; t = 0; v = 0;
#else
     load(me, TOP, t);
     fence(me); /* [cl.steal.fence] */
     load(me, BOTTOM, b);
     if
     :: t >= b -> skip /* empty */
     :: else ->
        load(me, SLOT + t % CAP, v);
#if MUTANT == 3
        store(me, TOP, t + 1);
        took(v)
#else
        fence(me);
        atomic { /* [cl.steal] */
          if
          :: mem[TOP] == t -> mem[TOP] = t + 1; took(v)
          :: else -> skip /* lost the race */
          fi
        }
#endif
     fi;
#endif
     n++
  od
}

init {
  byte i;
  int b, t;
  atomic {
#if SCENARIO <= 2
    run flusher(0); run flusher(1); run flusher(2);
#else
    for (i : 0 .. NM - 1) { ra_init(i, 0) };
#endif
    run owner();
#if SCENARIO == 1 || SCENARIO == 3
    run thief(1, 2)
#else
    run thief(1, 1); run thief(2, 1)
#endif
  }
#if SCENARIO <= 2
  (_nr_pr == 4 && !buffered[0] && !buffered[1] && !buffered[2]);
#define FINAL(l) mem[l]
#else
  (_nr_pr == 1);
#define FINAL(l) mval[RA_MSG(l, nmsg[l] - 1)]
#endif
  /* each element taken exactly once, or still in the deque: in [top, bottom)
   * and not overwritten */
  t = FINAL(TOP);
  b = FINAL(BOTTOM);
  i = 1;
  do
  :: i > pushed -> break
  :: else ->
     assert(times_taken[i] +
            ((index[i] >= t && index[i] < b && FINAL(SLOT + index[i] % CAP) == i) -> 1 : 0) == 1);
     i++
  od
}
