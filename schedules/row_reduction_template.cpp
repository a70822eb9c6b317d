#include "schedules/row_reduction_template.h"

#include <algorithm>
#include <limits>
#include <map>

#include "common/errors.h"
#include "schedules/general_layout_template.h"

namespace fusekit {

namespace {

// The Halide backend's parameters. Added after the first Halide records:
// absent, vec and lanes read as the schedule those records measured (scalar
// accesses, one thread combining the partials).
ParamSpace halide_row_space(const ArchLimits& arch, int element_bytes) {
  ParamSpace s;
  s.add("threads", {32, 64, 128, 256, 512, 1024});
  s.add("vec", {1, 2, 4, 8}, 1);
  s.add("lanes", {0, 1}, 0);
  const int max_block = arch.max_threads_per_block;
  s.require("threads per block above the arch limit of " + std::to_string(max_block),
            [max_block](const Config& c) { return c.get("threads") <= max_block; });
  s.require("an access wider than 16 bytes",
            [element_bytes](const Config& c) { return c.get_or("vec", 1) * element_bytes <= 16; });
  return s;
}

// The NVRTC parameters, in the order configs print and sample. Those added
// after the first records: absent, each reads as the value that prints the
// kernel those records measured.
void add_nvrtc_row_parameters(ParamSpace* s) {
  s->add("threads", {8, 16, 32, 64, 128, 256, 512, 1024});
  s->add("rows", {1, 2, 4, 8});
  s->add("vec", {1, 2, 4, 8});
  s->add("cache", {0, 1, 2, 4, 8, 16});
  s->add("fast", {0, 1});
  s->add("split", {1, 2, 4, 8}, 1);
  s->add("keep", {0, 1, 2}, 1);
  s->add("smem", {0, 1}, 0);
  s->add("unroll", {1, 2, 4}, 1);
  s->add("persist", {0, 1, 2}, 0);
  s->add("onepass", {0, 1}, 0);
  s->add("wbatch", {0, 1}, 0);
  s->add("hint", {0, 1, 2}, 0);
  // minb=B: ptxas keeps the registers to what B blocks per SM can hold
  // (__launch_bounds__'s second argument), trading spills for resident
  // warps. Not searched: the tuner sets it on the schedules it specializes,
  // from their registers (TunerOptions::specialize), because as a free
  // dimension it multiplies the space by 8 for values that mostly spill
  // (docs/architecture.md, "Decisions and findings").
  s->add_unsearched("minb", {0, 2, 3, 4, 5, 6, 7, 8}, 0);
}

void require_block_shape(ParamSpace* s, const ArchLimits& arch, int element_bytes) {
  const int max_block = arch.max_threads_per_block;
  s->require("threads per block above the arch limit of " + std::to_string(max_block),
             [max_block](const Config& c) { return c.get("threads") * c.get("rows") <= max_block; });
  s->require("blocks of fewer than 32 threads", [](const Config& c) { return c.get("threads") * c.get("rows") >= 32; });
  s->require("an access wider than 16 bytes",
             [element_bytes](const Config& c) { return c.get("vec") * element_bytes <= 16; });
}

// Thread-block clusters (a row split across blocks combines its partials
// through distributed shared memory) need sm_90; asynchronous copies
// (persistent blocks prefetch the next row group with cp.async) and
// eviction policies on loads (createpolicy, ld .L2::cache_hint) sm_80.
void require_arch_features(ParamSpace* s, const ArchLimits& arch) {
  const bool clusters = arch.arch.number() >= 90, sm80 = arch.arch.number() >= 80;
  s->require("rows split across blocks (thread-block clusters) need sm_90 or later",
             [clusters](const Config& c) { return c.get_or("split", 1) == 1 || clusters; });
  s->require("persist>0 (asynchronous copies) needs sm_80 or later",
             [sm80](const Config& c) { return c.get_or("persist", 0) == 0 || sm80; });
  s->require("hint=1 or 2 (eviction policies) needs sm_80 or later",
             [sm80](const Config& c) { return c.get_or("hint", 0) == 0 || sm80; });
}

// Reduction bodies are kept per element, and a row staged, only beside a
// cached row; a re-reading schedule evaluates them again either way. The
// rules that need the op are the template's can_implement, which the
// printer calls too.
void require_cached_row_options(ParamSpace* s, int element_bytes, const OpTraits& traits) {
  s->require("keep=0 or 2 without a cached row (cache=0 re-reads the row: nothing is kept)",
             [](const Config& c) { return c.get_or("keep", 1) == 1 || c.get("cache") > 0; });
  s->require("smem=1 without a cached row (cache=0 re-reads the row: nothing is staged)",
             [](const Config& c) { return c.get_or("smem", 0) == 0 || c.get("cache") > 0; });
  s->require_that([element_bytes, traits](const Config& c) {
    return RowReductionTemplate::can_implement(c, element_bytes, traits);
  });
}

// What a thread holds in registers: weights loaded ahead, the blocks minb
// asks for, a re-reading pass's vectors in flight, the cached row (at most
// 64 32-bit registers' worth).
void require_register_budget(ParamSpace* s, const ArchLimits& arch, int element_bytes, int inputs,
                             const OpTraits& traits) {
  const int weights = traits.weight_inputs;
  s->require("more than 256 bytes of weights loaded ahead per thread (cache * vec * element bytes * weights)",
             [element_bytes, weights](const Config& c) {
               return c.get_or("wbatch", 0) == 0 || c.get("cache") * c.get("vec") * element_bytes * weights <= 256;
             });
  const int64_t sm_threads = arch.max_threads_per_sm, sm_blocks = arch.max_blocks_per_sm;
  s->require("minb blocks per SM whose threads exceed the SM's " + std::to_string(sm_threads) + " or blocks its " +
                 std::to_string(sm_blocks),
             [sm_threads, sm_blocks](const Config& c) {
               const int64_t b = c.get_or("minb", 0);
               return b <= sm_blocks && b * c.get("threads") * c.get("rows") <= sm_threads;
             });
  s->require("more than 128 bytes of re-read row in flight per thread (unroll * vec * element bytes * inputs)",
             [element_bytes, inputs](const Config& c) {
               return c.get_or("unroll", 1) * c.get("vec") * element_bytes * inputs <= 128;
             });
  s->require("more than 256 bytes of cached row per thread in registers (smem=1 stages it in shared memory)",
             [element_bytes, inputs](const Config& c) {
               return c.get_or("smem", 0) == 1 || c.get("cache") * c.get("vec") * element_bytes * inputs <= 256;
             });
}

// Elements of the row groups one block holds on chip.
int64_t block_elements(const Config& c) { return c.get("rows") * c.get("threads") * c.get("cache") * c.get("vec"); }

// A staged row: each input's elements (twice for a persistent block: the
// next group's copy) plus, for the catalog's ops, at most one kept f32 body
// per element (the printer counts exactly and refuses more than any arch
// grants), in the block's opt-in shared memory less the combine's own. The
// grid has `persist` blocks per SM and deals the row groups out statically:
// blocks that cannot be resident together would wait for a whole turn of
// the others (and __launch_bounds__(threads, persist) would squeeze the
// registers).
void require_shared_memory(ParamSpace* s, const ArchLimits& arch, int element_bytes, int inputs) {
  const int64_t max_shared = arch.max_shared_per_block - 4096;
  s->require("a staged row (smem=1) larger than the arch's shared memory per block (" +
                 std::to_string(arch.max_shared_per_block) + " bytes)",
             [element_bytes, inputs, max_shared](const Config& c) {
               const int64_t buffers = c.get_or("persist", 0) > 0 ? 2 : 1;
               return c.get_or("smem", 0) == 0 ||
                      block_elements(c) * (element_bytes * inputs * buffers + 4) <= max_shared;
             });
  const int64_t threads_per_sm = arch.max_threads_per_sm;
  s->require("persistent blocks (persist) whose threads exceed the SM's " + std::to_string(threads_per_sm),
             [threads_per_sm](const Config& c) {
               return c.get("threads") * c.get("rows") * c.get_or("persist", 0) <= threads_per_sm;
             });
  s->require("persistent blocks (persist) whose staged inputs exceed the SM's shared memory",
             [element_bytes, inputs, max_shared](const Config& c) {
               const int64_t p = c.get_or("persist", 0);
               // The inputs' two buffers alone (kept bodies, which only some
               // ops have, may still push a block out: measured, it loses).
               return p <= 1 || p * block_elements(c) * element_bytes * inputs * 2 <= max_shared + 4096;
             });
}

}  // namespace

ParamSpace RowReductionTemplate::space(const ArchLimits& arch, Backend backend, int element_bytes,
                                       int cached_inputs, const OpTraits& traits) {
  if (backend == Backend::kHalide) return halide_row_space(arch, element_bytes);
  ParamSpace s;
  add_nvrtc_row_parameters(&s);
  const int inputs = std::max(1, cached_inputs);  // full-size inputs sharing the budget
  require_block_shape(&s, arch, element_bytes);
  require_arch_features(&s, arch);
  require_cached_row_options(&s, element_bytes, traits);
  require_register_budget(&s, arch, element_bytes, inputs, traits);
  require_shared_memory(&s, arch, element_bytes, inputs);
  // threads x split is a row's threads: 512 x 4 and 1024 x 2 cover a row alike.
  s.trade("threads", "split");
  return s;
}

std::string RowReductionTemplate::can_implement(const Config& c, int element_bytes, const OpTraits& traits,
                                                const std::string& op) {
  const int64_t persist = c.get_or("persist", 0), cache = c.get("cache");
  if (persist > 0) {
    const std::string p = "persist=" + std::to_string(persist);
    if (cache == 0 || c.get_or("smem", 0) != 1)
      return p + " without a staged row: persistent blocks prefetch into shared memory; set smem=1 and cache > 0";
    const int64_t bytes = c.get("vec") * element_bytes;
    if (bytes != 4 && bytes != 8 && bytes != 16)
      return p + " with vectors of " + std::to_string(bytes) + " bytes; an asynchronous copy moves 4, 8 or 16: " +
             (bytes < 4 ? "raise vec" : "lower vec");
  }
  if (c.get_or("onepass", 0) == 1 && traits.reduction_pairs == 0)
    return "onepass=1, but no two reductions of " + op +
           " combine together (a mean and the mean of squared deviations from it, or a max and the sum of "
           "exp(v - max)): set onepass=0";
  if (c.get_or("wbatch", 0) == 1 && (traits.weight_inputs == 0 || cache == 0))
    return "wbatch=1, but " + (cache == 0 ? std::string("cache=0 re-reads the row: raise cache")
                                          : op + " has no weight (an input indexed by the column alone): set wbatch=0");
  const int64_t min_blocks = c.get_or("minb", 0);
  if (min_blocks > 0 && persist > 0)
    return "minb=" + std::to_string(min_blocks) + " and persist=" + std::to_string(persist) +
           ": a persistent kernel's bound is its blocks per SM; set minb=0";
  return "";
}

namespace {

// One NVRTC row-reduction seed shape.
struct RowSeed {
  int64_t threads;    // per block for 4-byte elements (2048: a 16-bit seed's 1024)
  int64_t rows;       // rows per block
  int64_t cache;      // 16-byte vectors of the row each thread holds; 0: re-read the row every pass
  int64_t split;      // blocks (a cluster) sharing a row
  bool also_precise;  // also without fast math (fast=0)
  bool staged;        // the row staged in shared memory (smem=1)
  int64_t persist;    // > 0: persistent blocks per SM copying the next row ahead (16-bit only)
};

// The NVRTC seed shapes for 4-byte elements: rows held in registers at
// 1024 (four rows per block), 1024, 4096 and 16384 columns, a variant that
// re-reads the row every pass, rows of 65536 held in the registers of a cluster of 8 or 4 blocks
// (sm_90; elsewhere the space drops them), and rows of 16384 and 65536
// (a cluster of 4) staged in shared memory, which leaves the registers
// free for more resident warps; for 16-bit elements also a row of 16384
// staged in two persistent blocks per SM that copy the next row ahead (the
// one persistent schedule that has won a measured shape; as f32 its two
// buffers fit once per SM). Narrower elements keep the bytes each
// thread has in flight (a row op is latency-bound when they are few): a
// 16-byte vector holds twice the bf16 elements, so half the threads cover
// the same row; re-reading keeps every thread. No persistent seed for
// rows of 65536: staged in persistent clusters of 4 (1024 f32 or 512 bf16
// threads, one or two per SM; bf16 also 2 blocks of 1024 threads), their
// grid capped at the clusters the device holds, lost clearly to the
// non-persistent ones wherever they were measured.
// Rows of 65536 also split across clusters of 2 (in registers, 16 or 8
// vectors per thread, bf16 also 4 in 1024 threads, or staged): a cluster
// must fit in one GPC, and on the H200 only 30 clusters of 4 blocks that
// fill an SM each are resident (120 of 132 SMs;
// GpuKernels.PersistentClustersAreCountedByTheDriver), while pairs fill
// every SM; the register and staged forms below each won some of the row
// ops at 65536 columns on the H200.
constexpr RowSeed kRowSeeds[] = {
    {32, 4, 8, 1, true, false, 0},    {128, 1, 2, 1, true, false, 0},   {256, 1, 4, 1, true, false, 0},
    {512, 1, 8, 1, true, false, 0},   {1024, 1, 0, 1, true, false, 0},  {256, 1, 8, 8, false, false, 0},
    {512, 1, 8, 4, false, false, 0},  {512, 1, 8, 1, false, true, 0},   {1024, 1, 4, 1, false, true, 0},
    {1024, 1, 4, 4, false, true, 0},  {1024, 1, 4, 1, false, true, 2},  {512, 1, 16, 2, false, false, 0},
    {1024, 1, 8, 2, false, false, 0}, {1024, 1, 8, 2, false, true, 0},  {2048, 1, 4, 2, false, false, 0}};

// The configs of one seed shape at `element_bytes`: with fast math and, if
// asked, without; a staged one with kept and with recomputed bodies.
void add_row_seed(const RowSeed& s, int element_bytes, std::vector<Config>* out) {
  // 2048 "threads" is a 16-bit seed's 1024 (no f32 block has as many).
  if ((s.persist > 0 || s.threads > 1024) && element_bytes >= 4) return;
  const int64_t wide = 16 / element_bytes;
  for (int64_t fast = 1; fast >= (s.also_precise ? 0 : 1); --fast) {
    Config c;
    c.set("threads", s.cache > 0 ? s.threads * element_bytes / 4 : s.threads);
    c.set("rows", s.rows);
    c.set("vec", wide);
    c.set("cache", s.cache);
    c.set("split", s.split);
    c.set("fast", fast);
    // Reduction bodies kept per element cost one f32 register each: a
    // 16-bit row of 32 or more elements per thread recomputes them; else
    // they are kept and feed the later reductions too (keep=2, which
    // prints the same kernel as keep=1 where no later reduction holds a
    // kept body). A re-reading seed keeps nothing (keep=1).
    c.set("keep", c.get("cache") == 0 ? 1 : element_bytes < 4 && c.get("cache") * wide >= 32 ? 0 : 2);
    if (!s.staged) {
      out->push_back(c);
      continue;
    }
    // A staged row: kept bodies (shared memory, freeing the inputs after
    // the first pass: add_layernorm) or recomputed ones (fewer bytes
    // staged: softmax stages x alone).
    c.set("smem", 1);
    if (s.persist > 0) c.set("persist", s.persist);
    for (int64_t keep : {2, 0}) {
      c.set("keep", keep);
      out->push_back(c);
    }
  }
}

// Rows of 16384 held in the registers of 1024 threads (f32: 4 vectors of
// 4, bf16: 2 of 8). Generic, such a kernel needs 56 registers (bf16
// layernorm; one block per SM); compiled for the row length (len), 32:
// two blocks, every warp slot, as Inductor's looped kernel has, with the
// row read once; specialized it wins some f32 row ops at 16384 columns,
// while in bf16 its generic form ranks too low for the tuner to specialize.
void add_registers_of_16384(int element_bytes, std::vector<Config>* out) {
  const int64_t wide = 16 / element_bytes;
  Config c;
  c.set("threads", 1024);
  c.set("rows", 1);
  c.set("vec", wide);
  c.set("cache", 16384 / (1024 * wide));
  c.set("split", 1);
  c.set("fast", 1);
  c.set("keep", element_bytes < 4 ? 0 : 2);
  out->push_back(c);
  // 16-bit rows of 16384 also in the registers of 512 threads (4 vectors
  // of 8), the register form of the staged 512-thread seed. Compiled for
  // the length it needs 32 registers for rmsnorm (48 generic) and 40 for
  // layernorm (54): four and three blocks per SM, which made it the
  // fastest probed schedule for bf16 norms at 16384 columns once
  // specialized (docs/architecture.md, "Decisions and findings").
  if (element_bytes < 4) {
    c.set("threads", 512);
    c.set("cache", 16384 / (512 * wide));
    out->push_back(c);
  }
}

// Appends a copy with `name`=`value` of each config of `out` that `takes`.
template <class Takes>
void add_copies_with(const char* name, int64_t value, Takes takes, std::vector<Config>* out) {
  for (size_t i = 0, n = out->size(); i < n; ++i) {
    if (!takes((*out)[i])) continue;
    Config c = (*out)[i];
    c.set(name, value);
    out->push_back(c);
  }
}

}  // namespace

std::vector<Config> RowReductionTemplate::seeds(Backend backend, int element_bytes) {
  std::vector<Config> out;
  if (backend == Backend::kHalide) {
    // The first schedule (scalar, one thread combining) and 16-byte vectors
    // combined by the lanes of a warp.
    for (int64_t t : {128, 256, 1024}) out.push_back(Config(std::map<std::string, int64_t>{{"threads", t}}));
    for (int64_t t : {128, 256, 1024})
      out.push_back(Config(std::map<std::string, int64_t>{{"threads", t}, {"vec", 16 / element_bytes}, {"lanes", 1}}));
    return out;
  }
  for (const RowSeed& s : kRowSeeds) add_row_seed(s, element_bytes, &out);
  add_registers_of_16384(element_bytes, &out);
  // The rows of 4096 held in registers also with L2 eviction policies on
  // their loads (hint=1; the space drops it before sm_80): of every fast
  // seed measured so, only this one gained.
  add_copies_with(
      "hint", 1, [](const Config& c) { return c.get("fast") != 0 && cached_row(c) == 4096 && c.get("rows") == 1; },
      &out);
  // The seeds holding rows of 16384 in registers (512 and 1024 threads)
  // also read with Inductor's hints (hint=2: evict_last in L1 and L2 for
  // the row and the weights), which closed the gap to Inductor's kernels at
  // 16384 columns for about half of the row ops (docs/architecture.md,
  // "Decisions and findings").
  add_copies_with(
      "hint", 2,
      [](const Config& c) { return cached_row(c) == 16384 && c.get("split") == 1 && c.get_or("smem", 0) == 0; },
      &out);
  // Rows split across a pair of blocks (the rows of 65536) also with one
  // combine for each pair of reductions (onepass=1; the space keeps it for
  // the ops that have such a pair): there each combine is a cluster barrier
  // in a block's short life, so halving them pays there (it won f32 softmax
  // and log_softmax at 65536 columns in registers).
  add_copies_with("onepass", 1, [](const Config& c) { return c.get("split") == 2; }, &out);
  // No other seed has onepass=1, and none wbatch=1: on the H200 neither
  // gained at the best schedules of 1024-16384 columns; both stay in the
  // space for the model's picks and the random sample.
  return out;
}

bool RowReductionTemplate::halide_stages_row(const Config& config, int element_bytes, int full_inputs,
                                             int max_shared_bytes) {
  const int64_t len = fixed_row_length(config);
  // Beside the row: the partials of a reduction (threads * vec f32), of
  // two where Halide does not reuse one buffer for both, and the lanes'
  // sums.
  const int64_t partials = 2 * config.get("threads") * config.get_or("vec", 1) * 4 + 1024;
  return len > 0 && len * element_bytes * full_inputs + partials <= max_shared_bytes;
}

namespace {

// The Halide row schedule's parameters.
struct HalideRowSchedule {
  int threads = 0;
  int vec = 1;
  bool lanes = false;  // 32 lanes by threads / 32 warps (gpu_lanes)
  int64_t len = 0;     // compiled for rows of this length; 0 generic
};

// Declares what a schedule assumes of the buffers. Compiled for rows of
// `len` columns: the row extent and stride of every [rows, cols] tensor are
// that constant (so are the loops and, for a staged row, the shared
// memory); a one-axis input may run along the row or the column: it keeps
// its extent (Halide ties the outputs after the first to the first's
// extent). Generic with vector accesses: every row must start on a vector:
// the pointers are aligned (the variant's pointer_alignment), and the row
// stride, which the runtime passes, is declared as the row length rounded
// down to a multiple of vec, which lets Halide prove the alignment. The two
// agree only for rows of a multiple of vec columns, the only rows such a
// variant is taken for (row_multiple).
void declare_row_buffers(const HalideRowSchedule& h, Halide::Func output, const std::vector<Halide::ImageParam>& inputs,
                         int element_bytes) {
  using namespace Halide;
  std::vector<OutputImageParam> buffers(inputs.begin(), inputs.end());
  for (const auto& b : output.output_buffers()) buffers.push_back(b);
  if (h.len > 0) {
    for (size_t i = 0; i < buffers.size(); ++i) {
      OutputImageParam b = buffers[i];
      if (b.dimensions() != 2) continue;
      if (i <= inputs.size()) b.dim(0).set_extent(static_cast<int>(h.len));
      b.dim(1).set_stride(static_cast<int>(h.len));
    }
    if (h.vec > 1)
      for (OutputImageParam b : buffers) b.set_host_alignment(h.vec * element_bytes);
  } else if (h.vec > 1) {
    for (OutputImageParam b : buffers) {
      b.set_host_alignment(h.vec * element_bytes);
      if (b.dimensions() == 2) b.dim(1).set_stride((b.dim(0).extent() / h.vec) * h.vec);
    }
  }
}

// Strides a Func's row (`c`; `r` the row) across the block as the output:
// columns ((o * warps + w) * 32 + l) * vec + v for the block's threads
// (w, l) or, with lanes=0, t = w * 32 + l. Innermost first: the vector,
// then (lanes=0) the threads inside the block's loop over the row, or
// (lanes=1) that loop inside the threads, so that the last reduction can
// be computed per thread before it. Returns the thread loop (w, or t) and
// the lane loop; the Vars are named `prefix` + o, i, l, v.
std::pair<Halide::Var, Halide::Var> stride_row(const HalideRowSchedule& h, Halide::Func f, Halide::Var c,
                                               Halide::Var r, const std::string& prefix) {
  using namespace Halide;
  Var o(prefix + "o"), t(prefix + "i"), l(prefix + "l"), v(prefix + "v");
  f.split(c, o, t, h.threads * h.vec, TailStrategy::GuardWithIf);
  if (h.lanes) f.split(t, t, l, 32 * h.vec);
  Var& inner = h.lanes ? l : t;
  if (h.vec > 1) f.split(inner, inner, v, h.vec);
  std::vector<VarOrRVar> order;
  if (h.vec > 1) order.push_back(v);
  if (h.lanes) order.insert(order.end(), {o, l, t, r});
  else order.insert(order.end(), {t, o, r});
  f.reorder(order);
  if (h.lanes) f.gpu_lanes(l).gpu_threads(t);
  else f.gpu_threads(t);
  if (h.vec > 1) f.vectorize(v);
  return std::make_pair(t, l);
}

// A row compiled for its length whose full inputs fit: each staged in
// shared memory at the row's block, loaded once as the output stores (the
// same threads, vectors and order); every pass reads it there.
void stage_full_inputs(const HalideRowSchedule& h, Halide::Func output, Halide::Var row,
                       const std::vector<Halide::ImageParam>& inputs) {
  for (Halide::ImageParam in : inputs) {  // a handle: in() wraps the pipeline's input
    if (in.dimensions() != 2) continue;
    Halide::Func staged = in.in();
    staged.compute_at(output, row).store_in(Halide::MemoryType::GPUShared);
    stride_row(h, staged, staged.args().at(0), staged.args().at(1), "fk_s");
  }
}

// Reduction k's per-thread partials, strided over the row as the output
// is, in shared memory at the row's block. Returns the lane RVar (lanes=1).
Halide::RVar schedule_partials(const HalideRowSchedule& h, Halide::Func total, const Halide::RDom& r, size_t k,
                               Halide::Func output, Halide::Var row) {
  using namespace Halide;
  const std::string n = std::to_string(k);
  RVar rxo("fk_rxo" + n), rxi("fk_rxi" + n), rxl("fk_rxl" + n), rxv("fk_rxv" + n);
  Var u("fk_u" + n), w("fk_w" + n), v("fk_v" + n);
  total.update().split(r.x, rxo, rxi, h.threads * h.vec);
  if (h.lanes) total.update().split(rxi, rxi, rxl, 32 * h.vec);
  RVar& rthread = h.lanes ? rxl : rxi;
  if (h.vec > 1) total.update().split(rthread, rthread, rxv, h.vec);
  std::vector<std::pair<RVar, Var>> factored = {{rthread, u}};
  if (h.lanes) factored.push_back({rxi, w});
  if (h.vec > 1) factored.push_back({rxv, v});
  Func partial = total.update().rfactor(factored);
  partial.bound(u, 0, h.lanes ? 32 : h.threads).compute_at(output, row);
  if (h.lanes) partial.bound(w, 0, h.threads / 32);
  if (h.vec > 1) partial.bound(v, 0, h.vec);
  for (Stage s : {Stage(partial), partial.update()}) {
    if (h.vec > 1) s.reorder(v, u).vectorize(v);
    if (h.lanes) s.gpu_lanes(u).gpu_threads(w);
    else s.gpu_threads(u);
  }
  return rxl;
}

// Lanes=1: lane l sums the partials of lane l of every warp; one value per
// lane is left. A reduction that a later one reads is finished at the
// block: warp 0's lanes, then one thread over their 32 sums. The last one
// is read by the outputs alone: each warp sums the lanes' columns itself and
// combines the 32 sums with warp shuffles (gpu_lanes: each lane reads the
// others' registers), with no barrier after it.
void combine_lanes(Halide::Func total, const Halide::RVar& rxl, size_t k, bool last, Halide::Func output,
                   Halide::Var row, Halide::Var thread, Halide::Var lane_loop) {
  Halide::Var l("fk_l" + std::to_string(k));
  Halide::Func lane = total.update().rfactor(rxl, l);
  lane.bound(l, 0, 32);
  lane.compute_at(output, last ? thread : row).gpu_lanes(l);
  lane.update().gpu_lanes(l);
  total.compute_at(output, last ? lane_loop : row);
}

}  // namespace

void RowReductionTemplate::apply_halide(Halide::Func output, const std::vector<Halide::Var>& vars,
                                        const std::vector<std::pair<Halide::Func, Halide::RDom>>& reductions,
                                        const std::vector<Halide::ImageParam>& inputs, int element_bytes,
                                        int max_shared_bytes, const Config& config) {
  HalideRowSchedule h;
  h.threads = static_cast<int>(config.get("threads"));
  h.vec = static_cast<int>(config.get_or("vec", 1));
  h.lanes = config.get_or("lanes", 0) == 1;
  h.len = fixed_row_length(config);
  FUSEKIT_INTERNAL_ASSERT(!h.lanes || h.threads % 32 == 0, "lanes=1 needs whole warps");
  const Halide::Var col = vars.at(0), row = vars.at(1);
  declare_row_buffers(h, output, inputs, element_bytes);
  // ndrows (col, d1, d2, d3): a block per (d1, d2, d3) point, so that every
  // Func computed at the row's block is one point of all three.
  if (vars.size() == 4) output.gpu_blocks(vars[1], vars[2], vars[3]);
  else output.gpu_blocks(row);
  const auto [thread, lane_loop] = stride_row(h, output, col, row, "fk_c");
  int full = 0;
  for (const Halide::ImageParam& in : inputs) full += in.dimensions() == 2;
  if (halide_stages_row(config, element_bytes, full, max_shared_bytes)) stage_full_inputs(h, output, row, inputs);
  for (size_t k = 0; k < reductions.size(); ++k) {
    Halide::Func total = reductions[k].first;
    const Halide::RVar rxl = schedule_partials(h, total, reductions[k].second, k, output, row);
    if (h.lanes) combine_lanes(total, rxl, k, k + 1 == reductions.size(), output, row, thread, lane_loop);
    else total.compute_at(output, row);  // one thread sums the partials
  }
}

int RowReductionTemplate::row_multiple(const Config& config, Backend backend) {
  return backend == Backend::kHalide ? static_cast<int>(config.get_or("vec", 1)) : 1;
}

int64_t RowReductionTemplate::cached_row(const Config& config) {
  // 0 for a Halide schedule (no cache: it re-reads or stages the row).
  return config.get("threads") * config.get_or("split", 1) * config.get_or("vec", 1) * config.get_or("cache", 0);
}

ParamSpace template_space(TemplateKind kind, const ArchLimits& arch, Backend backend, int element_bytes,
                          int cached_inputs, const OpTraits& traits) {
  if (kind == TemplateKind::kRowReduction)
    return RowReductionTemplate::space(arch, backend, element_bytes, cached_inputs, traits);
  if (kind == TemplateKind::kGeneral) return GeneralLayoutTemplate::space(arch, backend, element_bytes, traits.general);
  return PointwiseTemplate::space(arch, backend, element_bytes, traits);
}

std::vector<Config> template_seeds(TemplateKind kind, Backend backend, int element_bytes) {
  if (kind == TemplateKind::kRowReduction) return RowReductionTemplate::seeds(backend, element_bytes);
  if (kind == TemplateKind::kGeneral) return GeneralLayoutTemplate::seeds(backend, element_bytes);
  return PointwiseTemplate::seeds(backend, element_bytes);
}

Config RowReductionTemplate::specialize(const Config& config, int64_t cols) {
  if (cols < 1 || cols > std::numeric_limits<int32_t>::max())
    throw UserError("cannot specialize a row kernel for rows of " + std::to_string(cols) +
                    " columns: a row length is 1 .. 2^31 - 1 (leave len out for the generic kernel)");
  Config c = config;
  c.set("len", cols);
  return c;
}

std::string template_size_violation(TemplateKind kind, const Config& config, Backend backend, int64_t elements,
                                    int64_t row_length) {
  if (kind == TemplateKind::kGeneral) return "";  // every schedule guards its tiles
  if (kind == TemplateKind::kRowReduction) {
    const int64_t fixed = RowReductionTemplate::fixed_row_length(config);
    if (fixed > 0 && fixed != row_length)
      return "compiled for rows of " + std::to_string(fixed) + " columns, not " + std::to_string(row_length);
    const int multiple = RowReductionTemplate::row_multiple(config, backend);
    if (row_length % multiple != 0)
      return "vector accesses of " + std::to_string(multiple) + " elements need rows of a multiple of " +
             std::to_string(multiple) + " columns, not " + std::to_string(row_length);
    return "";
  }
  return PointwiseTemplate::size_violation(config, backend, elements);
}

std::vector<int64_t> template_verify_domain(TemplateKind kind, const Config& config, Backend backend,
                                            std::vector<int64_t> odd) {
  if (kind != TemplateKind::kRowReduction || odd.empty()) return odd;
  if (const int64_t fixed = RowReductionTemplate::fixed_row_length(config); fixed > 0) {
    odd.front() = fixed;
    odd.back() = RowReductionTemplate::kSpecializedVerifyRows;
    return odd;
  }
  odd.front() = RowReductionTemplate::round_up_row(odd.front(), RowReductionTemplate::row_multiple(config, backend));
  return odd;
}

Config generic_schedule(TemplateKind kind) {
  if (kind == TemplateKind::kGeneral) return GeneralLayoutTemplate::generic({});
  if (kind == TemplateKind::kRowReduction) return Config::parse("cache=0 fast=0 rows=1 split=1 threads=128 vec=1");
  return Config::parse("ept=1 fast=0 grid=0 threads=256 vec=1");
}

Backend generic_backend(TemplateKind kind) {
  return kind == TemplateKind::kGeneral ? Backend::kHalide : Backend::kNvrtc;
}

}  // namespace fusekit
