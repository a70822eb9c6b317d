#include "search/tuner.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "fusekit/shape_bucket.h"
#include "schedules/general_layout_template.h"
#include "schedules/row_reduction_template.h"

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

// Per backend: the seeded search proposes batches; each batch is built in
// parallel, verified at the odd shape, then measured problem by problem, and
// every outcome is committed in one transaction.
TuneSummary tune(const TuneTask& task, Measurer& measurer, TuneDb& db, const ArchLimits& arch,
                 const TunerOptions& options) {
  TuneSummary summary;
  const Workload& wl = *task.workload;
  const DeviceInfo& dev = measurer.device();
  const size_t elem_bytes = dtype_bytes(wl.dtype());

  auto base_record = [&](const Candidate& c, const std::string& shape, const std::string& bucket) {
    TuningRecord r;
    r.id = new_record_id();
    r.pipeline_hash = task.pipeline_hash;
    r.pipeline_text = task.pipeline_text;
    r.pattern = task.pattern;
    r.dtype = dtype_name(wl.dtype());
    r.shape = shape;
    r.shape_bucket = bucket;
    r.arch = arch.arch.name();
    r.gpu_name = dev.gpu_name;
    r.sm_count = dev.sm_count;
    r.driver_version = dev.driver_version;
    r.cuda_version = options.provenance.cuda_version;
    r.halide_version = options.provenance.halide_version;
    r.fusekit_version = options.provenance.fusekit_version;
    r.host = options.provenance.host;
    r.backend = backend_name(c.backend);
    r.params = c.config.to_string();
    r.timestamp = utc_timestamp();
    return r;
  };

  std::vector<Problem> problems;
  for (const auto& d : task.domains) problems.push_back(wl.problem(d));
  const Problem verify_problem = wl.problem(task.verify_domain);

  // Verifies a built batch on `verify` (GPU only), times every candidate
  // on each problem it can run and commits every outcome. Adds each
  // verified time to `timed` (per problem) when given.
  auto run_batch = [&](Backend backend, const std::vector<Candidate>& batch, const std::vector<BuildResult>& built,
                       const Problem& verify, std::vector<std::vector<TimedSchedule>>* timed) {
    std::vector<TuningRecord> records;
    // A candidate no timed size can run reaches notify() as pruned.
    std::vector<MeasureResult> batch_results(batch.size());
    for (MeasureResult& m : batch_results) m.status = RecordStatus::kPruned;
    // Candidates still in the running, as measurer inputs.
    std::vector<size_t> alive;
    auto fail_record = [&](size_t i, const std::string& shape, const std::string& bucket, const MeasureResult& m) {
      TuningRecord r = base_record(batch[i], shape, bucket);
      if (built[i].ok) r.kernel_hash = kernel_hash(built[i].artifact);
      r.status = m.status;
      r.error = m.error;
      r.verify_error = m.verify_error;
      records.push_back(r);
      batch_results[i] = m;
      ++summary.failed;
    };
    for (size_t i = 0; i < batch.size(); ++i) {
      if (built[i].ok) {
        alive.push_back(i);
        continue;
      }
      MeasureResult m;
      m.status = RecordStatus::kCompileError;
      m.error = built[i].error;
      fail_record(i, "any", "any", m);
    }
    auto inputs_of = [&](const std::vector<size_t>& idx) {
      std::vector<MeasureInput> in;
      for (size_t i : idx) in.push_back({&batch[i], &built[i].artifact});
      return in;
    };
    // Every candidate must also be right on an odd shape (GPU only).
    if (dev.measured && !alive.empty()) {
      MeasureOptions vo = options.measure;
      vo.time = false;
      // Grouped by the odd shape each can run: a Halide vector schedule
      // takes rows of a multiple of its vector only.
      std::map<std::vector<int64_t>, std::vector<size_t>> groups;
      for (size_t i : alive)
        groups[template_verify_domain(task.kind, batch[i].config, backend, verify.domain)].push_back(i);
      std::vector<size_t> passed;
      for (const auto& [domain, idx] : groups) {
        const Problem shape = domain == verify.domain ? verify : wl.problem(domain);
        std::vector<MeasureResult> v = measurer.measure(wl, shape, inputs_of(idx), vo);
        for (size_t k = 0; k < idx.size(); ++k) {
          if (v[k].status == RecordStatus::kOk) passed.push_back(idx[k]);
          else fail_record(idx[k], shape.shape_text, problem_bucket(task.kind, shape), v[k]);
        }
      }
      std::sort(passed.begin(), passed.end());
      alive = passed;
    }
    // Problem-major, so each problem's data and reference are prepared once.
    for (size_t pi = 0; pi < problems.size(); ++pi) {
      const Problem& p = problems[pi];
      std::vector<size_t> run;
      for (size_t i : alive) {
        if (template_size_violation(task.kind, batch[i].config, backend, p.elements(), p.domain.front()).empty())
          run.push_back(i);
        else ++summary.pruned;
      }
      if (run.empty()) continue;
      std::vector<MeasureResult> ms = measurer.measure(wl, p, inputs_of(run), options.measure);
      for (size_t k = 0; k < run.size(); ++k) {
        const MeasureResult& m = ms[k];
        TuningRecord r = base_record(batch[run[k]], p.shape_text, problem_bucket(task.kind, p));
        r.kernel_hash = kernel_hash(built[run[k]].artifact);
        r.status = m.status;
        r.error = m.error;
        r.verify_error = m.verify_error;
        r.median_us = m.median_us;
        r.p20_us = m.p20_us;
        r.p80_us = m.p80_us;
        r.samples = static_cast<int>(m.samples_us.size());
        if (m.median_us > 0) r.bandwidth_gbps = p.bytes_moved(elem_bytes) / (m.median_us * 1e-6) / 1e9;
        if (m.status == RecordStatus::kOk) ++summary.measured;
        else if (m.status == RecordStatus::kModeled) ++summary.modeled;
        else ++summary.failed;
        if (timed && m.status == RecordStatus::kOk)
          (*timed)[pi].push_back({m.median_us, batch[run[k]].config, resident_warps(arch, built[run[k]].artifact)});
        records.push_back(r);
        batch_results[run[k]] = m;
        batch_results[run[k]].problem = static_cast<int>(pi);
      }
    }
    summary.records += db.commit(records);
    return batch_results;
  };

  for (Backend backend : options.backends) {
    if (task.kind == TemplateKind::kGeneral && backend == Backend::kNvrtc) {
      if (options.progress)
        options.progress(task.pattern + " " + dtype_name(wl.dtype()) + " nvrtc: skipped: " +
                         GeneralLayoutTemplate::nvrtc_refusal());
      continue;
    }
    ParamSpace space =
        template_space(task.kind, arch, backend, static_cast<int>(elem_bytes), task.cached_inputs, task.traits);
    std::vector<Candidate> all;
    for (auto& c : space.enumerate()) all.push_back({backend, c});
    if (all.empty()) {
      if (options.progress)
        options.progress(task.pattern + " " + dtype_name(wl.dtype()) + " " + backend_name(backend) +
                         ": no schedule template for this kind of op; skipped");
      continue;
    }
    const size_t budget = std::min(options.budget, all.size());
    std::vector<Candidate> seeds;
    // Seeds spelled as the space enumerates them (parameters with an absent
    // value included), or the strategy would not find them in the space.
    for (auto& c : template_seeds(task.kind, backend, static_cast<int>(elem_bytes)))
      if (space.legal(c)) seeds.push_back({backend, space.complete(c)});
    // When the budget cannot take every seed, the timed rows' own first.
    if (task.kind == TemplateKind::kRowReduction && backend == Backend::kNvrtc) {
      std::vector<int64_t> lengths;
      for (const Problem& p : problems) lengths.push_back(p.domain.front());
      seeds = order_row_seeds(seeds, lengths);
    }
    // On a GPU, after the seeds, half of the budget left goes to the
    // analytic model's favourites (each timed shape's best, then each one's
    // second, ...), the rest to a random sample, which keeps the search from
    // only ever confirming the model. Without a GPU the model is the
    // measurement: its favourites would only confirm themselves, far from
    // any schedule it was checked against, so seeds and samples it is.
    const size_t seeds_taken = std::min(seeds.size(), budget);
    const std::vector<Candidate> ranked = all.size() <= options.budget || !dev.measured
                                              ? std::vector<Candidate>{}
                                              : model_ranking(all, problems, elem_bytes, arch);
    auto strategy = all.size() <= options.budget
                        ? make_exhaustive_strategy(all)
                        : make_seeded_random_strategy(all, seeds, options.budget,
                                                      options.seed ^ static_cast<uint64_t>(backend), ranked,
                                                      (budget - seeds_taken) / 2);
    auto stop = make_count_stop(budget);
    if (options.guide) {
      strategy = make_guided_strategy(all, *options.guide, problems, elem_bytes, options.guided_explore,
                                      options.seed ^ static_cast<uint64_t>(backend));
      stop = make_plateau_stop(budget, 1, 0.01);
    }
    const size_t batch_size = options.guide ? options.guided_batch : options.batch;
    // Per timed problem, the verified generic schedules and their times.
    std::vector<std::vector<TimedSchedule>> timed(problems.size());
    size_t done = 0;
    while (!stop->is_fulfilled()) {
      std::vector<Candidate> batch = strategy->next_batch(batch_size);
      if (batch.empty()) break;
      std::vector<MeasureResult> batch_results =
          run_batch(backend, batch, task.builder->build(batch), verify_problem, &timed);
      strategy->notify(batch, batch_results);
      stop->update(batch_results);
      done += batch.size();
      if (options.progress) {
        std::ostringstream line;
        line << task.pattern << " " << dtype_name(wl.dtype()) << " " << backend_name(backend) << ": " << done << "/"
             << budget << " candidates";
        options.progress(line.str());
      }
    }
    // Load-hint twins (pointwise, NVRTC, GPU only): the search samples hint
    // as one more parameter, but what it does depends on the rest of the
    // schedule, so each problem's fastest schedules without it are timed
    // with it too (docs/architecture.md, "Decisions and findings").
    if (task.kind == TemplateKind::kPointwise && backend == Backend::kNvrtc && dev.measured && options.hint_twins > 0) {
      std::vector<Candidate> hinted;
      for (std::vector<TimedSchedule>& t : timed) {
        std::stable_sort(t.begin(), t.end(), [](const auto& a, const auto& b) { return a.us < b.us; });
        size_t taken = 0;
        for (size_t k = 0; k < t.size() && taken < options.hint_twins; ++k) {
          if (t[k].config.get_or("hint", 0) != 0) continue;
          ++taken;
          const std::optional<Config> twin = hint2_twin(t[k].config, space);
          auto same = [&](const auto& o) { return o.config == *twin; };
          if (twin && std::none_of(t.begin(), t.end(), same) && std::none_of(hinted.begin(), hinted.end(), same))
            hinted.push_back({backend, *twin});
        }
      }
      if (!hinted.empty()) {
        run_batch(backend, hinted, task.builder->build(hinted), verify_problem, nullptr);
        if (options.progress)
          options.progress(task.pattern + " " + dtype_name(wl.dtype()) + " nvrtc: " + std::to_string(hinted.size()) +
                           " of the fastest schedules also with hint=2");
      }
    }
    // Row-length specialization: each timed row length's fastest generic
    // schedules compiled again for that length (`len`), verified on rows of
    // it (a row count no block shape divides) and timed beside them. Only
    // with a GPU: the model cannot tell a specialized kernel apart.
    if (task.kind != TemplateKind::kRowReduction || !dev.measured || options.specialize == 0)
      continue;
    // Each specialized schedule's build (by its config text), shared by the
    // problems of one row length; build_new builds those not built yet.
    std::map<std::string, BuildResult> builds;
    auto build_new = [&](const std::vector<Candidate>& cs) {
      std::vector<Candidate> fresh;
      for (const Candidate& c : cs)
        if (!builds.count(c.config.to_string()) &&
            std::none_of(fresh.begin(), fresh.end(), [&](const Candidate& f) { return f.config == c.config; }))
          fresh.push_back(c);
      std::vector<BuildResult> built = task.builder->build(fresh);
      for (size_t i = 0; i < fresh.size(); ++i) builds.emplace(fresh[i].config.to_string(), std::move(built[i]));
    };
    // Row length -> the schedules specialized for it.
    std::map<int64_t, std::vector<Candidate>> twins;
    for (size_t pi = 0; pi < problems.size(); ++pi) {
      const int64_t cols = problems[pi].domain.front();
      std::vector<TimedSchedule>& t = timed[pi];
      std::stable_sort(t.begin(), t.end(), [](const auto& a, const auto& b) { return a.us < b.us; });
      auto twin_of = [&](size_t k) { return Candidate{backend, RowReductionTemplate::specialize(t[k].config, cols)}; };
      // The 4N fastest built for the length (in parallel, on the CPU), to
      // see which hold more warps per SM so.
      std::vector<Candidate> scan;
      for (size_t k = 0; k < t.size() && k < 4 * options.specialize; ++k) scan.push_back(twin_of(k));
      build_new(scan);
      std::vector<int> warps;
      for (const Candidate& c : scan) {
        const BuildResult& b = builds.at(c.config.to_string());
        warps.push_back(b.ok ? resident_warps(arch, b.artifact) : 0);
      }
      std::vector<Candidate> picked;
      for (size_t k : schedules_to_specialize(t, cols, options.specialize, warps)) picked.push_back(twin_of(k));
      build_new(picked);  // exact fits slower than the 4N fastest
      // Each NVRTC one whose registers hold blocks off an SM, also capped
      // for one more (capped_twin_blocks; Halide has no such bound).
      for (size_t i = 0, n = backend == Backend::kNvrtc ? picked.size() : 0; i < n; ++i) {
        const BuildResult& b = builds.at(picked[i].config.to_string());
        if (!b.ok || picked[i].config.get_or("minb", 0) != 0) continue;
        const int blocks = capped_twin_blocks(arch, picked[i].config, b.artifact, static_cast<int>(elem_bytes),
                                              task.cached_inputs);
        Config capped = picked[i].config;
        capped.set("minb", blocks);
        if (blocks > 0 && space.legal(capped))
          picked.push_back({backend, capped});
      }
      // Each NVRTC one without load hints (and uncapped), also with
      // Inductor's (hint=2), where legal: what the hints do to a held row
      // changes with the kernel built for its length, so a twin is timed
      // whatever its generic parent's rank (a generic hint=2 parent can rank
      // low while its specialized twin wins).
      for (size_t i = 0, n = backend == Backend::kNvrtc ? picked.size() : 0; i < n; ++i) {
        if (picked[i].config.get_or("minb", 0) != 0) continue;
        const std::optional<Config> hinted = hint2_twin(picked[i].config, space);
        if (hinted &&
            std::none_of(picked.begin(), picked.end(), [&](const Candidate& c) { return c.config == *hinted; }))
          picked.push_back({backend, *hinted});
      }
      build_new(picked);
      std::vector<Candidate>& list = twins[cols];
      for (const Candidate& c : picked)
        if (std::none_of(list.begin(), list.end(), [&](const Candidate& o) { return o.config == c.config; }))
          list.push_back(c);  // once, where two problems have one row length
    }
    for (const auto& [cols, list] : twins) {
      if (list.empty()) continue;
      std::vector<BuildResult> built;
      for (const Candidate& c : list) built.push_back(std::move(builds.at(c.config.to_string())));
      std::vector<int64_t> rows_of_it(problems.front().domain.size(), 1);
      rows_of_it.front() = cols;
      rows_of_it.back() = RowReductionTemplate::kSpecializedVerifyRows;
      run_batch(backend, list, built, wl.problem(rows_of_it), nullptr);
      if (options.progress)
        options.progress(task.pattern + " " + dtype_name(wl.dtype()) + " " + backend_name(backend) + ": " +
                         std::to_string(list.size()) + " schedules specialized for rows of " + std::to_string(cols));
    }
  }
  return summary;
}

}  // namespace fusekit
