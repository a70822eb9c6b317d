// The code generators a schedule can be built by.
#pragma once

#include <string>

namespace fusekit {

enum class Backend { kNvrtc, kHalide };
const char* backend_name(Backend backend);
// Throws UserError for anything but "nvrtc" or "halide".
Backend parse_backend(const std::string& text);

}  // namespace fusekit
