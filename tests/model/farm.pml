/* tests/model/farm.pml - how lfcore::farm's threads wait for each other
 * (include/lfcore/farm.hpp, farm_base.hpp), checked by Spin over every
 * interleaving (tests/model/check.sh runs it): no thread of a farm waits for
 * ever, and every task reaches the sink exactly once.
 *
 * Why a model: a farm's threads park often (a futex wait on an eventcount)
 * and are woken rarely, on purpose - a wake-up costs the waker a system call
 * and, on a VM, an interrupt. Which wake-ups may be left out rests on
 * counting arguments that stress tests sample only: a worker wakes the
 * emitter after every K-th pop only (pops_per_room_notify), and the ring's
 * producer, once it found the ring full, pushes again only when R slots are
 * free (spsc_queue's refill hysteresis), yet a producer waiting for room is
 * always woken with room; results reach a collector that polls with timed
 * naps, is woken only when it parked, and a worker reads that it parked with
 * a relaxed load (announce(), results_per_wake).
 *
 * What is modelled, one shared access per step, under sequential consistency
 * (the fence pairings under these wake-ups are model-checked on x86-TSO in
 * eventcount.pml): the emitter sends tasks 0..NTASKS-1 round-robin to the
 * active workers, skipping full rings (and, on demand, rings holding PREFETCH
 * tasks), and closes every ring at the end; each worker pops, wakes the
 * emitter after every K-th pop, pushes the result to its output ring,
 * announces batches, and closes its output ring at the end; the collector
 * drains (in input order in ordered mode), wakes a worker after every KO-th
 * result it took from it, polls, and then parks with collector_parked_ set.
 * Rings are spsc_queue's: a producer that found one full resumes at R free
 * slots. An eventcount with one waiter, as each of the farm's has, is exact
 * as two bits, "announced" and "woken".
 * What is abstracted: the collector's timed naps end at any moment, so a poll
 * is one look (changed()) and the nap after a short drain is nothing, and it
 * polls once before parking, not twice (a poll only looks, as the drain after
 * it does); wait_until_ready()'s spins and its look before announcing are
 * left out (see WAIT_UNTIL_READY); a worker's relaxed read of
 * collector_parked_ and its latency rule are a free choice to announce (only
 * results_per_wake forces it); set_active_workers() is the emitter reading
 * any number of active workers at each send (see try_send).
 * Not modelled: the one-thread farm, pinning, a thread the OS refuses.
 *
 * What is checked: every execution ends with every thread finished - Spin
 * reports one in which threads are all asleep ("invalid end state"), which is
 * what a lost or left-out wake-up is - with each task delivered once, the
 * rings and the feedback channel empty.
 *
 * SCENARIO 1: one worker with a collector of its own (fuse_collector_with_
 * one_worker = false), rings of 4 with the hysteresis (R = 2) and wake-ups
 * every K = 2 pops: the code's K = C / 2 > R (C >= 256, R = 32), scaled down
 * to R = K. (R = 3 or 4 passes too: the condition is not tight.)
 * SCENARIO 2: two workers in ordered mode.
 * SCENARIO 3: master-worker mode (run_with_feedback), one worker and a
 * collector: each of the source's tasks, back at the emitter, submits one
 * more; the emitter ends when the source is done and nothing is in flight.
 * SCENARIO 4: on-demand scheduling with prefetch 1 (rings of two slots, each
 * holding at most one task, woken on every pop).
 * SCENARIO 5: two workers frozen and thawed at any moment (no collector: the
 * workers drop their results).
 * SCENARIO 6: one worker with a collector, its output ring shorter than
 * results_per_wake (farm_options::capacity under 32 in the code).
 * SCENARIO 7: exceptions: the source, the worker's function or the sink
 * throws, at any task, and farm_base::fail() stops the farm - stop_, then a
 * notify_all() on every eventcount - while threads may be asleep for room,
 * for a task or for results. Checked too: every thread ends; no task
 * delivered twice (what was in flight may be lost: the farm rethrows).
 * MUTANT (0 = the C++ code):
 * 1: a worker wakes the emitter after every C-th pop (once a ring), not K-th:
 *    a producer that failed with fewer than R slots free can see the rest
 *    popped without a wake-up (scenarios 1, 4);
 * 2: the collector wakes a worker after every CO-th result, not KO-th;
 * 3: a worker waits for its next task without announcing its results first
 *    (scenario 3: the emitter waits for results the parked collector was
 *    never told of);
 * 4: the emitter closes the rings without waking the workers;
 * 5: a worker closes its output without waking the collector;
 * 6: a worker waits for room in its output ring without waking the
 *    collector first (scenario 6: its results fill the ring before the batch
 *    rule announces them; where the ring holds results_per_wake, as in
 *    scenario 1, that wake-up is not needed);
 * 7: fail() wakes nobody (scenario 7: the emitter sleeps for room in the
 *    ring of a worker whose task threw);
 * 8: wait_until_ready() looks at stop_ before announcing itself but not
 *    after (scenario 7: a stop between the two is missed);
 * 9: fail() wakes the emitter and the collector, not the workers (scenario
 *    7: the emitter has ended, the sink throws, and the worker sleeps on,
 *    waiting for room in its output ring).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

/* Task rings: C slots, resume at R free, a worker wakes the emitter every K
 * pops. Output rings: CO, RO, KO (the collector wakes the worker). */
