// The row held in registers (fusekit's packaged schedule), branch-free: each
// vector's weights loaded, used and stored in turn; L2 policy evict_normal (no hint).
#include "common.cuh"
#define LOAD1(p) ld_l2only(p, norm)
#define LOADX(p) ld_l2only(p, norm)
#define LOADW(p) ld_l2only(p, norm)
FK_RMSNORM_PROBE(hand_regs, false, LOAD1, LOADX, LOADW)
