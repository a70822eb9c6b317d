// Two-way sync of any pair of stores: each gets the records it lacks, by id,
// so a repeated sync copies nothing.
#pragma once

#include <cstddef>

#include "tunedb/tune_db.h"

namespace fusekit {

struct SyncCounts {
  size_t a_to_b = 0;   // records copied from a into b
  size_t b_to_a = 0;   // records copied from b into a
  size_t a_after = 0;  // records each holds afterwards
  size_t b_after = 0;
};

// Compares the stores' ids, reads the records of a side only where the
// other lacks some, and commits to each what it lacks (one transaction a
// side), both sides at once. `a` and `b` must be distinct stores.
SyncCounts sync_stores(TuneDb& a, TuneDb& b);

}  // namespace fusekit
