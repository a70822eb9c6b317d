// Stable work split for sharded tuning (see shard.h).
#include "search/shard.h"

#include <xxhash.h>

#include <cstdlib>

#include "common/errors.h"

namespace fusekit {

ShardSpec parse_shard(const std::string& text) {
  const std::string bad = "malformed --shard '" + text + "'; give INDEX/COUNT with 0 <= INDEX < COUNT, e.g. --shard 0/4";
  const size_t slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) throw UserError(bad);
  for (size_t i = 0; i < text.size(); ++i)
    if (i != slash && (text[i] < '0' || text[i] > '9')) throw UserError(bad);
  if (slash > 6 || text.size() - slash - 1 > 6) throw UserError(bad);
  ShardSpec s{std::atoi(text.substr(0, slash).c_str()), std::atoi(text.substr(slash + 1).c_str())};
  if (s.count < 1 || s.index >= s.count) throw UserError(bad);
  return s;
}

bool in_shard(const ShardSpec& shard, const std::string& pipeline_hash, const std::string& dtype,
              const std::string& shape, const std::string& arch, const std::string& backend) {
  if (shard.count <= 1) return true;
  const std::string unit = pipeline_hash + '\n' + dtype + '\n' + shape + '\n' + arch + '\n' + backend;
  return XXH64(unit.data(), unit.size(), 0) % static_cast<uint64_t>(shard.count) == static_cast<uint64_t>(shard.index);
}

}  // namespace fusekit
