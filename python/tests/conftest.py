"""Fixtures: the fusekit binary of this build tree, a real package built with it
(modeled sm_90 kernels: no GPU needed), and the operator library."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))


def _binary():
    for path in (os.environ.get("FUSEKIT_BIN"), os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"), "cli", "fusekit")):
        if path and os.access(path, os.X_OK):
            return path
    return None


@pytest.fixture(scope="session")
def fusekit_bin():
    path = _binary()
    if not path:
        pytest.fail("no fusekit binary: build it (./scripts/build.sh) or set FUSEKIT_BIN")
    return path


@pytest.fixture(scope="session")
def package(fusekit_bin, tmp_path_factory):
    """A package of bias_gelu, relu_add and bn_relu (f32, sm_90, buckets 2^12 and 2^16)."""
    d = tmp_path_factory.mktemp("pkg")
    db, out = str(d / "t.db"), str(d / "kernels")
    patterns = "bias_gelu,relu_add,bn_relu"
    for args in (["tune", "--arch", "sm_90", "--pattern", patterns, "--dtype", "f32", "--sizes", "4096,65536",
                  "--budget", "1", "--db", db],
                 ["build", "--arch", "sm_90", "--pattern", patterns, "--db", db, "--out", out]):
        done = subprocess.run([fusekit_bin, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="session")
def oplib():
    from fusekit.torch import ops
    return ops.library()
