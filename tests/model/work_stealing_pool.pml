/* tests/model/work_stealing_pool.pml - how work_stealing_pool's workers
 * and task_group::wait() sleep and wake (include/lfcore/
 * work_stealing_pool.hpp, lib/work_stealing_pool.cpp), checked by Spin over
 * every interleaving (tests/model/check.sh runs it): nobody sleeps while
 * there is work for them or their group is done, and every task runs once,
 * the ones queued when the destructor starts included.
 *
 * Why a model: one eventcount holds both parked workers and parked group
 * waiters, and which wake-ups are paid for differs by who queues work - a
 * worker's spawn wakes a sleeper only if a relaxed look sees one (the
 * spawner runs the task itself otherwise), a spawn from outside always
 * wakes one, the end of a group wakes everyone (notify_all) after a look -
 * and the destructor's last search must still find what was queued before
 * it. Stress tests sample these races; Spin enumerates them.
 *
 * What is modelled, under sequential consistency (the fence pairings,
 * [group.light]/[group.heavy] and eventcount's own, are what eventcount.pml
 * checks on x86-TSO): W = 2 workers and the main thread (outside the pool).
 * Each worker's chase_lev_deque is an array the owner pushes and pops at the
 * bottom and others steal from the top, one step each (its races are
 * chase_lev_deque.pml's); the injection queue is a FIFO with the injected_
 * count beside it, updated in a step of its own. The eventcount is exact for
 * any number of waiters: prepare_wait() counts the waiter and reads the
 * epoch, wait() sleeps in a futex only while the epoch holds its key, and
 * notify_one() bumps the epoch and wakes one sleeper (any), notify_all()
 * every one. A worker's spawn looks at the waiters with a relaxed load,
 * which may be stale: it notifies or not, freely. What is left out: the
 * spins and the backoff before parking (a look more), lost steal races (a
 * retry), exceptions, pinning.
 *
 * What is checked: every execution ends with all threads finished (Spin
 * reports one in which some sleep for ever: "invalid end state"), each task
 * run exactly once, each group waited for only after all its tasks finished.
 *
 * SCENARIO 1: the main thread runs two tasks in a task_group (through the
 * injection queue) and waits for it, helping; then the destructor.
 * SCENARIO 2: nested: the main thread's group has one task that runs a group
 * of one task of its own (spawned on its worker's deque, or injected if
 * the main thread took it) and waits for it, as parallel_reduce does.
 * SCENARIO 3: submit(): the main thread waits on a task's future (not
 * helping), then submits another and destroys the pool at once.
 * MUTANT (0 = the C++ code):
 * 1: a spawn from outside the pool wakes a sleeper only if a relaxed look
 *    sees one, as a worker's spawn does (scenario 3: nobody runs the task);
 * 2: the end of a group wakes one sleeper, not all (scenario 2: a parked
 *    worker takes the wake-up, the parked waiter sleeps on);
 * 3: a worker that finds the pool stopping exits without a last search
 *    (scenario 3: the task submitted just before the destructor is lost);
 * 4: work_visible() looks at the deques only, not at injected_ (scenario 3);
 * 5: task_group::wait() parks without looking at pending_ again after
 *    announcing itself (scenario 1).
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define W 2           /* workers 0, 1; the main thread is thread W */
#define MAIN W
#define NTH (W + 1)
#define NTASKS 3      /* tasks 1, 2; 0 = none */
#define DQ 2          /* deque slots */
#define NG 2          /* groups: 0 the main thread's, 1 the nested one */
#define NOGROUP 2

/* The tasks of each scenario: a kind and a group. */
#define LEAF 0
#define PARENT 1
byte kind[NTASKS];
byte group_of[NTASKS];

/* ------------------------------------------------------------ queues */
byte dq[W * DQ];
byte dq_top[W], dq_bot[W]; /* steal at top, push and pop at bottom */
byte inj[NTASKS];          /* the injection queue (long enough) */
byte inj_head, inj_tail;
byte injected;             /* work_stealing_pool::injected_ */
bool stopping;             /* [pool.stop] */

