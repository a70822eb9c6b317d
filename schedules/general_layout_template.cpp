// Map: space and seeds, then apply_halide: the output's loop nest (serial
// reductions at each thread, or one block per kept element with rfactor'ed
// partials), then the staged permuted inputs.
#include "schedules/general_layout_template.h"

#include <algorithm>

#include "common/errors.h"

namespace fusekit {

const char* GeneralLayoutTemplate::nvrtc_refusal() {
  return "the NVRTC templates take flat, broadcast and last-axis row regions only, not a general layout (a reduction "
         "over a non-last axis, or an input read through a permutation); only the Halide backend builds it";
}

ParamSpace GeneralLayoutTemplate::space(const ArchLimits& arch, Backend backend, int element_bytes,
                                        const GeneralTraits& traits) {
  ParamSpace s;
  if (backend != Backend::kHalide) return s;
  s.add("tx", {16, 32, 64, 128, 256});
  s.add("ty", {1, 2, 4, 8, 16});
  s.add("axis", {0, 1});
  s.add("vec", {1, 2, 4});
  s.add("unroll", {1, 2, 4});
  s.add("rsplit", {0, 32, 64, 128, 256, 512});
  s.add("stage", {0, 1});
  const int max_block = arch.max_threads_per_block;
  const bool two_axes = traits.thread_axes >= 2;
  auto coop = [](const Config& c) { return c.get("rsplit") > 0; };
  s.require("threads per block above the arch limit of " + std::to_string(max_block), [max_block, coop](const Config& c) {
    return (coop(c) ? c.get("rsplit") : c.get("tx") * c.get("ty")) <= max_block;
  });
  s.require("blocks of fewer than 32 threads", [coop](const Config& c) { return coop(c) || c.get("tx") * c.get("ty") >= 32; });
  s.require("ty > 1 or axis=1 with one thread axis",
            [two_axes](const Config& c) { return two_axes || (c.get("ty") == 1 && c.get("axis") == 0); });
  s.require("an access wider than 16 bytes", [element_bytes](const Config& c) { return c.get("vec") * element_bytes <= 16; });
  const bool reduces = traits.reduces;
  s.require("vec > 1 in a reduction", [reduces](const Config& c) { return !reduces || c.get("vec") == 1; });
  const bool kept = traits.outputs_are_kept;
  s.require("rsplit > 0 without outputs over the kept axes only, or with a pointwise op",
            [kept, reduces, coop](const Config& c) { return !coop(c) || (kept && reduces); });
  s.require("rsplit > 0 spelled otherwise than tx=32 ty=1 axis=0 vec=1 stage=0", [coop](const Config& c) {
    return !coop(c) ||
           (c.get("tx") == 32 && c.get("ty") == 1 && c.get("axis") == 0 && c.get("vec") == 1 && c.get("stage") == 0);
  });
  const bool permuted = traits.permuted_inputs > 0;
  s.require("stage=1 without a permuted input, or in a reduction",
            [permuted, reduces](const Config& c) { return c.get("stage") == 0 || (permuted && !reduces); });
  return s;
}

std::vector<Config> GeneralLayoutTemplate::seeds(Backend backend, int element_bytes) {
  if (backend != Backend::kHalide) return {};
  const int wide = std::min(4, 16 / element_bytes);
  std::vector<Config> out;
  auto add = [&](const char* text) { out.push_back(Config::parse(text)); };
  // Pointwise over a transposed input: 32x8 threads on 32x32 tiles, staged
  // or not, and vectors along x.
  add("axis=0 rsplit=0 stage=1 tx=32 ty=8 unroll=4 vec=1");
  add("axis=0 rsplit=0 stage=0 tx=32 ty=8 unroll=4 vec=1");
  add("axis=0 rsplit=0 stage=1 tx=32 ty=16 unroll=2 vec=1");
  Config v = Config::parse("axis=0 rsplit=0 stage=1 tx=16 ty=16 unroll=2 vec=1");
  v.set("vec", wide);
  out.push_back(v);
  // Reductions: one block per kept element (long reductions: statistics),
  // or a thread per kept element (short ones: pooling over 7x7, a softmax
  // over channels).
  add("axis=0 rsplit=256 stage=0 tx=32 ty=1 unroll=4 vec=1");
  add("axis=0 rsplit=256 stage=0 tx=32 ty=1 unroll=1 vec=1");
  add("axis=0 rsplit=64 stage=0 tx=32 ty=1 unroll=1 vec=1");
  add("axis=0 rsplit=512 stage=0 tx=32 ty=1 unroll=4 vec=1");
  add("axis=0 rsplit=512 stage=0 tx=32 ty=1 unroll=1 vec=1");
  add("axis=0 rsplit=0 stage=0 tx=128 ty=1 unroll=4 vec=1");
  add("axis=0 rsplit=0 stage=0 tx=64 ty=4 unroll=1 vec=1");
  add("axis=0 rsplit=0 stage=0 tx=256 ty=1 unroll=1 vec=1");
  return out;
}

Config GeneralLayoutTemplate::generic(const GeneralTraits&) {
  return Config::parse("axis=0 rsplit=0 stage=0 tx=32 ty=1 unroll=1 vec=1");
}

namespace {

using namespace Halide;

// Position of domain axis `a` in the output's args, or -1.
int output_position(const GeneralLayoutShape& s, int a) {
  const auto it = std::find(s.output_axes.begin(), s.output_axes.end(), a);
  return it == s.output_axes.end() ? -1 : static_cast<int>(it - s.output_axes.begin());
}

// Unrolls a thread's serial reduction loop by U: the second reduced axis's
// loop, moved inside the split axis's, when there is one (its iterations
// share the split axis's bounds check), else the split axis's outer loop.
void unroll_partial(Func partial, const RDom& r, const RVar& ro, int unroll, const std::string& n) {
  RVar uo("fk_guo" + n), ui("fk_gui" + n);
  if (r.dimensions() >= 2) {
    partial.update().reorder(r[1], ro).split(r[1], uo, ui, unroll, TailStrategy::GuardWithIf).unroll(ui);
  } else {
    partial.update().split(ro, uo, ui, unroll, TailStrategy::GuardWithIf).unroll(ui);
  }
}

// One block per kept element; S threads share each reduction's innermost
// reduced axis (rfactor), their partials in shared memory at the block,
// then one thread sums them; each thread's serial loop unrolled by U.
void apply_cooperative(const GeneralLayoutShape& s, int split, int unroll) {
  Func out = s.output;
  std::vector<VarOrRVar> blocks;
  for (int a : s.output_axes) blocks.push_back(s.vars.at(a));
  FUSEKIT_INTERNAL_ASSERT(blocks.size() <= 3, "more than three block axes");
  if (blocks.size() == 1) out.gpu_blocks(blocks[0]);
  else if (blocks.size() == 2) out.gpu_blocks(blocks[0], blocks[1]);
  else out.gpu_blocks(blocks[0], blocks[1], blocks[2]);
  const Var at = s.vars.at(s.output_axes.front());
  for (size_t k = 0; k < s.reductions.size(); ++k) {
    Func total = s.reductions[k].first;
    const RDom& r = s.reductions[k].second;
    const std::string n = std::to_string(k);
    RVar ro("fk_gro" + n), ri("fk_gri" + n);
    Var u("fk_gu" + n);
    total.update().split(r[0], ro, ri, split, TailStrategy::GuardWithIf);
    Func partial = total.update().rfactor(ri, u);
    partial.bound(u, 0, split).compute_at(out, at).store_in(MemoryType::GPUShared);
    partial.gpu_threads(u);
    partial.update().gpu_threads(u);
    if (unroll > 1) unroll_partial(partial, r, ro, unroll, n);
    total.compute_at(out, at);
  }
}

}  // namespace

void GeneralLayoutTemplate::apply_halide(const GeneralLayoutShape& s, const Config& config) {
  const int tx = static_cast<int>(config.get("tx")), ty = static_cast<int>(config.get("ty"));
  const int vec = static_cast<int>(config.get("vec")), unroll = static_cast<int>(config.get("unroll"));
  const int rsplit = static_cast<int>(config.get("rsplit"));
  const bool reduces = !s.reductions.empty();
  if (rsplit > 0) {
    if (!reduces || s.thread_axes != s.output_axes)
      throw UserError("general layout: rsplit=" + std::to_string(rsplit) +
                      " needs outputs indexed by the reductions' kept axes only; use rsplit=0");
    apply_cooperative(s, rsplit, unroll);
    return;
  }
  Func out = s.output;
  const std::vector<int>& t = s.thread_axes;
  FUSEKIT_INTERNAL_ASSERT(!t.empty(), "no thread axes");
  const size_t xi = static_cast<size_t>(config.get("axis"));
  if (xi >= t.size() || (ty > 1 && t.size() < 2))
    throw UserError("general layout: axis=" + std::to_string(xi) + " ty=" + std::to_string(ty) + " needs " +
                    std::to_string(std::max<size_t>(xi + 1, 2)) + " thread axes, the op has " + std::to_string(t.size()));
  for (int a : t)
    if (output_position(s, a) < 0) throw UserError("general layout: a kept axis is not an output axis");
  const Var x = s.vars.at(t[xi]);
  const bool has_y = t.size() >= 2;
  const Var y = has_y ? s.vars.at(t[xi == 0 ? 1 : 0]) : Var();
  // x = bx * tx * vec + xt * vec + xv; y = by * ty * U + yu * ty + yt.
  Var bx("fk_bx"), xt("fk_xt"), xv("fk_xv"), by("fk_by"), yu("fk_yu"), yt("fk_yt");
  out.split(x, bx, xt, tx * vec, TailStrategy::GuardWithIf);
  if (vec > 1) out.split(xt, xt, xv, vec);
  const int y_unroll = reduces ? 1 : unroll;
  if (has_y) {
    out.split(y, by, yt, ty * y_unroll, TailStrategy::GuardWithIf);
    if (y_unroll > 1) out.split(yt, yu, yt, ty);
  }
  // Innermost first: the vector, the output axes no thread maps (serial in
  // each thread), the unrolled rows, the threads, the blocks.
  std::vector<VarOrRVar> order;
  if (vec > 1) order.push_back(xv);
  for (int a : s.output_axes)
    if (std::find(t.begin(), t.end(), a) == t.end()) order.push_back(s.vars.at(a));
  if (has_y && y_unroll > 1) order.push_back(yu);
  order.push_back(xt);
  if (has_y) order.push_back(yt);
  std::vector<VarOrRVar> blocks = {bx};
  if (has_y) blocks.push_back(by);
  for (size_t k = 0; k < t.size(); ++k)
    if (k != xi && (k != (xi == 0 ? 1u : 0u) || !has_y)) blocks.push_back(s.vars.at(t[k]));
  if (blocks.size() > 3) throw UserError("general layout: more than three block axes");
  order.insert(order.end(), blocks.begin(), blocks.end());
  out.reorder(order);
  if (vec > 1) out.vectorize(xv);
  if (has_y && y_unroll > 1) out.unroll(yu);
  if (has_y) out.gpu_threads(xt, yt);
  else out.gpu_threads(xt);
  if (blocks.size() == 1) out.gpu_blocks(blocks[0]);
  else if (blocks.size() == 2) out.gpu_blocks(blocks[0], blocks[1]);
  else out.gpu_blocks(blocks[0], blocks[1], blocks[2]);
  // Serial reductions: each thread's kept elements, computed in it.
  for (size_t k = 0; k < s.reductions.size(); ++k) {
    Func total = s.reductions[k].first;
    total.compute_at(out, xt);
    if (unroll > 1) {
      const RDom& r = s.reductions[k].second;
      RVar ro("fk_gro" + std::to_string(k)), ri("fk_gri" + std::to_string(k));
      total.update().split(r[0], ro, ri, unroll, TailStrategy::GuardWithIf).unroll(ri);
    }
  }
  // Staged permuted inputs: the block's whole tile (a constant size: the
  // reads are clamped to the tensor), loaded along the input's own
  // innermost axis by the same threads.
  if (config.get("stage") == 1 && !reduces) {
    auto tile = [&](int a) { return a == t[xi] ? tx * vec : has_y && a == t[xi == 0 ? 1 : 0] ? ty * unroll : 1; };
    for (const auto& [read, axes] : s.permuted_inputs) {
      Func staged = read;  // a handle
      staged.compute_at(out, bx).store_in(MemoryType::GPUShared);
      const std::vector<Var> args = staged.args();
      for (size_t k = 0; k < args.size(); ++k) staged.bound_extent(args[k], tile(axes.at(k)));
      Var s0o("fk_s0o"), s0i("fk_s0i"), s1o("fk_s1o"), s1i("fk_s1i");
      staged.split(args.at(0), s0o, s0i, tx, TailStrategy::GuardWithIf);
      if (args.size() >= 2 && has_y) {
        staged.split(args[1], s1o, s1i, ty, TailStrategy::GuardWithIf);
        staged.reorder(s0i, s1i, s0o, s1o).gpu_threads(s0i, s1i);
      } else {
        staged.reorder(s0i, s0o).gpu_threads(s0i);
      }
    }
  }
}

}  // namespace fusekit
