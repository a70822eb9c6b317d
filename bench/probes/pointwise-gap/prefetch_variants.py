#!/usr/bin/env python3
"""Adds L2 prefetch-size copies of hinted pointwise kernels to a folder that
scripts/probe_variants.py printed, for bench/gap_probe.py to time:

  python3 bench/probes/pointwise-gap/prefetch_variants.py DIR

For each of the kernels listed in sigmoid_mul_tanh_add_f32_pf.txt it copies
the hint=2 and hint=1 ones with `.L2::256B` (and the 256-thread hint=2 one
with `.L2::128B`, and with 256B under an evict_normal policy) added to the
load instructions (`ld.global...L2::cache_hint.L2::256B.v2.u32`), and
rewrites DIR/variants.json to list the plain, hint=2 and new kernels. The
generator has no such option; this asks whether one is worth adding.
"""
import json
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    listed = json.load(open(os.path.join(d, "variants.json")))
    by_file = {v["file"]: v for v in listed}
    base = "sigmoid_mul_tanh_add_f32_ept1_fast1_grid0_threads256_vec2"
    wide = "sigmoid_mul_tanh_add_f32_ept2_fast1_grid0_threads128_vec4_hint2"

    def copy(src, dst, size, normal=False):
        text = open(os.path.join(d, src + ".cu")).read()
        if text.count(".L2::cache_hint.") != 3:
            sys.exit("%s: expected the three hinted load forms of cuda_load_hint_helpers()" % src)
        text = text.replace(".L2::cache_hint.", ".L2::cache_hint.L2::%s." % size)
        if normal:
            text = text.replace("createpolicy.fractional.L2::evict_last.b64", "createpolicy.fractional.L2::evict_normal.b64")
        open(os.path.join(d, dst + ".cu"), "w").write(text)
        return dict(by_file[src + ".cu"], file=dst + ".cu")

    out = [by_file[base + ".cu"], by_file[base + "_hint2.cu"],
           copy(base + "_hint2", base + "_hint2_pf256", "256B"),
           copy(base + "_hint2", base + "_hint2_pf128", "128B"),
           copy(base + "_hint2", base + "_normal_pf256", "256B", normal=True),
           copy(base + "_hint1", base + "_hint1_pf256", "256B"),
           by_file[wide + ".cu"],
           copy(wide, wide + "_pf256", "256B")]
    json.dump(out, open(os.path.join(d, "variants.json"), "w"), indent=1)
    print("%d kernels in %s" % (len(out), d))


if __name__ == "__main__":
    main()
