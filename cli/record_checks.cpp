#include "cli/record_checks.h"

#include <cmath>

#include "common/errors.h"
#include "common/shape_text.h"
#include "fusekit/dtype.h"
#include "generator/cublaslt/gemm_points.h"
#include "schedules/arch_limits.h"
#include "schedules/param_space.h"
#include "schedules/row_reduction_template.h"

namespace fusekit {
namespace {

std::string time_violation(const char* field, double v) {
  if (!std::isfinite(v) || v < 0)
    return std::string("field '") + field + "' is " + std::to_string(v) + "; times and rates are finite and >= 0";
  return "";
}

// Elements of the largest tensor: the product of the dims, or a GEMM's
// (M x N x K) largest of A, B and the output.
std::string size_violation(const TuningRecord& r, const std::vector<int64_t>& shape) {
  auto over = [](int64_t a, int64_t b) { return b > 0 && a > kMaxElements / b; };
  const std::string bad = "field 'shape' is '" + r.shape + "', more than " + std::to_string(kMaxElements) + " elements";
  if (r.backend.rfind("cublaslt", 0) == 0 && shape.size() == 3) {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    return over(m, n) || over(m, k) || over(n, k) ? bad + " in one of its matrices" : "";
  }
  int64_t total = 1;
  for (int64_t d : shape) {
    if (over(d, total)) return bad;
    total *= d;
  }
  return "";
}

}  // namespace

std::string record_violation(const TuningRecord& r) {
  if (!parse_dtype(r.dtype)) return "field 'dtype' is '" + r.dtype + "'; known: f32 f16 bf16";
  const auto arch = parse_arch(r.arch);
  if (!arch || !find_arch_limits(*arch) || arch->name() != r.arch)
    return "field 'arch' is '" + r.arch + "'; known: " + known_arch_names();
  if (r.backend != "nvrtc" && r.backend != "halide" && r.backend != "cublaslt" && r.backend != "cublaslt+nvrtc")
    return "field 'backend' is '" + r.backend + "'; known: nvrtc halide cublaslt cublaslt+nvrtc";
  if (r.status == RecordStatus::kPruned)
    return "field 'status' is 'pruned', which the search only tells itself; pruned candidates are never records";
  // A build failure holds for every size, so the tuner records it at shape "any".
  const bool any_shape = r.shape == "any" && r.status != RecordStatus::kOk && r.status != RecordStatus::kModeled;
  const auto shape = any_shape ? std::optional<std::vector<int64_t>>(std::vector<int64_t>{}) : parse_shape_text(r.shape);
  if (!shape) return "field 'shape' is '" + r.shape + "'; a shape is positive integers joined by x, e.g. 4096x1024";
  if (auto bad = size_violation(r, *shape); !bad.empty()) return bad;
  if (r.pipeline_hash.empty() || r.pipeline_hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    return "field 'pipeline_hash' is '" + r.pipeline_hash + "'; it is lowercase hex digits";
  if (r.sm_count < 0 || r.sm_count > 100000)
    return "field 'sm_count' is " + std::to_string(r.sm_count) + "; it is 0 (unknown) to 100000";
  if (r.samples < 0 || r.samples > 100000000)
    return "field 'samples' is " + std::to_string(r.samples) + "; it is 0 to 100000000";
  for (const auto& [field, v] : {std::pair<const char*, double>{"median_us", r.median_us}, {"p20_us", r.p20_us},
                                 {"p80_us", r.p80_us}, {"bandwidth_gbps", r.bandwidth_gbps}})
    if (auto bad = time_violation(field, v); !bad.empty()) return bad;
  if (std::isnan(r.verify_error) || r.verify_error < 0)
    return "field 'verify_error' is " + std::to_string(r.verify_error) + "; it is >= 0";
  if ((r.status == RecordStatus::kOk || r.status == RecordStatus::kModeled) && r.median_us <= 0)
    return std::string("a '") + record_status_name(r.status) + "' record needs a positive median_us, not " +
           std::to_string(r.median_us);
  if (r.status == RecordStatus::kOk && (r.samples < 1 || r.verify_error > 1))
    return "an 'ok' record needs samples >= 1 and verify_error <= 1";
  try {
    // A GEMM record's params are its cuBLASLt plan, checked by the GEMM parser.
    if (r.backend.rfind("cublaslt", 0) == 0) {
      parse_gemm_point(r.backend, r.params);
      return r.row_length == 0 ? "" : "field 'row_length' is " + std::to_string(r.row_length) + "; a GEMM has none (0)";
    }
    const Config config = Config::parse(r.params);
    if (config.to_string() != r.params)
      return "field 'params' is '" + r.params + "', not canonical (sorted name=value pairs)";
    if (const int64_t len = RowReductionTemplate::fixed_row_length(config); len != r.row_length)
      return "field 'row_length' is " + std::to_string(r.row_length) + " but params '" + r.params + "' " +
             (len ? "are compiled for length " + std::to_string(len) : std::string("are generic over it")) +
             "; row_length is the params' len (0 when they have none)";
  } catch (const UserError& e) {
    return "field 'params' is '" + r.params + "': " + e.what();
  }
  return "";
}

}  // namespace fusekit
