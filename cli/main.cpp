// fusekit: the command line. Wiring only: parse, validate everything before
// touching the database, then call the modules.
//
//   fusekit list
//   fusekit tune --arch sm_90 [--pattern NAME ...|--expr TEXT] [--dtype f32,bf16]
//                [--sizes 4096,65536] [--db FILE] [--budget N] [--specialize N] [--hint-twins N]
//                [--backend nvrtc,halide] [--model]
//   fusekit db show|export|import --db FILE|URI [JSONL]
//   fusekit db sync A B                    (A, B: SQLite files or postgresql:// URIs)
//   fusekit verify --arch sm_90 [--db FILE] [--pattern ...] [--dtype ...] [--sizes ...]
//   fusekit verify --package DIR [--max-elements N]   (FUSEKIT_PTX_ONLY=1: the PTX variants)
//   fusekit plan MODEL.onnx|GRAPH.json [--dim batch=1,8] [--out plan.json]
//   fusekit tune|build --plan plan.json ...   (cli/cmd_tune_plan.cpp, cli/cmd_build_plan.cpp)
//   fusekit build --arch sm_80,sm_86,sm_90 --out DIR [--db FILE] [--pattern ...|--expr TEXT] [--cxx c++]
//   fusekit source --pattern NAME|--expr TEXT --arch sm_90 [--dtype f32] [--params "threads=256 vec=4 ept=2 grid=0 fast=0"]
//                  [--backend halide]   (PTX from Halide instead of the CUDA C for NVRTC)
//   fusekit report --db FILE [--plan plan.json] [--package DIR] --out report.html
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <iostream>
#include <sstream>

#include "cli/cmd_db_sync.h"
#include "cli/tune_shard.h"
#include "cli/cmd_report.h"
#include "cli/cmd_build_plan.h"
#include "cli/cmd_plan.h"
#include "cli/cmd_tune_plan.h"
#include "cli/verify_package.h"
#include "common/errors.h"
#include "common/shape_text.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "generator/nvrtc/pointwise_printer.h"
#include "generator/candidates/expr_parser.h"
#include "generator/halide/halide_backend.h"
#include "generator/package/library_emitter.h"
#include "generator/nvrtc/nvrtc_compiler.h"
#include "generator/candidates/op_traits.h"
#include "generator/nvrtc/kernel_printer.h"
#include "generator/nvrtc/row_printer.h"
#include "fusekit/shape_bucket.h"
#include "search/tuner.h"
#include "schedules/row_reduction_template.h"
#include "tunedb/tune_db.h"

#ifndef FUSEKIT_VERSION
#define FUSEKIT_VERSION "0.0.0"
#endif

namespace po = boost::program_options;

namespace fusekit {
namespace {

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::stringstream s(item);
    std::string part;
    while (std::getline(s, part, ','))
      if (!part.empty()) out.push_back(part);
  }
  return out;
}

std::vector<DType> parse_dtypes(const std::vector<std::string>& items) {
  std::vector<DType> out;
  for (const auto& d : split_list(items)) {
    auto dt = parse_dtype(d);
    if (!dt) throw UserError("unknown dtype '" + d + "'; known: f32 f16 bf16");
    out.push_back(*dt);
  }
  if (out.empty()) throw UserError("--dtype is empty; give e.g. --dtype f32,bf16");
  return out;
}

// A size is an element count ("65536") or a shape, outermost first
// ("8192x1024", "32x64x3136"); each part a positive integer.
using SizeSpec = std::vector<int64_t>;

std::vector<SizeSpec> parse_sizes(const std::vector<std::string>& items) {
  std::vector<SizeSpec> out;
  for (const auto& s : split_list(items)) {
    const std::string bad = "malformed size '" + s +
                            "'; sizes are positive element counts or shapes, e.g. --sizes 4096,65536 or 8192x1024";
    auto dims = parse_shape_text(s);
    if (!dims) throw UserError(bad);
    out.push_back(*dims);
  }
  if (out.empty()) throw UserError("--sizes is empty; give e.g. --sizes 4096,65536");
  return out;
}

