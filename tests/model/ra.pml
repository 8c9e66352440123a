/* tests/model/ra.pml - C++'s release/acquire and relaxed atomics, for the
 * models that check a hand-over by memory order alone (spsc_queue.pml): the
 * orders x86 gives every access for free and Arm or POWER only where the code
 * asks (an STLR, an LDAR, a barrier). After the view-based operational
 * semantics of release/acquire (Kang, Hur, Lahav, Vafeiadis and Dreyer, "A
 * Promising Semantics for Relaxed-Memory Concurrency", POPL 2017, without its
 * promises). The including model defines NTH (threads), NLOC (locations) and
 * MAXMSG (stores per location, the initial one included) first, and names
 * the running thread `me`.
 *
 * Memory is each location's history of messages, in modification order, a
 * timestamp each (0 the initial value). Each thread has a view: per location,
 * the newest timestamp it has seen or written. A load may read any message
 * at or after its view of the location (a stale value, as a weak machine
 * shows one) and raises that view to it; an acquire load also takes in the
 * view the message carries. A store appends a message after every other one
 * (exact when its thread has seen the last one, as with a location only it
 * writes; asserted); a release store gives it the thread's whole view, a
 * relaxed one only itself. So a thread that acquires a release store sees
 * everything its writer had seen.
 * A seq_cst fence joins the thread's view with one global view that all
 * such fences share, both ways (the paper's SC fence): of two fences, the
 * later sees all the earlier one's thread had seen. A read-modify-write
 * reads the location's last message (its atomicity; a compare_exchange that
 * fails wrote nothing and is only a load, which may be stale); acquire, it
 * takes in that message's view; release, it gives its own message the
 * thread's whole view. Whatever its order, its message also carries the
 * view of the message it read: C++20 keeps release sequences of
 * read-modify-writes (an acquire load that reads a relaxed fetch_or
 * synchronizes with the release store the fetch_or read), and only of
 * those (P0982R1 dropped the writer's own later stores). (A seq_cst
 * read-modify-write is modelled as acq_rel: weaker, so a model that passes
 * with it passes with the stronger one.)
 * Left out: load buffering (a load reading a store its thread's later
 * stores lead to: architecturally allowed on Arm, never seen on x86) - a
 * load reads only messages that exist; seq_cst loads and stores.
 * Non-atomic data is a location accessed relaxed: reading a stale message of
 * it is what a data race would read.
 */

byte nmsg[NLOC];                    /* messages so far: timestamps 0 .. nmsg - 1 */
byte mval[NLOC * MAXMSG];           /* each message's value */
byte mview[NLOC * MAXMSG * NLOC];   /* each message's view */
byte tview[NTH * NLOC];             /* each thread's view */
byte scview[NLOC];                  /* the seq_cst fences' view */
byte ra_i, ra_ts, ra_t;             /* scratch, 0 between steps */
#define RA_MSG(l, ts) ((l) * MAXMSG + (ts))
#define RA_MVIEW(l, ts, l2) mview[RA_MSG(l, ts) * NLOC + (l2)]
#define RA_TVIEW(l) tview[me * NLOC + (l)]

/* Before the threads start: location l holds v. */
inline ra_init(l, v) { nmsg[l] = 1; mval[RA_MSG(l, 0)] = v }

inline ra_store(l, v, release) {
  atomic {
    assert(nmsg[l] < MAXMSG); /* else raise MAXMSG */
    /* Appending is exact only for a writer that has seen the location's
     * last message (else its store could also go before that one): */
    assert(RA_TVIEW(l) == nmsg[l] - 1);
    mval[RA_MSG(l, nmsg[l])] = v;
    RA_TVIEW(l) = nmsg[l];
    if
    :: release ->
       for (ra_i : 0 .. NLOC - 1) { RA_MVIEW(l, nmsg[l], ra_i) = RA_TVIEW(ra_i) }
    :: else -> RA_MVIEW(l, nmsg[l], l) = nmsg[l]
    fi;
    nmsg[l]++;
    ra_i = 0 /* dead: one state, not several */
  }
}

/* Acquire: the thread's view takes in message ts of l's. */
inline ra_join(l, ts) {
  for (ra_i : 0 .. NLOC - 1) {
    if
    :: RA_MVIEW(l, ts, ra_i) > RA_TVIEW(ra_i) -> RA_TVIEW(ra_i) = RA_MVIEW(l, ts, ra_i)
    :: else -> skip
    fi
  };
  ra_i = 0
}

inline ra_load(l, v, acquire) {
  atomic {
    ra_ts = RA_TVIEW(l);
    do /* any message from our view on */
    :: ra_ts + 1 < nmsg[l] -> ra_ts++
    :: break
    od;
    v = mval[RA_MSG(l, ra_ts)];
    RA_TVIEW(l) = ra_ts;
    if
    :: acquire -> ra_join(l, ra_ts)
    :: else -> skip
    fi;
    ra_ts = 0
  }
}

