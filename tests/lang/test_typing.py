"""Triton's typing rules: weak Python scalars, literal types, shifts by signedness, errors."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit
from autotile.lang._dtypes import literal_dtype
from tests.lang._kernels import kernel_from_source

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _scalar_kernel(expr):
    return kernel_from_source("x_ptr, o_ptr, y: tl.constexpr",
                              "x = tl.load(x_ptr + tl.arange(0, 8))",
                              f"tl.store(o_ptr + tl.arange(0, 8), {expr})")


@settings(max_examples=30, deadline=None)
@given(dt=st.sampled_from(INTS), op=st.sampled_from(["/", "//", "%", "+", "*", "&", ">>"]),
       y=st.integers(1, 7), seed=st.integers(0, 2**16))
def test_python_int_takes_the_tensor_type(dt, op, y, seed):
    # Triton: a scalar of a lower or equal kind (bool < int < float) does not promote, so
    # uint8 // 3 computes in uint8 and uint8 / 3 in float32
    x = np.random.default_rng(seed).integers(0, 100, 8).astype(dt)
    k = _scalar_kernel(f"x {op} y")
    if op == "/":
        ref = x.astype(np.float32) / np.float32(y)
    elif op == "//":
        ref = (x // y).astype(dt)  # non-negative: truncation == floor
    elif op == "%":
        ref = np.fmod(x, np.array(y, dt))
    else:
        ref = eval(f"x {op} np.array(y, dt)").astype(dt)
    out = np.zeros(8, ref.dtype)
    # the reference wraps like the GPU (int8 85 * 2): launch without the overflow check
    k[(1,)](x, out, y=y, sanitize_overflow=False)
    np.testing.assert_array_equal(out, ref)


def test_literal_types_follow_their_value():
    assert literal_dtype(True) is tl.int1
    assert literal_dtype(2**31 - 1) is tl.int32
    assert literal_dtype(2**31) is tl.uint32
    assert literal_dtype(2**32) is tl.int64
    assert literal_dtype(-(2**31) - 1) is tl.int64
    assert literal_dtype(2**63) is tl.uint64
    assert literal_dtype(1.5) is tl.float32
    assert literal_dtype(0.0) is tl.float32
    assert literal_dtype(float("inf")) is tl.float32
    assert literal_dtype(1e300) is tl.float64
    assert literal_dtype(1e-300) is tl.float64
    with pytest.raises(LangError, match="Nonrepresentable integer 18446744073709551616"):
        literal_dtype(2**64)


def test_literals_and_constexprs_in_kernels_have_triton_dtypes():
    @jit
    def k(o_ptr, C: tl.constexpr):
        x = tl.full((4,), 1, tl.uint8)
        tl.static_assert((x + C).dtype == tl.uint8)
        tl.static_assert((x * 1.5).dtype == tl.float32)
        tl.static_assert((x.to(tl.float16) + 1e300).dtype == tl.float16)  # weak float
        h = tl.full((4,), 1, tl.float16)
        tl.static_assert((h + h.to(tl.bfloat16)).dtype == tl.float16)
        tl.store(o_ptr + tl.arange(0, 4), x + C)

    o = np.zeros(4, np.uint8)
    k[(1,)](o, C=3)
    np.testing.assert_array_equal(o, 4)


@settings(max_examples=40, deadline=None)
@given(xdt=st.sampled_from(INTS), ydt=st.sampled_from(INTS), seed=st.integers(0, 2**16))
def test_right_shift_is_arithmetic_for_a_signed_left_operand(xdt, ydt, seed):
    # Triton's __rshift__: ashr when the shifted tensor is signed, lshr when unsigned, on the
    # bits of the promoted type
    rng = np.random.default_rng(seed)
    info = np.iinfo(xdt)
    x = rng.integers(info.min, info.max, 16, dtype=xdt, endpoint=True)
    bw = max(np.dtype(xdt).itemsize, np.dtype(ydt).itemsize) * 8
    y = rng.integers(0, bw, 16).astype(ydt)
    zdt = f"{'u' if xdt.startswith('u') else ''}int{bw}"
    ref = x.astype(zdt) >> y.astype(zdt)

    @jit
    def k(x_ptr, y_ptr, o_ptr):
        offs = tl.arange(0, 16)
        tl.store(o_ptr + offs, tl.load(x_ptr + offs) >> tl.load(y_ptr + offs))

    out = np.zeros(16, ref.dtype)
    k[(1,)](x, y, out)
    np.testing.assert_array_equal(out.view(zdt), ref)


@pytest.mark.parametrize("expr,match", [
    ("x.to(tl.float32) & y", r"invalid operands of type float32 and float32"),
    ("x ^ y.to(tl.float16)", r"invalid operands of type float16 and float16"),
    ("x / y", r"Cannot use /, #, or % with int8 and uint8 because they have different "
              r"signedness"),
    ("x % y", r"Cannot use /, #, or % with int8 and uint8"),
    ("y + (-1)", r"Cannot perform a binary operation between an unsigned tensor and a negative "
                 r"scalar"),
    ("x + 300", r"Scalar 300 is out of range for type int8"),
    ("x.to(tl.float32) // 2.0", r"unexpected type float32"),
])
def test_invalid_dtype_combinations_use_tritons_wording(expr, match):
    with pytest.raises(LangError, match=match):
        k = kernel_from_source("x_ptr, y_ptr", "x = tl.load(x_ptr + tl.arange(0, 4))",
                               "y = tl.load(y_ptr + tl.arange(0, 4))", f"z = {expr}")
        k[(1,)](np.ones(4, np.int8), np.ones(4, np.uint8))


def test_shape_equals_a_list_and_expand_dims_checks_axes():
    @jit
    def k(N: tl.constexpr):
        x = tl.arange(0, N)
        tl.static_assert(x.shape == [N])
        tl.static_assert(x[None, :, None].shape == [1, N, 1])
        tl.static_assert(tl.expand_dims(x, (0, -1)).shape == [1, N, 1])
        tl.static_assert(tl.expand_dims(x, (-4, 2, -1)).shape == [1, N, 1, 1])
        tl.static_assert(tl.expand_dims(tl.sum(x), -1).shape == [1])
        tl.static_assert(x.shape != [N, 1])
        tl.static_assert(x.shape == (N,))

    k[(1,)](N=8)

    for axis, match in [(-3, r"invalid axis -3. Expected -2 <= axis < 2"),
                        (2, r"invalid axis 2. Expected -2 <= axis < 2"),
                        ((0, -3), r"expand_dims received duplicate axes, normalized axes = "
                                  r"\[0, 0\]")]:
        @jit
        def bad(A: tl.constexpr):
            tl.expand_dims(tl.arange(0, 4), A)

        with pytest.raises(LangError, match=match):
            bad[(1,)](A=axis)


def test_dtype_by_name_and_triton_type_lists():
    assert tl.dtype("int8") is tl.int8
    assert tl.dtype(tl.constexpr("float8e4nv")) is tl.float8e4nv
    names = tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.STANDARD_FP_TYPES
    assert [tl.dtype(n).name for n in names] == list(names)
    assert tl.int16.int_bitwidth == 16 and tl.float16.fp_mantissa_width == 10
    assert tl.uint8.get_int_max_value() == 255 and tl.int8.get_int_min_value() == -128
    with pytest.raises(ValueError, match="unknown dtype name 'int7'"):
        tl.dtype("int7")


def test_indexing_follows_tritons_getitem():
    @jit
    def k(o_ptr, X: tl.constexpr):
        data = tl.arange(0, X)
        tl.static_assert(data[None, None:].shape == [1, X])
        tl.static_assert(data[None, ::None, None].shape == [1, X, 1])
        scalar = tl.full([], 1, tl.int32)
        tl.static_assert(scalar[None, None, :].shape == [1, 1])  # ':' past the rank: no-op
        one = tl.load(o_ptr + tl.arange(0, 1))
        tl.static_assert(one.item().shape == [])
        tl.store(o_ptr, one.item() + 1)

    o = np.array([41], np.int32)
    k[(1,)](o, X=8)
    assert o[0] == 42

    @jit
    def bad(o_ptr):
        tl.arange(0, 8)[2:]

    with pytest.raises(LangError, match=r"unsupported tensor index: slice\(2, None, None\)"):
        bad[(1,)](o)


# -- every pair of block types through every binary operator, against semantic.py v3.4 ----------
# The references below (_triton_result, _scalar_result) were run against triton 3.4.0's
# interpreter on all 1,584 block pairs and 432 scalar cases: the result types and refusals agree,
# except bfloat16 with a Python scalar, which that interpreter cannot build (no get_bf16).
FLOATS = ["float16", "bfloat16", "float32", "float64"]
OPS = ["+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>"]


def _promote_ints(a, b):
    # semantic.integer_promote_impl: C's usual arithmetic conversions
    ra, rb = np.dtype(a).itemsize, np.dtype(b).itemsize
    ua, ub = a.startswith("u"), b.startswith("u")
    if ua == ub:
        return a if ra > rb else b
    if ua:
        return a if ra >= rb else b
    return b if rb >= ra else a


def _computation_type(a, b, div_or_mod):
    # semantic.computation_type_impl for two blocks (no weak scalars); a str is an error
    if "float64" in (a, b):
        return "float64"
    if "float32" in (a, b):
        return "float32"
    if "float16" in (a, b):
        return "float32" if div_or_mod else "float16"
    if a == b == "bfloat16":
        return "float32" if div_or_mod else "bfloat16"
    if "bfloat16" in (a, b):
        return "float32"
    if div_or_mod and a.startswith("u") != b.startswith("u"):
        return ValueError(f"Cannot use /, #, or % with {a} and {b} because they have "
                          f"different signedness")
    return _promote_ints(a, b)


def _triton_result(op, a, b):
    """Result type name of ``a op b`` in Triton 3.4, or the error (its wording) it raises."""
    ct = _computation_type(a, b, op in ("/", "//", "%"))
    if isinstance(ct, Exception):
        return ct
    if op == "/":
        return "float32" if ct in INTS else ct
    if op == "//" and ct not in INTS:
        return TypeError(f"unexpected type {ct}")
    if op in ("&", "|", "^", "<<", ">>") and ct not in INTS:
        return TypeError(f"invalid operands of type {ct} and {ct}")
    return ct


def _typed_run(k, want, *arrays):
    """Launch ``k(*arrays, o, OUT=want)``; return ``o``, or None once Triton's refusal is seen.

    ``want`` is a type name, or the error Triton raises (its message must match).
    """
    o = np.zeros(8, np.float64)
    if isinstance(want, Exception):
        with pytest.raises(LangError, match=re.escape(str(want))):
            k[(1,)](*arrays, o, OUT=tl.int32)
        return None
    k[(1,)](*arrays, o, OUT=getattr(tl, want), sanitize_overflow=False)  # wraps as the GPU
    return o


def _np_apply(op, x, y):
    if op == "//":
        return x // y
    if op == "%":
        return np.fmod(x, y)
    return eval(f"x {op} y")


@settings(max_examples=120, deadline=None)
@given(a=st.sampled_from(INTS + FLOATS), b=st.sampled_from(INTS + FLOATS),
       op=st.sampled_from(OPS), seed=st.integers(0, 2**16))
def test_block_pairs_follow_tritons_promotion_and_refusals(a, b, op, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 21, 8).astype(np.int32)       # small positive: exact in every type
    y = rng.integers(1, 8 if op in ("<<", ">>") else 6, 8).astype(np.int32)
    want = _triton_result(op, a, b)
    k = kernel_from_source("x_ptr, y_ptr, o_ptr, OUT: tl.constexpr",
                           "offs = tl.arange(0, 8)",
                           f"x = tl.load(x_ptr + offs).to(tl.{a})",
                           f"y = tl.load(y_ptr + offs).to(tl.{b})",
                           f"z = x {op} y",
                           "tl.static_assert(z.dtype == OUT)",
                           "tl.store(o_ptr + offs, z.to(tl.float64))")
    o = _typed_run(k, want, x, y)
    if o is None:
        return
    # NumPy in the result type (bfloat16 results are small integers, exact in float32)
    npt = "float32" if want == "bfloat16" else want
    if op == "/":
        ref = x.astype(npt) / y.astype(npt)
    else:
        ref = _np_apply(op, x.astype(npt), y.astype(npt))
    np.testing.assert_array_equal(o, ref.astype(np.float64))


@jit
def _expand(o_ptr, RANK: tl.constexpr, AXIS: tl.constexpr):
    x = tl.arange(0, 2)
    for _ in tl.static_range(RANK - 1):
        x = tl.expand_dims(x, 0)  # rank RANK, shape (1, ..., 1, 2)
    y = tl.expand_dims(x, AXIS)
    tl.store(o_ptr + tl.arange(0, 2), tl.reshape(y, (2,)))
    tl.static_assert(len(y.shape) == RANK + 1)


@settings(max_examples=40, deadline=None)
@given(rank=st.integers(1, 3), axis=st.integers(-6, 6))
def test_expand_dims_accepts_axes_in_range_and_names_the_range_otherwise(rank, axis):
    # semantic.expand_dims via _wrap_axis: -(rank + 1) <= axis <= rank, else "invalid axis"
    o = np.zeros(2, np.int32)
    if -(rank + 1) <= axis <= rank:
        _expand[(1,)](o, RANK=rank, AXIS=axis)
        np.testing.assert_array_equal(o, [0, 1])
    else:
        with pytest.raises(LangError, match=re.escape(
                f"invalid axis {axis}. Expected {-(rank + 1)} <= axis < {rank + 1}")):
            _expand[(1,)](o, RANK=rank, AXIS=axis)


def _scalar_result(op, t, scalar):
    """Result type name of ``t op scalar`` (either side) in Triton 3.4, or its error."""
    div_or_mod = op in ("/", "//", "%")
    kind = {bool: 0, int: 1, float: 2}[type(scalar)]
    if kind <= (2 if t in FLOATS else 1):  # a weak scalar takes the block's type
        ct = "float32" if div_or_mod and t in ("float16", "bfloat16") else t
    else:
        ct = _computation_type(t, "float32", div_or_mod)  # an int block with a float literal
    if op == "/":
        return "float32" if ct in INTS else ct
    if op == "//" and ct not in INTS:
        return TypeError(f"unexpected type {ct}")
    return ct


@settings(max_examples=80, deadline=None)
@given(t=st.sampled_from(INTS + FLOATS), scalar=st.sampled_from([True, 3, 2.5]),
       op=st.sampled_from(["+", "-", "*", "/", "//", "%"]), left=st.booleans(),
       seed=st.integers(0, 2**16))
def test_python_scalars_are_weak_on_either_side(t, scalar, op, left, seed):
    x = np.random.default_rng(seed).integers(1, 21, 8).astype(np.int32)
    expr = f"{scalar!r} {op} x" if left else f"x {op} {scalar!r}"
    want = _scalar_result(op, t, scalar)
    k = kernel_from_source("x_ptr, o_ptr, OUT: tl.constexpr",
                           f"x = tl.load(x_ptr + tl.arange(0, 8)).to(tl.{t})",
                           f"z = {expr}",
                           "tl.static_assert(z.dtype == OUT)",
                           "tl.store(o_ptr + tl.arange(0, 8), z.to(tl.float64))")
    o = _typed_run(k, want, x)
    if o is None:
        return
    npt = "float32" if want == "bfloat16" else want   # bfloat16 results here are exact
    xv, sv = x.astype(npt), np.asarray(scalar).astype(npt)
    a, b = (sv, xv) if left else (xv, sv)
    ref = a / b if op == "/" else _np_apply(op, a, b)
    np.testing.assert_array_equal(o, np.asarray(ref, npt).astype(np.float64))
