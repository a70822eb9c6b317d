#include "cost_model/features.h"

#include <cmath>
#include <limits>

namespace fusekit {
namespace {

// Every schedule parameter of both templates and backends, in a fixed order.
const char* const kParams[] = {"threads", "vec",     "ept",     "grid",   "hint", "fast", "occ",
                               "plane",   "rows",    "cache",   "split",  "keep", "smem", "unroll",
                               "persist", "onepass", "wbatch",  "minb",   "len",  "lanes", "cs"};

// Derived figures after the parameters, in this order.
const char* const kDerived[] = {
    "row_kind",   "halide",        "elem_bytes",   "log2_elements", "log2_bytes",   "log2_cols",   "log2_rows",
    "inputs",     "outputs",       "full_inputs",  "block_threads", "access_bytes", "elems_per_block_pass",
    "chunks",     "utilization",   "cached_row",   "log2_blocks",   "blocks_per_sm", "occupancy",   "log2_waves",
    "tail",       "sm_count",      "dram_gbps",    "threads_per_sm", "registers_per_sm", "log2_l2",
    "log_analytic_over_roofline"};

double log2_or_nan(double x) { return x > 0 ? std::log2(x) : std::numeric_limits<double>::quiet_NaN(); }

}  // namespace

const std::vector<std::string>& cost_feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const char* p : kParams) n.push_back(std::string("param_") + p);
    for (const char* d : kDerived) n.push_back(d);
    return n;
  }();
  return names;
}

double roofline_us(const Problem& problem, size_t bytes_per_element, const ArchLimits& arch) {
  return 2.0 + problem.bytes_moved(bytes_per_element) / (arch.dram_gbps * 1e3);
}

std::vector<float> cost_features(const Problem& problem, size_t bytes_per_element, const Candidate& candidate,
                                 const ArchLimits& arch) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Config& c = candidate.config;
  std::vector<double> f;
  for (const char* p : kParams) f.push_back(c.values().count(p) ? static_cast<double>(c.get(p)) : nan);

  const bool rows_kind = !c.values().count("ept");
  const double elem = static_cast<double>(bytes_per_element);
  const double n = static_cast<double>(problem.elements());
  const double cols = problem.domain.empty() ? 1.0 : static_cast<double>(problem.domain.front());
  const double rows = cols > 0 ? n / cols : 1.0;
  double full_inputs = 0;
  for (const auto& d : problem.input_dims) {
    double e = 1;
    for (int64_t x : d) e *= static_cast<double>(x);
    full_inputs += e == n ? 1 : 0;
  }
  const double threads = static_cast<double>(c.get_or("threads", 1));
  const double vec = static_cast<double>(c.get_or("vec", 1));
  const double per_block = static_cast<double>(c.get_or("rows", 1));
  const double split = static_cast<double>(c.get_or("split", 1));
  const double block_threads = rows_kind ? threads * per_block : threads;
  // Elements one pass of a block covers: a pointwise tile, or a row chunk.
  const double per_pass = rows_kind ? threads * split * vec : threads * vec * static_cast<double>(c.get_or("ept", 1));
  const double chunks = rows_kind ? std::ceil(cols / per_pass) : std::ceil(n / per_pass);
  const double utilization = rows_kind ? cols / (chunks * per_pass) : n / (chunks * per_pass);
  const double cache = static_cast<double>(c.get_or("cache", 0));
  const double cached = rows_kind && cache > 0 && cols <= per_pass * cache ? 1.0 : 0.0;
  const double grid = static_cast<double>(c.get_or("grid", 0));
  double blocks = rows_kind ? std::ceil(rows / per_block) * split : chunks;
  if (!rows_kind && grid > 0) blocks = std::min(blocks, grid * arch.sm_count);
  const double blocks_per_sm =
      std::max(1.0, std::min<double>(arch.max_blocks_per_sm, std::floor(arch.max_threads_per_sm / block_threads)));
  const double occupancy = blocks_per_sm * block_threads / arch.max_threads_per_sm;
  const double waves = blocks / (arch.sm_count * blocks_per_sm);
  const double tail = waves > 0 ? std::ceil(waves) / waves : nan;
  const double analytic = make_analytic_cost_model(arch)->predict(problem, bytes_per_element, {candidate})[0];

  f.insert(f.end(), {rows_kind ? 1.0 : 0.0, candidate.backend == Backend::kHalide ? 1.0 : 0.0, elem, log2_or_nan(n),
                     log2_or_nan(problem.bytes_moved(bytes_per_element)), log2_or_nan(cols), log2_or_nan(rows),
                     static_cast<double>(problem.input_dims.size()), static_cast<double>(problem.output_dims.size()),
                     full_inputs, block_threads, vec * elem, per_pass, chunks, utilization, cached,
                     log2_or_nan(blocks), blocks_per_sm, occupancy, log2_or_nan(waves), tail,
                     static_cast<double>(arch.sm_count), arch.dram_gbps, static_cast<double>(arch.max_threads_per_sm),
                     static_cast<double>(arch.registers_per_sm), log2_or_nan(arch.l2_bytes),
                     std::log(analytic / roofline_us(problem, bytes_per_element, arch))});
  return {f.begin(), f.end()};
}

}  // namespace fusekit
