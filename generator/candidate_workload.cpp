#include "generator/candidate_workload.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <regex>
#include <thread>

#include "common/errors.h"
#include "common/parallel_chunks.h"
#include "common/shape_text.h"
#include "generator/nvrtc/pointwise_printer.h"
#include "generator/halide/cpu_jit_target.h"
#include "generator/halide/host_buffer.h"
#include "generator/halide/halide_backend.h"
#include "generator/build/isolated_build.h"
#include "generator/nvrtc/nvrtc_compiler.h"
#include "generator/candidates/op_traits.h"
#include "generator/nvrtc/kernel_printer.h"
#include "generator/nvrtc/row_printer.h"

namespace fusekit {
namespace {

// Evaluates a reference pipeline on the CPU: reductions once per row or
// kept element (in parallel), the output over one flat index in parallel
// chunks of 8-wide vectors.
class ReferenceEvaluator {
 public:
  explicit ReferenceEvaluator(Pipeline p) : ref_(std::move(p)) {
    for (auto& r : ref_.reductions) {
      r.total.compute_root().parallel(ref_.vars[1]);
      r.total.update().parallel(ref_.vars[1]);
    }
    for (auto& r : ref_.axis_reductions) {
      r.total.compute_root();
      if (r.kept.empty()) continue;
      const Halide::Var outer = ref_.vars.at(r.kept.back());
      r.total.parallel(outer);
      r.total.update().parallel(outer);
    }
    Halide::Func& f = ref_.output;
    const std::vector<Halide::Var> args = f.args();  // the domain's vars, or a general layout's output axes
    Halide::Var flat = args[0];
    for (size_t i = 1; i < args.size(); ++i) {
      Halide::Var fused("ref_fused_" + std::to_string(i));
      f.fuse(flat, args[i], fused);
      flat = fused;
    }
    Halide::Var outer("ref_outer"), inner("ref_inner"), lane("ref_lane");
    f.split(flat, outer, inner, 1 << 16, Halide::TailStrategy::GuardWithIf)
        .parallel(outer)
        .split(inner, inner, lane, 8, Halide::TailStrategy::GuardWithIf)
        .vectorize(lane);
    pipeline_ = Halide::Pipeline(f);
    pipeline_.compile_jit(cpu_jit_target());
  }

  const Pipeline& pipeline() const { return ref_; }
  size_t variables() const { return ref_.vars.size(); }

  // Fills `outputs` (of the pipeline's storage dtype) from `inputs`.
  void run(DType dtype, const Problem& problem, const std::vector<HostTensor>& inputs,
           std::vector<HostTensor>* outputs) {
    outputs->clear();
    for (const auto& dims : problem.output_dims) outputs->push_back(HostTensor::unfilled(dtype, dims));
    for (size_t i = 0; i < inputs.size(); ++i) ref_.inputs[i].set(host_buffer(ref_.storage, inputs[i]));
    std::vector<Halide::Buffer<>> outs;
    for (auto& t : *outputs) outs.push_back(host_buffer(ref_.storage, t));
    pipeline_.realize(Halide::Realization(outs));
  }

 private:
  Pipeline ref_;
  Halide::Pipeline pipeline_;
};

// f32 copies of 16-bit tensors (exact).
std::vector<HostTensor> widened(const std::vector<HostTensor>& in) {
  std::vector<HostTensor> out;
  for (const HostTensor& t : in) {
    HostTensor w = HostTensor::unfilled(DType::kF32, t.dims);
    parallel_chunks(t.elements(), [&](int64_t begin, int64_t end, size_t) {
      for (int64_t i = begin; i < end; ++i) w.set(i, t.get(i));
    });
    out.push_back(std::move(w));
  }
  return out;
}

// How much more an f32 kernel may be off at each element where the reference
// is ill-conditioned: 4x the two evaluations' disagreement there, for a row
// reduction the largest in the row (a reduction's rounding is shared by its row).
std::vector<HostTensor> slack_of(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b,
                                 int64_t row_length) {
  std::vector<HostTensor> out;
  for (size_t t = 0; t < a.size(); ++t) {
    HostTensor s = HostTensor::unfilled(DType::kF32, a[t].dims);
    const int64_t n = a[t].elements();
    const int64_t row = row_length > 0 && n % row_length == 0 ? row_length : 1;
    parallel_chunks(n / row, [&](int64_t first, int64_t last, size_t) {
      for (int64_t r = first; r < last; ++r) {
        float worst = 0;
        for (int64_t i = r * row; i < (r + 1) * row; ++i) {
          const float d = std::fabs(a[t].get(i) - b[t].get(i));
          if (std::isfinite(d)) worst = std::max(worst, d);
        }
        for (int64_t i = r * row; i < (r + 1) * row; ++i) s.set(i, 4.0f * worst);
      }
    });
    out.push_back(std::move(s));
  }
  return out;
}

class CandidateWorkload final : public Workload {
 public:
  CandidateWorkload(const FusionCandidate& c, DType dtype, float magnitude)
      : cand_(c),
        dtype_(dtype),
        magnitude_(magnitude),
        ref_(instantiate(c, dtype, /*f64_reductions=*/true)),
        mix_(op_mix_of(canonical_pipeline_text(c, dtype))) {}