// The iteration domain (innermost first) of a size for a candidate.
std::vector<int64_t> domain_for(const FusionCandidate& cand, const SizeSpec& size) {
  if (size.size() == 1) return cand.domain_for_elements(size[0]);
  const auto& axes = layout_axes(cand.layout);
  if (size.size() != axes.size()) {
    std::string names;
    for (size_t i = axes.size(); i-- > 0;) names += axes[i] + (i ? " x " : "");
    throw UserError("size '" + shape_text(size) + "' has " + std::to_string(size.size()) + " dims; " + cand.name + " (" +
                    layout_name(cand.layout) + ") takes " + names + " or an element count");
  }
  return std::vector<int64_t>(size.rbegin(), size.rend());
}

// Shapes the reduction issue tunes for: rows x cols, and an odd one.
constexpr const char* kRowShapes = "256x1024,32768x1024,8192x4096,4096x16384,1024x65536,3000x3001";

// --sizes as given, or (left at its default) the pointwise element counts
// for pointwise ops and kRowShapes for row reductions.
std::vector<SizeSpec> sizes_for(const po::variables_map& vm, const FusionCandidate& cand) {
  if (cand.reduces() && vm["sizes"].defaulted()) return parse_sizes({kRowShapes});
  return parse_sizes(vm["sizes"].as<std::vector<std::string>>());
}


std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

int cmd_list() {
  std::printf("%-22s %-7s %s\n", "pattern", "layout", "computes");
  for (const auto& c : catalog()) std::printf("%-22s %-7s %s\n", c.name.c_str(), layout_name(c.layout), c.description.c_str());
  return 0;
}

// --name for an --expr op: it becomes C symbols, so it must be a safe identifier.
std::string require_op_name(const std::string& name) {
  if (graph::safe_identifier(name) != name)
    throw UserError("--name '" + name + "' is not a C identifier; use letters, digits and single underscores, e.g. " +
                    graph::safe_identifier(name));
  return name;
}

std::vector<FusionCandidate> selected_candidates(const po::variables_map& vm) {
  std::vector<FusionCandidate> out;
  if (vm.count("expr") && vm.count("pattern"))
    throw UserError("give --pattern or --expr, not both");
  if (vm.count("expr")) {
    out.push_back(parse_expression(vm["expr"].as<std::string>()));
    if (vm.count("name")) out.back().name = require_op_name(vm["name"].as<std::string>());
  } else if (vm.count("pattern")) {
    const auto names = split_list(vm["pattern"].as<std::vector<std::string>>());
    if (names == std::vector<std::string>{"all"}) return catalog();
    for (const auto& name : names) out.push_back(find_pattern(name));
  } else {
    out = catalog();
  }
  return out;
}

