// Which units of a tune this process runs: its shard (--shard, or the
// scheduler's array index) and what the store already holds.
#pragma once

#include <set>
#include <string>

#include "search/shard.h"
#include "tunedb/tune_db.h"

namespace fusekit {

// The scheduler's variables, read by main() and passed down; "" where unset.
struct ShardEnvironment {
  std::string slurm_array_task_id;
  std::string slurm_array_task_count;
  std::string slurm_array_task_min;   // arrays may start at another index than 0
  std::string job_completion_index;   // Kubernetes Indexed Job
};

// --shard I/N where given; else a Slurm array's task among its count; else
// a Kubernetes completion index among --shard-count; else the whole. A
// shard flag of "" and a count of 0 mean unset. Throws UserError naming
// the variable or flag that does not make a shard.
ShardSpec resolve_shard(const std::string& shard_flag, int shard_count, const ShardEnvironment& env);

// The toolchain and GPU a unit's records must share to count as held.
struct TuneOrigin {
  std::string gpu_name;
  std::string cuda_version;
  std::string halide_version;
  std::string fusekit_version;
};

// One unit of work: pipeline, dtype, shape, arch and backend.
std::string unit_key(const std::string& pipeline_hash, const std::string& dtype, const std::string& shape,
                     const std::string& arch, const std::string& backend);

// The units `db` holds records of (any status but a compile error, which
// has no shape) from `origin`, among a pattern's records at one dtype and
// arch: a rerun skips them.
std::set<std::string> held_units(const TuneDb& db, const std::string& pattern, const std::string& dtype,
                                 const std::string& arch, const TuneOrigin& origin);

}  // namespace fusekit
