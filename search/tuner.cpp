#include "search/tuner.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "fusekit/shape_bucket.h"
#include "schedules/general_layout_template.h"
#include "schedules/row_reduction_template.h"
#include "search/record_fields.h"

namespace fusekit {
namespace {

int resident_warps(const ArchLimits& arch, const KernelArtifact& a) {
  if (a.registers <= 0) return 0;
  return resident_warps_per_sm(arch, a.block[0] * a.block[1] * a.block[2], a.registers,
                               a.shared_bytes + a.static_shared_bytes);
}

// `c` with Inductor's load hints (hint=2), if it has none and the space
// allows them (NVRTC on sm_80+).
std::optional<Config> hint2_twin(const Config& c, const ParamSpace& space) {
  if (c.get_or("hint", 0) != 0) return std::nullopt;
  Config twin = c;
  twin.set("hint", 2);
  if (!space.legal(twin)) return std::nullopt;
  return twin;
}

}  // namespace

std::string kernel_hash(const KernelArtifact& a) {
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  XXH64_update(st, a.entry.data(), a.entry.size());
  XXH64_update(st, "", 1);  // the entry's end
  XXH64_update(st, a.image.data(), a.image.size());
  const unsigned long long h = XXH64_digest(st);
  XXH64_freeState(st);
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", h);
  return text;
}

std::vector<Candidate> model_ranking(const std::vector<Candidate>& space, const std::vector<Problem>& problems,
                                     size_t bytes_per_element, const ArchLimits& arch) {
  const auto model = make_analytic_cost_model(arch);
  std::vector<std::vector<size_t>> orders;
  for (const Problem& p : problems) {
    const std::vector<double> t = model->predict(p, bytes_per_element, space);
    std::vector<size_t> order(space.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t[a] < t[b]; });
    orders.push_back(std::move(order));
  }
  std::vector<Candidate> out;
  std::vector<bool> taken(space.size(), false);
  for (size_t rank = 0; rank < space.size() && out.size() < space.size(); ++rank)
    for (const auto& order : orders)
      if (!taken[order[rank]]) {
        taken[order[rank]] = true;
        out.push_back(space[order[rank]]);
      }
  return out;
}

