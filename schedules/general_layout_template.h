// The general-layout schedule template (Halide backend only): regions that
// are neither flat nor last-axis rows. Reductions over a middle or outer
// axis (global average pooling's mean over H*W, BatchNorm statistics over
// N, H, W, a softmax over C) and pointwise ops over a transposed or permuted
// input. The NVRTC templates cannot take these: their space is empty there.
//
// The thread axes are the reductions' kept axes (the outputs' axes for a
// pointwise op). Threads map onto two of them, x (coalesced) and y; the
// others are blocks; output axes that are not thread axes (a softmax's C)
// are loops inside each thread.
//
// Parameters:
//   tx      threads along x                          16 .. 256
//   ty      threads along y (needs two thread axes)  1 .. 16
//   axis    which thread axis is x: 0 the innermost, 0, 1 (1 needs two
//           1 the second                             thread axes)
//   vec     pointwise: elements per thread along x,  1, 2, 4 (<= 16 bytes)
//           vectorized
//   unroll  pointwise: elements per thread along y,  1, 2, 4
//           unrolled; reductions: each thread's
//           serial reduction loop unrolled by it
//   rsplit  0: each thread reduces its kept elements 0, 32 .. 512 (> 0
//           serially; S > 0: one block per kept      needs outputs indexed
//           element, S threads each reducing a       by the kept axes only,
//           strided share of the innermost reduced   and is spelled with
//           axis (rfactor), partials in shared       tx=32 ty=1 axis=0 vec=1
//           memory summed by one thread              stage=0)
//   stage   1: each permuted input's tile is loaded  0, 1 (1 needs a
//           into shared memory along its own         permuted input and no
//           innermost axis (coalesced), then read    reduction)
//           across it
#pragma once

#include <Halide.h>

#include <utility>
#include <vector>

#include "schedules/arch_limits.h"
#include "schedules/param_space.h"
#include "schedules/pointwise_template.h"

namespace fusekit {

// A general-layout pipeline as its schedule sees it.
struct GeneralLayoutShape {
  Halide::Func output;
  std::vector<Halide::Var> vars;       // every domain var, innermost first
  std::vector<int> output_axes;        // the output's args as domain axes, innermost first
  std::vector<int> thread_axes;        // the reductions' kept axes, else output_axes
  std::vector<std::pair<Halide::Func, Halide::RDom>> reductions;  // each total and its domain, in order
  // Each permuted input's clamped read and its storage axes (domain axes,
  // innermost first).
  std::vector<std::pair<Halide::Func, std::vector<int>>> permuted_inputs;
};

class GeneralLayoutTemplate {
 public:
  // The Halide space; empty for the NVRTC backend.
  static ParamSpace space(const ArchLimits& arch, Backend backend, int element_bytes, const GeneralTraits& traits);
  static std::vector<Config> seeds(Backend backend, int element_bytes);
  // The schedule a package carries for any shape (Halide: no alignment needs).
  static Config generic(const GeneralTraits& traits);
  // Applies `config` to the pipeline. UserError when the shape cannot take
  // it (reductions kept over different axes).
  static void apply_halide(const GeneralLayoutShape& shape, const Config& config);
  // Why the NVRTC backend has no space here, for the tuner's and the
  // printer's messages.
  static const char* nvrtc_refusal();
};

}  // namespace fusekit
