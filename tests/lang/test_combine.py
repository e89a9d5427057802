"""``tl.reduce`` / ``tl.associative_scan`` with user combine functions, one tensor or a tuple."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit
from tests.lang._kernels import kernel_from_source


@jit
def argmax_combine(v0, i0, v1, i1):
    # ties go to the lower index, so the combine is associative but not commutative in i
    take0 = (v0 > v1) | ((v0 == v1) & (i0 < i1))
    return tl.where(take0, v0, v1), tl.where(take0, i0, i1)


@jit
def first(a, b):
    return a


@jit
def linear_recurrence(a1, b1, a2, b2):
    # h = a * h_prev + b, composed: (a2 * a1, a2 * b1 + b2)
    return a1 * a2, b1 * a2 + b2


@jit
def reduce_pair_kernel(x_ptr, v_ptr, i_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr,
                       KEEP: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * R * C + rows * C + cols)
    idx = tl.broadcast_to(cols if AXIS == 1 else rows, (R, C))
    v, i = tl.reduce((x, idx), AXIS, argmax_combine, keep_dims=KEEP)
    n: tl.constexpr = C if AXIS == 0 else R
    out = pid * n + tl.arange(0, n)
    if KEEP:
        v = tl.reshape(v, (n,))
        i = tl.reshape(i, (n,))
    tl.store(v_ptr + out, v)
    tl.store(i_ptr + out, i)


def _argmax_ref(x, axis):
    return x.max(axis=axis), x.argmax(axis=axis)  # numpy ties go to the first index too


@settings(max_examples=12, deadline=None)
@given(r=st.sampled_from([1, 2, 4]), c=st.sampled_from([1, 4, 8]), axis=st.sampled_from([0, 1]),
       keep=st.booleans(), dt=st.sampled_from([np.float32, np.int8, np.uint16, np.int64]),
       seed=st.integers(0, 2**16), batch=st.booleans())
def test_tuple_reduce_argmax_matches_numpy(r, c, axis, keep, dt, seed, batch):
    rng = np.random.default_rng(seed)
    n_prog = 5
    x = rng.integers(-3, 4, size=(n_prog, r, c)).astype(dt)  # few values: many ties
    n = c if axis == 0 else r
    v = np.zeros(n_prog * n, dt)
    i = np.zeros(n_prog * n, np.int32)
    reduce_pair_kernel[(n_prog,)](x, v, i, R=r, C=c, AXIS=axis, KEEP=keep, batch_programs=batch)
    for p in range(n_prog):
        ref_v, ref_i = _argmax_ref(x[p], axis)
        np.testing.assert_array_equal(v[p * n:(p + 1) * n], ref_v)
        np.testing.assert_array_equal(i[p * n:(p + 1) * n], ref_i)
    if batch:
        assert reduce_pair_kernel.last_record.n_programs_batched == n_prog


def test_reduce_combines_in_order_so_non_commutative_combines_fold_left():
    @jit
    def k(x_ptr, o_ptr, N: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, N))
        tl.store(o_ptr, tl.reduce(x, 0, first))

    for n in (1, 2, 8, 16):
        x = np.arange(10, 10 + n, dtype=np.int32)
        o = np.zeros(1, np.int32)
        k[(1,)](x, o, N=n)
        assert o[0] == 10


def test_reduce_over_all_axes_with_keep_dims_has_rank_of_input():
    @jit
    def add(a, b):
        return a + b

    @jit
    def k(x_ptr, o_ptr):
        x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :])
        s = tl.reduce(x, None, add, keep_dims=True)
        tl.static_assert(s.shape == [1, 1])
        s0 = tl.reduce(x, None, add)
        tl.static_assert(s0.shape == [])
        t = tl.sum(x, axis=None, keep_dims=True)
        tl.static_assert(t.shape == [1, 1])
        tl.store(o_ptr + tl.arange(0, 1)[:, None] + tl.arange(0, 1)[None, :], s + t)

    x = np.arange(32, dtype=np.int32).reshape(4, 8)
    o = np.zeros((1, 1), np.int32)
    k[(1,)](x, o)
    assert o[0, 0] == 2 * x.sum()


@jit
def scan_kernel(a_ptr, b_ptr, oa_ptr, ob_ptr, R: tl.constexpr, C: tl.constexpr,
                AXIS: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    sa, sb = tl.associative_scan((a, b), AXIS, linear_recurrence, reverse=REVERSE)
    tl.store(oa_ptr + offs, sa)
    tl.store(ob_ptr + offs, sb)


def _recurrence_ref(a, b, axis, reverse):
    a, b = np.moveaxis(a, axis, 0), np.moveaxis(b, axis, 0)
    if reverse:
        a, b = a[::-1], b[::-1]
    oa, ob = np.empty_like(a), np.empty_like(b)
    oa[0], ob[0] = a[0], b[0]
    for i in range(1, a.shape[0]):
        oa[i] = oa[i - 1] * a[i]
        ob[i] = ob[i - 1] * a[i] + b[i]
    if reverse:
        oa, ob = oa[::-1], ob[::-1]
    return np.moveaxis(oa, 0, axis), np.moveaxis(ob, 0, axis)


@pytest.mark.parametrize("axis,reverse", [(0, False), (1, False), (1, True), (0, True)])
def test_tuple_scan_linear_recurrence_matches_numpy(axis, reverse):
    rng = np.random.default_rng(axis + 2 * reverse)
    a = rng.uniform(0.5, 1.0, (4, 8)).astype(np.float32)
    b = rng.standard_normal((4, 8)).astype(np.float32)
    oa, ob = np.zeros_like(a), np.zeros_like(b)
    scan_kernel[(1,)](a, b, oa, ob, R=4, C=8, AXIS=axis, REVERSE=reverse)
    ra, rb = _recurrence_ref(a, b, axis, reverse)
    np.testing.assert_allclose(oa, ra, rtol=1e-6)
    np.testing.assert_allclose(ob, rb, rtol=1e-5, atol=1e-6)


def test_tuple_scan_cummax_with_indices_and_first_element_scan():
    @jit
    def k(x_ptr, v_ptr, i_ptr, f_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        x = tl.load(x_ptr + offs)
        v, i = tl.associative_scan((x, offs), 0, argmax_combine)
        tl.store(v_ptr + offs, v)
        tl.store(i_ptr + offs, i)
        tl.store(f_ptr + offs, tl.associative_scan(x, 0, first, reverse=True))

    x = np.array([3, 1, 4, 4, 2, 9, 9, 0], np.int16)
    v, i, f = np.zeros_like(x), np.zeros(8, np.int32), np.zeros_like(x)
    k[(1,)](x, v, i, f, N=8)
    np.testing.assert_array_equal(v, np.maximum.accumulate(x))
    np.testing.assert_array_equal(i, [0, 0, 2, 2, 2, 5, 5, 5])  # ties keep the first index
    np.testing.assert_array_equal(f, np.full(8, x[-1]))  # reverse: the scan starts at the end


def test_scan_batched_equals_sequential():
    a = np.random.default_rng(1).uniform(0.5, 1, (8, 4, 8)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((8, 4, 8)).astype(np.float32)

    @jit
    def k(a_ptr, b_ptr, o_ptr):
        offs = tl.program_id(0) * 32 + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :]
        _, h = tl.associative_scan((tl.load(a_ptr + offs), tl.load(b_ptr + offs)), 1,
                                   linear_recurrence)
        tl.store(o_ptr + offs, h)

    outs = []
    for batch in (False, True):
        o = np.zeros_like(a)
        k[(8,)](a, b, o, batch_programs=batch)
        outs.append(o)
    assert k.last_record.n_programs_batched == 8
    np.testing.assert_array_equal(outs[0], outs[1])


def test_combine_results_keep_the_input_dtypes():
    @jit
    def widen(a, b):
        return a.to(tl.int32) + b  # int32: cast back to int8, as Triton's region types demand

    @jit
    def k(x_ptr, o_ptr):
        s = tl.reduce(tl.load(x_ptr + tl.arange(0, 4)), 0, widen)
        tl.static_assert(s.dtype == tl.int8)
        tl.store(o_ptr, s)

    o = np.zeros(1, np.int8)
    k[(1,)](np.array([100, 100, 1, 2], np.int8), o)
    assert o[0] == np.int8(-53)  # 203 wraps to -53 in int8


@pytest.mark.parametrize("body,match", [
    ("tl.reduce((x, tl.arange(0, 8)), 0, argmax_combine)",
     r"all reduce inputs must have the same shape, got input\[0\] of shape \(4,\) and input\[1\] "
     r"of shape \(8,\)"),
    ("tl.reduce((x, x), 0, first)",
     r"over 2 tensor\(s\) must take 4 arguments .*got first\(a, b\)"),
    ("tl.reduce((x, x), 0, one_of_two)", r"must return 2 value\(s\), got 1"),
    ("tl.reduce(x, 1, first)", r"invalid axis 1. Expected -1 <= axis < 1"),
    ("tl.associative_scan(x, -2, first)", r"invalid axis -2. Expected -1 <= axis < 1"),
])
def test_combine_errors_name_the_rule(body, match):
    with pytest.raises(LangError, match=match):
        k = kernel_from_source("x_ptr", "x = tl.load(x_ptr + tl.arange(0, 4))", body,
                               argmax_combine=argmax_combine, first=first,
                               one_of_two=lambda a0, a1, b0, b1: a0)
        k[(1,)](np.zeros(4, np.float32))


@jit
def sum_max_count(s1, m1, c1, s2, m2, c2):
    # three running statistics at once: sum, max and count
    return s1 + s2, tl.maximum(m1, m2), c1 + c2


@jit
def triple_kernel(x_ptr, s_ptr, m_ptr, c_ptr, rs_ptr, rm_ptr, rc_ptr, R: tl.constexpr,
                  C: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + pid * R * C + offs)
    ones = tl.full((R, C), 1, tl.int32)
    s, m, c = tl.associative_scan((x, x, ones), AXIS, sum_max_count, reverse=REVERSE)
    tl.store(s_ptr + pid * R * C + offs, s)
    tl.store(m_ptr + pid * R * C + offs, m)
    tl.store(c_ptr + pid * R * C + offs, c)
    rs, rm, rc = tl.reduce((x, x, ones), AXIS, sum_max_count, keep_dims=True)
    tl.static_assert(rs.shape == ([1, C] if AXIS == 0 else [R, 1]))
    tl.store(rs_ptr + pid * R * C + offs, tl.broadcast_to(rs, (R, C)))
    tl.store(rm_ptr + pid * R * C + offs, tl.broadcast_to(rm, (R, C)))
    tl.store(rc_ptr + pid * R * C + offs, tl.broadcast_to(rc, (R, C)))


@settings(max_examples=25, deadline=None)
@given(r=st.sampled_from([1, 2, 4]), c=st.sampled_from([1, 4, 8]), axis=st.sampled_from([0, 1]),
       reverse=st.booleans(), dt=st.sampled_from([np.int32, np.int64, np.float32]),
       seed=st.integers(0, 2**16), batch=st.booleans())
def test_three_operand_scan_and_reduce_match_numpy(r, c, axis, reverse, dt, seed, batch):
    n_prog = 5
    x = np.random.default_rng(seed).integers(-20, 20, (n_prog, r, c)).astype(dt)
    outs = [np.zeros(x.shape, t) for t in (dt, dt, np.int32) * 2]
    triple_kernel[(n_prog,)](x, *outs, R=r, C=c, AXIS=axis, REVERSE=reverse,
                             batch_programs=batch)
    assert triple_kernel.last_record.n_programs_batched == (n_prog if batch else 0)
    ax = axis + 1
    flip = (lambda a: np.flip(a, ax)) if reverse else (lambda a: a)
    np.testing.assert_array_equal(outs[0], flip(np.cumsum(flip(x), ax, dtype=dt)))
    np.testing.assert_array_equal(outs[1], flip(np.maximum.accumulate(flip(x), ax)))
    np.testing.assert_array_equal(outs[2], flip(np.cumsum(np.ones_like(x, np.int32), ax)))
    full = x.shape
    np.testing.assert_array_equal(outs[3], np.broadcast_to(x.sum(ax, keepdims=True), full))
    np.testing.assert_array_equal(outs[4], np.broadcast_to(x.max(ax, keepdims=True), full))
    np.testing.assert_array_equal(outs[5], np.full(full, x.shape[ax], np.int32))
