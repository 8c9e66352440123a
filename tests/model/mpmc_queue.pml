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
 * consistency (the acquire/release pairs are ThreadSanitizer's to check).
 * Two producers push two elements each, retrying while the ring is full; two
 * consumers pop until all four are out, retrying while it looks empty.
 * Retries are not progress here: a producer preempted between its claim and
 * its publish makes consumers fail until it resumes (the header says so),
 * so only safety is checked.
 *
 * SCENARIO 1: a ring of two cells (the smallest the code accepts).
 * MUTANT (0 = the C++ code):
 * 1: a ring of one cell: "full for position p" (seq == p + 1) reads as
 *    "free for position p + 1", and a producer overwrites an element
 *    (why the constructor rejects capacity 1);
 * 2: a consumer releases the cell (seq = pos + capacity) before it has read
 *    the element;
 * 3: a producer publishes (seq = pos + 1) before it has written the element;
 * 4: claim() takes a cell whose sequence is at most pos + turn, not exactly
 *    that: a consumer takes a cell whose producer has not published it.
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
#define PER 2      /* elements per producer */
#define TOTAL (NP * PER)
#define EMPTY 255

byte seq[CAP];     /* cell::seq */
byte val[CAP];     /* cell::value: producer * PER + n, or EMPTY */
byte enq, deq;     /* enqueue_pos_, dequeue_pos_ */
byte popped;       /* ghost: elements popped */
bool got[TOTAL];   /* ghost: each element popped */

/* claim(counter, turn): sets pos and ok (false: full / empty). */
inline claim(counter, turn) {
  pos = counter; /* relaxed: validated by seq */
  do
  :: s = seq[pos % CAP]; /* [mpmc.observe] */
     if
#if MUTANT == 4
     :: s <= pos + turn ->
#else
     :: s == pos + turn ->
#endif
        atomic { /* compare_exchange on the counter */
          if
          :: counter == pos -> counter = pos + 1; ok = true
          :: else -> pos = counter; ok = false
          fi
        };
        if
        :: ok -> break
        :: else -> skip
        fi
#if MUTANT != 4
     :: s < pos + turn -> ok = false; break /* full (producer) or empty (consumer) */
#endif
     :: s > pos + turn -> pos = counter /* another thread got pos */
     fi
  od
}

proctype producer(byte id) {
  byte n = 0, pos, s;
  bool ok;
  do
  :: n == PER -> break
  :: else ->
     claim(enq, 0);
     if
     :: ok ->
#if MUTANT == 3
        seq[pos % CAP] = pos + 1;
#endif
        atomic { assert(val[pos % CAP] == EMPTY); val[pos % CAP] = id * PER + n };
#if MUTANT != 3
        seq[pos % CAP] = pos + 1; /* [mpmc.publish] */
#endif
        n++
     :: else -> skip /* full: try again */
     fi
  od
}

proctype consumer() {
  byte pos, s, v;
  byte last[NP]; /* the next element expected of each producer */
  bool ok;
  do
  :: popped == TOTAL -> break
  :: else ->
     claim(deq, 1);
     if
     :: ok ->
#if MUTANT == 2
        seq[pos % CAP] = pos + CAP;
#endif
        atomic {
          v = val[pos % CAP];
          assert(v != EMPTY && !got[v]);
          assert(v % PER >= last[v / PER]); /* each producer's order */
          last[v / PER] = v % PER + 1;
          got[v] = true;
          popped++;
          val[pos % CAP] = EMPTY /* moved out, destroyed */
        };
#if MUTANT != 2
        seq[pos % CAP] = pos + CAP /* [mpmc.free] */
#endif
     :: else -> skip /* empty: try again */
     fi
  od
}

init {
  byte i;
  atomic {
    for (i : 0 .. CAP - 1) { seq[i] = i; val[i] = EMPTY }
    run producer(0);
    run producer(1);
    run consumer();
    run consumer()
  }
  (_nr_pr == 1);
  assert(popped == TOTAL && enq == TOTAL && deq == TOTAL)
}
