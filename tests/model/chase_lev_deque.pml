/* tests/model/chase_lev_deque.pml - lfcore::chase_lev_deque (include/
 * lfcore/chase_lev_deque.hpp): push, pop and steal on x86-TSO store buffers,
 * checked by Spin over every interleaving (tests/model/check.sh runs it):
 * every element is taken at most once, and what no one took is still in
 * the deque.
 *
 * Why a model: pop() and steal() race for the last element through a
 * store-buffering pattern - the owner stores bottom and then reads top, a
 * thief reads top and then bottom and claims with a CAS - that the owner's
 * full fence ([cl.take]) makes safe on x86 (Lê, Pop, Cohen and Zappa Nardelli,
 * "Correct and efficient work-stealing for weak memory models", PPoPP 2013).
 * Stores wait in an x86-TSO store buffer per thread (tso.pml); a fence or a
 * locked CAS drains it. The thief's fence ([cl.steal.fence]) is
 * there for weaker machines: x86 never reorders a load with a load, so this
 * model cannot show why it is needed (Arm is not modelled). The array does
 * not grow here (the capacity covers every scenario).
 *
 * SCENARIO 1: the owner pushes two elements and pops twice; one thief steals
 * twice. SCENARIO 2: the owner pushes two, pops once, pushes a third and pops
 * again; two thieves steal once each.
 * MUTANT 1: pop() without its full fence: the owner and a thief can both take
 * the last element. MUTANT 2: pop() takes the last element without the CAS on
 * top. MUTANT 3: steal() claims with a plain store instead of the CAS.
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

#include "tso.pml"

byte times_taken[NV];
byte pushed;    /* elements pushed so far: 1..pushed */
byte index[NV]; /* ghost: the index element v was pushed at */

inline took(v) {
  atomic { assert(v >= 1 && v <= pushed); times_taken[v]++; assert(times_taken[v] == 1) }
}

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

proctype owner() {
  int b, t;
  byte v;
  bool won;
  push(1);
  push(2);
  pop();
#if SCENARIO == 2
  push(3);
#endif
  pop()
}

proctype thief(byte me; byte steals) {
  int b, t;
  byte v, n = 0;
  do
  :: n == steals -> break
  :: else ->
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
     n++
  od
}

init {
  byte i;
  int b, t;
  atomic {
    run flusher(0); run flusher(1); run flusher(2);
    run owner();
#if SCENARIO == 1
    run thief(1, 2)
#else
    run thief(1, 1); run thief(2, 1)
#endif
  }
  (_nr_pr == 4 && !buffered[0] && !buffered[1] && !buffered[2]);
  /* each element taken exactly once, or still in the deque: in [top, bottom)
   * and not overwritten */
  t = mem[TOP];
  b = mem[BOTTOM];
  i = 1;
  do
  :: i > pushed -> break
  :: else ->
     assert(times_taken[i] +
            ((index[i] >= t && index[i] < b && mem[SLOT + index[i] % CAP] == i) -> 1 : 0) == 1);
     i++
  od
}
