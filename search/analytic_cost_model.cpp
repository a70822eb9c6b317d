// The analytic cost model used when the requested arch's GPU is absent.
//
//   time = launch + bytes / (peak_bw * 0.92 * access * mlp) * tail
//
//   launch  a fixed kernel cost (2 microseconds).
//   access  bytes per access: >= 16 -> 1.0, 8 -> 0.95, 4 -> 0.85, 2 -> 0.7.
//   mlp     memory-level parallelism: bytes in flight per SM (resident
//           threads * vec * ept * element size * tensors) over the Little's
//           law need (per-SM bandwidth * 600 ns), capped at 1.
//   tail    wave quantization: ceil(waves) / waves for a one-shot grid with
//           fewer than ~8 waves; 1 for grid-stride.
// Row reductions (configs without `ept`): see predict_row_reduction. Both
// models are checked against the H200 measurements in bench/results by
// bench/model_regret and tests/search/model_regret_test.cpp.
// It ranks schedules; its absolute numbers are estimates and are stored with
// status "modeled", never as measurements.
#include <algorithm>
#include <cmath>

#include "search/general_layout_cost.h"
#include "search/interfaces.h"

namespace fusekit {
namespace {

// A row-reduction schedule at one problem, in the model's terms.
struct RowSchedule {
  double cols = 0, rows = 0;  // row length; rows = every outer axis (ndrows has three)
  bool halide = false;
  double threads = 0, per_block = 0, vec = 0, cache = 0;
  double split = 0;  // blocks per row
  double elem = 0;
  double full_inputs = 0;  // inputs of the whole [rows, cols] shape
  double access = 0;
  double per_pass = 0;  // columns one pass of the block(s) covers
  double chunks = 0;
  bool cached = false;
  double utilization = 0;
  double held = 0;
  bool recompute = false;
  bool staged = false;
  double grid_per_sm = 0;
  double persist = 0;
  double batch = 0;
};

RowSchedule row_schedule(const Problem& problem, size_t bytes_per_element, const Config& c) {
  RowSchedule s;
  s.cols = static_cast<double>(problem.domain.at(0));
  s.rows = 1.0;
  for (size_t k = 1; k < problem.domain.size(); ++k) s.rows *= static_cast<double>(problem.domain[k]);
  s.halide = !c.values().count("cache");
  s.threads = static_cast<double>(c.get("threads"));
  s.per_block = static_cast<double>(c.get_or("rows", 1));
  s.vec = static_cast<double>(c.get_or("vec", 1));
  s.cache = static_cast<double>(c.get_or("cache", 0));
  s.split = static_cast<double>(c.get_or("split", 1));
  s.elem = static_cast<double>(bytes_per_element);
  for (const auto& d : problem.input_dims) {
    double n = 1;
    for (int64_t e : d) n *= static_cast<double>(e);
    s.full_inputs += n == s.cols * s.rows ? 1 : 0;
  }
  s.full_inputs = std::max(1.0, s.full_inputs);
  const double access_bytes = s.vec * s.elem;
  s.access = access_bytes >= 16 ? 1.0 : access_bytes >= 8 ? 0.95 : access_bytes >= 4 ? 0.85 : 0.7;
  s.per_pass = s.threads * s.split * s.vec;
  s.chunks = std::ceil(s.cols / s.per_pass);
  s.cached = !s.halide && s.cache > 0 && s.cols <= s.per_pass * s.cache;
  // Useful lanes over all passes: a row of 3001 in passes of 2048 leaves
  // a quarter of the lanes idle.
  s.utilization = s.cols / (s.chunks * s.per_pass);
  // Elements a thread holds at once: its cached vectors, else the vectors
  // a re-reading pass loads together (unroll).
  s.held = (s.cached ? std::min(s.cache, s.chunks) : std::min<double>(c.get_or("unroll", 1), s.chunks)) * s.vec;
  // keep=0 on a cached row: no reduction body kept per element (one f32
  // each for the ops that keep one, about half of them), more arithmetic.
  s.recompute = s.cached && c.get_or("keep", 1) == 0;
  // smem=1 stages the row in shared memory: the registers hold only the
  // batch of four vectors the first pass has in flight (the next batch's
  // loads wait for this one's staging stores), and shared memory (the
  // inputs and, for about half the ops, one kept f32 per element) bounds
  // the blocks per SM instead.
  s.staged = s.cached && c.get_or("smem", 0) == 1;
  // persist=P: P blocks per SM loop over the row groups, the next group's
  // staged row in flight (asynchronous copies into a second buffer, no
  // registers) while a block works on the current one.
  // A row that does not fit takes the re-reading loop of the same grid.
  s.grid_per_sm = static_cast<double>(c.get_or("persist", 0));
  s.persist = s.staged ? s.grid_per_sm : 0.0;
  s.batch = s.persist > 0 ? s.held : s.staged ? std::min(s.held, 4.0 * s.vec) : s.held;
  return s;
}

// How many blocks of a schedule an SM holds, and what its registers cost.
struct RowResidency {
  double block_threads = 0;
  double spill = 0;  // > 1: registers past the cap, spilled to local memory
  double fit_per_sm = 0;
  double blocks_per_sm = 0;
};

// Residency follows threads and an estimate of registers: 32 plus, per
// element a thread holds, its storage and one f32 for the math.
RowResidency row_residency(const ArchLimits& arch, const RowSchedule& s) {
  RowResidency r;
  const double per_element = s.full_inputs * s.elem / 4.0 + (s.recompute ? 0.5 : 1.0);
  const double registers = 32.0 + (s.persist > 0 ? s.vec : s.batch) * per_element;
  r.block_threads = s.threads * s.per_block;
  const double staged_bytes =
      s.staged
          ? r.block_threads * s.held * (s.full_inputs * s.elem * (s.persist > 0 ? 2.0 : 1.0) + (s.recompute ? 0.0 : 2.0))
          : 0.0;
  const double smem_blocks =
      s.staged ? std::floor((arch.max_shared_per_block + 1024.0) / std::max(1.0, staged_bytes)) : 1e9;
  // More registers than a block can have: the compiler spills to local
  // memory, which costs about as much again as the excess.
  const double register_cap = std::min<double>(arch.max_registers_per_thread, arch.registers_per_sm / r.block_threads);
  r.spill = std::max(1.0, registers / register_cap);
  r.fit_per_sm = std::max(
      1.0, std::min({static_cast<double>(arch.max_blocks_per_sm), std::floor(arch.max_threads_per_sm / r.block_threads),
                     std::floor(arch.registers_per_sm / (std::min(registers, register_cap) * r.block_threads)),
                     smem_blocks}));
  r.blocks_per_sm = s.grid_per_sm > 0 ? std::min(s.grid_per_sm, r.fit_per_sm) : r.fit_per_sm;
  return r;
}

// Bytes (twice for a row longer than the registers hold) at the DRAM rate
// scaled by access width, idle threads and the bytes in flight per SM.
double row_bandwidth_us(const ArchLimits& arch, const RowSchedule& s, const RowResidency& r, double bytes) {
  const double in_flight = r.blocks_per_sm * r.block_threads * s.utilization * s.batch * s.elem * s.full_inputs;
  const double need = arch.dram_gbps * 1e9 / arch.sm_count * 600e-9;
  const double mlp = std::min(1.0, in_flight / need);
  const double bw = arch.dram_gbps * 1e9 * 0.92 * s.access * mlp * s.utilization;
  return bytes * (s.cached ? 1.0 : 2.0) / bw * 1e6;
}

// Rows per SM / rows resident per SM x one row's dependent phases.
double row_latency_us(const ArchLimits& arch, const RowSchedule& s, const RowResidency& r, const Config& c) {
  // One row's dependent phases (µs): the first load's latency, two
  // combines (shuffles; shared memory and a barrier past a warp; a cluster
  // barrier across blocks), the re-reads of an uncached row, the store.
  // Halide's partials are summed serially: all threads * vec of them by
  // one thread, or (lanes=1) a warp's share per lane and 32 by shuffles.
  const double serial = c.get_or("lanes", 0) == 1 ? s.threads / 32.0 * s.vec + 32.0 : s.threads * s.vec;
  const double combine = (s.threads > 32 ? 0.25 : 0.05) + (s.split > 1 ? 0.5 : 0.0) + (s.halide ? 0.004 * serial : 0.0);
  // A thread's own arithmetic over the elements it holds, about 8
  // instructions per element per pass for three passes, issued by one of
  // four schedulers shared with the other resident warps (~2 GHz).
  const double warps_per_scheduler = r.blocks_per_sm * r.block_threads / 32.0 / 4.0;
  // A staged row adds a shared-memory load (and a store) per vector and pass.
  const double compute_us =
      (s.cached ? s.held : s.vec) * (s.recompute ? 3.5 : 3.0) * (s.staged ? 9.0 : 8.0) * warps_per_scheduler / 2000.0;
  // A re-reading pass waits on memory once per batch of `unroll` vectors.
  const double rereads = s.cached ? 0.0 : std::ceil(s.chunks / static_cast<double>(c.get_or("unroll", 1)));
  // Each further batch of a staged row's first pass waits out a load latency.
  const double batches = s.staged ? std::ceil(s.held / s.batch) - 1.0 : 0.0;
  // A persistent block's load was issued during the previous group, but it
  // is charged as if it waited for it: a block still takes one row group at
  // a time through its phases, and measurements showed no gain.
  // onepass=1 finishes a pair of reductions with one combine.
  const double combines = c.get_or("onepass", 0) == 1 ? 1.0 : 2.0;
  const double phase_us = 1.0 + combines * combine + 2.0 * 0.5 * rereads + 1.0 * batches + 0.5 + compute_us;
  const double resident_rows = r.blocks_per_sm * s.per_block / s.split;
  return s.rows / arch.sm_count / resident_rows * phase_us;
}

// Wave quantization of the grid.
double row_tail(const ArchLimits& arch, const RowSchedule& s, const RowResidency& r) {
  const double blocks = std::ceil(s.rows / s.per_block) * s.split;
  double waves = blocks / (arch.sm_count * r.blocks_per_sm);
  // Persistent blocks: groups per cluster, in turns; blocks beyond what
  // fits per SM wait for a whole turn of the others.
  if (s.grid_per_sm > 0)
    waves = std::ceil(s.rows / s.per_block) / std::max(1.0, std::floor(s.grid_per_sm * arch.sm_count / s.split));
  const double queued = s.grid_per_sm > r.fit_per_sm ? std::ceil(s.grid_per_sm / r.fit_per_sm) : 1.0;
  return (waves < 8 ? std::ceil(waves) / waves : 1.0) * queued;
}

class AnalyticCostModel final : public CostModel {
 public:
  explicit AnalyticCostModel(const ArchLimits& arch) : arch_(arch) {}

