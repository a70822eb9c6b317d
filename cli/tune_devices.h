// `fusekit tune --devices all|0,1,...`: one child tune per GPU, each with
// its own measuring worker and CUDA context, compiling on the host's cores
// and committing to the one database; the work is split as --shard splits
// it across hosts, into sub-shards of this host's shard, handed to the GPUs
// as they come free. A child that dies (its GPU lost) has its sub-shard
// redone on another GPU, which resumes past what it committed.
#pragma once

#include <string>
#include <vector>

#include "search/shard.h"

namespace fusekit {

// "all" (every GPU that `count` reports) or a list of distinct ordinals
// "0,1,3"; throws UserError naming the text otherwise.
std::vector<int> parse_devices(const std::string& text, int (*count)());

// The `parts` sub-shards of `host`: unit u is in host iff it is in exactly
// one of them ((I + N*k) / (N*parts) for k < parts).
std::vector<ShardSpec> sub_shards(const ShardSpec& host, int parts);

// `args`: the tune command line after `tune` with --devices, --shard and
// --shard-count removed. Runs the sub-shards on `devices`; returns tune's
// exit status (the worst of the children's 0 or 1), or throws UserError when
// every GPU was lost with work left.
int tune_on_devices(const std::vector<int>& devices, const ShardSpec& host, const std::vector<std::string>& args);

// The tune arguments (argv after `tune`) without the options that
// tune_on_devices sets per child.
std::vector<std::string> child_tune_args(const std::vector<std::string>& args);

}  // namespace fusekit
