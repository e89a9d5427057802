"""Result types of reductions and scans (Triton's ``standard.py``) and their integer wrapping."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]

#: Triton 3.4 ``_pick_sum_dtype``: narrow signed ints sum in int32, narrow unsigned in uint32
SUM = {"int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32", "bool": "uint32"}
#: Triton 3.4 ``max``/``min`` without indices: narrower than 32 bits -> int32 / float32
MAXMIN = {"int8": "int32", "int16": "int32", "uint8": "int32", "uint16": "int32",
          "bool": "int32", "float16": "float32", "bfloat16": "float32"}


def _tl(name):
    return tl.int1 if name == "bool" else getattr(tl, name)


@jit
def _reduce(x_ptr, o_ptr, C: tl.constexpr, OP: tl.constexpr, OUT: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * C + tl.arange(0, C)[None, :])
    if OP == "sum":
        y = tl.sum(x, axis=1)
    elif OP == "max":
        y = tl.max(x, axis=1)
    elif OP == "min":
        y = tl.min(x, axis=1)
    elif OP == "max_idx":
        y, i = tl.max(x, axis=1, return_indices=True)
    elif OP == "cumsum":
        y = tl.cumsum(x, axis=1)
    elif OP == "cumsum_rev":
        y = tl.cumsum(x, axis=1, reverse=True)
    else:
        y = tl.cumprod(x, axis=1)
    tl.static_assert(y.dtype == OUT)
    if OP.startswith("cum"):
        tl.store(o_ptr + tl.arange(0, 4)[:, None] * C + tl.arange(0, C)[None, :], y)
    else:
        tl.store(o_ptr + tl.arange(0, 4), y)


def _data(dt, c, rng):
    if dt == "bool":
        return rng.random((4, c)) > 0.5
    if dt in FLOATS:
        return rng.normal(0, 10, (4, c)).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, (4, c), dtype=dt, endpoint=True)


def _run(x, op, out_dt):
    shape = x.shape if op.startswith("cum") else (4,)
    o = np.zeros(shape, out_dt)
    _reduce[(1,)](x, o, C=x.shape[1], OP=op, OUT=_tl(out_dt))
    return o


@settings(max_examples=40, deadline=None)
@given(dt=st.sampled_from(INTS + ["bool"]), c=st.sampled_from([1, 2, 8, 32]),
       seed=st.integers(0, 2**16))
def test_integer_sum_and_cumsum_type_and_wrapping(dt, c, seed):
    # full-range values: the sums overflow their type and must wrap (two's complement), with
    # the launch's overflow check on
    x = _data(dt, c, np.random.default_rng(seed))
    out = SUM.get(dt, dt)
    ref = x.astype(out)
    np.testing.assert_array_equal(_run(x, "sum", out), np.sum(ref, axis=1, dtype=out))
    np.testing.assert_array_equal(_run(x, "cumsum", out), np.cumsum(ref, axis=1, dtype=out))
    np.testing.assert_array_equal(_run(x, "cumsum_rev", out),
                                  np.cumsum(ref[:, ::-1], axis=1, dtype=out)[:, ::-1])


@settings(max_examples=30, deadline=None)
@given(dt=st.sampled_from(INTS), c=st.sampled_from([2, 8, 16]), seed=st.integers(0, 2**16))
def test_integer_cumprod_keeps_the_type_and_wraps(dt, c, seed):
    x = _data(dt, c, np.random.default_rng(seed))
    np.testing.assert_array_equal(_run(x, "cumprod", dt), np.cumprod(x, axis=1, dtype=dt))


@settings(max_examples=40, deadline=None)
@given(dt=st.sampled_from(INTS + FLOATS + ["bool"]), c=st.sampled_from([1, 4, 32]),
       seed=st.integers(0, 2**16))
def test_max_min_types(dt, c, seed):
    x = _data(dt, c, np.random.default_rng(seed))
    out = MAXMIN.get(dt, dt)
    np.testing.assert_array_equal(_run(x, "max", out), np.max(x, axis=1).astype(out))
    np.testing.assert_array_equal(_run(x, "min", out), np.min(x, axis=1).astype(out))
    # with indices the values keep their type (only bfloat16 is widened)
    np.testing.assert_array_equal(_run(x, "max_idx", dt), np.max(x, axis=1))


@pytest.mark.parametrize("dt", FLOATS)
def test_float_sums_keep_their_type(dt):
    x = _data(dt, 16, np.random.default_rng(0))
    ref = np.sum(x.astype(np.float64), axis=1)
    np.testing.assert_allclose(_run(x, "sum", dt), ref, rtol=1e-3 if dt == "float16" else 1e-6)
    np.testing.assert_allclose(_run(x, "cumsum", dt), np.cumsum(x.astype(np.float64), axis=1),
                               rtol=1e-2 if dt == "float16" else 1e-6, atol=1e-2)


def test_bfloat16_scans_and_max_are_float32_and_sum_stays_bfloat16():
    vals = np.array([[1.0, 2.0, 3.0, 0.5]] * 4, np.float32)
    x = tl.bf16_array(vals)
    np.testing.assert_array_equal(_run(x, "cumsum", "float32"), np.cumsum(vals, axis=1))
    np.testing.assert_array_equal(_run(x, "cumprod", "float32"), np.cumprod(vals, axis=1))
    np.testing.assert_array_equal(_run(x, "max", "float32"), [3.0] * 4)
    np.testing.assert_array_equal(_run(x, "max_idx", "float32"), [3.0] * 4)
    o = tl.bf16_array(np.zeros(4, np.float32))

    @jit
    def k(x_ptr, o_ptr):
        x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :])
        y = tl.sum(x, axis=1)
        tl.static_assert(y.dtype == tl.bfloat16)
        tl.store(o_ptr + tl.arange(0, 4), y)

    k[(1,)](x, o)
    np.testing.assert_array_equal(tl.bf16_to_float32(o), [6.5] * 4)


def test_sum_and_cumsum_dtype_argument():
    x = np.full((4, 8), 100, np.int8)

    @jit
    def k(x_ptr, o_ptr, p_ptr):
        x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :])
        s = tl.sum(x, axis=1, dtype=tl.int16)
        c = tl.cumsum(x, axis=1, dtype=tl.float32)
        tl.static_assert(s.dtype == tl.int16)
        tl.static_assert(c.dtype == tl.float32)
        tl.store(o_ptr + tl.arange(0, 4), s)
        tl.store(p_ptr + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :], c)

    o, p = np.zeros(4, np.int16), np.zeros((4, 8), np.float32)
    k[(1,)](x, o, p)
    np.testing.assert_array_equal(o, 800)
    np.testing.assert_array_equal(p, np.cumsum(x.astype(np.float32), axis=1))


@jit
def _add(a, b):
    return a + b


@jit
def _mul(a, b):
    return a * b


@settings(max_examples=25, deadline=None)
@given(dt=st.sampled_from(["int8", "int16", "int32", "int64"]), c=st.sampled_from([2, 8, 16]),
       seed=st.integers(0, 2**16))
def test_combine_function_arithmetic_wraps(dt, c, seed):
    # a user combine's `+`/`*` overflows in its partial results; the GPU wraps, so does the
    # interpreter with its overflow check on, and the order of combination does not matter
    x = _data(dt, c, np.random.default_rng(seed))

    @jit
    def k(x_ptr, o_ptr, p_ptr, C: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * C + tl.arange(0, C)[None, :])
        tl.store(o_ptr + tl.arange(0, 4), tl.reduce(x, 1, _add))
        tl.store(p_ptr + tl.arange(0, 4)[:, None] * C + tl.arange(0, C)[None, :],
                 tl.associative_scan(x, 1, _mul))

    o, p = np.zeros(4, dt), np.zeros((4, c), dt)
    k[(1,)](x, o, p, C=c)
    np.testing.assert_array_equal(o, np.sum(x, axis=1, dtype=dt))
    np.testing.assert_array_equal(p, np.cumprod(x, axis=1, dtype=dt))


def test_overflow_outside_reductions_is_still_checked_after_one():
    from autotile.errors import IntegerOverflowError

    @jit
    def k(x_ptr, o_ptr):
        x = tl.load(x_ptr + tl.arange(0, 2))
        s = tl.reduce(x, 0, _add)  # wraps to -2**31
        tl.store(o_ptr + tl.arange(0, 2), s + x * 2)  # checked again: 2**30 * 2 overflows

    x = np.full(2, 2**30, np.int32)
    with pytest.raises(IntegerOverflowError):
        k[(1,)](x, np.zeros(2, np.int32))


@jit
def _softmax(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr,
             KEEP: tl.constexpr, OM: tl.constexpr, ON: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    if DIM == -1:
        y = tl.softmax(x, keep_dims=KEEP)  # dim=None: axis 0
    else:
        y = x.softmax(DIM, KEEP)
    tl.static_assert(y.dtype == tl.float32)
    tl.store(o_ptr + tl.arange(0, OM)[:, None] * ON + tl.arange(0, ON)[None, :], y)


def _np_softmax(x, dim, keep):
    # Triton 3.4 standard.softmax: max and sum along dim (default 0), broadcast from the right
    x = x.astype(np.float32)
    z = x - np.max(x, axis=dim, keepdims=keep)
    num = np.exp(z)
    return num / np.sum(num, axis=dim, keepdims=keep)


@settings(max_examples=30, deadline=None)
@given(m=st.sampled_from([1, 2, 4, 8]), n=st.sampled_from([1, 2, 4, 8]),
       dim=st.sampled_from([-1, 0, 1]), keep=st.booleans(),
       dt=st.sampled_from(["float16", "float32"]), seed=st.integers(0, 2**16))
def test_softmax_dim_defaults_to_zero_and_keep_dims_as_triton(m, n, dim, keep, dt, seed):
    x = np.random.default_rng(seed).standard_normal((m, n)).astype(dt)
    d = 0 if dim == -1 else dim
    try:
        ref = _np_softmax(x, d, keep)
    except ValueError:  # max/sum without keep_dims do not broadcast back: Triton refuses too
        with pytest.raises(LangError, match="incompatible shapes"):
            _softmax[(1,)](x, np.zeros((m, n), np.float32), M=m, N=n, DIM=dim, KEEP=keep,
                           OM=m, ON=n)
        return
    o = np.zeros(ref.shape, np.float32)
    _softmax[(1,)](x, o, M=m, N=n, DIM=dim, KEEP=keep, OM=ref.shape[0], ON=ref.shape[1])
    np.testing.assert_allclose(o, ref, rtol=2e-6, atol=1e-7)


@jit
def _reduce_all(x_ptr, o_ptr, S0: tl.constexpr, S1: tl.constexpr, S2: tl.constexpr,
                RANK: tl.constexpr, OP: tl.constexpr):
    if RANK == 1:
        x = tl.load(x_ptr + tl.arange(0, S0))
    elif RANK == 2:
        x = tl.load(x_ptr + tl.arange(0, S0)[:, None] * S1 + tl.arange(0, S1)[None, :])
    else:
        x = tl.load(x_ptr + tl.arange(0, S0)[:, None, None] * (S1 * S2)
                    + tl.arange(0, S1)[None, :, None] * S2 + tl.arange(0, S2)[None, None, :])
    if OP == "sum":
        y = tl.sum(x, axis=None, keep_dims=True)
    elif OP == "max":
        y = tl.max(x, axis=None, keep_dims=True)
    elif OP == "min":
        y = x.min(None, keep_dims=True)
    else:
        y = tl.xor_sum(x, axis=None, keep_dims=True)
    tl.static_assert(len(y.shape) == RANK)
    tl.static_assert(y.shape == [1] * RANK)
    tl.store(o_ptr + tl.program_id(0) + tl.zeros_like(y).to(tl.int32), y)


@settings(max_examples=40, deadline=None)
@given(rank=st.integers(1, 3), s=st.tuples(*[st.sampled_from([1, 2, 4])] * 3),
       op=st.sampled_from(["sum", "max", "min", "xor_sum"]),
       dt=st.sampled_from(["int32", "uint8", "int64", "float32"]), seed=st.integers(0, 2**16),
       batch=st.booleans())
def test_keep_dims_reduction_over_all_axes_keeps_the_rank(rank, s, op, dt, seed, batch):
    if op == "xor_sum" and dt == "float32":
        dt = "int32"
    shape = s[:rank]
    x = np.random.default_rng(seed).integers(0, 50, shape).astype(dt)
    out_dt = {"sum": SUM, "max": MAXMIN, "min": MAXMIN}.get(op, {}).get(dt, dt)
    o = np.zeros(8, out_dt)
    _reduce_all[(8,)](x, o, S0=s[0], S1=s[1], S2=s[2], RANK=rank, OP=op, batch_programs=batch)
    assert _reduce_all.last_record.n_programs_batched == (8 if batch else 0)
    ref = {"sum": np.sum, "max": np.max, "min": np.min,
           "xor_sum": np.bitwise_xor.reduce}[op](x.reshape(-1))
    np.testing.assert_array_equal(o, ref.astype(out_dt))


@jit
def _int1_sums(x_ptr, s_ptr, c_ptr, N: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs) != 0
    tl.store(s_ptr + tl.program_id(0), tl.sum(x, axis=0, dtype=tl.int1).to(tl.int32))
    tl.store(c_ptr + offs, tl.cumsum(x, 0, reverse=REVERSE, dtype=tl.int1).to(tl.int32))


@settings(max_examples=40, deadline=None)
@given(bits=st.lists(st.integers(0, 1), min_size=64, max_size=64), log_n=st.integers(0, 5),
       reverse=st.booleans(), batch=st.booleans())
def test_int1_sum_and_cumsum_wrap_modulo_2(bits, log_n, reverse, batch):
    # Triton's sum(x, dtype=tl.int1) adds in i1: the count of ones modulo 2 (1024 ones -> 0,
    # Triton's test_sum_dtype), not NumPy's logical or
    n = 2 ** log_n
    x = np.asarray(bits, np.int32)
    s = np.full(64 // n, -1, np.int32)
    c = np.full(64, -1, np.int32)
    _int1_sums[(64 // n,)](x, s, c, N=n, REVERSE=reverse, batch_programs=batch)
    rows = x.reshape(-1, n)
    np.testing.assert_array_equal(s, rows.sum(axis=1) % 2)
    want = np.flip(np.cumsum(np.flip(rows, 1), axis=1), 1) if reverse else np.cumsum(rows, axis=1)
    np.testing.assert_array_equal(c, (want % 2).reshape(-1))


def test_int1_sum_of_1024_ones_is_0_and_default_sum_counts():
    @jit
    def k(o_ptr, OUT: tl.constexpr):
        x = tl.full((32, 32), 1, dtype=tl.int1)
        tl.store(o_ptr, tl.sum(x, dtype=OUT).to(tl.int32))

    o = np.full(1, -1, np.int32)
    k[(1,)](o, OUT=tl.int1)
    assert o[0] == 0
    k[(1,)](o, OUT=None)  # default: int1 sums in uint32
    assert o[0] == 1024
