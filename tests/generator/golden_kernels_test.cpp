// The NVRTC printers' output for the catalog, pinned: every catalog op and
// dtype, each template's seeds plus sampled legal schedules for sm_80 and
// sm_90, hashed and compared with tests/data/golden_kernels.txt. A refactor
// of the printers must leave every line equal; a change meant to alter
// kernels regenerates the file from the `.actual` one this test writes.
#include <gtest/gtest.h>

#include <xxhash.h>

#include <fstream>
#include <random>
#include <sstream>

#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "generator/candidates/op_traits.h"
#include "generator/nvrtc/kernel_printer.h"
#include "schedules/arch_limits.h"
#include "schedules/row_reduction_template.h"

namespace fusekit {
namespace {

// Seeds first, then distinct samples, so the list is stable for a given space.
std::vector<Config> schedules_to_pin(const FusionCandidate& cand, DType dt, const ArchLimits& arch) {
  const TemplateKind kind = cand.template_kind();
  const int bytes = static_cast<int>(dtype_bytes(dt));
  ParamSpace space = template_space(kind, arch, Backend::kNvrtc, bytes, cand.full_inputs(), op_traits(cand, dt));
  std::vector<Config> out;
  for (const Config& c : template_seeds(kind, Backend::kNvrtc, bytes))
    if (space.violation(c).empty()) out.push_back(c);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 6; ++i) out.push_back(space.sample(rng));
  return out;
}

std::string print_catalog_digest() {
  std::ostringstream digest;
  for (const char* arch_name : {"sm_80", "sm_90"}) {
    const ArchLimits& arch = require_arch(arch_name);
    for (const FusionCandidate& cand : catalog())
      for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
        const Pipeline pipe = instantiate(cand, dt);
        for (const Config& c : schedules_to_pin(cand, dt, arch)) {
          const std::string symbol = kernel_symbol(cand, dt, arch.arch, Backend::kNvrtc, c);
          digest << arch_name << ' ' << cand.name << ' ' << dtype_name(dt) << " [" << c.to_string() << "] ";
          // A schedule the printer refuses is pinned too: legality is part of the printers' behaviour.
          try {
            const std::string src = print_nvrtc_kernel(cand, pipe, c, symbol).source;
            digest << std::hex << XXH64(src.data(), src.size(), 0) << std::dec << '\n';
          } catch (const UserError&) {
            digest << "refused\n";
          }
        }
      }
  }
  return digest.str();
}

TEST(GoldenKernels, CatalogSourcesAreUnchanged) {
  const std::string actual = print_catalog_digest();
  std::ofstream("golden_kernels.actual.txt") << actual;
  std::ifstream golden(std::string(FUSEKIT_SOURCE_DIR) + "/tests/data/golden_kernels.txt");
  ASSERT_TRUE(golden.good()) << "tests/data/golden_kernels.txt is missing";
  std::stringstream expected;
  expected << golden.rdbuf();
  // Line by line, so a failure names the kernel that changed.
  std::istringstream a(actual), e(expected.str());
  std::string la, le;
  int line = 0;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(a, la)), more_e = static_cast<bool>(std::getline(e, le));
    ++line;
    if (!more_a && !more_e) break;
    ASSERT_EQ(le, la) << "line " << line << " of tests/data/golden_kernels.txt; the printed digest is in "
                      << "golden_kernels.actual.txt in the test's working directory";
  }
}

}  // namespace
}  // namespace fusekit
