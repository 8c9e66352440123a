/* tests/model/eventcount.pml - lfcore::eventcount (include/lfcore/
 * eventcount.hpp) on x86-TSO, checked by Spin over every interleaving
 * (tests/model/check.sh runs it): no wake-up is lost.
 *
 * Why a model: the protocol rests on a store-buffering pattern - the waiter
 * announces itself (waiters_) then reads the condition, the notifier stores
 * the condition then reads waiters_ - that only the notifier's full fence and
 * the waiter's locked increment make safe, and ThreadSanitizer does not model
 * fences (detail/fence.hpp). So each thread here has a store buffer, as an
 * x86 core does (tso.pml): a plain store waits in it, the thread's own loads
 * see it, and a fence or a locked read-modify-write (fetch_add, CAS, the
 * futex system call) waits for it to drain.
 *
 * The program: two producers each publish one element with a plain store
 * (their own slot, as a queue's release store publishes) and call
 * notify_one(); two consumers each take one element by CAS, sleeping on the
 * eventcount as blocking_queue's wait_for_room() does (try, prepare_wait, try
 * again, cancel_wait or wait). The futex: FUTEX_WAIT sleeps only while the
 * epoch still holds the key, atomically; FUTEX_WAKE wakes one sleeper (any).
 * What is checked: every execution ends with both consumers done -
 * Spin reports any in which a consumer sleeps forever ("invalid end state"),
 * which is what a lost wake-up is - and with both elements taken once.
 *
 * SCENARIO 1: eventcount as its header shows it: the producer calls
 * notify_one() (a full fence, then a look at waiters_), the consumer re-checks
 * right after prepare_wait(). SCENARIO 2: the farm's per-task hand-over
 * (farm_base.hpp, wake() and wait_until_ready()): the producer's wake() is
 * light() - a compiler barrier where membarrier(2) is there - and a look at
 * waiters_, calling notify_one() only if it sees one; the consumer parks with
 * heavy() ([farm.heavy], membarrier: every thread's buffer drains) between
 * prepare_wait() and its re-check.
 * SCENARIO 3: scenario 1 under release/acquire with seq_cst fences (ra.pml:
 * a load may read a store its thread has not seen past, as on Arm), with the
 * code's memory orders: the producer publishes with a release store, the
 * consumer looks with an acquire load and takes with a CAS; the seq_cst
 * read-modify-writes are acq_rel there, seq_cst loads acquire - C++ makes
 * neither a fence. The futex reads the epoch's last value (its bucket lock
 * orders it after any wake-up that came first).
 * MUTANT (0 = the C++ code):
 * 1: notify() without its full fence ([ec.notify]): the producer's store can
 *    still be in its buffer when it reads waiters_ == 0;
 * 2: a consumer waits right after prepare_wait(), without trying again.
 * (Reading the epoch before the announcement in prepare_wait() is not a
 * mutant: both precede the second try, which is all the argument needs, and
 * the model with that order passes too.)
 * 3: notify() bumps the epoch but makes no FUTEX_WAKE;
 * 4: (scenario 2) the consumer parks without heavy(): the producer's push can
 *    still be in its buffer at the re-check while its look at waiters_ saw 0;
 * 5: (scenario 3) prepare_wait() without its fence ([ec.announce] as a
 *    seq_cst fetch_add alone, as before 2026-12-04): a read-modify-write is no
 *    fence in C++, so the re-check may read the condition from before the
 *    producer's store while the producer reads waiters_ == 0 (on x86 the
 *    locked fetch_add is a full barrier, which is why scenario 1 passes).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NT 4      /* threads: producers 0, 1; consumers 2, 3 */
#define EPOCH 0   /* memory: eventcount::epoch_ */
#define WAITERS 1 /* eventcount::waiters_ */
#define SLOT 2    /* SLOT + p: producer p's element (1 = there) */
#define NM 4

#if SCENARIO <= 2
#include "tso.pml"
#else
#define NTH NT
#define NLOC NM
#define MAXMSG 10 /* waiters_: 0, then two stores per wait */
#include "ra.pml"
#endif

bool asleep[NT];   /* in FUTEX_WAIT */
byte taken;        /* elements taken */

/* FUTEX_WAKE of one sleeper, any (notify_one; notify_all is not modelled). */
inline futex_wake() {
  atomic {
    if
    :: asleep[2] -> asleep[2] = false
    :: asleep[3] -> asleep[3] = false
    :: else -> skip
    fi
  }
}

#if SCENARIO <= 2
/* eventcount::notify() */
inline notify(t) {
#if MUTANT != 1
  fence(t); /* [ec.notify] */
#endif
  load(t, WAITERS, v);
  if
  :: v != 0 ->
     fence(t); atomic { mem[EPOCH]++ }; /* fetch_add */
#if MUTANT != 3
     fence(t); futex_wake()
#else
     skip
#endif
  :: else -> skip
  fi
}

