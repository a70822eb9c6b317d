// Per-architecture limits that make a schedule illegal, and the figures the
// analytic cost model uses for an arch whose GPU is not present. The
// bandwidth and SM count are those of one representative part per arch
// (named in `example_gpu`); a tuned record always stores the real GPU.
#pragma once

#include <string>
#include <vector>

#include "fusekit/arch.h"

namespace fusekit {

struct ArchLimits {
  Arch arch;
  std::string example_gpu;     // part the modeled figures describe
  int sm_count;                // of that part
  int max_threads_per_block;   // 1024 on every supported arch
  int max_threads_per_sm;
  int max_blocks_per_sm;
  int registers_per_sm;        // 32-bit registers
  int max_registers_per_thread;
  int max_shared_per_block;    // bytes, opt-in maximum
  int halide_cuda_capability;  // closest capability Halide 14 can target
  double dram_gbps;            // datasheet DRAM bandwidth of example_gpu
  double l2_bytes;
};

// sm_70 sm_75 sm_80 sm_86 sm_89 sm_90, ascending.
const std::vector<ArchLimits>& known_arch_limits();
// "sm_70 sm_75 sm_80 sm_86 sm_89 sm_90".
std::string known_arch_names();
// Parses and checks an arch name; throws UserError naming the value and the
// known archs, e.g. "unknown arch 'sm_85'; known: sm_70 ... sm_90".
const ArchLimits& require_arch(const std::string& text);
// nullptr when the arch is not in the table.
const ArchLimits* find_arch_limits(const Arch& arch);

// Warps of blocks of `threads` threads that fit on one SM at once, by
// threads, blocks, registers (allocated per warp in units of 256; <= 0:
// unknown, not a limit) and shared memory (static plus dynamic bytes per
// block, each block also reserving 1 KiB from sm_80 on).
int resident_warps_per_sm(const ArchLimits& arch, int threads, int registers, int shared_bytes);

}  // namespace fusekit
