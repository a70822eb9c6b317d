// fuzz_corpus: the whole fuzz corpus through both backends, optionally
// verified on the GPU; prints the rates as JSON and each failure as a line.
// --list prints the corpus instead (index, the layout the parser gives it,
// source with ';' for newlines; tab-separated) for steps that tune each one.
//   fuzz_corpus [--count N] [--seed S] [--gpu] [--failures FILE] [--list]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "generator/candidates/expr_parser.h"
#include "tests/fuzz/fuzz_runner.h"

namespace {

// The parsed layout, not the generator's: an nchw expression that uses no
// per-channel input is flat, and takes a flat size.
int print_corpus(uint32_t seed, int count) {
  int index = 0;
  for (const auto& e : fusekit::fuzz_expressions(seed, count)) {
    std::string src = e.source;
    for (auto& ch : src) if (ch == '\n') ch = ';';
    const char* layout = fusekit::layout_name(fusekit::parse_expression(e.source).layout);
    std::printf("%d\t%s\t%s\n", index++, layout, src.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fusekit;
  int count = 300;
  uint32_t seed = 27;
  bool gpu = false, list = false;
  std::string failures_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--count" && i + 1 < argc) count = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (a == "--gpu") gpu = true;
    else if (a == "--list") list = true;
    else if (a == "--failures" && i + 1 < argc) failures_path = argv[++i];
    else {
      std::fprintf(stderr, "unknown argument '%s'; usage: fuzz_corpus [--count N] [--seed S] [--gpu] [--failures FILE] "
                   "[--list]\n",
                   a.c_str());
      return 2;
    }
  }
  try {
    if (list) return print_corpus(seed, count);
    const ArchLimits& sm90 = require_arch("sm_90");
    std::unique_ptr<Measurer> measurer;
    if (gpu) measurer = make_gpu_measurer();
    std::ofstream failures;
    if (!failures_path.empty()) failures.open(failures_path);
    FuzzTally tally;
    for (const auto& e : fuzz_expressions(seed, count)) {
      for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
        const FuzzOutcome o = run_fuzz_case(e, dt, sm90, measurer.get());
        tally.add(dt, o);
        const bool ok = o.reference_ok && o.nvrtc_built && o.halide_built &&
                        (!gpu || (o.nvrtc_verified && o.halide_verified));
        if (!ok && failures.is_open()) {
          std::string src = e.source;
          for (auto& ch : src) if (ch == '\n') ch = ';';
          std::string err = o.error.substr(0, 400);
          for (auto& ch : err) if (ch == '\n') ch = ' ';
          failures << dtype_name(dt) << "\t" << e.layout << "\t" << src << "\t" << err << "\n";
        }
      }
    }
    std::printf("%s\n", tally.json().c_str());
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "fuzz_corpus: %s\n", ex.what());
    return 1;
  }
  return 0;
}
