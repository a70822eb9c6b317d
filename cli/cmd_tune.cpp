#include "cli/cmd_tune.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "cli/cmd_model.h"
#include "cli/cmd_tune_plan.h"
#include "cli/tune_shard.h"
#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/op_traits.h"
#include "generator/halide/halide_backend.h"
#include "generator/nvrtc/nvrtc_compiler.h"
#include "fusekit/shape_bucket.h"
#include "search/tuner.h"
#include "tunedb/tune_db.h"

#ifndef FUSEKIT_VERSION
#define FUSEKIT_VERSION "0.0.0"
#endif

namespace fusekit {

po::options_description cmd_tune_options() {
  po::options_description o("tune options");
  add_arch_option(o, "target architecture: sm_70 sm_75 sm_80 sm_86 sm_89 sm_90 (required)");
  add_selection_options(o);
  add_dtype_option(o);
  add_sizes_option(o);
  add_db_option(o);
  add_backend_option(o);
  o.add_options()
      ("budget", po::value<int>()->default_value(24), "candidates per backend and workload")
      ("specialize", po::value<int>()->default_value(2),
       "row reductions on a GPU: build each timed row length's N fastest schedules, its N fastest whose "
       "cached row fits it exactly, and of its 4N fastest N others that fit more warps per SM so built, again for "
       "that length (len=L) and time them too; 0: generic schedules only")
      ("hint-twins", po::value<int>()->default_value(3),
       "pointwise ops on a GPU: time each size's N fastest NVRTC schedules without load hints again with "
       "hint=2 (evict_last loads; sm_80+); 0: off")
      ("model", "rank with the analytic model even if a GPU of the arch is present")
      ("search", po::value<std::string>()->default_value("sample"),
       "sample: the seeds, the analytic model's favourites and a random sample, `budget` of them; guided: the "
       "cost model's favourites in batches of 4, retrained between batches, until a batch improves on nothing")
      ("cost-model", po::value<std::string>(),
       "a learned model from `fusekit model train`: guides --search guided (default: the one beside --db), and "
       "without a GPU of the arch gives the modeled times")
      ("seed", po::value<int>()->default_value(1), "random seed for sampling")
      ("shard", po::value<std::string>(), "tune only this part I/N of the work (default: a Slurm array task's)")
      ("shard-count", po::value<int>()->default_value(0),
       "tune as shard $JOB_COMPLETION_INDEX of N (a Kubernetes Indexed Job's completions)")
      ("retune", "tune again what the database holds for this toolchain and GPU")
      ("plan", po::value<std::string>(), "tune every entry of a plan from `fusekit plan` at every size");
  return o;
}

namespace {

// The measurer: the GPU when it is the requested arch, else the analytic model.
std::unique_ptr<Measurer> pick_measurer(const po::variables_map& vm, const ArchLimits& arch,
                                        const std::shared_ptr<CostModel>& learned) {
  std::unique_ptr<Measurer> measurer;
  std::string why_model;
  if (vm.count("model")) {
    why_model = "--model given";
  } else {
    try {
      measurer = make_gpu_measurer();
      if (measurer->device().arch != arch.arch) {
        why_model = "the GPU here is " + measurer->device().gpu_name + " (" + measurer->device().arch.name() + ")";
        measurer.reset();
      }
    } catch (const UserError& e) {
      why_model = e.what();
    }
  }
  if (!measurer) {
    measurer = learned ? make_model_measurer(arch, learned, "learned " + arch.example_gpu) : make_model_measurer(arch);
    std::fprintf(stderr, "fusekit: no %s GPU to measure on (%s); compiling every candidate for %s and ranking with "
                         "the %s model; records are stored as 'modeled'\n",
                 arch.arch.name().c_str(), why_model.c_str(), arch.arch.name().c_str(),
                 learned ? "learned" : "analytic");
  } else {
    std::fprintf(stderr, "fusekit: measuring on %s (%s, %d SMs, driver %s)\n", measurer->device().gpu_name.c_str(),
                 measurer->device().arch.name().c_str(), measurer->device().sm_count,
                 measurer->device().driver_version.c_str());
  }
  return measurer;
}

// The scheduler's array index, read here at the command line's edge only.
ShardEnvironment shard_environment() {
  auto var = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  return {var("SLURM_ARRAY_TASK_ID"), var("SLURM_ARRAY_TASK_COUNT"), var("SLURM_ARRAY_TASK_MIN"),
          var("JOB_COMPLETION_INDEX")};
}

// One line for a key that has no usable record: its records' statuses and
// the nearest miss (the failed record closest to passing verification).
std::string no_kernel_summary(const TuneDb& db, const TuneKey& key, const std::string& op, const std::string& shape) {
  RecordFilter f;
  f.dtype = key.dtype;
  f.arch = key.arch;
  std::map<std::string, int> statuses;
  const TuningRecord* nearest = nullptr;
  const auto records = db.all(f);
  for (const auto& r : records) {
    if (r.pipeline_hash != key.pipeline_hash || r.shape_bucket != key.shape_bucket) continue;
    ++statuses[record_status_name(r.status)];
    if (!nearest || (r.status == RecordStatus::kVerifyError &&
                     (nearest->status != RecordStatus::kVerifyError || r.verify_error < nearest->verify_error)))
      nearest = &r;
  }
  std::string line = op + " " + key.dtype + " " + shape + ":";
  if (statuses.empty()) return line + " no candidate was built or measured (every schedule was pruned for this size)";
  for (const auto& [name, n] : statuses) line += " " + std::to_string(n) + " " + name;
  std::string why = nearest->error.substr(0, nearest->error.find('\n'));
  if (why.size() > 300) why = why.substr(0, 300) + "...";
  return line + "; nearest miss: " + nearest->backend + " '" + nearest->params + "': " + why;
}

}  // namespace

int cmd_tune(const po::variables_map& vm, const std::vector<std::string>& args) {
  if (!args.empty()) throw UserError("tune takes no positional arguments, got '" + args[0] + "'");
  if (vm.count("plan")) return cmd_tune_plan(vm);
  if (!vm.count("arch")) throw UserError("tune needs --arch, e.g. --arch sm_90; known: " + known_arch_names());
  const ArchLimits& arch = require_arch(vm["arch"].as<std::string>());
  const std::vector<FusionCandidate> cands = selected_candidates(vm);
  const std::vector<DType> dtypes = parse_dtypes(vm["dtype"].as<std::vector<std::string>>());
  for (const auto& cand : cands)
    for (const auto& s : sizes_for(vm, cand)) domain_for(cand, s);  // every shape fits before anything is opened
  std::vector<Backend> backends;
  for (const auto& b : split_list(vm["backend"].as<std::vector<std::string>>())) backends.push_back(parse_backend(b));
  if (backends.empty()) throw UserError("--backend is empty; give nvrtc, halide or both");
  TunerOptions options;
  options.backends = backends;
  options.budget = static_cast<size_t>(int_at_least(vm, "budget", 1, "at least 1"));
  options.specialize = static_cast<size_t>(int_at_least(vm, "specialize", 0, "0 (off) or more"));
  options.hint_twins = static_cast<size_t>(int_at_least(vm, "hint-twins", 0, "0 (off) or more"));
  options.seed = static_cast<uint64_t>(vm["seed"].as<int>());
  const std::string db_path = resolve_db_path(vm);
  const ShardSpec shard = resolve_shard(vm.count("shard") ? vm["shard"].as<std::string>() : "",
                                        vm["shard-count"].as<int>(), shard_environment());
  const bool retune = vm.count("retune") > 0;

  const std::string search = vm["search"].as<std::string>();
  if (search != "sample" && search != "guided")
    throw UserError("--search '" + search + "' is not a search; give sample or guided");
  const std::shared_ptr<CostModel> learned = tune_cost_model(vm, db_path, arch);
  if (search == "guided") options.guide = learned ? learned : std::shared_ptr<CostModel>(make_analytic_cost_model(arch));
  std::unique_ptr<Measurer> measurer = pick_measurer(vm, arch, learned);
  // Records a server does not take are spooled beside the default database.
  auto db = open_tune_db(db_path, OpenMode::kCreate,
                         (std::filesystem::path(default_db_path()).parent_path() / "spool").string());
  if (shard.count > 1) std::fprintf(stderr, "fusekit: shard %d of %d\n", shard.index, shard.count);
  options.provenance = {FUSEKIT_VERSION, halide_version(), nvrtc_version(), host_name()};

  const size_t total = cands.size() * dtypes.size();
  size_t done = 0;
  struct : TuneSummary {
    size_t skipped = 0;  // units the store held already
  } all;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<std::string> without_kernel;
  for (const auto& cand : cands) {
    for (DType dt : dtypes) {
      auto workload = make_candidate_workload(cand, dt);
      auto builder = make_kernel_builder(cand, dt, arch);
      TuneTask task;
      task.workload = workload.get();
      task.builder = builder.get();
      task.pattern = cand.name;
      task.pipeline_text = canonical_pipeline_text(cand, dt);
      task.pipeline_hash = pipeline_hash(task.pipeline_text);
      const std::vector<SizeSpec> sizes = sizes_for(vm, cand);
      for (const auto& s : sizes) task.domains.push_back(domain_for(cand, s));
      task.verify_domain = cand.odd_domain();
      task.kind = cand.template_kind();
      task.cached_inputs = cand.full_inputs();
      task.traits = op_traits(cand, dt);
      options.progress = [&](const std::string& line) {
        const double t = elapsed();
        const double frac = (static_cast<double>(done) + 0.5) / static_cast<double>(total);
        std::fprintf(stderr, "[%zu/%zu] %s | %.0fs elapsed, ETA %.0fs\n", done + 1, total, line.c_str(), t,
                     t / frac * (1.0 - frac));
      };
      // Per backend, the sizes of this shard that the store lacks from this
      // toolchain and GPU (all of them with --retune).
      const std::set<std::string> held =
          retune ? std::set<std::string>{}
                 : held_units(*db, cand.name, dtype_name(dt), arch.arch.name(),
                              {measurer->device().gpu_name, options.provenance.cuda_version,
                               options.provenance.halide_version, options.provenance.fusekit_version});
      const std::vector<std::vector<int64_t>> domains = task.domains;
      for (Backend b : backends) {
        task.domains.clear();
        for (const auto& d : domains) {
          const std::string shape = workload->problem(d).shape_text;
          if (!in_shard(shard, task.pipeline_hash, dtype_name(dt), shape, arch.arch.name(), backend_name(b))) continue;
          if (held.count(unit_key(task.pipeline_hash, dtype_name(dt), shape, arch.arch.name(), backend_name(b)))) {
            ++all.skipped;
            continue;
          }
          task.domains.push_back(d);
        }
        if (task.domains.empty()) continue;
        options.backends = {b};
        TuneSummary s = tune(task, *measurer, *db, arch, options);
        all.records += s.records;
        all.measured += s.measured;
        all.modeled += s.modeled;
        all.failed += s.failed;
        all.pruned += s.pruned;
      }
      ++done;
      // Winner per size, as a summary line.
      for (const auto& size : sizes) {
        Problem p = workload->problem(domain_for(cand, size));
        // Another shard's sizes, or held ones, are not this run's to judge.
        bool mine = false;
        for (Backend b : backends)
          mine |= in_shard(shard, task.pipeline_hash, dtype_name(dt), p.shape_text, arch.arch.name(), backend_name(b));
        if (!mine) continue;
        const TuneKey key{task.pipeline_hash, dtype_name(dt), problem_bucket(task.kind, p), arch.arch.name()};
        auto best = db->best(key);
        if (best)
          std::printf("%-22s %-4s %-12s %-7s %-40s %10.2f us %8.1f GB/s %s\n", cand.name.c_str(), dtype_name(dt),
                      p.shape_text.c_str(), best->backend.c_str(), best->params.c_str(), best->median_us,
                      best->bandwidth_gbps, record_status_name(best->status));
        else
          without_kernel.push_back(no_kernel_summary(*db, key, cand.name, p.shape_text));
      }
      std::fflush(stdout);
    }
  }
  std::fprintf(stderr,
               "fusekit: %zu records written to %s (%zu verified and timed, %zu modeled, %zu failed, %zu pruned by "
               "size; %zu shapes x backends held already%s) in %.0fs\n",
               all.records, mask_uri(db_path).c_str(), all.measured, all.modeled, all.failed, all.pruned, all.skipped,
               all.skipped ? ", skipped: --retune tunes them again" : "", elapsed());
  if (without_kernel.empty()) return 0;
  std::fprintf(stderr, "fusekit: %zu requested op/dtype/size%s ended without a usable kernel:\n", without_kernel.size(),
               without_kernel.size() == 1 ? "" : "s");
  for (const auto& line : without_kernel) std::fprintf(stderr, "  %s\n", line.c_str());
  return kExitNoKernel;
}

}  // namespace fusekit