inline push_own(w, t) {
  atomic { assert(dq_bot[w] - dq_top[w] < DQ); dq[w * DQ + dq_bot[w] % DQ] = t; dq_bot[w]++ }
}
inline pop_own(w, t) {
  atomic {
    if
    :: dq_bot[w] != dq_top[w] -> dq_bot[w]--; t = dq[w * DQ + dq_bot[w] % DQ]
    :: else -> t = 0
    fi
  }
}
inline steal(w, t) {
  atomic {
    if
    :: dq_bot[w] != dq_top[w] -> t = dq[w * DQ + dq_top[w] % DQ]; dq_top[w]++
    :: else -> t = 0
    fi
  }
}

/* -------------------------------------------------------- eventcount */
byte epoch, waiters;
bool asleep[NTH]; /* in FUTEX_WAIT */

inline prepare_wait(key) { atomic { waiters++; key = epoch } }
inline cancel_wait() { waiters-- }
inline ec_wait(key) {
  do
  :: atomic { epoch != key -> waiters--; break }
  :: atomic { epoch == key -> asleep[me] = true }; /* FUTEX_WAIT: atomically */
     !asleep[me]                                   /* until a FUTEX_WAKE */
  od
}
inline notify(all) {
  atomic {
    if
    :: waiters > 0 ->
       epoch++;
       if
       :: all -> for (i : 0 .. NTH - 1) { asleep[i] = false }
       :: else -> /* FUTEX_WAKE of one sleeper, any (NTH = 3 threads) */
          if
          :: asleep[0] -> asleep[0] = false
          :: asleep[1] -> asleep[1] = false
          :: asleep[2] -> asleep[2] = false
          :: else -> skip
          fi
       fi
    :: else -> skip
    fi;
    i = 0 /* the loop's counter is dead: one state, not several */
  }
}

/* ------------------------------------------------------------- pool */

/* spawn(t) by thread `me` */
inline spawn(t) {
  if
  :: me < W ->
     push_own(me, t);
     if /* idle_.may_have_waiters(): relaxed, maybe stale */
     :: notify(false)
     :: skip
     fi
  :: else ->
     atomic { inj[inj_tail] = t; inj_tail++ };
     injected++;
#if MUTANT == 1
     if
     :: notify(false)
     :: skip
     fi
#else
     notify(false) /* nobody in the pool may know about t: always wake one */
#endif
  fi
}

/* find_task(): own deque, injection queue, the other workers' deques. */
inline find_task(t) {
  t = 0;
  if
  :: me < W -> pop_own(me, t)
  :: else -> skip
  fi;
  if
  :: t == 0 && injected > 0 ->
     atomic {
       if
       :: inj_head != inj_tail -> t = inj[inj_head]; inj_head++
       :: else -> skip
       fi
     };
     if
     :: t != 0 -> injected--
     :: else -> skip
     fi
  :: else -> skip
  fi;
  if
  :: t == 0 && me != 0 -> steal(0, t)
  :: else -> skip
  fi;
  if
  :: t == 0 && me != 1 -> steal(1, t)
  :: else -> skip
  fi
}

inline work_visible(ok) {
#if MUTANT == 4
  ok = false;
#else
  ok = injected > 0;
#endif
  if
  :: !ok -> ok = dq_bot[0] != dq_top[0]
  :: else -> skip
  fi;
  if
  :: !ok -> ok = dq_bot[1] != dq_top[1]
  :: else -> skip
  fi
}

/* ------------------------------------------------------------ groups */
byte pending[NG];
byte finished[NG];     /* ghost: tasks of the group that finished */
byte ran[NTASKS];      /* ghost: times each task ran */
bool future_ready[NTASKS];
byte expected[NG];     /* tasks of each group */

