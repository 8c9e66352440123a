/* tests/model/unbounded_mpmc_ra.pml - lfcore::unbounded_mpmc_queue
 * (include/lfcore/unbounded_mpmc_queue.hpp) under C++'s release/acquire
 * (tests/model/ra.pml), checked by Spin over every interleaving and every
 * value each load may read (tests/model/check.sh runs it).
 * unbounded_mpmc_queue.pml checks the algorithm, its hazard pointers
 * included, under sequential consistency; this model asks what x86 gives
 * for free and Arm does not: does a consumer read the element its producer
 * wrote, and does every thread that reaches a new segment see it as its
 * linker wrote it?
 *
 * What is modelled: segments of one slot; two producers that push one
 * element each and one consumer that pops twice (SCENARIO 1), or one
 * producer that pushes two and two consumers that pop once each (SCENARIO
 * 2); each step is one load,
 * fetch_add, exchange, CAS or store of push(), publish(),
 * link_new_segment() and try_pop() with the C++ code's orders, and
 * hazard_pointer::protect's relaxed load and acquire loads (its fence and
 * the reclamation are hazard_pointer.pml's: segments here are never freed).
 * A new segment's fields are garbage until its linker's stores. Each
 * producer raises a flag with a release store when its push returns.
 *
 * What is checked, in every execution: no segment field is read before its
 * linker's store; each element popped is one that was pushed, whole, and
 * popped once; a pop that finds the queue empty after it acquired the
 * producers' flags has already popped their elements (scenario 1) ("a push that happened
 * before this call is seen by coherence"); at the end what stays in the
 * queue is what was not popped.
 *
 * MUTANT (0 = the C++ code): 1: [umpmc.publish] relaxed; 2: [umpmc.take]
 * relaxed (the exchange); 3: [umpmc.link] relaxed; 4: the pushes' and pops'
 * loads of next relaxed (which pair with [umpmc.link]); 5: the swings of
 * tail_ relaxed (a producer that reads the new tail_ has not seen the
 * segment); 6: protect's second load relaxed; 7: the swing of head_
 * relaxed (a consumer that reads the new head_ has not seen the segment).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NSEG 3 /* segments: 0 the first, then as producers link them */
#define NTH 3  /* scenario 1: producers 0, 1, the consumer 2; 2: the producer 0, consumers 1, 2 */
#define HEAD 0 /* locations */
#define TAIL 1
#define ENQUEUED(s) (2 + 5 * (s))
#define DEQUEUED(s) (3 + 5 * (s))
#define NEXT(s) (4 + 5 * (s))
#define STATE(s) (5 + 5 * (s))
#define VALUE(s) (6 + 5 * (s))
#define FLAG(p) (2 + 5 * NSEG + (p))
#define NLOC (4 + 5 * NSEG)
#define MAXMSG 5
#include "ra.pml"

#define NIL 15
#define GARBAGE 127
#define EMPTY 0 /* slot states */
#define FULL 1
#define TAKEN 2
#define LAST(loc) mval[RA_MSG(loc, nmsg[loc] - 1)]

#define PUBLISH_ORDER (MUTANT == 1 -> RA_RLX : RA_REL)
#define TAKE_ORDER (MUTANT == 2 -> RA_RLX : RA_ACQ)
#define LINK_ORDER (MUTANT == 3 -> RA_RLX : RA_REL)
#define NEXT_ACQUIRE (MUTANT != 4)
#define SWING_ORDER (MUTANT == 5 -> RA_RLX : RA_REL)
#define HEAD_SWING_ORDER (MUTANT == 7 -> RA_RLX : RA_REL)
#define PROTECT_ACQUIRE (MUTANT != 6)

byte popped[3]; /* ghost: how often each element (1, 2) was popped */

inline protect(loc) { ra_protect(loc, seg, again, PROTECT_ACQUIRE) }

/* Pushes `items` elements: 1 + me, then 2 + me. Producer p's n-th link is
 * segment 1 + p + n. */