int cmd_tune(const po::variables_map& vm, const ShardEnvironment& env) {
  if (!vm.count("arch")) throw UserError("tune needs --arch, e.g. --arch sm_90; known: " + known_arch_names());
  const ArchLimits& arch = require_arch(vm["arch"].as<std::string>());
  const std::vector<FusionCandidate> cands = selected_candidates(vm);
  const std::vector<DType> dtypes = parse_dtypes(vm["dtype"].as<std::vector<std::string>>());
  for (const auto& cand : cands)
    for (const auto& s : sizes_for(vm, cand)) domain_for(cand, s);  // every shape fits before anything is opened
  std::vector<Backend> backends;
  for (const auto& b : split_list(vm["backend"].as<std::vector<std::string>>())) backends.push_back(parse_backend(b));
  const int budget = vm["budget"].as<int>();
  if (budget < 1) throw UserError("--budget " + std::to_string(budget) + " must be at least 1");
  const int specialize = vm["specialize"].as<int>();
  if (specialize < 0) throw UserError("--specialize " + std::to_string(specialize) + " must be 0 (off) or more");
  const std::string db_path = vm.count("db") ? vm["db"].as<std::string>() : default_db_path();
  const ShardSpec shard =
      resolve_shard(vm.count("shard") ? vm["shard"].as<std::string>() : "", vm["shard-count"].as<int>(), env);
  const bool retune = vm.count("retune") > 0;

  // Measurer: the GPU when it is the requested arch, else the analytic model.
  std::unique_ptr<Measurer> measurer;
  std::string why_model;
  if (vm.count("model")) {
    why_model = "--model given";
  } else {
    try {
      measurer = make_gpu_measurer();
      if (measurer->device().arch != arch.arch) {
        why_model = "the GPU here is " + measurer->device().gpu_name + " (" + measurer->device().arch.name() + ")";
        measurer.reset();
      }
    } catch (const UserError& e) {
      why_model = e.what();
    }
  }
  if (!measurer) {
    measurer = make_model_measurer(arch);
    std::fprintf(stderr, "fusekit: no %s GPU to measure on (%s); compiling every candidate for %s and ranking with "
                         "the analytic model; records are stored as 'modeled'\n",
                 arch.arch.name().c_str(), why_model.c_str(), arch.arch.name().c_str());
  } else {
    std::fprintf(stderr, "fusekit: measuring on %s (%s, %d SMs, driver %s)\n", measurer->device().gpu_name.c_str(),
                 measurer->device().arch.name().c_str(), measurer->device().sm_count,
                 measurer->device().driver_version.c_str());
  }
  // Records a server does not take are spooled beside the default database.
  auto db = open_tune_db(db_path, OpenMode::kCreate,
                         (std::filesystem::path(default_db_path()).parent_path() / "spool").string());
  if (shard.count > 1) std::fprintf(stderr, "fusekit: shard %d of %d\n", shard.index, shard.count);

  TunerOptions options;
  options.backends = backends;
  options.budget = static_cast<size_t>(budget);
  options.specialize = static_cast<size_t>(specialize);
  const int hint_twins = vm["hint-twins"].as<int>();
  if (hint_twins < 0) throw UserError("--hint-twins " + std::to_string(hint_twins) + " must be 0 (off) or more");
  options.hint_twins = static_cast<size_t>(hint_twins);
  options.seed = static_cast<uint64_t>(vm["seed"].as<int>());
  options.provenance = {FUSEKIT_VERSION, halide_version(), nvrtc_version(), host_name()};

  const size_t total = cands.size() * dtypes.size();
  size_t done = 0;
  struct : TuneSummary {
    size_t skipped = 0;  // units the store held already
  } all;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (const auto& cand : cands) {
    for (DType dt : dtypes) {
      auto workload = make_candidate_workload(cand, dt);
      auto builder = make_kernel_builder(cand, dt, arch);
      TuneTask task;
      task.workload = workload.get();
      task.builder = builder.get();
      task.pattern = cand.name;
      task.pipeline_text = canonical_pipeline_text(cand, dt);
      task.pipeline_hash = pipeline_hash(task.pipeline_text);
      const std::vector<SizeSpec> sizes = sizes_for(vm, cand);
      for (const auto& s : sizes) task.domains.push_back(domain_for(cand, s));
      task.verify_domain = cand.odd_domain();
      task.kind = cand.template_kind();
      task.cached_inputs = cand.full_inputs();
      task.traits = op_traits(cand, dt);
      options.progress = [&](const std::string& line) {
        const double t = elapsed();
        const double frac = (static_cast<double>(done) + 0.5) / static_cast<double>(total);
        std::fprintf(stderr, "[%zu/%zu] %s | %.0fs elapsed, ETA %.0fs\n", done + 1, total, line.c_str(), t,
                     t / frac * (1.0 - frac));
      };
      // Per backend, the sizes of this shard that the store lacks from this
      // toolchain and GPU (all of them with --retune).
      const std::set<std::string> held =
          retune ? std::set<std::string>{}
                 : held_units(*db, cand.name, dtype_name(dt), arch.arch.name(),
                              {measurer->device().gpu_name, options.provenance.cuda_version,
                               options.provenance.halide_version, options.provenance.fusekit_version});
      const std::vector<std::vector<int64_t>> domains = task.domains;
      for (Backend b : backends) {
        task.domains.clear();
        for (const auto& d : domains) {
          const std::string shape = workload->problem(d).shape_text;
          if (!in_shard(shard, task.pipeline_hash, dtype_name(dt), shape, arch.arch.name(), backend_name(b))) continue;
          if (held.count(unit_key(task.pipeline_hash, dtype_name(dt), shape, arch.arch.name(), backend_name(b)))) {
            ++all.skipped;
            continue;
          }
          task.domains.push_back(d);
        }
        if (task.domains.empty()) continue;
        options.backends = {b};
        TuneSummary s = tune(task, *measurer, *db, arch, options);
        all.records += s.records;
        all.measured += s.measured;
        all.modeled += s.modeled;
        all.failed += s.failed;
        all.pruned += s.pruned;
      }
      ++done;
      // Winner per size, as a summary line.
      for (const auto& size : sizes) {
        Problem p = workload->problem(domain_for(cand, size));
        auto best = db->best({task.pipeline_hash, dtype_name(dt), problem_bucket(task.kind, p), arch.arch.name()});
        if (best)
          std::printf("%-22s %-4s %-12s %-7s %-40s %10.2f us %8.1f GB/s %s\n", cand.name.c_str(), dtype_name(dt),
                      p.shape_text.c_str(), best->backend.c_str(), best->params.c_str(), best->median_us,
                      best->bandwidth_gbps, record_status_name(best->status));
      }
      std::fflush(stdout);
    }
  }
  std::fprintf(stderr,
               "fusekit: %zu records written to %s (%zu verified and timed, %zu modeled, %zu failed, %zu pruned by "
               "size; %zu shapes x backends held already%s) in %.0fs\n",
               all.records, mask_uri(db_path).c_str(), all.measured, all.modeled, all.failed, all.pruned, all.skipped,
               all.skipped ? ", skipped: --retune tunes them again" : "", elapsed());
  return 0;
}

