"""``x = v`` in a kernel binds a typed scalar when ``v`` is a Python number, as in Triton."""

import traceback

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit
from autotile.lang._assign import assigned
from autotile.lang._dtypes import literal_dtype

NUMBERS = st.one_of(st.booleans(), st.integers(-(2**63), 2**64 - 1),
                    st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=60, deadline=None)
@given(v=NUMBERS)
def test_assigned_number_gets_the_literal_dtype(v):
    t = assigned(v)
    assert t.dtype is literal_dtype(v)
    assert t.shape == ()
    if isinstance(v, float):  # rounded to float32 when that is the type
        np.testing.assert_array_equal(t.v, np.asarray(v).astype(t.dtype.np))
    else:
        assert int(t.v) == v
    assert assigned(tl.constexpr(v)).dtype is literal_dtype(v)


def test_assigned_leaves_other_values_alone():
    s = "value"
    assert assigned(s) is s
    assert assigned(None) is None
    assert assigned(tl.float16) is tl.float16
    shape = (4, 8)
    assert assigned(shape) is shape
    with pytest.raises(LangError, match="Nonrepresentable integer"):
        assigned(2**64)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "float16",
                                   "float32", "float64", "bool"])
def test_store_constant_of_assigned_literal(dtype):
    # Triton's test_store_constant: `value = 1` is an int32 scalar, so value.dtype exists
    @jit
    def k(o_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        value = 1
        tl.static_assert(value.dtype == tl.int32)
        out = tl.full([BLOCK], value=value, dtype=value.dtype)
        tl.store(o_ptr + offs, out, mask=offs < n)

    o = np.zeros(16, dtype)
    k[(1,)](o, 12, BLOCK=16)
    np.testing.assert_array_equal(o, np.r_[np.ones(12), np.zeros(4)].astype(dtype))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_float_literal_accumulator_is_float32(seed):
    # acc = 0.0 is float32, so adding float16 blocks accumulates in float32 (Triton); a
    # Python 0.0 would have taken float16 and rounded every partial sum
    x = np.random.default_rng(seed).normal(0, 100, (8, 16)).astype(np.float16)

    @jit
    def k(x_ptr, o_ptr, ROWS: tl.constexpr, N: tl.constexpr):
        acc = 0.0
        for r in range(ROWS):
            acc += tl.load(x_ptr + r * N + tl.arange(0, N))
        tl.static_assert(acc.dtype == tl.float32)
        tl.store(o_ptr + tl.arange(0, N), acc)

    o = np.zeros(16, np.float32)
    k[(1,)](x, o, ROWS=8, N=16)
    ref = np.zeros(16, np.float32)
    for r in range(8):
        ref = ref + x[r].astype(np.float32)
    np.testing.assert_array_equal(o, ref)


def test_int_literal_accumulator_is_int32():
    x = np.full(8, 100, np.int8)

    @jit
    def k(x_ptr, o_ptr):
        acc = 0
        for _ in range(3):
            acc += tl.load(x_ptr + tl.arange(0, 8))  # int32 + int8 -> int32: 300 fits
        tl.store(o_ptr + tl.arange(0, 8), acc)

    o = np.zeros(8, np.int32)
    k[(1,)](x, o)
    np.testing.assert_array_equal(o, 300)


def test_constexpr_annotation_keeps_a_constant():
    @jit
    def k(o_ptr, BLOCK: tl.constexpr):
        HALF: tl.constexpr = BLOCK // 2
        tl.store(o_ptr + tl.arange(0, HALF), tl.arange(0, HALF))

    o = np.zeros(4, np.int32)
    k[(1,)](o, BLOCK=8)
    np.testing.assert_array_equal(o, np.arange(4))


def test_closures_and_globals_are_those_of_the_kernel():
    scale = 3

    @jit
    def helper(x):
        y = x * scale
        return y

    @jit
    def k(o_ptr):
        v = helper(tl.arange(0, 4))
        tl.store(o_ptr + tl.arange(0, 4), v + OFFSET)

    o = np.zeros(4, np.int32)
    k[(1,)](o)
    np.testing.assert_array_equal(o, np.arange(4) * 3 + OFFSET)


OFFSET = 5


def test_kernel_without_source_runs_unchanged():
    ns = {"tl": tl}
    exec("def k(o_ptr):\n"
         "    value = 1\n"
         "    tl.store(o_ptr, isinstance(value, int))\n", ns)
    o = np.zeros(1, np.int32)
    jit(ns["k"])[(1,)](o)
    assert o[0] == 1


def test_errors_point_at_the_kernel_line():
    @jit
    def k(o_ptr):
        value = 1
        tl.store(o_ptr + tl.arange(0, 3), value)  # arange of 3 elements: an error here

    with pytest.raises(LangError) as ei:
        k[(1,)](np.zeros(4, np.int32))
    frames = traceback.extract_tb(ei.value.__traceback__)
    frame = next(f for f in frames if f.name == "k")
    assert frame.filename == __file__
    assert frame.line.strip().startswith("tl.store(o_ptr + tl.arange(0, 3), value)")
