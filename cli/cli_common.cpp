#include "cli/cli_common.h"

#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "common/errors.h"
#include "common/shape_text.h"
#include "generator/candidates/catalog.h"
#include "generator/candidates/expr_parser.h"
#include "graph/plan.h"
#include "search/measure_worker.h"
#include "tunedb/tune_db.h"

namespace fusekit {

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

std::vector<SizeSpec> parse_sizes(const std::vector<std::string>& items) {
  std::vector<SizeSpec> out;
  for (const auto& s : split_list(items)) {
    auto dims = parse_shape_text(s);
    if (!dims)
      throw UserError("malformed size '" + s +
                      "'; sizes are positive element counts or shapes, e.g. --sizes 4096,65536 or 8192x1024");
    int64_t total = 1;
    for (int64_t d : *dims) {
      if (d > kMaxElements / total)
        throw UserError("size '" + s + "' has more than " + std::to_string(kMaxElements) +
                        " elements (2^31 - 1, the most a kernel indexes); give a smaller size");
      total *= d;
    }
    out.push_back(*dims);
  }
  if (out.empty()) throw UserError("--sizes is empty; give e.g. --sizes 4096,65536");
  return out;
}

std::vector<int64_t> domain_for(const FusionCandidate& cand, const SizeSpec& size) {
  if (size.size() == 1) return cand.domain_for_elements(size[0]);
  if (cand.layout == Layout::kNd || cand.layout == Layout::kNdRows) return cand.domain_for_shape(size);
  const auto& axes = layout_axes(cand.layout);
  if (size.size() != axes.size()) {
    std::string names;
    for (size_t i = axes.size(); i-- > 0;) names += axes[i] + (i ? " x " : "");
    throw UserError("size '" + shape_text(size) + "' has " + std::to_string(size.size()) + " dims; " + cand.name + " (" +
                    layout_name(cand.layout) + ") takes " + names + " or an element count");
  }
  return std::vector<int64_t>(size.rbegin(), size.rend());
}

namespace {
// Shapes the reduction issue tunes for: rows x cols, and an odd one.
constexpr const char* kRowShapes = "256x1024,32768x1024,8192x4096,4096x16384,1024x65536,3000x3001";
constexpr const char* kPointwiseSizes = "4096,65536,1048576,67108864";
}  // namespace

std::vector<SizeSpec> sizes_for(const po::variables_map& vm, const FusionCandidate& cand) {
  if (cand.reduces() && vm["sizes"].defaulted()) return parse_sizes({kRowShapes});
  return parse_sizes(vm["sizes"].as<std::vector<std::string>>());
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
  if (vm.count("expr") && vm.count("pattern")) throw UserError("give --pattern or --expr, not both");
  if (vm.count("expr")) {
    out.push_back(parse_expression(vm["expr"].as<std::string>()));
    if (vm.count("name")) out.back().name = require_op_name(vm["name"].as<std::string>());
  } else if (vm.count("pattern")) {
    const auto names = split_list(vm["pattern"].as<std::vector<std::string>>());
    if (names == std::vector<std::string>{"all"}) return catalog();
    for (const auto& name : names) out.push_back(find_pattern(name));
    if (out.empty())
      throw UserError("--pattern is empty; give catalog names (see `fusekit list`), or leave --pattern out for all");
  } else {
    out = catalog();
  }
  return out;
}

std::string resolve_db_path(const po::variables_map& vm) {
  if (!vm.count("db")) return default_db_path();
  const std::string p = vm["db"].as<std::string>();
  if (p.empty()) throw UserError("--db is empty; give a database file, e.g. --db tune.db");
  return p;
}

std::string existing_db_path(const po::variables_map& vm, const std::string& hint) {
  const std::string path = resolve_db_path(vm);
  if (!is_postgres_uri(path) && access(path.c_str(), R_OK) != 0)
    throw UserError("no database at '" + path + "'; " + hint);
  return path;
}

int int_at_least(const po::variables_map& vm, const char* name, int min, const char* meaning) {
  const int v = vm[name].as<int>();
  if (v < min) throw UserError(std::string("--") + name + " " + std::to_string(v) + " must be " + meaning);
  return v;
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

namespace {
std::vector<std::string>& args_store() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

void set_command_args(std::vector<std::string> args) { args_store() = std::move(args); }
const std::vector<std::string>& command_args() { return args_store(); }

std::string self_binary() {
  char buf[4096] = {0};
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw UserError("cannot find the fusekit binary (/proc/self/exe) to start a measuring worker");
  return std::string(buf, static_cast<size_t>(n));
}

std::vector<std::string> worker_argv(int device) {
  return {self_binary(), "measure-worker", "--device", std::to_string(device)};
}

std::unique_ptr<Measurer> pick_measurer(const ArchLimits& arch, bool model_only, int device, bool require_gpu,
                                        const std::shared_ptr<CostModel>& learned) {
  std::unique_ptr<Measurer> measurer;
  std::string why_model;
  if (model_only) {
    why_model = "--model given";
  } else {
    try {
      measurer = make_worker_measurer(worker_argv(device), [](const std::string& line) {
        std::fprintf(stderr, "fusekit: %s\n", line.c_str());
      });
      if (measurer->device().arch != arch.arch) {
        why_model = "the GPU here is " + measurer->device().gpu_name + " (" + measurer->device().arch.name() + ")";
        measurer.reset();
      }
    } catch (const UserError& e) {
      why_model = e.what();
    }
  }
  if (!measurer && require_gpu)
    throw UserError("no " + arch.arch.name() + " GPU " + std::to_string(device) + " to measure on: " + why_model);
  if (!measurer) {
    std::fprintf(stderr, "fusekit: no %s GPU to measure on (%s); compiling every candidate for %s and ranking with "
                         "the %s model; records are stored as 'modeled'\n",
                 arch.arch.name().c_str(), why_model.c_str(), arch.arch.name().c_str(), learned ? "learned" : "analytic");
    return learned ? make_model_measurer(arch, learned, "learned " + arch.example_gpu) : make_model_measurer(arch);
  }
  std::fprintf(stderr, "fusekit: measuring on GPU %d, %s (%s, %d SMs, driver %s) in a worker process\n", device,
               measurer->device().gpu_name.c_str(), measurer->device().arch.name().c_str(),
               measurer->device().sm_count, measurer->device().driver_version.c_str());
  return measurer;
}

void add_arch_option(po::options_description& o, const char* text) {
  o.add_options()("arch", po::value<std::string>(), text);
}

void add_selection_options(po::options_description& o) {
  o.add_options()
      ("pattern", po::value<std::vector<std::string>>()->multitoken(), "catalog patterns (default: all)")
      ("expr", po::value<std::string>(), "an expression to fuse, e.g. \"out = tanh(sigmoid(x) * y) + z\"")
      ("name", po::value<std::string>(), "the op name of an --expr op (default expr_<hash>)");
}

void add_dtype_option(po::options_description& o) {
  o.add_options()("dtype", po::value<std::vector<std::string>>()->multitoken()->default_value({"f32"}, "f32"),
                  "storage dtypes: f32,f16,bf16");
}

void add_sizes_option(po::options_description& o) {
  o.add_options()("sizes",
                  po::value<std::vector<std::string>>()->multitoken()->default_value({kPointwiseSizes}, kPointwiseSizes),
                  (std::string("element counts or shapes (outermost first, e.g. 8192x1024); row reductions default "
                               "to ") + kRowShapes).c_str());
}

void add_db_option(po::options_description& o) {
  o.add_options()("db", po::value<std::string>(),
                  "tuning database: a SQLite file or postgresql://user@host:port/dbname (default: $FUSEKIT_DB, else $XDG_DATA_HOME/fusekit/tune.db, else "
                  "~/.local/share/fusekit/tune.db)");
}

void add_backend_option(po::options_description& o) {
  o.add_options()("backend",
                  po::value<std::vector<std::string>>()->multitoken()->default_value({"nvrtc,halide"}, "nvrtc,halide"),
                  "backends: nvrtc, halide");
}

}  // namespace fusekit
