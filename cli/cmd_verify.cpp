#include "cli/cmd_verify.h"

#include <cstdio>

#include "cli/verify_package.h"
#include "cli/cli_common.h"
#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "generator/halide/halide_backend.h"
#include "generator/nvrtc/nvrtc_compiler.h"
#include "schedules/row_reduction_template.h"
#include "search/tuner.h"
#include "tunedb/tune_db.h"

namespace fusekit {

po::options_description cmd_verify_options() {
  po::options_description o("verify options (fusekit verify --arch SM [--db FILE] | verify --package DIR)");
  add_arch_option(o, "the arch whose winners to rebuild and check on this GPU");
  add_selection_options(o);
  add_dtype_option(o);
  add_sizes_option(o);
  add_db_option(o);
  o.add_options()
      ("package", po::value<std::string>(), "verify the kernels of this built package through its C API")
      ("max-elements", po::value<int64_t>()->default_value(int64_t{1} << 27), "--package: skip problems larger than this")
      ("dry-run", "--db: report failing winners without revoking them in the database");
  return o;
}

namespace {

// A winner of the database: its schedule and the record that made it win.
struct Winner {
  Candidate candidate;
  TuningRecord record;
};

// The database's distinct winning schedules of one op and dtype on an arch.
std::vector<Winner> db_winners(const TuneDb& db, const FusionCandidate& cand, DType dt, const ArchLimits& arch) {
  const std::string hash = pipeline_hash(canonical_pipeline_text(cand, dt));
  RecordFilter f;
  f.arch = arch.arch.name();
  f.dtype = dtype_name(dt);
  f.ok_only = true;
  std::vector<Winner> winners;
  for (const auto& r : db.all(f)) {
    if (r.pipeline_hash != hash) continue;
    auto best = db.best(r.key());
    if (!best || best->id != r.id) continue;
    Candidate c{parse_backend(r.backend), Config::parse(r.params)};
    bool seen = false;
    for (const auto& w : winners) seen |= (w.candidate.backend == c.backend && w.candidate.config == c.config);
    if (!seen) winners.push_back({c, r});
  }
  return winners;
}

// The problems a winner is checked on: the odd shape, or rows the schedule
// runs on where it takes some row lengths only (an odd count of its `len`, a
// multiple of its vector), then each --sizes size it can run (as the tuner
// filters them).
std::vector<Problem> winner_problems(const FusionCandidate& cand, const Workload& wl, const Candidate& c,
                                     const std::vector<Problem>& sized) {
  const TemplateKind kind = cand.template_kind();
  std::vector<Problem> own = {wl.problem(template_verify_domain(kind, c.config, c.backend, cand.odd_domain()))};
  for (const Problem& p : sized)
    if (template_size_violation(kind, c.config, c.backend, p.elements(), p.domain.front()).empty()) own.push_back(p);
  return own;
}

// The record that takes a winner's kernel out of the ranking on this GPU.
TuningRecord revocation(const Winner& w, const BuildResult& built, const MeasureResult& m, const DeviceInfo& dev) {
  TuningRecord r = w.record;
  r.id = new_record_id();
  r.status = RecordStatus::kRevoked;
  r.error = std::string(record_status_name(m.status)) + " at " + m.error;
  r.gpu_name = dev.gpu_name;
  r.sm_count = dev.sm_count;
  r.driver_version = dev.driver_version;
  r.fusekit_version = FUSEKIT_VERSION;
  r.halide_version = halide_version();
  r.cuda_version = nvrtc_version();
  r.host = host_name();
  if (built.ok) r.kernel_hash = kernel_hash(built.artifact);
  r.median_us = r.p20_us = r.p80_us = r.bandwidth_gbps = 0.0;
  r.samples = 0;
  r.timestamp = utc_timestamp();
  return r;
}

}  // namespace

// Rebuilds the database's winners for an arch and checks them on this GPU
// against the CPU reference (also the way to run winners under
// compute-sanitizer); a winner that fails is revoked in the database (unless
// --dry-run), so builds stop taking it. Exit 1 when any winner fails.
int cmd_verify(const po::variables_map& vm, const std::vector<std::string>& args) {
  if (!args.empty()) throw UserError("verify takes no positional arguments, got '" + args[0] + "'");
  if (vm.count("package")) {
    const int64_t max_elements = vm["max-elements"].as<int64_t>();
    if (max_elements < 1) throw UserError("--max-elements " + std::to_string(max_elements) + " must be at least 1");
    return verify_package(vm["package"].as<std::string>(), max_elements);
  }
  if (!vm.count("arch")) throw UserError("verify needs --arch, e.g. --arch sm_90");
  const ArchLimits& arch = require_arch(vm["arch"].as<std::string>());
  const auto cands = selected_candidates(vm);
  const auto dtypes = parse_dtypes(vm["dtype"].as<std::vector<std::string>>());
  for (const auto& cand : cands)
    for (const auto& s : sizes_for(vm, cand)) domain_for(cand, s);
  const bool mark = !vm.count("dry-run");
  auto db = open_tune_db(existing_db_path(vm, "pass --db FILE"), mark ? OpenMode::kCreate : OpenMode::kMustExist);
  auto measurer = make_gpu_measurer();
  MeasureOptions verify_only;
  verify_only.time = false;
  int checked = 0, failed = 0;
  std::vector<TuningRecord> revoked;
  for (const auto& cand : cands) {
    for (DType dt : dtypes) {
      const std::vector<Winner> winners = db_winners(*db, cand, dt, arch);
      if (winners.empty()) continue;
      auto wl = make_candidate_workload(cand, dt);
      std::vector<Candidate> schedules;
      for (const auto& w : winners) schedules.push_back(w.candidate);
      const auto built = make_kernel_builder(cand, dt, arch)->build(schedules);
      std::vector<Problem> sized;
      for (const auto& s : sizes_for(vm, cand)) sized.push_back(wl->problem(domain_for(cand, s)));
      for (size_t i = 0; i < winners.size(); ++i) {
        bool winner_ok = true;
        for (const Problem& p : winner_problems(cand, *wl, schedules[i], sized)) {
          MeasureResult m;
          if (built[i].ok) m = measurer->measure(*wl, p, {{&schedules[i], &built[i].artifact}}, verify_only).front();
          else { m.status = RecordStatus::kCompileError; m.error = built[i].error; }
          ++checked;
          const bool ok = m.status == RecordStatus::kOk;
          failed += !ok;
          std::printf("%-22s %-4s %-7s %-48s %-12s %s %s\n", cand.name.c_str(), dtype_name(dt),
                      backend_name(schedules[i].backend), schedules[i].config.to_string().c_str(), p.shape_text.c_str(),
                      ok ? "ok" : record_status_name(m.status), ok ? "" : m.error.c_str());
          if (!ok && winner_ok) {
            winner_ok = false;
            m.error = p.shape_text + ": " + m.error;
            revoked.push_back(revocation(winners[i], built[i], m, measurer->device()));
          }
        }
      }
    }
  }
  if (mark && !revoked.empty()) db->commit(revoked);
  std::printf("%d checks, %d failed", checked, failed);
  if (!revoked.empty())
    std::printf("; %zu winners %s", revoked.size(), mark ? "revoked in the database" : "would be revoked (--dry-run)");
  std::printf("\n");
  return failed ? 1 : 0;
}

}  // namespace fusekit
