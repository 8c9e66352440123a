/* tests/model/blocking_queue.pml - blocking_queue's close() and sleeping
 * (include/lfcore/blocking_queue.hpp), and the pipeline's shutdown built on
 * it (include/lfcore/pipeline.hpp), checked by Spin over every interleaving
 * (tests/model/check.sh runs it): nothing a push handed over is lost, a pop
 * says "closed and drained" only when it is, and nobody sleeps for ever.
 *
 * Why a model: close() promises that a push which completed is popped and
 * one racing with close() either completes or fails, yet pop() must also
 * know when to stop waiting. It decides "closed and drained" from three
 * reads - closed_, then pushers_ (pushes between [bq.enter] and their end),
 * then the queue - and a pusher that finds the queue closed wakes every
 * popper, because one may be asleep waiting for that push to end. Whether
 * each read and wake-up is needed is a question about orders of steps that
 * stress tests sample; Spin enumerates them. The pipeline stops on the first
 * exception by closing channels (a stage closes its input and its output),
 * so a thread asleep for room or for an item anywhere must be woken by one.
 *
 * What is modelled, one shared access per step, under sequential consistency
 * (every access of the protocol is seq_cst; eventcount's fence pairing is
 * eventcount.pml's, on x86-TSO): the underlying queue is a FIFO of C slots,
 * one step per try_push/try_pop (its own races are mpmc_queue.pml's);
 * attempt_push and pop's attempt as in the code, step by step;
 * wait_for_room's announce, re-check, sleep. The eventcount is exact for any
 * number of waiters: prepare_wait() counts the waiter and reads the epoch,
 * wait() sleeps in a futex only while the epoch holds its key. notify() is
 * two steps: the look at the waiters and the epoch bump, then the
 * FUTEX_WAKE, which wakes any sleeper (one, or all) of the eventcount at
 * that moment - Linux does not promise which, and a thread that announced
 * after the bump may be asleep by then, holding the newer key. A timed
 * wait's deadline passes at any moment: wait_until() may give up whenever
 * the epoch still holds its key, and a timed futex sleep may end unwoken.
 * C = 1 slot, so that pushers wait for room (the pipeline's channels have at
 * least 2; nothing in the protocol depends on C).
 *
 * What is checked: every execution ends with all threads finished (Spin
 * reports one in which some sleep for ever: "invalid end state"); every item
 * whose push returned true is popped once, and no other item; when an
 * untimed pop returns "closed and drained", every push that has returned
 * true so far was popped already (by anyone: with two consumers, one that
 * leaves early would go unnoticed at the end). In the pipeline, the sink
 * sees a prefix of the source's items in order, all of them if no stage
 * threw.
 *
 * SCENARIO 1: close racing with pushes: producer 0 pushes items 1 and 2,
 * producer 1 pushes item 3 and then closes the queue; two consumers pop until
 * "closed and drained".
 * SCENARIO 2: timed calls: producer 0 push_for()s items 1 and 2, push()es
 * item 3, then closes; consumer 0 pop_for()s once and then pops until
 * "closed and drained", as consumer 1 does.
 * SCENARIO 3: a pipeline source -> stage -> sink (the caller), three items,
 * where the source, the stage's function and the sink may each throw at any
 * item: the failure stops the pipeline as the code does.
 * MUTANT (0 = the C++ code):
 * 1: pop reads closed_ and pushers_ after finding the queue empty, not
 *    before (scenario 1: a push completes in between, then close(); the item
 *    is left behind);
 * 2: pop ignores pushers_ ("closed and empty" is final; scenario 1: a push
 *    that entered before close() completes after the pop gave up);
 * 3: a push that finds the queue closed does not wake the poppers
 *    (scenario 1: a popper that saw the push in flight sleeps for ever);
 * 4: close() does not wake the threads waiting for room (scenario 3: when
 *    the sink throws, the stage sleeps for ever on its full output);
 * 5: a pipeline stage that stops early does not close its input (scenario 3:
 *    the source sleeps for ever on its full output).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define C 1        /* slots of each queue */
#define NCH 2      /* channels (scenario 3: source -> stage, stage -> sink) */
#define NTH 4      /* threads */
#define NITEMS 4   /* items 1..3; 0 = none */
#define NEC (2 * NCH)
#define NOEC NEC
#define NOT_EMPTY(ch) (2 * (ch))
#define NOT_FULL(ch) (2 * (ch) + 1)

#define SUCCEEDED 0
#define FAILED 1
#define NOT_YET 2

/* -------------------------------------------------------- eventcount */
byte epoch[NEC], waiters[NEC];
bool asleep[NTH]; /* in FUTEX_WAIT ... */
byte on[NTH];     /* ... on this eventcount's epoch */

