/* tests/model/spsc_queue.pml - spsc_queue's and unbounded_spsc_queue's
 * hand-overs by memory order (include/lfcore/spsc_queue.hpp,
 * unbounded_spsc_queue.hpp), checked by Spin over every interleaving and
 * every value a weakly ordered machine may let a load read (tests/model/
 * check.sh runs it): each element is popped once, in order, and whole.
 *
 * Why a model: x86 orders every load and every store (TSO), so on the
 * machines lfcore is measured on, a release or an acquire in spsc_queue
 * could be relaxed and no test would notice; on Arm each is an instruction
 * of its own (STLR, LDAR) and each missing one is a torn or stale element.
 * The models beside this one run under sequential consistency or x86-TSO;
 * this one runs under release/acquire (ra.pml: a load may read any store
 * not older than what its thread has seen, an acquire load of a release
 * store sees all its writer had seen).
 *
 * What is modelled, one access per step: a ring of C slots, each a sequence
 * word and the element (a plain location, written and read relaxed); the
 * consumer's position. The producer pushes items 1..N (try_push: its cached
 * copy of the consumer's position, refreshed only when the copy says full,
 * then the refill rule; or try_push_n: room() once, then each position) and
 * retries while full; the consumer pops them (try_pop: the slot's sequence,
 * the element, the position; or try_pop_n: ready_run's binary search for
 * the ready prefix, which reads the sequence of the prefix's last slot only,
 * then every element, then one position store). unbounded_spsc_queue: rings
 * of one slot, each with its consumer's position and its `next` link; the
 * producer pushes into its tail ring and, when that is full, into a fresh
 * ring that it then links ([uspsc.link]); the consumer pops from its head
 * ring and, finding it empty, reads the link ([uspsc.observe-link]), looks
 * at the head ring once more, moves on and pops from the next ring, which
 * must hold an element (the one pushed with the link; asserted). Drained
 * rings are not recycled here (the spare-ring pool is an spsc_queue too).
 * Not shown needed: [spsc.free] release and [spsc.observe-free] acquire.
 * They keep the consumer's read of a slot before the producer's next write
 * to it; without them that read could see the later write only by load
 * buffering, which ra.pml leaves out (C++ forbids the data race either way).
 *
 * What is checked: each element the consumer takes is the one its position
 * was pushed with (not a stale one of an earlier lap, not the initial 0),
 * and all N arrive in order.
 *
 * SCENARIO 1: try_push and try_pop over a ring of 2 slots, 6 items (three
 * laps).
 * SCENARIO 2: try_push_n in batches of 2 and try_pop_n of up to 4 over a
 * ring of 4 slots, 8 items: the consumer takes a prefix whose first slots'
 * sequences it never read.
 * SCENARIO 3: unbounded_spsc_queue with rings of one slot, 3 items.
 * MUTANT (0 = the C++ code):
 * 1: [spsc.publish] relaxed: the consumer sees the sequence and reads the
 *    slot's older element (scenario 1);
 * 2: [spsc.observe] relaxed (scenarios 1 and 2);
 * 3: try_push_n publishes its batch from the last position back (scenario
 *    2: the binary search's prefix is not ready - the order it relies on);
 * 4: [uspsc.link] relaxed (scenario 3: the consumer follows the link, and
 *    the ring it moves to may look empty, and the one it leaves may still
 *    hold an element its second look missed, which is then skipped);
 * 5: [uspsc.observe-link] relaxed (scenario 3);
 * 6: the consumer leaves a ring without looking at it again after reading
 *    its link (scenario 3: an element pushed between its first look and the
 *    link is skipped, as under sequential consistency).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#if SCENARIO == 1
#define C 2
#define N 6
#define MAXMSG 7  /* the consumer's position: 0, then one store per pop */
#elif SCENARIO == 2
#define C 4
#define N 8
#define MAXMSG 9
#else
#define C 1
#define N 3
#define NR 3      /* rings */
#define MAXMSG 4  /* (a fourth ring would pass Spin's state vector size) */
#endif
#define NTH 2
#if SCENARIO != 3
#define NLOC (2 * C + 1)
#define SEQ(slot) (slot)
#define ELEMENT(slot) (C + (slot))
#define CONSUMER_POSITION (2 * C)
#else /* ring r: its slot's sequence and element, its consumer's position, next */
#define NLOC (4 * NR)
#define SEQ_OF(r) (4 * (r))
#define ELEMENT_OF(r) (4 * (r) + 1)
#define CONSUMER_POSITION_OF(r) (4 * (r) + 2)
#define NEXT_OF(r) (4 * (r) + 3)
#endif

#if MUTANT == 1
#define PUBLISH_RELEASE false
#else
#define PUBLISH_RELEASE true
#endif
#if MUTANT == 2
#define OBSERVE_ACQUIRE false
#else
#define OBSERVE_ACQUIRE true
#endif
#define LINK_RELEASE (MUTANT != 4)
#define OBSERVE_LINK_ACQUIRE (MUTANT != 5)

#include "ra.pml"

#if SCENARIO != 3
/* publish(position): the element, then [spsc.publish]. Items are
 * position + 1. */
inline publish(position) {
  ra_store(ELEMENT((position) % C), (position) + 1, false);
  ra_store(SEQ((position) % C), (position) + 1, PUBLISH_RELEASE)
}

/* ready(position): [spsc.observe]. */
inline ready(position, ok) {
  ra_load(SEQ((position) % C), s, OBSERVE_ACQUIRE);
  ok = s == (position) + 1;
  s = 0
}

