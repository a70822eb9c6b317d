// The Tuner: runs the search for one workload on one arch and commits every
// outcome (measured, modeled or failed) to the database.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "schedules/pointwise_template.h"
#include "schedules/row_reduction_template.h"
#include "search/interfaces.h"
#include "tunedb/tune_db.h"

namespace fusekit {

// One workload (candidate at one dtype) to tune.
struct TuneTask {
  const Workload* workload = nullptr;
  Builder* builder = nullptr;
  std::string pattern;
  std::string pipeline_hash;
  std::string pipeline_text;
  std::vector<std::vector<int64_t>> domains;   // shapes timed, innermost first
  std::vector<int64_t> verify_domain;          // odd shape every candidate must also pass
  TemplateKind kind = TemplateKind::kPointwise;
  int cached_inputs = 1;                       // full-size inputs (row reductions' register budget)
  OpTraits traits;                          // row reductions: weights, pairs of reductions
};

// `space` in the analytic model's order of preference across `problems`:
// every problem's predicted fastest, then every problem's second, and so on,
// each candidate once.
std::vector<Candidate> model_ranking(const std::vector<Candidate>& space, const std::vector<Problem>& problems,
                                     size_t bytes_per_element, const ArchLimits& arch);

// Row-reduction seeds in the order the budget takes them: round-robin over
// the timed row lengths (`row_lengths`, in order, each once), each length's
// seeds whose cached row is exactly that long in their own order; then the
// seeds that fit none (re-reading ones, other lengths'). A tune of rows of
// 65536 measures the seeds made for them before those made for rows of
// 1024, and a tune of several lengths shares the budget among them.
std::vector<Candidate> order_row_seeds(const std::vector<Candidate>& seeds, const std::vector<int64_t>& row_lengths);

// The shape bucket a problem's records go to: the element count's, and for
// row reductions also the row length's (see fusekit/shape_bucket.h).
std::string problem_bucket(TemplateKind kind, const Problem& problem);

// A verified generic schedule's time on one problem, and how many of its
// warps an SM holds at once (ptxas's registers; 0 when unknown).
struct TimedSchedule {
  double us = 0;
  Config config;
  int resident_warps = 0;
};

// Which of one row length's timed generic schedules (`timed`, fastest
// first) to build again for that length: the `n` fastest, the `n` fastest
// whose cached row is exactly `cols` long, and of the 4n fastest the `n`
// fastest others whose build for the length holds more warps per SM
// (`specialized_warps[k]` for timed[k], k < 4n; 0 when unknown). Indices
// into `timed`, each once, in that order.
std::vector<size_t> schedules_to_specialize(const std::vector<TimedSchedule>& timed, int64_t cols, size_t n,
                                            const std::vector<int>& specialized_warps);

// The blocks per SM to ask of ptxas (a row schedule's minb) for one more
// resident block of `threads` threads than `registers` registers per thread
// allow, where registers are what holds them back (threads, the blocks
// limit and `shared_bytes` would allow more); 0 where they are not, or are
// unknown (registers <= 0).
int register_capped_blocks(const ArchLimits& arch, int threads, int registers, int shared_bytes);

// The minb of a row schedule's register-capped twin, built as `built`: the
// register_capped_blocks of its build where that cap leaves 16 registers
// beside the row a thread holds in registers (cache * vec * element bytes *
// cached inputs / 4); else 0 (no twin). ptxas spills to get there, and the
// timing decides: a small spill for one more block per SM can win, a large
// one loses badly (docs/architecture.md, "Decisions and findings").
int capped_twin_blocks(const ArchLimits& arch, const Config& config, const KernelArtifact& built, int element_bytes,
                       int cached_inputs);

// A record's kernel_hash: 16 hex digits of XXH64 over the artifact's entry
// name and image (cubin or PTX), so the same schedule printed differently by
// another fusekit, or compiled by another NVRTC, reads as another kernel.
std::string kernel_hash(const KernelArtifact& artifact);

// Versions and host name stamped on every record.
struct Provenance {
  std::string fusekit_version;
  std::string halide_version;
  std::string cuda_version;
  std::string host;
};

struct TunerOptions {
  std::vector<Backend> backends = {Backend::kNvrtc, Backend::kHalide};
  size_t budget = 24;            // candidates per backend (exhaustive when the space is smaller)
  size_t batch = 32;             // candidates built and measured together
  // Row reductions on a GPU: each timed row length's `specialize` fastest
  // generic NVRTC schedules, as many of the fastest whose cached row is
  // exactly that long, and as many more of the 4 * `specialize` fastest whose
  // build for that length fits more warps per SM (ptxas registers), are
  // built again for that length (`len`) and measured beside them, each
  // whose registers keep blocks off an SM also with its registers capped
  // for one block more (minb, register_capped_blocks), and each without
  // load hints also with Inductor's (hint=2, where legal); 0 turns it off.
  size_t specialize = 2;
  // Pointwise ops on a GPU: each timed problem's `hint_twins` fastest NVRTC
  // schedules without load hints are measured again with hint=2 (evict_last
  // loads, where the space has it) once the search is done; 0 turns it off.
  size_t hint_twins = 3;
  uint64_t seed = 1;
  // Set: model-guided search (make_guided_strategy) instead of the seeded
  // sample, in batches of guided.picks_per_problem per timed shape plus
  // `guided.explore` random ones, ended when every shape has retired or at
  // the budget; with shared picks (guided.picks_per_problem 0), batches of
  // `guided_batch`, or of the timed shapes' count plus `guided.explore`
  // where that is more, ended by a plateau (make_plateau_stop).
  std::shared_ptr<CostModel> guide;
  size_t guided_batch = 4;
  // Guided row searches that specialize their leaders (GPU, `specialize` >
  // 0): the model ranks each schedule as built for the problem's row length
  // (GuidedOptions::rank_as; off by default until measured).
  bool rank_specialized = false;
  // Row reductions without a GPU: specialize as on one, each build ranked by
  // the cost model. For a learned model of the arch, which tells a build for
  // one row length apart (its `len` feature); the analytic model does not.
  bool specialize_modeled = false;
  GuidedOptions guided;
  MeasureOptions measure;
  Provenance provenance;
  // Called with one line per finished step (for progress output).
  std::function<void(const std::string&)> progress;
};

struct TuneSummary {
  size_t records = 0;            // committed
  size_t measured = 0;           // verified and timed on the GPU ("ok")
  size_t modeled = 0;            // ranked by the cost model, never run
  size_t failed = 0;             // compile / launch / verify errors
  size_t pruned = 0;             // illegal for a size, never run
};

TuneSummary tune(const TuneTask& task, Measurer& measurer, TuneDb& db, const ArchLimits& arch,
                 const TunerOptions& options);

}  // namespace fusekit
