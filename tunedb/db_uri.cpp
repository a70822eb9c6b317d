// Telling a server URI from a file path, and masking its password.
#include <string>

#include "tunedb/tune_db.h"

namespace fusekit {

bool is_postgres_uri(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

std::string mask_uri(const std::string& db) {
  if (!is_postgres_uri(db)) return db;
  std::string out = db;
  // userinfo: between "://" and the last '@' before the path or query.
  const size_t start = out.find("://") + 3;
  const size_t end = std::min(out.find('/', start), out.find('?', start));
  const size_t at = out.rfind('@', end == std::string::npos ? std::string::npos : end);
  if (at != std::string::npos && at >= start) {
    const size_t colon = out.find(':', start);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  // A password=... query parameter, up to the next '&'.
  const size_t query = out.find('?');
  for (size_t p = query; p != std::string::npos; p = out.find('&', p + 1)) {
    if (out.compare(p + 1, 9, "password=") != 0) continue;
    const size_t value = p + 10;
    out.replace(value, out.find('&', value) == std::string::npos ? std::string::npos : out.find('&', value) - value,
                "***");
  }
  return out;
}

}  // namespace fusekit
