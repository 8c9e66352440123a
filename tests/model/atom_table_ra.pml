/* tests/model/atom_table_ra.pml - the memory orders of an atom's state word
 * and property list (lib/atom_table.cpp: claim(), release(), collect(),
 * update_properties(), with_properties() and ~atom_entry()) under C++'s
 * release/acquire (tests/model/ra.pml), checked by Spin over every
 * interleaving of three threads and every value each load - and each
 * compare_exchange that fails - may read (tests/model/check.sh runs it).
 * atom_collection.pml checks the collection protocol under sequential
 * consistency; this model asks whether the orders the code gives its
 * accesses keep it correct where loads may be stale, as on Arm: can the
 * collector destroy an atom before it has seen what its last holders did?
 * can a reader see a property block before its items?
 *
 * What is modelled: one atom already in the table (finding it in the trie is
 * trie_publication.pml's): its state word [permanent | dead | references],
 * its properties pointer (none, or block 1 or 2) and each block's items, a
 * plain location written before the block is published. A holder's use of
 * the atom (its name, say) is a plain store to a location of its own, so
 * that "the collector has seen it" is a question about that location. A
 * thread protects the properties pointer with an acquire load
 * (hazard_pointer.pml checks protect's validation); a replaced block is
 * retired to the hazard-pointer domain, which is assumed.
 *
 * What is checked, in every execution: the collector kills the atom
 * ([atom.kill]) only at a state of 0 and then destroys it having seen every
 * holder's use, the properties pointer's last value and that block's items
 * (~atom_entry's relaxed load, "sole owner", is then exact), so it frees
 * the current block, and each block published is freed once, by the
 * destructor or through retirement; a thread that reads a block reads its
 * items as written before it was published.
 *
 * SCENARIO 1: the atom starts with thread 0's reference; thread 0 adds a
 * property, uses the atom and releases it; thread 1 interns it (a claim),
 * reads its properties, uses it and releases it; thread 2 collects once.
 * SCENARIO 2: the same, and thread 1 adds a property too (a copy of
 * thread 0's block, if it read one, with its own item: the old block is
 * retired).
 * MUTANT (0 = the C++ code): 1: [atom.release] relaxed (the collector
 * destroys the atom unordered with a holder's last use); 2: [atom.kill]
 * relaxed, the same from the collector's side; 3: [atom.props.publish]
 * without release (a reader sees the block before its items); 4:
 * [atom.props.read] relaxed, the same from the reader's side.
 * Not shown needed - MUTANT 5 makes it relaxed, and both scenarios must
 * still pass: [atom.claim]'s acquire - a claim and the release after it are
 * read-modify-writes, so they continue the release sequence of the release
 * they follow, and the kill that reads the last one synchronizes with every
 * earlier release. The code keeps it.
 */

#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NTH 3
#define STATE 0 /* locations */
#define PROPS 1
#define ITEMS(b) (1 + (b)) /* blocks 1 and 2 */
#define USE(p) (4 + (p))   /* holders 0 and 1 */
#define NLOC 6
#define MAXMSG 6
#include "ra.pml"

#define DEAD 64
#define REFS 63
#define NOBLOCK 0
#define GARBAGE 0 /* a block's items before its writer's store */

#define RELEASE_ORDER (MUTANT == 1 -> RA_RLX : RA_REL)
#define KILL_ORDER (MUTANT == 2 -> RA_RLX : RA_ACQ_REL)
#define PUBLISH_ORDER (MUTANT == 3 -> RA_ACQ : RA_ACQ_REL)
#define READ_ACQUIRE (MUTANT != 4)
#define CLAIM_ORDER (MUTANT == 5 -> RA_RLX : RA_ACQ_REL)

#define SEEN_LAST(loc) (RA_TVIEW(loc) == nmsg[loc] - 1)

/* Ghost. */
bool published[3];
bool freed[3];
bool killed = false;

