"""torch.compile(model, backend="fusekit", options={"package": DIR}).

Dynamo hands over a torch-level FX graph; the backend exports it to ATen
(the same capture as fusekit.torch.capture), plans that graph with
`fusekit plan` (so its node names are the ones the plan holds), and rewrites
it against the package. Options: package (else $FUSEKIT_PACKAGE), and
optimize()'s arch, shapes, allow_ptx, fusekit_bin.
"""

import os
import warnings

import torch

from .optimize import _plan_for, rewrite_module
from .package import Package

_last = []  # the regions of the most recent compile, for fusekit.torch.explain(backend.last())


def fusekit_backend(gm, example_inputs, options=None, **kwargs):
    options = dict(options or {}, **kwargs)
    package_dir = options.get("package") or os.environ.get("FUSEKIT_PACKAGE")
    if not package_dir:
        raise ValueError('the fusekit backend needs a package: torch.compile(m, backend="fusekit", '
                         'options={"package": DIR}) or FUSEKIT_PACKAGE=DIR')
    if not all(isinstance(t, torch.Tensor) for t in example_inputs):
        # Dynamo's dynamic shapes pass sizes as SymInt inputs, which torch.export cannot take.
        warnings.warn("fusekit backend: symbolic size inputs (dynamic=True) are not supported; the graph runs "
                      "as it is. Compile with dynamic=False, or use fusekit.torch.optimize with dims=")
        return gm.forward
    with torch.no_grad():
        ep = torch.export.export(gm, tuple(example_inputs))
    exported = ep.module()
    plan = _plan_for(exported, "dynamo", {}, Package(package_dir), options.get("plan"), options.get("fusekit_bin"))
    out = rewrite_module(exported, package_dir, plan, arch=options.get("arch"), shapes=options.get("shapes", "exact"),
                         allow_ptx=options.get("allow_ptx", False))
    _last[:] = [out]
    return out


def last():
    """The module the backend made last (fusekit.torch.explain takes it)."""
    if not _last:
        raise ValueError("the fusekit backend has not compiled anything yet")
    return _last[0]


try:
    from torch._dynamo import register_backend
    register_backend(name="fusekit")(fusekit_backend)
except Exception:  # already registered through the entry point, or no dynamo
    pass
