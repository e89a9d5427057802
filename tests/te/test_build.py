"""``te.build``: input dtypes must match their placeholder's kind."""

from __future__ import annotations

import numpy as np
import pytest

from autotile import te
from autotile.errors import LangError


def _scale(dtype: str = "float32"):
    A = te.placeholder((4,), dtype=dtype, name="A")
    B = te.compute((4,), lambda i: A[i] * 0.5, name="B")
    return te.build(te.create_schedule(B))


def _matmul(n: int = 16, dtype: str = "float32"):
    A = te.placeholder((n, n), dtype=dtype, name="A")
    B = te.placeholder((n, n), dtype=dtype, name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.build(te.create_schedule(C))


@pytest.mark.parametrize("bad", [np.array([1, 2, 3, 4]), np.array([1, 2, 3, 4], np.int8),
                                 np.array([True, False, True, True]),
                                 np.array(["a", "b", "c", "d"]), np.array([None] * 4)])
def test_float_placeholder_rejects_non_float_arrays(bad):
    with pytest.raises(LangError, match=rf"input A .*float.*float32, got dtype {bad.dtype.name}"):
        _scale()(bad)


def test_float_placeholder_computes_in_the_wider_float_type():
    fn = _scale()
    r32 = fn(np.array([1, 2, 3, 4], np.float32))
    assert r32.dtype == np.float32
    np.testing.assert_array_equal(r32, [0.5, 1.0, 1.5, 2.0])
    r16 = fn(np.array([1, 2, 3, 4], np.float16))
    assert r16.dtype == np.float32
    x = np.array([1 / 3, 2.0, 3.0, 1e-10])
    r64 = fn(x)
    assert r64.dtype == np.float64
    np.testing.assert_array_equal(r64, x * 0.5)  # float64 accuracy, not float32 rounding


def test_int8_matmul_accumulates_in_int64_without_wrapping():
    n = 64
    a = np.full((n, n), 3, np.int8)
    c = _matmul(n, "int8")(a, a)
    assert c.dtype == np.int64
    assert c[0, 0] == 576
    big = np.full((n, n), 100, np.int8)
    np.testing.assert_array_equal(_matmul(n, "int8")(big, big), np.full((n, n), 640_000))


def test_integer_placeholder_takes_any_integer_array_but_not_floats():
    rng = np.random.default_rng(0)
    a = rng.integers(-50, 50, (16, 16)).astype(np.int16)
    b = rng.integers(0, 200, (16, 16)).astype(np.uint8)
    c = _matmul(16, "int32")(a, b)
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
    with pytest.raises(LangError, match=r"input B .*integer.*int32, got dtype float64"):
        _matmul(16, "int32")(a, b.astype(np.float64))


def test_out_dtype_must_keep_the_kind():
    fn = _matmul(8)
    a = np.ones((8, 8), np.float32)
    with pytest.raises(LangError, match=r"out\.dtype=int32"):
        fn(a, a, out=np.empty((8, 8), np.int32))
    with pytest.raises(LangError, match="out must be a NumPy array, got list"):
        fn(a, a, out=[[0.0] * 8] * 8)
    out = np.empty((8, 8), np.float64)
    assert fn(a, a, out=out) is out
    np.testing.assert_array_equal(out, np.full((8, 8), 8.0))
