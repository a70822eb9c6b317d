#include "generator/cublaslt/gemm_points.h"

#include <algorithm>

#include "common/errors.h"
#include "common/shape_text.h"
#include "fusekit/shape_bucket.h"
#include "search/record_fields.h"

namespace fusekit {

const char* gemm_point_backend(const GemmPoint& p) { return p.tail ? "cublaslt+nvrtc" : "cublaslt"; }

std::string gemm_point_params(const GemmPoint& p) {
  std::string s = "rank=" + std::to_string(p.rank) + " " + gemm_plan_text(p.plan);
  if (p.tail) s += " tail: " + p.tail_config.to_string();
  return s;
}

GemmPoint parse_gemm_point(const std::string& backend, const std::string& params) {
  GemmPoint p;
  if (backend != "cublaslt" && backend != "cublaslt+nvrtc")
    throw UserError("record backend '" + backend + "' is not a GEMM backend (cublaslt, cublaslt+nvrtc)");
  p.tail = backend == "cublaslt+nvrtc";
  if (params.rfind("rank=", 0) != 0) throw UserError("GEMM record params '" + params + "' do not start with rank=");
  const size_t space = params.find(' ');
  const std::string rank = params.substr(5, space == std::string::npos ? std::string::npos : space - 5);
  if (rank.empty() || rank.size() > 4 || rank.find_first_not_of("0123456789") != std::string::npos)
    throw UserError("GEMM record rank '" + rank + "' is not a small number");
  p.rank = std::stoi(rank);
  const size_t tail = params.find(" tail: ");
  if (p.tail != (tail != std::string::npos))
    throw UserError("GEMM record of backend " + backend + (p.tail ? " lacks" : " has") + " a tail schedule: '" +
                    params + "'");
  const std::string plan = params.substr(space + 1, tail == std::string::npos ? std::string::npos : tail - space - 1);
  Status st = parse_gemm_plan_text(plan, &p.plan);
  if (!st.ok()) throw UserError(st.message());
  if (p.tail) p.tail_config = Config::parse(params.substr(tail + 7));
  return p;
}

int choose_gemm_winner(const std::vector<GemmPoint>& points, const std::vector<MeasureResult>& results) {
  int best = -1;
  for (size_t i = 0; i < points.size(); ++i)
    if (results[i].status == RecordStatus::kOk && (best < 0 || results[i].median_us < results[best].median_us))
      best = static_cast<int>(i);
  if (best < 0 || points[best].rank == 0) return best;
  for (size_t i = 0; i < points.size(); ++i) {
    const GemmPoint& p = points[i];
    const MeasureResult& r = results[i];
    if (p.rank != 0 || p.tail != points[best].tail || r.status != RecordStatus::kOk) continue;
    if (p.tail && p.tail_config.to_string() != points[best].tail_config.to_string()) continue;
    const MeasureResult& b = results[best];
    const double spread = std::max(r.p80_us - r.p20_us, b.p80_us - b.p20_us);
    if (r.median_us - b.median_us <= spread) return static_cast<int>(i);
  }
  return best;
}

std::string gemm_shape_bucket(const GemmDims& d) {
  return "m<=2^" + std::to_string(shape_bucket_log2(d.m)) + " n=" + std::to_string(d.n) + " k=" + std::to_string(d.k);
}

std::vector<TuningRecord> gemm_records(const GemmCandidate& c, DType dtype, const GemmDims& dims,
                                       const std::vector<GemmPoint>& points, const std::vector<MeasureResult>& results,
                                       const DeviceInfo& device, const Provenance& prov) {
  const std::string text = gemm_canonical_text(c, dtype);
  const std::string hash = pipeline_hash(text);
  std::vector<TuningRecord> out;
  for (size_t i = 0; i < points.size(); ++i) {
    const MeasureResult& m = results[i];
    TuningRecord r;
    r.id = new_record_id();
    r.pipeline_hash = hash;
    r.pipeline_text = text;
    r.pattern = c.name;
    r.dtype = dtype_name(dtype);
    r.shape = shape_text({dims.m, dims.n, dims.k});
    r.shape_bucket = gemm_shape_bucket(dims);
    r.arch = device.arch.name();
    set_run_fields(device, prov, &r);
    r.cuda_version += " cublasLt " + std::to_string(points[i].plan.cublaslt_version);
    r.backend = gemm_point_backend(points[i]);
    r.params = gemm_point_params(points[i]);
    set_measurement(m, &r);
    // Bytes of A, the weights and the output, each once.
    const double bytes = static_cast<double>(dtype_bytes(dtype)) *
                         (dims.m * dims.k + c.accumulators * dims.n * dims.k + dims.m * dims.n);
    if (m.median_us > 0) r.bandwidth_gbps = bytes / (m.median_us * 1e-6) / 1e9;
    r.timestamp = utc_timestamp();
    out.push_back(r);
  }
  return out;
}

}  // namespace fusekit