inline prepare_wait(ec, key) { atomic { waiters[ec]++; key = epoch[ec] } }
inline cancel_wait(ec) { atomic { waiters[ec]--; key = 0 } }
inline ec_wait(ec, key) {
  do
  :: atomic { epoch[ec] != key -> waiters[ec]--; key = 0; break }
  :: atomic { epoch[ec] == key -> asleep[me] = true; on[me] = ec }; /* FUTEX_WAIT */
     atomic { !asleep[me] -> on[me] = NOEC }                        /* until woken */
  od
}
/* wait_until(): woken = false when the deadline passed first. */
inline ec_wait_until(ec, key, woken) {
  do
  :: atomic { epoch[ec] != key -> waiters[ec]--; key = 0; woken = true; break }
  :: atomic { epoch[ec] == key -> waiters[ec]--; key = 0; woken = false; break } /* deadline */
  :: atomic { epoch[ec] == key -> asleep[me] = true; on[me] = ec };
     if
     :: atomic { !asleep[me] -> on[me] = NOEC }
     :: atomic { asleep[me] -> asleep[me] = false; on[me] = NOEC } /* the futex timed out */
     fi
  od
}
/* FUTEX_WAKE: one sleeper of eventcount ec (any), or all of them. */
inline futex_wake(ec, all) {
  if
  :: all ->
     for (i : 0 .. NTH - 1) {
       if
       :: on[i] == ec -> asleep[i] = false
       :: else -> skip
       fi
     }
  :: else ->
     if
     :: asleep[0] && on[0] == ec -> asleep[0] = false
     :: asleep[1] && on[1] == ec -> asleep[1] = false
     :: asleep[2] && on[2] == ec -> asleep[2] = false
     :: asleep[3] && on[3] == ec -> asleep[3] = false
     :: else -> skip
     fi
  fi;
  i = 0 /* dead: one state, not several */
}
#if SCENARIO == 3
/* Each eventcount of a pipeline has one waiter at most (a channel has one
 * producer and one consumer): which sleeper the futex wakes is no choice,
 * and one step is exact. */
inline notify(ec, all) {
  atomic {
    if
    :: waiters[ec] > 0 -> epoch[ec]++; futex_wake(ec, all)
    :: else -> skip
    fi
  }
}
#else
inline notify(ec, all) {
  atomic { /* [ec.notify]'s fence, the look at waiters_, the epoch bump */
    wake = waiters[ec] > 0;
    if
    :: wake -> epoch[ec]++
    :: else -> skip
    fi
  };
  if
  :: wake -> atomic { futex_wake(ec, all); wake = false } /* any sleeper(s) now */
  :: else -> skip
  fi
}
#endif

/* ---------------------------------------------------- blocking_queue */
byte buf[NCH * C];
byte head[NCH], tail[NCH];
bool closed[NCH];
byte pushers[NCH];
byte popped[NITEMS];    /* ghost: times each item was popped */
bool pushed_ok[NITEMS]; /* ghost: its push returned true */

/* attempt_push(v) into channel ch: d = SUCCEEDED, FAILED or NOT_YET. */
inline attempt_push(ch, v) {
  pushers[ch]++; /* [bq.enter] */
  if
  :: closed[ch] -> d = FAILED
  :: else ->
     atomic {
       if
       :: tail[ch] - head[ch] < C -> buf[ch * C + tail[ch] % C] = v; tail[ch]++; d = SUCCEEDED
       :: else -> d = NOT_YET
       fi
     }
  fi;
  pushers[ch]--;
  if
  :: d == SUCCEEDED -> notify(NOT_EMPTY(ch), false)
  :: else -> skip
  fi;
#if MUTANT != 3
  if
  :: closed[ch] -> notify(NOT_EMPTY(ch), true)
  :: else -> skip
  fi
#endif
}

inline final_if_empty(ch) { /* [bq.quiet]: closed, then no pusher */
  f = closed[ch];
#if MUTANT != 2
  if
  :: f -> f = pushers[ch] == 0
  :: else -> skip
  fi
#endif
}
inline try_pop(ch) {
  atomic {
    if
    :: head[ch] != tail[ch] -> out = buf[ch * C + head[ch] % C]; head[ch]++; popped[out]++
    :: else -> out = 0
    fi
  }
}
/* pop's attempt from channel ch: out = the item or 0. */
inline attempt_pop(ch) {
#if MUTANT == 1
  try_pop(ch);
  final_if_empty(ch);
#else
  final_if_empty(ch);
  try_pop(ch);
#endif
  if
  :: out != 0 -> f = false; notify(NOT_FULL(ch), false); d = SUCCEEDED
  :: else -> d = (f -> FAILED : NOT_YET); f = false
  fi
}

/* wait_for_room(ec, deadline, attempt): TIMED 0 for push()/pop(), 1 for
 * push_for()/pop_for(). A macro: Spin's inline cannot take an inline. */
#define WAIT_FOR_ROOM(ec, ATTEMPT, TIMED) \
  do \
  :: ATTEMPT; \
     if \
     :: d != NOT_YET -> break \
     :: else -> skip \
     fi; \
     prepare_wait(ec, key); \
     ATTEMPT; \
     if \
     :: d != NOT_YET -> cancel_wait(ec); break \
     :: else -> skip \
     fi; \
     if \
     :: !TIMED -> ec_wait(ec, key) \
     :: TIMED -> \
        ec_wait_until(ec, key, woken); \
        if \
        :: !woken -> /* one last try at the deadline */ \
           ATTEMPT; \
           if \
           :: d == NOT_YET -> d = FAILED \
           :: else -> skip \
           fi; \
           break \
        :: else -> woken = false \
        fi \
     fi \
  od

