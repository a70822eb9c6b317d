"""Building and loading the C++ operator library (csrc/fusekit_ops.cpp).

It is compiled once per torch version with torch.utils.cpp_extension.load
(ninja, a C++ compiler; no GPU and no nvcc: the file has no device code),
into $FUSEKIT_TORCH_BUILD, else a folder per torch version under the user's
cache; a stamp beside the library (source, flags, torch and Python) lets a
later process load it straight away, without the build system's check.
With PyTorch's c10/cuda headers and the CUDA runtime headers at hand it
launches on PyTorch's current stream; without them, on the legacy default
stream (has_current_stream() says which).
"""

import glob
import hashlib
import os
import subprocess
import sys
import threading

import torch

# -g: a crash's frames resolve to source lines (python/tests/gpu/segv_backtrace.c, addr2line).
_OPT_FLAGS = ["-O2", "-g"]
_lock = threading.Lock()
_module = None
_packages = {}


def _cuda_include():
    """A folder with cuda_runtime_api.h: $CUDA_HOME's, else the pip CUDA runtime's."""
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDAToolkit_ROOT", ""), "/usr/local/cuda"]
    for root in roots:
        if root and os.path.isfile(os.path.join(root, "include", "cuda_runtime_api.h")):
            return os.path.join(root, "include")
    site = os.path.dirname(os.path.dirname(torch.__file__))
    for hit in glob.glob(os.path.join(site, "nvidia", "**", "include", "cuda_runtime_api.h"), recursive=True):
        return os.path.dirname(hit)
    return None


def _build_flags():
    """Compiler flags, include folders and linker flags for this torch and CUDA."""
    torch_include = os.path.join(os.path.dirname(torch.__file__), "include")
    cuda_inc = _cuda_include()
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    have = (cuda_inc and os.path.isfile(os.path.join(torch_include, "c10", "cuda", "CUDAStream.h"))
            and glob.glob(os.path.join(lib, "libc10_cuda.so*")))
    # Named by soname: where a compiler lacks the libstdc++.so link it would take libstdc++.a, and a
    # second, static libstdc++ beside torch's breaks integer formatting in the error messages.
    ldflags = ["-ldl", "-l:libstdc++.so.6"]
    if not have:
        return [], [], ldflags
    return ["-DFUSEKIT_HAVE_C10_CUDA"], [cuda_inc], [*ldflags, f"-L{lib}", "-lc10_cuda"]


class _Library:
    """The loaded operator library: its path and the registry operators."""

    def __init__(self, path):
        self.path = path
        self.ops = torch.ops.fusekit

    def load_package(self, path):
        return self.ops.load_package(path)

    def register_op(self, *args):
        return self.ops.register_op(*args)

    def explain(self, op_id, sizes, alignment):
        return self.ops.explain(op_id, list(sizes), alignment)

    def has_current_stream(self):
        return self.ops.has_current_stream()


def library():
    """The loaded operator library (built on first use, then cached)."""
    global _module
    with _lock:
        if _module is None:
            src = os.path.join(os.path.dirname(os.path.dirname(__file__)), "csrc", "fusekit_ops.cpp")
            cflags, includes, ldflags = _build_flags()
            stamp = _stamp(src, cflags, includes, ldflags)
            path = _built(stamp)
            if path is None:
                path = _build(src, cflags, includes, ldflags)
                _write_stamp(stamp, path)
            else:
                torch.ops.load_library(path)
            _module = _Library(path)
        return _module


def _build(src, cflags, includes, ldflags):
    """Builds and loads the library; returns its path."""
    from torch.utils.cpp_extension import is_ninja_available, load
    if os.environ.get("FUSEKIT_NO_NINJA") or not is_ninja_available():
        return _compile_direct(src, cflags, includes, ldflags)
    return load(name="fusekit_torch_ops", sources=[src], extra_cflags=[*_OPT_FLAGS, *cflags],
                extra_include_paths=includes, extra_ldflags=ldflags, is_python_module=False,
                build_directory=_build_dir(), verbose=bool(os.environ.get("FUSEKIT_VERBOSE_BUILD")))