  std::string name() const override { return cand_.name; }
  DType dtype() const override { return dtype_; }

  Problem problem(const std::vector<int64_t>& domain) const override {
    if (domain.size() != ref_.variables())
      throw UserError("shape with " + std::to_string(domain.size()) + " dims does not fit " + cand_.name + " (" +
                      layout_name(cand_.layout) + " layout has " + std::to_string(ref_.variables()) + ")");
    Problem p;
    p.domain = domain;
    p.shape_text = shape_text({domain.rbegin(), domain.rend()});
    for (size_t i = 0; i < cand_.inputs.size(); ++i) p.input_dims.push_back(cand_.input_dims(i, domain));
    for (size_t o = 0; o < cand_.outputs.size(); ++o) p.output_dims.push_back(cand_.output_dims(domain));
    p.mix = mix_;
    return p;
  }

  Tolerance tolerance(const Problem& problem) const override { return tolerance_at(dtype_, problem); }

  // The magnitude applies to full-size inputs (the activations); broadcast
  // weights and biases stay in [-3, 3).
  float input_magnitude(size_t input) const override {
    return input < cand_.inputs.size() && cand_.inputs[input].full() ? magnitude_ : 3.0f;
  }

  std::vector<float> param_values() const override {
    std::vector<float> v;
    for (const auto& p : cand_.params) v.push_back(p.value);
    return v;
  }

  void reference(const Problem& problem, const std::vector<HostTensor>& inputs,
                 std::vector<HostTensor>* outputs) const override {
    ref_.run(dtype_, problem, inputs, outputs);
  }

  // The reference evaluated again at the other precision (f32 math for a
  // reduction's f64 reference, f64 for a pointwise f32 one), both with f32
  // outputs; where the two agree within the f32 tolerance there is no slack.
  void reference_slack(const Problem& problem, const std::vector<HostTensor>& inputs,
                       const std::vector<HostTensor>& reference, std::vector<HostTensor>* slack) const override {
    slack->clear();
    const bool f32 = dtype_ == DType::kF32;
    const std::vector<HostTensor> wide = f32 ? std::vector<HostTensor>{} : widened(inputs);
    const std::vector<HostTensor>& in = f32 ? inputs : wide;
    std::vector<HostTensor> same, other;
    const bool f64 = cand_.reduces() || cand_.general;  // the reference's own math
    if (!f32) evaluator(same_, f64).run(DType::kF32, problem, in, &same);
    evaluator(other_, !f64).run(DType::kF32, problem, in, &other);
    const std::vector<HostTensor>& first = f32 ? reference : same;
    const Tolerance t = tolerance_at(DType::kF32, problem);
    if (compare_outputs(other, first, t).passed()) return;
    *slack = slack_of(first, other, t.row_length);
  }

 private:
  // Row reductions accumulate rounding error with the row's length: the
  // f32 tolerances grow by 1 + sqrt(cols) / 16 (3x at 1024 columns, 17x at
  // 65536), against a reference summed in double; their atol is relative to
  // each row's scale, which a 65536-wide softmax row has far below 1.
  Tolerance tolerance_at(DType dtype, const Problem& problem) const {
    Tolerance t = tolerance_for(dtype);
    if (cand_.reduces() && !problem.domain.empty()) {
      t.row_length = problem.domain[0];
      const double s = 1.0 + std::sqrt(static_cast<double>(problem.domain[0])) / 16.0;
      t.atol *= s;
      if (dtype == DType::kF32) t.rtol *= s;
    }
    // Reductions over axes grow the same way with the elements each sums.
    const auto& axis_reductions = ref_.pipeline().axis_reductions;
    if (cand_.general && !axis_reductions.empty() && !problem.domain.empty()) {
      int64_t count = 1;
      for (int a : axis_reductions.front().reduced) count *= problem.domain.at(a);
      const double s = 1.0 + std::sqrt(static_cast<double>(count)) / 16.0;
      t.atol *= s;
      if (dtype == DType::kF32) t.rtol *= s;
    }
    return t;
  }

  // A second evaluation at f32 storage, built on first use (a JIT compile):
  // `same_` in the reference's own precision (for 16-bit dtypes), `other_` in the other.
  ReferenceEvaluator& evaluator(std::unique_ptr<ReferenceEvaluator>& e, bool f64_math) const {
    if (!e)
      e = std::make_unique<ReferenceEvaluator>(f64_math ? instantiate_f64(cand_, DType::kF32)
                                                        : instantiate(cand_, DType::kF32));
    return *e;
  }