#if SCENARIO == 1
#define W 1
#define NTASKS 8
#define C 4
#define R 2
#define K 2
#define CO 4
#define RO 2
#define KO 2
#elif SCENARIO == 2
#define W 2
#define NTASKS 3
#define C 2
#define R 1
#define K 1
#define CO 2
#define RO 1
#define KO 1
#define ORDERED
#elif SCENARIO == 3
#define W 1
#define NTASKS 6 /* 3 from the source, 3 submitted */
#define C 2
#define R 1
#define K 1
#define CO 2
#define RO 1
#define KO 1
#define FEEDBACK
#elif SCENARIO == 4
#define W 1
#define NTASKS 5
#define C 2
#define R 1
#define K 1
#define CO 4
#define RO 1
#define KO 2
#define ON_DEMAND
#define PREFETCH 1
#elif SCENARIO == 5
#define W 2
#define NTASKS 5
#define C 2
#define R 1
#define K 1
#define CO 2
#define RO 1
#define KO 1
#define NO_COLLECTOR
#define THROTTLE
#elif SCENARIO == 6
#define W 1
#define NTASKS 4
#define C 2
#define R 1
#define K 1
#define CO 2
#define RO 1
#define KO 1
#define RESULTS_PER_WAKE 4 /* more than the output ring holds */
#elif SCENARIO == 7
#define W 1
#define NTASKS 5
#define C 2
#define R 1
#define K 1
#define CO 2
#define RO 1
#define KO 1
#define STOP
#endif

#if MUTANT == 1
#define TASK_ROOM_EVERY C
#else
#define TASK_ROOM_EVERY K
#endif
#if MUTANT == 2
#define RESULT_ROOM_EVERY CO
#else
#define RESULT_ROOM_EVERY KO
#endif
#ifdef FEEDBACK
#define SOURCE_TASKS (NTASKS / 2)
#else
#define SOURCE_TASKS NTASKS
#endif
#ifndef RESULTS_PER_WAKE
#define RESULTS_PER_WAKE 2
#endif
#define POLL_LIMIT 1 /* the code's poll_limit is 2: see the header */

/* Rings 0..W-1 carry tasks (emitter -> worker i), W..2W-1 results (worker
 * i -> collector). Positions count pushes and pops; slot = position % size. */
#define NR (2 * W)
#define MAXC 4 /* the longest ring */
byte buf[NR * MAXC];
byte head[NR];   /* pushes (the producer's position) */
byte tail[NR];   /* pops (the consumer's position) */
byte cached[NR]; /* the producer's copy of tail */
bool closed[NR]; /* input_closed / output_closed [farm.close] */

#define SIZE(r) ((r) < W -> C : CO)
#define REFILL(r) ((r) < W -> R : RO)

/* spsc_queue::try_push(v): refreshes the copy of tail only when the copy says
 * full, and then resumes only if at least REFILL slots are free. */
inline push(r, v, ok) {
  atomic {
    if
    :: head[r] - cached[r] == SIZE(r) ->
       if
       :: SIZE(r) - (head[r] - tail[r]) < REFILL(r) -> ok = false
       :: else -> cached[r] = tail[r]; ok = true
       fi
    :: else -> ok = true
    fi;
    if
    :: ok -> buf[(r) * MAXC + head[r] % SIZE(r)] = v; head[r]++
    :: else -> skip
    fi
  }
}

