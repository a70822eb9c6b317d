// fuzz_corpus: the whole fuzz corpus through both backends, optionally
// verified on the GPU; prints the rates as JSON and each failure as a line.
//   fuzz_corpus [--count N] [--seed S] [--gpu] [--failures FILE]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "tests/fuzz/fuzz_runner.h"

int main(int argc, char** argv) {
  using namespace fusekit;
  int count = 300;
  uint32_t seed = 27;
  bool gpu = false;
  std::string failures_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--count" && i + 1 < argc) count = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (a == "--gpu") gpu = true;
    else if (a == "--failures" && i + 1 < argc) failures_path = argv[++i];
    else {
      std::fprintf(stderr, "unknown argument '%s'; usage: fuzz_corpus [--count N] [--seed S] [--gpu] [--failures FILE]\n",
                   a.c_str());
      return 2;
    }
  }
  try {
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
