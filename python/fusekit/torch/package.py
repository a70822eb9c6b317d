"""What a built package holds, read from its manifest, and whether it has a
kernel for one region: the same steps the package runtime takes (op, dtype,
arch: exact / same-major cubin / PTX, shape: exact row length / exact bucket /
nearest bucket / generic), so the rewrite can decide on a machine without the
GPU and say why. On a GPU, fusekit_explain gives the runtime's own answer."""

import json
import os
import re
from dataclasses import dataclass
from typing import Optional

_BUCKET = re.compile(r"^n<=2\^(\d+)(?: cols<=2\^(\d+))?$")


def bucket_log2(n):
    """The smallest k with 2^k >= n (the runtime's shape_bucket_log2)."""
    return 0 if n <= 1 else min((int(n) - 1).bit_length(), 62)


@dataclass
class Choice:
    replace: bool
    kernel: str = ""        # entry name and schedule of the variant
    arch_step: str = ""
    shape_step: str = ""
    reason: str = ""

    def describe(self):
        if self.replace:
            return f"{self.kernel} (arch step '{self.arch_step}', shape step '{self.shape_step}')"
        return self.reason


class Package:
    """A package folder written by `fusekit build`."""

    def __init__(self, path):
        self.path = os.path.realpath(path)
        manifest = os.path.join(self.path, "share", "fusekit_kernels", "manifest.json")
        if not os.path.isfile(manifest):
            raise FileNotFoundError(f"'{path}' is not a fusekit package (no share/fusekit_kernels/manifest.json); "
                                    "pass the folder `fusekit build --out` wrote")
        with open(manifest) as f:
            self.manifest = json.load(f)
        self.variants = self.manifest.get("variants", [])

    def plan(self):
        """The plan the package was built from, when `fusekit build --plan` recorded it."""
        if isinstance(self.manifest.get("plan"), dict):
            return self.manifest["plan"]
        path = os.path.join(self.path, "share", "fusekit_kernels", "plan.json")
        if os.path.isfile(path):
            with open(path) as f:
                return json.load(f)
        return None

    def ops(self):
        return sorted({v["op"] for v in self.variants})

    def choose(self, op, dtype, sm, elements=None, row_length=None, shapes="exact", allow_ptx=False):
        """Whether a call of `op` in `dtype` on an sm_`sm` device with this many
        elements (None: dynamic, decided per call) takes a kernel, and which."""
        mine = [v for v in self.variants if v["op"] == op]
        if not mine:
            return Choice(False, reason=f"the package has no kernel '{op}'")
        typed = [v for v in mine if v["dtype"] == dtype]
        if not typed:
            have = sorted({v["dtype"] for v in mine})
            return Choice(False, reason=f"'{op}' was built for {', '.join(have)}, not {dtype}")
        if sm is None:
            return Choice(False, reason="no CUDA device (pass arch= to decide for another machine)")
        want, arch_step = self._arch(typed, sm, allow_ptx)
        if want is None:
            archs = sorted({v["arch"] for v in typed})
            return Choice(False, reason=f"'{op}' {dtype} has no code for sm_{sm} (package has {', '.join(archs)}); "
                                        f"rebuild with --arch sm_{sm}")
        pool = [v for v in typed if v["arch"] == want]
        if elements is None:
            v = pool[0]
            return Choice(True, self._name(v), arch_step, "per call (dynamic shape)")
        v, shape_step = self._shape(pool, elements, row_length)
        if v is None:
            return Choice(False, reason=f"'{op}' {dtype} has no variant for rows of {row_length}")
        allowed = {"exact row length", "exact bucket"} | ({"nearest bucket", "generic"} if shapes == "nearest" else set())
        if shape_step not in allowed:
            return Choice(False, reason=f"{elements} elements (bucket n<=2^{bucket_log2(elements)}) were not tuned: "
                                        f"the package's nearest is {v['shape_bucket']} ({shape_step}); tune this size "
                                        "or pass shapes='nearest'")
        return Choice(True, self._name(v), arch_step, shape_step)

    @staticmethod
    def _name(v):
        return f"{v['entry']} [{v['backend']}: {v['params']}; {v['arch']}, {v['shape_bucket']}, {v['provenance']}]"

    @staticmethod
    def _arch(typed, sm, allow_ptx):
        names = {v["arch"] for v in typed}
        if f"sm_{sm}" in names:
            return f"sm_{sm}", "exact arch"
        same = [int(a[3:]) for a in names if a.startswith("sm_") and int(a[3:]) // 10 == sm // 10
                and int(a[3:]) % 10 <= sm % 10]
        if same:
            return f"sm_{max(same)}", "same-major cubin"
        ptx = [a for a in names if a.startswith("ptx")]
        if ptx and allow_ptx:
            return ptx[0], "ptx jit"
        return None, ""

    @staticmethod
    def _shape(pool, elements, row_length):
        b = bucket_log2(elements)
        rb = bucket_log2(row_length) if row_length is not None else None
        fits = [v for v in pool if v.get("row_length", "any") in ("any", row_length)
                and (v.get("row_multiple", 1) <= 1 or (row_length and row_length % v["row_multiple"] == 0))]
        if not fits:
            return None, ""
        exact_rows = [v for v in fits if v.get("row_length") == row_length and row_length is not None]
        best, best_d, step = None, None, "generic"
        for v in fits:
            m = _BUCKET.match(v["shape_bucket"])
            if not m:
                continue
            vb, vr = int(m.group(1)), m.group(2)
            d = abs(vb - b) * 2 - (1 if vb > b else 0)
            if vr is not None and rb is not None:
                d += abs(int(vr) - rb) * 64
            if best_d is None or d < best_d:
                best, best_d = v, d
        if exact_rows and (best is None or best.get("row_length") != row_length):
            return exact_rows[0], "exact row length"
        if best is not None:
            if best.get("row_length") == row_length and row_length is not None:
                return best, "exact row length"
            return best, "exact bucket" if best_d == 0 else "nearest bucket"
        generic = [v for v in fits if v["shape_bucket"] == "generic"]
        return (generic[0] if generic else fits[0]), step
