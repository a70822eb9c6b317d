#include "cli/cmd_source.h"

#include <algorithm>
#include <cstdio>

#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/op_traits.h"
#include "generator/nvrtc/kernel_printer.h"
#include "schedules/arch_limits.h"
#include "schedules/general_layout_template.h"
#include "search/tuner.h"

namespace fusekit {

po::options_description cmd_source_options() {
  po::options_description o("source options");
  add_arch_option(o, "target architecture (required)");
  add_selection_options(o);
  add_dtype_option(o);
  o.add_options()
      ("params", po::value<std::string>()->default_value("ept=2 fast=0 grid=0 threads=256 vec=4"),
       "the schedule (row ops default to \"cache=4 fast=0 rows=1 threads=256 vec=4\")")
      ("backend", po::value<std::vector<std::string>>()->multitoken()->default_value({"nvrtc"}, "nvrtc"),
       "nvrtc (CUDA C) or halide (PTX)");
  return o;
}

int cmd_source(const po::variables_map& vm, const std::vector<std::string>& args) {
  if (!args.empty()) throw UserError("source takes no positional arguments, got '" + args[0] + "'");
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
  if (kind == TemplateKind::kGeneral && backend == Backend::kNvrtc)
    throw UserError("cannot print an NVRTC kernel of " + cands[0].name + ": " + GeneralLayoutTemplate::nvrtc_refusal() +
                    "; give --backend halide");
  if (backend == Backend::kHalide && vm["params"].defaulted())
    config = kind == TemplateKind::kRowReduction ? Config::parse("lanes=1 threads=256 vec=4")
             : kind == TemplateKind::kGeneral    ? generic_schedule(kind)
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

}  // namespace fusekit
