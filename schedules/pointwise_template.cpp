#include "schedules/pointwise_template.h"

#include "common/errors.h"

namespace fusekit {

ParamSpace PointwiseTemplate::space(const ArchLimits& arch, Backend backend, int element_bytes,
                                    const OpTraits& traits) {
  ParamSpace s;
  s.add("threads", {64, 128, 256, 512, 1024});
  s.add("vec", {1, 2, 4, 8});
  s.add("ept", {1, 2, 4, 8});
  if (backend == Backend::kNvrtc) {
    s.add("grid", {0, 2, 4, 8});
    s.add("fast", {0, 1});
    // Only ops with inputs constant over the innermost planes (and none
    // varying along them) have the choice; added after the first records,
    // which measured flat kernels.
    if (traits.plane_inputs > 0) s.add("plane", {0, 1}, 0);
    // Added after the first records, which let ptxas choose registers.
    s.add("occ", {0, 1}, 0);
    // Added after the first records, which loaded without policies.
    s.add("hint", {0, 1, 2}, 0);
  }
  const bool planes = traits.plane_inputs > 0 && backend == Backend::kNvrtc;
  s.require(backend == Backend::kNvrtc
                ? "plane=1 for an op with no input constant over the innermost axis's planes, or with one that varies "
                  "along it"
                : "plane=1 with the Halide backend (NVRTC only)",
            [planes](const Config& c) { return c.get_or("plane", 0) == 0 || planes; });
  if (backend == Backend::kHalide) {
    s.require("occ=1 with the Halide backend (NVRTC only)", [](const Config& c) { return c.get_or("occ", 0) == 0; });
    s.require("hint=1 or 2 with the Halide backend (NVRTC only)",
              [](const Config& c) { return c.get_or("hint", 0) == 0; });
  }
  // Eviction policies on loads (createpolicy, ld .L2::cache_hint): sm_80+.
  const bool policies = arch.arch.number() >= 80;
  s.require("hint=1 or 2 (eviction policies) needs sm_80 or later",
            [policies](const Config& c) { return c.get_or("hint", 0) == 0 || policies; });
  const int max_block = arch.max_threads_per_block;
  s.require("threads per block above the arch limit of " + std::to_string(max_block),
            [max_block](const Config& c) { return c.get("threads") <= max_block; });
  s.require("an access wider than 16 bytes",
            [element_bytes](const Config& c) { return c.get("vec") * element_bytes <= 16; });
  if (backend == Backend::kNvrtc) {
    const int tps = arch.max_threads_per_sm, bps = arch.max_blocks_per_sm;
    s.require("grid-stride blocks per SM exceed the arch's resident threads or blocks",
              [tps, bps](const Config& c) {
                int64_t g = c.get("grid");
                return g == 0 || (g * c.get("threads") <= tps && g <= bps);
              });
  }
  return s;
}

std::vector<Config> PointwiseTemplate::seeds(Backend backend, int element_bytes) {
  std::vector<Config> out;
  const int64_t wide = 16 / element_bytes;
  for (int64_t threads : {128, 256, 1024})
    for (int64_t ept : {1, 2, 4}) {
      Config c;
      c.set("threads", threads);
      c.set("vec", backend == Backend::kHalide ? std::min<int64_t>(wide, 4) : wide);
      c.set("ept", ept);
      if (backend == Backend::kNvrtc) {
        c.set("grid", 0);
        for (int64_t fast : {0, 1}) {
          // ept=4 with exact math never won a largest measured size.
          if (ept == 4 && fast == 0) continue;
          c.set("fast", fast);
          out.push_back(c);
        }
        // Registers capped for full occupancy, at the block sizes where
        // ptxas otherwise leaves SMs short of threads (bn_relu bf16 at 128
        // threads gets 12 of 16 blocks per SM uncapped).
        if (threads <= 256 && ept <= 2) {
          Config o = c;
          o.set("occ", 1);
          out.push_back(o);
        }
        // A tile of one plane per block (ops with per-plane inputs; the
        // space of any other op has no such parameter and drops it).
        Config p = c;
        p.set("plane", 1);
        out.push_back(p);
      } else {
        out.push_back(c);
      }
    }
  // Inductor's pick for f32 sigmoid_mul_tanh_add on the H200 (XBLOCK=512 on
  // 8 warps, two elements per thread) is a seed, so the search always
  // measures the peer's own shape.
  if (backend == Backend::kNvrtc && element_bytes == 4) {
    Config c;
    c.set("threads", 256);
    c.set("vec", 2);
    c.set("ept", 1);
    c.set("grid", 0);
    c.set("fast", 1);
    out.push_back(c);
  }
  return out;
}

int64_t PointwiseTemplate::tile_elements(const Config& config) {
  return config.get("threads") * config.get("vec") * config.get("ept");
}

std::string PointwiseTemplate::size_violation(const Config& config, Backend backend, int64_t elements) {
  if (backend == Backend::kHalide && tile_elements(config) > elements)
    return "Halide tile of " + std::to_string(tile_elements(config)) + " elements exceeds the " +
           std::to_string(elements) + "-element domain";
  return "";
}

void PointwiseTemplate::apply_halide(Halide::Func output, const std::vector<Halide::Var>& vars,
                                     const Config& config) {
  FUSEKIT_INTERNAL_ASSERT(!vars.empty(), "pointwise output without vars");
  using Halide::Var;
  Var flat = vars[0];
  if (vars.size() > 1) {
    // Fuse the whole domain into one index, innermost first.
    Var fused("fk_fused");
    Var acc = vars[0];
    for (size_t i = 1; i < vars.size(); ++i) {
      Var next(i + 1 == vars.size() ? "fk_fused" : "fk_fused_" + std::to_string(i));
      output.fuse(acc, vars[i], next);
      acc = next;
    }
    flat = acc;
  }
  const int threads = static_cast<int>(config.get("threads"));
  const int vec = static_cast<int>(config.get("vec"));
  const int ept = static_cast<int>(config.get("ept"));
  // index = ((block * ept + u) * threads + t) * vec + v
  Var v("fk_v"), t("fk_t"), u("fk_u"), b("fk_b"), rest("fk_rest");
  output.split(flat, rest, v, vec).split(rest, rest, t, threads).split(rest, b, u, ept);
  output.reorder(v, t, u, b);
  if (vec > 1) output.vectorize(v);
  if (ept > 1) output.unroll(u);
  output.gpu_blocks(b).gpu_threads(t);
}

}  // namespace fusekit