/* claim(d, counted): a reference, unless the atom is dead. Sets ok. */
inline claim() {
  ra_load(STATE, s, false); /* relaxed: the CAS validates it */
  do
  :: s & DEAD -> ok = false; break
  :: else ->
     ra_cas(STATE, s, s + 1, ok, CLAIM_ORDER); /* [atom.claim] */
     if
     :: ok -> break
     :: else -> skip
     fi
  od
}

/* release(a): the holder's reference back. */
inline release_ref() {
  ra_load(STATE, s, false); /* relaxed: the CAS validates it */
  do
  :: assert((s & REFS) != 0 && !(s & DEAD));
     ra_cas(STATE, s, s - 1, ok, RELEASE_ORDER); /* [atom.release] */
     if
     :: ok -> break
     :: else -> skip
     fi
  od
}

/* update_properties() with with_item(): block `mine` is old's items and one
 * more, published over old by CAS; old is retired. */
inline add_property(mine) {
  do
  :: ra_load(PROPS, old, READ_ACQUIRE); /* [atom.props.read] (protect) */
     if
     :: old != NOBLOCK ->
        ra_load(ITEMS(old), items, false);
        assert(items != GARBAGE) /* copied: published before old was */
     :: else -> items = 0
     fi;
     ra_store(ITEMS(mine), items + 1, false); /* the new block's items */
     atomic {
       ra_cas(PROPS, old, mine, ok, PUBLISH_ORDER); /* [atom.props.publish] */
       if
       :: ok ->
          published[mine] = true;
          if
          :: old != NOBLOCK -> assert(!freed[old]); freed[old] = true /* retire(old) */
          :: else -> skip
          fi
       :: else -> skip
       fi
     };
     items = 0;
     if
     :: ok -> break
     :: else -> skip /* another update won: again, from its block */
     fi
  od
}

/* with_properties(): reads the current block's items. */
inline read_properties() {
  ra_load(PROPS, old, READ_ACQUIRE); /* [atom.props.read] (protect) */
  if
  :: old != NOBLOCK -> ra_load(ITEMS(old), items, false); assert(items != GARBAGE)
  :: else -> skip
  fi;
  items = 0
}

/* Thread 0 holds a reference from the start. */
proctype holder() {
  byte me = 0, s, old, items;
  bool ok;
  add_property(1);
  ra_store(USE(0), 1, false);
  release_ref()
}

/* Thread 1: intern (the atom is found, then claimed), read or add, release. */
proctype interner() {
  byte me = 1, s, old, items;
  bool ok;
  claim();
  if
  :: ok ->
#if SCENARIO == 2
     add_property(2);
#else
     read_properties();
#endif
     ra_store(USE(1), 1, false);
     release_ref()
  :: else -> skip /* dead: get() would unlink it and make a new atom */
  fi
}

/* Thread 2: collect() once: the kill, then (the erase's reclamation) the
 * destructor, ~atom_entry, which frees the current block. */
proctype collector() {
  byte me = 2, s, b, items;
  bool ok;
  s = 0;
  ra_cas(STATE, s, DEAD, ok, KILL_ORDER); /* [atom.kill] */
  if
  :: ok ->
     killed = true;
     /* ~atom_entry: nobody else can reach the atom; it reads relaxed */
     assert(SEEN_LAST(USE(0)) && SEEN_LAST(USE(1)) && SEEN_LAST(PROPS));
     ra_load(PROPS, b, false);
     if
     :: b != NOBLOCK ->
        assert(SEEN_LAST(ITEMS(b)));
        ra_load(ITEMS(b), items, false);
        assert(!freed[b]);
        freed[b] = true
     :: else -> skip
     fi
  :: else -> skip
  fi
}

init {
  byte b;
  atomic {
    ra_init(STATE, 1);
    ra_init(PROPS, NOBLOCK);
    for (b : 1 .. 2) { ra_init(ITEMS(b), GARBAGE) };
    for (b : 0 .. 1) { ra_init(USE(b), 0) };
    b = 0;
    run holder();
    run interner();
    run collector()
  }
  (_nr_pr == 1); /* every thread is done */
  for (b : 1 .. 2) {
    if
    :: killed -> assert(freed[b] == published[b]) /* each block freed once */
    :: else -> skip
    fi
  }
}
