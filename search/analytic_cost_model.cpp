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
    const double cols = static_cast<double>(problem.domain.at(0));
    double rows = 1.0;  // every outer axis (ndrows has three)
    for (size_t k = 1; k < problem.domain.size(); ++k) rows *= static_cast<double>(problem.domain[k]);
    const bool halide = !c.values().count("cache");
    const double threads = static_cast<double>(c.get("threads")), per_block = static_cast<double>(c.get_or("rows", 1));
    const double vec = static_cast<double>(c.get_or("vec", 1)), cache = static_cast<double>(c.get_or("cache", 0));
    const double split = static_cast<double>(c.get_or("split", 1));  // blocks per row
    const double elem = static_cast<double>(bytes_per_element);
    double full_inputs = 0;  // inputs of the whole [rows, cols] shape
    for (const auto& d : problem.input_dims) {
      double n = 1;
      for (int64_t e : d) n *= static_cast<double>(e);
      full_inputs += n == cols * rows ? 1 : 0;
    }
    full_inputs = std::max(1.0, full_inputs);
    const double access_bytes = vec * elem;
    const double access = access_bytes >= 16 ? 1.0 : access_bytes >= 8 ? 0.95 : access_bytes >= 4 ? 0.85 : 0.7;
    const double per_pass = threads * split * vec;  // columns one pass of the block(s) covers
    const double chunks = std::ceil(cols / per_pass);
    const bool cached = !halide && cache > 0 && cols <= per_pass * cache;
    // Useful lanes over all passes: a row of 3001 in passes of 2048 leaves
    // a quarter of the lanes idle.
    const double utilization = cols / (chunks * per_pass);
    // Elements a thread holds at once: its cached vectors, else the vectors
    // a re-reading pass loads together (unroll).
    const double held = (cached ? std::min(cache, chunks) : std::min<double>(c.get_or("unroll", 1), chunks)) * vec;
    // keep=0 on a cached row: no reduction body kept per element (one f32
    // each for the ops that keep one, about half of them), more arithmetic.
    const bool recompute = cached && c.get_or("keep", 1) == 0;
    // smem=1 stages the row in shared memory: the registers hold only the
    // batch of four vectors the first pass has in flight (the next batch's
    // loads wait for this one's staging stores), and shared memory (the
    // inputs and, for about half the ops, one kept f32 per element) bounds
    // the blocks per SM instead.
    const bool staged = cached && c.get_or("smem", 0) == 1;
    // persist=P: P blocks per SM loop over the row groups, the next group's
    // staged row in flight (asynchronous copies into a second buffer, no
    // registers) while a block works on the current one.
    // A row that does not fit takes the re-reading loop of the same grid.
    const double grid_per_sm = static_cast<double>(c.get_or("persist", 0));
    const double persist = staged ? grid_per_sm : 0.0;
    const double batch = persist > 0 ? held : staged ? std::min(held, 4.0 * vec) : held;
    const double per_element = full_inputs * elem / 4.0 + (recompute ? 0.5 : 1.0);
    const double registers = 32.0 + (persist > 0 ? vec : batch) * per_element;
    const double block_threads = threads * per_block;
    const double staged_bytes =
        staged ? block_threads * held * (full_inputs * elem * (persist > 0 ? 2.0 : 1.0) + (recompute ? 0.0 : 2.0)) : 0.0;
    const double smem_blocks =
        staged ? std::floor((arch_.max_shared_per_block + 1024.0) / std::max(1.0, staged_bytes)) : 1e9;
    // More registers than a block can have: the compiler spills to local
    // memory, which costs about as much again as the excess.
    const double register_cap = std::min<double>(arch_.max_registers_per_thread, arch_.registers_per_sm / block_threads);
    const double spill = std::max(1.0, registers / register_cap);
    const double fit_per_sm = std::max(
        1.0, std::min({static_cast<double>(arch_.max_blocks_per_sm), std::floor(arch_.max_threads_per_sm / block_threads),
                       std::floor(arch_.registers_per_sm / (std::min(registers, register_cap) * block_threads)),
                       smem_blocks}));
    const double blocks_per_sm = grid_per_sm > 0 ? std::min(grid_per_sm, fit_per_sm) : fit_per_sm;
    const double in_flight = blocks_per_sm * block_threads * utilization * batch * elem * full_inputs;
    const double need = arch_.dram_gbps * 1e9 / arch_.sm_count * 600e-9;
    const double mlp = std::min(1.0, in_flight / need);
    const double bw = arch_.dram_gbps * 1e9 * 0.92 * access * mlp * utilization;
    const double bandwidth_us = bytes * (cached ? 1.0 : 2.0) / bw * 1e6;
    // One row's dependent phases (µs): the first load's latency, two
    // combines (shuffles; shared memory and a barrier past a warp; a cluster
    // barrier across blocks), the re-reads of an uncached row, the store.
    // Halide's partials are summed serially: all threads * vec of them by
    // one thread, or (lanes=1) a warp's share per lane and 32 by shuffles.
    const double serial = c.get_or("lanes", 0) == 1 ? threads / 32.0 * vec + 32.0 : threads * vec;
    const double combine = (threads > 32 ? 0.25 : 0.05) + (split > 1 ? 0.5 : 0.0) + (halide ? 0.004 * serial : 0.0);
    // A thread's own arithmetic over the elements it holds, about 8
    // instructions per element per pass for three passes, issued by one of
    // four schedulers shared with the other resident warps (~2 GHz).
    const double warps_per_scheduler = blocks_per_sm * block_threads / 32.0 / 4.0;
    // A staged row adds a shared-memory load (and a store) per vector and pass.
    const double compute_us =
        (cached ? held : vec) * (recompute ? 3.5 : 3.0) * (staged ? 9.0 : 8.0) * warps_per_scheduler / 2000.0;
    // A re-reading pass waits on memory once per batch of `unroll` vectors.
    const double rereads = cached ? 0.0 : std::ceil(chunks / static_cast<double>(c.get_or("unroll", 1)));
    // Each further batch of a staged row's first pass waits out a load latency.
    const double batches = staged ? std::ceil(held / batch) - 1.0 : 0.0;
    // A persistent block's load was issued during the previous group, but it
    // is charged as if it waited for it: a block still takes one row group at
    // a time through its phases, and measurements showed no gain.
    // onepass=1 finishes a pair of reductions with one combine.
    const double combines = c.get_or("onepass", 0) == 1 ? 1.0 : 2.0;
    const double phase_us = 1.0 + combines * combine + 2.0 * 0.5 * rereads + 1.0 * batches + 0.5 + compute_us;
    const double resident_rows = blocks_per_sm * per_block / split;
    const double latency_us = rows / arch_.sm_count / resident_rows * phase_us;
    const double blocks = std::ceil(rows / per_block) * split;
    double waves = blocks / (arch_.sm_count * blocks_per_sm);
    // Persistent blocks: groups per cluster, in turns; blocks beyond what
    // fits per SM wait for a whole turn of the others.
    if (grid_per_sm > 0)
      waves = std::ceil(rows / per_block) / std::max(1.0, std::floor(grid_per_sm * arch_.sm_count / split));
    const double queued = grid_per_sm > fit_per_sm ? std::ceil(grid_per_sm / fit_per_sm) : 1.0;
    const double tail = (waves < 8 ? std::ceil(waves) / waves : 1.0) * queued;
    // Fast math: cheaper transcendentals and divisions; a tie-breaker where
    // memory decides.
    const double math = c.get_or("fast", halide ? 0 : 1) ? 1.0 : 1.03;
    // Phases overlap only partly with other rows' traffic. The constants
    // here (latencies, 8 instructions, the 3-norm) are rough figures chosen
    // against the H200 records, not measured one by one.
    const double bound_us = std::cbrt(std::pow(bandwidth_us, 3.0) + std::pow(latency_us, 3.0));
    return 2.0 + bound_us * tail * math * spill;
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
