// KernelArtifact <-> JSON, for passing artifacts out of an isolated build
// process and, later, into manifests. Binary images are base64.
#pragma once

#include <nlohmann/json.hpp>

#include "fusekit/kernel_artifact.h"

namespace fusekit {

nlohmann::json artifact_to_json(const KernelArtifact& artifact);
// Throws UserError naming the field on malformed input.
KernelArtifact artifact_from_json(const nlohmann::json& j);

std::string base64_encode(const std::string& bytes);
std::string base64_decode(const std::string& text);  // throws UserError

}  // namespace fusekit
