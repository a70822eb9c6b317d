// Shard resolution and held-work lookup for `fusekit tune` (see tune_shard.h).
#include "cli/tune_shard.h"

#include <cstdlib>

#include "common/errors.h"

namespace fusekit {
namespace {

// A non-negative integer, or -1.
long parse_index(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::atol(text.c_str());
}

}  // namespace

ShardSpec resolve_shard(const std::string& shard_flag, int shard_count, const ShardEnvironment& env) {
  if (!shard_flag.empty()) {
    if (shard_count != 0) throw UserError("give --shard I/N or --shard-count N, not both");
    return parse_shard(shard_flag);
  }
  if (!env.slurm_array_task_id.empty() && !env.slurm_array_task_count.empty()) {
    const long id = parse_index(env.slurm_array_task_id);
    const long count = parse_index(env.slurm_array_task_count);
    const long min = env.slurm_array_task_min.empty() ? 0 : parse_index(env.slurm_array_task_min);
    if (id < 0 || count < 1 || min < 0 || id < min || id - min >= count)
      throw UserError("SLURM_ARRAY_TASK_ID=" + env.slurm_array_task_id + " (min " +
                      (env.slurm_array_task_min.empty() ? "0" : env.slurm_array_task_min) +
                      ") is not a task of SLURM_ARRAY_TASK_COUNT=" + env.slurm_array_task_count +
                      "; submit with --array=0-(N-1) or pass --shard I/N");
    return {static_cast<int>(id - min), static_cast<int>(count)};
  }
  if (!env.job_completion_index.empty()) {
    const long index = parse_index(env.job_completion_index);
    if (shard_count < 1)
      throw UserError("JOB_COMPLETION_INDEX=" + env.job_completion_index +
                      " is set but not how many shards there are: pass --shard-count N (the Job's completions)");
    if (index < 0 || index >= shard_count)
      throw UserError("JOB_COMPLETION_INDEX=" + env.job_completion_index + " is not below --shard-count " +
                      std::to_string(shard_count));
    return {static_cast<int>(index), shard_count};
  }
  if (shard_count != 0)
    throw UserError("--shard-count " + std::to_string(shard_count) +
                    " needs JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); elsewhere pass --shard I/N");
  return {};
}

std::string unit_key(const std::string& pipeline_hash, const std::string& dtype, const std::string& shape,
                     const std::string& arch, const std::string& backend) {
  return pipeline_hash + '\n' + dtype + '\n' + shape + '\n' + arch + '\n' + backend;
}

std::set<std::string> held_units(const TuneDb& db, const std::string& pattern, const std::string& dtype,
                                 const std::string& arch, const TuneOrigin& origin) {
  RecordFilter f;
  f.pattern = pattern;
  f.dtype = dtype;
  f.arch = arch;
  std::set<std::string> out;
  for (const auto& r : db.all(f))
    if (r.status != RecordStatus::kCompileError && r.gpu_name == origin.gpu_name &&
        r.cuda_version == origin.cuda_version && r.halide_version == origin.halide_version &&
        r.fusekit_version == origin.fusekit_version)
      out.insert(unit_key(r.pipeline_hash, r.dtype, r.shape, r.arch, r.backend));
  return out;
}

}  // namespace fusekit
