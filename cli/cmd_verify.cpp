#include "cli/cmd_verify.h"

#include <cstdio>

#include "cli/verify_package.h"
#include "common/errors.h"
#include "generator/candidate_workload.h"
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
      ("max-elements", po::value<int64_t>()->default_value(int64_t{1} << 27), "--package: skip problems larger than this");
  return o;
}

// Rebuilds the database's winners for an arch and checks them on this GPU
// against the CPU reference (also the way to run winners under
// compute-sanitizer). Exit 1 when any winner fails.
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
  auto db = open_tune_db(existing_db_path(vm, "pass --db FILE"), OpenMode::kMustExist);
  auto measurer = make_gpu_measurer();
  MeasureOptions verify_only;
  verify_only.time = false;
  int checked = 0, failed = 0;
  for (const auto& cand : cands) {
    for (DType dt : dtypes) {
      const std::string hash = pipeline_hash(canonical_pipeline_text(cand, dt));
      RecordFilter f;
      f.arch = arch.arch.name();
      f.dtype = dtype_name(dt);
      f.ok_only = true;
      std::vector<Candidate> winners;
      for (const auto& r : db->all(f)) {
        if (r.pipeline_hash != hash) continue;
        auto best = db->best(r.key());
        if (!best || best->id != r.id) continue;
        Candidate c{parse_backend(r.backend), Config::parse(r.params)};
        bool seen = false;
        for (const auto& w : winners) seen |= (w.backend == c.backend && w.config == c.config);
        if (!seen) winners.push_back(c);
      }
      if (winners.empty()) continue;
      auto wl = make_candidate_workload(cand, dt);
      auto builder = make_kernel_builder(cand, dt, arch);
      auto built = builder->build(winners);
      std::vector<Problem> sized;
      for (const auto& s : sizes_for(vm, cand)) sized.push_back(wl->problem(domain_for(cand, s)));
      const TemplateKind kind = cand.template_kind();
      for (size_t i = 0; i < winners.size(); ++i) {
        // The odd shape, or rows the schedule runs on where it takes some
        // row lengths only (an odd count of its `len`, a multiple of its
        // vector), then each size it can run (as the tuner filters them).
        std::vector<Problem> own = {
            wl->problem(template_verify_domain(kind, winners[i].config, winners[i].backend, cand.odd_domain()))};
        for (const Problem& p : sized)
          if (template_size_violation(kind, winners[i].config, winners[i].backend, p.elements(), p.domain.front())
                  .empty())
            own.push_back(p);
        for (const Problem& p : own) {
          MeasureResult m;
          if (built[i].ok) m = measurer->measure(*wl, p, {{&winners[i], &built[i].artifact}}, verify_only).front();
          else { m.status = RecordStatus::kCompileError; m.error = built[i].error; }
          ++checked;
          const bool ok = m.status == RecordStatus::kOk;
          failed += !ok;
          std::printf("%-22s %-4s %-7s %-48s %-12s %s %s\n", cand.name.c_str(), dtype_name(dt),
                      backend_name(winners[i].backend), winners[i].config.to_string().c_str(), p.shape_text.c_str(),
                      ok ? "ok" : record_status_name(m.status), ok ? "" : m.error.c_str());
        }
      }
    }
  }
  std::printf("%d checks, %d failed\n", checked, failed);
  return failed ? 1 : 0;
}

}  // namespace fusekit