int cmd_db(const po::variables_map& vm, const std::vector<std::string>& rest) {
  if (rest.empty()) throw UserError("db needs a subcommand: show, export, import or sync");
  const std::string& sub = rest[0];
  if (sub == "sync") return cmd_db_sync(std::vector<std::string>(rest.begin() + 1, rest.end()));
  if (sub != "show" && sub != "export" && sub != "import")
    throw UserError("unknown db subcommand '" + sub + "'; known: show export import sync");
  const std::string path = vm.count("db") ? vm["db"].as<std::string>() : default_db_path();
  if (sub == "import" || sub == "export") {
    if (rest.size() < 2) throw UserError("db " + sub + " needs a JSONL file: fusekit db " + sub + " --db FILE RECORDS.jsonl");
  }
  if (sub == "import") {
    // Validate the file before creating or touching the database.
    if (access(rest[1].c_str(), R_OK) != 0) throw UserError("cannot read '" + rest[1] + "'; check the path");
    auto db = open_tune_db(path, OpenMode::kCreate);
    size_t before = db->size();
    size_t added = import_jsonl(*db, rest[1]);
    std::printf("imported %zu new records into %s (%zu before, %zu after)\n", added, mask_uri(path).c_str(), before,
                db->size());
    return 0;
  }
  auto db = open_tune_db(path, OpenMode::kMustExist);
  if (sub == "export") {
    size_t n = export_jsonl(*db, rest[1]);
    std::printf("exported %zu records to %s\n", n, rest[1].c_str());
    return 0;
  }
  RecordFilter f;
  if (vm.count("pattern")) f.pattern = split_list(vm["pattern"].as<std::vector<std::string>>()).at(0);
  if (vm.count("arch")) f.arch = require_arch(vm["arch"].as<std::string>()).arch.name();
  std::printf("%-22s %-4s %-12s %-6s %-7s %-13s %-48s %10s %10s %9s %s\n", "pattern", "dtype", "shape", "arch",
              "backend", "status", "params", "median_us", "p20-p80", "GB/s", "gpu");
  for (const auto& r : db->all(f)) {
    char spread[32];
    std::snprintf(spread, sizeof(spread), "%.2f-%.2f", r.p20_us, r.p80_us);
    std::printf("%-22s %-4s %-12s %-6s %-7s %-13s %-48s %10.2f %10s %9.1f %s\n", r.pattern.c_str(), r.dtype.c_str(),
                r.shape.c_str(), r.arch.c_str(), r.backend.c_str(), record_status_name(r.status), r.params.c_str(),
                r.median_us, spread, r.bandwidth_gbps, r.gpu_name.c_str());
  }
  std::printf("%zu records\n", db->size());
  return 0;
}

