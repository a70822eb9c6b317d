#include "schedules/backend.h"

#include "common/errors.h"

namespace fusekit {

const char* backend_name(Backend backend) { return backend == Backend::kNvrtc ? "nvrtc" : "halide"; }

Backend parse_backend(const std::string& text) {
  if (text == "nvrtc") return Backend::kNvrtc;
  if (text == "halide") return Backend::kHalide;
  throw UserError("unknown backend '" + text + "'; known: nvrtc halide");
}

}  // namespace fusekit
