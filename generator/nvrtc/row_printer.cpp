// Prints the CUDA C of a row-reduction kernel (RowReductionTemplate) from
// the pipeline's own Exprs: each RowReduction's body becomes fk_body<k>(),
// the outputs fk_point(); calls to reductions print as the row's reduced
// values red<k>. See schedules/row_reduction_template.h for the schedule.
// The config is read once into a RowSchedule (row_schedule.h), the
// per-element values planned once (row_bodies.h); the printer then emits
// section by section: helpers, device functions, the kernel's head, and its
// row loop of passes.
#include "generator/nvrtc/row_printer.h"

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

#include "common/errors.h"
#include "generator/nvrtc/cuda_expr.h"
#include "generator/nvrtc/row_bodies.h"
#include "generator/nvrtc/row_device_helpers.h"
#include "generator/nvrtc/row_schedule.h"

namespace fusekit {
namespace {

using Halide::Expr;

// Where a pass finds the row: memory (re-reading, one vector or a batch
// of kU at a time), registers, or shared memory (the first pass of a
// staged row loads it and stages it).
enum class From { kMemory, kBatch, kRegisters, kLoadAndStage, kStage };
// One vector's code at an indent.
using VectorBody = std::function<std::string(const std::string&)>;

// An f32 value of the math: the storage cast stripped, CSE applied.
Expr f32_math(Expr e) {
  if (const auto* c = e.as<Halide::Internal::Cast>(); c && c->value.type() == Halide::Float(32)) e = c->value;
  // A constant output: Halide folded the cast into a storage-typed constant.
  if (const auto* f = e.as<Halide::Internal::FloatImm>())
    e = Halide::Internal::FloatImm::make(Halide::Float(32), f->value);
  if (e.type() != Halide::Float(32)) throw InternalError("row reduction printer: math is not f32");
  return Halide::Internal::common_subexpression_elimination(e);
}

bool is_weight(const InputSpec& in) { return in.axes == std::vector<int>{0}; }

class RowKernelPrinter {
 public:
  RowKernelPrinter(const FusionCandidate& cand, const Pipeline& pipe, const Config& config, const std::string& entry)
      : cand_(cand),
        pipe_(pipe),
        entry_(entry),
        sched_(parse_row_schedule(cand, pipe, config)),
        nd_(cand.layout == Layout::kNdRows),
        st_(pipe.dtype == DType::kF32 ? "float" : "unsigned short"),
        nred_(pipe.reductions.size()),
        config_(config) {
    for (size_t k = 0; k < nred_; ++k) red_args_.push_back("red" + std::to_string(k));
  }

  // The steps interleave planning and printing in this order because
  // Halide's CSE and Func definitions draw names from one process-wide
  // counter: the let names printed depend on it.
  PrintedKernel print() {
    std::string src = helpers() + reduction_functions();
    bodies_ = plan_kept_bodies(pipe_, sched_);
    src += cached_body_functions();
    hoist_row_divisors(pipe_, &bodies_);
    stage_ = plan_row_stage(cand_, pipe_, sched_, bodies_, config_);
    src += point_function();
    PrintedKernel out;
    std::string params;
    out.launch = launch_description(&params);
    out.source = src + kernel(params);
    out.launch.source = out.source;
    return out;
  }

 private:
  // --- Sections, in source order.
  std::string helpers() const;
  std::string reduction_functions() const;
  std::string cached_body_functions() const;
  KernelArtifact launch_description(std::string* params) const;
  std::string kernel(const std::string& params);

  // --- Device functions.
  std::string shared_signature() const;
  std::string point_function() const;

  // --- The launch.
  LaunchExpr row_count() const;
  LaunchExpr grid(const LaunchExpr& rows) const;

  // --- The kernel's head and row loops.
  std::string kernel_head(const std::string& params) const;
  std::string persistent_loop();
  std::string one_group();
  std::string fetch_lambda() const;
  std::string register_cache() const;
  std::string row_setup(const std::string& in, const std::string& group, bool with_aligned) const;
  std::string stage_pointers(const std::string& in) const;
  std::string leave(const std::string& in) const;

  // --- Passes over the row.
  std::string passes(const std::string& b, From first, From rest);
  std::string single_pass(const std::string& b, From from, size_t k, int c, bool cached);
  std::string paired_passes(const std::string& b, From from, From rest, const ReductionPair& pr, int c);
  std::string paired_reread(const std::string& b, From from, const ReductionPair& pr, int c);
  std::string finish_pair(const std::string& b, const ReductionPair& pr, int c, const std::string& stat) const;
  std::string finish_reduction(size_t k, const std::string& indent, int c) const;
  std::string output_pass(const std::string& b, From rest, bool cached);
  std::string weights_ahead(const std::string& b) const;
  std::string row_constants(const std::string& indent) const;
  std::string over_vectors(const std::string& in, From from, const VectorBody& body) const;
  std::string open_batch(const std::string& in, bool stage) const;
  std::string visit(From from, const std::string& indent, const std::string& action, bool weights_ahead = false) const;
  std::string input_vector(From from, const std::string& indent, const InputSpec& in) const;
  std::string lanes(const std::string& indent, const std::string& action) const;

  // --- Per-lane actions and the names they use.
  std::string reduce_action(size_t k, bool cached) const;
  std::string point_action(bool cached) const;
  std::string store_outputs(const std::string& indent) const;
  std::string declare_outputs(const std::string& indent) const;
  std::string args_at(const std::string& lane) const;
  std::string kb_ref(const std::string& kb) const;
  std::string identity(size_t k) const;
  std::string cluster_slot(int c) const;
  std::string load(bool as_words, const std::string& ptr, const std::string& policy) const;
  std::string row_offset(const InputSpec& in, const std::string& c) const;
  std::string row_coords(const std::string& in, const std::string& r, const std::string& c) const;