// Rebuilds the database's winners for an arch and checks them on this GPU
// against the CPU reference (also the way to run winners under
// compute-sanitizer). Exit 1 when any winner fails.
int cmd_verify(const po::variables_map& vm) {
  if (vm.count("package")) {
    const int64_t max_elements = vm["max-elements"].as<int64_t>();
    if (max_elements < 1) throw UserError("--max-elements " + std::to_string(max_elements) + " must be at least 1");
    return verify_package(vm["package"].as<std::string>(), max_elements);
  }
  if (!vm.count("arch")) throw UserError("verify needs --arch, e.g. --arch sm_90");
  const ArchLimits& arch = require_arch(vm["arch"].as<std::string>());
  const auto cands = selected_candidates(vm);
  const auto dtypes = parse_dtypes(vm["dtype"].as<std::vector<std::string>>());
  const std::string path = vm.count("db") ? vm["db"].as<std::string>() : default_db_path();
  auto db = open_tune_db(path, OpenMode::kMustExist);
  auto measurer = make_gpu_measurer();
  MeasureOptions verify_only;
  verify_only.time = false;
  int checked = 0, failed = 0;
  for (const auto& cand : cands) {
    for (DType dt : dtypes) {
      const std::string hash = pipeline_hash(canonical_pipeline_text(cand, dt));
      RecordFilter f;
      f.arch = arch.arch.name();
      f.dtype = dtype_name(dt);
      f.ok_only = true;
      std::vector<Candidate> winners;
      for (const auto& r : db->all(f)) {
        if (r.pipeline_hash != hash) continue;
        auto best = db->best(r.key());
        if (!best || best->id != r.id) continue;
        Candidate c{parse_backend(r.backend), Config::parse(r.params)};
        bool seen = false;
        for (const auto& w : winners) seen |= (w.backend == c.backend && w.config == c.config);
        if (!seen) winners.push_back(c);
      }
      if (winners.empty()) continue;
      auto wl = make_candidate_workload(cand, dt);
      auto builder = make_kernel_builder(cand, dt, arch);
      auto built = builder->build(winners);
      std::vector<Problem> sized;
      for (const auto& s : sizes_for(vm, cand)) sized.push_back(wl->problem(domain_for(cand, s)));
      const TemplateKind kind = cand.template_kind();
      for (size_t i = 0; i < winners.size(); ++i) {
        // The odd shape, or rows the schedule runs on where it takes some
        // row lengths only (an odd count of its `len`, a multiple of its
        // vector), then each size it can run (as the tuner filters them).
        std::vector<Problem> own = {
            wl->problem(template_verify_domain(kind, winners[i].config, winners[i].backend, cand.odd_domain()))};
        for (const Problem& p : sized)
          if (template_size_violation(kind, winners[i].config, winners[i].backend, p.elements(), p.domain.front())
                  .empty())
            own.push_back(p);
        for (const Problem& p : own) {
          MeasureResult m;
          if (built[i].ok) m = measurer->measure(*wl, p, {{&winners[i], &built[i].artifact}}, verify_only).front();
          else { m.status = RecordStatus::kCompileError; m.error = built[i].error; }
          ++checked;
          const bool ok = m.status == RecordStatus::kOk;
          failed += !ok;
          std::printf("%-22s %-4s %-7s %-48s %-12s %s %s\n", cand.name.c_str(), dtype_name(dt),
                      backend_name(winners[i].backend), winners[i].config.to_string().c_str(), p.shape_text.c_str(),
                      ok ? "ok" : record_status_name(m.status), ok ? "" : m.error.c_str());
        }
      }
    }
  }
  std::printf("%d checks, %d failed\n", checked, failed);
  return failed ? 1 : 0;
}

// What `build` ranks records against: this fusekit's toolchain, and the
// GPU named by --target-gpu, else the GPU here (if any).
RecordOrigin build_target(const std::string& target_gpu) {
  RecordOrigin t;
  t.cuda_version = nvrtc_version();
  t.halide_version = halide_version();
  t.fusekit_version = FUSEKIT_VERSION;
  if (!target_gpu.empty()) {
    t.gpu_name = target_gpu;
    return t;
  }
  try {
    const DeviceInfo dev = make_gpu_measurer()->device();
    t.gpu_name = dev.gpu_name;
    t.sm_count = dev.sm_count;
    t.driver_major = driver_major(dev.driver_version);
  } catch (const UserError&) {
    // No GPU here: the toolchain alone decides what is stale.
  }
  return t;
}

