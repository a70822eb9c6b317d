// The analytic cost model used when the requested arch's GPU is absent.
//
//   time = launch + bytes / (peak_bw * 0.92 * access * mlp) * tail
//
//   launch  2 us of fixed kernel cost.
//   access  bytes per access: >= 16 -> 1.0, 8 -> 0.95, 4 -> 0.85, 2 -> 0.7.
//   mlp     memory-level parallelism: bytes in flight per SM (resident
//           threads * vec * ept * element size * tensors) over the Little's
//           law need (per-SM bandwidth * 600 ns), capped at 1.
//   tail    wave quantization: ceil(waves) / waves for a one-shot grid with
//           fewer than ~8 waves; 1 for grid-stride.
// Row reductions (configs without `ept`): blocks of threads * rows threads,
// one per `rows` rows; vectors in flight per thread min(cache, chunks of the
// row) or 1; rows longer than the cache read twice; threads beyond the row's
// vectors idle (utilization cols / (threads * vec)).
// It ranks schedules; its absolute numbers are estimates and are stored with
// status "modeled", never as measurements.
#include <algorithm>
#include <cmath>

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
      if (!c.config.values().count("ept")) {  // a row reduction (NVRTC or Halide schedule)
        out.push_back(predict_row_reduction(problem, bytes, bytes_per_element, tensors, c.config));
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
      out.push_back(2.0 + bytes / bw * 1e6 * tail);
    }
    return out;
  }
  void update(const std::vector<Candidate>&, const std::vector<double>&) override {}

 private:
  double predict_row_reduction(const Problem& problem, double bytes, size_t bytes_per_element, double tensors,
                               const Config& c) const {
    const double cols = static_cast<double>(problem.domain.at(0));
    const double rows = problem.domain.size() > 1 ? static_cast<double>(problem.domain[1]) : 1.0;
    // The Halide schedule has `threads` only: one row per block, scalar
    // accesses, every pass reading the row again.
    const double threads = static_cast<double>(c.get("threads")), per_block = static_cast<double>(c.get_or("rows", 1));
    const double vec = static_cast<double>(c.get_or("vec", 1)), cache = static_cast<double>(c.get_or("cache", 0));
    const double split = static_cast<double>(c.get_or("split", 1));  // blocks per row
    const double access_bytes = vec * static_cast<double>(bytes_per_element);
    const double access = access_bytes >= 16 ? 1.0 : access_bytes >= 8 ? 0.95 : access_bytes >= 4 ? 0.85 : 0.7;
    const double chunks = std::ceil(cols / (threads * split * vec));
    const bool cached = cache > 0 && cols <= threads * split * vec * cache;
    const double block_threads = threads * per_block;
    const double blocks_per_sm =
        std::max(1.0, std::min<double>(arch_.max_blocks_per_sm, std::floor(arch_.max_threads_per_sm / block_threads)));
    const double in_flight = blocks_per_sm * block_threads * access_bytes * (cached ? std::min(cache, chunks) : 1.0) *
                             tensors;
    const double need = arch_.dram_gbps * 1e9 / arch_.sm_count * 600e-9;
    const double mlp = std::min(1.0, in_flight / need);
    const double utilization = std::min(1.0, cols / (threads * split * vec));
    const double blocks = std::ceil(rows / per_block) * split;
    const double waves = blocks / (arch_.sm_count * blocks_per_sm);
    const double tail = waves < 8 ? std::ceil(waves) / waves : 1.0;
    const double bw = arch_.dram_gbps * 1e9 * 0.92 * access * mlp * utilization;
    return 2.0 + bytes * (cached ? 1.0 : 2.0) / bw * 1e6 * tail;
  }

  ArchLimits arch_;
};

class ModelMeasurer final : public Measurer {
 public:
  explicit ModelMeasurer(const ArchLimits& arch) : model_(make_analytic_cost_model(arch)) {
    info_.gpu_name = "model:" + arch.example_gpu;
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
  std::unique_ptr<CostModel> model_;
  DeviceInfo info_;
};

}  // namespace

std::unique_ptr<CostModel> make_analytic_cost_model(const ArchLimits& arch) {
  return std::make_unique<AnalyticCostModel>(arch);
}

std::unique_ptr<Measurer> make_model_measurer(const ArchLimits& arch) {
  return std::make_unique<ModelMeasurer>(arch);
}

}  // namespace fusekit
