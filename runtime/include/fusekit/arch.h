// GPU architecture ids (compute capabilities), e.g. sm_86 = {8, 6}.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fusekit {

struct Arch {
  int major = 0;
  int minor = 0;

  int number() const { return major * 10 + minor; }   // 86
  std::string name() const;                           // "sm_86"
  bool operator==(const Arch& o) const { return major == o.major && minor == o.minor; }
  bool operator!=(const Arch& o) const { return !(*this == o); }
  bool operator<(const Arch& o) const { return number() < o.number(); }
};

// Parses "sm_86" (also "sm86", "86", "8.6"); nullopt when malformed.
std::optional<Arch> parse_arch(const std::string& text);

}  // namespace fusekit
