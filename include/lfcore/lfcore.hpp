// lfcore/lfcore.hpp - everything lfcore offers, in one include.
#pragma once

#include "lfcore/backoff.hpp"
#include "lfcore/cache_padded.hpp"
#include "lfcore/config.hpp"
#include "lfcore/eventcount.hpp"
#include "lfcore/hazard_pointer.hpp"
#include "lfcore/marked_ptr.hpp"
#include "lfcore/thread_registry.hpp"