  const FusionCandidate cand_;
  const DType dtype_;
  const float magnitude_;
  // JIT state is mutated by realize(); the workload is used from one thread.
  mutable ReferenceEvaluator ref_;
  mutable std::unique_ptr<ReferenceEvaluator> same_, other_;
  const OpMix mix_;
};

class KernelBuilder final : public Builder {
 public:
  KernelBuilder(const FusionCandidate& c, DType dtype, const ArchLimits& arch)
      : cand_(c), dtype_(dtype), arch_(arch), pipe_(instantiate(c, dtype)) {}

  // Builds in parallel: NVRTC is thread-safe, and each Halide build runs in
  // its own child process.
  std::vector<BuildResult> build(const std::vector<Candidate>& batch) override {
    std::vector<BuildResult> out(batch.size());
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i = next++; i < batch.size(); i = next++) out[i] = build_one(batch[i]);
    };
    const size_t n = std::min<size_t>(batch.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (size_t t = 1; t < n; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    return out;
  }

 private:
  BuildResult build_one(const Candidate& c) {
    BuildResult r;
    const std::string entry = kernel_symbol(cand_, dtype_, arch_.arch, c.backend, c.config);
    try {
      if (c.backend == Backend::kNvrtc) {
        PrintedKernel k;
        {
          // Printing walks shared Halide IR; it is quick, so it is serialized.
          std::lock_guard<std::mutex> lock(print_mutex_);
          k = print_nvrtc_kernel(cand_, pipe_, c.config, entry);
        }
        NvrtcResult nv = compile_cuda_to_cubin(k.source, entry, arch_.arch, c.config.get_or("fast", 0) != 0);
        if (!nv.ok) {
          r.error = nv.log;
          return r;
        }
        r.artifact = k.launch;
        r.artifact.image_kind = ImageKind::kCubin;
        r.artifact.image = std::move(nv.cubin);
        r.artifact.target_sm = arch_.arch.number();
        r.artifact.registers = std::max(0, nv.registers);
        r.artifact.static_shared_bytes = std::max(0, nv.static_shared_bytes);
      } else {
        // Halide's LLVM can abort the process (e.g. on some bf16 code), so
        // it runs in a child process.
        IsolatedBuild b = run_isolated_build(
            [&] { return build_halide_kernel(cand_, dtype_, c.config, arch_, entry); });
        if (!b.ok) {
          r.error = "halide: " + b.error;
          return r;
        }
        r.artifact = std::move(b.artifact);
      }
      r.ok = true;
    } catch (const Halide::Error& e) {
      r.error = std::string("Halide: ") + e.what();
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    return r;
  }

  const FusionCandidate cand_;
  const DType dtype_;
  const ArchLimits arch_;
  Pipeline pipe_;
  std::mutex print_mutex_;
};

}  // namespace

OpMix op_mix_of(const std::string& canonical_text) {
  const auto count = [&](const std::regex& re) {
    return static_cast<int>(std::distance(std::sregex_iterator(canonical_text.begin(), canonical_text.end(), re),
                                          std::sregex_iterator()));
  };
  OpMix m;
  m.reductions = count(std::regex(R"(fk_a?red[0-9]+ = (mean|sum|max|min) over)"));
  // Inputs (in_x_im), reductions (fk_red0), parameters and dtype conversions are no calls.
  m.math_calls = count(std::regex(R"(\b(?!in_|fk_|p_|max\(|min\(|b?float[0-9]+\()[a-z][a-z0-9_]*\()"));
  m.arith = count(std::regex(R"([-+*/]|\b(max|min)\()"));
  return m;
}

std::unique_ptr<Workload> make_candidate_workload(const FusionCandidate& candidate, DType dtype,
                                                  float input_magnitude) {
  return std::make_unique<CandidateWorkload>(candidate, dtype, input_magnitude);
}

std::unique_ptr<Builder> make_kernel_builder(const FusionCandidate& candidate, DType dtype, const ArchLimits& arch) {
  return std::make_unique<KernelBuilder>(candidate, dtype, arch);
}

std::string kernel_symbol(const FusionCandidate& candidate, DType dtype, const Arch& arch, Backend backend,
                          const Config& config) {
  char hash[9];
  std::snprintf(hash, sizeof(hash), "%08x", static_cast<unsigned>(config.hash() & 0xffffffffu));
  return "fusekit_sm" + std::to_string(arch.number()) + "_" + candidate.name + "_" + dtype_name(dtype) + "_" +
         backend_name(backend) + "_" + hash;
}

}  // namespace fusekit
