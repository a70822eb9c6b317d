// The tuning loop end to end on the CPU: real NVRTC and Halide builds, the
// analytic model as the measurer, a real database.
#include "search/tuner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "fusekit/shape_bucket.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "schedules/row_reduction_template.h"

namespace fusekit {
namespace {

// One op's tuning task on the model measurer, with a fresh database that
// goes away with it.
struct ModelTuning {
  ModelTuning(const std::string& pattern, DType dt, const char* arch_name, std::vector<std::vector<int64_t>> domains)
      : cand(find_pattern(pattern)),
        arch(require_arch(arch_name)),
        path((std::filesystem::temp_directory_path() /
              ("fusekit_tuner_" + pattern + "_" + std::to_string(getpid()) + ".db"))
                 .string()),
        wl(make_candidate_workload(cand, dt)),
        builder(make_kernel_builder(cand, dt, arch)),
        measurer(make_model_measurer(arch)) {
    std::filesystem::remove(path);
    db = open_sqlite_db(path);
    task.workload = wl.get();
    task.builder = builder.get();
    task.pattern = cand.name;
    task.pipeline_text = canonical_pipeline_text(cand, dt);
    task.pipeline_hash = pipeline_hash(task.pipeline_text);
    task.domains = std::move(domains);
    task.verify_domain = cand.odd_domain();
    task.kind = cand.template_kind();
    task.cached_inputs = cand.full_inputs();
  }
  ~ModelTuning() {
    db.reset();
    std::filesystem::remove(path);
  }
  TuneSummary run(const TunerOptions& opt) { return tune(task, *measurer, *db, arch, opt); }
  // Expects a record of every schedule in `params` (canonical text).
  void expect_measured(const std::vector<std::string>& params) const {
    std::vector<std::string> measured;
    for (const auto& r : db->all()) measured.push_back(r.params);
    for (const std::string& s : params)
      EXPECT_NE(std::find(measured.begin(), measured.end(), s), measured.end()) << s << " was not measured";
  }

