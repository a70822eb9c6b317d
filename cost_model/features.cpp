#include "cost_model/features.h"

#include "schedules/row_reduction_template.h"

#include <algorithm>
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
    "log_analytic_over_roofline",
    // Schema 2: what a thread holds, registers and the residency they allow,
    // memory-level parallelism, the L2 footprint, alignment.
    "elems_per_thread", "held_per_thread", "est_registers", "spill_ratio", "reg_blocks_per_sm", "reg_occupancy",
    "log2_reg_waves", "reg_tail", "log2_in_flight_over_need", "log2_bytes_per_sm", "log2_bytes_over_l2",
    "log2_resident_rows_bytes_over_l2", "log2_rows_per_sm", "misaligned_vec", "log_roofline_us",
    // Schema 3: what a row op computes per element (Problem::mix), so that an
    // op never trained on is placed among those of like work; NaN for
    // pointwise ops, whose held-out picks it did not improve (docs/architecture.md).
    "op_reductions", "op_math_calls", "op_arith",
    // Schema 4: the registers a thread may have under the kernel's launch
    // bounds (occ=1, minb, persist ask ptxas for that many blocks per SM),
    // which spill_ratio and the register residency use, since a capped
    // schedule that holds many elements spills where an uncapped one does not.
    "register_cap", "bound_blocks"};

double log2_or_nan(double x) { return x > 0 ? std::log2(x) : std::numeric_limits<double>::quiet_NaN(); }
double known(int count) { return count >= 0 ? static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN(); }

TemplateKind template_kind(const Config& c) {
  return c.values().count("rsplit") ? TemplateKind::kGeneral
         : c.values().count("ept")  ? TemplateKind::kPointwise
                                    : TemplateKind::kRowReduction;
}

}  // namespace

Config complete_config(const Candidate& candidate, size_t bytes_per_element, const ArchLimits& arch) {
  return template_space(template_kind(candidate.config), arch, candidate.backend, static_cast<int>(bytes_per_element),
                        1)
      .complete(candidate.config);
}

std::string cost_domain(const Candidate& candidate) {
  const TemplateKind kind = template_kind(candidate.config);
  return std::string(backend_name(candidate.backend)) +
         (kind == TemplateKind::kGeneral ? " general" : kind == TemplateKind::kPointwise ? " pointwise" : " rows");
}

