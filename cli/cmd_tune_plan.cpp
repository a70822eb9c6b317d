// Map: read and check the plan and every size, pick the measurer, then per
// entry the sizes still to tune, tuned in one task with plan-wide progress.
#include "cli/cmd_tune_plan.h"

#include <chrono>
#include <map>
#include <set>
#include <cstdio>

#include "cli/cli_common.h"
#include "cli/cmd_plan.h"
#include "cli/tune_options.h"
#include "cli/tune_shard.h"
#include "common/errors.h"
#include "fusekit/shape_bucket.h"
#include "generator/candidate_workload.h"
#include "generator/halide/halide_backend.h"
#include "generator/nvrtc/nvrtc_compiler.h"
#include "generator/candidates/op_traits.h"
#include "generator/nvrtc/kernel_printer.h"
#include "generator/nvrtc/row_printer.h"
#include "search/tuner.h"

namespace fusekit {
namespace {

struct Job {
  FusionCandidate cand;
  DType dtype;
  std::vector<std::vector<int64_t>> domains;
};

}  // namespace

int cmd_tune_plan(const boost::program_options::variables_map& vm) {
  if (!vm.count("arch")) throw UserError("tune needs --arch, e.g. --arch sm_90; known: " + known_arch_names());
  if (vm.count("expr") || vm.count("pattern")) throw UserError("give --plan, or --pattern/--expr, not both");
  const ArchLimits& arch = require_arch(vm["arch"].as<std::string>());
  const std::string plan_path = vm["plan"].as<std::string>();
  const graph::Plan plan = graph::read_plan_file(plan_path);
  std::vector<Job> jobs;
  for (const auto& e : plan.entries) {
    if (e.sizes.empty())
      throw UserError(plan_path + ": entry '" + e.name + "' has no sizes; plan again with --dim for its symbolic dims");
    Job j{plan_candidate(e), *parse_dtype(e.dtype), {}};
    for (const auto& s : e.sizes) j.domains.push_back(plan_domain(j.cand, s));
    jobs.push_back(std::move(j));
  }
  TunerOptions options = tuner_options(vm);
  const std::vector<Backend> backends = options.backends;
  const std::string db_path = resolve_db_path(vm);
  auto measurer = pick_measurer(arch, vm.count("model") > 0, 0, false);
  auto db = open_tune_db(db_path, OpenMode::kCreate);
  options.provenance = {FUSEKIT_VERSION, halide_version(), nvrtc_version(), host_name()};
  const bool retune = vm.count("retune") > 0;

  size_t total = 0, done = 0, skipped = 0;
  for (const auto& j : jobs) total += j.domains.size();
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  // What the store holds is skipped per size and backend, as plain tunes do.
  const TuneOrigin origin{measurer->device().gpu_name, options.provenance.cuda_version,
                          options.provenance.halide_version, options.provenance.fusekit_version};
  for (const auto& j : jobs) {
    auto workload = make_candidate_workload(j.cand, j.dtype);
    TuneTask task;
    task.workload = workload.get();
    task.pattern = j.cand.name;
    task.pipeline_text = canonical_pipeline_text(j.cand, j.dtype);
    task.pipeline_hash = pipeline_hash(task.pipeline_text);
    task.kind = j.cand.template_kind();
    const std::set<std::string> held =
        retune ? std::set<std::string>{}
               : held_units(*db, j.cand.name, dtype_name(j.dtype), arch.arch.name(), origin);
    std::map<Backend, std::vector<std::vector<int64_t>>> todo;
    for (const auto& d : j.domains) {
      const Problem p = workload->problem(d);
      bool all_held = true;
      for (Backend b : backends)
        if (!held.count(unit_key(task.pipeline_hash, dtype_name(j.dtype), p.shape_text, arch.arch.name(),
                                 backend_name(b)))) {
          todo[b].push_back(d);
          all_held = false;
        }
      if (all_held) {
        ++skipped;
        ++done;
        std::fprintf(stderr, "[%zu/%zu] %s %s %s: in the database, skipped (--retune tunes it again)\n", done, total,
                     j.cand.name.c_str(), dtype_name(j.dtype), p.shape_text.c_str());
      } else {
        task.domains.push_back(d);
      }
    }
    if (task.domains.empty()) continue;
    auto builder = make_kernel_builder(j.cand, j.dtype, arch);
    task.builder = builder.get();
    task.verify_domain = j.cand.odd_domain();
    task.cached_inputs = j.cand.full_inputs();
    task.traits = op_traits(j.cand, j.dtype);
    const size_t here = task.domains.size();
    options.progress = [&](const std::string& line) {
      const double t = elapsed();
      const double frac = (static_cast<double>(done) + 0.5 * here) / static_cast<double>(total);
      std::fprintf(stderr, "[%zu/%zu] %s | %.0fs elapsed, ETA %.0fs\n", done + 1, total, line.c_str(), t,
                   t / frac * (1.0 - frac));
    };
    const std::vector<std::vector<int64_t>> domains = task.domains;
    for (const auto& [b, ds] : todo) {
      task.domains = ds;
      options.backends = {b};
      tune(task, *measurer, *db, arch, options);
    }
    task.domains = domains;
    done += here;
    for (const auto& d : task.domains) {
      const Problem p = workload->problem(d);
      auto best = db->best({task.pipeline_hash, dtype_name(j.dtype), problem_bucket(task.kind, p), arch.arch.name()});
      if (best)
        std::printf("%-48s %-4s %-12s %-7s %10.2f us %s\n", j.cand.name.c_str(), dtype_name(j.dtype), p.shape_text.c_str(),
                    best->backend.c_str(), best->median_us, record_status_name(best->status));
    }
    std::fflush(stdout);
  }
  std::fprintf(stderr, "fusekit: plan %s: %zu entries, %zu sizes (%zu already in %s) in %.0fs\n", plan_path.c_str(),
               jobs.size(), total, skipped, db_path.c_str(), elapsed());
  return 0;
}

}  // namespace fusekit
