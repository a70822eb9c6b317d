"""fusekit for PyTorch.

    plan = fusekit.torch.capture(model, (x,), "model.fkgraph.json")      # then: fusekit tune/build --plan
    fast = fusekit.torch.optimize(model, "kernels/", (x,))               # regions -> package kernels
    print(fusekit.torch.explain(fast))                                   # which kernel or fallback, why

or torch.compile(model, backend="fusekit", options={"package": "kernels/"}).
"""

from .graph_capture import capture, export, graph_from_module
from .optimize import explain, optimize

__all__ = ["capture", "export", "graph_from_module", "optimize", "explain"]

try:  # the torch.compile backend's name; the package entry point registers it too
    from . import backend as _backend  # noqa: F401
except Exception:  # an old torch without dynamo: optimize() still works
    pass
