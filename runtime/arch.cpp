#include "fusekit/arch.h"

#include <cctype>

namespace fusekit {

std::string Arch::name() const { return "sm_" + std::to_string(number()); }

std::optional<Arch> parse_arch(const std::string& text) {
  std::string s = text;
  if (s.rfind("sm_", 0) == 0) s = s.substr(3);
  else if (s.rfind("sm", 0) == 0) s = s.substr(2);
  if (s.size() == 3 && s[1] == '.') s = std::string{s[0], s[2]};
  if (s.size() != 2 && s.size() != 3) return std::nullopt;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  int v = std::stoi(s);
  Arch a{v / 10, v % 10};
  if (a.major < 1) return std::nullopt;
  return a;
}

}  // namespace fusekit
