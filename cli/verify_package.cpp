// `fusekit verify --package DIR`: loads an emitted package's shared library
// the way an application does and checks, through its generic C entry point
// (fusekit_launch, so the package's own selection and launch code runs), that
// every kernel it would pick on this GPU matches the Halide CPU reference.
//
// Per op and dtype in the manifest: one odd-sized problem inside every shape
// bucket the package was tuned for (so each bucket's winner is selected), and
// one at the catalog's odd shape with pointers offset by one element (so the
// alignment fallback, the generic variant, runs). Run it again with
// FUSEKIT_PTX_ONLY=1 to check the portable PTX variants.
#include "cli/verify_package.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "cli/package_case.h"
#include "common/errors.h"
#include "fusekit/cuda_driver.h"
#include "fusekit/shape_bucket.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "generator/candidates/gemm_candidate.h"
#include "generator/gemm_workload.h"
#include "generator/candidates/expr_parser.h"
#include "schedules/row_reduction_template.h"
#include "search/workload.h"

namespace fusekit {
namespace {

int64_t product(const std::vector<int64_t>& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= d[i];
  return p;
}

int64_t odd_at_most(int64_t v) { return v < 1 ? 1 : (v % 2 ? v : v - 1); }

// "ENTRY (BACKEND, SCHEDULE; sm_90, bucket n<=2^12, measured): ..." (see
// Selection::describe) -> "ENTRY | SCHEDULE | n<=2^12", the manifest's key;
// entry names alone repeat across Halide kernels.
std::string variant_key_from_explain(const std::string& w) {
  const size_t open = w.find(" ("), comma = w.find(", ", open), semi = w.find("; ", comma);
  if (open == std::string::npos || comma == std::string::npos || semi == std::string::npos) return w;
  const size_t b = w.find("bucket ", semi);
  const std::string bucket = b == std::string::npos ? "generic" : w.substr(b + 7, w.find(',', b) - b - 7);
  return w.substr(0, open) + " | " + w.substr(comma + 2, semi - comma - 2) + " | " + bucket;
}

// Checks run, failed and skipped; `stopped` after a fault that leaves the
// context unusable.
struct Tally {
  int checks = 0, failed = 0, skipped = 0;
  bool stopped = false;
  void add(const Tally& o) {
    checks += o.checks;
    failed += o.failed;
    skipped += o.skipped;
    stopped |= o.stopped;
  }
};

// Each GEMM entry tuned for this device's arch, at an odd M inside its
// bucket and its N and K (skipped when M*N*K is over --max-elements), through fusekit_launch (which routes GEMM ops to
// the package's cuBLASLt dispatcher) against the GEMM's CPU reference.
Tally verify_gemm_entries(const nlohmann::json& manifest, const PackageApi& api, const CudaDriver& cu,
                              const std::string& device_arch, int64_t max_elements) {
  Tally t;
  if (!manifest.contains("gemms")) return t;
  std::set<std::string> seen;
  for (const auto& g : manifest.at("gemms")) {
    const std::string op = g.at("op"), dt_name = g.at("dtype"), bucket = g.at("m_bucket");
    if (g.at("arch") != device_arch || !seen.insert(op + " " + dt_name + " " + bucket).second) continue;
    if (!g.contains("b_transposed")) {
      std::printf("%-22s %-4s skipped: the manifest predates b_transposed; rebuild the package\n", op.c_str(),
                  dt_name.c_str());
      ++t.skipped;
      continue;
    }
    const GemmCandidate cand = make_gemm_candidate(g.at("epilogue"), g.at("b_transposed").get<bool>(), op);
    // The smallest odd M of the bucket (2^(a-1), 2^a]: the reference is a CPU GEMM.
    const int m_log2 = std::stoi(bucket.substr(bucket.find('^') + 1));
    const int64_t m = m_log2 < 1 ? 1 : (int64_t{1} << (m_log2 - 1)) + 1;
    const GemmDims dims{m, g.at("n").get<int64_t>(), g.at("k").get<int64_t>()};
    auto wl = make_gemm_workload(cand, *parse_dtype(dt_name));
    const Problem p = wl->problem(gemm_domain(dims));
    if (dims.m * dims.n * dims.k > max_elements) {
      std::printf("%-22s %-4s %-16s skipped: M*N*K over --max-elements\n", op.c_str(), dt_name.c_str(),
                  p.shape_text.c_str());
      ++t.skipped;
      continue;
    }
    PackageApi no_explain = api;
    no_explain.explain = nullptr;  // GEMM entries are selected by N, K and M's bucket, not explained
    const CaseOutcome r = run_package_case(no_explain, cu, *wl, p,
                                           {op, dt_name, {dims.m, dims.n, dims.k}, {}, false,
                                            104729u * static_cast<uint32_t>(t.checks + 1)});
    ++t.checks;
    t.failed += !r.error.empty();
    std::printf("%-22s %-4s %-16s GEMM %s %s\n", op.c_str(), dt_name.c_str(), p.shape_text.c_str(),
                r.error.empty() ? "ok" : "FAILED", r.error.c_str());
    if (r.context_lost) break;
  }
  return t;
}

}  // namespace

std::optional<FusionCandidate> package_op(const nlohmann::json& manifest, const std::string& op) {
  for (const auto& c : catalog())
    if (c.name == op) return c;
  // A GEMM's tail is laid out over [M, N] even when no input is indexed by axis.
  for (const auto& g : manifest.value("gemms", nlohmann::json::array()))
    if (g.contains("b_transposed") && g.at("op").get<std::string>() + "_tail" == op)
      return make_gemm_candidate(g.at("epilogue"), g.at("b_transposed").get<bool>(), g.at("op")).epilogue;
  const auto exprs = manifest.find("expressions");
  if (exprs == manifest.end() || !exprs->contains(op)) return std::nullopt;
  FusionCandidate c = parse_expression(exprs->at(op).get<std::string>());
  c.name = op;
  return c;
}

// An odd element count inside bucket k (2^(k-1) < n <= 2^k), in the
// catalog's odd shape with the outermost extent (or, for small buckets, the
// innermost) stretched to reach it; every extent odd, so no extent is a
// multiple of a vector width. With a row bucket (row reductions), an odd row
// length inside it and as many rows as keep the count in bucket k.
std::vector<int64_t> odd_domain_in_bucket(const FusionCandidate& cand, int k, int row_k) {
  auto odd_in = [](int log2) {
    const int64_t hi = int64_t{1} << log2;
    return odd_at_most(log2 >= 3 ? hi - hi / 8 : hi);
  };
  const int64_t target = odd_in(k);
  std::vector<int64_t> d = cand.odd_domain();
  if (row_k >= 0 && cand.reduces()) {
    // ndrows: the rows along d1, the other outer axes of extent 1.
    auto pad = [&](std::vector<int64_t> v) {
      v.resize(d.size(), 1);
      return v;
    };
    // Odd rows and odd columns with the count in (2^(k-1), 2^k]: the fewest
    // odd rows for which an odd row length fits both buckets (none may exist
    // for tiny buckets: then the nearest odd shape).
    const int64_t lo_cols = int64_t{1} << std::max(row_k - 1, 0), hi_cols = int64_t{1} << row_k;
    const int64_t lo_n = int64_t{1} << std::max(k - 1, 0), hi_n = int64_t{1} << k;
    for (int64_t rows = 1; rows <= hi_n / lo_cols; rows += 2) {
      const int64_t hi = std::min(hi_cols, hi_n / rows), lo = std::max(lo_cols, lo_n / rows);
      const int64_t cols = odd_at_most(std::max<int64_t>(1, hi - hi / 8 > lo ? hi - hi / 8 : hi));
      if (cols > lo && cols <= hi) return pad({cols, rows});
    }
    return pad({odd_in(row_k), odd_at_most(std::max<int64_t>(1, target / odd_in(row_k)))});
  }
  const size_t r = d.size();
  d[r - 1] = odd_at_most(target / product(d, 0, r - 1));
  if (shape_bucket_log2(product(d, 0, r)) == k) return d;
  d[r - 1] = 1;
  d[0] = odd_at_most(target / product(d, 1, r));
  if (shape_bucket_log2(product(d, 0, r)) == k) return d;
  std::vector<int64_t> flat(r, 1);
  flat[0] = target;
  return flat;
}

namespace {

nlohmann::json read_manifest(const std::string& dir) {
  const std::string manifest_path = dir + "/share/fusekit_kernels/manifest.json";
  std::ifstream mf(manifest_path);
  if (!mf) throw UserError("no package at '" + dir + "' (missing " + manifest_path + "); pass the --out of `fusekit build`");
  try {
    return nlohmann::json::parse(mf);
  } catch (const std::exception& e) {
    throw UserError(manifest_path + " is not valid JSON: " + e.what());
  }
}

// The package library loaded as an application loads it, and its C API.
PackageApi load_package_api(const std::string& dir) {
  const std::string lib_path = dir + "/lib/libfusekit_kernels.so";
  void* lib = dlopen(lib_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw UserError("cannot load " + lib_path + ": " + dlerror());
  PackageApi api;
  api.launch = reinterpret_cast<PackageApi::LaunchFn>(dlsym(lib, "fusekit_launch"));
  api.explain = reinterpret_cast<PackageApi::ExplainFn>(dlsym(lib, "fusekit_explain"));
  api.last_error = reinterpret_cast<PackageApi::LastErrorFn>(dlsym(lib, "fusekit_last_error"));
  if (!api.launch || !api.explain || !api.last_error)
    throw UserError(lib_path + " lacks the fusekit_launch/explain/last_error API");
  return api;
}

// GPU 0 with its primary context current, and the arch the package's
// variants are named by there ("ptx (compute_75)" with FUSEKIT_PTX_ONLY).
struct Device {
  CUdevice dev = 0;
  std::string arch;
};

Device open_device(const CudaDriver& cu) {
  Device d;
  CUcontext ctx;
  check_cuda(cu, cu.cuInit(0), "cuInit");
  check_cuda(cu, cu.cuDeviceGet(&d.dev, 0), "cuDeviceGet");
  check_cuda(cu, cu.cuDevicePrimaryCtxRetain(&ctx, d.dev), "cuDevicePrimaryCtxRetain");
  check_cuda(cu, cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  int major = 0, minor = 0;
  check_cuda(cu, cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d.dev), "attribute");
  check_cuda(cu, cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d.dev), "attribute");
  const char* ptx_env = std::getenv("FUSEKIT_PTX_ONLY");
  const bool ptx_only = ptx_env && *ptx_env && std::strcmp(ptx_env, "0") != 0;
  d.arch = ptx_only ? "ptx (compute_75)" : "sm_" + std::to_string(major * 10 + minor);
  return d;
}

using OpKey = std::pair<std::string, std::string>;  // op, dtype

// What the manifest's variants ask verify to reach, per op and dtype.
struct PackageVariants {
  std::map<OpKey, std::set<std::pair<int, int>>> buckets;  // tuned (n, row) log2
  // Variants compiled for one row length: (row length, n log2).
  std::map<OpKey, std::set<std::pair<int64_t, int>>> fixed_rows;
  // Variants taken for rows of a multiple of some length: (multiple, n log2, row log2).
  std::map<OpKey, std::set<std::tuple<int, int, int>>> row_multiples;
  // "ENTRY | SCHEDULE | BUCKET" of every variant for this device's arch.
  std::set<std::string> expected;
};

PackageVariants package_variants(const nlohmann::json& manifest, const std::string& device_arch) {
  PackageVariants pv;
  for (const auto& v : manifest.at("variants")) {
    const std::string op = v.at("op"), dt = v.at("dtype"), bucket = v.at("shape_bucket");
    auto& b = pv.buckets[{op, dt}];
    int n = 0, row = -1;
    const bool bucketed = parse_shape_bucket(bucket, &n, &row);
    if (bucketed) b.insert({n, row});
    if (v.contains("row_length") && v.at("row_length").is_number_integer())
      pv.fixed_rows[{op, dt}].insert({v.at("row_length").get<int64_t>(), n});
    if (bucketed && v.value("row_multiple", 1) > 1)
      pv.row_multiples[{op, dt}].insert({v.at("row_multiple").get<int>(), n, row});
    if (v.at("arch") == device_arch)
      pv.expected.insert(v.at("entry").get<std::string>() + " | " + v.at("params").get<std::string>() + " | " + bucket);
  }
  return pv;
}

template <class Set>
const Set& at_or_empty(const std::map<OpKey, Set>& m, const OpKey& key) {
  static const Set kEmpty;
  const auto it = m.find(key);
  return it == m.end() ? kEmpty : it->second;
}

struct OpCase {
  std::vector<int64_t> domain;
  bool misaligned = false;
};

// One op's problems: an odd one inside every tuned bucket; for a variant
// specialized for a row length, the most odd rows of it that stay in its
// bucket and within `max_elements` (selection takes it at any row count);
// for a variant for rows of a multiple of m, its bucket's odd shape with
// the row length rounded up to a multiple of m; last, the catalog's odd
// shape with misaligned pointers.
std::vector<OpCase> op_cases(const FusionCandidate& cand, const OpKey& key, const PackageVariants& pv,
                             int64_t max_elements) {
  std::vector<OpCase> cases;
  for (const auto& [k, row_k] : at_or_empty(pv.buckets, key)) cases.push_back({odd_domain_in_bucket(cand, k, row_k)});
  for (const auto& [cols, k] : at_or_empty(pv.fixed_rows, key)) {
    const int64_t most = std::min(int64_t{1} << k, max_elements);
    cases.push_back({{cols, odd_at_most(std::max<int64_t>(1, most / cols))}});
  }
  for (const auto& [m, k, row_k] : at_or_empty(pv.row_multiples, key)) {
    std::vector<int64_t> d = odd_domain_in_bucket(cand, k, row_k);
    d.front() = RowReductionTemplate::round_up_row(d.front(), m);
    cases.push_back({d});
  }
  cases.push_back({cand.odd_domain(), true});
  return cases;
}

// Runs one op's cases through the package, printing a line each and adding
// the variant each took to `taken`. `seed_base` numbers the checks before.
Tally verify_op(const nlohmann::json& manifest, const PackageApi& api, const CudaDriver& cu, const OpKey& key,
                const PackageVariants& pv, int64_t max_elements, int seed_base, std::set<std::string>* taken) {
  const auto& [op, dt_name] = key;
  Tally t;
  const std::optional<FusionCandidate> cand = package_op(manifest, op);
  const std::optional<DType> dt = parse_dtype(dt_name);
  if (!cand || !dt) {
    std::printf("%-22s %-4s skipped: neither a catalog op nor an expression in the manifest\n", op.c_str(),
                dt_name.c_str());
    ++t.skipped;
    return t;
  }
  auto wl = make_candidate_workload(*cand, *dt);
  const std::vector<float> params = wl->param_values();
  for (const auto& [domain, misaligned] : op_cases(*cand, key, pv, max_elements)) {
    Problem p = wl->problem(domain);
    if (p.elements() > max_elements) {
      std::printf("%-22s %-4s %-16s skipped: over --max-elements\n", op.c_str(), dt_name.c_str(), p.shape_text.c_str());
      ++t.skipped;
      continue;
    }
    PackageCase pc{op, dt_name, std::vector<int64_t>(domain.rbegin(), domain.rend()), params, misaligned,
                   7919u * static_cast<uint32_t>(seed_base + t.checks + 1)};
    const CaseOutcome r = run_package_case(api, cu, *wl, p, pc);
    const std::string& error = r.error;
    const char* why = r.explanation.c_str();
    taken->insert(variant_key_from_explain(why));
    ++t.checks;
    t.failed += !error.empty();
    std::printf("%-22s %-4s %-16s %-9s %s %s\n", op.c_str(), dt_name.c_str(), p.shape_text.c_str(),
                misaligned ? "unaligned" : "aligned", error.empty() ? "ok" : "FAILED", error.empty() ? why : error.c_str());
    if (r.context_lost) {
      std::printf("the context is unusable after a kernel fault; stopping\n");
      t.stopped = true;
      break;
    }
  }
  return t;
}

// The summary line, after naming each variant for this arch that no check
// took. A generic variant is unreachable where a tuned one needs no more
// alignment than an element (vec=1); selection prefers the tuned one.
void report_coverage(const std::set<std::string>& expected, const std::set<std::string>& taken, const Tally& t,
                     const std::string& device_arch) {
  size_t covered = 0;
  for (const auto& e : expected) {
    covered += taken.count(e);
    if (!taken.count(e)) std::printf("not taken: %s\n", e.c_str());
  }
  std::printf("%d checks, %d failed, %d skipped; took %zu of the %zu %s variants in the manifest\n", t.checks, t.failed,
              t.skipped, covered, expected.size(), device_arch.c_str());
}

}  // namespace

int verify_package(const std::string& dir, int64_t max_elements) {
  const nlohmann::json manifest = read_manifest(dir);
  const PackageApi api = load_package_api(dir);
  const CudaDriver* cu = nullptr;
  Status st = load_cuda_driver(&cu);
  if (!st.ok()) throw UserError("verify --package needs a GPU: " + st.message());
  const Device device = open_device(*cu);
  const PackageVariants pv = package_variants(manifest, device.arch);
  Tally all;
  std::set<std::string> taken;
  for (const auto& entry : pv.buckets) {
    all.add(verify_op(manifest, api, *cu, entry.first, pv, max_elements, all.checks, &taken));
    if (all.stopped) return 1;
  }
  all.add(verify_gemm_entries(manifest, api, *cu, device.arch, max_elements));
  report_coverage(pv.expected, taken, all, device.arch);
  cu->cuDevicePrimaryCtxRelease(device.dev);
  return all.failed ? 1 : 0;
}

}  // namespace fusekit
