#include "search/general_layout_cost.h"

#include <algorithm>
#include <cmath>

namespace fusekit {

double predict_general_layout(const Problem& problem, double bytes, size_t bytes_per_element, const Config& c,
                              const ArchLimits& arch) {
  const double rsplit = static_cast<double>(c.get("rsplit"));
  const double tx = static_cast<double>(c.get("tx")), ty = static_cast<double>(c.get("ty"));
  const double vec = static_cast<double>(c.get("vec")), unroll = static_cast<double>(c.get("unroll"));
  double outputs = 1;
  for (const auto& d : problem.output_dims.front()) outputs *= static_cast<double>(d);
  const bool reduces = outputs < static_cast<double>(problem.elements());
  const double threads = rsplit > 0 ? rsplit : tx * ty;
  // Threads that load: one block per kept element, or one thread per
  // output element (or kept element) over `vec * unroll` of them.
  const double working = rsplit > 0 ? outputs * rsplit : std::ceil(outputs / (reduces ? 1.0 : vec * unroll));
  const double resident = std::min<double>(arch.max_threads_per_sm, std::floor(arch.max_threads_per_sm / threads) * threads);
  const double in_flight = std::min(working, resident * arch.sm_count) * vec * bytes_per_element * 2;
  const double need = arch.dram_gbps * 1e9 * 600e-9;
  const double mlp = std::min(1.0, in_flight / need);
  // A thread per kept element walks its reduction serially: adjacent
  // threads read addresses a whole reduced extent apart unless x is the
  // innermost axis.
  double coalesced = c.get("axis") == 0 ? 1.0 : 0.5;
  if (c.get("stage") == 0 && !reduces && problem.input_dims.size() > 0) coalesced *= 0.6;
  const double access = vec * static_cast<double>(bytes_per_element) >= 8 ? 1.0 : 0.9;
  const double bw = arch.dram_gbps * 1e9 * 0.9 * mlp * coalesced * access;
  // The one thread that sums a block's partials.
  const double combine = rsplit > 0 ? rsplit * 0.002 : 0.0;
  return 2.0 + bytes / bw * 1e6 + combine;
}

}  // namespace fusekit
