// GEMM entries of a package: the database's winner per GEMM candidate,
// dtype, arch and bucket of M, and the generated code that serves them (the
// fusekit_gemm_desc table, typed entries fusekit_<name>_<dtype>(A, B, ...,
// out, M, N, K, stream) and their route through fusekit_launch). A tail
// winner's kernel is an ordinary variant of the kernel table, under the op
// name of the candidate's epilogue.
#pragma once

#include <string>
#include <vector>

#include "fusekit/arch.h"
#include "generator/cublaslt/gemm_points.h"
#include "tunedb/tune_db.h"

namespace fusekit {

struct GemmEntry {
  const GemmCandidate* gemm = nullptr;
  DType dtype = DType::kF16;
  int sm = 0;
  int m_log2 = 0;
  int64_t n = 0, k = 0;
  GemmPoint point;
  std::string record_id;
};

// Winners of every measured bucket, ranked against `target` as kernel
// records are (select_winner: a record of another cuBLASLt version ranks
// below matching ones); one line per op, arch and bucket saying what was
// used and passed over goes to `selections`. UserError for a record whose
// params do not parse. Candidates without records contribute nothing.
std::vector<GemmEntry> collect_gemm_entries(const TuneDb& db, const std::vector<GemmCandidate>& gemms,
                                            const std::vector<Arch>& archs, const RecordOrigin& target,
                                            std::vector<std::string>* selections);

// The generated source holding kGemms and fusekit_kernels_gemm_package().
std::string write_gemm_table(const std::vector<GemmEntry>& entries);
// Declarations for the header (one per candidate and dtype).
std::string write_gemm_declarations(const std::vector<GemmEntry>& entries);
// For the API source: `helpers` go inside its anonymous namespace (after
// finish()), `entries` inside its extern "C" block, and `route` at the top of
// fusekit_launch (a GEMM op by name: inputs A, B[, B2], operands; one
// output; domain {M, N, K}).
struct GemmApiText {
  std::string helpers, entries, route;
};
GemmApiText write_gemm_api(const std::vector<GemmEntry>& entries);

}  // namespace fusekit
