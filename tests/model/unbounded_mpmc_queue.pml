/* tests/model/unbounded_mpmc_queue.pml - lfcore::unbounded_mpmc_queue
 * (include/lfcore/unbounded_mpmc_queue.hpp: Ramalhete and Correia's
 * FAAArrayQueue with lfcore's change), checked by Spin over every
 * interleaving (tests/model/check.sh runs it).
 *
 * What is modelled: segments of one slot (SegmentSize 1: every push after
 * the first links a segment or fills a slot a consumer gave up on), two
 * producers and one or two consumers; each step is one
 * load, fetch_add, exchange or CAS of push() and try_pop(), and a hazard
 * pointer's protect (load, publish, load again until equal). A retired
 * segment is freed at once unless a hazard holds it; a freed segment that a
 * thread then reads is an error. Sequential consistency (the memory orders
 * are ThreadSanitizer's to check).
 *
 * What is checked: no element is lost or popped twice (each popped value was
 * pushed, once; at the end what stays is what was not popped), each
 * producer's elements come out in its order, a validated hazard never holds a
 * retired segment, no thread reads a freed one, and no execution loops
 * without an operation completing (progress pass).
 *
 * SCENARIO 1: two producers push one element each, two consumers pop once
 * each. SCENARIO 2: producer 0 pushes two elements, producer 1 one, and one
 * consumer pops three times (each producer's order).
 * MUTANT 1: the published FAAArrayQueue: a consumer swings head_ without first
 * helping tail_ off the segment it retires; tail_ can then point to a retired
 * segment, and a producer's hazard validated against tail_ does not save it
 * (the reason for lfcore's change). MUTANT 2: a producer publishes with a
 * store instead of its CAS (the consumer that gave up on the slot loses it).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NSEG 5       /* segments 0..4; 0 is the first */
#define NIL 255
#define EMPTY 0      /* slot states */
#define FULL 1
#define TAKEN 2
#define NTH 4        /* threads (hazard slots): producers 0, 1; consumers 2, 3 */

byte head = 0;
byte tail = 0;
byte enqueued[NSEG];
byte dequeued[NSEG];
byte state[NSEG];    /* the segment's one slot */
byte value[NSEG];
byte next[NSEG];
bool retired[NSEG];
bool freed[NSEG];
byte hazard[NTH];
byte segments = 1;   /* allocated so far */

byte popped[5];      /* ghost: values 1..4, how often popped */
byte last_popped[2]; /* the last value popped of each producer (FIFO) */

inline free_unprotected(s) {
  if
  :: retired[s] && !freed[s] && hazard[0] != s && hazard[1] != s && hazard[2] != s &&
     hazard[3] != s -> freed[s] = true
  :: else -> skip
  fi
}

/* protect(src): load, publish, load again until equal. */
inline protect_head() {
  seg = head;
  do
  :: hazard[me] = seg;
     if
     :: atomic { head == seg -> assert(!retired[seg]) }; break /* validated: not retired then */
     :: else -> seg = head
     fi
  od
}
inline protect_tail() {
  seg = tail;
  do
  :: hazard[me] = seg;
     if
     :: atomic { tail == seg -> assert(!retired[seg]) }; break /* validated: not retired then */
     :: else -> seg = tail
     fi
  od
}

inline touch(s) { assert(!freed[s]) }

