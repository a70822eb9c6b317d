"""fusekit from Python: graph and plan files, and (fusekit.torch) PyTorch models."""

__version__ = "0.1.0"