/* task_group::finish(): the last task of a group wakes every sleeper. */
inline finish(g) {
  if
  :: g == NOGROUP -> skip
  :: else ->
     atomic { finished[g]++; pending[g]--; last = pending[g] == 0 }; /* [group.done] */
     if
     :: last -> /* [group.light], then a look at the waiters */
#if MUTANT == 2
        notify(false)
#else
        notify(true)
#endif
     :: else -> skip
     fi
  fi
}

inline run_leaf(t) {
  atomic { ran[t]++; future_ready[t] = true };
  finish(group_of[t])
}

/* task_group::wait() for group g: runs tasks (`run`: a PARENT may run only
 * at the outer level), parks when there is none. A macro: Spin's inline
 * cannot take `run` (an inline) as a parameter. */
#define GROUP_WAIT(g, t, key, run) \
  do \
  :: pending[g] == 0 -> break \
  :: else -> \
     find_task(t); \
     if \
     :: t != 0 -> run(t) \
     :: else -> \
        prepare_wait(key); /* [group.heavy], then the looks */ \
        LOOK_AGAIN(g); \
        if \
        :: ok -> cancel_wait() \
        :: else -> ec_wait(key) \
        fi \
     fi \
  od; \
  assert(finished[g] == expected[g])

#if MUTANT == 5
#define LOOK_AGAIN(g) work_visible(ok)
#else
#define LOOK_AGAIN(g) \
  ok = pending[g] == 0; \
  if \
  :: !ok -> work_visible(ok) \
  :: else -> skip \
  fi
#endif

inline run_nested_leaf(t) {
  assert(kind[t] == LEAF);
  run_leaf(t)
}

/* The PARENT task: runs group 1, of task 2, and waits for it. */
inline run_task(t) {
  if
  :: kind[t] == PARENT ->
     atomic { ran[t]++ };
     pending[1]++;
     spawn(2);
     GROUP_WAIT(1, t2, key2, run_nested_leaf);
     finish(group_of[t])
  :: else -> run_leaf(t)
  fi
}

proctype worker(byte me) {
  byte t, t2, key, key2, i;
  bool ok, last;
  do
  :: find_task(t);
     if
     :: t == 0 ->
        prepare_wait(key);
        work_visible(ok);
        if
        :: ok -> cancel_wait()
        :: !ok && stopping ->
           cancel_wait();
#if MUTANT == 3
           break
#else
           find_task(t); /* a task taken here is ours to run */
           if
           :: t == 0 ->
              work_visible(ok);
              if
              :: !ok -> break
              :: else -> skip
              fi
           :: else -> skip
           fi
#endif
        :: !ok && !stopping -> ec_wait(key)
        fi
     :: else -> skip
     fi;
     if
     :: t != 0 -> run_task(t)
     :: else -> skip
     fi
  od
}

proctype main_thread() {
  byte me = MAIN, t, t2, key, key2, i;
  bool ok, last;
#if SCENARIO == 1
  pending[0]++;
  spawn(1);
  pending[0]++;
  spawn(2);
  GROUP_WAIT(0, t, key, run_task);
#elif SCENARIO == 2
  pending[0]++;
  spawn(1);
  GROUP_WAIT(0, t, key, run_task);
#else
  spawn(1);
  future_ready[1]; /* future.get(): blocks, does not help */
  spawn(2);
#endif
  stopping = true; /* ~work_stealing_pool(): [pool.stop] */
  notify(true)
}

init {
  byte t;
  atomic {
#if SCENARIO == 1
    group_of[1] = 0; group_of[2] = 0;
    expected[0] = 2;
#elif SCENARIO == 2
    kind[1] = PARENT;
    group_of[1] = 0; group_of[2] = 1;
    expected[0] = 1; expected[1] = 1;
#else
    group_of[1] = NOGROUP; group_of[2] = NOGROUP;
#endif
    run worker(0);
    run worker(1);
    run main_thread()
  }
  (_nr_pr == 1);
  assert(ran[1] == 1 && ran[2] == 1) /* every task ran, once */
}