/* hazard_pointer::protect(src)'s loads (its fence is hazard_pointer.pml's):
 * v = a relaxed load of l, then loads (acquire unless a mutant says not)
 * until one reads v again. `again` is the caller's scratch, left 0. */
inline ra_protect(l, v, again, acquire) {
  ra_load(l, v, false);
  do
  :: ra_load(l, again, acquire);
     if
     :: again == v -> break
     :: else -> v = again
     fi
  od;
  again = 0
}

/* A seq_cst fence by thread th. */
inline ra_fence_sc_by(th) {
  atomic {
    for (ra_i : 0 .. NLOC - 1) {
      if
      :: scview[ra_i] > tview[(th) * NLOC + ra_i] -> tview[(th) * NLOC + ra_i] = scview[ra_i]
      :: else -> scview[ra_i] = tview[(th) * NLOC + ra_i]
      fi
    };
    ra_i = 0
  }
}
inline ra_fence_sc() { ra_fence_sc_by(me) }

/* membarrier(2) (MEMBARRIER_CMD_PRIVATE_EXPEDITED): the caller's fence, then
 * a full barrier in every other thread of the process wherever it is in its
 * program - the interrupt's barrier on a CPU running it, the context
 * switches' on one that is not. */
inline ra_membarrier() {
  atomic {
    ra_fence_sc();
    for (ra_t : 0 .. NTH - 1) { ra_fence_sc_by(ra_t) };
    ra_t = 0
  }
}

/* Memory orders of a read-modify-write (RA_ACQ_FAIL with another: a failed
 * compare_exchange acquires too). */
#define RA_RLX 0
#define RA_ACQ 1
#define RA_REL 2
#define RA_ACQ_REL 3
#define RA_ACQ_FAIL 4

/* A read-modify-write's store of v after l's last message, which it read:
 * the new message carries that one's view too (the release sequence). */
inline ra_rmw_store(l, v, order) {
  ra_ts = nmsg[l] - 1;
  ra_store(l, v, order & RA_REL);
  for (ra_i : 0 .. NLOC - 1) {
    if
    :: RA_MVIEW(l, ra_ts, ra_i) > RA_MVIEW(l, ra_ts + 1, ra_i) ->
       RA_MVIEW(l, ra_ts + 1, ra_i) = RA_MVIEW(l, ra_ts, ra_i)
    :: else -> skip
    fi
  };
  ra_i = 0;
  ra_ts = 0
}

/* compare_exchange(expected, desired) with the given order on success;
 * on failure relaxed (or acquire: RA_ACQ_FAIL), handing back the value read
 * in `expected`. Only a CAS that succeeds is a read-modify-write and reads
 * l's last message; one that fails is an atomic load
 * ([atomics.types.operations]), so it may read any message from the
 * thread's view on whose value is not `expected` - a stale one, as a
 * failing LDAXR/CAS on Arm can while the newer store is still on its way. */
inline ra_cas(l, expected, desired, ok, order) {
  atomic {
    ra_ts = RA_TVIEW(l);
    do /* the message read: the last one, or (failing) an older one */
    :: ra_ts + 1 < nmsg[l] -> ra_ts++
    :: ra_ts + 1 == nmsg[l] || mval[RA_MSG(l, ra_ts)] != expected -> break
    od;
    RA_TVIEW(l) = ra_ts;
    if
    :: mval[RA_MSG(l, ra_ts)] == expected ->
       if
       :: order & RA_ACQ -> ra_join(l, ra_ts)
       :: else -> skip
       fi;
       ra_rmw_store(l, desired, order);
       ok = true
    :: else ->
       expected = mval[RA_MSG(l, ra_ts)];
       if
       :: order & RA_ACQ_FAIL -> ra_join(l, ra_ts)
       :: else -> skip
       fi;
       ok = false
    fi;
    ra_ts = 0
  }
}

/* A read-modify-write with the given order: old = l's last message, then
 * v (which may use old) after it: fetch_add is ra_rmw(l, x, x + d, order),
 * exchange ra_rmw(l, x, d, order). */
inline ra_rmw(l, old, v, order) {
  atomic {
    RA_TVIEW(l) = nmsg[l] - 1;
    old = mval[RA_MSG(l, nmsg[l] - 1)];
    if
    :: order & RA_ACQ -> ra_join(l, nmsg[l] - 1)
    :: else -> skip
    fi;
    ra_rmw_store(l, v, order)
  }
}

/* fetch_add(delta), acq_rel, its result unused. */
inline ra_fetch_add(l, delta) {
  atomic {
    RA_TVIEW(l) = nmsg[l] - 1;
    ra_join(l, nmsg[l] - 1);
    ra_rmw_store(l, mval[RA_MSG(l, nmsg[l] - 1)] + (delta), RA_ACQ_REL)
  }
}