inline pop(r, v, got) {
  atomic {
    if
    :: tail[r] != head[r] -> v = buf[(r) * MAXC + tail[r] % SIZE(r)]; tail[r]++; got = true
    :: else -> got = false
    fi
  }
}

/* Eventcounts: the emitter's, the collector's, worker i's (one waiter each). */
#define EMITTER 0
#define COLLECTOR 1
#define WORKER 2
#define NEC (2 + W)
bool announced[NEC]; /* between prepare_wait() and the end of the wait */
bool woken[NEC];     /* a notify came after prepare_wait() */

inline prepare_wait(e) { atomic { announced[e] = true; woken[e] = false } }
inline cancel_wait(e) { atomic { announced[e] = false; woken[e] = false } }
inline ec_wait(e) { atomic { woken[e] -> announced[e] = false; woken[e] = false } }
/* notify_one, notify_all and wake(): alike with one waiter */
inline notify(e) {
  atomic {
    if
    :: announced[e] -> woken[e] = true
    :: else -> skip
    fi
  }
}

/* farm_base::wait_until_ready(): announce, look, sleep, until a look
 * succeeds. (Its first look, before announcing, is left out: a look that
 * fails changes nothing, and one that succeeds does what the same look after
 * the announcement does.) A macro: Spin's inline cannot take the look
 * (`ready`, an inline) as a parameter. */
#define WAIT_UNTIL_READY(e, ready, ok) \
  do \
  :: LOOK_BEFORE_ANNOUNCING(ok) \
     prepare_wait(e); \
     ready(ok); \
     if \
     :: ok || STOPPED -> cancel_wait(e); break \
     :: else -> ec_wait(e) \
     fi \
  od
/* After announcing, the look at stop_ too (it returns false then); mutant 8
 * looks at stop_ only before announcing. */
#if MUTANT == 8
#define LOOK_BEFORE_ANNOUNCING(ok) \
  if \
  :: stop -> ok = false; break \
  :: else -> skip \
  fi;
#define STOPPED false
#else
#define LOOK_BEFORE_ANNOUNCING(ok)
#define STOPPED stop
#endif

/* farm_base::fail() (scenario 7): the first exception stops every thread -
 * stop_, then wake_all(): notify_all() on every eventcount. Mutant 7 wakes
 * nobody; mutant 9 only the emitter and the collector. */
bool stop;
#ifdef STOP
#define MAY_THROW(action) \
  if \
  :: !stop -> fail(); goto action \
  :: skip \
  fi
#endif
inline fail() {
  stop = true;
#if MUTANT != 7
  notify(EMITTER);
  notify(COLLECTOR);
#if MUTANT != 9
  for (i : 0 .. W - 1) { notify(WORKER + i) }
#endif
#endif
}

bool collector_parked;       /* farm::collector_parked_ */
#ifdef NO_COLLECTOR
bool delivered[NTASKS];      /* ghost: tasks the workers ran */
byte ndelivered;
#endif
#ifdef FEEDBACK
byte fb_buf[NTASKS];         /* collector -> emitter, unbounded (long enough) */
byte fb_head, fb_tail;
#endif

/* ------------------------------------------------------------- emitter */

/* farm::try_send(): the next active worker with room, from `next`. With
 * THROTTLE, the number of active workers it reads is any of 1..W, each time:
 * whatever a manager's set_active_workers() calls store, whenever. (Its
 * notify_all() is left out: a wake-up more can only help the emitter.) */
inline try_send(ok) {
#ifdef THROTTLE
  if
  :: nw = 1
  :: nw = W
  fi;
#else
  nw = W;
#endif
  d_step {
    if
    :: next >= nw -> next = 0
    :: else -> skip
    fi;
    k = 0;
    ok = false
  };
  do
  :: k == nw -> break
  :: else ->
     atomic {
       i = (next + k) % nw;
#ifdef ON_DEMAND
       if
       :: head[i] - tail[i] >= PREFETCH -> ok = false /* size_approx() */
       :: else -> push(i, seq, ok)
       fi;
#else
       push(i, seq, ok);
#endif
       if
       :: ok -> next = i + 1
       :: else -> k++
       fi
     };
     if
     :: ok -> notify(WORKER + i); break /* wake(c.wake) */
     :: else -> skip
     fi
  od
}

