// Exceptions of the tooling (never of the runtime, which returns Status).
//   UserError:     bad input; the message names the value and the fix.
//   InternalError: a bug in fusekit.
#pragma once

#include <stdexcept>
#include <string>

namespace fusekit {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& what) : std::runtime_error(what) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error("internal error: " + what) {}
};

}  // namespace fusekit

#define FUSEKIT_INTERNAL_ASSERT(cond, msg)                                                  \
  do {                                                                                     \
    if (!(cond))                                                                           \
      throw ::fusekit::InternalError(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                     ": " #cond ": " + (msg));                             \
  } while (0)
