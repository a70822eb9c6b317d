// The pointwise schedule template: one thread handles `ept` vectors of `vec`
// elements, `threads` threads per block, consecutive threads on consecutive
// vectors (coalesced). The iteration domain is flattened to one index.
//
// Parameters:
//   threads  threads per block                      64..1024
//   vec      elements per access (<= 16 bytes)       1, 2, 4, 8
//   ept      vectors per thread, unrolled            1, 2, 4, 8
//   grid     0: one-shot grid, one tile per block;   (nvrtc only)
//            k > 0: grid-stride loop over k blocks per SM
//   fast     1: compile with --use_fast_math          (nvrtc only)
//   plane    1: each block takes a tile of one plane    0, 1 (nvrtc only; 1
//            of the innermost axis (an NCHW tensor's    needs inputs constant
//            H*W of one image and channel): inputs      over a plane and none
//            broadcast over the plane are loaded once   that varies along it:
//            per block, and no element's coordinates    OpTraits::plane_inputs)
//            are computed; 0: the domain is one flat
//            index
//   occ      1: __launch_bounds__ asks for as many     0, 1 (nvrtc only)
//            blocks per SM as fill it, so ptxas caps
//            registers at what full occupancy allows
//   hint     loads of every full input carry eviction  0, 1, 2 (nvrtc, sm_80+)
//            policies in L1 and L2: 1 evict_first (a
//            stream read once), 2 evict_last (as
//            Inductor's row reads); 0 plain loads
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

#include "schedules/backend.h"
#include "schedules/arch_limits.h"
#include "schedules/general_traits.h"
#include "schedules/param_space.h"

namespace fusekit {

// What an op offers a schedule beyond its inputs. Row reductions: weights
// (inputs indexed by the column alone) and pairs of reductions one combine
// can finish (generator/candidates/op_traits.h: find_reduction_pairs).
// Pointwise: inputs broadcast along every axis but the innermost (bn_relu's
// per-channel scale and shift), when no input is broadcast along the
// innermost: then a block can take a tile of one innermost plane and load
// them once (`plane`).
struct OpTraits {
  int weight_inputs = 0;
  int reduction_pairs = 0;
  int plane_inputs = 0;
  GeneralTraits general;  // general layouts (schedules/general_layout_template.h)
};

class PointwiseTemplate {
 public:
  // The legal space for one arch, backend and storage element size.
  static ParamSpace space(const ArchLimits& arch, Backend backend, int element_bytes, const OpTraits& traits = {});
  // Elements one block covers per pass: threads * vec * ept.
  static int64_t tile_elements(const Config& config);
  // Empty when `config` can run a domain of `elements`; else why not. The
  // Halide schedule shifts its last tile inward, so it needs one full tile.
  static std::string size_violation(const Config& config, Backend backend, int64_t elements);
  // Known-good starting points (16-byte accesses, 128-1024 threads, 1-4
  // vectors per thread, 128 and 256 threads of 1-2 vectors also with
  // occ=1; the measured winners are among them or close); the
  // search tries these before random ones.
  static std::vector<Config> seeds(Backend backend, int element_bytes);
  // Applies the GPU schedule to `output` (whose pure vars are `vars`,
  // innermost first) for the Halide backend.
  static void apply_halide(Halide::Func output, const std::vector<Halide::Var>& vars, const Config& config);
};

}  // namespace fusekit