  std::vector<double> predict(const Problem& problem, size_t bytes_per_element,
                              const std::vector<Candidate>& batch) const override {
    std::vector<double> out;
    const double bytes = problem.bytes_moved(bytes_per_element);
    const double tensors = static_cast<double>(problem.input_dims.size() + problem.output_dims.size());
    const double n = static_cast<double>(problem.elements());
    for (const auto& c : batch) {
      if (c.config.values().count("rsplit")) {  // a general layout (Halide)
        out.push_back(predict_general_layout(problem, bytes, bytes_per_element, c.config, arch_));
        continue;
      }
      if (!c.config.values().count("ept")) {  // a row reduction (NVRTC or Halide schedule)
        out.push_back(predict_row_reduction(problem, bytes, bytes_per_element, c.config));
        continue;
      }
      const double threads = static_cast<double>(c.config.get("threads"));
      const double vec = static_cast<double>(c.config.get("vec"));
      const double ept = static_cast<double>(c.config.get("ept"));
      const double grid = static_cast<double>(c.config.get_or("grid", 0));
      const double access_bytes = vec * static_cast<double>(bytes_per_element);
      const double access = access_bytes >= 16 ? 1.0 : access_bytes >= 8 ? 0.95 : access_bytes >= 4 ? 0.85 : 0.7;
      const double blocks_per_sm =
          std::min<double>(arch_.max_blocks_per_sm, std::floor(arch_.max_threads_per_sm / threads));
      const double tile = threads * vec * ept;
      const double blocks = std::ceil(n / tile);
      const double resident_blocks = grid > 0 ? std::min(grid, blocks_per_sm) : blocks_per_sm;
      const double in_flight = resident_blocks * threads * vec * ept * bytes_per_element * tensors;
      const double need = arch_.dram_gbps * 1e9 / arch_.sm_count * 600e-9;
      const double mlp = std::min(1.0, in_flight / need);
      double tail = 1.0;
      if (grid == 0) {
        const double waves = blocks / (arch_.sm_count * blocks_per_sm);
        tail = waves < 8 ? std::ceil(waves) / waves : 1.0;
      }
      const double bw = arch_.dram_gbps * 1e9 * 0.92 * access * mlp;
      // Fast math (NVRTC): cheaper transcendentals; a tie-breaker where
      // memory decides, as for row reductions.
      const double math = c.config.get_or("fast", 1) ? 1.0 : 1.03;
      out.push_back(2.0 + bytes / bw * 1e6 * tail * math);
    }
    return out;
  }
  void update(const Problem&, size_t, const std::vector<Candidate>&, const std::vector<double>&) override {}

