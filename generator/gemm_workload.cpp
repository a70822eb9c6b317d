#include "generator/gemm_workload.h"

#include <cmath>

#include "common/errors.h"
#include "common/shape_text.h"
#include "generator/halide/cpu_jit_target.h"
#include "generator/halide/host_buffer.h"

namespace fusekit {
namespace {

class GemmWorkload final : public Workload {
 public:
  GemmWorkload(const GemmCandidate& c, DType dtype)
      : cand_(c), dtype_(dtype), ref_(instantiate_gemm(c, dtype, /*f64_products=*/true)) {
    const Halide::Var col = ref_.vars[0], row = ref_.vars[1];
    Halide::Var lane("ref_lane");
    for (auto& r : ref_.reductions) {
      r.total.compute_root().parallel(row).vectorize(col, 8, Halide::TailStrategy::GuardWithIf);
      r.total.update().parallel(row).vectorize(col, 8, Halide::TailStrategy::GuardWithIf);
    }
    ref_.output.parallel(row).vectorize(col, 8, Halide::TailStrategy::GuardWithIf);
    pipeline_ = Halide::Pipeline(ref_.output);
    pipeline_.compile_jit(cpu_jit_target());
  }

  std::string name() const override { return cand_.name; }
  DType dtype() const override { return dtype_; }

  Problem problem(const std::vector<int64_t>& domain) const override {
    const GemmDims d = gemm_dims(domain);
    Problem p;
    p.domain = domain;
    p.shape_text = shape_text({d.m, d.n, d.k});
    p.input_dims = gemm_input_dims(cand_, d);
    p.output_dims = {{d.n, d.m}};
    return p;
  }

  // f32 sums of K products drift by about sqrt(K) f32 ulps of the largest
  // partial sums, and a tail after a plain GEMM reads the product rounded to
  // storage: atol is two storage ulps at unit size, and both bounds widen by
  // 1 + sqrt(K) / 16 (4.5x at K = 3072).
  Tolerance tolerance(const Problem& problem) const override {
    Tolerance t = tolerance_for(dtype_);
    if (dtype_ != DType::kF32) t.atol = t.rtol;
    const double s = 1.0 + std::sqrt(static_cast<double>(gemm_dims(problem.domain).k)) / 16.0;
    t.atol *= s;
    t.rtol *= s;
    return t;
  }

  float input_magnitude(size_t) const override { return 1.0f; }

  void fill_input(size_t input, uint64_t seed, HostTensor* t) const override {
    const bool weight = input >= 1 && input <= static_cast<size_t>(cand_.accumulators);
    if (!weight) return fill_uniform(t, seed, -1.0f, 1.0f);
    const int64_t k = cand_.b_transposed ? t->dims[0] : t->dims[1];
    const float m = 2.0f / std::sqrt(static_cast<float>(k));
    fill_uniform(t, seed, -m, m);
  }

  std::vector<float> param_values() const override {
    std::vector<float> v;
    for (const auto& p : cand_.epilogue.params) v.push_back(p.value);
    return v;
  }

  void reference(const Problem& problem, const std::vector<HostTensor>& inputs,
                 std::vector<HostTensor>* outputs) const override {
    outputs->clear();
    outputs->push_back(HostTensor::make(dtype_, problem.output_dims[0]));
    if (inputs.size() != ref_.inputs.size())
      throw InternalError("GEMM reference of " + cand_.name + " got " + std::to_string(inputs.size()) + " inputs, wants " +
                          std::to_string(ref_.inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) ref_.inputs[i].set(host_buffer(ref_.storage, inputs[i]));
    Halide::Buffer<> out = host_buffer(ref_.storage, (*outputs)[0]);
    pipeline_.realize(Halide::Realization({out}));
  }

 private:
  const GemmCandidate cand_;
  const DType dtype_;
  mutable Pipeline ref_;
  mutable Halide::Pipeline pipeline_;
};

}  // namespace

std::unique_ptr<Workload> make_gemm_workload(const GemmCandidate& candidate, DType dtype) {
  return std::make_unique<GemmWorkload>(candidate, dtype);
}

}  // namespace fusekit
