// Test helper: the message parse_expression throws for `src`, or
// "(no error)".
#pragma once

#include <string>

#include "common/errors.h"
#include "generator/candidates/expr_parser.h"

namespace fusekit {

inline std::string parse_error(const std::string& src) {
  try {
    parse_expression(src);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace fusekit
