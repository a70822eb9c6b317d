// What a row kernel computes per element, planned from the pipeline before
// any CUDA C is printed: which reduction bodies the cached path keeps per
// element, the bodies that read kept ones, the row-invariant divisors that
// become reciprocals, and the shared-memory slots of a staged row.
#pragma once

#include <Halide.h>

#include <map>
#include <string>
#include <vector>

#include "generator/candidates/fusion_candidate.h"
#include "generator/nvrtc/row_schedule.h"

namespace fusekit {

struct RowBodies {
  // A reduction's Func name -> "red<k>": the row's reduced value.
  std::map<std::string, std::string> red_values;
  // The stored outputs, with kept bodies (kb<k>) and reciprocals (rc<i>)
  // in place of what they stand for.
  std::vector<Halide::Expr> outputs;
  // Reductions whose body the outputs read per element (cached path), in order.
  std::vector<size_t> kept;
  // red_values, plus each kept body's "kb<k>" and each reciprocal's "rc<i>".
  std::map<std::string, std::string> point_values;
  // The cached path's reduction bodies; with keep=2, kept earlier bodies in them.
  std::vector<Halide::Expr> cached_bodies;
  // Whether cached_bodies[k] differs from the reduction's own body (fk_cbody<k>).
  std::vector<bool> reads_kept;
  // Row-invariant divisors of the outputs: rc<i> = 1 / divisors[i].
  std::vector<Halide::Expr> divisors;

  bool is_kept(size_t k) const;
  // "kb<i>" for each kept body before reduction k: fk_cbody<k>'s extra arguments.
  std::vector<std::string> kept_before(size_t k) const;
};

// The kept bodies (outputs, cached bodies, kept, point_values: every field
// but the divisors), then the divisors hoisted out of the outputs. Two steps
// because defining their Funcs draws on Halide's process-wide name counter,
// as CSE's let names do: the printer keeps the steps' order with its
// printing so that the let names stay what they were.
RowBodies plan_kept_bodies(const Pipeline& pipeline, const RowSchedule& schedule);
void hoist_row_divisors(const Pipeline& pipeline, RowBodies* bodies);

// One array of a staged row in the block's dynamic shared memory: each full
// input a later pass or an output reads, and each kept body, has
// kC * kR * kT slots (one cache_t, or kV floats, per vector).
struct StageArray {
  std::string name, type;  // s_<input> (cache_t) or sk<k> (float)
  int64_t offset;          // bytes into fk_stage
  bool buffered;           // two buffers (persist: an input's next group)
};
struct RowStage {
  std::vector<StageArray> arrays;
  int64_t bytes = 0;
  bool holds(const std::string& input) const;  // whether s_<input> is staged
};

// The staged row's layout (empty unless the schedule stages); UserError
// naming the schedule when it needs more shared memory than any arch grants.
RowStage plan_row_stage(const FusionCandidate& candidate, const Pipeline& pipeline, const RowSchedule& schedule,
                        const RowBodies& bodies, const Config& config);

}  // namespace fusekit
