// What a built package dispatches to: its manifest's variants (which kernel
// each shape bucket takes on each arch) and the fallback ladder for a few
// sample calls, answered by the runtime's own select_variant.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fusekit {

// Reads DIR/share/fusekit_kernels/manifest.json. Throws UserError naming the
// folder when it is not a package `fusekit build` wrote, or naming the field
// a variant lacks.
nlohmann::json read_package_manifest(const std::string& dir);

// {archs, variants, notes, ladder}: the ladder holds, per op and dtype, calls
// at the top of a few of its buckets, one past the largest, and one with
// misaligned pointers, on each packaged arch and one arch it was not built
// for, each with the arch step, the shape step and the variant taken (or
// the runtime's message when none fits).
nlohmann::json package_view(const nlohmann::json& manifest, const std::string& dir);

}  // namespace fusekit
