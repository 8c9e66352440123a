/* tests/model/tso.pml - x86-TSO store buffers for the models that check a
 * fence pairing (eventcount, hazard_pointer, chase_lev_deque), after Owens,
 * Sarkar and Sewell, "A better x86 memory model: x86-TSO" (TPHOLs 2009).
 * The including model defines NT (threads) and NM (memory words) first.
 *
 * Each thread has a store buffer of one entry: a plain store waits in it and
 * reaches memory at a later step of the thread's flusher process; the
 * thread's own loads see its buffered store first; a fence (mfence) or a
 * locked instruction (a CAS, fetch_add, a system call) waits until the
 * buffer has drained. One entry is enough for the store-buffering patterns
 * checked here, which each have one store before the load that matters;
 * x86 keeps stores in order, so a longer buffer would add no reordering of
 * stores among themselves.
 */

byte mem[NM];
bool buffered[NT];
byte buffered_at[NT];
byte buffered_value[NT];

/* A plain store by thread th (after its earlier store drained). */
inline store(th, addr, val) {
  (!buffered[th]);
  atomic { buffered[th] = true; buffered_at[th] = addr; buffered_value[th] = val }
}

/* A load by thread th: its own buffered store to addr first, else memory. */
inline load(th, addr, val) {
  atomic {
    if
    :: buffered[th] && buffered_at[th] == addr -> val = buffered_value[th]
    :: else -> val = mem[addr]
    fi
  }
}

/* A full fence, or the start of a locked instruction: the buffer drains. */
inline fence(th) { (!buffered[th]) }

/* membarrier(2): every CPU that runs a thread of ours runs a full barrier,
 * each at its own time during the call, so every store buffered before the
 * call has drained when it returns. (Up to four threads.) */
inline membarrier() {
  (!buffered[0]);
#if NT > 1
  (!buffered[1]);
#endif
#if NT > 2
  (!buffered[2]);
#endif
#if NT > 3
  (!buffered[3]);
#endif
  skip
}

proctype flusher(byte th) {
end:
  do
  :: atomic { buffered[th] -> mem[buffered_at[th]] = buffered_value[th]; buffered[th] = false }
  od
}