 private:
  // Row reductions. A block (or a cluster of `split` blocks) owns `rows`
  // rows at a time and takes each through dependent phases: load, one
  // combine per reduction, store. Two limits, combined as a 3-norm (the
  // larger dominates; a close second still costs):
  //   bandwidth  bytes (twice for a row longer than the registers hold) at
  //              the DRAM rate scaled by access width, idle threads and the
  //              bytes in flight per SM (Little's law, as for pointwise);
  //   latency    rows per SM / rows resident per SM x one row's phases.
  // Residency follows threads and an estimate of registers: 32 plus, per
  // element a thread holds, its storage and one f32 for the math.
  // The Halide schedule: one block per row, every pass reading the row
  // again, each reduction's threads * vec partials combined by one thread
  // or (lanes=1) by the lanes of a warp.
  double predict_row_reduction(const Problem& problem, double bytes, size_t bytes_per_element, const Config& c) const {
    const RowSchedule s = row_schedule(problem, bytes_per_element, c);
    const RowResidency r = row_residency(arch_, s);
    // Phases overlap only partly with other rows' traffic. The constants
    // here (latencies, 8 instructions, the 3-norm) are rough figures chosen
    // against the H200 records, not measured one by one.
    const double bound_us = std::cbrt(std::pow(row_bandwidth_us(arch_, s, r, bytes), 3.0) +
                                      std::pow(row_latency_us(arch_, s, r, c), 3.0));
    // Fast math: cheaper transcendentals and divisions; a tie-breaker where
    // memory decides.
    const double math = c.get_or("fast", s.halide ? 0 : 1) ? 1.0 : 1.03;
    return 2.0 + bound_us * row_tail(arch_, s, r) * math * r.spill;
  }

