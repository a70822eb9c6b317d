// Reading a row-reduction config into a RowSchedule, refusing what the op
// cannot take.
#include "generator/nvrtc/row_schedule.h"

#include <string>

#include "common/errors.h"
#include "generator/nvrtc/cuda_expr.h"
#include "schedules/row_reduction_template.h"

namespace fusekit {
namespace {

// What the printer knows of the op for can_implement. The pairs are looked
// for only with onepass=1, as the printer always has (the search draws on
// Halide's process-wide name counter, which numbers the printed lets).
OpTraits traits_of(const FusionCandidate& cand, const Pipeline& pipe, bool onepass, std::vector<ReductionPair>* pairs) {
  OpTraits t;
  for (const auto& in : cand.inputs) t.weight_inputs += in.axes == std::vector<int>{0};
  if (onepass) *pairs = find_reduction_pairs(pipe);
  t.reduction_pairs = static_cast<int>(pairs->size());
  return t;
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
  const OpTraits traits = traits_of(cand, pipe, config.get_or("onepass", 0) == 1, &s.pairs);
  const int element_bytes = static_cast<int>(dtype_bytes(pipe.dtype));
  if (std::string why = RowReductionTemplate::can_implement(config, element_bytes, traits, cand.name); !why.empty())
    throw UserError("schedule '" + config.to_string() + "' has " + why);
  s.wbatch = config.get_or("wbatch", 0) == 1;
  s.hint = load_hint(config);
  s.min_blocks = static_cast<int>(config.get_or("minb", 0));
  s.fixed_cols = RowReductionTemplate::fixed_row_length(config);
  if (s.fixed_cols != 0) RowReductionTemplate::specialize(config, s.fixed_cols);  // UserError for a length no row has
  s.words = pipe.dtype != DType::kF32 && s.vec >= 2;
  return s;
}

}  // namespace fusekit
