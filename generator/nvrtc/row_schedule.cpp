// Reading a row-reduction config into a RowSchedule, refusing what the op
// cannot take.
#include "generator/nvrtc/row_schedule.h"

#include <algorithm>
#include <string>

#include "common/errors.h"
#include "generator/nvrtc/cuda_expr.h"
#include "schedules/row_reduction_template.h"

namespace fusekit {
namespace {

[[noreturn]] void refuse(const Config& config, const std::string& why) {
  throw UserError("schedule '" + config.to_string() + "' has " + why);
}

void check_persist(const RowSchedule& s, const Config& config, DType dtype) {
  if (s.persist == 0) return;
  const std::string p = "persist=" + std::to_string(s.persist);
  if (!s.staged)
    refuse(config, p + " without a staged row: persistent blocks prefetch into shared memory; set smem=1 and cache > 0");
  const int64_t vector_bytes = s.vec * static_cast<int64_t>(dtype_bytes(dtype));
  if (vector_bytes != 4 && vector_bytes != 8 && vector_bytes != 16)
    refuse(config, p + " with vectors of " + std::to_string(vector_bytes) +
                       " bytes; an asynchronous copy moves 4, 8 or 16: " + (vector_bytes < 4 ? "raise vec" : "lower vec"));
}

void check_onepass(const RowSchedule& s, bool onepass, const FusionCandidate& cand, const Config& config) {
  if (onepass && s.pairs.empty())
    refuse(config, "onepass=1, but no two reductions of " + cand.name +
                       " combine together (a mean and the mean of squared deviations from it, or a max and the sum of "
                       "exp(v - max)): set onepass=0");
}

void check_wbatch(const RowSchedule& s, const FusionCandidate& cand, const Config& config) {
  const bool has_weights = std::any_of(cand.inputs.begin(), cand.inputs.end(),
                                       [](const InputSpec& in) { return in.axes == std::vector<int>{0}; });
  if (s.wbatch && (!has_weights || s.cache == 0))
    refuse(config, "wbatch=1, but " +
                       (s.cache == 0 ? std::string("cache=0 re-reads the row: raise cache")
                                     : cand.name + " has no weight (an input indexed by the column alone): set wbatch=0"));
}

}  // namespace

const ReductionPair* RowSchedule::pair_at(size_t k) const {
  for (const auto& pr : pairs)
    if (pr.first == k) return &pr;
  return nullptr;
}

RowSchedule parse_row_schedule(const FusionCandidate& cand, const Pipeline& pipe, const Config& config) {
  RowSchedule s;
  s.threads = static_cast<int>(config.get("threads"));
  s.rows = static_cast<int>(config.get("rows"));
  s.vec = static_cast<int>(config.get("vec"));
  s.cache = static_cast<int>(config.get("cache"));
  s.split = static_cast<int>(config.get_or("split", 1));
  const int64_t keep_mode = config.get_or("keep", 1);
  s.keep_bodies = keep_mode != 0;
  s.feed_later = keep_mode == 2;
  s.staged = s.cache > 0 && config.get_or("smem", 0) == 1;
  s.unroll = static_cast<int>(config.get_or("unroll", 1));
  s.persist = static_cast<int>(config.get_or("persist", 0));
  check_persist(s, config, pipe.dtype);
  const bool onepass = config.get_or("onepass", 0) == 1;
  if (onepass) s.pairs = find_reduction_pairs(pipe);
  check_onepass(s, onepass, cand, config);
  s.wbatch = config.get_or("wbatch", 0) == 1;
  check_wbatch(s, cand, config);
  s.hint = load_hint(config);
  s.min_blocks = static_cast<int>(config.get_or("minb", 0));
  if (s.min_blocks > 0 && s.persist > 0)
    refuse(config, "minb=" + std::to_string(s.min_blocks) + " and persist=" + std::to_string(s.persist) +
                       ": a persistent kernel's bound is its blocks per SM; set minb=0");
  s.fixed_cols = RowReductionTemplate::fixed_row_length(config);
  if (s.fixed_cols != 0) RowReductionTemplate::specialize(config, s.fixed_cols);  // UserError for a length no row has
  s.words = pipe.dtype != DType::kF32 && s.vec >= 2;
  return s;
}

}  // namespace fusekit