  const FusionCandidate& cand;
  const ArchLimits& arch;
  const std::string path;
  std::unique_ptr<Workload> wl;
  std::unique_ptr<Builder> builder;
  std::unique_ptr<Measurer> measurer;
  std::unique_ptr<TuneDb> db;
  TuneTask task;
};

TEST(Tuner, RecordsEveryCandidateAsModeledWithoutAGpu) {
  ModelTuning t("silu_mul", DType::kF16, "sm_86", {{4096}, {1 << 20}});
  TunerOptions opt;
  opt.budget = 3;
  opt.batch = 2;
  TuneSummary s = t.run(opt);
  // 3 nvrtc candidates x 2 sizes, plus 3 halide candidates x 2 sizes unless pruned.
  EXPECT_EQ(s.records + s.pruned, 12u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(t.db->size(), s.records);
  for (const auto& r : t.db->all()) {
    EXPECT_EQ(r.status, RecordStatus::kModeled);
    EXPECT_EQ(r.arch, "sm_86");
    EXPECT_EQ(r.dtype, "f16");
    EXPECT_GT(r.median_us, 0);
    EXPECT_EQ(r.gpu_name, "model:RTX A6000");
  }
  auto best = t.db->best({t.task.pipeline_hash, "f16", shape_bucket_name(1 << 20), "sm_86"});
  ASSERT_TRUE(best.has_value());
  for (const auto& r : t.db->all()) {
    if (r.shape_bucket == best->shape_bucket) {
      EXPECT_LE(best->median_us, r.median_us);
    }
  }
}

// Every legal seed is measured before anything else, whatever parameters it
// leaves at their absent value (a seed without smem= once fell out of the
// space's spelling and was never measured).
TEST(Tuner, MeasuresEveryLegalSeed) {
  ModelTuning t("softmax", DType::kF32, "sm_90", {{16384, 64}});
  const ParamSpace space = template_space(t.task.kind, t.arch, Backend::kNvrtc, 4, t.task.cached_inputs);
  std::vector<std::string> seeds;
  for (const Config& c : template_seeds(t.task.kind, Backend::kNvrtc, 4))
    if (space.legal(c)) seeds.push_back(space.complete(c).to_string());
  ASSERT_GE(seeds.size(), 12u);
  TunerOptions opt;
  opt.budget = seeds.size();
  opt.backends = {Backend::kNvrtc};
  t.run(opt);
  t.expect_measured(seeds);
  // Each record names its kernel (16 hex digits), the same for every record
  // of one schedule; the seeds' builds differ.
  std::map<std::string, std::string> kernel_of;
  std::set<std::string> kernels;
  for (const auto& r : t.db->all()) {
    ASSERT_EQ(r.kernel_hash.size(), 16u) << r.params;
    EXPECT_EQ(r.kernel_hash.find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_EQ(kernel_of.emplace(r.params, r.kernel_hash).first->second, r.kernel_hash) << r.params;
    kernels.insert(r.kernel_hash);
  }
  EXPECT_GE(kernels.size(), seeds.size() / 2);
}

// Seeds past the budget: the timed rows' own first, shared among lengths.
TEST(Tuner, TakesTheSeedsOfTheTimedRowLengthsFirst) {
  auto seed = [](const char* c) { return Candidate{Backend::kNvrtc, Config::parse(c)}; };
  const std::vector<Candidate> seeds = {
      seed("cache=8 rows=4 split=1 threads=32 vec=4"),     // 1024
      seed("cache=0 rows=1 split=1 threads=1024 vec=4"),   // re-reads: fits no length
      seed("cache=2 rows=1 split=1 threads=128 vec=4"),    // 1024
      seed("cache=8 rows=1 split=8 threads=256 vec=4"),    // 65536
      seed("cache=4 rows=1 split=1 threads=256 vec=4"),    // 4096
      seed("cache=8 rows=1 split=4 threads=512 vec=4")};   // 65536
  auto order = [&](const std::vector<int64_t>& lengths) {
    std::vector<std::string> out;
    for (const Candidate& c : order_row_seeds(seeds, lengths)) out.push_back(c.config.to_string());
    return out;
  };
  const std::vector<std::string> only_long = order({65536, 65536});
  ASSERT_EQ(only_long.size(), seeds.size());
  EXPECT_EQ(only_long[0], seeds[3].config.to_string());
  EXPECT_EQ(only_long[1], seeds[5].config.to_string());
  EXPECT_EQ(only_long[2], seeds[0].config.to_string());  // then the rest, in their order
  const std::vector<std::string> both = order({1024, 65536});
  EXPECT_EQ(both[0], seeds[0].config.to_string());
  EXPECT_EQ(both[1], seeds[3].config.to_string());
  EXPECT_EQ(both[2], seeds[2].config.to_string());
  EXPECT_EQ(both[3], seeds[5].config.to_string());
  EXPECT_EQ(both[4], seeds[1].config.to_string());

  // Through the tuner: with a budget below the seeds' count, every seed made
  // for rows of 65536 is measured on rows of 65536 (bf16 has more seeds than
  // the default budget).
  ModelTuning t("rmsnorm", DType::kBF16, "sm_90", {{65536, 16}});
  const ParamSpace space = template_space(t.task.kind, t.arch, Backend::kNvrtc, 2, t.task.cached_inputs);
  std::vector<std::string> long_seeds;
  size_t legal = 0;
  for (const Config& c : template_seeds(t.task.kind, Backend::kNvrtc, 2)) {
    if (!space.legal(c)) continue;
    ++legal;
    if (RowReductionTemplate::cached_row(c) == 65536) long_seeds.push_back(space.complete(c).to_string());
  }
  ASSERT_GT(legal, long_seeds.size() + 2);
  TunerOptions opt;
  opt.budget = long_seeds.size() + 1;
  opt.backends = {Backend::kNvrtc};
  t.run(opt);
  t.expect_measured(long_seeds);
}

// A GPU stand-in: the model's times, reported as measured; a kernel
// compiled for one row length, or for rows of a multiple of a vector, fails
// on any other (as prepare_launch refuses it), and one compiled for its
// length runs 10 % faster on it. Remembers what it verified.
class FakeGpuMeasurer final : public Measurer {
 public:
  explicit FakeGpuMeasurer(const ArchLimits& arch) : model_(make_model_measurer(arch)) {
    info_ = model_->device();
    info_.gpu_name = "fake GPU";
    info_.measured = true;
  }
  const DeviceInfo& device() const override { return info_; }
  std::vector<MeasureResult> measure(const Workload& wl, const Problem& p, const std::vector<MeasureInput>& batch,
                                     const MeasureOptions& options) override {
    std::vector<MeasureResult> out = model_->measure(wl, p, batch, options);
    for (size_t i = 0; i < batch.size(); ++i) {
      const int64_t fixed = batch[i].artifact->row_length;
      if (!options.time) verified.push_back(p.shape_text + " " + batch[i].candidate->config.to_string());
      if ((fixed > 0 && fixed != p.domain.front()) || p.domain.front() % batch[i].artifact->row_multiple != 0) {
        out[i] = MeasureResult{};
        out[i].status = RecordStatus::kLaunchError;
        out[i].error = "compiled for rows of " + std::to_string(fixed) + " or a multiple of " +
                       std::to_string(batch[i].artifact->row_multiple);
        continue;
      }
      out[i].status = RecordStatus::kOk;
      const double f = fixed > 0 ? 0.9 : 1.0;
      for (double* t : {&out[i].median_us, &out[i].p20_us, &out[i].p80_us}) *t *= f;
    }
    return out;
  }
  std::vector<std::string> verified;

 private:
  std::unique_ptr<Measurer> model_;
  DeviceInfo info_;
};

// Tunes `t` on a FakeGpuMeasurer with `budget` candidates of `backend` (the
// rest of `opt` as given); returns what it verified.
std::vector<std::string> tune_on_fake_gpu(ModelTuning& t, TunerOptions opt, size_t budget, Backend backend) {
  auto fake = std::make_unique<FakeGpuMeasurer>(t.arch);
  const FakeGpuMeasurer* gpu = fake.get();
  t.measurer = std::move(fake);
  opt.budget = budget;
  opt.backends = {backend};
  t.run(opt);
  return gpu->verified;
}

// On a GPU, each timed pointwise problem's three fastest NVRTC schedules
// without load hints are timed again with hint=2 once the search is done
// (verified on the odd shape first); hint_twins = 0 leaves them out.
TEST(Tuner, TimesTheFastestPointwiseSchedulesWithLoadHints) {
  const std::vector<std::vector<int64_t>> domains = {{1 << 20, 64, 1}, {4096, 64, 1}};
  ModelTuning t("bn_relu", DType::kBF16, "sm_90", domains);
  const std::vector<std::string> verified = tune_on_fake_gpu(t, {}, 12, Backend::kNvrtc);
  std::map<std::string, std::vector<TuningRecord>> plain;  // by shape
  std::set<std::string> hinted;                             // shape and params
  for (const auto& r : t.db->all()) {
    ASSERT_EQ(r.status, RecordStatus::kOk) << r.params << " " << r.error;
    if (Config::parse(r.params).get_or("hint", 0) == 0) plain[r.shape].push_back(r);
    else hinted.insert(r.shape + " " + r.params);
  }
  ASSERT_EQ(plain.size(), 2u);
  std::set<std::string> twins;
  for (auto& [shape, records] : plain) {
    SCOPED_TRACE(shape);
    ASSERT_GE(records.size(), 4u);
    std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.median_us < b.median_us; });
    // Ties at the third place may go either way; those strictly ahead of it
    // must have their twin.
    for (size_t k = 0; k < records.size() && records[k].median_us < records[2].median_us; ++k) {
      Config twin = Config::parse(records[k].params);
      twin.set("hint", 2);
      EXPECT_TRUE(hinted.count(shape + " " + twin.to_string())) << twin.to_string() << " was not timed";
      EXPECT_NE(std::find(verified.begin(), verified.end(), "3x7x333 " + twin.to_string()), verified.end())
          << twin.to_string() << " was not verified";
    }
  }
  for (const std::string& h : hinted) twins.insert(h.substr(h.find(' ') + 1));
  EXPECT_GE(twins.size(), 3u);
  EXPECT_LE(twins.size(), 6u);
  EXPECT_EQ(hinted.size(), twins.size() * domains.size());  // each twin on every size

  ModelTuning off("bn_relu", DType::kBF16, "sm_90", domains);
  TunerOptions no_twins;
  no_twins.hint_twins = 0;
  tune_on_fake_gpu(off, no_twins, 12, Backend::kNvrtc);
  for (const auto& r : off.db->all()) EXPECT_EQ(Config::parse(r.params).get_or("hint", 0), 0) << r.params;
  EXPECT_EQ(off.db->size() + hinted.size(), t.db->size());
}

// On a GPU, each timed row length's two fastest generic schedules, and the
// two fastest whose cached row fits it exactly, are built again for that
// length, verified on rows of it (37: no block shape divides it) and timed
// on that shape only; the bucket's winner is one of them here.
TEST(Tuner, SpecializesTheFastestSchedulesPerRowLength) {
  ModelTuning t("layernorm", DType::kBF16, "sm_90", {{4096, 64}, {16384, 16}});
  const std::vector<std::string> verified = tune_on_fake_gpu(t, {}, 12, Backend::kNvrtc);
  std::map<std::string, std::vector<TuningRecord>> generic, fixed;  // by shape
  for (const auto& r : t.db->all()) {
    ASSERT_EQ(r.status, RecordStatus::kOk) << r.params << " " << r.error;
    (Config::parse(r.params).get_or("len", 0) > 0 ? fixed : generic)[r.shape].push_back(r);
  }
  int exact_fits_beyond_the_fastest = 0;
  size_t capped_twins = 0, hinted_twins = 0;
  for (const auto& [shape, cols] : std::map<std::string, int64_t>{{"64x4096", 4096}, {"16x16384", 16384}}) {
    SCOPED_TRACE(shape);
    std::vector<TuningRecord> g = generic[shape];
    std::stable_sort(g.begin(), g.end(), [](const auto& a, const auto& b) { return a.median_us < b.median_us; });
    ASSERT_GE(g.size(), 2u);
    // The two fastest, the two fastest whose cached row is the length, and
    // of the eight fastest the first two that fit more warps per SM when
    // built for the length (ptxas's registers, through the real builder).
    std::vector<Config> expected;
    auto expect = [&](const Config& c) {
      if (std::find(expected.begin(), expected.end(), c) == expected.end()) expected.push_back(c);
    };
    size_t fits = 0;
    for (size_t k = 0; k < g.size(); ++k) {
      const Config c = Config::parse(g[k].params);
      const bool fit = RowReductionTemplate::cached_row(c) == cols && fits++ < 2;
      if (k < 2 || fit) expect(c);
    }
    auto warps = [&](const KernelArtifact& a) {
      return resident_warps_per_sm(t.arch, a.block[0] * a.block[1], a.registers, a.shared_bytes + a.static_shared_bytes);
    };
    size_t gainers = 0;  // beyond the schedules already expected
    for (size_t k = 0; k < g.size() && k < 8 && gainers < 2; ++k) {
      const Config c = Config::parse(g[k].params);
      const std::vector<BuildResult> b = t.builder->build(
          {{Backend::kNvrtc, c}, {Backend::kNvrtc, RowReductionTemplate::specialize(c, cols)}});
      ASSERT_TRUE(b[0].ok && b[1].ok) << b[0].error << b[1].error;
      ASSERT_GT(b[0].artifact.registers, 0);
      if (warps(b[1].artifact) > warps(b[0].artifact) &&
          std::find(expected.begin(), expected.end(), c) == expected.end()) {
        expect(c);
        ++gainers;
      }
    }
    // Each twin whose registers hold blocks off an SM, also capped for one
    // block more; each without load hints, also with hint=2.
    const ParamSpace space = template_space(TemplateKind::kRowReduction, t.arch, Backend::kNvrtc, 2,
                                            t.task.cached_inputs, t.task.traits);
    std::vector<Config> twins;
    for (const Config& c : expected) {
      const Config twin = RowReductionTemplate::specialize(c, cols);
      twins.push_back(twin);
      const std::vector<BuildResult> b = t.builder->build({{Backend::kNvrtc, twin}});
      ASSERT_TRUE(b[0].ok) << b[0].error;
      const int blocks = capped_twin_blocks(t.arch, twin, b[0].artifact, 2, t.task.cached_inputs);
      Config capped = twin;
      capped.set("minb", blocks);
      if (blocks > 0 && space.legal(capped)) {
        twins.push_back(capped);
        ++capped_twins;
      }
    }
    for (const Config& c : expected) {
      Config hinted = RowReductionTemplate::specialize(c, cols);
      if (hinted.get_or("hint", 0) != 0) continue;
      hinted.set("hint", 2);
      if (space.legal(hinted) && std::find(twins.begin(), twins.end(), hinted) == twins.end()) {
        twins.push_back(hinted);
        ++hinted_twins;
      }
    }
    EXPECT_EQ(fixed[shape].size(), twins.size());
    exact_fits_beyond_the_fastest += expected.size() > 2;
    for (const Config& twin : twins) {
      EXPECT_TRUE(std::any_of(fixed[shape].begin(), fixed[shape].end(),
                              [&](const TuningRecord& r) { return r.params == twin.to_string(); }))
          << twin.to_string() << " was not measured";
      const std::string on_its_rows = "37x" + std::to_string(cols) + " " + twin.to_string();
      EXPECT_NE(std::find(verified.begin(), verified.end(), on_its_rows), verified.end()) << on_its_rows;
    }
    auto best = t.db->best({t.task.pipeline_hash, "bf16", fixed[shape][0].shape_bucket, "sm_90"});
    ASSERT_TRUE(best.has_value());
    EXPECT_EQ(Config::parse(best->params).get("len"), cols);
    auto best_generic = t.db->best_generic({t.task.pipeline_hash, "bf16", fixed[shape][0].shape_bucket, "sm_90"});
    ASSERT_TRUE(best_generic.has_value());
    EXPECT_EQ(best_generic->params, g[0].params);
  }
  EXPECT_EQ(fixed.size(), 2u);  // no other shape
  EXPECT_GT(exact_fits_beyond_the_fastest, 0);  // the second list adds schedules here
  EXPECT_GT(capped_twins, 0u);
  EXPECT_GT(hinted_twins, 0u);

  // specialize = 0: generic schedules only.
  ModelTuning off("rmsnorm", DType::kBF16, "sm_90", {{4096, 64}});
  TunerOptions generic_only;
  generic_only.specialize = 0;
  tune_on_fake_gpu(off, generic_only, 12, Backend::kNvrtc);
  for (const auto& r : off.db->all()) EXPECT_EQ(Config::parse(r.params).get_or("len", 0), 0) << r.params;
}

// A Halide vector schedule is verified on the odd shape's row length
// rounded up to its vector (97 rows of 1004 columns for vec=4), beside the
// scalar ones on the odd shape itself, and timed only on rows of a
// multiple of its vector. The fastest are specialized for each row length
// (Halide stages such rows in shared memory), verified on 37 rows of it.
TEST(Tuner, VerifiesHalideVectorsOnRowsOfTheirMultiple) {
  ModelTuning t("rmsnorm", DType::kF32, "sm_90", {{4096, 5}, {3001, 3}});
  const std::vector<std::string> verified = tune_on_fake_gpu(t, {}, 8, Backend::kHalide);
  size_t vectors = 0;
  for (const auto& r : t.db->all()) {
    ASSERT_EQ(r.status, RecordStatus::kOk) << r.params << " " << r.shape << " " << r.error;
    const int64_t vec = Config::parse(r.params).get_or("vec", 1);
    if (vec > 1) {
      EXPECT_EQ(r.shape, "5x4096") << r.params;  // never at 3001 columns
    }
    vectors += vec > 1;
  }
  EXPECT_GE(vectors, 3u);  // the seeds
  size_t twins = 0;
  for (const std::string& v : verified) {
    const Config c = Config::parse(v.substr(v.find(' ') + 1));
    const int64_t vec = c.get_or("vec", 1), len = c.get_or("len", 0);
    twins += len > 0;
    if (len > 0) {
      // The specialized twins (staged rows): on odd rows of their length.
      EXPECT_EQ(v.substr(0, v.find(' ')), "37x" + std::to_string(len)) << v;
      continue;
    }
    EXPECT_EQ(v.substr(0, v.find(' ')), vec == 1 ? "97x1001" : vec == 2 ? "97x1002" : "97x1004") << v;
  }
  EXPECT_GE(twins, 2u);
}

// The choice itself: the fastest, the fastest exact fits, and the fastest
// of the 4n that hold more warps per SM when built for the length.
TEST(Tuner, SpecializesTheFastestTheExactFitsAndWhatGainsWarps) {
  auto at = [](const char* params, int warps) { return TimedSchedule{0, Config::parse(params), warps}; };
  const std::vector<TimedSchedule> timed = {
      at("cache=4 rows=1 split=1 threads=128 vec=4", 32),  // rows of 2048 cached
      at("cache=2 rows=1 split=1 threads=256 vec=4", 32),
      at("cache=4 rows=1 split=1 threads=256 vec=4", 32),  // exact fits of 4096 from here
      at("cache=2 rows=1 split=1 threads=512 vec=4", 32),
      at("cache=1 rows=1 split=1 threads=1024 vec=4", 32),
      at("cache=8 rows=1 split=1 threads=64 vec=8", 24),  // 4096 too, bf16-like
      at("cache=1 rows=1 split=1 threads=256 vec=4", 0),  // registers unknown
      at("cache=2 rows=1 split=1 threads=64 vec=4", 16),
      at("cache=2 rows=1 split=1 threads=32 vec=4", 8),   // beyond 4n
  };
  //                                 0   1   2   3   4   5   6   7   8
  const std::vector<int> specialized = {48, 32, 32, 32, 64, 32, 64, 32, 64};
  // 0, 1 the fastest; 2, 3 the fastest exact fits; of the schedules that
  // gain warps, 0 is already taken, so the two more are 4 and 5; 6 is
  // unknown, 8 lies beyond 4n.
  EXPECT_EQ(schedules_to_specialize(timed, 4096, 2, specialized), (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  // n = 1: the one gainer among the 4 fastest (0) is already taken.
  EXPECT_EQ(schedules_to_specialize(timed, 4096, 1, specialized), (std::vector<size_t>{0, 2}));
  EXPECT_TRUE(schedules_to_specialize(timed, 4096, 0, specialized).empty());
  // Without registers (PTX, or a failed build) only the first two lists.
  EXPECT_EQ(schedules_to_specialize(timed, 4096, 2, {}), (std::vector<size_t>{0, 1, 2, 3}));
  // Another length: no exact fit, and no gain.
  EXPECT_EQ(schedules_to_specialize(timed, 1000, 2, {32, 32, 32, 32, 32, 24, 0, 16}), (std::vector<size_t>{0, 1}));
}

// One block more than the registers allow, where they are what limits.
TEST(Tuner, RegisterCappedBlocksAskForOneMoreBlock) {
  const ArchLimits& sm90 = require_arch("sm_90");
  EXPECT_EQ(register_capped_blocks(sm90, 256, 58, 0), 5);   // 4 blocks: 2048 registers per warp
  EXPECT_EQ(register_capped_blocks(sm90, 512, 40, 0), 4);   // 3 blocks
  EXPECT_EQ(register_capped_blocks(sm90, 1024, 32, 0), 0);  // 2 blocks: the SM's 2048 threads
  EXPECT_EQ(register_capped_blocks(sm90, 256, 0, 0), 0);    // registers unknown
  // Shared memory holds it to 2 blocks anyway.
  EXPECT_EQ(register_capped_blocks(sm90, 256, 58, 100000), 0);
  // sm_86 holds 1536 threads: three blocks of 512 at 40 registers already.
  EXPECT_EQ(register_capped_blocks(require_arch("sm_86"), 512, 40, 0), 0);
  EXPECT_EQ(register_capped_blocks(require_arch("sm_86"), 512, 64, 0), 3);
}

// The twin is kept where the cap leaves 16 registers beside the held row.
TEST(Tuner, CappedTwinsLeaveRoomBesideTheHeldRow) {
  const ArchLimits& sm90 = require_arch("sm_90");
  auto built = [](int threads, int registers) {
    KernelArtifact a;
    a.block[0] = threads;
    a.registers = registers;
    return a;
  };
  // bf16, 512 threads, 4 vectors of 8 held (16 registers): 4 blocks cap at 32.
  const Config bf16 = Config::parse("cache=4 rows=1 smem=0 threads=512 vec=8");
  EXPECT_EQ(capped_twin_blocks(sm90, bf16, built(512, 40), 2, 1), 4);
  // Two such inputs hold 32 registers: no room.
  EXPECT_EQ(capped_twin_blocks(sm90, bf16, built(512, 40), 2, 2), 0);
  // f32, 8 vectors of 4 (32 registers) capped at 3 blocks (42): no room.
  EXPECT_EQ(capped_twin_blocks(sm90, Config::parse("cache=8 rows=1 smem=0 threads=512 vec=4"), built(512, 56), 4, 1), 0);
  // Staged in shared memory, nothing is held in registers.
  EXPECT_EQ(capped_twin_blocks(sm90, Config::parse("cache=8 rows=1 smem=1 threads=512 vec=4"), built(512, 56), 4, 1), 3);
  // Full occupancy already.
  EXPECT_EQ(capped_twin_blocks(sm90, bf16, built(512, 32), 2, 1), 0);
}

// Without a GPU nothing is specialized unless the model tells a build for
// one row length apart (specialize_modeled: a learned model); then the
// modeled fastest are built for the length as on a GPU, and ranked with
// the rest.
TEST(Tuner, SpecializesWithoutAGpuOnlyWhereTheModelTellsBuildsApart) {
  for (bool modeled : {false, true}) {
    SCOPED_TRACE(modeled);
    ModelTuning t("softmax", DType::kF32, "sm_90", {{4096, 64}});
    TunerOptions opt;
    opt.budget = 4;
    opt.backends = {Backend::kNvrtc};
    opt.specialize_modeled = modeled;
    t.run(opt);
    ASSERT_GT(t.db->size(), 0u);
    size_t built_for_length = 0;
    for (const auto& r : t.db->all()) {
      EXPECT_EQ(r.status, RecordStatus::kModeled) << r.params;
      const int64_t len = Config::parse(r.params).get_or("len", 0);
      EXPECT_TRUE(len == 0 || len == 4096) << r.params;
      built_for_length += len == 4096;
    }
    EXPECT_EQ(built_for_length > 0, modeled);
  }
}

// The model's favourites interleave the timed shapes: each shape's
// predicted best comes before any shape's second.
TEST(ModelRanking, InterleavesEveryShapesFavourites) {
  const auto& c = find_pattern("softmax");
  const ArchLimits& arch = require_arch("sm_90");
  auto wl = make_candidate_workload(c, DType::kF32);
  const std::vector<Problem> problems = {wl->problem({1024, 32768}), wl->problem({65536, 1024})};
  std::vector<Candidate> space;
  for (const auto& cfg : RowReductionTemplate::space(arch, Backend::kNvrtc, 4, 1).enumerate())
    space.push_back({Backend::kNvrtc, cfg});
  const std::vector<Candidate> ranked = model_ranking(space, problems, 4, arch);
  ASSERT_EQ(ranked.size(), space.size());
  auto model = make_analytic_cost_model(arch);
  for (size_t i = 0; i < problems.size(); ++i) {
    const std::vector<double> t = model->predict(problems[i], 4, space);
    const double best = *std::min_element(t.begin(), t.end());
    bool among_first = false;
    for (size_t k = 0; k < problems.size(); ++k)
      among_first |= model->predict(problems[i], 4, {ranked[k]}).front() == best;
    EXPECT_TRUE(among_first) << problems[i].shape_text;
  }
  // Long rows: the model's favourite splits the row across a cluster.
  EXPECT_GT(ranked[1].config.get("split"), 1) << ranked[1].config.to_string();
}

TEST(PipelineHash, DependsOnTheAlgorithmAndDtypeOnly) {
  const auto& a = find_pattern("relu_add");
  const auto& b = find_pattern("residual_add_relu");
  EXPECT_EQ(pipeline_hash(canonical_pipeline_text(a, DType::kF32)), pipeline_hash(canonical_pipeline_text(a, DType::kF32)));
  EXPECT_NE(pipeline_hash(canonical_pipeline_text(a, DType::kF32)), pipeline_hash(canonical_pipeline_text(a, DType::kBF16)));
  EXPECT_NE(pipeline_hash(canonical_pipeline_text(a, DType::kF32)), pipeline_hash(canonical_pipeline_text(b, DType::kF32)));
  EXPECT_NE(canonical_pipeline_text(a, DType::kF32).find("max("), std::string::npos);
}

}  // namespace
}  // namespace fusekit

namespace fusekit {
namespace {

// The analytic model, counting the updates a guided search gives it; with
// `shuffled`, its estimates scaled by up to 2x per schedule and shape, so
// that shapes favour different schedules.
class CountingModel final : public CostModel {
 public:
  explicit CountingModel(const ArchLimits& arch, bool shuffled = false)
      : model_(make_analytic_cost_model(arch)), shuffled_(shuffled) {}
  std::vector<double> predict(const Problem& p, size_t bpe, const std::vector<Candidate>& batch) const override {
    std::vector<double> t = model_->predict(p, bpe, batch);
    for (const Candidate& c : batch) ranked_lengths.insert(c.config.get_or("len", 0));
    for (size_t i = 0; shuffled_ && i < t.size(); ++i)
      t[i] *= 1.0 + static_cast<double>(std::hash<std::string>()(p.shape_text + batch[i].config.to_string()) % 100) / 100;
    return t;
  }
  void update(const Problem&, size_t, const std::vector<Candidate>& batch, const std::vector<double>& us) override {
    ++updates;
    timed += batch.size();
    largest = std::max(largest, batch.size());
    EXPECT_EQ(batch.size(), us.size());
  }
  int updates = 0;
  size_t timed = 0;
  size_t largest = 0;  // the most schedules one update brought
  mutable std::set<int64_t> ranked_lengths;  // the `len` of every schedule predicted (0: generic)