namespace {

// What a thread holds and how many blocks its registers let an SM keep.
struct Residency {
  double elems_per_thread = 0;  // of the problem (pointwise) or of a row (rows), over the whole kernel
  double held = 0;              // elements in registers at once
  double registers = 0;         // estimate: a base plus, per held element, its storage and one f32
  double spill = 0;             // registers over cap
  double blocks_per_sm = 0;     // by threads, blocks and registers (at least 1)
  double cap = 0;               // registers a thread may have at this block size and launch bound
  double bound_blocks = 0;      // blocks per SM the launch bounds ask for (0: none)
};

// The blocks per SM a schedule's __launch_bounds__ asks ptxas for, 0 where
// it asks none: a row kernel's persist (above 1) or minb, a pointwise
// kernel's occ=1 (blocks of its threads that fill an SM).
double bound_blocks_per_sm(const Config& c, bool rows_kind, double block_threads, const ArchLimits& arch) {
  if (rows_kind) {
    const int64_t persist = c.get_or("persist", 0);
    return static_cast<double>(persist > 1 ? persist : c.get_or("minb", 0));
  }
  if (c.get_or("occ", 0) != 1) return 0;
  return std::min<double>(arch.max_blocks_per_sm, std::floor(arch.max_threads_per_sm / block_threads));
}

Residency residency(const Config& c, bool rows_kind, double cols, double chunks, double block_threads,
                    double full_inputs, double elem, const ArchLimits& arch) {
  Residency r;
  const double vec = static_cast<double>(c.get_or("vec", 1));
  if (rows_kind) {
    const double threads = static_cast<double>(c.get_or("threads", 1)) * static_cast<double>(c.get_or("split", 1));
    const double cache = static_cast<double>(c.get_or("cache", 0));
    const bool cached = cache > 0 && cols <= threads * vec * cache;
    r.elems_per_thread = cols / threads;
    r.held = (cached ? std::min(cache, chunks) : std::min<double>(static_cast<double>(c.get_or("unroll", 1)), chunks)) * vec;
    if (cached && c.get_or("smem", 0) == 1) r.held = std::min(r.held, 4.0 * vec);  // staged: one batch in flight
    r.registers = 32.0 + r.held * (std::max(1.0, full_inputs) * elem / 4.0 + 1.0);
  } else {
    r.elems_per_thread = vec * static_cast<double>(c.get_or("ept", 1));
    r.held = r.elems_per_thread;
    r.registers = 16.0 + r.held * (std::max(1.0, full_inputs) * elem / 4.0 + 1.0);
  }
  r.bound_blocks = bound_blocks_per_sm(c, rows_kind, block_threads, arch);
  r.cap = std::min<double>(arch.max_registers_per_thread,
                           arch.registers_per_sm / (block_threads * std::max(1.0, r.bound_blocks)));
  r.spill = r.registers / r.cap;
  r.blocks_per_sm = std::max(
      1.0, std::min({static_cast<double>(arch.max_blocks_per_sm), std::floor(arch.max_threads_per_sm / block_threads),
                     std::floor(arch.registers_per_sm / (std::min(r.registers, r.cap) * block_threads))}));
  return r;
}

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
  const Config c = complete_config(candidate, bytes_per_element, arch);
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
  const Residency res = residency(c, rows_kind, cols, chunks, block_threads, full_inputs, elem, arch);
  const double reg_waves = blocks / (arch.sm_count * res.blocks_per_sm);
  const double persist = static_cast<double>(c.get_or("persist", 0));
  const double resident_blocks = std::min(blocks, arch.sm_count * (persist > 0 ? persist : res.blocks_per_sm));
  // Bytes in flight per SM over what Little's law needs at the DRAM rate (600 ns).
  const double in_flight = resident_blocks / arch.sm_count * block_threads * res.held * elem * std::max(1.0, full_inputs);
  const double need = arch.dram_gbps * 1e9 / arch.sm_count * 600e-9;
  const double bytes = problem.bytes_moved(bytes_per_element);
  const double resident_rows = rows_kind ? std::min(rows, resident_blocks * per_block / split) : nan;
  const double vec_of = static_cast<double>(c.get_or("vec", 1));
  const double aligned_extent = rows_kind ? cols : n;

  f.insert(f.end(), {rows_kind ? 1.0 : 0.0, candidate.backend == Backend::kHalide ? 1.0 : 0.0, elem, log2_or_nan(n),
                     log2_or_nan(problem.bytes_moved(bytes_per_element)), log2_or_nan(cols), log2_or_nan(rows),
                     static_cast<double>(problem.input_dims.size()), static_cast<double>(problem.output_dims.size()),
                     full_inputs, block_threads, vec * elem, per_pass, chunks, utilization, cached,
                     log2_or_nan(blocks), blocks_per_sm, occupancy, log2_or_nan(waves), tail,
                     static_cast<double>(arch.sm_count), arch.dram_gbps, static_cast<double>(arch.max_threads_per_sm),
                     static_cast<double>(arch.registers_per_sm), log2_or_nan(arch.l2_bytes),
                     std::log(analytic / roofline_us(problem, bytes_per_element, arch)),
                     res.elems_per_thread, res.held, res.registers, res.spill, res.blocks_per_sm,
                     res.blocks_per_sm * block_threads / arch.max_threads_per_sm, log2_or_nan(reg_waves),
                     reg_waves > 0 ? std::ceil(reg_waves) / reg_waves : nan, log2_or_nan(in_flight / need),
                     log2_or_nan(bytes / arch.sm_count), log2_or_nan(bytes / arch.l2_bytes),
                     rows_kind ? log2_or_nan(resident_rows * cols * elem * std::max(1.0, full_inputs) / arch.l2_bytes) : nan,
                     rows_kind ? log2_or_nan(rows / arch.sm_count) : nan,
                     std::fmod(aligned_extent, vec_of) != 0 ? 1.0 : 0.0,
                     std::log(roofline_us(problem, bytes_per_element, arch)),
                     rows_kind ? known(problem.mix.reductions) : nan, rows_kind ? known(problem.mix.math_calls) : nan,
                     rows_kind ? known(problem.mix.arith) : nan, res.cap, res.bound_blocks});
  return {f.begin(), f.end()};
}

}  // namespace fusekit
