// lfcore/lfcore.hpp - everything lfcore offers, in one include.
#pragma once

#include "lfcore/atom_table.hpp"
#include "lfcore/backoff.hpp"
#include "lfcore/blocking_queue.hpp"
#include "lfcore/cache_padded.hpp"
#include "lfcore/chase_lev_deque.hpp"
#include "lfcore/config.hpp"
#include "lfcore/eventcount.hpp"
#include "lfcore/hash_trie_map.hpp"
#include "lfcore/hazard_pointer.hpp"
#include "lfcore/marked_ptr.hpp"
#include "lfcore/mpmc_queue.hpp"
#include "lfcore/spsc_queue.hpp"
#include "lfcore/thread_registry.hpp"
#include "lfcore/unbounded_mpmc_queue.hpp"
#include "lfcore/unbounded_spsc_queue.hpp"
#include "lfcore/work_stealing_pool.hpp"