 private:
  std::unique_ptr<CostModel> model_;
  bool shuffled_;
};

// A per-shape guided search on a GPU whose times are the model's own (its
// first batch from the whole pool): the first batch holds the fastest (the
// model's pick) and a random one, the next two improve nothing, and the
// shape retires after them (patience 2), well inside the budget; the model
// heard of every verified time.
TEST(Tuner, GuidedSearchRetiresAShapeThatStopsImproving) {
  ModelTuning t("relu_add", DType::kF32, "sm_90", {{65536}});
  auto guide = std::make_shared<CountingModel>(t.arch);
  TunerOptions opt;
  opt.guide = guide;
  opt.guided.seeds_first = false;
  opt.hint_twins = 0;
  tune_on_fake_gpu(t, opt, 24, Backend::kNvrtc);
  const size_t batches = 1 + opt.guided.patience, batch = 1 + opt.guided.explore;
  EXPECT_EQ(t.db->size(), batches * batch);
  EXPECT_EQ(guide->updates, static_cast<int>(batches));
  EXPECT_EQ(guide->timed, batches * batch);
  for (const auto& r : t.db->all()) EXPECT_EQ(r.status, RecordStatus::kOk) << r.params << " " << r.error;
}

// Shared picks, each timed at every shape, the first batch from the whole
// pool: the second batch improves nothing and the plateau stop ends the
// search there.
TEST(Tuner, SharedGuidedSearchStopsWhenABatchImprovesNothing) {
  ModelTuning t("relu_add", DType::kF32, "sm_90", {{65536}});
  auto guide = std::make_shared<CountingModel>(t.arch);
  TunerOptions opt;
  opt.guide = guide;
  opt.guided.picks_per_problem = 0;
  opt.guided.seeds_first = false;
  opt.hint_twins = 0;
  tune_on_fake_gpu(t, opt, 24, Backend::kNvrtc);
  EXPECT_EQ(t.db->size(), 2 * opt.guided_batch);
  EXPECT_EQ(guide->updates, 2);
  EXPECT_EQ(guide->timed, 2 * opt.guided_batch);
}

// Five timed shapes, per-shape picks: a schedule is timed at every shape
// only as the batch's random pick; a shape's own favourite is timed where it was picked, so
// there are far fewer records than schedules times shapes.
TEST(Tuner, GuidedSearchTimesEachShapesFavouriteThere) {
  ModelTuning t("relu_add", DType::kF32, "sm_90", {{4096}, {65536}, {1 << 20}, {3001}, {12345}});
  auto guide = std::make_shared<CountingModel>(t.arch, true);
  TunerOptions opt;
  opt.guide = guide;
  opt.hint_twins = 0;
  tune_on_fake_gpu(t, opt, 60, Backend::kNvrtc);
  std::map<std::string, std::set<std::string>> shapes;  // params -> shapes timed at
  for (const auto& r : t.db->all()) shapes[r.params].insert(r.shape);
  size_t everywhere = 0, records = 0;
  for (const auto& [params, at] : shapes) {
    everywhere += at.size() == 5;
    records += at.size();
  }
  EXPECT_GE(everywhere, 1u) << "the random picks";
  EXPECT_LT(records, 5 * shapes.size() * 2 / 3) << records << " records of " << shapes.size() << " schedules";
  EXPECT_LE(guide->largest, 1u + 2u) << "an update holds a shape's own pick and the random one (or another's)";
}

// With rank_specialized, a guided row search's model ranks each schedule as
// built for the shape's row length, while what it times stays generic until
// the leaders' specialization; without, it ranks the generic schedules.
TEST(Tuner, AGuidedRowSearchCanRankSchedulesAsBuiltForTheRowLength) {
  for (bool rank_specialized : {false, true}) {
    SCOPED_TRACE(rank_specialized);
    ModelTuning t("layernorm", DType::kBF16, "sm_90", {{4096, 64}, {16384, 16}});
    auto guide = std::make_shared<CountingModel>(t.arch);
    TunerOptions opt;
    opt.guide = guide;
    opt.rank_specialized = rank_specialized;
    tune_on_fake_gpu(t, opt, 24, Backend::kNvrtc);
    const std::set<int64_t> lengths = rank_specialized ? std::set<int64_t>{4096, 16384} : std::set<int64_t>{0};
    EXPECT_EQ(guide->ranked_lengths, lengths);
    size_t generic = 0;
    for (const auto& r : t.db->all()) generic += Config::parse(r.params).get_or("len", 0) == 0;
    EXPECT_GT(generic, 2u) << "the search's own picks are timed generic";
  }
}

// A guided row search times each length's fastest schedule of the first
// batch specialized for that length right after it, and no schedule twice
// at a shape (the final specialization skips what the early one timed).
TEST(Tuner, GuidedRowSearchSpecializesTheFirstBatchsLeaders) {
  ModelTuning t("layernorm", DType::kBF16, "sm_90", {{4096, 64}, {16384, 16}});
  TunerOptions opt;
  opt.guide = std::make_shared<CountingModel>(t.arch);
  tune_on_fake_gpu(t, opt, 24, Backend::kNvrtc);
  const std::vector<TuningRecord> records = t.db->all();
  std::vector<std::string> first_batch;  // the generic schedules timed before the first specialized one
  std::set<std::string> seen;            // shape and params
  bool specialized = false;
  for (const auto& r : records) {
    ASSERT_EQ(r.status, RecordStatus::kOk) << r.params << " " << r.error;
    EXPECT_TRUE(seen.insert(r.shape + " " + r.params).second) << r.params << " timed twice at " << r.shape;
    specialized |= Config::parse(r.params).get_or("len", 0) != 0;
    if (!specialized && std::find(first_batch.begin(), first_batch.end(), r.params) == first_batch.end())
      first_batch.push_back(r.params);
  }
  ASSERT_GE(first_batch.size(), 2u) << "a pick per shape (or one they share) and a random one";
  ASSERT_LE(first_batch.size(), opt.guided_batch);
  for (const auto& [shape, cols] : std::map<std::string, int64_t>{{"64x4096", 4096}, {"16x16384", 16384}}) {
    SCOPED_TRACE(shape);
    const TuningRecord* leader = nullptr;
    for (const auto& r : records)
      if (r.shape == shape && std::count(first_batch.begin(), first_batch.end(), r.params) &&
          (!leader || r.median_us < leader->median_us))
        leader = &r;
    ASSERT_NE(leader, nullptr);
    const std::string twin = RowReductionTemplate::specialize(Config::parse(leader->params), cols).to_string();
    // Timed before any generic schedule of a later batch.
    auto at = [&](auto pred) { return std::find_if(records.begin(), records.end(), pred) - records.begin(); };
    const auto twin_at = at([&](const TuningRecord& r) { return r.shape == shape && r.params == twin; });
    const auto second_batch_at = at([&](const TuningRecord& r) {
      return Config::parse(r.params).get_or("len", 0) == 0 && !std::count(first_batch.begin(), first_batch.end(), r.params);
    });
    ASSERT_LT(twin_at, static_cast<long>(records.size())) << twin << " was not timed";
    EXPECT_LT(twin_at, second_batch_at) << twin << " was timed after the second batch began";
  }
}

// A guided row search specializes only leaders: after its first batch and
// at its end, each row length's fastest generic schedule so far (and its
// hint=2 twin), never the full search's wider list (exact fits, register-
// capped twins, the next fastest); the final leader is among them.
TEST(Tuner, GuidedRowSearchEndsOnItsLeadersSpecialized) {
  ModelTuning t("layernorm", DType::kBF16, "sm_90", {{4096, 64}, {16384, 16}});
  TunerOptions opt;
  opt.guide = std::make_shared<CountingModel>(t.arch);
  tune_on_fake_gpu(t, opt, 24, Backend::kNvrtc);
  auto generic_of = [](const std::string& params) {
    Config c = Config::parse(params);
    c.set("len", 0);
    c.set("hint", 0);
    return c.to_string();
  };
  const std::vector<TuningRecord> records = t.db->all();
  for (const auto& [shape, cols] : std::map<std::string, int64_t>{{"64x4096", 4096}, {"16x16384", 16384}}) {
    SCOPED_TRACE(shape);
    const TuningRecord* leader = nullptr;
    std::set<std::string> specialized;
    for (const auto& r : records) {
      if (r.shape != shape) continue;
      if (Config::parse(r.params).get_or("len", 0) == 0) {
        if (!leader || r.median_us < leader->median_us) leader = &r;
        continue;
      }
      ASSERT_NE(leader, nullptr) << r.params << " specialized before any generic schedule was timed";
      EXPECT_EQ(generic_of(r.params), generic_of(leader->params)) << r.params << " is not the leader's";
      specialized.insert(r.params);
    }
    ASSERT_NE(leader, nullptr);
    const std::string twin = RowReductionTemplate::specialize(Config::parse(leader->params), cols).to_string();
    EXPECT_EQ(specialized.count(twin), 1u) << "the final leader " << leader->params << " was not specialized";
  }
}

}  // namespace
}  // namespace fusekit
