// What a general-layout candidate offers its schedule space
// (schedules/general_layout_template.h), found in its pipeline.
#pragma once

namespace fusekit {

struct GeneralTraits {
  int thread_axes = 0;              // axes threads and blocks map onto: the reductions' kept axes, else the outputs'
  bool reduces = false;             // reductions over axes
  bool outputs_are_kept = false;    // outputs indexed by exactly the kept axes (mean over hw; not a softmax)
  int permuted_inputs = 0;          // inputs read through a permutation
};

}  // namespace fusekit
