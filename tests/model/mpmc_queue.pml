/* tests/model/mpmc_queue.pml - lfcore::mpmc_queue (include/lfcore/
 * mpmc_queue.hpp, Dmitry Vyukov's bounded MPMC queue), checked by Spin over
 * every interleaving (tests/model/check.sh runs it): each element is popped
 * once, from a cell its producer finished, in each producer's order, and no
 * producer writes a cell whose element is still there.
 *
 * What is modelled: the ring's cells, each a sequence number and a value,
 * and the two position counters; claim() as the code has it (a relaxed read
 * of the counter, the acquire read of the cell's sequence, the CAS that
 * claims the position and, when it fails, hands back the counter's value),
 * then the producer's construct-and-publish and the consumer's
 * read-and-release, one load, store or CAS per step, under sequential
 * consistency (scenario 1) or under release/acquire (scenario 2: ra.pml,
 * where a load may read a store its thread has not seen past, as on Arm).
 * Two producers push two elements each, retrying while the ring is full; two
 * consumers pop until all four are out, retrying while it looks empty.
 * Retries are not progress here: a producer preempted between its claim and
 * its publish makes consumers fail until it resumes (the header says so),
 * so only safety is checked.
 *
 * SCENARIO 1: a ring of two cells (the smallest the code accepts).
 * SCENARIO 2: the same under release/acquire (the second producer pushing
 * one element, not two), with the code's memory orders
 * (the counters relaxed, a CAS reading the counter's last value). Checked
 * instead of "no element overwritten", which a load there cannot tell: each
 * store to a cell's element or sequence is by a thread that has seen the
 * one before it (ra.pml's assertion), else the two could be ordered either
 * way and a consumer of the later lap read the earlier element.
 * MUTANT (0 = the C++ code):
 * 1: a ring of one cell: "full for position p" (seq == p + 1) reads as
 *    "free for position p + 1", and a producer overwrites an element
 *    (why the constructor rejects capacity 1);
 * 2: a consumer releases the cell (seq = pos + capacity) before it has read
 *    the element;
 * 3: a producer publishes (seq = pos + 1) before it has written the element;
 * 4: claim() takes a cell whose sequence is at most pos + turn, not exactly
 *    that: a consumer takes a cell whose producer has not published it;
 * 5: [mpmc.publish] relaxed (scenario 2: a consumer reads the cell's
 *    earlier element);
 * 6: [mpmc.observe] relaxed (scenario 2);
 * 7: [mpmc.free] relaxed (scenario 2: the next lap's producer writes the
 *    element without having seen the one the consumer read - their order
 *    is free, so the next consumer may read the old one).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#if MUTANT == 1
#define CAP 1
#else
#define CAP 2
#endif
#define NP 2       /* producers */
#define PER 2      /* elements per producer (scenario 2: the second pushes one) */
#if SCENARIO == 1
#define TOTAL (NP * PER)
#else
#define TOTAL (NP * PER - 1)
#endif
#define EMPTY 255

byte popped;       /* ghost: elements popped */
bool got[NP * PER]; /* ghost: each element popped */

#if SCENARIO == 1
byte seq[CAP];     /* cell::seq */
byte val[CAP];     /* cell::value: producer * PER + n, or EMPTY */
byte enq, deq;     /* enqueue_pos_, dequeue_pos_ */
#define ENQ enq
#define DEQ deq
#define LOAD_COUNTER(counter, v) v = counter
#define CAS_COUNTER(counter) \
  atomic { \
    if \
    :: counter == pos -> counter = pos + 1; ok = true \
    :: else -> pos = counter; ok = false \
    fi \
  }
