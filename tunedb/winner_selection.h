// The ranking every store shares: which of a key's records wins, and (for
// `fusekit build`) which records were used and which passed over, and why.
// Stores fetch a key's records in SQL (key_records); this ranks them, so
// SQLite and PostgreSQL answer the same winner by construction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tunedb/record.h"

namespace fusekit {

// Where records should come from to count in full: the build target's GPU
// and toolchain. An empty field (0 for sm_count) matches every record.
struct RecordOrigin {
  std::string gpu_name;
  int sm_count = 0;
  std::string driver_major;    // "580" of "580.95.05"
  std::string cuda_version;
  std::string halide_version;
  std::string fusekit_version;
  // cuBLASLt's version number ("130100"); compared for GEMM records only
  // (a cuBLASLt backend), since no other kernel calls it.
  std::string cublas_version;
};

// The origin a record was measured at (driver reduced to its major). A GEMM
// record's cuda_version reads "13.0 cublasLt 130100": the toolkit is "13.0"
// and the cuBLASLt version 130100 (from the params' `cublaslt=` where the
// text lacks it).
RecordOrigin origin_of(const TuningRecord& r);
// Whether a record's kernel calls cuBLASLt (backend cublaslt or cublaslt+nvrtc).
bool uses_cublas(const TuningRecord& r);
// How `r` differs from `target`, e.g. "GPU NVIDIA A100 (not NVIDIA H200),
// CUDA 12.4 (not 13.0)" or "cuBLASLt 130000 (not 130100)"; "" when it matches. Modeled records are compared
// by their toolchain only (no GPU measured them).
std::string staleness(const TuningRecord& r, const RecordOrigin& target);
// The leading number of a driver version ("580.95.05" -> "580").
std::string driver_major(const std::string& driver_version);

// A record left out of the ranking and the reason.
struct PassedOver {
  TuningRecord record;
  std::string reason;
};

struct Selection {
  std::optional<TuningRecord> best;
  std::vector<TuningRecord> used;          // the records the winner was ranked among
  std::vector<PassedOver> passed_over;     // the key's other records
};

// Ranks a key's verified records, given in the stores' order: measured
// ("ok") first, then by median_us, timestamp and insertion. Measured beats
// modeled; records matching `target` beat stale ones, which are ranked
// only where none match, and then only those of the closest one origin
// (never several origins in one median). A schedule (backend, shape,
// params) ranks by the median of its records of its newest kernel (records
// of an unknown kernel "" count beside it); ties go to the schedule
// measured more often, then the older record.
Selection select_winner(const std::vector<TuningRecord>& rows, const RecordOrigin& target = {});

}  // namespace fusekit