proctype producer(byte me; byte items) {
  byte seg, i, nx, t, st, again;
  bool ok, done;
  byte item = 1 + me;
  byte fresh = 1 + me;
  do
  :: done && item == me + items -> break
  :: done && item < me + items -> item++; done = false
  :: !done ->
     protect(TAIL);
     ra_rmw(ENQUEUED(seg), i, i + 1, RA_RLX);
     if
     :: i < 1 ->
        ra_store(VALUE(seg), item, false);
        st = EMPTY;
        ra_cas(STATE(seg), st, FULL, ok, PUBLISH_ORDER); /* [umpmc.publish] */
        done = ok /* else our consumer gave up on the slot: another position */
     :: else ->
        ra_load(NEXT(seg), nx, NEXT_ACQUIRE);
        assert(nx != GARBAGE);
        if
        :: nx == NIL ->
           ra_load(TAIL, t, false);
           if
           :: t != seg -> skip /* stale: avoid allocating */
           :: else -> /* link_new_segment() */
              ra_store(ENQUEUED(fresh), 1, false);
              ra_store(DEQUEUED(fresh), 0, false);
              ra_store(NEXT(fresh), NIL, false);
              ra_store(VALUE(fresh), item, false);
              ra_store(STATE(fresh), FULL, false);
              ra_cas(NEXT(seg), nx, fresh, ok, LINK_ORDER); /* [umpmc.link] */
              if
              :: ok -> ra_cas(TAIL, t, fresh, ok, SWING_ORDER); done = true; fresh++
              :: else -> skip
              fi
           fi
        :: else -> t = seg; ra_cas(TAIL, t, nx, ok, SWING_ORDER) /* help */
        fi
     fi;
     i = 0; nx = 0; t = 0; st = 0; ok = false
  od;
  seg = 0;
  ra_store(FLAG(me), 1, true)
}

proctype consumer(byte me; byte calls) {
  byte seg, i, nx, t, st, again, d, e, got, n = 0, pops = 0, known;
  bool ok, is_empty;
  do
  :: n == calls -> break
  :: else ->
#if SCENARIO == 1
     ra_load(FLAG(0), known, true);
     ra_load(FLAG(1), t, true);
     known = known + t;
#endif
     got = 0;
     is_empty = false;
     do
     :: protect(HEAD);
        /* the empty check, relaxed */
        ra_load(DEQUEUED(seg), d, false);
        ra_load(ENQUEUED(seg), e, false);
        ra_load(NEXT(seg), nx, false);
        assert(d != GARBAGE && e != GARBAGE && nx != GARBAGE);
        if
        :: d >= e && nx == NIL -> is_empty = true; break
        :: else -> skip
        fi;
        ra_rmw(DEQUEUED(seg), i, i + 1, RA_RLX);
        if
        :: i < 1 ->
           ra_rmw(STATE(seg), st, TAKEN, TAKE_ORDER); /* [umpmc.take] */
           assert(st != GARBAGE);
           if
           :: st == FULL ->
              ra_load(VALUE(seg), got, false);
              assert(got == 1 || got == 2);
              break
           :: else -> skip /* its producer will see `taken` */
           fi
        :: else ->
           ra_load(NEXT(seg), nx, NEXT_ACQUIRE);
           assert(nx != GARBAGE);
           if
           :: nx == NIL -> is_empty = true; break
           :: else -> skip
           fi;
           ra_load(TAIL, t, false);
           if
           :: t == seg -> ra_cas(TAIL, t, nx, ok, SWING_ORDER) /* keep head_ from passing tail_ */
           :: else -> skip
           fi;
           t = seg;
           ra_cas(HEAD, t, nx, ok, HEAD_SWING_ORDER)
        fi;
        i = 0; st = 0; d = 0; e = 0; t = 0; ok = false
     od;
     if
     :: is_empty -> assert(pops >= known)
     :: else ->
        popped[got]++;
        assert(popped[got] == 1);
        pops++
     fi;
     n++;
     seg = 0; i = 0; nx = 0; t = 0; st = 0; d = 0; e = 0; got = 0; known = 0; ok = false
  od
}

init {
  byte s;
  atomic {
    ra_init(HEAD, 0);
    ra_init(TAIL, 0);
    ra_init(ENQUEUED(0), 0);
    ra_init(DEQUEUED(0), 0);
    ra_init(NEXT(0), NIL);
    ra_init(STATE(0), EMPTY);
    ra_init(VALUE(0), GARBAGE);
    for (s : 1 .. NSEG - 1) {
      ra_init(ENQUEUED(s), GARBAGE);
      ra_init(DEQUEUED(s), GARBAGE);
      ra_init(NEXT(s), GARBAGE);
      ra_init(STATE(s), GARBAGE);
      ra_init(VALUE(s), GARBAGE)
    };
    ra_init(FLAG(0), 0);
    ra_init(FLAG(1), 0);
    s = 0;
#if SCENARIO == 1
    run producer(0, 1);
    run producer(1, 1);
    run consumer(2, 2)
#else
    run producer(0, 2);
    run consumer(1, 1);
    run consumer(2, 1)
#endif
  }
  (_nr_pr == 1);
  /* what stays in the queue (full slots from head_ on) is what was not popped */
  s = LAST(HEAD);
  do
  :: s == NIL -> break
  :: else ->
     if
     :: LAST(STATE(s)) == FULL -> popped[LAST(VALUE(s))]++
     :: else -> skip
     fi;
     s = LAST(NEXT(s))
  od;
  assert(popped[1] == 1 && popped[2] == 1);
  s = 0
}
