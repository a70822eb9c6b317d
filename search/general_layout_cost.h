// The analytic model's estimate for a general-layout schedule
// (schedules/general_layout_template.h): a ranking for modeled tunes, not a
// measurement.
#pragma once

#include "schedules/arch_limits.h"
#include "schedules/param_space.h"
#include "search/workload.h"

namespace fusekit {

// Microseconds: the bytes at the DRAM rate, scaled by how many threads keep
// loads in flight (Little's law, as for pointwise) and by coalescing (a
// permuted input read across its rows without staging wastes most of each
// sector).
double predict_general_layout(const Problem& problem, double bytes, size_t bytes_per_element, const Config& config,
                              const ArchLimits& arch);

}  // namespace fusekit
