// hand_triton with evict_normal policies (no hint): the structure alone.
#include "common.cuh"
#define LOAD1(p) ld_l2only(p, norm)
#define LOADX(p) ld_l2only(p, norm)
#define LOADW(p) ld_l2only(p, norm)
FK_RMSNORM_PROBE(hand_triton_plain, true, LOAD1, LOADX, LOADW)
