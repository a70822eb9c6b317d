// The checks a record from elsewhere (db import) passes before it is
// stored: known dtype, arch and backend, a shape within the size limit,
// finite non-negative times, counts in range, params that parse.
#pragma once

#include <string>

#include "tunedb/record.h"

namespace fusekit {

// "" when the record is acceptable, else what is wrong with it (naming the
// field and the value).
std::string record_violation(const TuningRecord& r);

}  // namespace fusekit
