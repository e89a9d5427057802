"""Python int operands of where/maximum/minimum/clamp follow the binary operators' range rule."""

import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit
from tests.lang._kernels import kernel_from_source


def _kernel(expr):
    return kernel_from_source("x_ptr, o_ptr", "x = tl.load(x_ptr + tl.arange(0, 8))",
                              f"tl.store(o_ptr + tl.arange(0, 8), {expr})")


@pytest.mark.parametrize("dt,expr,match", [
    ("uint8", "tl.maximum(x, 300)", r"Scalar 300 is out of range for type uint8"),
    ("uint8", "tl.minimum(300, x)", r"Scalar 300 is out of range for type uint8"),
    ("uint8", "tl.maximum(x, -1)", r"unsigned tensor and a negative scalar"),
    ("uint8", "tl.where(x > 5, 1000, x)", r"Scalar 1000 is out of range for type uint8"),
    ("int8", "tl.where(x > 0, x, 200)", r"Scalar 200 is out of range for type int8"),
    ("uint8", "tl.clamp(x, 0, 300)", r"Scalar 300 is out of range for type uint8"),
    ("int8", "tl.clamp(x, -200, 5)", r"Scalar -200 is out of range for type int8"),
])
def test_out_of_range_scalar_raises(dt, expr, match):
    x = np.arange(8).astype(dt)
    with pytest.raises(LangError, match=match):
        _kernel(expr)[(1,)](x, np.zeros(8, dt))


@pytest.mark.parametrize("dt,expr,ref", [
    ("uint8", "tl.maximum(x, 255)", [255] * 8),
    ("uint8", "tl.minimum(x, 3)", [0, 1, 2, 3, 3, 3, 3, 3]),
    ("uint8", "tl.where(x > 5, 250, x)", [0, 1, 2, 3, 4, 5, 250, 250]),
    ("int8", "tl.where(x > 3, x, -128)", [-128] * 4 + [4, 5, 6, 7]),
    ("int8", "tl.clamp(x, 2, 127)", [2, 2, 2, 3, 4, 5, 6, 7]),
])
def test_in_range_scalar_values(dt, expr, ref):
    x = np.arange(8).astype(dt)
    out = np.zeros(8, dt)
    _kernel(expr)[(1,)](x, out)
    np.testing.assert_array_equal(out, np.array(ref, dt))


def test_batched_out_of_range_scalar_raises():
    x = np.arange(16).astype("uint8")

    @jit
    def k(x_ptr, o_ptr):
        offs = tl.program_id(0) * 8 + tl.arange(0, 8)
        tl.store(o_ptr + offs, tl.maximum(tl.load(x_ptr + offs), 300))

    with pytest.raises(LangError, match=r"Scalar 300 is out of range for type uint8"):
        k[(2,)](x, np.zeros(16, "uint8"), batch_programs=True)