  ArchLimits arch_;
};

class ModelMeasurer final : public Measurer {
 public:
  ModelMeasurer(const ArchLimits& arch, std::shared_ptr<CostModel> model, const std::string& name)
      : model_(std::move(model)) {
    info_.gpu_name = "model:" + name;
    info_.arch = arch.arch;
    info_.sm_count = arch.sm_count;
    info_.l2_bytes = arch.l2_bytes;
    info_.measured = false;
  }
  const DeviceInfo& device() const override { return info_; }
  std::vector<MeasureResult> measure(const Workload& workload, const Problem& problem,
                                     const std::vector<MeasureInput>& batch, const MeasureOptions&) override {
    std::vector<Candidate> cands;
    for (const auto& in : batch) cands.push_back(*in.candidate);
    auto t = model_->predict(problem, dtype_bytes(workload.dtype()), cands);
    std::vector<MeasureResult> out(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      out[i].status = RecordStatus::kModeled;
      out[i].median_us = out[i].p20_us = out[i].p80_us = t[i];
    }
    return out;
  }

 private:
  std::shared_ptr<CostModel> model_;
  DeviceInfo info_;
};

}  // namespace

std::unique_ptr<CostModel> make_analytic_cost_model(const ArchLimits& arch) {
  return std::make_unique<AnalyticCostModel>(arch);
}

std::unique_ptr<Measurer> make_model_measurer(const ArchLimits& arch) {
  return std::make_unique<ModelMeasurer>(arch, make_analytic_cost_model(arch), arch.example_gpu);
}

std::unique_ptr<Measurer> make_model_measurer(const ArchLimits& arch, std::shared_ptr<CostModel> model,
                                              const std::string& name) {
  return std::make_unique<ModelMeasurer>(arch, std::move(model), name);
}

}  // namespace fusekit
