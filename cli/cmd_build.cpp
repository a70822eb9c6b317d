#include "cli/cmd_build.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "cli/cmd_build_plan.h"
#include "common/errors.h"
#include "fusekit/cublaslt.h"
#include "generator/candidates/gemm_candidate.h"
#include "generator/nvrtc/nvrtc_compiler.h"
#include "generator/halide/halide_backend.h"
#include "search/interfaces.h"
#include "tunedb/winner_selection.h"
#include "generator/package/library_emitter.h"
#include "schedules/arch_limits.h"
#include "tunedb/tune_db.h"

namespace fusekit {

namespace {

// The runtime this fusekit links packages against: beside an installed
// fusekit (PREFIX/bin/fusekit: PREFIX/lib, PREFIX/include), else the build
// tree it was built in.
std::filesystem::path install_prefix() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path().parent_path();
}

std::string default_runtime_library() {
  const auto installed = install_prefix() / "lib" / "libfusekit_runtime.a";
  return access(installed.c_str(), R_OK) == 0 ? installed.string() : std::string(FUSEKIT_RUNTIME_LIBRARY);
}

std::string default_runtime_include() {
  const auto installed = install_prefix() / "include";
  return access((installed / "fusekit" / "package.h").c_str(), R_OK) == 0 ? installed.string()
                                                                          : std::string(FUSEKIT_RUNTIME_INCLUDE);
}

// --out must be a folder or a path whose existing part is folders.
void check_out_dir(const std::string& out) {
  if (out.empty()) throw UserError("--out is empty; give the package folder, e.g. --out kernels/");
  std::error_code ec;
  for (std::filesystem::path p = std::filesystem::absolute(out, ec); !p.empty(); p = p.parent_path()) {
    const auto st = std::filesystem::status(p, ec);
    if (std::filesystem::exists(st) && !std::filesystem::is_directory(st))
      throw UserError("--out " + out + ": '" + p.string() + "' is a file, not a folder; give another --out");
    if (std::filesystem::exists(st) || p == p.parent_path()) break;
  }
}

// The cuBLASLt GEMM records should come from: --target-cublaslt, else the
// library here (what a package run on this machine loads), else none ("":
// every version ranks alike, and a note says so).
std::string target_cublas(const po::variables_map& vm) {
  if (vm.count("target-cublaslt")) {
    const std::string v = vm["target-cublaslt"].as<std::string>();
    if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
      throw UserError("--target-cublaslt '" + v + "' is not a cuBLASLt version number; give what "
                      "cublasLtGetVersion() returns, e.g. --target-cublaslt 130100");
    return v;
  }
  if (!vm.count("gemm")) return "";
  const CublasLt* lt = nullptr;
  const Status st = load_cublaslt(&lt);
  if (st.ok()) return std::to_string(lt->cublasLtGetVersion());
  std::fprintf(stderr, "fusekit: note: %s: GEMM records of every cuBLASLt version rank alike; pass "
               "--target-cublaslt VERSION to prefer one\n", st.message().c_str());
  return "";
}

// What `build` ranks records against: this fusekit's toolchain, and the
// GPU named by --target-gpu, else the GPU here (if any).
RecordOrigin build_target(const std::string& target_gpu, const std::string& cublas_version) {
  RecordOrigin t;
  t.cuda_version = nvrtc_version();
  t.halide_version = halide_version();
  t.fusekit_version = FUSEKIT_VERSION;
  t.cublas_version = cublas_version;
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

}  // namespace

po::options_description cmd_build_options() {
  po::options_description o("build options");
  o.add_options()("arch", po::value<std::string>(), "archs to build cubins for, e.g. sm_80,sm_86,sm_90 (required)")
      ("out", po::value<std::string>(), "package folder (required)");
  add_selection_options(o);
  add_db_option(o);
  o.add_options()
      ("cxx", po::value<std::string>()->default_value("c++"), "C++ compiler for the package")
      ("runtime-lib", po::value<std::string>(),
       "libfusekit_runtime.a to link into the package (default: PREFIX/lib beside an installed fusekit, else the "
       "build tree's)")
      ("runtime-include", po::value<std::string>(), "the runtime's headers (default: PREFIX/include, likewise)")
      ("cuda-include", po::value<std::string>(), "the folder holding cuda.h (default: the CUDA toolkit fusekit was "
                                                 "built with)")
      ("plan", po::value<std::string>(), "package every entry of a plan from `fusekit plan` under its name")
      ("gemm", po::value<std::vector<std::string>>(),
       "a GEMM op NAME:EXPR over acc = A @ B (B as nn.Linear's [N, K]; NAME:kn:EXPR for [K, N]), its records "
       "imported from bench/gemm_race --records; repeatable")
      ("target-gpu", po::value<std::string>(),
       "rank records measured on this GPU (e.g. \"NVIDIA H200\") above others (default: the GPU here)")
      ("target-cublaslt", po::value<std::string>(),
       "rank GEMM records measured with this cuBLASLt (cublasLtGetVersion(), e.g. 130100) above others "
       "(default: the libcublasLt here)");
  return o;
}

int cmd_build(const po::variables_map& vm, const std::vector<std::string>& args) {
  if (!args.empty()) throw UserError("build takes no positional arguments, got '" + args[0] + "'");
  if (!vm.count("arch")) throw UserError("build needs --arch, e.g. --arch sm_80,sm_86,sm_90");
  if (!vm.count("out")) throw UserError("build needs --out DIR for the package");
  EmitOptions o;
  for (const auto& a : split_list({vm["arch"].as<std::string>()})) o.archs.push_back(require_arch(a).arch);
  o.out_dir = vm["out"].as<std::string>();
  check_out_dir(o.out_dir);
  if (!vm.count("plan") && !vm.count("pattern") && !vm.count("expr") && !vm.count("gemm"))
    throw UserError("build needs what to package: --plan plan.json (from `fusekit plan`), --pattern NAME[,NAME] (or all), "
                    "--expr TEXT [--name NAME] or --gemm NAME:EXPR");
  if (vm.count("plan") && (vm.count("pattern") || vm.count("expr")))
    throw UserError("give --plan, or --pattern/--expr, not both");
  if (vm.count("pattern") || vm.count("expr")) o.candidates = selected_candidates(vm);
  if (vm.count("gemm"))
    for (const auto& g : vm["gemm"].as<std::vector<std::string>>()) o.gemms.push_back(parse_gemm_flag(g));
  o.cxx = vm["cxx"].as<std::string>();
  o.runtime_library = vm.count("runtime-lib") ? vm["runtime-lib"].as<std::string>() : default_runtime_library();
  o.runtime_include = vm.count("runtime-include") ? vm["runtime-include"].as<std::string>() : default_runtime_include();
  o.cuda_include = vm.count("cuda-include") ? vm["cuda-include"].as<std::string>() : FUSEKIT_CUDA_INCLUDE;
  for (const auto& [flag, path] : {std::pair{"--runtime-lib", o.runtime_library}, {"--runtime-include", o.runtime_include},
                                   {"--cuda-include", o.cuda_include}})
    if (access(path.c_str(), R_OK) != 0)
      throw UserError(std::string("cannot read ") + path + " (" + flag + "); pass " + flag + " with the right path");
  o.target = build_target(vm.count("target-gpu") ? vm["target-gpu"].as<std::string>() : "", target_cublas(vm));
  if (vm.count("plan")) return cmd_build_plan(vm, o);
  const std::string db_path = resolve_db_path(vm);
  auto db = open_tune_db(db_path, OpenMode::kMustExist);
  EmitReport r = emit_library(*db, o);
  for (const auto& line : r.selections) std::fprintf(stderr, "fusekit: selected %s\n", line.c_str());
  for (const auto& n : r.notes) std::fprintf(stderr, "fusekit: note: %s\n", n.c_str());
  std::printf("wrote %s: %zu kernel variants for", o.out_dir.c_str(), r.variants);
  for (const auto& op : r.ops) std::printf(" [%s]", op.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace fusekit