  const FusionCandidate& cand_;
  const Pipeline& pipe_;
  const std::string entry_;
  const RowSchedule sched_;
  // ndrows: a row is a point (c1, c2, c3) of the outer axes, found from the
  // row index by two divisions once per row (not per element); an input
  // indexed by d0 and outer axes is read like a full row at its own offset.
  const bool nd_;
  const std::string st_;  // the storage type
  const size_t nred_;
  const Config& config_;
  RowBodies bodies_;  // planned by print()
  RowStage stage_;    // planned by print()
  // The policy of the full inputs' loads in the pass being printed.
  std::string row_policy_ = "fk_stream";
  // The reductions' values as the bodies see them: red<k>, or the thread's
  // own statistic while a pair's second body is reduced locally.
  std::vector<std::string> red_args_;
};

std::string RowKernelPrinter::helpers() const {
  std::string s = std::string(cuda_prelude()) + row_helpers_cuda();
  if (sched_.persist > 0) s += row_async_copy_helpers_cuda();
  if (!sched_.pairs.empty()) s += row_pair_helpers_cuda();
  if (sched_.hint != 0) s += cuda_load_hint_helpers(row_hint_helpers_cuda());
  return s;
}

// fk_body<k> and fk_point share one argument list: every input's value at
// the column, every reduction, every parameter.
std::string RowKernelPrinter::shared_signature() const {
  std::string sig;
  auto add_sig = [&](const std::string& s) { sig += (sig.empty() ? "" : ", ") + s; };
  for (const auto& in : cand_.inputs) add_sig("const " + st_ + " " + halide_input_name(in.name));
  for (size_t k = 0; k < nred_; ++k) add_sig("const float red" + std::to_string(k));
  for (const auto& p : cand_.params) add_sig("const float " + halide_param_name(p.name));
  return sig;
}

// fk_body<k>: reduction k's body at one column.
std::string RowKernelPrinter::reduction_functions() const {
  const std::string sig = shared_signature();
  std::map<std::string, std::string> red_values;
  for (size_t k = 0; k < nred_; ++k) red_values[pipe_.reductions[k].func.name()] = "red" + std::to_string(k);
  std::ostringstream src;
  for (size_t k = 0; k < nred_; ++k) {
    std::string stmts;
    const std::string value = print_cuda_expr(f32_math(pipe_.reductions[k].body.value()), &stmts,
                                              "b" + std::to_string(k) + "_", &red_values);
    src << "static __device__ __forceinline__ float fk_body" << k << "(" << sig << ") {\n"
        << stmts << "  return " << value << ";\n}\n";
  }
  return src.str();
}

// fk_cbody<k>: a cached-path body that reads kept earlier bodies, which come
// after the shared arguments.
std::string RowKernelPrinter::cached_body_functions() const {
  const std::string sig = shared_signature();
  std::ostringstream src;
  for (size_t k = 0; k < nred_; ++k) {
    if (!bodies_.reads_kept[k]) continue;
    std::string csig = sig;
    for (const std::string& kb : bodies_.kept_before(k)) csig += ", const float " + kb;
    std::string stmts;
    const std::string value = print_cuda_expr(f32_math(bodies_.cached_bodies[k]), &stmts,
                                              "c" + std::to_string(k) + "_", &bodies_.point_values);
    src << "static __device__ __forceinline__ float fk_cbody" << k << "(" << csig << ") {\n"
        << stmts << "  return " << value << ";\n}\n";
  }
  return src.str();
}

// The outputs see each kept reduction body as kb<k> and each row-invariant
// divisor as a reciprocal rc<i>.
std::string RowKernelPrinter::point_function() const {
  std::string point_sig = shared_signature();
  for (size_t k : bodies_.kept) point_sig += ", const float kb" + std::to_string(k);
  for (size_t i = 0; i < bodies_.divisors.size(); ++i) point_sig += ", const float rc" + std::to_string(i);
  for (size_t o = 0; o < bodies_.outputs.size(); ++o) point_sig += ", float& o" + std::to_string(o);
  std::string s = "static __device__ __forceinline__ void fk_point(" + point_sig + ") {\n";
  for (size_t o = 0; o < bodies_.outputs.size(); ++o) {
    std::string stmts;
    const std::string value = print_cuda_expr(f32_math(bodies_.outputs[o]), &stmts, "o" + std::to_string(o) + "_",
                                              &bodies_.point_values);
    s += stmts + "  o" + std::to_string(o) + " = " + value + ";\n";
  }
  return s + "}\n\n";
}

LaunchExpr RowKernelPrinter::row_count() const {
  if (!nd_) return LaunchExpr::symbol("d1");
  return LaunchExpr::make(
      LaunchExpr::Op::kMul,
      {LaunchExpr::symbol("d1"), LaunchExpr::make(LaunchExpr::Op::kMul, {LaunchExpr::symbol("d2"), LaunchExpr::symbol("d3")})});
}

// One block (cluster) per row group. Persistent: persist * sm_count blocks
// in whole clusters, at most one per row group, and no more than the device
// holds at once (a cluster must fit in one GPC: on an H200 fewer clusters
// of 4 or 8 are resident than the SMs' block slots suggest, and a cluster
// that is not resident would start its row groups only once another cluster
// has done all of its own). A split row's blocks are consecutive in x: one
// cluster per row group.
LaunchExpr RowKernelPrinter::grid(const LaunchExpr& rows) const {
  using Op = LaunchExpr::Op;
  LaunchExpr g = LaunchExpr::make(Op::kMax, {LaunchExpr(1), ceil_div(rows, sched_.rows)});
  if (sched_.persist > 0) {
    const LaunchExpr per_sm = LaunchExpr::make(
        Op::kDiv, {LaunchExpr::make(Op::kMul, {LaunchExpr(sched_.persist), LaunchExpr::symbol("sm_count")}),
                   LaunchExpr(sched_.split)});
    const LaunchExpr resident =
        LaunchExpr::make(Op::kDiv, {LaunchExpr::symbol("resident_blocks"), LaunchExpr(sched_.split)});
    g = LaunchExpr::make(
        Op::kMin, {g, LaunchExpr::make(Op::kMax, {LaunchExpr(1), LaunchExpr::make(Op::kMin, {per_sm, resident})})});
  }
  if (sched_.split > 1) g = LaunchExpr::make(Op::kMul, {g, LaunchExpr(sched_.split)});
  return g;
}

// Kernel parameters, in launch order, and the launch's shape.
KernelArtifact RowKernelPrinter::launch_description(std::string* params) const {
  KernelArtifact launch;
  launch.backend = "nvrtc";
  launch.entry = entry_;
  launch.block[0] = sched_.threads;
  launch.block[1] = sched_.rows;
  launch.pointer_alignment = sched_.vec * static_cast<int>(dtype_bytes(pipe_.dtype));
  launch.shared_bytes = static_cast<int>(stage_.bytes);
  auto add_param = [&](const std::string& decl, KernelParam p) {
    *params += (params->empty() ? "" : ", ") + decl;
    launch.params.push_back(p);
  };
  for (size_t i = 0; i < cand_.inputs.size(); ++i)
    add_param("const " + st_ + "* __restrict__ g_" + cand_.inputs[i].name,
              {KernelParam::Kind::kInput, KernelParam::Type::kPtr, static_cast<int>(i), {}});
  for (size_t o = 0; o < pipe_.stored.size(); ++o)
    add_param(st_ + "* __restrict__ g_o" + std::to_string(o),
              {KernelParam::Kind::kOutput, KernelParam::Type::kPtr, static_cast<int>(o), {}});
  for (size_t p = 0; p < cand_.params.size(); ++p)
    add_param("const float " + halide_param_name(cand_.params[p].name),
              {KernelParam::Kind::kScalarParam, KernelParam::Type::kF32, static_cast<int>(p), {}});
  const LaunchExpr rows = row_count();
  add_param("const long long rows", {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, rows});
  // A 32-bit row length: the runtime refuses (a Status, no launch) rows of
  // 2^31 columns or more instead of the kernel computing garbage.
  // A specialized kernel keeps the argument (one launch signature) and
  // reads its own constant instead.
  add_param(sched_.fixed_cols > 0 ? "const int" : "const int cols",
            {KernelParam::Kind::kShape, KernelParam::Type::kI32, 0, LaunchExpr::symbol("d0")});
  if (nd_) {  // the extents a row index splits by
    add_param("const long long e1", {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, LaunchExpr::symbol("d1")});
    add_param("const long long e2", {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, LaunchExpr::symbol("d2")});
  }
  launch.row_length = sched_.fixed_cols;
  launch.grid[0] = grid(rows);
  return launch;
}

std::string RowKernelPrinter::kernel(const std::string& params) {
  return kernel_head(params) + (sched_.persist > 0 ? persistent_loop() : one_group());
}

// The signature, the schedule's constants and the combine's shared memory.
std::string RowKernelPrinter::kernel_head(const std::string& params) const {
  const RowSchedule& s = sched_;
  std::ostringstream src;
  src << "extern \"C\" __global__ void __launch_bounds__(" << s.threads * s.rows;
  if (s.persist > 1) src << ", " << s.persist;
  else if (s.min_blocks > 0) src << ", " << s.min_blocks;
  src << ") ";
  if (s.split > 1) src << "__cluster_dims__(" << s.split << ", 1, 1) ";
  src << entry_ << "(" << params << ") {\n";
  if (s.fixed_cols > 0)
    src << "  constexpr int cols = " << s.fixed_cols << ";  // specialized: rows of exactly this length\n";
  src << "  constexpr int kT = " << s.threads << ", kR = " << s.rows << ", kV = " << s.vec << ", kC = " << s.cache
      << ", kS = " << s.split;
  if (s.staged && s.persist == 0) src << ", kB = " << std::min(s.cache, 4);
  if (s.unroll > 1) src << ", kU = " << s.unroll;
  src << ";\n";
  src << "  typedef fk_pack<" << st_ << ", kV> pack_t;\n";
  if (s.cache > 0) src << "  typedef " << (s.words ? "fk_pack<unsigned, kV / 2>" : "pack_t") << " cache_t;\n";
  // A pair's combine stores three floats per warp, and per cluster block.
  src << "  __shared__ float fk_smem[kR][" << (s.pairs.empty() ? 32 : 96) << "];\n";
  if (s.split > 1) {
    src << "  __shared__ float fk_slot[2][kR]" << (s.pairs.empty() ? "" : "[3]") << ";\n";
    src << "  const int tid = (int)fk_cluster_rank() * kT + threadIdx.x;  // the thread's place in its row\n";
  } else {
    src << "  const int tid = threadIdx.x;\n";
  }
  if (s.hint != 0) src << "  const unsigned long long fk_keep = fk_policy<true>(), fk_stream = fk_policy<false>();\n";
  return src.str();
}

// A split row's block waits, before it exits, for the cluster's reads of
// its shared memory.
std::string RowKernelPrinter::leave(const std::string& in) const {
  return sched_.split > 1 ? in + "fk_cluster_wait();\n" : "";
}

// Persistent blocks: the cluster's row groups are blockIdx.x / kS, then
// every (gridDim.x / kS)-th. A row that fits and starts on a vector
// boundary is staged by asynchronous copies, one group ahead: a thread
// copies and later reads only its own slots, so no barrier guards the
// buffers; the cluster barrier that ends each group orders the combine
// slots' reuse as in the one-group kernel. Other rows re-read.
std::string RowKernelPrinter::persistent_loop() {
  const From reread = sched_.unroll > 1 ? From::kBatch : From::kMemory;
  std::string s = "  const bool aligned = cols % kV == 0;  // every row starts on a vector boundary\n";
  s += "  const long long groups = (rows + kR - 1) / kR, stride = gridDim.x / kS;\n";
  s += "  if (aligned && cols <= kT * kS * kV * kC) {\n";
  s += stage_pointers("    ") + fetch_lambda();
  s += "    fetch(blockIdx.x / kS, 0);\n    fk_copy_commit();\n";
  s += "    int it = 0;\n";
  s += "    for (long long grp = blockIdx.x / kS; grp < groups; grp += stride, ++it) {\n";
  s += "      fetch(grp + stride, (it + 1) & 1);\n      fk_copy_commit();\n      fk_copy_wait_prior();\n";
  s += row_setup("      ", "grp", false);
  for (const StageArray& a : stage_.arrays)
    if (a.buffered)
      s += "      " + a.type + "* const " + a.name + " = " + a.name + "_buffers + (it & 1) * (kC * kR * kT);\n";
  s += passes("      ", From::kStage, From::kStage) + leave("      ");
  s += "    }\n    return;\n  }\n";
  s += "  for (long long grp = blockIdx.x / kS; grp < groups; grp += stride) {\n";
  s += row_setup("    ", "grp", false) + passes("    ", reread, reread) + leave("    ");
  return s + "  }\n}\n";
}

// The device lambda that copies group g's vectors of the thread's row into
// staging buffer b.
std::string RowKernelPrinter::fetch_lambda() const {
  std::string s = "    // Copies group g's vectors of the thread's row into buffer b.\n";
  s += "    const auto fetch = [&](long long g, int b) {\n";
  s += "      const long long r = g * kR + threadIdx.y;\n";
  s += "      if (g >= groups || r >= rows) return;\n";
  if (nd_) s += row_coords("      ", "r", "f");
  s += "#pragma unroll\n      for (int j = 0; j < kC; ++j) {\n";
  s += "        const int col0 = (j * kT * kS + tid) * kV;\n";
  s += "        if (col0 >= cols) break;\n";
  for (const auto& in : cand_.inputs)
    if (in.reads_rows())
      s += "        fk_copy_async<sizeof(cache_t)>(&s_" + in.name + "_buffers[(b * kC + j) * (kR * kT) + fk_at], g_" +
           in.name + " + " + (in.full() ? "r" : "(" + row_offset(in, "f") + ")") + " * cols + col0);\n";
  return s + "      }\n    };\n";
}

// One row group per block (cluster). Cached path: the row's vectors (and
// kept bodies) stay in registers, or in shared memory, across the passes;
// a longer row re-reads it in every pass, as does a schedule without a cache.
std::string RowKernelPrinter::one_group() {
  const From reread = sched_.unroll > 1 ? From::kBatch : From::kMemory;
  std::string s = row_setup("  ", "(long long)(blockIdx.x / kS)", true);
  if (sched_.staged) {
    s += "  if (cols <= kT * kS * kV * kC) {\n";
    s += stage_pointers("    ") + passes("    ", From::kLoadAndStage, From::kStage) + leave("    ");
    s += "    return;\n  }\n";
  } else if (sched_.cache > 0) {
    s += "  if (cols <= kT * kS * kV * kC) {\n";
    s += register_cache() + passes("    ", From::kRegisters, From::kRegisters) + leave("    ");
    s += "    return;\n  }\n";
  }
  return s + passes("  ", reread, reread) + leave("  ") + "}\n";
}

// The row's vectors loaded into registers (c_<input>), and room for the
// kept bodies.
std::string RowKernelPrinter::register_cache() const {
  std::string s;
  for (const auto& in : cand_.inputs)
    if (in.reads_rows()) s += "    cache_t c_" + in.name + "[kC];\n";
  for (size_t k : bodies_.kept) s += "    float kb" + std::to_string(k) + "[kC][kV];\n";
  s += "#pragma unroll\n    for (int j = 0; j < kC; ++j) {\n";
  s += "      const int col0 = (j * kT * kS + tid) * kV;\n";
  for (const auto& in : cand_.inputs)
    if (in.reads_rows())
      s += "      c_" + in.name + "[j] = active ? " + load(sched_.words, "x_" + in.name, sched_.read_once()) +
           " : cache_t();\n";
  return s + "    }\n";
}

// Where a thread's row and its pointers are, for row group `group`.
std::string RowKernelPrinter::row_setup(const std::string& in, const std::string& group, bool with_aligned) const {
  std::string s = in + "const long long row = " + group + " * kR + threadIdx.y;\n";
  s += in + "const bool active = row < rows;\n";
  s += in + "const long long base = (active ? row : 0) * (long long)cols;\n";
  if (with_aligned) s += in + "const bool aligned = cols % kV == 0;  // every row starts on a vector boundary\n";
  if (nd_) s += row_coords(in, "(active ? row : 0)", "c");
  for (const auto& i : cand_.inputs) {
    if (i.full()) s += in + "const " + st_ + "* __restrict__ x_" + i.name + " = g_" + i.name + " + base;\n";
    else if (nd_ && i.reads_rows())
      s += in + "const " + st_ + "* __restrict__ x_" + i.name + " = g_" + i.name + " + (" + row_offset(i, "c") +
           ") * (long long)cols;\n";
    else if (nd_ && !is_weight(i))
      s += in + "const " + st_ + " r_" + i.name + " = g_" + i.name + "[" + row_offset(i, "c") + "];\n";
    else if (i.axes == std::vector<int>{1})
      s += in + "const " + st_ + " r_" + i.name + " = g_" + i.name + "[active ? row : 0];\n";
    else if (!is_weight(i))
      throw UserError("row reduction printer: input '" + i.name + "' is indexed in a way it cannot print");
  }
  for (size_t o = 0; o < pipe_.stored.size(); ++o)
    s += in + st_ + "* __restrict__ y_o" + std::to_string(o) + " = g_o" + std::to_string(o) + " + base;\n";
  for (size_t k = 0; k < nred_; ++k) s += in + "float red" + std::to_string(k) + " = 0.0f;\n";
  return s;
}

std::string RowKernelPrinter::stage_pointers(const std::string& in) const {
  std::string s = in + "extern __shared__ __align__(16) unsigned char fk_stage[];\n";
  s += in + "const int fk_at = threadIdx.y * kT + threadIdx.x;  // the thread's slots\n";
  for (const StageArray& a : stage_.arrays)
    s += in + a.type + "* " + a.name + (a.buffered ? "_buffers" : "") + " = reinterpret_cast<" + a.type +
         "*>(fk_stage + " + std::to_string(a.offset) + ");\n";
  return s;
}

// Every pass over the row, each reduction's then the outputs', at indent
// `b`. A re-read row is read again after every reduction pass, and for the
// last time by the outputs.
std::string RowKernelPrinter::passes(const std::string& b, From first, From rest) {
  const bool cached = first != From::kMemory && first != From::kBatch;
  std::string s;
  int c = 0;  // combines so far
  row_policy_ = "fk_keep";
  for (size_t k = 0; k < nred_; ++k, ++c) {
    const From from = k == 0 ? first : rest;
    if (const ReductionPair* pr = sched_.pair_at(k)) {
      s += cached ? paired_passes(b, from, rest, *pr, c) : paired_reread(b, from, *pr, c);
      ++k;
      continue;
    }
    s += single_pass(b, from, k, c, cached);
  }
  s += row_constants(b);
  row_policy_ = "fk_stream";
  return s + output_pass(b, rest, cached);
}

// Reduction k's pass and its combine (number c).
std::string RowKernelPrinter::single_pass(const std::string& b, From from, size_t k, int c, bool cached) {
  std::string s = b + "{\n" + b + "  float acc = " + identity(k) + ";\n";
  s += over_vectors(b + "  ", from, [&](const std::string& in) { return visit(from, in, reduce_action(k, cached)); });
  return s + finish_reduction(k, b + "  ", c) + b + "}\n";
}

// The outputs' pass; with wbatch=1 a cached row's weights are loaded ahead.
std::string RowKernelPrinter::output_pass(const std::string& b, From rest, bool cached) {
  const bool ahead = sched_.wbatch && cached;
  std::string s = ahead ? weights_ahead(b) : "";
  return s + over_vectors(b, rest, [&](const std::string& in) {
           return declare_outputs(in) + visit(rest, in, point_action(cached), ahead) + store_outputs(in);
         });
}

// A pair of reductions over a cached row, combined once: the thread's
// statistic of the first (its mean, over the elements it holds, or its
// max), the second's body reduced against it, then fk_row_combine_pair.
std::string RowKernelPrinter::paired_passes(const std::string& b, From from, From rest, const ReductionPair& pr,
                                            int c) {
  const size_t i = pr.first, j = i + 1;
  const bool mean_var = pr.kind == ReductionPair::Kind::kMeanVar;
  const std::string ri = "red" + std::to_string(i);
  std::string s = b + "{\n" + b + "  float acc = " + identity(i) + ";\n";
  s += over_vectors(b + "  ", from, [&](const std::string& in) { return visit(from, in, reduce_action(i, true)); });
  if (mean_var) {
    s += b + "  float fk_n = 0.0f;  // the elements the thread holds\n#pragma unroll\n";
    s += b + "  for (int j = 0; j < kC; ++j) {\n" + b + "    const int col0 = (j * kT * kS + tid) * kV;\n";
    s += b + "    if (active && col0 < cols) fk_n += (float)min(kV, cols - col0);\n" + b + "  }\n";
    s += b + "  const float fk_m = fk_n > 0.0f ? acc / fk_n : 0.0f;\n";
  } else {
    s += b + "  const float fk_m = acc, fk_n = 0.0f;\n";
  }
  // With no element (or only -inf) a thread's sum of exp(v - max) is 0.
  s += b + "  float fk_q = 0.0f;\n" + b + (mean_var ? "  {\n" : "  if (fk_m != -__int_as_float(0x7f800000)) {\n");
  s += b + "    float acc = 0.0f;\n";
  red_args_[i] = "fk_m";
  s += over_vectors(b + "    ", rest, [&](const std::string& in) { return visit(rest, in, reduce_action(j, true)); });
  red_args_[i] = ri;
  s += b + "    fk_q = acc;\n" + b + "  }\n";
  return s + finish_pair(b, pr, c, "fk_stat{fk_m, fk_q, fk_n}");
}

// A pair over a row read from memory, in one pass: each vector's own
// statistic (the second body reduced about the vector's mean or max)
// folded into the thread's with fk_update, then one combine.
std::string RowKernelPrinter::paired_reread(const std::string& b, From from, const ReductionPair& pr, int c) {
  const size_t i = pr.first, j = i + 1;
  const bool mean_var = pr.kind == ReductionPair::Kind::kMeanVar;
  const std::string op = mean_var ? "0" : "1", ri = "red" + std::to_string(i);
  std::string s = b + "{\n" + b + "  fk_stat fk_t{" + identity(i) + ", 0.0f, 0.0f};\n";
  s += over_vectors(b + "  ", from, [&](const std::string& in) {
    std::string v = in + "float acc = " + identity(i) + ";\n" + visit(from, in, reduce_action(i, false));
    v += in + "const float fk_n = (float)min(kV, cols - col0);\n";
    v += in + "const float fk_m = " + (mean_var ? "acc / fk_n" : "acc") + ";\n";
    v += in + "acc = 0.0f;\n";
    red_args_[i] = "fk_m";
    const std::string second = lanes(in + (mean_var ? "" : "  "), reduce_action(j, false));
    red_args_[i] = ri;
    v += mean_var ? second : in + "if (fk_m != -__int_as_float(0x7f800000)) {\n" + second + in + "}\n";
    return v + in + "fk_t = fk_update<" + op + ">(fk_t, fk_stat{fk_m, acc, fk_n});\n";
  });
  return s + finish_pair(b, pr, c, "fk_t");
}

// The row's values of pair `pr` from the thread's statistic `stat`: one
// combine across the row (and the cluster: combine number c); closes the
// pair's block.
std::string RowKernelPrinter::finish_pair(const std::string& b, const ReductionPair& pr, int c,
                                          const std::string& stat) const {
  const size_t i = pr.first, j = i + 1;
  const std::string op = pr.kind == ReductionPair::Kind::kMeanVar ? "0" : "1";
  std::string s = b + "  fk_stat st = fk_row_combine_pair<kT, " + op + ">(" + stat + ", fk_smem[threadIdx.y]);\n";
  if (sched_.split > 1) {
    s += b + "  st = fk_cluster_combine_pair<kS, " + op + ">(st, " + cluster_slot(c) + ");\n";
    if (j + 1 == nred_) s += b + "  fk_cluster_arrive();\n";
  }
  s += b + "  red" + std::to_string(i) + " = st.a;\n";
  s += b + "  red" + std::to_string(j) + " = st.b" +
       (pipe_.reductions[j].kind == Reduction::kMean ? " / (float)cols" : "") + ";\n";
  return s + b + "}\n";
}

std::string RowKernelPrinter::finish_reduction(size_t k, const std::string& indent, int c) const {
  const RowReduction& r = pipe_.reductions[k];
  const std::string n = std::to_string(k), max = r.kind == Reduction::kMax ? "true" : "false";
  std::string s = indent + "red" + n + " = fk_row_combine<kT, " + max + ">(acc, fk_smem[threadIdx.y]);\n";
  if (sched_.split > 1) {
    s += indent + "red" + n + " = fk_cluster_combine<kS, " + max + ">(red" + n + ", " + cluster_slot(c) + ");\n";
    if (k + 1 == nred_) s += indent + "fk_cluster_arrive();\n";
  }
  if (r.kind == Reduction::kMean) s += indent + "red" + n + " /= (float)cols;\n";
  return s;
}

// A cached row's output pass with wbatch=1: every vector of each weight,
// loaded before the pass.
std::string RowKernelPrinter::weights_ahead(const std::string& b) const {
  std::string s;
  for (const auto& in : cand_.inputs)
    if (is_weight(in)) s += b + "pack_t p_" + in.name + "[kC];\n";
  s += "#pragma unroll\n" + b + "for (int j = 0; j < kC; ++j) {\n" + b + "  const int col0 = (j * kT * kS + tid) * kV;\n";
  for (const auto& in : cand_.inputs)
    if (is_weight(in))
      s += b + "  p_" + in.name + "[j] = active && col0 < cols ? " + load(false, "g_" + in.name, "fk_keep") +
           " : pack_t();\n";
  return s + b + "}\n";
}

// The rows' reciprocals, once the reductions are final.
std::string RowKernelPrinter::row_constants(const std::string& indent) const {
  std::string s;
  for (size_t i = 0; i < bodies_.divisors.size(); ++i) {
    std::string stmts;
    const std::string n = std::to_string(i);
    const std::string value = print_cuda_expr(f32_math(bodies_.divisors[i]), &stmts, "rc" + n + "_", &bodies_.red_values);
    s += stmts + indent + "const float rc" + n + " = 1.0f / " + value + ";\n";
  }
  return s;
}

// A pass over the vectors held in registers or shared memory, or reading
// them again; `body(indent)` is one vector's code.
std::string RowKernelPrinter::over_vectors(const std::string& in, From from, const VectorBody& body) const {
  if (from == From::kLoadAndStage || from == From::kBatch)
    return open_batch(in, from == From::kLoadAndStage) + body(in + "    ") + in + "  }\n" + in + "}\n";
  if (from == From::kMemory)
    return in + "for (int col0 = tid * kV; active && col0 < cols; col0 += kT * kS * kV) {\n" + body(in + "  ") + in +
           "}\n";
  return "#pragma unroll\n" + in + "for (int j = 0; j < kC; ++j) {\n" + in +
         "  const int col0 = (j * kT * kS + tid) * kV;\n" + in + "  if (!active || col0 >= cols) continue;\n" +
         body(in + "  ") + in + "}\n";
}

// A batch: every full input's next vectors are loaded before any is used
// (bytes in flight: a use, or a staging store, straight after each load
// would wait for it), then they are visited one by one as vector g. A
// staged row's first pass takes kB of its kC vectors at a time; a
// re-reading pass (unroll > 1) kU of the row's at a time. The body goes
// at indent in + "    "; closed by two braces.
std::string RowKernelPrinter::open_batch(const std::string& in, bool stage) const {
  const std::string type = stage ? "cache_t" : "pack_t", n = stage ? "kB" : "kU";
  const std::string col0 = stage ? "((jb + g) * kT * kS + tid) * kV" : "c0 + g * kT * kS * kV";
  std::string s = stage ? "#pragma unroll\n" + in + "for (int jb = 0; jb < kC; jb += kB) {\n"
                        : in + "for (int c0 = tid * kV; active && c0 < cols; c0 += kU * kT * kS * kV) {\n";
  for (const auto& i : cand_.inputs)
    if (i.reads_rows()) s += in + "  " + type + " w_" + i.name + "[" + n + "];\n";
  s += "#pragma unroll\n" + in + "  for (int g = 0; g < " + n + "; ++g) {\n" + in + "    const int col0 = " + col0 + ";\n";
  for (const auto& i : cand_.inputs)
    if (i.reads_rows())
      s += in + "    w_" + i.name + "[g] = active && col0 < cols ? " +
           load(stage && sched_.words, "x_" + i.name, stage ? sched_.read_once() : row_policy_) + " : " + type + "();\n";
  s += in + "  }\n#pragma unroll\n" + in + "  for (int g = 0; g < " + n + "; ++g) {\n";
  if (stage) s += in + "    const int j = jb + g;\n";
  s += in + "    const int col0 = " + (stage ? std::string("(j * kT * kS + tid) * kV") : col0) + ";\n" + in +
       "    if (!active || col0 >= cols) continue;\n";
  return s;
}

// One visit: the vector at col0 of every input (weights from p_<name>[j]
// when loaded ahead), then `action` per lane in the row.
std::string RowKernelPrinter::visit(From from, const std::string& indent, const std::string& action,
                                    bool weights_ahead) const {
  std::string s;
  for (const auto& in : cand_.inputs) {
    if (is_weight(in))  // a weight: from memory (cached) in every pass
      s += indent + "const pack_t v_" + in.name + " = " +
           (weights_ahead ? "p_" + in.name + "[j]" : load(false, "g_" + in.name, "fk_keep")) + ";\n";
    else if (in.reads_rows())  // else indexed by row only: r_<name>
      s += input_vector(from, indent, in);
  }
  return s + lanes(indent, action);
}

// The vector at col0 of a streamed input, from where the pass finds the row.
std::string RowKernelPrinter::input_vector(From from, const std::string& indent, const InputSpec& in) const {
  const std::string v = indent + "const pack_t v_" + in.name + " = ";
  const std::string slot = "s_" + in.name + "[j * (kR * kT) + fk_at]";
  auto unpacked = [&](const std::string& c) { return sched_.words ? "fk_unwords<kV>(" + c + ")" : c; };
  switch (from) {
    case From::kMemory: return v + load(false, "x_" + in.name, row_policy_) + ";\n";
    case From::kBatch: return v + "w_" + in.name + "[g];\n";  // from the batch's loads (open_batch)
    case From::kRegisters: return v + unpacked("c_" + in.name + "[j]") + ";\n";
    case From::kLoadAndStage: {  // from the batch's loads (open_batch)
      const std::string store = stage_.holds(in.name) ? indent + slot + " = w_" + in.name + "[g];\n" : "";
      return store + v + unpacked("w_" + in.name + "[g]") + ";\n";
    }
    case From::kStage: break;
  }
  if (stage_.holds(in.name)) return v + unpacked(slot) + ";\n";
  return v + "pack_t();  // read by the first pass only\n";
}

// `action` per lane of the vector at col0. A whole vector (every one but
// a row's last, when cols % kV != 0) runs without a guard per lane.
std::string RowKernelPrinter::lanes(const std::string& indent, const std::string& action) const {
  return indent + "if (col0 + kV <= cols) {\n#pragma unroll\n" + indent + "  for (int l = 0; l < kV; ++l) " + action +
         "\n" + indent + "} else {\n#pragma unroll\n" + indent + "  for (int l = 0; l < kV; ++l)\n" + indent +
         "    if (col0 + l < cols) " + action + "\n" + indent + "}\n";
}

// Accumulates reduction k's body at lane l; the cached path also keeps it
// when the outputs read it.
std::string RowKernelPrinter::reduce_action(size_t k, bool cached) const {
  const bool is_max = pipe_.reductions[k].kind == Reduction::kMax;
  const std::string n = std::to_string(k);
  std::string call = "fk_body" + n + "(" + args_at("l") + ")";
  if (cached && bodies_.reads_kept[k]) {
    call = "fk_cbody" + n + "(" + args_at("l");
    for (const std::string& kb : bodies_.kept_before(k)) call += ", " + kb_ref(kb);
    call += ")";
  }
  if (cached && bodies_.is_kept(k) && sched_.staged)
    return "{ const float kbv = " + call + "; " + kb_ref("kb" + n) + " = kbv; acc " +
           (is_max ? "= fmaxf(acc, kbv);" : "+= kbv;") + " }";
  if (cached && bodies_.is_kept(k))
    return "{ kb" + n + "[j][l] = " + call + "; acc " +
           (is_max ? "= fmaxf(acc, kb" + n + "[j][l]);" : "+= kb" + n + "[j][l];") + " }";
  return std::string(is_max ? "acc = fmaxf(acc, " + call + ");" : "acc += " + call + ";");
}

std::string RowKernelPrinter::point_action(bool cached) const {
  std::string a = "fk_point(" + args_at("l");
  for (size_t k : bodies_.kept) {
    const std::string n = std::to_string(k);
    a += cached ? ", " + kb_ref("kb" + n) : ", fk_body" + n + "(" + args_at("l") + ")";
  }
  for (size_t i = 0; i < bodies_.divisors.size(); ++i) a += ", rc" + std::to_string(i);
  for (size_t o = 0; o < bodies_.outputs.size(); ++o) a += ", w_o" + std::to_string(o) + "[l]";
  return a + ");";
}

std::string RowKernelPrinter::store_outputs(const std::string& indent) const {
  const std::string round1 = round_one_fn(pipe_.dtype);
  std::string s;
  for (size_t o = 0; o < pipe_.stored.size(); ++o) {
    const std::string n = std::to_string(o), dst = "y_o" + n;
    s += indent + "if (aligned && col0 + kV <= cols) {\n";
    s += print_rounded_vector_store(pipe_.dtype, sched_.vec, indent + "  ", "w_o" + n, dst + " + col0", "h");
    s += indent + "} else {\n#pragma unroll\n" + indent + "  for (int l = 0; l < kV; ++l)\n" + indent +
         "    if (col0 + l < cols) " + dst + "[col0 + l] = " + round1 + "(w_o" + n + "[l]);\n" + indent + "}\n";
  }
  return s;
}

std::string RowKernelPrinter::declare_outputs(const std::string& indent) const {
  std::string s;
  for (size_t o = 0; o < pipe_.stored.size(); ++o) s += indent + "float w_o" + std::to_string(o) + "[kV];\n";
  return s;
}

// The arguments fk_body<k> and fk_point share, at lane `lane`.
std::string RowKernelPrinter::args_at(const std::string& lane) const {
  std::string a;
  auto add = [&](const std::string& s) { a += (a.empty() ? "" : ", ") + s; };
  for (const auto& in : cand_.inputs) {
    if (in.reads_rows() || is_weight(in)) add("v_" + in.name + ".v[" + lane + "]");
    else add("r_" + in.name);  // indexed by row only
  }
  for (size_t k = 0; k < nred_; ++k) add(red_args_[k]);
  for (const auto& p : cand_.params) add(halide_param_name(p.name));
  return a;
}

// Kept body kb<k>'s value at lane l of vector j.
std::string RowKernelPrinter::kb_ref(const std::string& kb) const {
  return sched_.staged ? "sk" + kb.substr(2) + "[(j * kV + l) * (kR * kT) + fk_at]" : kb + "[j][l]";
}

// The accumulator's start: -inf for a max, 0 for a sum or mean.
std::string RowKernelPrinter::identity(size_t k) const {
  return std::string(pipe_.reductions[k].kind == Reduction::kMax ? "-__int_as_float(0x7f800000)" : "0.0f");
}

// Combine number `c` of the row (reduction k, unless pairs combine
// together) uses cluster slot c % 2.
std::string RowKernelPrinter::cluster_slot(int c) const {
  return sched_.pairs.empty() ? "&fk_slot[" + std::to_string(c % 2) + "][threadIdx.y]"
                              : "fk_slot[" + std::to_string(c % 2) + "][threadIdx.y]";
}

// The call that loads vector col0 of `ptr` (as words: a packed 16-bit row).
// `policy` names the policy variable, used with hint=1 and 2.
std::string RowKernelPrinter::load(bool as_words, const std::string& ptr, const std::string& policy) const {
  const std::string f = as_words ? "fk_load_words" : "fk_load";
  const std::string l1 = sched_.hint == 2 ? (policy == "fk_keep" ? ", 1" : ", 2") : "";
  const std::string targs = (as_words ? "<kV" : "<" + st_ + ", kV") + l1 + ">(";
  return sched_.hint != 0 ? f + "_hint" + targs + ptr + ", col0, cols, aligned, " + policy + ")"
                          : f + targs + ptr + ", col0, cols, aligned)";
}

// The row offset of an ndrows input indexed by outer axes, from the row's
// coordinates c<a>.
std::string RowKernelPrinter::row_offset(const InputSpec& in, const std::string& c) const {
  std::vector<int> outer;
  for (int a : in.axes)
    if (a != 0) outer.push_back(a);
  std::string off = c + std::to_string(outer.back());
  for (size_t j = outer.size() - 1; j-- > 0;)
    off = c + std::to_string(outer[j]) + " + e" + std::to_string(outer[j]) + " * (" + off + ")";
  return off;
}

// Row r's coordinates c1, c2, c3 (ndrows), by two divisions.
std::string RowKernelPrinter::row_coords(const std::string& in, const std::string& r, const std::string& c) const {
  return in + "const long long " + c + "q = " + r + " / e1, " + c + "1 = " + r + " - " + c + "q * e1, " + c + "3 = " +
         c + "q / e2, " + c + "2 = " + c + "q - " + c + "3 * e2;\n";
}

}  // namespace

PrintedKernel print_row_reduction_kernel(const FusionCandidate& cand, const Pipeline& pipe, const Config& config,
                                         const std::string& entry) {
  FUSEKIT_INTERNAL_ASSERT(cand.reduces(), cand.name + " is not a row reduction");
  return RowKernelPrinter(cand, pipe, config, entry).print();
}

}  // namespace fusekit
