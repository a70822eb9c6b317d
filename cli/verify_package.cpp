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
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "common/errors.h"
#include "fusekit/cuda_driver.h"
#include "fusekit/shape_bucket.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "generator/candidates/expr_parser.h"
#include "schedules/row_reduction_template.h"
#include "search/workload.h"

namespace fusekit {
namespace {

using LaunchFn = int (*)(const char*, const char*, const void* const*, int, void* const*, int, const float*, int,
                         const int64_t*, int, CUstream);
using ExplainFn = int (*)(const char*, const char*, const int64_t*, int, int, char*, size_t);
using LastErrorFn = const char* (*)();

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

}  // namespace

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
  if (row_k >= 0 && d.size() == 2) {
    // Odd rows and odd columns with the count in (2^(k-1), 2^k]: the fewest
    // odd rows for which an odd row length fits both buckets (none may exist
    // for tiny buckets: then the nearest odd shape).
    const int64_t lo_cols = int64_t{1} << std::max(row_k - 1, 0), hi_cols = int64_t{1} << row_k;
    const int64_t lo_n = int64_t{1} << std::max(k - 1, 0), hi_n = int64_t{1} << k;
    for (int64_t rows = 1; rows <= hi_n / lo_cols; rows += 2) {
      const int64_t hi = std::min(hi_cols, hi_n / rows), lo = std::max(lo_cols, lo_n / rows);
      const int64_t cols = odd_at_most(std::max<int64_t>(1, hi - hi / 8 > lo ? hi - hi / 8 : hi));
      if (cols > lo && cols <= hi) return {cols, rows};
    }
    return {odd_in(row_k), odd_at_most(std::max<int64_t>(1, target / odd_in(row_k)))};
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

int verify_package(const std::string& dir, int64_t max_elements) {
  const std::string manifest_path = dir + "/share/fusekit_kernels/manifest.json";
  std::ifstream mf(manifest_path);
  if (!mf) throw UserError("no package at '" + dir + "' (missing " + manifest_path + "); pass the --out of `fusekit build`");
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(mf);
  } catch (const std::exception& e) {
    throw UserError(manifest_path + " is not valid JSON: " + e.what());
  }
  const std::string lib_path = dir + "/lib/libfusekit_kernels.so";
  void* lib = dlopen(lib_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw UserError("cannot load " + lib_path + ": " + dlerror());
  auto launch = reinterpret_cast<LaunchFn>(dlsym(lib, "fusekit_launch"));
  auto explain = reinterpret_cast<ExplainFn>(dlsym(lib, "fusekit_explain"));
  auto last_error = reinterpret_cast<LastErrorFn>(dlsym(lib, "fusekit_last_error"));
  if (!launch || !explain || !last_error) throw UserError(lib_path + " lacks the fusekit_launch/explain/last_error API");

  const CudaDriver* cu = nullptr;
  Status st = load_cuda_driver(&cu);
  if (!st.ok()) throw UserError("verify --package needs a GPU: " + st.message());
  CUdevice dev;
  CUcontext ctx;
  auto check = [&](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) throw UserError(cuda_status(*cu, r, what).message());
  };
  check(cu->cuInit(0), "cuInit");
  check(cu->cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cu->cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cu->cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  int major = 0, minor = 0;
  check(cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attribute");
  check(cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attribute");
  const char* ptx_env = std::getenv("FUSEKIT_PTX_ONLY");
  const bool ptx_only = ptx_env && *ptx_env && std::strcmp(ptx_env, "0") != 0;
  const std::string device_arch = ptx_only ? "ptx (compute_75)" : "sm_" + std::to_string(major * 10 + minor);

  // Buckets tuned per op and dtype, and the variants this device can take.
  std::map<std::pair<std::string, std::string>, std::set<std::pair<int, int>>> buckets;  // (n, row) log2
  // Variants compiled for one row length: (row length, n log2).
  std::map<std::pair<std::string, std::string>, std::set<std::pair<int64_t, int>>> fixed_rows;
  // Variants taken for rows of a multiple of some length: (multiple, n log2, row log2).
  std::map<std::pair<std::string, std::string>, std::set<std::tuple<int, int, int>>> row_multiples;
  std::set<std::string> expected, taken;
  for (const auto& v : manifest.at("variants")) {
    const std::string op = v.at("op"), dt = v.at("dtype"), bucket = v.at("shape_bucket");
    auto& b = buckets[{op, dt}];
    int n = 0, row = -1;
    const bool bucketed = parse_shape_bucket(bucket, &n, &row);
    if (bucketed) b.insert({n, row});
    if (v.contains("row_length") && v.at("row_length").is_number_integer())
      fixed_rows[{op, dt}].insert({v.at("row_length").get<int64_t>(), n});
    if (bucketed && v.value("row_multiple", 1) > 1)
      row_multiples[{op, dt}].insert({v.at("row_multiple").get<int>(), n, row});
    if (v.at("arch") == device_arch)
      expected.insert(v.at("entry").get<std::string>() + " | " + v.at("params").get<std::string>() + " | " + bucket);
  }

  int checks = 0, failed = 0, skipped = 0;
  for (const auto& [key, bucket_set] : buckets) {
    const auto& [op, dt_name] = key;
    const FusionCandidate* cand = nullptr;
    for (const auto& c : catalog())
      if (c.name == op) cand = &c;
    // An --expr or plan op: its expression, as the manifest records it.
    FusionCandidate from_expression;
    if (!cand && manifest.contains("expressions") && manifest["expressions"].contains(op)) {
      try {
        from_expression = parse_expression(manifest["expressions"][op].get<std::string>());
        from_expression.name = op;
        cand = &from_expression;
      } catch (const UserError& e) {
        std::printf("%-22s %-4s skipped: its expression does not parse: %s\n", op.c_str(), dt_name.c_str(), e.what());
      }
    }
    auto dt = parse_dtype(dt_name);
    if (!cand || !dt) {
      std::printf("%-22s %-4s skipped: not a catalog op or a recorded expression\n", op.c_str(), dt_name.c_str());
      ++skipped;
      continue;
    }
    auto wl = make_candidate_workload(*cand, *dt);
    std::vector<std::pair<std::vector<int64_t>, bool>> cases;  // domain, misaligned
    for (const auto& [k, row_k] : bucket_set) cases.push_back({odd_domain_in_bucket(*cand, k, row_k), false});
    // A specialized variant at its own row length: the most odd rows that
    // stay in its bucket and within --max-elements (selection takes it at
    // any row count).
    for (const auto& [cols, k] : fixed_rows[key]) {
      const int64_t most = std::min(int64_t{1} << k, max_elements);
      cases.push_back({{cols, odd_at_most(std::max<int64_t>(1, most / cols))}, false});
    }
    // A variant for rows of a multiple of m: its bucket's odd shape with
    // the row length rounded up to a multiple of m.
    for (const auto& [m, k, row_k] : row_multiples[key]) {
      std::vector<int64_t> d = odd_domain_in_bucket(*cand, k, row_k);
      d.front() = RowReductionTemplate::round_up_row(d.front(), m);
      cases.push_back({d, false});
    }
    cases.push_back({cand->odd_domain(), true});
    const std::vector<float> params = wl->param_values();
    const size_t esize = dtype_bytes(*dt);
    for (const auto& [domain, misaligned] : cases) {
      Problem p = wl->problem(domain);
      if (p.elements() > max_elements) {
        std::printf("%-22s %-4s %-16s skipped: over --max-elements\n", op.c_str(), dt_name.c_str(), p.shape_text.c_str());
        ++skipped;
        continue;
      }
      std::vector<HostTensor> in, ref, got;
      for (size_t i = 0; i < p.input_dims.size(); ++i) {
        in.push_back(HostTensor::make(*dt, p.input_dims[i]));
        wl->fill_input(i, 7919u * (checks + 1) + i, &in.back());
      }
      wl->reference(p, in, &ref);
      const size_t offset = misaligned ? esize : 0;
      std::vector<CUdeviceptr> bufs;
      auto alloc = [&](const HostTensor& t) {
        CUdeviceptr b;
        check(cu->cuMemAlloc(&b, t.bytes.size() + 256), "cuMemAlloc");
        bufs.push_back(b);
        return b + offset;
      };
      std::vector<const void*> in_ptrs;
      std::vector<void*> out_ptrs;
      for (const auto& t : in) {
        CUdeviceptr d = alloc(t);
        check(cu->cuMemcpyHtoD(d, t.bytes.data(), t.bytes.size()), "cuMemcpyHtoD");
        in_ptrs.push_back(reinterpret_cast<const void*>(d));
      }
      for (const auto& t : ref) {
        CUdeviceptr d = alloc(t);
        check(cu->cuMemsetD8(d, kPoisonByte, t.bytes.size()), "cuMemsetD8");  // an unwritten element fails
        out_ptrs.push_back(reinterpret_cast<void*>(d));
      }
      const std::vector<int64_t> outer_first(domain.rbegin(), domain.rend());
      char why[512] = {0};
      const int align = misaligned ? static_cast<int>(esize) : 256;
      explain(op.c_str(), dt_name.c_str(), outer_first.data(), static_cast<int>(outer_first.size()), align, why,
              sizeof(why));
      int rc = launch(op.c_str(), dt_name.c_str(), in_ptrs.data(), static_cast<int>(in_ptrs.size()), out_ptrs.data(),
                      static_cast<int>(out_ptrs.size()), params.data(), static_cast<int>(params.size()),
                      outer_first.data(), static_cast<int>(outer_first.size()), nullptr);
      std::string error = rc ? std::string("fusekit_launch: ") + last_error() : "";
      if (!rc) {
        CUresult r = cu->cuCtxSynchronize();
        if (r != CUDA_SUCCESS) error = cuda_status(*cu, r, "kernel").message();
      }
      if (error.empty()) {
        for (size_t o = 0; o < ref.size(); ++o) {
          got.push_back(HostTensor::make(*dt, p.output_dims[o]));
          check(cu->cuMemcpyDtoH(got.back().bytes.data(), reinterpret_cast<CUdeviceptr>(out_ptrs[o]),
                                 got.back().bytes.size()),
                "cuMemcpyDtoH");
        }
        Comparison c = compare_outputs(got, ref, wl->tolerance(p));  // row ops widen it with row length
        if (!c.passed()) error = c.detail;
      }
      for (CUdeviceptr b : bufs) cu->cuMemFree(b);
      taken.insert(variant_key_from_explain(why));
      ++checks;
      failed += !error.empty();
      std::printf("%-22s %-4s %-16s %-9s %s %s\n", op.c_str(), dt_name.c_str(), p.shape_text.c_str(),
                  misaligned ? "unaligned" : "aligned", error.empty() ? "ok" : "FAILED", error.empty() ? why : error.c_str());
      if (!error.empty() && error.find("CUDA_ERROR") != std::string::npos) {
        std::printf("the context is unusable after a kernel fault; stopping\n");
        return 1;
      }
    }
  }
  size_t covered = 0;
  for (const auto& e : expected) {
    covered += taken.count(e);
    // A generic variant is unreachable where a tuned one needs no more
    // alignment than an element (vec=1); selection prefers the tuned one.
    if (!taken.count(e)) std::printf("not taken: %s\n", e.c_str());
  }
  std::printf("%d checks, %d failed, %d skipped; took %zu of the %zu %s variants in the manifest\n", checks, failed,
              skipped, covered, expected.size(), device_arch.c_str());
  cu->cuDevicePrimaryCtxRelease(dev);
  return failed ? 1 : 0;
}

}  // namespace fusekit
