// CUDA C printing shared by both NVRTC printers (pointwise and rows): Halide
// Exprs as CUDA C, the self-contained device prelude (no headers: f16/bf16
// conversions are inline PTX or bit operations, so NVRTC needs no include
// path), load-hint helpers, rounded stores, and the printed-kernel result.
#pragma once

#include <map>
#include <string>

#include "fusekit/kernel_artifact.h"
#include "generator/candidates/fusion_candidate.h"
#include "schedules/param_space.h"

namespace fusekit {

// Prints one f32/bool/int Halide Expr as a CUDA C expression, hoisting Lets
// (after CSE) into `statements` as `let_prefix` + their name. Image calls
// print as the input's name ("in_x"), parameters as theirs ("p_alpha").
// Throws UserError for IR it cannot print.
// Calls to Funcs named in `func_values` print as the mapped text (a row
// reduction's value, say) instead of being inlined.
std::string print_cuda_expr(const Halide::Expr& e, std::string* statements, const std::string& let_prefix = "v_",
                            const std::map<std::string, std::string>* func_values = nullptr);

// Device helpers every printed kernel starts with: f16/bf16 conversions
// (scalar and packed pairs), fk_tanh/fk_erf (fast forms under FK_FAST),
// floor division, and fk_pack<T, N>.
const char* cuda_prelude();

// Device helpers for loads that carry eviction policies (after the prelude):
// fk_policy<keep>() and fk_ldg_hint<T, N, kL1>(p, policy), then `more`
// (device code built on them), all inside one sm_80+ guard.
std::string cuda_load_hint_helpers(const std::string& more = "");

// A schedule's `hint` (0 plain loads, 1 evict_first, 2 evict_last; absent
// reads as 0); UserError naming the schedule for any other value.
int load_hint(const Config& config);

// Device functions that round f32 results to a storage dtype: one value
// ("" for f32: no rounding), and a pair packed into one 32-bit word.
const char* round_one_fn(DType dtype);
const char* round_pair_fn(DType dtype);

// Statements storing `values[0 .. kV)` (f32) rounded to `dtype` as one aligned
// vector at `dst`: 16-bit results two per conversion. Expects kV and pack_t
// (fk_pack<storage, kV>) in scope; `lane` names the loop variable.
std::string print_rounded_vector_store(DType dtype, int vec, const std::string& indent, const std::string& values,
                                       const std::string& dst, const std::string& lane);

// Source and launch description of one kernel. The artifact's image is empty
// until NVRTC compiles `source`.
struct PrintedKernel {
  std::string source;
  KernelArtifact launch;  // entry, block, grid, params, alignment
};

}  // namespace fusekit