#ifdef FEEDBACK
/* on_result: each of the source's tasks (seq < NTASKS / 2) submits one. */
inline take_feedback(ok) {
  atomic {
    if
    :: fb_tail != fb_head -> v = fb_buf[fb_tail]; fb_tail++; ok = true
    :: else -> ok = false
    fi
  };
  if
  :: ok ->
     in_flight--;
     if
     :: v < NTASKS / 2 -> submitted++
     :: else -> skip
     fi
  :: else -> skip
  fi
}
#endif

proctype emitter() {
  byte seq = 0, next = 0, nw, k, i, in_flight = 0, submitted = 0, produced = 0, v;
  bool ok, have;
  do
  :: stop -> break /* while (!stopped()) */
  :: !stop ->
#ifdef STOP
     MAY_THROW(closing); /* the source threw */
#endif
#ifdef FEEDBACK
     do
     :: take_feedback(ok);
        if
        :: !ok -> break
        :: else -> skip
        fi
     od;
     skip; /* a break cannot jump into a d_step */
#endif
     d_step {
       if
       :: submitted > 0 -> submitted--; have = true
       :: submitted == 0 && produced < SOURCE_TASKS -> produced++; have = true
       :: else -> have = false
       fi
     };
     if
     :: !have && in_flight == 0 -> break /* end of stream */
#ifdef FEEDBACK
     :: !have && in_flight > 0 -> WAIT_UNTIL_READY(EMITTER, take_feedback, ok)
#endif
     :: else ->
        try_send(ok); /* send() */
        if
        :: !ok -> WAIT_UNTIL_READY(EMITTER, try_send, ok)
        :: else -> skip
        fi;
        if
        :: !ok -> break /* stopped */
        :: else -> skip
        fi;
#ifdef FEEDBACK
        in_flight++;
#endif
        seq++
     fi
  od;
closing:
  for (i : 0 .. W - 1) { closed[i] = true } /* [farm.close] */
#if MUTANT != 4
  for (i : 0 .. W - 1) { notify(WORKER + i) }
#endif
}

/* ------------------------------------------------------------- workers */

/* wait_for_task()'s look: a task, or the end of the stream. */
inline task_ready(ok) {
  pop(me, t, ok);
  if
  :: !ok && closed[me] ->
     pop(me, t, ok); /* a push before the close */
     end = !ok;
     ok = true
  :: else -> skip
  fi
}

inline push_result(ok) { push(W + me, t, ok) }

/* farm::announce(): [farm.announce], then a look at collector_parked_. */
inline announce() {
  if
  :: pending > 0 ->
     pending = 0;
     if
     :: collector_parked -> notify(COLLECTOR)
     :: else -> skip
     fi
  :: else -> skip
  fi
}

proctype worker(byte me) {
  byte t, pending = 0, popped = 0, i;
  bool ok, end = false;
  do
  :: true ->
     pop(me, t, ok);
     if
     :: !ok ->
#if MUTANT != 3
        announce(); /* before waiting (see result_batch) */
#endif
        WAIT_UNTIL_READY(WORKER + me, task_ready, ok);
        if
        :: end || !ok -> break /* end of stream, or stopped */
        :: else -> skip
        fi
     :: else -> skip
     fi;
     popped++;
     if
     :: popped % TASK_ROOM_EVERY == 0 -> notify(EMITTER) /* it may wait for room */
     :: else -> skip
     fi;
     if
     :: stop -> break
     :: else -> skip
     fi;
#ifdef STOP
     MAY_THROW(closing); /* the task threw */
#endif
#ifdef NO_COLLECTOR
     atomic { assert(!delivered[t]); delivered[t] = true; ndelivered++ }
#else
     /* deliver() */
     push_result(ok);
     if
     :: !ok ->
        pending = 0;
#if MUTANT != 6
        notify(COLLECTOR);
#endif
        WAIT_UNTIL_READY(WORKER + me, push_result, ok);
        if
        :: !ok -> break /* stopped */
        :: else -> skip
        fi
     :: else -> skip
     fi;
     pending++;
     if
     :: pending >= RESULTS_PER_WAKE -> announce()
     :: else ->
        if
        :: announce() /* collector_parked_ seen, or the latency rule */
        :: skip
        fi
     fi
#endif
  od;
closing:
#ifndef NO_COLLECTOR
  closed[W + me] = true; /* [farm.close] */
#if MUTANT != 5
  notify(COLLECTOR)
#endif
#else
  skip
#endif
}

