#include "schedules/arch_limits.h"

#include <algorithm>

#include "common/errors.h"

namespace fusekit {

const std::vector<ArchLimits>& known_arch_limits() {
  // Limits: CUDA C Programming Guide, "Technical Specifications per Compute
  // Capability". Bandwidth and SM count: the example part's datasheet.
  static const std::vector<ArchLimits> table = {
      {{7, 0}, "Tesla V100-SXM2", 80, 1024, 2048, 32, 65536, 255, 96 * 1024, 70, 900.0, 6.0e6},
      {{7, 5}, "Tesla T4", 40, 1024, 1024, 16, 65536, 255, 64 * 1024, 75, 320.0, 4.0e6},
      {{8, 0}, "A100-SXM4-80GB", 108, 1024, 2048, 32, 65536, 255, 163 * 1024, 80, 2039.0, 40.0e6},
      {{8, 6}, "RTX A6000", 84, 1024, 1536, 16, 65536, 255, 99 * 1024, 86, 768.0, 6.0e6},
      {{8, 9}, "L40S", 142, 1024, 1536, 24, 65536, 255, 99 * 1024, 86, 864.0, 96.0e6},
      {{9, 0}, "H100-SXM5", 132, 1024, 2048, 32, 65536, 255, 227 * 1024, 86, 3350.0, 50.0e6},
  };
  return table;
}

std::string known_arch_names() {
  std::string s;
  for (const auto& a : known_arch_limits()) s += (s.empty() ? "" : " ") + a.arch.name();
  return s;
}

const ArchLimits* find_arch_limits(const Arch& arch) {
  for (const auto& a : known_arch_limits())
    if (a.arch == arch) return &a;
  return nullptr;
}

int resident_warps_per_sm(const ArchLimits& arch, int threads, int registers, int shared_bytes) {
  if (threads < 1 || threads > arch.max_threads_per_block) return 0;
  const int warps = (threads + 31) / 32;
  int blocks = std::min(arch.max_blocks_per_sm, arch.max_threads_per_sm / (warps * 32));
  if (registers > 0) {
    if (registers > arch.max_registers_per_thread) return 0;
    const int per_warp = (registers * 32 + 255) / 256 * 256;
    blocks = std::min(blocks, arch.registers_per_sm / per_warp / warps);
  }
  if (shared_bytes > 0) {
    // The SM's shared memory is the per-block opt-in maximum plus one
    // reserved KiB from sm_80 on (A100: 163 + 1 KiB, sm_86/89: 99 + 1,
    // H100: 227 + 1).
    const int reserve = arch.arch.number() >= 80 ? 1024 : 0;
    if (shared_bytes > arch.max_shared_per_block) return 0;
    blocks = std::min(blocks, (arch.max_shared_per_block + reserve) / (shared_bytes + reserve));
  }
  return blocks * warps;
}

const ArchLimits& require_arch(const std::string& text) {
  auto arch = parse_arch(text);
  const ArchLimits* limits = arch ? find_arch_limits(*arch) : nullptr;
  if (!limits) throw UserError("unknown arch '" + text + "'; known: " + known_arch_names());
  return *limits;
}

}  // namespace fusekit
