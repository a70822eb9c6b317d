// FusionCandidate: a chain of pointwise ops as a Halide algorithm, with no
// schedule. The same algorithm serves as the CPU reference (JIT for the
// host), as the input of the Halide CUDA backend, and as the source the CUDA
// C printer walks for the NVRTC backend.
//
// The iteration domain is one of three layouts (axes innermost first):
//   flat    i                 same-shape tensors of n elements
//   rowcol  col, row          a [rows, cols] tensor; b[col] broadcasts a row
//   nchw    hw, c, n          NCHW with H*W flattened; s[c] per channel
//   rows    col, row          a [rows, cols] tensor whose algorithm reduces
//                             along each row (softmax, layernorm, ...)
//   nd      d0, d1, d2, d3    a tensor of up to four dims (d0 the last,
//                             contiguous one); an input indexed by any subset
//                             of them broadcasts numpy-style along the rest
//   ndrows  d0, d1, d2, d3    nd whose algorithm reduces along d0; a row is
//                             one (d1, d2, d3) point
// An input is either full-shape or indexed by a subset of the axes.
//
// A general-layout candidate (`general`, generator/halide/general_layout.h)
// is neither flat nor last-axis rows: it reduces over named axes of its
// rowcol or nchw domain (mean over hw, statistics over n and hw, a softmax
// over c), its outputs may be indexed by the kept axes only, and an input
// may be read through a permutation (axes listed in storage order, e.g. a
// transposed x[row, col]). Only the Halide backend lays these out.
#pragma once

#include <Halide.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fusekit/dtype.h"
#include "schedules/row_reduction_template.h"

namespace fusekit {

enum class Layout { kFlat, kRowCol, kNchw, kRows, kNd, kNdRows };
const char* layout_name(Layout layout);
// Axis names innermost first: {"i"}, {"col", "row"}, {"hw", "c", "n"},
// {"col", "row"}, {"d0", "d1", "d2", "d3"} (nd and ndrows).
const std::vector<std::string>& layout_axes(Layout layout);

struct InputSpec {
  std::string name;
  std::vector<int> axes;  // domain axes indexing it, innermost first; empty = full shape
  bool full() const { return axes.empty(); }
  // A row reduction reads it row by row like a full input: full-shape, or
  // (ndrows) indexed by d0 and an outer axis, each row at its own offset.
  bool reads_rows() const { return full() || (axes.size() > 1 && axes.front() == 0); }
  // Axes not in ascending order: the tensor is stored in the listed order
  // (a general-layout candidate's transposed or permuted input).
  bool permuted() const {
    for (size_t k = 1; k < axes.size(); ++k)
      if (axes[k] < axes[k - 1]) return true;
    return false;
  }
};

struct ParamSpec {
  std::string name;
  float value = 0.0f;     // value used when tuning and verifying
};

// Reductions along a row (the `rows` layout's col axis).
enum class Reduction { kSum, kMax, kMean };
const char* reduction_name(Reduction kind);

// Handed to an algorithm function: f32 views of inputs and parameters.
class AlgorithmContext {
 public:
  virtual ~AlgorithmContext() = default;
  virtual Halide::Expr in(const std::string& name) const = 0;
  virtual Halide::Expr param(const std::string& name) const = 0;
  // `value` (an f32 Expr over the row's columns) reduced along the row: an
  // Expr that is constant across the row. `rows` layout only (UserError
  // otherwise).
  virtual Halide::Expr reduce(Reduction kind, const Halide::Expr& value) const = 0;
  // `value` reduced over the domain axes `reduced`: an Expr over the `kept`
  // axes (both innermost first). General-layout candidates only.
  // UserError by default (contexts that have no domain to reduce over).
  virtual Halide::Expr reduce_axes(Reduction kind, const Halide::Expr& value, const std::vector<int>& reduced,
                                   const std::vector<int>& kept) const;
};

// Returns one f32 Expr per output.
using AlgorithmFn = std::function<std::vector<Halide::Expr>(const AlgorithmContext&)>;

struct FusionCandidate {
  std::string name;             // "sigmoid_mul_tanh_add" or "expr_<hash>"
  std::string description;      // human text, e.g. the expression source
  Layout layout = Layout::kFlat;
  std::vector<InputSpec> inputs;
  std::vector<ParamSpec> params;
  std::vector<std::string> outputs;
  AlgorithmFn algorithm;
  // A general layout (see the top of this file); `output_axes` then lists
  // the domain axes every output is indexed by, innermost first (all of
  // them when it is as long as the domain).
  bool general = false;
  std::vector<int> output_axes;

