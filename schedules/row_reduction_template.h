// The row-reduction schedule template (softmax, layernorm, rmsnorm, ...):
// `threads` threads share a row, `rows` rows per block, each thread owns
// vectors of `vec` elements strided by threads * vec along the row. Each row
// reduction of the algorithm is one pass: a thread accumulates in f32, the
// row combines with warp shuffles (and shared memory across warps), and the
// last pass writes the outputs.
//
// Parameters:
//   threads  threads per row                          8 .. 1024
//   rows     rows per block                           1, 2, 4, 8
//   vec      elements per access (<= 16 bytes)        1, 2, 4, 8
//   cache    vectors per thread kept in registers     0 (every pass reads the
//            between passes (one read of the input    row again), 1 .. 16
//            when threads * vec * cache >= cols; a
//            longer row falls back to re-reading)
//   fast     1: compile with --use_fast_math
//   split    blocks that share a row, as one thread-block 1, 2, 4, 8
//            cluster (sm_90+): each block reduces its
//            share, the cluster combines the partials
//            through distributed shared memory
//   keep     1: reduction bodies that the outputs    0, 1, 2 (0 and 2 need
//            contain are kept per element in         cache > 0)
//            registers beside the cached row
//            (softmax's exp(x - max) is evaluated
//            once); 0: evaluated again, one f32
//            register per element fewer; 2: as 1,
//            and kept bodies also feed the later
//            reductions (add_layernorm's variance
//            reads the kept sum, not both inputs)
//   smem     1: the cached row lives in shared         0, 1 (1 needs cache > 0;
//            memory instead of registers; the first  bounded by the arch's
//            pass loads it in batches of four        shared memory per block)
//            vectors and stages only what later
//            passes and outputs read
//   unroll   vectors of each input a re-reading      1, 2, 4
//            pass loads before it uses the first
//   persist  0: one block (cluster) per row group;   0, 1, 2 (P > 0 needs
//            P > 0: P blocks per SM, each looping    smem=1, sm_80+,
//            over row groups; the staged row of the  vectors of 4 bytes or
//            next group is copied into a second      more, and P blocks
//            buffer (cp.async) while the block works that fit on one SM)
//            on the current one
//   onepass  1: each pair of reductions that one     0, 1 (1 needs such a
//            combine can finish (layernorm's mean    pair)
//            and variance, softmax's max and sum) is
//            reduced per thread over the elements it
//            holds (its mean or max, then the second
//            body against it; read from memory, one
//            vector at a time) and combined once;
//            0: one combine per reduction
//   wbatch   1: the output pass loads every vector   0, 1 (1 needs cache > 0
//            of each weight (an input indexed by     and a weight)
//            the column) before it uses the first
//   hint     1: loads carry L2 eviction policies:    0, 1 (1 needs sm_80+)
//            evict_last for weights and for a row a
//            later pass reads again, evict_first for
//            a last read
//   len      0: generic over the row length (the     not enumerated: the
//            space's configs); L > 0: compiled for   tuner specializes its
//            rows of exactly L columns, which the    best generic configs
//            runtime launches for no other length    (TunerOptions::specialize)
// The Halide backend's schedule (apply_halide) has its own parameters:
//   threads  threads per row, one block per row       32 .. 1024
//   vec      elements per access; > 1 takes rows of   1, 2, 4, 8 (<= 16
//            a multiple of vec only (row_multiple)    bytes)
//   lanes    0: one thread sums each reduction's      0, 1
//            threads * vec partials; 1: the block is
//            32 lanes by threads / 32 warps, lane l
//            sums lane l's partials of every warp and
//            32 sums are left: one thread adds them,
//            or for the last reduction each warp
//            combines them in warp shuffles
//            (gpu_lanes)
//   len      as for NVRTC (set by the tuner's specialization): compiled for
//            rows of exactly L columns, the row's full inputs then staged in
//            shared memory at the row's block where they fit (one read of
//            the input from memory; Halide sizes a staged row by the row
//            length, and a launch here has a constant shared-memory size,
//            so a generic kernel reads the row again in every pass)
// A cached 16-bit row stays packed, two elements per 32-bit register.
// Records from before `split`, `keep`, `smem`, `unroll`, `persist`, `onepass`,
// `wbatch` and `hint` existed read as split=1, keep=1, smem=0, unroll=1,
// persist=0, onepass=0, wbatch=0, hint=0: the kernels they measured.
// Every variant without `len` handles any row length; `cache` only decides
// which lengths take the one-read path.
#pragma once

