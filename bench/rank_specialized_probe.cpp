// Offline check of `tune --guided-rank-specialized` on recorded times: at
// each recorded H200 row shape of a held-out op, a model trained without
// the op ranks the NVRTC row seeds (the guided search's first batch) as
// they are and as built for the row length; printed per shape, for each
// ranking's top seed, the recorded time of it generic and of its build for
// the length (the leader's end), over the shape's best ("-": no run timed
// it), and a tally over the shapes.
//
//   rank_specialized_probe MODEL_DIR RECORDS.jsonl OP...
//
// MODEL_DIR/OP.json: `fusekit model train --hold-out OP --out ...`;
// RECORDS.jsonl: `fusekit db export` of the records it was trained on.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "common/errors.h"
#include "cost_model/learned_cost_model.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "schedules/row_reduction_template.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // op, dtype, shape

struct Recorded {
  std::map<Key, std::map<std::string, double>> us;  // per shape: params -> fastest median
  std::map<Key, double> best;
};

Recorded read_records(const std::string& path) {
  Recorded r;
  for (const TuningRecord& rec : read_jsonl(path)) {
    if (rec.status != RecordStatus::kOk || rec.backend != "nvrtc" || rec.gpu_name != "NVIDIA H200") continue;
    const Key k{rec.pattern, rec.dtype, rec.shape};
    const double us = rec.median_us;
    auto [it, fresh] = r.us[k].emplace(rec.params, us);
    if (!fresh) it->second = std::min(it->second, us);
    auto [b, first] = r.best.emplace(k, us);
    if (!first) b->second = std::min(b->second, us);
  }
  return r;
}

// The seed the model ranks first, each seed taken as `as(seed)`.
template <typename As>
Config top_seed(const CostModel& model, const Problem& p, size_t bytes, const std::vector<Config>& seeds, As as) {
  std::vector<Candidate> cands;
  for (const Config& s : seeds) cands.push_back({Backend::kNvrtc, as(s)});
  const std::vector<double> t = model.predict(p, bytes, cands);
  return seeds[static_cast<size_t>(std::min_element(t.begin(), t.end()) - t.begin())];
}

// The recorded regret of `c` in %, or -1 where no run timed it.
double regret(const std::map<std::string, double>& us, const Config& c, double best) {
  const auto it = us.find(c.to_string());
  return it == us.end() ? -1.0 : 100.0 * (it->second / best - 1.0);
}

std::string regret_text(double r) {
  if (r < 0) return "      -";
  char t[32];
  std::snprintf(t, sizeof(t), "%6.1f%%", r);
  return t;
}

// Over the shapes where both rankings' top seeds were timed built for the
// length: how often ranking as built did better, worse (by over 0.5 %) or
// the same, and how often each came within 3 %.
struct Tally {
  int shapes = 0, both = 0, better = 0, worse = 0, within_generic = 0, within_built = 0;
  void add(double generic, double built) {
    ++shapes;
    if (generic < 0 || built < 0) return;
    ++both;
    better += built < generic - 0.5;
    worse += built > generic + 0.5;
    within_generic += generic <= 3.0;
    within_built += built <= 3.0;
  }
};

// The NVRTC row seeds, spelled as the space completes them (as records are).
std::vector<Config> row_seeds(const ArchLimits& arch, int bytes) {
  const ParamSpace space = template_space(TemplateKind::kRowReduction, arch, Backend::kNvrtc, bytes, 1);
  std::vector<Config> seeds;
  for (const Config& s : template_seeds(TemplateKind::kRowReduction, Backend::kNvrtc, bytes))
    if (space.legal(s)) seeds.push_back(space.complete(s));
  return seeds;
}

void probe_op(const std::string& dir, const Recorded& rec, const std::string& op, Tally* tally) {
  const auto model = LearnedCostModel::load(dir + "/" + op + ".json");
  const ArchLimits& arch = require_arch("sm_90");
  for (const auto& [key, us] : rec.us) {
    const auto& [pattern, dtype, shape] = key;
    if (pattern != op || (dtype != "f32" && dtype != "bf16")) continue;
    const DType dt = dtype == "bf16" ? DType::kBF16 : DType::kF32;
    const int bytes = dt == DType::kBF16 ? 2 : 4;
    int64_t rows = 0, cols = 0;
    if (std::sscanf(shape.c_str(), "%ldx%ld", &rows, &cols) != 2) continue;
    const Problem p = make_candidate_workload(find_pattern(op), dt)->problem({cols, rows});
    const std::vector<Config> seeds = row_seeds(arch, bytes);
    auto built = [&](const Config& c) { return RowReductionTemplate::specialize(c, cols); };
    const Config generic = top_seed(*model, p, bytes, seeds, [](const Config& c) { return c; });
    const Config as_built = top_seed(*model, p, bytes, seeds, built);
    const double best = rec.best.at(key);
    const double generic_end = regret(us, built(generic), best), built_end = regret(us, built(as_built), best);
    tally->add(generic_end, built_end);
    std::printf("%-18s %-4s %-12s generic-ranked %s %s | built-ranked %s %s | best %.1f us\n", op.c_str(),
                dtype.c_str(), shape.c_str(), regret_text(regret(us, generic, best)).c_str(),
                regret_text(generic_end).c_str(), regret_text(regret(us, as_built, best)).c_str(),
                regret_text(built_end).c_str(), best);
  }
}

}  // namespace
}  // namespace fusekit

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: rank_specialized_probe MODEL_DIR RECORDS.jsonl OP...\n");
    return 2;
  }
  try {
    const fusekit::Recorded rec = fusekit::read_records(argv[2]);
    std::printf("per shape: the top seed's recorded time generic and built for the length, over the best\n");
    fusekit::Tally t;
    for (int i = 3; i < argc; ++i) fusekit::probe_op(argv[1], rec, argv[i], &t);
    std::printf("%d shapes, %d with both builds timed: ranked as built better at %d, worse at %d, the same at %d; "
                "within 3 %%: %d generic-ranked, %d built-ranked\n",
                t.shapes, t.both, t.better, t.worse, t.both - t.better - t.worse, t.within_generic, t.within_built);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank_specialized_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