int cmd_build(const po::variables_map& vm) {
  if (!vm.count("arch")) throw UserError("build needs --arch, e.g. --arch sm_80,sm_86,sm_90");
  if (!vm.count("out")) throw UserError("build needs --out DIR for the package");
  if (!vm.count("pattern") && !vm.count("expr"))
    throw UserError("build needs what to package: --plan plan.json (from `fusekit plan`), --pattern NAME[,NAME] (or all) or "
                    "--expr TEXT [--name NAME]");
  EmitOptions o;
  for (const auto& a : split_list({vm["arch"].as<std::string>()})) o.archs.push_back(require_arch(a).arch);
  o.out_dir = vm["out"].as<std::string>();
  o.candidates = selected_candidates(vm);
  if (vm.count("gemm"))
    for (const auto& g : vm["gemm"].as<std::vector<std::string>>()) o.gemms.push_back(parse_gemm_flag(g));
  o.cxx = vm["cxx"].as<std::string>();
  o.runtime_library = vm["runtime-lib"].as<std::string>();
  o.runtime_include = vm["runtime-include"].as<std::string>();
  o.cuda_include = vm["cuda-include"].as<std::string>();
  for (const auto& [flag, path] : {std::pair{"--runtime-lib", o.runtime_library}, {"--runtime-include", o.runtime_include},
                                   {"--cuda-include", o.cuda_include}})
    if (access(path.c_str(), R_OK) != 0)
      throw UserError(std::string("cannot read ") + path + " (" + flag + "); pass " + flag + " with the right path");
  const std::string path = vm.count("db") ? vm["db"].as<std::string>() : default_db_path();
  auto db = open_tune_db(path, OpenMode::kMustExist);
  o.target = build_target(vm.count("target-gpu") ? vm["target-gpu"].as<std::string>() : "");
  EmitReport r = emit_library(*db, o);
  for (const auto& line : r.selections) std::fprintf(stderr, "fusekit: selected %s\n", line.c_str());
  for (const auto& n : r.notes) std::fprintf(stderr, "fusekit: note: %s\n", n.c_str());
  std::printf("wrote %s: %zu kernel variants for", o.out_dir.c_str(), r.variants);
  for (const auto& op : r.ops) std::printf(" [%s]", op.c_str());
  std::printf("\n");
  return 0;
}

int cmd_source(const po::variables_map& vm) {
  if (!vm.count("arch")) throw UserError("source needs --arch, e.g. --arch sm_90");
  const ArchLimits& arch = require_arch(vm["arch"].as<std::string>());
  auto cands = selected_candidates(vm);
  if (cands.size() != 1) throw UserError("source prints one kernel: give one --pattern or --expr");
  DType dt = parse_dtypes(vm["dtype"].as<std::vector<std::string>>()).front();
  const TemplateKind kind = cands[0].template_kind();
  Config config = Config::parse(vm["params"].defaulted() && kind == TemplateKind::kRowReduction
                                    ? "cache=4 fast=0 rows=1 threads=256 vec=4"
                                    : vm["params"].as<std::string>());
  // One backend: the CUDA C NVRTC compiles, or the PTX Halide emits.
  Backend backend = Backend::kNvrtc;
  if (!vm["backend"].defaulted()) {
    const auto listed = split_list(vm["backend"].as<std::vector<std::string>>());
    if (listed.size() != 1)
      throw UserError("source prints one backend's kernel: give --backend nvrtc or --backend halide");
    backend = parse_backend(listed.front());
  }
  if (backend == Backend::kHalide && vm["params"].defaulted())
    config = kind == TemplateKind::kRowReduction ? Config::parse("lanes=1 threads=256 vec=4")
                                                 : Config::parse("ept=1 threads=256 vec=4");
  ParamSpace space = template_space(kind, arch, backend, static_cast<int>(dtype_bytes(dt)), cands[0].full_inputs(),
                                    op_traits(cands[0], dt));
  // A name the space does not have would print the kernel without it; a
  // row kernel may also be compiled for one row length (len).
  for (const auto& [name, value] : config.values()) {
    const bool known = (name == "len" && kind == TemplateKind::kRowReduction) ||
                       std::any_of(space.domains().begin(), space.domains().end(),
                                   [&name = name](const ParamDomain& d) { return d.name == name; });
    if (known) continue;
    std::string names;
    for (const auto& d : space.domains()) names += " " + d.name;
    if (kind == TemplateKind::kRowReduction) names += " len";
    throw UserError("--params names '" + name + "', which " + backend_name(backend) + " schedules of " +
                    cands[0].name + " do not have; known:" + names);
  }
  std::string bad = space.violation(config);
  if (!bad.empty()) throw UserError("--params '" + config.to_string() + "' is not a legal " + backend_name(backend) +
                                    " schedule for " + arch.arch.name() + ": " + bad);
  const std::string symbol = kernel_symbol(cands[0], dt, arch.arch, backend, config);
  if (backend == Backend::kHalide) {
    // Through the builder: Halide's LLVM can abort the process (bf16), so it
    // builds in a child process and a failure is a message.
    BuildResult b = make_kernel_builder(cands[0], dt, arch)->build({{backend, config}}).front();
    if (!b.ok) {
      const std::string first = b.error.substr(0, b.error.find('\n'));
      throw UserError("Halide could not build " + cands[0].name + " " + dtype_name(dt) + " with '" +
                      config.to_string() + "': " + first +
                      (dt == DType::kBF16 ? " (Halide 14 cannot build bf16 kernels: use --backend nvrtc)" : ""));
    }
    std::fputs(b.artifact.source.c_str(), stdout);
    return 0;
  }
  Pipeline p = instantiate(cands[0], dt);
  PrintedKernel k = print_nvrtc_kernel(cands[0], p, config, symbol);
  std::fputs(k.source.c_str(), stdout);
  return 0;
}