std::vector<Candidate> order_row_seeds(const std::vector<Candidate>& seeds, const std::vector<int64_t>& row_lengths) {
  std::vector<int64_t> lengths;
  for (int64_t l : row_lengths)
    if (std::find(lengths.begin(), lengths.end(), l) == lengths.end()) lengths.push_back(l);
  std::vector<std::vector<Candidate>> fits(lengths.size());
  std::vector<Candidate> rest;
  for (const Candidate& c : seeds) {
    const auto at = std::find(lengths.begin(), lengths.end(), RowReductionTemplate::cached_row(c.config));
    (at == lengths.end() ? rest : fits[at - lengths.begin()]).push_back(c);
  }
  std::vector<Candidate> out;
  for (size_t rank = 0; out.size() + rest.size() < seeds.size(); ++rank)
    for (const auto& f : fits)
      if (rank < f.size()) out.push_back(f[rank]);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

std::vector<size_t> schedules_to_specialize(const std::vector<TimedSchedule>& timed, int64_t cols, size_t n,
                                            const std::vector<int>& specialized_warps) {
  std::vector<size_t> out;
  auto taken = [&](size_t k) { return std::find(out.begin(), out.end(), k) != out.end(); };
  auto take = [&](size_t k) {
    if (!taken(k)) out.push_back(k);
  };
  // The fastest.
  for (size_t k = 0; k < timed.size() && k < n; ++k) take(k);
  // The fastest exact fits: there the constant length removes the most
  // (every guard, the fallback), and registers with them.
  for (size_t k = 0, fits = 0; k < timed.size() && fits < n; ++k)
    if (RowReductionTemplate::cached_row(timed[k].config) == cols) {
      take(k);
      ++fits;
    }
  // The fastest that the constant length lets an SM hold more of: a
  // generic kernel held back by its registers ranks too low for the lists
  // above (bf16 layernorm 4096x16384's winner, 74 registers generic and 58
  // specialized: generic, it ranked third and fifth in two runs, behind
  // schedules that were both the fastest and the fastest exact fits). N
  // more than the lists above took: where the fastest gain warps too (bf16
  // rmsnorm 4096x16384's staged schedules, 40 to 31 registers), counting
  // them left the 512-thread register schedule behind them unspecialized.
  for (size_t k = 0, gains = 0; k < timed.size() && k < 4 * n && k < specialized_warps.size() && gains < n; ++k)
    if (!taken(k) && timed[k].resident_warps > 0 && specialized_warps[k] > timed[k].resident_warps) {
      take(k);
      ++gains;
    }
  return out;
}

int register_capped_blocks(const ArchLimits& arch, int threads, int registers, int shared_bytes) {
  if (registers <= 0) return 0;
  const int warps = (threads + 31) / 32;
  const int now = resident_warps_per_sm(arch, threads, registers, shared_bytes) / warps;
  const int free = resident_warps_per_sm(arch, threads, 0, shared_bytes) / warps;
  return now < free ? now + 1 : 0;
}

int capped_twin_blocks(const ArchLimits& arch, const Config& config, const KernelArtifact& built, int element_bytes,
                       int cached_inputs) {
  const int threads = built.block[0] * built.block[1] * built.block[2];
  const int blocks = register_capped_blocks(arch, threads, built.registers, built.shared_bytes + built.static_shared_bytes);
  if (blocks == 0) return 0;
  const int64_t held = config.get_or("smem", 0) == 1 ? 0
                       : config.get_or("cache", 0) * config.get_or("vec", 1) * element_bytes *
                             std::max(1, cached_inputs) / 4;
  return arch.registers_per_sm / (blocks * threads) >= held + 16 ? blocks : 0;
}

std::string problem_bucket(TemplateKind kind, const Problem& problem) {
  const bool rows = kind == TemplateKind::kRowReduction && !problem.domain.empty();
  return shape_bucket_name(problem.elements(), rows ? problem.domain.front() : -1);
}

namespace {

// Each specialized schedule's build, by its config text, shared by the
// problems of one row length.
class SpecializedBuilds {
 public:
  explicit SpecializedBuilds(Builder& builder) : builder_(builder) {}
  // Builds those of `cs` not built yet, each once, in one batch.
  void add(const std::vector<Candidate>& cs) {
    std::vector<Candidate> fresh;
    for (const Candidate& c : cs)
      if (!builds_.count(c.config.to_string()) &&
          std::none_of(fresh.begin(), fresh.end(), [&](const Candidate& f) { return f.config == c.config; }))
        fresh.push_back(c);
    std::vector<BuildResult> built = builder_.build(fresh);
    for (size_t i = 0; i < fresh.size(); ++i) builds_.emplace(fresh[i].config.to_string(), std::move(built[i]));
  }
  const BuildResult& at(const Candidate& c) const { return builds_.at(c.config.to_string()); }
  BuildResult take(const Candidate& c) { return std::move(builds_.at(c.config.to_string())); }

 private:
  Builder& builder_;
  std::map<std::string, BuildResult> builds_;
};

// One batch on its way through verification and timing: the records it
// will commit and what the strategy will learn of each candidate.
struct BatchRun {
  const std::vector<Candidate>& candidates;
  const std::vector<BuildResult>& built;
  // Per candidate, the tuned problems to time it at (an empty list, or none
  // given: every one).
  const std::vector<std::vector<int>>& where;
  std::vector<TuningRecord> records;
  std::vector<MeasureResult> outcomes;  // per candidate and timed problem, or its failure
  std::vector<bool> reached;            // per candidate: has an outcome

  bool times_at(size_t i, size_t problem) const {
    if (i >= where.size() || where[i].empty()) return true;
    return std::find(where[i].begin(), where[i].end(), static_cast<int>(problem)) != where[i].end();
  }
  void add(size_t i, MeasureResult m) {
    m.candidate = static_cast<int>(i);
    outcomes.push_back(std::move(m));
    reached[i] = true;
  }
};

// A space with more raw points than this is drawn from by a guided search,
// not listed (listing checks every raw point).
constexpr uint64_t kListedSpace = uint64_t{1} << 16;

bool faster(const TimedSchedule& a, const TimedSchedule& b) { return a.us < b.us; }

// Where a batch's wall time went, for the progress line: a user whose tune
// is slow sees whether building, preparing problems, verifying, timing, the
// search's own ranking and retraining, or writing records is why.
struct BatchClock {
  double build_s = 0, problems_s = 0, verify_s = 0, time_s = 0, search_s = 0, record_s = 0;
  // Runs `f`, adding its time to `*into` less what preparing problems
  // (problems_s) took inside it.
  template <typename F>
  auto timed(double* into, F&& f) {
    struct Add {
      BatchClock& clock;
      double* into;
      double problems_before = clock.problems_s;
      std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
      ~Add() {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        *into += s - (clock.problems_s - problems_before);
      }
    } add{*this, into};
    return f();
  }
  std::string text() const {
    char t[200];
    std::snprintf(t, sizeof(t),
                  " (build %.1f s, problems %.1f s, verify %.1f s, time %.1f s, search %.1f s, record %.1f s)", build_s,
                  problems_s, verify_s, time_s, search_s, record_s);
    return t;
  }
};

// One tune() call: per backend, the seeded search proposes batches; each
// batch is built in parallel, verified at the odd shape, then measured
// problem by problem, and every outcome is committed in one transaction.
// Then the template's expansions of the fastest (hint twins, row-length
// specializations) are timed the same way.
class TuneRun {
 public:
  TuneRun(const TuneTask& task, Measurer& measurer, TuneDb& db, const ArchLimits& arch, const TunerOptions& options)
      : task_(task),
        wl_(*task.workload),
        measurer_(measurer),
        dev_(measurer.device()),
        db_(db),
        arch_(arch),
        options_(options),
        elem_bytes_(dtype_bytes(wl_.dtype())),
        verify_problem_(wl_.problem(task.verify_domain)) {
    for (const auto& d : task.domains) problems_.push_back(wl_.problem(d));
  }

  TuneSummary run() {
    for (Backend backend : options_.backends) tune_backend(backend);
    return summary_;
  }

 private:
  using Timed = std::vector<std::vector<TimedSchedule>>;  // per timed problem

  void progress(const std::string& what) const {
    if (options_.progress) options_.progress(task_.pattern + " " + dtype_name(wl_.dtype()) + " " + what);
  }

  void tune_backend(Backend backend) {
    if (task_.kind == TemplateKind::kGeneral && backend == Backend::kNvrtc) {
      progress(std::string("nvrtc: skipped: ") + GeneralLayoutTemplate::nvrtc_refusal());
      return;
    }
    ParamSpace space =
        template_space(task_.kind, arch_, backend, static_cast<int>(elem_bytes_), task_.cached_inputs, task_.traits);
    const bool drawn = options_.guide && space.raw_size() > kListedSpace;
    std::vector<Candidate> all;
    if (!drawn)
      for (auto& c : space.enumerate()) all.push_back({backend, std::move(c)});
    if (space.domains().empty() || (!drawn && all.empty())) {
      progress(std::string(backend_name(backend)) + ": no schedule template for this kind of op; skipped");
      return;
    }
    Timed timed = search(backend, space, all);
    if (task_.kind == TemplateKind::kPointwise && backend == Backend::kNvrtc && dev_.measured &&
        options_.hint_twins > 0)
      time_hint_twins(backend, space, timed);
    if (specializes_rows()) {
      // A guided search ends on its leaders' specializations alone: replayed
      // over its H100 runs, the full search's wider list timed 168 where
      // those were 18 and beat them by at most 1.8 % (docs/architecture.md).
      if (options_.guide)
        time_leaders_specialized(backend, space, timed);
      else
        time_row_specializations(backend, space, timed);
    }
  }

  // The search over `all` (or, empty, the space drawn from) until its stop
  // condition; per timed problem, the verified generic schedules and their
  // times.
  Timed search(Backend backend, const ParamSpace& space, const std::vector<Candidate>& all) {
    const size_t budget = all.empty() ? options_.budget : std::min(options_.budget, all.size());
    std::unique_ptr<SearchStrategy> strategy = make_strategy(backend, space, all, budget);
    std::unique_ptr<StopCondition> stop = make_stop(budget);
    // A guided batch holds every timed shape's favourites beside its random
    // picks, so no shape waits a batch for its first model-ranked schedule.
    const size_t batch_size =
        per_problem() ? problems_.size() * options_.guided.picks_per_problem + options_.guided.explore
        : options_.guide ? std::max(options_.guided_batch, problems_.size() + options_.guided.explore)
                         : options_.batch;
    Timed timed(problems_.size());
    size_t done = 0;
    while (!stop->is_fulfilled()) {
      clock_ = BatchClock{};
      std::vector<Candidate> batch = clock_.timed(&clock_.search_s, [&] { return strategy->next_batch(batch_size); });
      if (batch.empty()) break;
      const std::vector<std::vector<int>> where = strategy->batch_problems();
      const std::vector<BuildResult> built = clock_.timed(&clock_.build_s, [&] { return task_.builder->build(batch); });
      const std::vector<MeasureResult> results = run_batch(backend, batch, built, verify_problem_, &timed, where);
      clock_.timed(&clock_.search_s, [&] {
        strategy->notify(batch, results);
        stop->update(results);
      });
      if (done == 0 && options_.guide && specializes_rows())
        time_leaders_specialized(backend, space, timed);
      done += batch.size();
      progress(std::string(backend_name(backend)) + ": " + std::to_string(done) + "/" + std::to_string(budget) +
               " candidates" + clock_.text());
    }
    return timed;
  }

  // Guided: the cost model's favourites. Else every schedule when the budget
  // takes them all; else the seeds, then on a GPU half of the budget left
  // to the analytic model's favourites (each timed shape's best, then each
  // one's second, ...) and the rest to a random sample, which keeps the
  // search from only ever confirming the model. Without a GPU the model is
  // the measurement: its favourites would only confirm themselves, far from
  // any schedule it was checked against, so seeds and samples it is.
  std::unique_ptr<SearchStrategy> make_strategy(Backend backend, const ParamSpace& space,
                                                const std::vector<Candidate>& all, size_t budget) const {
    const uint64_t seed = options_.seed ^ static_cast<uint64_t>(backend);
    if (options_.guide) {
      GuidedOptions guided = options_.guided;
      for (const Candidate& c : seeds_for(backend, space)) guided.seeds.push_back(c.config);
      if (options_.rank_specialized && specializes_rows())
        guided.rank_as = [](const Config& c, const Problem& p) {
          return RowReductionTemplate::specialize(c, p.domain.front());
        };
      if (all.empty()) return make_guided_strategy(space, backend, *options_.guide, problems_, elem_bytes_, guided, seed);
      return make_guided_strategy(all, *options_.guide, problems_, elem_bytes_, guided, seed);
    }
    if (all.size() <= options_.budget) return make_exhaustive_strategy(all);
    const std::vector<Candidate> seeds = seeds_for(backend, space);
    const size_t seeds_taken = std::min(seeds.size(), budget);
    const std::vector<Candidate> ranked =
        dev_.measured ? model_ranking(all, problems_, elem_bytes_, arch_) : std::vector<Candidate>{};
    return make_seeded_random_strategy(all, seeds, options_.budget, seed, ranked, (budget - seeds_taken) / 2);
  }

  bool per_problem() const { return options_.guide && options_.guided.picks_per_problem > 0; }

  // Whether the fastest row schedules are built again for their row length:
  // on a GPU, or modeled where the model tells such a build apart
  // (TunerOptions::specialize_modeled; the analytic model cannot).
  bool specializes_rows() const {
    return task_.kind == TemplateKind::kRowReduction && options_.specialize > 0 &&
           (dev_.measured || options_.specialize_modeled);
  }

  // A guided search whose problems each retire on their own plateau ends
  // when all have (or at the budget); one whose picks are shared ends on the
  // first batch that improves no problem.
  std::unique_ptr<StopCondition> make_stop(size_t budget) const {
    if (!options_.guide || per_problem()) return make_count_stop(budget);
    return make_plateau_stop(budget, 1, options_.guided.min_gain);
  }

  // The template's seeds spelled as the space enumerates them (parameters
  // with an absent value included), or the strategy would not find them in
  // the space; for NVRTC row reductions the timed rows' own first, for when
  // the budget cannot take every seed.
  std::vector<Candidate> seeds_for(Backend backend, const ParamSpace& space) const {
    std::vector<Candidate> seeds;
    for (auto& c : template_seeds(task_.kind, backend, static_cast<int>(elem_bytes_)))
      if (space.legal(c)) seeds.push_back({backend, space.complete(c)});
    if (task_.kind != TemplateKind::kRowReduction || backend != Backend::kNvrtc) return seeds;
    std::vector<int64_t> lengths;
    for (const Problem& p : problems_) lengths.push_back(p.domain.front());
    return order_row_seeds(seeds, lengths);
  }

  // Verifies a built batch on `verify` (GPU only), times every candidate
  // on each problem it can run and commits every outcome. Adds each
  // verified time to `timed` (per problem) when given.
  std::vector<MeasureResult> run_batch(Backend backend, const std::vector<Candidate>& batch,
                                       const std::vector<BuildResult>& built, const Problem& verify, Timed* timed,
                                       const std::vector<std::vector<int>>& where = {}) {
    BatchRun b{batch, built, where, {}, {}, std::vector<bool>(batch.size(), false)};
    std::vector<size_t> alive;  // candidates still in the running
    for (size_t i = 0; i < batch.size(); ++i) {
      if (built[i].ok) {
        alive.push_back(i);
        continue;
      }
      MeasureResult m;
      m.status = RecordStatus::kCompileError;
      m.error = built[i].error;
      record_failure(b, i, "any", "any", m);
    }
    if (dev_.measured && !alive.empty())
      alive = clock_.timed(&clock_.verify_s, [&] { return verify_on_odd_shapes(backend, b, alive, verify); });
    // Problem-major, so each problem's data and reference are prepared once.
    clock_.timed(&clock_.time_s, [&] {
      for (size_t pi = 0; pi < problems_.size(); ++pi) time_on_problem(backend, b, alive, pi, timed);
    });
    summary_.records += clock_.timed(&clock_.record_s, [&] { return db_.commit(b.records); });
    for (size_t i = 0; i < batch.size(); ++i) {
      if (b.reached[i]) continue;
      MeasureResult pruned;  // no timed size could run it
      pruned.status = RecordStatus::kPruned;
      b.add(i, pruned);
    }
    return b.outcomes;
  }

  // Every candidate must also be right on an odd shape (GPU only), grouped
  // by the odd shape each can run: a Halide vector schedule takes rows of a
  // multiple of its vector only. Returns those that passed, in order.
  std::vector<size_t> verify_on_odd_shapes(Backend backend, BatchRun& b, const std::vector<size_t>& alive,
                                           const Problem& verify) {
    MeasureOptions vo = options_.measure;
    vo.time = false;
    std::map<std::vector<int64_t>, std::vector<size_t>> groups;
    for (size_t i : alive)
      groups[template_verify_domain(task_.kind, b.candidates[i].config, backend, verify.domain)].push_back(i);
    std::vector<size_t> passed;
    for (const auto& [domain, idx] : groups) {
      const Problem shape = domain == verify.domain ? verify : wl_.problem(domain);
      prepare(shape);
      std::vector<MeasureResult> v = measurer_.measure(wl_, shape, inputs_of(b, idx), vo);
      for (size_t k = 0; k < idx.size(); ++k) {
        if (v[k].status == RecordStatus::kOk) passed.push_back(idx[k]);
        else record_failure(b, idx[k], shape.shape_text, problem_bucket(task_.kind, shape), v[k]);
      }
    }
    std::sort(passed.begin(), passed.end());
    return passed;
  }

  // Times the candidates of `alive` that problem `pi`'s size allows and
  // records each outcome.
  void time_on_problem(Backend backend, BatchRun& b, const std::vector<size_t>& alive, size_t pi, Timed* timed) {
    const Problem& p = problems_[pi];
    std::vector<size_t> run;
    for (size_t i : alive) {
      if (!b.times_at(i, pi)) continue;
      if (template_size_violation(task_.kind, b.candidates[i].config, backend, p.elements(), p.domain.front()).empty())
        run.push_back(i);
      else ++summary_.pruned;
    }
    if (run.empty()) return;
    prepare(p);
    std::vector<MeasureResult> ms = measurer_.measure(wl_, p, inputs_of(b, run), options_.measure);
    for (size_t k = 0; k < run.size(); ++k) {
      const size_t i = run[k];
      const MeasureResult& m = ms[k];
      b.records.push_back(measured_record(b.candidates[i], b.built[i].artifact, p, m));
      if (m.status == RecordStatus::kOk) ++summary_.measured;
      else if (m.status == RecordStatus::kModeled) ++summary_.modeled;
      else ++summary_.failed;
      // Modeled times count too: what consumes them is gated on a GPU, or on
      // a model that tells row-length builds apart (specializes_rows).
      if (timed && (m.status == RecordStatus::kOk || m.status == RecordStatus::kModeled))
        (*timed)[pi].push_back({m.median_us, b.candidates[i].config, resident_warps(arch_, b.built[i].artifact)});
      MeasureResult outcome = m;
      outcome.problem = static_cast<int>(pi);
      b.add(i, std::move(outcome));
    }
  }

  // The problem's host data, timed apart from the phase it serves.
  void prepare(const Problem& p) {
    const auto start = std::chrono::steady_clock::now();
    measurer_.prepare(wl_, p, options_.measure);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    clock_.problems_s += s;
  }

  static std::vector<MeasureInput> inputs_of(const BatchRun& b, const std::vector<size_t>& idx) {
    std::vector<MeasureInput> in;
    for (size_t i : idx) in.push_back({&b.candidates[i], &b.built[i].artifact});
    return in;
  }

  void record_failure(BatchRun& b, size_t i, const std::string& shape, const std::string& bucket,
                      const MeasureResult& m) {
    TuningRecord r = base_record(b.candidates[i], shape, bucket);
    if (b.built[i].ok) r.kernel_hash = kernel_hash(b.built[i].artifact);
    r.status = m.status;
    r.error = m.error;
    r.verify_error = m.verify_error;
    b.records.push_back(r);
    b.add(i, m);
    ++summary_.failed;
  }

  TuningRecord measured_record(const Candidate& c, const KernelArtifact& artifact, const Problem& p,
                               const MeasureResult& m) const {
    TuningRecord r = base_record(c, p.shape_text, problem_bucket(task_.kind, p));
    r.kernel_hash = kernel_hash(artifact);
    set_measurement(m, &r);
    if (m.median_us > 0) r.bandwidth_gbps = p.bytes_moved(elem_bytes_) / (m.median_us * 1e-6) / 1e9;
    return r;
  }

  TuningRecord base_record(const Candidate& c, const std::string& shape, const std::string& bucket) const {
    TuningRecord r;
    r.id = new_record_id();
    r.pipeline_hash = task_.pipeline_hash;
    r.pipeline_text = task_.pipeline_text;
    r.pattern = task_.pattern;
    r.dtype = dtype_name(wl_.dtype());
    r.shape = shape;
    r.shape_bucket = bucket;
    r.arch = arch_.arch.name();
    set_run_fields(dev_, options_.provenance, &r);
    r.backend = backend_name(c.backend);
    r.params = c.config.to_string();
    r.row_length = RowReductionTemplate::fixed_row_length(c.config);
    r.timestamp = utc_timestamp();
    return r;
  }

  // Load-hint twins (pointwise, NVRTC, GPU only): the search samples hint
  // as one more parameter, but what it does depends on the rest of the
  // schedule, so each problem's fastest schedules without it are timed
  // with it too (docs/architecture.md, "Decisions and findings").
  void time_hint_twins(Backend backend, const ParamSpace& space, Timed& timed) {
    std::vector<Candidate> hinted;
    std::vector<std::vector<int>> where;  // per twin, the problems whose fastest it twins
    for (size_t pi = 0; pi < timed.size(); ++pi) {
      std::vector<TimedSchedule>& t = timed[pi];
      std::stable_sort(t.begin(), t.end(), faster);
      size_t taken = 0;
      for (size_t k = 0; k < t.size() && taken < options_.hint_twins; ++k) {
        if (t[k].config.get_or("hint", 0) != 0) continue;
        ++taken;
        const std::optional<Config> twin = hint2_twin(t[k].config, space);
        auto same = [&](const auto& o) { return o.config == *twin; };
        if (!twin || std::any_of(t.begin(), t.end(), same)) continue;
        const size_t j = static_cast<size_t>(std::find_if(hinted.begin(), hinted.end(), same) - hinted.begin());
        if (j == hinted.size()) {
          hinted.push_back({backend, *twin});
          where.emplace_back();
        }
        where[j].push_back(static_cast<int>(pi));
      }
    }
    if (hinted.empty()) return;
    // A per-problem guided search times a twin where its parent is fastest
    // only; the others, at every size.
    if (!per_problem()) where.clear();
    clock_ = BatchClock{};
    const std::vector<BuildResult> built = clock_.timed(&clock_.build_s, [&] { return task_.builder->build(hinted); });
    run_batch(backend, hinted, built, verify_problem_, nullptr, where);
    progress("nvrtc: " + std::to_string(hinted.size()) + " of the fastest schedules also with hint=2" + clock_.text());
  }

  // Row-length specialization: each timed row length's fastest generic
  // schedules compiled again for that length (`len`), verified on rows of
  // it (a row count no block shape divides) and timed beside them. Only
  // with a GPU: the model cannot tell a specialized kernel apart.
  void time_row_specializations(Backend backend, const ParamSpace& space, Timed& timed) {
    time_specialized(backend, timed, [&](std::vector<TimedSchedule>& t, int64_t cols, SpecializedBuilds& builds) {
      return specialized_for(backend, space, t, cols, builds);
    });
  }

  // Guided: after the first batch and again at the end, each row length's
  // fastest schedule so far specialized for it, and its hint=2 twin where
  // it has no hints: the full search's winners are such twins, which its
  // final specialization reaches only after every batch.
  void time_leaders_specialized(Backend backend, const ParamSpace& space, Timed& timed) {
    time_specialized(backend, timed, [&](std::vector<TimedSchedule>& t, int64_t cols, SpecializedBuilds& builds) {
      std::vector<Candidate> picked;
      if (t.empty()) return picked;
      const TimedSchedule& best = *std::min_element(t.begin(), t.end(), faster);
      picked.push_back({backend, RowReductionTemplate::specialize(best.config, cols)});
      add_hinted(space, &picked);
      builds.add(picked);
      return picked;
    });
  }

  // Builds, verifies on rows of each timed length and times what `pick`
  // chooses to specialize for it from a problem's timed schedules (each
  // schedule once per length and per tune, so a guided search's early
  // picks are not timed again at the end).
  template <typename Pick>
  void time_specialized(Backend backend, Timed& timed, Pick pick) {
    const BatchClock outer = std::exchange(clock_, BatchClock{});  // a guided batch's, when called within one
    SpecializedBuilds builds(*task_.builder);
    std::map<int64_t, std::vector<Candidate>> twins;  // row length -> the schedules specialized for it
    for (size_t pi = 0; pi < problems_.size(); ++pi) {
      const int64_t cols = problems_[pi].domain.front();
      std::vector<Candidate>& list = twins[cols];
      for (const Candidate& c : clock_.timed(&clock_.build_s, [&] { return pick(timed[pi], cols, builds); }))
        if (specialized_.insert(c.config.to_string()).second)
          list.push_back(c);  // once, where two problems have one row length
    }
    for (const auto& [cols, list] : twins) {
      if (list.empty()) continue;
      std::vector<BuildResult> built;
      for (const Candidate& c : list) built.push_back(builds.take(c));
      std::vector<int64_t> rows_of_it(problems_.front().domain.size(), 1);
      rows_of_it.front() = cols;
      rows_of_it.back() = RowReductionTemplate::kSpecializedVerifyRows;
      run_batch(backend, list, built, wl_.problem(rows_of_it), nullptr);
      progress(std::string(backend_name(backend)) + ": " + std::to_string(list.size()) +
               " schedules specialized for rows of " + std::to_string(cols) + clock_.text());
      clock_ = BatchClock{};
    }
    clock_ = outer;
  }

  // One problem's schedules to time specialized for its row length `cols`
  // (built): schedules_to_specialize's picks of `t`, then for NVRTC their
  // register-capped and hinted twins.
  std::vector<Candidate> specialized_for(Backend backend, const ParamSpace& space, std::vector<TimedSchedule>& t,
                                         int64_t cols, SpecializedBuilds& builds) const {
    std::stable_sort(t.begin(), t.end(), faster);
    auto twin_of = [&](size_t k) { return Candidate{backend, RowReductionTemplate::specialize(t[k].config, cols)}; };
    // The 4N fastest built for the length (in parallel, on the CPU), to
    // see which hold more warps per SM so.
    std::vector<Candidate> scan;
    for (size_t k = 0; k < t.size() && k < 4 * options_.specialize; ++k) scan.push_back(twin_of(k));
    builds.add(scan);
    std::vector<int> warps;
    for (const Candidate& c : scan) {
      const BuildResult& b = builds.at(c);
      warps.push_back(b.ok ? resident_warps(arch_, b.artifact) : 0);
    }
    std::vector<Candidate> picked;
    for (size_t k : schedules_to_specialize(t, cols, options_.specialize, warps)) picked.push_back(twin_of(k));
    builds.add(picked);  // exact fits slower than the 4N fastest
    if (backend == Backend::kNvrtc) {
      add_register_capped(space, builds, &picked);
      add_hinted(space, &picked);
    }
    builds.add(picked);
    return picked;
  }

  // Each NVRTC one whose registers hold blocks off an SM, also capped for
  // one more (capped_twin_blocks; Halide has no such bound).
  void add_register_capped(const ParamSpace& space, const SpecializedBuilds& builds,
                           std::vector<Candidate>* picked) const {
    for (size_t i = 0, n = picked->size(); i < n; ++i) {
      const Candidate c = (*picked)[i];  // a copy: push_back below may move the list
      const BuildResult& b = builds.at(c);
      if (!b.ok || c.config.get_or("minb", 0) != 0) continue;
      const int blocks =
          capped_twin_blocks(arch_, c.config, b.artifact, static_cast<int>(elem_bytes_), task_.cached_inputs);
      Config capped = c.config;
      capped.set("minb", blocks);
      if (blocks > 0 && space.legal(capped)) picked->push_back({c.backend, capped});
    }
  }

  // Each NVRTC one without load hints (and uncapped), also with Inductor's
  // (hint=2), where legal: what the hints do to a held row changes with the
  // kernel built for its length, so a twin is timed whatever its generic
  // parent's rank (a generic hint=2 parent can rank low while its
  // specialized twin wins).
  static void add_hinted(const ParamSpace& space, std::vector<Candidate>* picked) {
    for (size_t i = 0, n = picked->size(); i < n; ++i) {
      const Candidate c = (*picked)[i];  // a copy: push_back below may move the list
      if (c.config.get_or("minb", 0) != 0) continue;
      const std::optional<Config> hinted = hint2_twin(c.config, space);
      if (hinted &&
          std::none_of(picked->begin(), picked->end(), [&](const Candidate& o) { return o.config == *hinted; }))
        picked->push_back({c.backend, *hinted});
    }
  }

  const TuneTask& task_;
  const Workload& wl_;
  Measurer& measurer_;
  const DeviceInfo& dev_;
  TuneDb& db_;
  const ArchLimits& arch_;
  const TunerOptions& options_;
  const size_t elem_bytes_;
  const Problem verify_problem_;
  std::vector<Problem> problems_;
  TuneSummary summary_;
  BatchClock clock_;                 // the search's current batch
  std::set<std::string> specialized_;  // specialized schedules timed (their `len` names the row length)
};

}  // namespace

TuneSummary tune(const TuneTask& task, Measurer& measurer, TuneDb& db, const ArchLimits& arch,
                 const TunerOptions& options) {
  return TuneRun(task, measurer, db, arch, options).run();
}

}  // namespace fusekit
