#include "fusekit/status.h"

namespace fusekit {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "kOk";
    case StatusCode::kInvalidArgument: return "kInvalidArgument";
    case StatusCode::kNotSupported: return "kNotSupported";
    case StatusCode::kDriverError: return "kDriverError";
    case StatusCode::kNotFound: return "kNotFound";
    case StatusCode::kInternal: return "kInternal";
  }
  return "kUnknown";
}

std::string Status::to_string() const {
  if (ok()) return "kOk";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace fusekit
