// The built-in catalog of fusion candidates.
#pragma once

#include <string>
#include <vector>

#include "generator/candidates/fusion_candidate.h"

namespace fusekit {

// Every catalog entry, in a stable order.
const std::vector<FusionCandidate>& catalog();
// Throws UserError naming the pattern and listing the known ones.
const FusionCandidate& find_pattern(const std::string& name);

}  // namespace fusekit