def _stamp(src, cflags, includes, ldflags):
    """What the built library depends on: its source, flags, torch and Python."""
    h = hashlib.sha256()
    with open(src, "rb") as f:
        h.update(f.read())
    extra = [torch.__version__, sys.version, os.environ.get("CXX", ""), str(bool(os.environ.get("FUSEKIT_NO_NINJA")))]
    for part in [*_OPT_FLAGS, *cflags, *includes, *ldflags, *extra]:
        h.update(b"\0" + part.encode())
    return h.hexdigest()


def _stamp_file():
    return os.path.join(_build_dir(), "fusekit_torch_ops.stamp")


def _built(stamp):
    """The library a previous process built with this stamp, if it is still there."""
    try:
        with open(_stamp_file()) as f:
            want, path = f.read().split("\n")[:2]
    except (OSError, ValueError):
        return None
    return path if want == stamp and os.path.isfile(path) else None


def _write_stamp(stamp, path):
    tmp = _stamp_file() + f".{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{stamp}\n{path}\n")
    os.replace(tmp, _stamp_file())


def _compile_direct(src, cflags, includes, ldflags):
    """The same library with one compiler call, where ninja (which
    cpp_extension.load needs) is not installed."""
    from torch.utils import cpp_extension as ce
    name = "fusekit_torch_ops"
    d = _build_dir()
    so = os.path.join(d, f"lib{name}_direct.so")
    if not os.path.isfile(so) or os.path.getmtime(so) < os.path.getmtime(src):
        abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
        cmd = [os.environ.get("CXX", "c++"), "-shared", "-fPIC", *_OPT_FLAGS, "-std=c++20", src, "-o", so + ".tmp",
               f"-DTORCH_EXTENSION_NAME={name}", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
               *cflags, *[f"-I{p}" for p in [*ce.include_paths(), *includes]],
               *[f"-L{p}" for p in ce.library_paths()], "-lc10", "-ltorch", "-ltorch_cpu", *ldflags]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"building {src} failed:\n{' '.join(cmd)}\n{done.stderr[-4000:]}")
        os.replace(so + ".tmp", so)
    torch.ops.load_library(so)
    return so


def _build_dir():
    d = os.environ.get("FUSEKIT_TORCH_BUILD")
    if not d:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(cache, "fusekit", f"torch_ops-{torch.__version__}")
    os.makedirs(d, exist_ok=True)
    return d


def load_package(package_dir):
    """The handle of a package folder's kernel library, opened once per process."""
    key = os.path.realpath(package_dir)
    lib = library()
    with _lock:
        if key not in _packages:
            _packages[key] = lib.load_package(key)
        return _packages[key]


def register_op(package_dir, name, dtype, layout, inputs, axes, outputs, params):
    """An op id for the launch operators (operator())."""
    from ..plan_file import LAYOUTS
    return library().register_op(load_package(package_dir), name, dtype, LAYOUTS.index(layout), list(inputs),
                                 [int(a) for a in axes], list(outputs), [float(p) for p in params])


def operator(n_inputs, n_outputs):
    """The operator a call with this many inputs and outputs takes: the fixed
    launch_<n_inputs>_<n_outputs>(op, i0, ...) where the family has one (its
    bounds: torch.ops.fusekit.fixed_arity()), else the generic launch(op, [inputs])."""
    library()
    max_in, max_out = _fixed_arity()
    if 1 <= n_inputs <= max_in and 1 <= n_outputs <= max_out:
        return getattr(torch.ops.fusekit, f"launch_{n_inputs}_{n_outputs}").default
    return torch.ops.fusekit.launch.default


def is_fixed(target):
    """Whether an FX node's target is one of the fixed-arity operators."""
    return str(target).startswith("fusekit.launch_")


def is_launch(target):
    """Whether an FX node's target calls a fusekit kernel (fixed or generic)."""
    return is_fixed(target) or str(target) == "fusekit.launch.default"


def call_args(target, op_id, inputs):
    """The arguments `target` (operator()'s answer) takes for these inputs."""
    return (op_id, *inputs) if is_fixed(target) else (op_id, list(inputs))


def launch(op_id, inputs, n_outputs=1):
    """The op's outputs (a list), through the operator the rewrite emits for it."""
    target = operator(len(inputs), n_outputs)
    out = target(*call_args(target, op_id, inputs))
    return [out] if isinstance(out, torch.Tensor) else list(out)


_arity = []


def _fixed_arity():
    if not _arity:
        _arity.extend(torch.ops.fusekit.fixed_arity())
    return _arity
