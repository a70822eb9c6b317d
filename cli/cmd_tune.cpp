#include "cli/cmd_tune.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "cli/cmd_model.h"
#include "cli/cmd_tune_plan.h"
#include "cli/tune_devices.h"
#include "cli/tune_options.h"
#include "cli/tune_shard.h"
#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/op_traits.h"
#include "generator/halide/halide_backend.h"
#include "generator/nvrtc/nvrtc_compiler.h"
#include "fusekit/shape_bucket.h"
#include "search/measure_worker.h"
#include "search/tuner.h"
#include "tunedb/tune_db.h"

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
       "sample: the seeds, the analytic model's favourites and a random sample, `budget` of them; guided: each "
       "timed shape's favourite of the cost model (among the seeds in the first batch), timed at that shape, and "
       "one random schedule per batch timed at every shape, retrained between batches; a shape stops after two "
       "of its batches gain nothing beyond its spread (or at `budget`)")
      ("guided-picks", po::value<int>()->default_value(1),
       "--search guided: N, each shape's own N favourites per batch; 0, the favourites are shared, each timed at "
       "every shape, until a batch improves no shape (more timings: docs/architecture.md)")
      ("guided-rank-specialized",
       "--search guided, row ops on a GPU: the model ranks each schedule as built for the shape's row length, "
       "as the search's leaders end up (not yet measured against the default)")
      ("cost-model", po::value<std::string>(),
       "a learned model from `fusekit model train`: guides --search guided (default: the one beside --db), and "
       "without a GPU of the arch gives the modeled times")
      ("seed", po::value<int>()->default_value(1), "random seed for sampling")
      ("shard", po::value<std::string>(), "tune only this part I/N of the work (default: a Slurm array task's)")
      ("shard-count", po::value<int>()->default_value(0),
       "tune as shard $JOB_COMPLETION_INDEX of N (a Kubernetes Indexed Job's completions)")
      ("retune", "tune again what the database holds for this toolchain and GPU")
      ("launch-deadline", po::value<double>()->default_value(20.0),
       "seconds a measuring worker may go without word (plus 20x a timed block's expected time) before its "
       "kernel is recorded as a timeout and the worker restarted")
      ("timing", po::value<std::string>()->default_value("issued"),
       "queued: each timed block of launches waits behind a kernel the host releases once the block is issued, "
       "so they run back to back; issued: they run as the host issues them (times of the two ways do not mix "
       "at a few microseconds)")
      ("device", po::value<int>(), "measure on this GPU (an ordinal; default 0, falling back to the model)")
      ("devices", po::value<std::string>(),
       "tune on several GPUs of this host at once, one measuring worker each: all, or ordinals such as 0,1")
      ("plan", po::value<std::string>(), "tune every entry of a plan from `fusekit plan` at every size");
  return o;
}