proctype producer() {
  byte me = 0, head = 0, cached = 0, tail, free, n, k, pos;
  bool ok;
  do
  :: head == N -> break
  :: else ->
#if SCENARIO == 1
     /* try_push(): refresh the copy only when it says full; the refill rule
      * resumes at one free slot in rings this small */
     if
     :: head - cached == C ->
        ra_load(CONSUMER_POSITION, tail, true); /* [spsc.observe-free] */
        ok = C - (head - tail) >= 1;
        if
        :: ok -> cached = tail
        :: else -> skip
        fi;
        tail = 0
     :: else -> ok = true
     fi;
     if
     :: ok -> publish(head); head++
     :: else -> skip /* full: try again */
     fi
#else
     /* try_push_n(up to 2 of what is left): room(), then each position */
     k = (N - head < 2 -> N - head : 2); /* wanted */
     free = C - (head - cached);
     if
     :: free < k ->
        ra_load(CONSUMER_POSITION, cached, true); /* [spsc.observe-free] */
        free = C - (head - cached)
     :: else -> skip
     fi;
     n = (free < k -> free : k);
     k = 0;
     do
     :: k == n -> break
     :: else ->
#if MUTANT == 3
        pos = head + n - 1 - k;
#else
        pos = head + k;
#endif
        publish(pos);
        k++
     od;
     head = head + n;
     free = 0; n = 0; k = 0; pos = 0
#endif
  od
}

proctype consumer() {
  byte me = 1, tail = 0, s, v, n, lo, hi, mid, k;
  bool ok;
  do
  :: tail == N -> break
  :: else ->
#if SCENARIO == 1
     ready(tail, ok); /* try_pop() */
     if
     :: ok ->
        ra_load(ELEMENT(tail % C), v, false);
        assert(v == tail + 1); /* the element of this position, whole */
        v = 0;
        ra_store(CONSUMER_POSITION, tail + 1, true); /* [spsc.free] */
        tail++
     :: else -> skip
     fi
#else
     /* try_pop_n(C): ready_run()'s binary search, then the prefix */
     lo = 0;
     hi = C;
     do
     :: lo == hi -> break
     :: else ->
        mid = lo + (hi - lo + 1) / 2;
        ready(tail + mid - 1, ok);
        if
        :: ok -> lo = mid
        :: else -> hi = mid - 1
        fi
     od;
     n = lo;
     k = 0;
     do
     :: k == n -> break
     :: else ->
        ra_load(ELEMENT((tail + k) % C), v, false);
        assert(v == tail + k + 1);
        v = 0;
        k++
     od;
     if
     :: n > 0 -> ra_store(CONSUMER_POSITION, tail + n, true); tail = tail + n /* [spsc.free] */
     :: else -> skip
     fi;
     lo = 0; hi = 0; mid = 0; n = 0; k = 0
#endif
  od
}

#else /* SCENARIO 3 */

/* Ring r's spsc_queue (one slot: position p's sequence is p + 1). */
inline ring_try_push(r, item, ok) { /* the producer's */
  if
  :: head[r] - cached[r] == C ->
     ra_load(CONSUMER_POSITION_OF(r), cached[r], true); /* [spsc.observe-free] */
     ok = head[r] - cached[r] < C
  :: else -> ok = true
  fi;
  if
  :: ok ->
     ra_store(ELEMENT_OF(r), item, false);
     ra_store(SEQ_OF(r), head[r] + 1, PUBLISH_RELEASE); /* [spsc.publish] */
     head[r]++
  :: else -> skip
  fi
}
inline ring_try_pop(r, ok) { /* the consumer's: v = the element */
  ra_load(SEQ_OF(r), s, OBSERVE_ACQUIRE); /* [spsc.observe] */
  ok = s == tail[r] + 1;
  s = 0;
  if
  :: ok ->
     ra_load(ELEMENT_OF(r), v, false);
     tail[r]++;
     ra_store(CONSUMER_POSITION_OF(r), tail[r], true) /* [spsc.free] */
  :: else -> skip
  fi
}

proctype producer() {
  byte me = 0, item = 1, tail_ring = 0, fresh = 0;
  byte head[NR], cached[NR];
  bool ok;
  do
  :: item > N -> break
  :: else -> /* emplace() */
     ring_try_push(tail_ring, item, ok);
     if
     :: !ok -> /* full: a fresh ring, the element, then the link */
        fresh++;
        ring_try_push(fresh, item, ok);
        assert(ok);
        ra_store(NEXT_OF(tail_ring), fresh + 1, LINK_RELEASE); /* [uspsc.link]; 0: none */
        tail_ring = fresh
     :: else -> skip
     fi;
     item++
  od
}

proctype consumer() {
  byte me = 1, expected = 1, head_ring = 0, next, s, v;
  byte tail[NR];
  bool ok;
  do
  :: expected > N -> break
  :: else -> /* try_pop(): pop_with() */
     ring_try_pop(head_ring, ok);
     if
     :: !ok ->
        ra_load(NEXT_OF(head_ring), next, OBSERVE_LINK_ACQUIRE); /* [uspsc.observe-link] */
        if
        :: next != 0 ->
#if MUTANT != 6
           ring_try_pop(head_ring, ok); /* once more before leaving it */
#endif
           if
           :: !ok ->
              head_ring = next - 1;
              ring_try_pop(head_ring, ok);
              assert(ok) /* it holds the element pushed with the link */
           :: else -> skip
           fi
        :: else -> skip /* empty */
        fi;
        next = 0
     :: else -> skip
     fi;
     if
     :: ok -> assert(v == expected); expected++; v = 0 /* in order, whole */
     :: else -> skip
     fi
  od
}
#endif

init {
  byte i;
  atomic {
    for (i : 0 .. NLOC - 1) { ra_init(i, 0) };
    i = 0;
    run producer();
    run consumer()
  }
}
