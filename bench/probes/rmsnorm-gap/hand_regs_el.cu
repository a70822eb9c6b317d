// hand_regs with Inductor's first-read hint (evict_last) and weights evict_last.
#include "common.cuh"
#define LOAD1(p) ld_el(p, keep)
#define LOADX(p) ld_plain(p)
#define LOADW(p) ld_el(p, keep)
FK_RMSNORM_PROBE(hand_regs_el, false, LOAD1, LOADX, LOADW)
