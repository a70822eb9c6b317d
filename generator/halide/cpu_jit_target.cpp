#include "generator/halide/cpu_jit_target.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace fusekit {
namespace {

bool cpu_has_avx512_fp16() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (edx >> 23) & 1;  // CPUID.(EAX=7,ECX=0):EDX[23] is AVX512-FP16
#else
  return false;
#endif
}

}  // namespace

// Halide 14 calls any CPU with AVX512-BF16 a Sapphire Rapids and has LLVM
// compile for that CPU, whose half-float instructions (AVX512-FP16) AMD's
// Zen 4 and Zen 5 lack: the f16 references died there of SIGILL. Without
// FP16 the level drops to Cannonlake's, which every AVX512-BF16 CPU has.
Halide::Target cpu_jit_target() {
  Halide::Target t = Halide::get_host_target();
  if (t.has_feature(Halide::Target::AVX512_SapphireRapids) && !cpu_has_avx512_fp16())
    t = t.without_feature(Halide::Target::AVX512_SapphireRapids);
  return t;
}

}  // namespace fusekit