#include <Halide.h>

#include <string>
#include <utility>
#include <vector>

#include "schedules/arch_limits.h"
#include "schedules/param_space.h"
#include "schedules/pointwise_template.h"

namespace fusekit {


class RowReductionTemplate {
 public:
  // The NVRTC parameters above, or the Halide ones. `cached_inputs`
  // full-size inputs share the register budget.
  static ParamSpace space(const ArchLimits& arch, Backend backend, int element_bytes, int cached_inputs,
                          const OpTraits& traits = {});
  static std::vector<Config> seeds(Backend backend, int element_bytes);
  // Empty when an NVRTC config can run an op with `traits` (named `op` in
  // the reason) at `element_bytes`, for the rules that need the op; else the
  // rule it breaks and the fix ("persist=1 without a staged row: ...; set
  // smem=1 ..."). The space requires it and the printer refuses by it.
  static std::string can_implement(const Config& config, int element_bytes, const OpTraits& traits,
                                   const std::string& op = "the op");
  // Elements of a row the registers hold: threads * split * vec * cache.
  static int64_t cached_row(const Config& config);
  // The row length a config is specialized for (`len`); 0 when generic.
  static int64_t fixed_row_length(const Config& config) { return config.get_or("len", 0); }
  // Rows of the shape a specialized schedule is verified on (the tuner,
  // `fusekit verify`): odd, so no rows-per-block or persistent grid divides it.
  static constexpr int64_t kSpecializedVerifyRows = 37;
  // `config` specialized for rows of `cols` columns; UserError naming the
  // value when no kernel can be (cols < 1 or >= 2^31).
  static Config specialize(const Config& config, int64_t cols);
  // The Halide schedule (Halide backend): one block per row, `threads`
  // threads; each reduction rfactor'ed into per-thread partials in shared
  // memory (computed at the row's block), then combined; the output stage
  // strides the row across the threads. `inputs`: the pipeline's inputs, whose alignment (and with `len`,
  // extent) a schedule declares with the outputs'; `max_shared_bytes`: what
  // a block may have, which bounds the staged row.
  static void apply_halide(Halide::Func output, const std::vector<Halide::Var>& vars,
                           const std::vector<std::pair<Halide::Func, Halide::RDom>>& reductions,
                           const std::vector<Halide::ImageParam>& inputs, int element_bytes, int max_shared_bytes,
                           const Config& config);
  // Whether a Halide schedule compiled for its `len` stages the row's full
  // inputs in shared memory: when `full_inputs` rows of it fit in
  // `max_shared_bytes` with room for the partials.
  static bool halide_stages_row(const Config& config, int element_bytes, int full_inputs, int max_shared_bytes);
  // Rows a schedule's kernel is taken for must have a multiple of this
  // many columns (Halide vector schedules: vec); 1 for any row.
  static int row_multiple(const Config& config, Backend backend);
  // `cols` rounded up to a row length such a kernel takes (a multiple of
  // `multiple`): where its odd shape is verified.
  static int64_t round_up_row(int64_t cols, int64_t multiple) { return cols + (multiple - cols % multiple) % multiple; }
};

// Which template a candidate's kernels follow, and the tuner's view of it.
// kGeneral: general layouts (schedules/general_layout_template.h), Halide only.
enum class TemplateKind { kPointwise, kRowReduction, kGeneral };
ParamSpace template_space(TemplateKind kind, const ArchLimits& arch, Backend backend, int element_bytes,
                          int cached_inputs, const OpTraits& traits = {});
std::vector<Config> template_seeds(TemplateKind kind, Backend backend, int element_bytes);
// Empty when `config` can run a problem of `elements` whose innermost
// extent (a row reduction's row) is `row_length`; else why not.
std::string template_size_violation(TemplateKind kind, const Config& config, Backend backend, int64_t elements,
                                    int64_t row_length);
// The odd shape a schedule is verified on, from the op's odd shape `odd`
// (innermost first): `odd` itself, or for a row schedule taken for some row
// lengths only, rows it takes: kSpecializedVerifyRows rows of its `len`, or
// the odd row length rounded up to its row_multiple.
std::vector<int64_t> template_verify_domain(TemplateKind kind, const Config& config, Backend backend,
                                            std::vector<int64_t> odd);
// The schedule of the generic variant a package always carries: no
// alignment needs beyond an element (an NVRTC one; a Halide one for
// kGeneral, see generic_backend).
Config generic_schedule(TemplateKind kind);
Backend generic_backend(TemplateKind kind);

}  // namespace fusekit
