"""Math builtins: the errors their docstrings' Raises sections name."""

import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import _math
from tests.lang._kernels import kernel_from_source

F16, F32, F64 = "tl.zeros((4,), tl.float16)", "tl.zeros((4,), tl.float32)", \
    "tl.zeros((4,), tl.float64)"


@pytest.mark.parametrize("expr, message", [
    (f"tl.exp({F16})", "Expected dtype ['float32', 'float64'] but got float16 (tl.exp)"),
    ("tl.log(x_ptr)", "Expected dtype ['float32', 'float64'] but got pointer<float32> (tl.log)"),
    ("tl.sqrt(1)", "tl.sqrt expects a floating-point tensor, got int32"),
    (f"tl.sigmoid({F16})", "Expected dtype ['float32', 'float64'] but got float16 (tl.exp)"),
    (f"tl.sqrt_rn({F64})", "Expected dtype ['float32'] but got float64 (tl.sqrt_rn)"),
    (f"tl.div_rn({F16}, 2.0)", "Expected dtype ['float32'] but got float16 (tl.div_rn)"),
    ("tl.abs(x_ptr)", "tl.absf expects a floating-point tensor, got pointer<float32>"),
    (f"tl.where(tl.zeros((4,), tl.int1), {F32}, tl.zeros((8,), tl.float32))",
     "where: shapes (4,), (4,) and (8,) do not broadcast"),
    (f"tl.maximum({F32}, tl.zeros((8,), tl.float32))",
     "max: shapes (4,) and (8,) do not broadcast"),
    (f"tl.clamp({F32}, 0.0, tl.zeros((8,), tl.float32))",
     "min: shapes (4,) and (8,) do not broadcast"),
    # fma raised AttributeError for a pointer and NumPy's ValueError for shapes
    ("tl.fma(x_ptr, 1.0, 2.0)", "invalid operands of type pointer<float32> and float32 (tl.fma)"),
    ("tl.fma(1.0, 2.0, x_ptr)", "invalid operands of type pointer<float32> and float32 (tl.fma)"),
    (f"tl.fma({F32}, tl.zeros((8,), tl.float32), 1.0)",
     "fma: shapes (4,), (8,) and () do not broadcast"),
])
def test_math_errors_are_the_documented_ones(expr, message):
    k = kernel_from_source("x_ptr", f"y = {expr}")
    with pytest.raises(LangError) as err:
        k[(1,)](np.zeros(4, np.float32))
    assert str(err.value) == message


def test_fma_still_computes_with_one_rounding():
    k = kernel_from_source("x_ptr, o_ptr", "x = tl.load(x_ptr + tl.arange(0, 4))",
                           "tl.store(o_ptr + tl.arange(0, 4), tl.fma(x, 3.0, 1.0))")
    out = np.zeros(4, np.float32)
    k[(1,)](np.array([0.0, 1.0, 2.0, -1.0], np.float32), out)
    np.testing.assert_array_equal(out, [1.0, 4.0, 7.0, -2.0])


@pytest.mark.parametrize("name", [n for n in _math.__all__ if n != "PropagateNan"])
def test_every_math_builtin_documents_raises(name):
    doc = getattr(tl, name).__doc__
    assert "Raises\n    ------\n    LangError\n" in doc, name