#define PUSH(ch, v, TIMED) WAIT_FOR_ROOM(NOT_FULL(ch), attempt_push(ch, v), TIMED)
#define POP(ch, TIMED) WAIT_FOR_ROOM(NOT_EMPTY(ch), attempt_pop(ch), TIMED)

inline close(ch) {
  closed[ch] = true; /* [bq.close] */
  notify(NOT_EMPTY(ch), true);
#if MUTANT != 4
  notify(NOT_FULL(ch), true)
#endif
}

/* An untimed pop returned "closed and drained": every push that returned
 * true has been popped. */
inline assert_drained() {
  for (i : 1 .. NITEMS - 1) { assert(!pushed_ok[i] || popped[i] == 1) };
  i = 0
}

#define LOCALS \
  byte key, d, out, i; \
  bool f, woken, wake

#if SCENARIO == 1 || SCENARIO == 2

/* Pushes first..last (push_for() for those up to timed_last), stops at the
 * first that fails; then closes the queue if `closes`. */
proctype producer(byte me; byte first; byte last; byte timed_last; bool closes) {
  LOCALS;
  byte v = first;
  do
  :: v > last -> break
  :: v <= last && v <= timed_last ->
     PUSH(0, v, 1);
     pushed_ok[v] = d == SUCCEEDED;
     v++
  :: v <= last && v > timed_last ->
     PUSH(0, v, 0);
     if
     :: d == SUCCEEDED -> pushed_ok[v] = true; v++
     :: else -> break /* closed: the caller keeps v */
     fi
  od;
  if
  :: closes -> close(0)
  :: else -> skip
  fi
}

/* pop_for() `timed` times, then pop() until "closed and drained". */
proctype consumer(byte me; byte timed) {
  LOCALS;
  do
  :: timed > 0 -> POP(0, 1); timed--
  :: timed == 0 ->
     POP(0, 0);
     if
     :: out == 0 -> assert(closed[0]); assert_drained(); break
     :: else -> skip
     fi
  od
}

init {
  byte i;
  atomic {
    on[0] = NOEC; on[1] = NOEC; on[2] = NOEC; on[3] = NOEC;
#if SCENARIO == 1
    run producer(0, 1, 2, 0, false);
    run producer(1, 3, 3, 0, true);
    run consumer(2, 0)
#else
    run producer(0, 1, 2, 1, true);
    run consumer(1, 1);
    run consumer(2, 0)
#endif
  }
  (_nr_pr == 1);
  for (i : 1 .. NITEMS - 1) { assert(popped[i] == (pushed_ok[i] -> 1 : 0)) }
}

#else /* SCENARIO 3: the pipeline */

bool failed;             /* pipeline_state::failed */
byte ndelivered;         /* ghost: items the sink took */
bool source_done, stage_done;

/* The user's code (the source, the function, the sink) may throw, once in
 * all: a second exception is dropped, as the first stops the pipeline. */
#define MAY_THROW(action) \
  if \
  :: atomic { !failed -> failed = true }; goto action \
  :: skip \
  fi

proctype source(byte me) {
  LOCALS;
  byte v = 1;
  do
  :: failed -> break
  :: !failed ->
     if
     :: v == NITEMS -> break /* the source returns std::nullopt */
     :: else -> skip
     fi;
     MAY_THROW(stop);
     PUSH(0, v, 0);
     if
     :: d == SUCCEEDED -> v++
     :: else -> break
     fi
  od;
stop:
  close(0);
  source_done = true
}

proctype stage(byte me) {
  LOCALS;
  do
  :: POP(0, 0);
     if
     :: out == 0 -> break
     :: else -> skip
     fi;
     if
     :: failed -> break
     :: else -> skip
     fi;
     MAY_THROW(stop);
     PUSH(1, out, 0); /* f(v) = v */
     if
     :: d != SUCCEEDED -> break
     :: else -> skip
     fi
  od;
stop:
#if MUTANT != 5
  close(0); /* the source stops at its next push */
#endif
  close(1);
  stage_done = true
}

/* run_and_wait() on the caller's thread: the sink. */
proctype sink(byte me) {
  LOCALS;
  do
  :: POP(1, 0);
     if
     :: out == 0 -> break
     :: else -> skip
     fi;
     if
     :: failed -> break
     :: else -> skip
     fi;
     MAY_THROW(threw);
     atomic { assert(out == ndelivered + 1); ndelivered++; out = 0 } /* in order */
  od;
  goto join;
threw: /* the sink threw: close every channel */
  close(0);
  close(1);
join:
  close(1);
  source_done && stage_done; /* join */
  assert(failed || ndelivered == NITEMS - 1)
}

init {
  atomic {
    on[0] = NOEC; on[1] = NOEC; on[2] = NOEC; on[3] = NOEC;
    run source(0);
    run stage(1);
    run sink(2)
  }
}

#endif