/* eventcount::prepare_wait() */
inline prepare_wait(t, key) {
  fence(t); atomic { mem[WAITERS]++ }; /* [ec.announce] */
  load(t, EPOCH, key)                   /* [ec.key] */
}

/* eventcount::wait(key) */
inline wait(t, key) {
  do
  :: load(t, EPOCH, v);
     if
     :: v != key -> break
     :: else ->
        fence(t); /* the system call */
        atomic {
          if
          :: mem[EPOCH] == key -> asleep[t] = true
          :: else -> skip
          fi
        };
        (!asleep[t])
     fi
  od;
  fence(t); atomic { mem[WAITERS]-- }
}

/* Takes an element if one is there (a CAS on a slot): sets got. */
inline try_take(t) {
  got = false;
  fence(t);
  atomic {
    if
    :: mem[SLOT] == 1 -> mem[SLOT] = 0; got = true
    :: mem[SLOT + 1] == 1 -> mem[SLOT + 1] = 0; got = true
    :: else -> skip
    fi;
    if
    :: got -> taken++
    :: else -> skip
    fi
  }
}

proctype producer(byte t) {
  byte v;
  store(t, SLOT + t, 1);
#if SCENARIO == 2
  /* farm_base::wake(): light() orders nothing at run time */
  load(t, WAITERS, v); /* may_have_waiters() */
  if
  :: v != 0 -> notify(t)
  :: else -> skip
  fi
#else
  notify(t)
#endif
}

proctype consumer(byte t) {
  byte key, v;
  bool got;
  do
  :: try_take(t);
     if
     :: got -> break
     :: else ->
        prepare_wait(t, key);
#if SCENARIO == 2 && MUTANT != 4
        membarrier(); /* heavy() */
#endif
#if MUTANT != 2
        try_take(t);
#endif
        if
        :: got -> fence(t); atomic { mem[WAITERS]-- }; break /* cancel_wait */
        :: else -> wait(t, key)
        fi
     fi
  od
}

init {
  atomic {
    run flusher(0); run flusher(1); run flusher(2); run flusher(3);
    run producer(0); run producer(1);
    run consumer(2); run consumer(3)
  }
  (_nr_pr == 5); /* the four flushers remain */
  assert(taken == 2 && mem[SLOT] == 0 && mem[SLOT + 1] == 0 && !buffered[0] && !buffered[1])
}

#else /* SCENARIO 3: release/acquire */

inline notify() {
#if MUTANT != 1
  ra_fence_sc(); /* [ec.notify] */
#endif
  ra_load(WAITERS, v, false);
  if
  :: v != 0 ->
     ra_fetch_add(EPOCH, 1);
#if MUTANT != 3
     futex_wake()
#else
     skip
#endif
  :: else -> skip
  fi;
  v = 0
}

inline prepare_wait(key) {
  ra_fetch_add(WAITERS, 1); /* [ec.announce] */
#if MUTANT != 5
  ra_fence_sc();
#endif
  ra_load(EPOCH, key, true) /* [ec.key] */
}

/* FUTEX_WAIT: sleeps while the epoch's last value is key. */
inline wait(key) {
  do
  :: ra_load(EPOCH, v, true);
     if
     :: v != key -> break
     :: else ->
        atomic {
          if
          :: mval[RA_MSG(EPOCH, nmsg[EPOCH] - 1)] == key -> asleep[me] = true
          :: else -> skip
          fi
        };
        (!asleep[me])
     fi
  od;
  ra_fetch_add(WAITERS, -1);
  v = 0
}

/* Looks for an element (an acquire load, as a queue's pop) and takes it
 * with a CAS: sets got. */
inline try_take() {
  got = false;
  for (p : 0 .. 1) {
    if
    :: !got ->
       ra_load(SLOT + p, v, true);
       if
       :: v == 1 ->
          ra_cas(SLOT + p, v, 0, got, RA_ACQ_REL);
          if
          :: got -> atomic { taken++ }
          :: else -> skip
          fi
       :: else -> skip
       fi
    :: else -> skip
    fi
  };
  p = 0; v = 0
}

proctype producer(byte me) {
  byte v;
  ra_store(SLOT + me, 1, true); /* the queue's release push */
  notify()
}

proctype consumer(byte me) {
  byte key, v, p;
  bool got;
  do
  :: try_take();
     if
     :: got -> break
     :: else ->
        prepare_wait(key);
#if MUTANT != 2
        try_take();
#endif
        if
        :: got -> ra_fetch_add(WAITERS, -1); break /* cancel_wait */
        :: else -> wait(key)
        fi
     fi
  od
}

init {
  byte i;
  atomic {
    for (i : 0 .. NM - 1) { ra_init(i, 0) };
    i = 0;
    run producer(0); run producer(1);
    run consumer(2); run consumer(3)
  }
  (_nr_pr == 1);
  assert(taken == 2)
}
#endif
