// `fusekit verify --package DIR`: every kernel an emitted package picks on
// this GPU, launched through the package's own C API, against the Halide CPU
// reference. See verify_package.cpp.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "generator/candidates/fusion_candidate.h"

namespace fusekit {

// Problems over max_elements are skipped (and counted). Returns the exit
// status: 0 when every check passed. Throws UserError for a missing package
// or GPU.
int verify_package(const std::string& dir, int64_t max_elements);

// An odd-sized iteration domain (innermost first) whose element count lies
// in shape bucket k, i.e. 2^(k-1) < n <= 2^k; for a row bucket row_k >= 0
// (row reductions), with a row length in 2^(row_k-1) < cols <= 2^row_k, and
// as many rows (at least one) as keep the count in bucket k.
std::vector<int64_t> odd_domain_in_bucket(const FusionCandidate& cand, int k, int row_k = -1);

// The op a package's manifest names: a catalog entry, a GEMM's tail (laid
// out over [M, N]), else the expression the manifest keeps for an --expr op
// or a plan entry; nullopt when it is none of those.
std::optional<FusionCandidate> package_op(const nlohmann::json& manifest, const std::string& op);

}  // namespace fusekit
