#include "tunedb/record.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "common/errors.h"
#include "common/shape_text.h"
#include "fusekit/shape_bucket.h"

namespace fusekit {

namespace {
constexpr struct {
  RecordStatus status;
  const char* name;
} kStatusNames[] = {
    {RecordStatus::kOk, "ok"},
    {RecordStatus::kModeled, "modeled"},
    {RecordStatus::kCompileError, "compile_error"},
    {RecordStatus::kLaunchError, "launch_error"},
    {RecordStatus::kVerifyError, "verify_error"},
    {RecordStatus::kTimeout, "timeout"},
    {RecordStatus::kFault, "fault"},
    {RecordStatus::kRevoked, "revoked"},
    {RecordStatus::kPruned, "pruned"},
};
}  // namespace

const char* record_status_name(RecordStatus status) {
  for (const auto& s : kStatusNames)
    if (s.status == status) return s.name;
  return "?";
}

RecordStatus parse_record_status(const std::string& text) {
  for (const auto& s : kStatusNames)
    if (text == s.name) return s.status;
  throw UserError("unknown record status '" + text + "'");
}

std::string new_record_id() {
  static thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(),
                      static_cast<unsigned>(std::chrono::high_resolution_clock::now().time_since_epoch().count())};
    return std::mt19937_64(seq);
  }());
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

std::string utc_timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

#define FUSEKIT_RECORD_FIELDS(X)                                                         \
  X(id) X(pipeline_hash) X(pipeline_text) X(pattern) X(dtype) X(shape) X(shape_bucket)   \
  X(arch) X(gpu_name) X(sm_count) X(driver_version) X(cuda_version) X(halide_version)    \
  X(fusekit_version) X(host) X(backend) X(params) X(error) X(verify_error) X(median_us) \
  X(p20_us) X(p80_us) X(bandwidth_gbps) X(samples) X(timestamp)

bool upgrade_record(TuningRecord* r) {
  if (r->pipeline_text.rfind("layout rows;", 0) != 0 || r->shape_bucket.find(" cols<=") != std::string::npos)
    return false;
  // The shape, outermost first: "ROWSxCOLS".
  const auto shape = parse_shape_text(r->shape);
  if (!shape || shape->size() < 2) return false;
  int64_t elements = 1;
  for (int64_t e : *shape) elements *= e;
  const int64_t cols = shape->back();
  r->shape_bucket = shape_bucket_name(elements, cols);
  return true;
}

void to_json(nlohmann::json& j, const TuningRecord& r) {
  j = nlohmann::json::object();
#define FUSEKIT_PUT(f) j[#f] = r.f;
  FUSEKIT_RECORD_FIELDS(FUSEKIT_PUT)
#undef FUSEKIT_PUT
  j["status"] = record_status_name(r.status);
  j["kernel_hash"] = r.kernel_hash;
  j["row_length"] = r.row_length;
}

int64_t legacy_row_length(const std::string& backend, const std::string& params) {
  if (backend.rfind("cublaslt", 0) == 0) return 0;  // a GEMM's params are its cuBLASLt plan
  const std::string padded = " " + params;
  const size_t at = padded.find(" len=");
  if (at == std::string::npos) return 0;
  return std::strtoll(padded.c_str() + at + 5, nullptr, 10);
}

namespace {
// JSON has no infinity: nlohmann writes a non-finite double (a verification
// ratio of a NaN mismatch is +inf) as null, so null reads back as +inf.
template <typename T>
void read_field(const nlohmann::json& v, T& out) {
  v.get_to(out);
}
// A count too large for int (or a fraction) is refused, not wrapped.
void read_field(const nlohmann::json& v, int& out) {
  if (!v.is_number_integer()) throw std::domain_error("not an integer");
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int>::max())
                             : (v.get<int64_t>() > std::numeric_limits<int>::max() ||
                                v.get<int64_t>() < std::numeric_limits<int>::min()))
    throw std::out_of_range("integer out of range");
  out = v.get<int>();
}
void read_field(const nlohmann::json& v, int64_t& out) {
  if (!v.is_number_integer()) throw std::domain_error("not an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw std::out_of_range("integer out of range");
  out = v.get<int64_t>();
}
void read_field(const nlohmann::json& v, double& out) {
  out = v.is_null() ? std::numeric_limits<double>::infinity() : v.get<double>();
}
}  // namespace

void from_json(const nlohmann::json& j, TuningRecord& r) {
  if (!j.is_object()) throw UserError("record is not a JSON object");
#define FUSEKIT_GET(f)                                                                 \
  if (!j.contains(#f)) throw UserError("record lacks field '" #f "'");                 \
  try {                                                                                \
    read_field(j.at(#f), r.f);                                                         \
  } catch (const std::exception&) {                                                    \
    throw UserError("record field '" #f "' has the wrong type or is out of range: " +  \
                    j.at(#f).dump());                                                  \
  }
  FUSEKIT_RECORD_FIELDS(FUSEKIT_GET)
#undef FUSEKIT_GET
  // Optional: records exported before fusekit kept it.
  if (j.contains("kernel_hash")) {
    if (!j["kernel_hash"].is_string())
      throw UserError("record field 'kernel_hash' has the wrong type: " + j["kernel_hash"].dump());
    r.kernel_hash = j["kernel_hash"].get<std::string>();
  }
  // Optional too: before it, the row length was only a token of params.
  if (j.contains("row_length")) {
    try {
      read_field(j["row_length"], r.row_length);
    } catch (const std::exception&) {
      throw UserError("record field 'row_length' has the wrong type or is out of range: " + j["row_length"].dump());
    }
  } else {
    r.row_length = legacy_row_length(r.backend, r.params);
  }
  if (!j.contains("status") || !j["status"].is_string()) throw UserError("record lacks field 'status'");
  r.status = parse_record_status(j["status"].get<std::string>());
  if (r.id.size() != 32 || r.id.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw UserError("record id '" + r.id + "' is not 32 lowercase hex digits");
}

}  // namespace fusekit
