// TuningRecord: one measured (or modeled, or failed) candidate. Records are
// append-only and carry a globally unique id, so merging databases from
// different machines is an idempotent union.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace fusekit {

// Outcome of one candidate. Failures are data, not aborts.
enum class RecordStatus {
  kOk,             // verified and timed on a GPU
  kModeled,        // compiled; time is the analytic estimate, never measured
  kCompileError,   // backend could not build it
  kLaunchError,    // driver refused to load or launch it
  kVerifyError,    // ran, but disagrees with the CPU reference
  kTimeout,        // did not finish in time
  kFault,          // faulted the GPU context or killed its measuring worker
  kRevoked,        // a winner that failed `fusekit verify --db` later: its kernel stops ranking
  kPruned,         // illegal at every timed size, never run (search feedback only, never stored)
};
const char* record_status_name(RecordStatus status);
// Throws UserError for an unknown name.
RecordStatus parse_record_status(const std::string& text);

// The part of a record that decides which records compete (best(key)).
struct TuneKey {
  std::string pipeline_hash;   // canonical hash of the pipeline text
  std::string dtype;           // "f32"
  std::string shape_bucket;    // "n<=2^20"
  std::string arch;            // "sm_90"
};

struct TuningRecord {
  std::string id;              // 32 hex digits, random, globally unique
  // What was tuned.
  std::string pipeline_hash;
  std::string pipeline_text;   // canonical text of the Halide pipeline
  std::string pattern;         // catalog name or "expr"
  std::string dtype;
  std::string shape;           // "67108864" or "4096x1024" (outermost first)
  std::string shape_bucket;
  // Where.
  std::string arch;
  std::string gpu_name;
  int sm_count = 0;
  std::string driver_version;
  std::string cuda_version;    // toolkit (NVRTC) version
  std::string halide_version;
  std::string fusekit_version;
  std::string host;
  // How.
  std::string backend;         // "nvrtc" | "halide"
  std::string params;          // canonical Config text
  // The row length the schedule was compiled for, 0 when it is generic over
  // it (schedules/row_reduction_template.h, `len`): the stores filter on it.
  int64_t row_length = 0;
  // The built kernel (16 hex digits of a hash of its image and entry), ""
  // when unknown (no build, or a record from before fusekit kept it). The
  // same params print another kernel after a change to the printer: a
  // schedule's records of an older kernel are not its current time.
  std::string kernel_hash;
  // Result.
  RecordStatus status = RecordStatus::kOk;
  std::string error;           // compile log, driver error, verify detail
  double verify_error = 0.0;   // max |got-ref| / (atol + rtol |ref|); <= 1 passes
  double median_us = 0.0;
  double p20_us = 0.0;
  double p80_us = 0.0;
  double bandwidth_gbps = 0.0; // bytes moved / median
  int samples = 0;
  std::string timestamp;       // ISO 8601 UTC

  TuneKey key() const { return {pipeline_hash, dtype, shape_bucket, arch}; }
};

// The row length of a record written before the field existed, when only
// its params named it (a " len=N" token of a row schedule); 0 otherwise.
int64_t legacy_row_length(const std::string& backend, const std::string& params);

// A fresh random 128-bit id in hex.
std::string new_record_id();
// Current UTC time, ISO 8601.
std::string utc_timestamp();

// Brings a record from an older fusekit up to date; true when it changed.
// Row reductions (pipeline text "layout rows; ...") bucketed by element
// count alone get the row length added from their shape ("8192x4096" ->
// "n<=2^25 cols<=2^12"); the measurement itself is untouched.
bool upgrade_record(TuningRecord* r);

void to_json(nlohmann::json& j, const TuningRecord& r);
// Throws UserError naming the field when a required field is missing or mistyped.
void from_json(const nlohmann::json& j, TuningRecord& r);

}  // namespace fusekit