int run(int argc, char** argv) {
  po::options_description opts("options");
  opts.add_options()
      ("help,h", "show this help")
      ("arch", po::value<std::string>(), "target architecture: sm_70 sm_75 sm_80 sm_86 sm_89 sm_90")
      ("pattern", po::value<std::vector<std::string>>()->multitoken(), "catalog patterns, or all (tune's default: all)")
      ("expr", po::value<std::string>(), "an expression to fuse, e.g. \"out = tanh(sigmoid(x) * y) + z\"")
      ("dtype", po::value<std::vector<std::string>>()->multitoken()->default_value({"f32"}, "f32"),
       "storage dtypes: f32,f16,bf16")
      ("sizes", po::value<std::vector<std::string>>()->multitoken()->default_value(
                    {"4096,65536,1048576,67108864"}, "4096,65536,1048576,67108864"),
       "element counts or shapes (outermost first, e.g. 8192x1024) to tune for; row reductions default to "
       "256x1024,32768x1024,8192x4096,4096x16384,1024x65536,3000x3001")
      ("db", po::value<std::string>(),
       "tuning database: a SQLite file or postgresql://user@host:port/dbname (default: $FUSEKIT_DB, else "
       "~/.local/share/fusekit/tune.db)")
      ("shard", po::value<std::string>(), "`tune` only this part I/N of the work (default: a Slurm array task's)")
      ("shard-count", po::value<int>()->default_value(0),
       "`tune` as shard $JOB_COMPLETION_INDEX of N (a Kubernetes Indexed Job's completions)")
      ("retune", "`tune` again what the database holds for this toolchain and GPU")
      ("budget", po::value<int>()->default_value(24), "candidates per backend and workload")
      ("specialize", po::value<int>()->default_value(2),
       "row reductions on a GPU: build each timed row length's N fastest schedules, its N fastest whose "
       "cached row fits it exactly, and of its 4N fastest N others that fit more warps per SM so built, again for "
       "that length (len=L) and time them too; 0: generic schedules only")
      ("hint-twins", po::value<int>()->default_value(3),
       "pointwise ops on a GPU: time each size's N fastest NVRTC schedules without load hints again with "
       "hint=2 (evict_last loads; sm_80+); 0: off")
      ("backend", po::value<std::vector<std::string>>()->multitoken()->default_value({"nvrtc,halide"}, "nvrtc,halide"),
       "backends to search")
      ("model", "rank with the analytic model even if a GPU of the arch is present")
      ("seed", po::value<int>()->default_value(1), "random seed for sampling")
      ("out", po::value<std::string>(), "package folder for `build`")
      ("target-gpu", po::value<std::string>(),
       "`build`: rank records measured on this GPU (e.g. \"NVIDIA H200\") above others (default: the GPU here)")
      ("gemm", po::value<std::vector<std::string>>(),
       "`build`: a GEMM op NAME:EXPR over acc = A @ B (B as nn.Linear's [N, K]; NAME:kn:EXPR for [K, N]), its "
       "records imported from bench/gemm_race --records; repeatable")
      ("package", po::value<std::string>(), "`verify` the kernels of this built package through its C API")
      ("max-elements", po::value<int64_t>()->default_value(int64_t{1} << 27),
       "`verify --package`: skip problems larger than this")
      ("cxx", po::value<std::string>()->default_value("c++"), "C++ compiler `build` uses for the package")
      ("runtime-lib", po::value<std::string>()->default_value(FUSEKIT_RUNTIME_LIBRARY),
       "libfusekit_runtime.a `build` links into packages")
      ("runtime-include", po::value<std::string>()->default_value(FUSEKIT_RUNTIME_INCLUDE), "its headers")
      ("cuda-include", po::value<std::string>()->default_value(FUSEKIT_CUDA_INCLUDE), "the folder holding cuda.h")
      ("params", po::value<std::string>()->default_value("ept=2 fast=0 grid=0 threads=256 vec=4"), "schedule for `source`")
      ("plan", po::value<std::string>(), "`tune`/`build`: every entry of a plan from `fusekit plan`")
      ("dim", po::value<std::vector<std::string>>()->composing(), "`plan`: sizes of a symbolic dim, e.g. batch=1,8")
      ("name", po::value<std::string>(), "the op name of an --expr op in a package (default expr_<hash>)")
      ("command", po::value<std::vector<std::string>>(), "command");
  add_report_options(opts);
  po::positional_options_description pos;
  pos.add("command", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UserError(std::string(e.what()) + "; see `fusekit --help`");
  }
  std::vector<std::string> cmd = vm.count("command") ? vm["command"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (vm.count("help") || cmd.empty()) {
    std::cout << "usage: fusekit list | plan MODEL.onnx|GRAPH.json [--dim NAME=V,V] [--out plan.json] |\n"
              << "       tune --arch SM [--shard I/N] [...] | tune --plan plan.json --arch SM |\n"
              << "       db show|export|import --db DB [JSONL] | db sync DB DB |\n"
              << "       verify --arch SM --db FILE [--sizes ...] | verify --package DIR |\n"
              << "       build --arch SM,SM --out DIR [--db FILE] --pattern ...|--expr ... [--name N]|--plan plan.json |\n"
              << "       source --pattern NAME --arch SM [--params ...] |\n"
              << "       report --db FILE [--plan plan.json] [--package DIR] --out report.html\n"
              << opts << "\n";
    return cmd.empty() && !vm.count("help") ? 2 : 0;
  }
  if (cmd[0] == "list") return cmd_list();
  if (cmd[0] == "plan") return cmd_plan(vm, std::vector<std::string>(cmd.begin() + 1, cmd.end()));
  if (cmd[0] == "tune") {
    if (vm.count("plan")) return cmd_tune_plan(vm);
    auto var = [](const char* name) { const char* v = std::getenv(name); return std::string(v ? v : ""); };
    return cmd_tune(vm, {var("SLURM_ARRAY_TASK_ID"), var("SLURM_ARRAY_TASK_COUNT"), var("SLURM_ARRAY_TASK_MIN"),
                         var("JOB_COMPLETION_INDEX")});
  }
  if (cmd[0] == "db") return cmd_db(vm, std::vector<std::string>(cmd.begin() + 1, cmd.end()));
  if (cmd[0] == "source") return cmd_source(vm);
  if (cmd[0] == "verify") return cmd_verify(vm);
  if (cmd[0] == "build") return vm.count("plan") ? cmd_build_plan(vm) : cmd_build(vm);
  if (cmd[0] == "report") return cmd_report(vm);
  throw UserError("unknown command '" + cmd[0] + "'; known: list plan tune db verify build source report");
}

}  // namespace
}  // namespace fusekit

int main(int argc, char** argv) {
  try {
    return fusekit::run(argc, argv);
  } catch (const fusekit::UserError& e) {
    std::fprintf(stderr, "fusekit: error: %s\n", e.what());
    return 2;
  } catch (const Halide::Error& e) {
    std::fprintf(stderr, "fusekit: Halide error: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fusekit: internal error: %s\n", e.what());
    return 3;
  }
}
