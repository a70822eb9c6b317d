// The tuning loop's narrow interfaces (after TVM's meta-schedule and KTT).
// Call order, per workload and arch:
//
//   strategy.next_batch() ──► builder.build(batch) ──► measurer.measure(...)
//        ▲                                                   │
//        └──────────── strategy.notify(results) ◄────────────┤
//                      stop.update(results)     ◄────────────┘
//
// Database writes happen in the Tuner, never inside strategies.
#pragma once

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fusekit/kernel_artifact.h"
#include "schedules/arch_limits.h"
#include "schedules/backend.h"
#include "schedules/param_space.h"
#include "search/workload.h"
#include "tunedb/record.h"

namespace fusekit {

// One point of the search: a backend and its schedule parameters.
struct Candidate {
  Backend backend = Backend::kNvrtc;
  Config config;
};

// Artifact or the reason there is none.
struct BuildResult {
  bool ok = false;
  KernelArtifact artifact;
  std::string error;
};

// Compiles candidates of one workload for one arch.
class Builder {
 public:
  virtual ~Builder() = default;
  virtual std::vector<BuildResult> build(const std::vector<Candidate>& batch) = 0;
};

// What the measurer found for one artifact at one problem.
struct MeasureResult {
  RecordStatus status = RecordStatus::kOk;
  std::vector<double> samples_us;   // per-launch kernel times
  double verify_error = 0.0;        // Comparison::max_ratio
  std::string error;
  // Which of the tuned problems this result is of (the Tuner's index; -1
  // when not one of them), so a strategy learns each time at its shape.
  int problem = -1;
  // Which candidate of its batch this result is of (the Tuner's index; -1:
  // the result's own position, where results and batch align).
  int candidate = -1;
  // Filled from samples_us by summarize().
  double median_us = 0.0, p20_us = 0.0, p80_us = 0.0;
  void summarize();
};

// Where a measurement ran, for record provenance.
struct DeviceInfo {
  std::string gpu_name;       // "NVIDIA H200", or "model:<example part>" for estimates
  Arch arch;
  int sm_count = 0;
  double l2_bytes = 0;
  std::string driver_version;
  bool measured = false;      // false: a cost model, not a GPU
};

struct MeasureOptions {
  bool time = true;           // false: verify only
  int min_samples = 30;
  int max_samples = 300;
  double target_ms = 25.0;    // aim for this much timed kernel time
  // A batch's timed launches are split into this many interleaved rounds
  // (each times a block of every candidate in turn, the order rotated).
  int rounds = 5;
  uint64_t seed = 1;          // input data seed
  // A measuring worker (search/measure_worker.h) that reports nothing for
  // this long plus twenty times the step's expected time is killed and the
  // candidate recorded as a timeout.
  double launch_deadline_s = 20.0;
  // Each timed block waits on the GPU behind a gate the host opens once it
  // has issued the whole block, so that the launches run back to back and
  // each sample is the kernel's own rather than partly the host's launch;
  // false times launches as the host issues them (records of the two ways
  // are not comparable at a few microseconds).
  bool queued = false;
};

// One built candidate handed to a measurer.
struct MeasureInput {
  const Candidate* candidate;
  const KernelArtifact* artifact;
};

class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual const DeviceInfo& device() const = 0;
  // Makes `problem`'s host data (seeded inputs, the CPU reference) ready
  // for measure(), which otherwise does it itself: a tuner calls it first,
  // so that its progress tells preparing a problem apart from running it.
  virtual void prepare(const Workload& workload, const Problem& problem, const MeasureOptions& options) {}
  // Verifies each artifact against the reference (GPU measurers) and times it.
  virtual std::vector<MeasureResult> measure(const Workload& workload, const Problem& problem,
                                             const std::vector<MeasureInput>& batch,
                                             const MeasureOptions& options) = 0;
};

// The batch index `results[position]` is of: its `candidate`, else its
// position.
inline size_t candidate_index(const std::vector<MeasureResult>& results, size_t position) {
  const int c = results[position].candidate;
  return c >= 0 ? static_cast<size_t>(c) : position;
}
// How many candidates `results` speak of (each once, however many problems
// timed it).
size_t candidates_in(const std::vector<MeasureResult>& results);

// Proposes candidates; learns from results.
class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  // Up to `max` candidates not proposed before; empty when exhausted.
  virtual std::vector<Candidate> next_batch(size_t max) = 0;
  // Per candidate of the last batch, the tuned problems (indices) to time it
  // at, an empty list meaning every one; an empty result: every candidate
  // at every problem.
  virtual std::vector<std::vector<int>> batch_problems() const { return {}; }
  // Every outcome of the batch: one per candidate and timed problem, each
  // naming its candidate (MeasureResult::candidate) and problem.
  virtual void notify(const std::vector<Candidate>& batch, const std::vector<MeasureResult>& results) = 0;
};