namespace {

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
// Candidates that failed to build (shape 'any') or at the odd shape every
// candidate is verified on first (`verify_shape`) count too: they never
// reached the key's shape.
std::string no_kernel_summary(const TuneDb& db, const TuneKey& key, const std::string& op, const std::string& shape,
                              const std::string& verify_shape) {
  RecordFilter f;
  f.dtype = key.dtype;
  f.arch = key.arch;
  std::map<std::string, int> statuses;
  const TuningRecord* nearest = nullptr;
  const auto records = db.all(f);
  for (const auto& r : records) {
    if (r.pipeline_hash != key.pipeline_hash) continue;
    if (r.shape_bucket != key.shape_bucket && r.shape != "any" && r.shape != verify_shape) continue;
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

// What a --pattern/--expr tune asks, checked before anything is opened.
struct TuneRequest {
  const ArchLimits* arch = nullptr;
  std::vector<FusionCandidate> cands;
  std::vector<DType> dtypes;
  TunerOptions options;
  std::string db_path;
  ShardSpec shard;
  bool retune = false;
  bool guided = false;  // --search guided
};

TuneRequest tune_request(const po::variables_map& vm) {
  if (!vm.count("arch")) throw UserError("tune needs --arch, e.g. --arch sm_90; known: " + known_arch_names());
  TuneRequest req;
  req.arch = &require_arch(vm["arch"].as<std::string>());
  req.cands = selected_candidates(vm);
  req.dtypes = parse_dtypes(vm["dtype"].as<std::vector<std::string>>());
  for (const auto& cand : req.cands)
    for (const auto& s : sizes_for(vm, cand)) domain_for(cand, s);  // every shape fits before anything is opened
  req.options = tuner_options(vm);
  req.db_path = resolve_db_path(vm);
  req.shard = resolve_shard(vm.count("shard") ? vm["shard"].as<std::string>() : "", vm["shard-count"].as<int>(),
                            shard_environment());
  req.retune = vm.count("retune") > 0;
  const std::string search = vm["search"].as<std::string>();
  if (search != "sample" && search != "guided")
    throw UserError("--search '" + search + "' is not a search; give sample or guided");
  req.guided = search == "guided";
  return req;
}

// --devices: one child tune per GPU, each measuring on its own.
int tune_on_devices_of(const po::variables_map& vm, const TuneRequest& req) {
  if (vm.count("model")) throw UserError("--devices measures on GPUs; --model ranks without one: give one of them");
  if (vm.count("device")) throw UserError("give --devices or --device, not both");
  // The store's schema is made once here, not raced by the children.
  open_tune_db(req.db_path, OpenMode::kCreate);
  const std::vector<int> devices = parse_devices(vm["devices"].as<std::string>(), [] {
    return worker_device_count(worker_argv(0));
  });
  return tune_on_devices(devices, req.shard, command_args());
}

// Everything one tune process tuned, and what ended without a kernel.
struct TuneTotals : TuneSummary {
  size_t skipped = 0;  // units the store held already
  std::vector<std::string> without_kernel;
  void add(const TuneSummary& s) {
    records += s.records;
    measured += s.measured;
    modeled += s.modeled;
    failed += s.failed;
    pruned += s.pruned;
  }
};

// One op in one dtype at the sizes asked for.
struct TuneUnit {
  std::unique_ptr<Workload> workload;
  std::unique_ptr<Builder> builder;
  std::vector<SizeSpec> sizes;
  TuneTask task;
};

TuneUnit tune_unit(const po::variables_map& vm, const FusionCandidate& cand, DType dt, const ArchLimits& arch) {
  TuneUnit u{make_candidate_workload(cand, dt), make_kernel_builder(cand, dt, arch), sizes_for(vm, cand), {}};
  TuneTask& task = u.task;
  task.workload = u.workload.get();
  task.builder = u.builder.get();
  task.pattern = cand.name;
  task.pipeline_text = canonical_pipeline_text(cand, dt);
  task.pipeline_hash = pipeline_hash(task.pipeline_text);
  for (const auto& s : u.sizes) task.domains.push_back(domain_for(cand, s));
  task.verify_domain = cand.odd_domain();
  task.kind = cand.template_kind();
  task.cached_inputs = cand.full_inputs();
  task.traits = op_traits(cand, dt);
  return u;
}

bool in_my_shard(const TuneRequest& req, const TuneTask& task, DType dt, const std::string& shape, Backend b) {
  return in_shard(req.shard, task.pipeline_hash, dtype_name(dt), shape, req.arch->arch.name(), backend_name(b));
}

// Per backend, tunes the sizes of this shard that the store lacks from this
// toolchain and GPU (all of them with --retune).
void tune_backends(const TuneRequest& req, TuneUnit& u, DType dt, Measurer& measurer, TuneDb& db,
                   TunerOptions options, TuneTotals* all) {
  const ArchLimits& arch = *req.arch;
  TuneTask& task = u.task;
  const std::set<std::string> held =
      req.retune ? std::set<std::string>{}
                 : held_units(db, task.pattern, dtype_name(dt), arch.arch.name(),
                              {measurer.device().gpu_name, options.provenance.cuda_version,
                               options.provenance.halide_version, options.provenance.fusekit_version});
  const std::vector<std::vector<int64_t>> domains = task.domains;
  for (Backend b : req.options.backends) {
    task.domains.clear();
    for (const auto& d : domains) {
      const std::string shape = u.workload->problem(d).shape_text;
      if (!in_my_shard(req, task, dt, shape, b)) continue;
      if (held.count(unit_key(task.pipeline_hash, dtype_name(dt), shape, arch.arch.name(), backend_name(b)))) {
        ++all->skipped;
        continue;
      }
      task.domains.push_back(d);
    }
    if (task.domains.empty()) continue;
    options.backends = {b};
    all->add(tune(task, measurer, db, arch, options));
  }
}

// Winner per size of this shard, as a summary line; a size without one goes
// to all->without_kernel. Another shard's sizes are not this run's to judge.
void report_winners(const TuneRequest& req, const FusionCandidate& cand, DType dt, const TuneUnit& u,
                    const TuneDb& db, TuneTotals* all) {
  const TuneTask& task = u.task;
  for (const auto& size : u.sizes) {
    Problem p = u.workload->problem(domain_for(cand, size));
    bool mine = false;
    for (Backend b : req.options.backends) mine |= in_my_shard(req, task, dt, p.shape_text, b);
    if (!mine) continue;
    const TuneKey key{task.pipeline_hash, dtype_name(dt), problem_bucket(task.kind, p), req.arch->arch.name()};
    auto best = db.best(key);
    if (best)
      std::printf("%-22s %-4s %-12s %-7s %-40s %10.2f us %8.1f GB/s %s\n", cand.name.c_str(), dtype_name(dt),
                  p.shape_text.c_str(), best->backend.c_str(), best->params.c_str(), best->median_us,
                  best->bandwidth_gbps, record_status_name(best->status));
    else
      all->without_kernel.push_back(
          no_kernel_summary(db, key, cand.name, p.shape_text, u.workload->problem(task.verify_domain).shape_text));
  }
  std::fflush(stdout);
}

int report_totals(const TuneRequest& req, const TuneTotals& all, double seconds) {
  std::fprintf(stderr,
               "fusekit: %zu records written to %s (%zu verified and timed, %zu modeled, %zu failed, %zu pruned by "
               "size; %zu shapes x backends held already%s) in %.0fs\n",
               all.records, mask_uri(req.db_path).c_str(), all.measured, all.modeled, all.failed, all.pruned,
               all.skipped, all.skipped ? ", skipped: --retune tunes them again" : "", seconds);
  if (all.without_kernel.empty()) return 0;
  std::fprintf(stderr, "fusekit: %zu requested op/dtype/size%s ended without a usable kernel:\n",
               all.without_kernel.size(), all.without_kernel.size() == 1 ? "" : "s");
  for (const auto& line : all.without_kernel) std::fprintf(stderr, "  %s\n", line.c_str());
  return kExitNoKernel;
}

}  // namespace

int cmd_tune(const po::variables_map& vm, const std::vector<std::string>& args) {
  if (!args.empty()) throw UserError("tune takes no positional arguments, got '" + args[0] + "'");
  if (vm.count("plan") && (vm.count("devices") || vm.count("device")))
    throw UserError("--plan tunes on GPU 0; --devices and --device are for --pattern and --expr tunes");
  if (vm.count("plan")) return cmd_tune_plan(vm);
  TuneRequest req = tune_request(vm);
  const ArchLimits& arch = *req.arch;
  const std::shared_ptr<LearnedCostModel> learned = tune_cost_model(vm, req.db_path, arch);
  if (req.guided)
    req.options.guide = learned ? learned : std::shared_ptr<CostModel>(make_analytic_cost_model(arch));
  if (vm.count("devices")) return tune_on_devices_of(vm, req);
  if (vm.count("device") && vm.count("model")) throw UserError("--device measures on a GPU; --model without one");
  const int device = vm.count("device") ? int_at_least(vm, "device", 0, "a GPU ordinal (0 or more)") : 0;
  std::unique_ptr<Measurer> measurer = pick_measurer(arch, vm.count("model") > 0, device, vm.count("device") > 0, learned);
  // Records a server does not take are spooled beside the default database.
  auto db = open_tune_db(req.db_path, OpenMode::kCreate,
                         (std::filesystem::path(default_db_path()).parent_path() / "spool").string());
  if (req.shard.count > 1) std::fprintf(stderr, "fusekit: shard %d of %d\n", req.shard.index, req.shard.count);
  TunerOptions options = req.options;
  // A learned model of this arch tells row-length builds apart; one that
  // falls back on the analytic model for it does not.
  options.specialize_modeled = learned && learned->knows_arch();
  options.provenance = {FUSEKIT_VERSION, halide_version(), nvrtc_version(), host_name()};

  const size_t total = req.cands.size() * req.dtypes.size();
  size_t done = 0;
  TuneTotals all;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  options.progress = [&](const std::string& line) {
    const double t = elapsed();
    const double frac = (static_cast<double>(done) + 0.5) / static_cast<double>(total);
    std::fprintf(stderr, "[%zu/%zu] %s | %.0fs elapsed, ETA %.0fs\n", done + 1, total, line.c_str(), t,
                 t / frac * (1.0 - frac));
  };
  for (const auto& cand : req.cands) {
    for (DType dt : req.dtypes) {
      TuneUnit unit = tune_unit(vm, cand, dt, arch);
      tune_backends(req, unit, dt, *measurer, *db, options, &all);
      ++done;
      report_winners(req, cand, dt, unit, *db, &all);
    }
  }
  return report_totals(req, all, elapsed());
}

}  // namespace fusekit