inline push(v) {
  done = false;
  do
  :: done -> break
  :: else ->
     protect_tail();
     atomic { touch(seg); i = enqueued[seg]; enqueued[seg]++ };
     if
     :: i < 1 ->
        value[seg] = v; /* constructed in the slot, then published */
#if MUTANT == 2
        atomic { touch(seg); state[seg] = FULL; done = true }
#else
        atomic {
          touch(seg);
          if
          :: state[seg] == EMPTY -> state[seg] = FULL; done = true
          :: else -> skip /* our consumer gave up on the slot: another position */
          fi
        }
#endif
     :: else ->
        atomic { touch(seg); nx = next[seg] };
        if
        :: nx == NIL ->
           if
           :: tail != seg -> skip /* stale */
           :: else -> /* link_new_segment() */
              atomic {
                touch(seg);
                if
                :: next[seg] == NIL ->
                   assert(segments < NSEG);
                   nx = segments; segments++;
                   enqueued[nx] = 1; state[nx] = FULL; value[nx] = v;
                   next[nx] = NIL;
                   next[seg] = nx; done = true
                :: else -> skip
                fi
              };
              if
              :: done ->
                 atomic {
                   if
                   :: tail == seg -> tail = nx
                   :: else -> skip
                   fi
                 }
              :: else -> skip
              fi
           fi
        :: else ->
           atomic {
             if
             :: tail == seg -> tail = nx
             :: else -> skip
             fi
           }
        fi
     fi
  od;
  hazard[me] = NIL
}

inline pop() {
  got = 0;
  do
  :: protect_head();
     atomic { touch(seg); is_empty = dequeued[seg] >= enqueued[seg] && next[seg] == NIL };
     if
     :: is_empty -> break
     :: else -> skip
     fi;
     atomic { touch(seg); i = dequeued[seg]; dequeued[seg]++ };
     if
     :: i < 1 ->
        atomic {
          touch(seg);
          st = state[seg]; state[seg] = TAKEN;
          if
          :: st == FULL -> got = value[seg]
          :: else -> skip
          fi
        };
        if
        :: got != 0 -> break
        :: else -> skip
        fi
     :: else ->
        atomic { touch(seg); nx = next[seg] };
        if
        :: nx == NIL -> break
        :: else ->
#if MUTANT != 1
           atomic { /* help tail_ off the segment about to be retired */
             if
             :: tail == seg -> tail = nx
             :: else -> skip
             fi
           };
#endif
           atomic {
             if
             :: head == seg ->
                head = nx; hazard[me] = NIL;
                retired[seg] = true;
                free_unprotected(seg)
             :: else -> skip
             fi
           }
        fi
     fi
  od;
  hazard[me] = NIL;
  /* a scan: retired segments no hazard holds now go */
  atomic { k = 0; do :: k == NSEG -> break :: else -> free_unprotected(k); k++ od; k = 0 };
  if
  :: got != 0 ->
     atomic {
       popped[got]++;
       assert(popped[got] == 1);
       /* producer p pushes 1 + p, then 3 + p */
       assert(got > last_popped[(got - 1) % 2]);
       last_popped[(got - 1) % 2] = got
     }
  :: else -> skip
  fi
}

proctype producer(byte me) {
  byte seg, i, nx;
  bool done;
  push(1 + me);
#if SCENARIO == 2
  if
  :: me == 0 -> seg = 0; i = 0; nx = 0; push(3)
  :: else -> skip
  fi
#endif
progress_pushed:
  skip
}

proctype consumer(byte me; byte pops) {
  byte seg, i, nx, st, got, k, n = 0;
  bool is_empty;
  do
  :: n == pops -> break
  :: else -> pop();
progress_popped:
     n++
  od
}

init {
  byte s, v;
  atomic {
    next[0] = NIL;
    hazard[0] = NIL; hazard[1] = NIL; hazard[2] = NIL; hazard[3] = NIL;
    run producer(0); run producer(1);
#if SCENARIO == 1
    run consumer(2, 1); run consumer(3, 1)
#else
    run consumer(2, 3)
#endif
  }
  (_nr_pr == 1);
  /* what stays in the queue (full slots from head_ on) is what was not popped */
  s = head;
  do
  :: s == NIL -> break
  :: else ->
     assert(!freed[s]);
     if
     :: state[s] == FULL -> popped[value[s]]++
     :: else -> skip
     fi;
     s = next[s]
  od;
  v = 1;
  do
  :: v > 4 -> break
  :: else ->
#if SCENARIO == 1
     assert(popped[v] == (v <= 2 -> 1 : 0));
#else
     assert(popped[v] == (v <= 3 -> 1 : 0));
#endif
     v++
  od
}