// Ends a search (after KTT's StopCondition).
class StopCondition {
 public:
  virtual ~StopCondition() = default;
  virtual bool is_fulfilled() const = 0;
  // A batch's outcomes, as SearchStrategy::notify takes them.
  virtual void update(const std::vector<MeasureResult>& results) = 0;
};

// Batched time prediction for an arch without its GPU.
class CostModel {
 public:
  virtual ~CostModel() = default;
  // Predicted kernel time in microseconds per candidate.
  virtual std::vector<double> predict(const Problem& problem, size_t bytes_per_element,
                                      const std::vector<Candidate>& batch) const = 0;
  // Measured times of `batch` at `problem`: a learned model fits them, the
  // analytic one ignores them.
  virtual void update(const Problem& problem, size_t bytes_per_element, const std::vector<Candidate>& batch,
                      const std::vector<double>& measured_us) = 0;
};

// Factories (implementations live in .cpp files).
std::unique_ptr<SearchStrategy> make_exhaustive_strategy(std::vector<Candidate> space);
std::unique_ptr<SearchStrategy> make_random_strategy(std::vector<Candidate> space, size_t budget, uint64_t seed);
// The legal members of `seeds` first (known-good starting points), then up
// to `ranked_budget` members of `ranked` in its order (a cost model's
// favourites), then a random sample of the rest of `space`, `budget` in all.
std::unique_ptr<SearchStrategy> make_seeded_random_strategy(std::vector<Candidate> space,
                                                            const std::vector<Candidate>& seeds, size_t budget,
                                                            uint64_t seed, const std::vector<Candidate>& ranked = {},
                                                            size_t ranked_budget = 0);
std::unique_ptr<StopCondition> make_count_stop(size_t max_candidates);
struct GuidedOptions {
  size_t explore = 1;   // seeded random picks from the whole space per batch, timed at every problem
  size_t pool = 4096;   // schedules the model ranks: the whole space where smaller, else a seeded draw
  size_t grow = 64;     // schedules one parameter away from a new best that join the pool
  std::vector<Config> seeds;  // in the pool whatever the draw (the template's seeds, spelled as the space's)
  // N: each problem is a task of its own (as MetaSchedule's task scheduler
  // has them): its N favourites per batch, timed at the problems that
  // picked them only, until `patience` of its batches in a row improved its
  // best by no more than that best's spread (at least `min_gain`). 0: the
  // model's picks are shared, each timed at every problem.
  size_t picks_per_problem = 1;
  size_t patience = 2;
  double min_gain = 0.01;
  // The first batch's picks are ranked among `seeds` alone (the rest of the
  // pool from the second batch on).
  bool seeds_first = true;
  // Set: the model ranks what each schedule will be timed as in the end at a
  // problem (a row search's leaders are built again for the row length)
  // instead of the schedule itself; what is timed and learned stays the
  // schedule.
  std::function<Config(const Config&, const Problem&)> rank_as;
};
// Model-guided search (search/guided_strategy.cpp): each batch is each
// problem's own picks_per_problem favourites of the pool by `model` (with
// picks_per_problem 0, the `batch - explore` favourites of all problems in
// turn; the first batch among the seeds alone, with seeds_first) and
// `explore` random others; notify() feeds every timed
// result to model.update, so the next batch is ranked by what was
// measured, and adds the neighbours of each problem's new best to the pool.
// `model` must outlive the strategy.
std::unique_ptr<SearchStrategy> make_guided_strategy(std::vector<Candidate> space, CostModel& model,
                                                     std::vector<Problem> problems, size_t bytes_per_element,
                                                     const GuidedOptions& options, uint64_t seed);
// The same over a space too large to list: the pool and the random picks
// are drawn (ParamSpace::sample until legal), a best's neighbours made by
// changing one parameter.
std::unique_ptr<SearchStrategy> make_guided_strategy(const ParamSpace& space, Backend backend, CostModel& model,
                                                     std::vector<Problem> problems, size_t bytes_per_element,
                                                     const GuidedOptions& options, uint64_t seed);
// Ends a search after `max_candidates`, or after a batch (once `min_batches`
// have run) that improved no problem's best time by more than that best's
// own spread ((p80 - p20) / median, at least `min_gain`).
std::unique_ptr<StopCondition> make_plateau_stop(size_t max_candidates, size_t min_batches, double min_gain);
std::unique_ptr<CostModel> make_analytic_cost_model(const ArchLimits& arch);
// A measurer that never runs anything: verification is skipped and the time
// is the cost model's estimate (records get status kModeled).
std::unique_ptr<Measurer> make_model_measurer(const ArchLimits& arch);
// The same with another cost model's estimates (a learned one); `name`
// follows "model:" in the records' gpu_name.
std::unique_ptr<Measurer> make_model_measurer(const ArchLimits& arch, std::shared_ptr<CostModel> model,
                                              const std::string& name);
// The GPU measurer (device 0, driver API) in this process. Throws
// UserError when no usable GPU is present, with the driver's reason.
// make_worker_measurer (search/measure_worker.h) measures in a child process.
std::unique_ptr<Measurer> make_gpu_measurer();

}  // namespace fusekit
