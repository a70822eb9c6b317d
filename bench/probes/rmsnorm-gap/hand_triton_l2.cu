// hand_triton with the L2 policies only (no L1 eviction qualifiers).
#include "common.cuh"
#define LOAD1(p) ld_l2only(p, keep)
#define LOADX(p) ld_l2only(p, drop)
#define LOADW(p) ld_l2only(p, keep)
FK_RMSNORM_PROBE(hand_triton_l2, true, LOAD1, LOADX, LOADW)
