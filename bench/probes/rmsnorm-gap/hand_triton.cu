// Inductor's 32-warp kernel, in CUDA: first read evict_last (L1 and L2),
// the output pass reads x again evict_first and w evict_last.
#include "common.cuh"
#define LOAD1(p) ld_el(p, keep)
#define LOADX(p) ld_ef(p, drop)
#define LOADW(p) ld_el(p, keep)
FK_RMSNORM_PROBE(hand_triton, true, LOAD1, LOADX, LOADW)
