#include "tests/fuzz/fuzz_runner.h"

#include <sstream>

#include "generator/candidate_workload.h"
#include "generator/candidates/expr_parser.h"

namespace fusekit {
namespace {

int slot(DType d) { return d == DType::kF32 ? 0 : d == DType::kF16 ? 1 : 2; }

Candidate first_seed(const FusionCandidate& c, Backend backend, DType dtype) {
  const auto seeds = template_seeds(c.template_kind(), backend, static_cast<int>(dtype_bytes(dtype)));
  return Candidate{backend, seeds.front()};
}

}  // namespace

FuzzOutcome run_fuzz_case(const FuzzExpression& e, DType dtype, const ArchLimits& arch, Measurer* gpu) {
  FuzzOutcome o;
  FusionCandidate c;
  try {
    c = parse_expression(e.source);
    o.parsed = true;
    auto wl = make_candidate_workload(c, dtype);
    const Problem p = wl->problem(c.odd_domain());
    std::vector<HostTensor> in(p.input_dims.size()), out;
    for (size_t i = 0; i < in.size(); ++i) {
      in[i] = HostTensor::make(dtype, p.input_dims[i]);
      wl->fill_input(i, 7, &in[i]);
    }
    wl->reference(p, in, &out);
    o.reference_ok = !out.empty();

    auto builder = make_kernel_builder(c, dtype, arch);
    const std::vector<Candidate> batch = {first_seed(c, Backend::kNvrtc, dtype), first_seed(c, Backend::kHalide, dtype)};
    const std::vector<BuildResult> built = builder->build(batch);
    o.nvrtc_built = built[0].ok;
    o.halide_built = built[1].ok;
    if (!built[0].ok) o.error = "nvrtc: " + built[0].error;
    else if (!built[1].ok) o.error = built[1].error;
    if (gpu) {
      std::vector<MeasureInput> ms;
      for (size_t k = 0; k < 2; ++k)
        if (built[k].ok) ms.push_back({&batch[k], &built[k].artifact});
      MeasureOptions opt;
      opt.time = false;
      const auto res = gpu->measure(*wl, p, ms, opt);
      for (size_t k = 0, r = 0; k < 2; ++k) {
        if (!built[k].ok) continue;
        const bool ok = res[r].status == RecordStatus::kOk;
        if (!ok && o.error.empty()) o.error = std::string(k ? "halide" : "nvrtc") + " verify: " + res[r].error;
        (k ? o.halide_verified : o.nvrtc_verified) = ok;
        ++r;
      }
    }
  } catch (const std::exception& ex) {
    if (o.error.empty()) o.error = ex.what();
  }
  return o;
}

void FuzzTally::add(DType dtype, const FuzzOutcome& o) {
  const int s = slot(dtype);
  ++cases[s];
  nvrtc[s] += o.nvrtc_built;
  halide[s] += o.halide_built;
  reference[s] += o.reference_ok;
  nvrtc_verified[s] += o.nvrtc_verified;
  halide_verified[s] += o.halide_verified;
}

std::string FuzzTally::json() const {
  std::ostringstream s;
  s << "{";
  const char* names[] = {"f32", "f16", "bf16"};
  for (int d = 0; d < 3; ++d)
    s << (d ? ", " : "") << "\"" << names[d] << "\": {\"cases\": " << cases[d] << ", \"nvrtc_built\": " << nvrtc[d]
      << ", \"halide_built\": " << halide[d] << ", \"reference\": " << reference[d]
      << ", \"nvrtc_verified\": " << nvrtc_verified[d] << ", \"halide_verified\": " << halide_verified[d] << "}";
  s << "}";
  return s.str();
}

}  // namespace fusekit