#define LOAD_SEQ(cell, v, acquire) v = seq[cell]
#define STORE_SEQ(cell, v, release) seq[cell] = v
#define STORE_ELEMENT(cell, v) atomic { assert(val[cell] == EMPTY); val[cell] = v }
#define LOAD_ELEMENT(cell, v) v = val[cell]
#define DESTROY_ELEMENT(cell) val[cell] = EMPTY
#else
/* locations: each cell's sequence and element, the two counters */
#define NTH 4
#define NLOC (2 * CAP + 2)
#define MAXMSG (1 + 2 * TOTAL / CAP + 1) /* a sequence: 0, then two stores per lap */
#define ENQ (2 * CAP)
#define DEQ (2 * CAP + 1)
#include "ra.pml"
#define LOAD_COUNTER(counter, v) ra_load(counter, v, false)
/* compare_exchange, relaxed; on failure, hands the counter back in pos. */
#define CAS_COUNTER(counter) ra_cas(counter, pos, pos + 1, ok, RA_RLX)
#define LOAD_SEQ(cell, v, acquire) ra_load(cell, v, acquire)
#define STORE_SEQ(cell, v, release) ra_store(cell, v, release)
#define STORE_ELEMENT(cell, v) ra_store(CAP + (cell), v, false)
#define LOAD_ELEMENT(cell, v) ra_load(CAP + (cell), v, false)
#define DESTROY_ELEMENT(cell) skip
#endif
#define OBSERVE_ACQUIRE (MUTANT != 6)
#define PUBLISH_RELEASE (MUTANT != 5)
#define FREE_RELEASE (MUTANT != 7)

/* claim(counter, turn): sets pos and ok (false: full / empty). */
inline claim(counter, turn) {
  LOAD_COUNTER(counter, pos); /* relaxed: validated by seq */
  do
  :: LOAD_SEQ(pos % CAP, s, OBSERVE_ACQUIRE); /* [mpmc.observe] */
     if
#if MUTANT == 4
     :: s <= pos + turn ->
#else
     :: s == pos + turn ->
#endif
        CAS_COUNTER(counter);
        if
        :: ok -> break
        :: else -> skip
        fi
#if MUTANT != 4
     :: s < pos + turn -> ok = false; break /* full (producer) or empty (consumer) */
#endif
     :: s > pos + turn -> LOAD_COUNTER(counter, pos) /* another thread got pos */
     fi
  od
}

proctype producer(byte me; byte id; byte count) {
  byte n = 0, pos, s;
  bool ok;
  do
  :: n == count -> break
  :: else ->
     claim(ENQ, 0);
     if
     :: ok ->
#if MUTANT == 3
        STORE_SEQ(pos % CAP, pos + 1, PUBLISH_RELEASE);
#endif
        STORE_ELEMENT(pos % CAP, id * PER + n);
#if MUTANT != 3
        STORE_SEQ(pos % CAP, pos + 1, PUBLISH_RELEASE); /* [mpmc.publish] */
#endif
        n++
     :: else -> skip /* full: try again */
     fi
  od
}

proctype consumer(byte me) {
  byte pos, s, v;
  byte last[NP]; /* the next element expected of each producer */
  bool ok;
  do
  :: popped == TOTAL -> break
  :: else ->
     claim(DEQ, 1);
     if
     :: ok ->
#if MUTANT == 2
        STORE_SEQ(pos % CAP, pos + CAP, FREE_RELEASE);
#endif
        LOAD_ELEMENT(pos % CAP, v);
        atomic {
          assert(v != EMPTY && !got[v]);
          assert(v % PER >= last[v / PER]); /* each producer's order */
          last[v / PER] = v % PER + 1;
          got[v] = true;
          popped++;
          v = 0
        };
        DESTROY_ELEMENT(pos % CAP); /* moved out */
#if MUTANT != 2
        STORE_SEQ(pos % CAP, pos + CAP, FREE_RELEASE) /* [mpmc.free] */
#endif
     :: else -> skip /* empty: try again */
     fi
  od
}

init {
  byte i;
  atomic {
#if SCENARIO == 1
    for (i : 0 .. CAP - 1) { seq[i] = i; val[i] = EMPTY };
#else
    for (i : 0 .. CAP - 1) { ra_init(i, i); ra_init(CAP + i, EMPTY) };
    ra_init(ENQ, 0);
    ra_init(DEQ, 0);
#endif
    run producer(0, 0, PER);
    run producer(1, 1, TOTAL - PER);
    run consumer(2);
    run consumer(3)
  }
  (_nr_pr == 1);
#if SCENARIO == 1
  assert(popped == TOTAL && enq == TOTAL && deq == TOTAL)
#else
  assert(popped == TOTAL)
#endif
}