  bool reduces() const { return layout == Layout::kRows || layout == Layout::kNdRows; }
  // The schedule template its kernels follow.
  TemplateKind template_kind() const {
    if (general) return TemplateKind::kGeneral;
    return reduces() ? TemplateKind::kRowReduction : TemplateKind::kPointwise;
  }
  // Output dims for a domain: the domain itself, or a general layout's
  // output axes of it.
  std::vector<int64_t> output_dims(const std::vector<int64_t>& domain) const;
  // Inputs of the whole domain (a row reduction's register cache holds these,
  // and the rows of an ndrows input indexed by d0 and an outer axis).
  int full_inputs() const {
    int n = 0;
    for (const auto& in : inputs) n += layout == Layout::kNdRows ? in.reads_rows() : in.full();
    return n;
  }
  // The iteration domain (innermost first) for a requested element count:
  // flat {n}; rowcol and rows {1024, ceil(n/1024)} (n < 1024: {n, 1}); nchw
  // {ceil(n/64), 64, 1} (n < 64: {n, 1, 1}).
  std::vector<int64_t> domain_for_elements(int64_t n) const;
  // An odd-sized domain: no extent is a multiple of 2, 4 or 8.
  std::vector<int64_t> odd_domain() const;
  // The domain of a shape given outermost first (a --sizes AxBxC or a plan
  // shape): reversed; nd layouts take up to four dims, padded with outer 1s.
  // UserError naming the layout's axes when the rank does not fit.
  std::vector<int64_t> domain_for_shape(const std::vector<int64_t>& outer_first) const;
  // Dims of input `i` for a domain.
  std::vector<int64_t> input_dims(size_t i, const std::vector<int64_t>& domain) const;
};

// The candidate made concrete at one storage dtype. Each call creates fresh
// Halide objects, since schedules mutate Funcs.
// One row reduction of a pipeline: out(row) = reduce over col of body(col, row).
// Later reductions and the outputs call `func`; `body`'s value may call
// earlier reductions' funcs. In ndrows `row` is the three outer vars
// (d1, d2, d3) and `col` is d0.
struct RowReduction {
  Reduction kind = Reduction::kSum;
  Halide::Func body;   // (col, row), f32
  Halide::Func func;   // (row), f32; the mean already divided
  Halide::Func total;  // (row): the running sum or max `func` reads
  Halide::RDom rdom;   // over the row's columns, in `total`'s update
};

// One reduction of a general-layout pipeline over some domain axes:
// func(kept) = reduce over `reduced` of body(all axes).
struct AxisReduction {
  Reduction kind = Reduction::kSum;
  std::vector<int> reduced, kept;  // domain axes, innermost first
  Halide::Func body;               // over every domain var, f32 (f64 in the reference)
  Halide::Func func;               // over the kept vars; the mean already divided
  Halide::Func total;              // over the kept vars: the running sum or max `func` reads
  Halide::RDom rdom;               // over the reduced axes, innermost first, in `total`'s update
};

struct Pipeline {
  DType dtype = DType::kF32;
  Halide::Type storage;                  // Float(32), Float(16) or BFloat(16); UInt(16) for bits storage
  std::vector<Halide::Var> vars;         // innermost first
  std::vector<Halide::ImageParam> inputs;
  std::vector<Halide::Param<float>> params;
  std::vector<Halide::Expr> stored;      // per output: cast(storage, f32 math)
  Halide::Func output;                   // one Func; a Tuple when several outputs
  std::vector<RowReduction> reductions;  // in the order the algorithm made them
  Halide::Expr row_length;               // `rows` and `ndrows` layouts: the col (d0) extent
  std::vector<AxisReduction> axis_reductions;  // general layouts, in the order the algorithm made them
  std::vector<Halide::Expr> axis_extents;      // general layouts: each domain axis's extent, from an input
  // General layouts: per input, for a permuted one, the Func the algorithm
  // reads it through (coordinates clamped to the tensor, so a schedule may
  // stage whole tiles of it); undefined for the others.
  std::vector<Halide::Func> permuted_reads;

  // Buffer constraints (min 0, dense strides) on inputs and outputs.
  void constrain_buffers();
  std::vector<Halide::Argument> arguments() const;  // inputs then params
};

// `f64_reductions`: for a row reduction, all math and accumulation in double
// (the CPU reference: Halide's simplifier may reassociate f32 math, e.g.
// (x - max) - log(sum) into x - (max + log(sum)), which a double absorbs);
// kernels compute in f32.
// `storage_bits`: f16 and bf16 tensors are UInt(16) buffers of their bits,
// widened and rounded by integer ops (generator/candidates/storage_bits.h);
// the Halide GPU backend's form, so that no half-float type reaches Halide's
// code generator.
Pipeline instantiate(const FusionCandidate& candidate, DType dtype, bool f64_reductions = false,
                     bool storage_bits = false);
// All math in double whatever the layout: the second evaluation of a
// pointwise reference, whose own error it estimates (Workload::reference_slack).
Pipeline instantiate_f64(const FusionCandidate& candidate, DType dtype);

// Canonical text of the algorithm at a dtype (layout, inputs, params and the
// printed output Exprs) and its xxh64 in hex: the database key.
std::string canonical_pipeline_text(const FusionCandidate& candidate, DType dtype);
std::string pipeline_hash(const std::string& canonical_text);

// Halide names used inside pipelines (stable, so kernels and keys are too).
std::string halide_input_name(const std::string& name);   // "in_x"
std::string halide_param_name(const std::string& name);   // "p_alpha"
constexpr const char* kHalideOutputName = "fk_out";

}  // namespace fusekit
