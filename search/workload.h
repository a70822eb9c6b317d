// What the search loop knows of a fusion candidate at one dtype: how big its
// tensors are for a shape, its scalar parameters, and the CPU reference that
// every GPU result is checked against. generator/ implements it (with the
// Halide pipeline JIT-compiled for the host); search/ never sees Halide Funcs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/host_bytes.h"
#include "fusekit/dtype.h"

namespace fusekit {

// A dense host tensor in its storage dtype; dims innermost first.
struct HostTensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  HostBytes bytes;

  int64_t elements() const;
  float get(int64_t i) const;            // element i widened to f32
  void set(int64_t i, float value);      // rounded to nearest even
  static HostTensor make(DType dtype, std::vector<int64_t> dims);  // zeroed
  // Not zeroed: for a pass that then writes every element (see HostBytes).
  static HostTensor unfilled(DType dtype, std::vector<int64_t> dims);
};

// What an op computes per element, for the cost model's features; -1 where
// the workload does not say (counted by op_mix_of in generator/candidate_workload.h).
struct OpMix {
  int reductions = -1;  // row reductions: passes a kernel makes over a row's values
  int math_calls = -1;  // exp, log, tanh, sqrt, erf, ... (the special function unit's work)
  int arith = -1;       // + - * / max min, counted where the text repeats them
};

// One problem instance of a workload.
struct Problem {
  std::vector<int64_t> domain;                     // innermost first
  std::string shape_text;                          // outermost first: "4096x1024"
  std::vector<std::vector<int64_t>> input_dims;
  std::vector<std::vector<int64_t>> output_dims;
  OpMix mix;

  int64_t elements() const;
  // Bytes read plus written, each tensor once, at `bytes_per_element`.
  double bytes_moved(size_t bytes_per_element) const;
};

// Per-dtype verification tolerance: |got - ref| <= atol * scale + rtol * |ref|,
// where scale is min(1, max |ref|) over the tensor, or over each row of
// `row_length` elements where that is set (row reductions): an output whose
// values are all small (softmax over 65536 columns) is held to its own size,
// so an all-zero output never passes.
struct Tolerance {
  double atol;
  double rtol;
  int64_t row_length = 0;
};

// The bit pattern the measurers fill outputs with before a launch (every
// byte 0xFF: a NaN no kernel or reference computes); an element still
// holding it was never written and never matches.
constexpr uint8_t kPoisonByte = 0xFF;
Tolerance tolerance_for(DType dtype);

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  virtual DType dtype() const = 0;
  // Tensor dims for an iteration domain (innermost first). Throws UserError
  // when the domain's rank does not fit the candidate.
  virtual Problem problem(const std::vector<int64_t>& domain) const = 0;
  virtual std::vector<float> param_values() const = 0;
  // Fills `outputs` (allocated by the callee) from `inputs` on the CPU.
  virtual void reference(const Problem& problem, const std::vector<HostTensor>& inputs,
                         std::vector<HostTensor>* outputs) const = 0;
  // How close a GPU result must be (reductions widen it with row length).
  virtual Tolerance tolerance(const Problem& problem) const;
  // Input `i` is drawn uniformly from [-m, m).
  virtual float input_magnitude(size_t input) const {
    (void)input;
    return 3.0f;
  }
  // Fills every element of input `i` (allocated by the caller, maybe
  // unfilled) from `seed`: by default
  // uniformly from [-m, m) with m = input_magnitude(i). A workload that
  // needs special values (a -inf attention mask) overrides it and names
  // itself differently, since the measurer keys its inputs by name.
  virtual void fill_input(size_t input, uint64_t seed, HostTensor* t) const;
  // Where the reference itself is ill-conditioned (cancellation, sqrt or log
  // near 0, erf tails), the extra absolute error each output element may
  // have: f32 tensors shaped like `reference`, from the reference evaluated a
  // second time at the other precision; left empty where the two agree
  // within the tolerance (the default: no second evaluation).
  virtual void reference_slack(const Problem& problem, const std::vector<HostTensor>& inputs,
                               const std::vector<HostTensor>& reference, std::vector<HostTensor>* slack) const;
};


// Result of comparing outputs with the reference.
struct Comparison {
  double max_ratio = 0.0;   // max |got-ref| / (atol scale + rtol |ref| + slack); NaN mismatch or poison = inf
  std::string detail;       // first failing element, when max_ratio > 1
  int64_t widened = 0;      // elements that pass only with the reference's slack
  bool passed() const { return max_ratio <= 1.0; }
};
// `slack`: Workload::reference_slack's tensors (empty: none).
Comparison compare_outputs(const std::vector<HostTensor>& got, const std::vector<HostTensor>& ref, Tolerance tol,
                           const std::vector<HostTensor>& slack = {});

// Fills a tensor with uniform values in [lo, hi) from a seeded generator.
void fill_uniform(HostTensor* t, uint64_t seed, float lo, float hi);

}  // namespace fusekit