#ifndef NO_COLLECTOR
/* ----------------------------------------------------------- collector */

/* refill(i): takes worker i's next result if none is held; sets `got` if
 * anything changed (a result arrived or the worker finished). */
inline refill(i, got) {
  got = false;
  if
  :: !holding[i] && !finished[i] ->
     pop(W + i, held[i], holding[i]);
     if
     :: holding[i] -> got = true
     :: !holding[i] && closed[W + i] ->
        pop(W + i, held[i], holding[i]); /* a push before the close */
        if
        :: !holding[i] -> finished[i] = true; open--
        :: else -> skip
        fi;
        got = true
     :: else -> skip
     fi
  :: else -> skip
  fi
}

inline changed(any) {
  any = false;
  for (j : 0 .. W - 1) {
    refill(j, got);
    any = any || got
  }
}

inline sink(v) {
#ifdef STOP
  MAY_THROW(stopping); /* the sink threw */
#endif
  atomic {
    assert(!delivered[v]);
#ifdef ORDERED
    assert(v == ndelivered); /* in input order */
#endif
    delivered[v] = true;
    ndelivered++
  };
#ifdef FEEDBACK
  atomic { fb_buf[fb_head] = v; fb_head++ };
  notify(EMITTER) /* wake(emitter_wake_): it may wait for results */
#else
  skip
#endif
}

inline hand_over(i) {
  v = held[i];
  holding[i] = false;
  taken[i]++;
  if
  :: taken[i] % RESULT_ROOM_EVERY == 0 -> notify(WORKER + i) /* it may wait for room */
  :: else -> skip
  fi;
  sink(v)
}

inline drain(delivered_now) {
  delivered_now = 0;
#ifndef ORDERED
  for (j : 0 .. W - 1) {
    do
    :: true ->
       refill(j, got);
       if
       :: holding[j] -> hand_over(j); delivered_now++
       :: else -> break
       fi
    od
  }
#else
  do
  :: true ->
     found = W;
     k = 0;
     do
     :: k < W && found == W ->
        i = (hint + k) % W;
        refill(i, got);
        if
        :: holding[i] && held[i] == next_seq -> found = i
        :: else -> skip
        fi;
        k++
     :: else -> break
     od;
     if
     :: found == W -> break
     :: else -> skip
     fi;
     hand_over(found);
     next_seq++;
     hint = found + 1;
     delivered_now++
  od
#endif
}

proctype collector() {
  byte held[W];     /* head[i]: worker i's oldest result taken, not delivered */
  bool holding[W];
  bool finished[W];
  byte open = W;
  byte taken[W], v, delivered_now, polls = 0, j, i, k, found, hint = 0, next_seq = 0;
  bool got, any;
  bool delivered[NTASKS]; /* ghost: tasks that reached the sink */
  byte ndelivered;        /* ghost */
  do
  :: open == 0 || stop -> break /* while (open > 0 && !stopped()) */
  :: else ->
     drain(delivered_now);
     if
     :: delivered_now > 0 -> polls = 0 /* then a timed nap: nothing */
     :: delivered_now == 0 && open > 0 && polls < POLL_LIMIT ->
        polls++;
        changed(any) /* poll_for_results(): looks, and a timed nap */
     :: delivered_now == 0 && open > 0 && polls >= POLL_LIMIT ->
        collector_parked = true; /* read after [farm.park] */
        WAIT_UNTIL_READY(COLLECTOR, changed, any);
        collector_parked = false
     :: else -> skip
     fi
  od;
stopping:
  assert(stop || ndelivered == NTASKS)
}
#endif

init {
  byte i;
  atomic {
    run emitter();
    for (i : 0 .. W - 1) { run worker(i) }
#ifndef NO_COLLECTOR
    run collector()
#endif
  }
  (_nr_pr == 1);
#ifdef NO_COLLECTOR
  assert(ndelivered == NTASKS);
#endif
  for (i : 0 .. NR - 1) { assert(stop || head[i] == tail[i]) } /* a stop leaves what it leaves */
#ifdef FEEDBACK
  assert(fb_head == fb_tail)
#endif
}
