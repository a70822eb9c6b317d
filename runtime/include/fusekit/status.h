// Status: the runtime's error currency. Nothing under runtime/ throws; every
// call that can fail returns a Status (CUTLASS's Status, Halide's
// halide_error_code_t).
#pragma once

#include <string>
#include <utility>

namespace fusekit {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // null pointer, bad size, unknown name
  kNotSupported,      // no code for this device / dtype / shape
  kDriverError,       // a CUDA driver call failed
  kNotFound,          // libcuda or a kernel entry missing
  kInternal,          // a bug in fusekit
};

// The name of a code, e.g. "kInvalidArgument".
const char* status_code_name(StatusCode code);

// A code plus a human-readable message; ok() when code is kOk.
class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "kDriverError: cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX (...)".
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace fusekit
