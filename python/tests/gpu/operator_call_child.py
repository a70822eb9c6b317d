"""One case of test_operator_gpu.py, in a process of its own:

    python3 operator_call_child.py PACKAGE_DIR CASE

prints ALL_OK (right_calls, each output against torch), VALUE_ERROR and the
message (a wrong call), or NO_ERROR (a wrong call the operator took)."""

import sys

import torch
import torch.nn.functional as F

from fusekit.torch import ops


def _register(package, name, dtype, layout, inputs, axes):
    return ops.register_op(package, name, dtype, layout, inputs, axes, ["out"], [])


def _close(got, want, dtype):
    tol = 2e-3 if dtype == torch.float32 else 2e-2
    return torch.allclose(got.float(), want.float(), rtol=tol, atol=tol)


def right_calls(package):
    """Odd row counts and both dtypes, through the fixed operators the rewrite emits."""
    for dtype, name in ((torch.float32, "f32"), (torch.float16, "f16")):
        bias_gelu = _register(package, "bias_gelu", name, "rowcol", ["x", "b"], [0, 1])
        relu_add = _register(package, "relu_add", name, "flat", ["x", "y"], [0, 0])
        x = torch.randn(37, 1024, device="cuda", dtype=dtype)
        b = torch.randn(1024, device="cuda", dtype=dtype)
        y = torch.randn(37, 1024, device="cuda", dtype=dtype)
        checks = {
            "bias_gelu": (ops.launch(bias_gelu, [x, b])[0], F.gelu(x.float() + b.float())),
            "relu_add": (ops.launch(relu_add, [x, y])[0], torch.relu(x.float()) + y.float()),
            # A permuted view of both inputs: an elementwise kernel takes any dense layout shared by all.
            "relu_add transposed": (ops.launch(relu_add, [x.t(), y.t()])[0], torch.relu(x.t().float()) + y.t().float()),
        }
        torch.cuda.synchronize()
        for what, (got, want) in checks.items():
            if not _close(got, want, dtype):
                print("MISMATCH", name, what, (got.float() - want).abs().max().item())
                return
    print("ALL_OK")


def _wrong_call(package, case):
    f32 = "f32"
    cuda = dict(device="cuda")
    bias_gelu = _register(package, "bias_gelu", f32, "rowcol", ["x (h)", "b (bias)"], [0, 1])
    relu_add = _register(package, "relu_add", f32, "flat", ["x (a)", "y (b)"], [0, 0])
    bn_relu = _register(package, "bn_relu", f32, "nchw", ["x (conv)", "scale (s)", "shift (t)"], [0, 2, 2])
    x = torch.randn(64, 1024, **cuda)
    b = torch.randn(1024, **cuda)
    calls = {
        "strided_rows": lambda: ops.launch(bias_gelu, [torch.randn(1024, 64, **cuda).t(), torch.randn(64, **cuda)]),
        "channels_last": lambda: ops.launch(bn_relu, [torch.randn(2, 4, 8, 8, **cuda).to(
            memory_format=torch.channels_last), torch.randn(4, **cuda), torch.randn(4, **cuda)]),
        "wrong_dtype": lambda: ops.launch(bias_gelu, [x, b.half()]),
        "wrong_bias_shape": lambda: ops.launch(bias_gelu, [x, torch.randn(512, **cuda)]),
        "cpu_bias": lambda: ops.launch(bias_gelu, [x, b.cpu()]),
        "permuted_pair": lambda: ops.launch(relu_add, [x.t(), torch.randn(1024, 64, **cuda)]),
        # The generic launch(op, [inputs]) the rewrite keeps for wide entries.
        "strided_generic": lambda: torch.ops.fusekit.launch(bias_gelu, [torch.randn(1024, 64, **cuda).t(),
                                                                        torch.randn(64, **cuda)]),
    }
    try:
        calls[case]()
        torch.cuda.synchronize()
        print("NO_ERROR")
    except ValueError as e:
        print("VALUE_ERROR", e)


def main():
    package, case = sys.argv[1], sys.argv[2]
    print("case", case, "torch", torch.__version__, flush=True)
    if case == "right_calls":
        right_calls(package)
    else:
        _wrong_call(package, case)


if __name__ == "__main__":
    main()
