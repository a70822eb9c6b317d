"""On a GPU: the launch operators with CUDA tensors, on a small package of
catalog ops (modeled kernels for sm_90, built by the fusekit binary in
FUSEKIT_BIN): a right call gives torch's answer, and every wrong one (strided,
dtype, shape, device, a permuted view of an elementwise op's input) is a
ValueError naming the tensor.

The calls run in a child process, so that a crash fails these tests instead of
ending the run; a child killed by a signal runs again under gdb, where there is
one, else with segv_backtrace.c preloaded, and the test's message carries
the native backtrace.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: these calls launch kernels", allow_module_level=True)
BIN = os.environ.get("FUSEKIT_BIN")
if not BIN or not os.access(BIN, os.X_OK):
    pytest.skip("FUSEKIT_BIN names no fusekit binary (scripts/gpu/steps/torch.sh sets it)", allow_module_level=True)


def _build_args():
    args = ["--runtime-include", os.path.join(ROOT, "runtime", "include")]
    cuda = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")
    return args + (["--cuda-include", cuda] if os.path.isdir(cuda) else [])


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """bias_gelu, relu_add and bn_relu in f32 and f16 (sizes 2^12 and 2^16)."""
    d = tmp_path_factory.mktemp("gpu_pkg")
    db, out = str(d / "t.db"), str(d / "kernels")
    patterns = "bias_gelu,relu_add,bn_relu"
    for args in (["tune", "--arch", "sm_90", "--pattern", patterns, "--dtype", "f32,f16", "--sizes", "4096,65536",
                  "--budget", "1", "--db", db],
                 ["build", "--arch", "sm_90", "--pattern", patterns, "--db", db, "--out", out, *_build_args()]):
        done = subprocess.run([BIN, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    return out


def _run_child(package, case):
    cmd = [sys.executable, "-X", "faulthandler", os.path.join(HERE, "operator_call_child.py"), package, case]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    text = done.stdout + done.stderr[-4000:]
    if done.returncode < 0:
        text += native_backtrace(cmd[:1] + cmd[3:], env)  # without faulthandler, which would catch the signal first
    return done.returncode, done.stdout, text


def native_backtrace(cmd, env):
    """The command run again for a native backtrace: under gdb, else with
    segv_backtrace.c preloaded and its frames resolved by addr2line."""
    gdb = shutil.which("gdb")
    if gdb:
        trace = subprocess.run([gdb, "-batch", "-ex", "run", "-ex", "bt 40", "--args", *cmd], capture_output=True,
                               text=True, timeout=300, env=env)
        return "\n--- under gdb ---\n" + trace.stdout[-8000:]
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return "\n(no gdb and no C compiler on this machine for a native backtrace)"
    so = os.path.join(tempfile.mkdtemp(), "segv_backtrace.so")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", os.path.join(HERE, "segv_backtrace.c"), "-o", so], check=True)
    trace = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(env, LD_PRELOAD=so))
    lines = [_resolve(line) for line in trace.stderr.splitlines() if line.startswith(("SIGNAL", "FRAME"))]
    return "\n--- native backtrace (segv_backtrace.c) ---\n" + "\n".join(lines)


def _resolve(line):
    """A FRAME line with addr2line's function and source line added."""
    parts = line.split(" ", 3)
    addr2line = shutil.which("addr2line")
    if parts[0] != "FRAME" or parts[1] == "?" or not addr2line:
        return line
    got = subprocess.run([addr2line, "-f", "-C", "-i", "-e", parts[1], parts[2]], capture_output=True, text=True)
    where = " | ".join(got.stdout.split("\n")).strip(" |")
    return f"{line}  ->  {where}"


@pytest.mark.parametrize("case", ["right_calls"])
def test_right_calls_match_torch(package, case):
    rc, out, text = _run_child(package, case)
    assert rc == 0 and "ALL_OK" in out, f"child exited {rc}:\n{text}"


@pytest.mark.parametrize("case", ["strided_rows", "channels_last", "wrong_dtype", "wrong_bias_shape", "cpu_bias",
                                  "permuted_pair", "strided_generic"])
def test_wrong_calls_are_value_errors(package, case):
    rc, out, text = _run_child(package, case)
    assert rc == 0, f"child exited {rc}:\n{text}"
    assert "VALUE_ERROR" in out and "fusekit op" in out, text
