// Splitting a tune across N processes: each unit of work (one pipeline,
// dtype, shape, arch and backend) belongs to exactly one shard, by a stable
// hash, so N shards together tune what one unsharded run tunes, once.
#pragma once

#include <cstdint>
#include <string>

namespace fusekit {

// Shard `index` of `count` (0 <= index < count); {0, 1} is the whole.
struct ShardSpec {
  int index = 0;
  int count = 1;
};

// "I/N" -> {I, N}; throws UserError naming the text otherwise.
ShardSpec parse_shard(const std::string& text);

// Whether the unit belongs to the shard: XXH64 of the fields, joined by
// newlines, modulo the count (the same on every machine and build).
bool in_shard(const ShardSpec& shard, const std::string& pipeline_hash, const std::string& dtype,
              const std::string& shape, const std::string& arch, const std::string& backend);

}  // namespace fusekit
