from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile import te
from autotile.errors import LangError, ScheduleError

from .conftest import make_gemm


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def reference_axis_values(nest, relations):
    """Per-iteration Python reference: relations given as closures."""
    rows = []
    for counter in itertools.product(*(range(lp.extent) for lp in nest.loops)):
        env = dict(zip((lp.name for lp in nest.loops), counter))
        rows.append(relations(env))
    return np.array(rows, dtype=np.int64)


def test_gemm_contract_tutorial_schedule():
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    xo, yo, xi, yi = s[C].tile(i, j, 16, 16)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, ki, xi, yi)
    nest = te.lower(s)
    assert [(lp.name, lp.extent) for lp in nest.loops] == [
        ("i_o", 4),
        ("j_o", 4),
        ("k_o", 16),
        ("k_i", 4),
        ("i_i", 16),
        ("j_i", 16),
    ]
    assert nest.axes == ("i", "j", "k")
    assert nest.n_iters == 64**3
    coef = nest.affine_coefficients()
    assert coef.dtype == np.int64
    np.testing.assert_array_equal(
        coef,
        [[16, 0, 0], [0, 16, 0], [0, 0, 4], [0, 0, 1], [1, 0, 0], [0, 1, 0]],
    )
    # accesses: A[i,k] read, B[k,j] read, C[i,j] update, in that order
    assert [(a.buffer, a.is_write, a.is_read) for a in nest.accesses] == [
        ("A", False, True),
        ("B", False, True),
        ("C", True, True),
    ]
    assert [str(a) for a in nest.accesses] == ["A[i, k]", "B[k, j]", "C[i, j]"]
    np.testing.assert_array_equal(nest.accesses[1].index_coefficients, [[0, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal(nest.accesses[1].index_offsets, [0, 0])
    # buffers: A, B, C contiguous from 0
    assert [
        (b.name, b.shape, b.dtype, b.itemsize, b.base_bytes, b.size_bytes) for b in nest.buffers
    ] == [
        ("A", (64, 64), "float32", 4, 0, 16384),
        ("B", (64, 64), "float32", 4, 16384, 16384),
        ("C", (64, 64), "float32", 4, 32768, 16384),
    ]
    vals = nest.axis_values()
    assert vals.shape == (64**3, 3) and vals.dtype == np.int64
    # iteration 1 advances j_i; iteration 16 advances i_i; iteration 256 advances k_i
    assert vals[[0, 1, 16, 256, 1024]].tolist() == [
        [0, 0, 0],
        [0, 1, 0],
        [1, 0, 0],
        [0, 0, 1],
        [0, 0, 4],
    ]
    trace = nest.byte_trace()
    assert trace.dtype == np.uint64 and trace.shape == (3 * 64**3,)
    # iteration 0: A[0,0], B[0,0], C[0,0]; iteration 1: A[0,0], B[0,1], C[0,1]
    assert trace[:6].tolist() == [0, 16384, 32768, 0, 16388, 32772]
    # iteration 256 (k=1): A[0,1], B[1,0], C[0,0]
    assert trace[768:771].tolist() == [4, 16384 + 256, 32768]
    t8 = nest.byte_trace(itemsize=8)
    assert t8[:6].tolist() == [0, 32768, 65536, 0, 32776, 65544]


def test_padded_and_packed_buffers():
    A, B, C = make_gemm(64, dtype="float64")
    s = te.create_schedule(C)
    s.pad(A, width=65)
    s.pack(B, tile=16)
    nest = te.lower(s)
    a_buf, b_buf, c_buf = nest.buffers
    assert a_buf.layout == te.PaddedLayout(65, shape=(64, 64))
    assert (a_buf.n_elements, a_buf.size_bytes, a_buf.itemsize) == (64 * 65, 64 * 65 * 8, 8)
    assert (b_buf.base_bytes, c_buf.base_bytes) == (64 * 65 * 8, 64 * 65 * 8 + 64 * 64 * 8)
    np.testing.assert_array_equal(a_buf.layout.element_offset([0, 1, 2], [5, 0, 63]), [5, 65, 193])
    # B[k, j] stored at [j // 16][k][j % 16] of a (4, 64, 16) array
    k = np.array([0, 1, 0, 63, 5])
    j = np.array([0, 0, 16, 63, 17])
    want = (j // 16) * 64 * 16 + k * 16 + j % 16
    np.testing.assert_array_equal(b_buf.layout.element_offset(k, j), want)
    assert want.tolist() == [0, 16, 1024, 4095, 1105]
    # every element of B maps to a distinct slot
    kk, jj = np.indices((64, 64)).reshape(2, -1)
    assert np.array_equal(np.sort(b_buf.layout.element_offset(kk, jj)), np.arange(4096))
    trace = nest.byte_trace()
    assert trace[:3].tolist() == [0, b_buf.base_bytes, c_buf.base_bytes]
    assert trace[3:6].tolist() == [8, b_buf.base_bytes + 16 * 8, c_buf.base_bytes]


def test_unbound_layout_refuses_offsets():
    with pytest.raises(ScheduleError, match="not bound to a buffer shape"):
        te.PackedLayout(tile=4).element_offset([0], [0])
    lay = te.RowMajor().bind((3, 5))
    assert lay.n_elements == 15
    np.testing.assert_array_equal(lay.element_offset([1, 2], [4, 0]), [9, 10])


def test_fused_axis_values_match_reference_and_not_affine():
    A, B, C = make_gemm(8)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, factor=2)
    s[C].reorder(io, j, ii, k)
    f = s[C].fuse(j, ii)
    fo, fi = s[C].split(f, factor=4)
    nest = te.lower(s)
    assert [lp.name for lp in nest.loops] == ["i_o", "j_i_i_f_o", "j_i_i_f_i", "k"]
    assert nest.affine_coefficients() is None

    def rel(env):
        fused = env["j_i_i_f_o"] * 4 + env["j_i_i_f_i"]
        j, ii = fused // 2, fused % 2
        return [env["i_o"] * 2 + ii, j, env["k"]]

    np.testing.assert_array_equal(nest.axis_values(), reference_axis_values(nest, rel))


def test_printed_code_executes():
    A, B, C = make_gemm(16)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    xo, yo, xi, yi = s[C].tile(i, j, 4, 8)
    ko, ki = s[C].split(k, nparts=2)
    s[C].reorder(ko, xo, yo, xi, ki, yi)
    s[C].fuse(xo, yo)
    s.pack(B, 8)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    env = {"A": a, "B": b, "C": np.full((16, 16), np.nan)}
    exec(str(te.lower(s)), env)
    np.testing.assert_allclose(env["C"], a @ b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(te.build(s)(a, b), a @ b, rtol=1e-12, atol=1e-12)


def test_build_float32_and_argument_checks():
    A, B, C = make_gemm(16)
    s = te.create_schedule(C)
    fn = te.build(s)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    c = fn(a, b)
    assert c.dtype == np.float32
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(LangError, match=r"input B must have shape \(16, 16\), got shape \(16, 8\)"):
        fn(a, b[:, :8])
    with pytest.raises(LangError, match="C takes 2 inputs"):
        fn(a)


def gemm_schedule(n, fi, fj, fk, perm, pack_tile, pad_extra):
    A, B, C = make_gemm(n)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, factor=fi)
    jo, ji = s[C].split(j, factor=fj)
    ko, ki = s[C].split(k, factor=fk)
    loops = [io, ii, jo, ji, ko, ki]
    s[C].reorder(*[loops[p] for p in perm])
    if pack_tile is not None:
        s.pack(B, tile=pack_tile)
    if pad_extra is not None:
        s.pad(A, width=n + pad_extra)
    return s


@st.composite
def gemm_schedules(draw):
    n = draw(st.sampled_from([16, 16, 32, 32, 64]))
    fi, fj, fk = (draw(st.sampled_from(divisors(n))) for _ in range(3))
    perm = draw(st.permutations(range(6)))
    pack_tile = draw(st.none() | st.sampled_from(divisors(n)))
    pad_extra = draw(st.none() | st.integers(0, 9))
    return n, fi, fj, fk, tuple(perm), pack_tile, pad_extra


@settings(max_examples=60, deadline=None, derandomize=True)
@given(gemm_schedules())
def test_random_gemm_schedules(params):
    n, *_, pack_tile, pad_extra = params
    s = gemm_schedule(*params)
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    c = te.build(s)(a, b)
    want = a @ b
    assert c.dtype == np.float64
    assert np.max(np.abs(c - want)) / np.max(np.abs(want)) <= 1e-12

    nest = te.lower(s)
    assert nest.n_iters == n**3
    # affine: axis values are the mixed-radix counter times the coefficients
    coef = nest.affine_coefficients()
    assert coef is not None and coef.shape == (6, 3)
    vals = nest.axis_values()
    np.testing.assert_array_equal(nest.loop_counters() @ coef, vals)
    # every (i, j, k) visited exactly once
    flat = (vals[:, 0] * n + vals[:, 1]) * n + vals[:, 2]
    assert np.array_equal(np.sort(flat), np.arange(n**3))

    trace = nest.byte_trace()
    assert trace.shape == (3 * n**3,)
    base = gemm_schedule(n, n, n, n, tuple(range(6)), pack_tile, pad_extra)
    assert np.array_equal(np.sort(trace), np.sort(te.lower(base).byte_trace()))
    # the per-access columns only permute with the schedule
    cols = trace.reshape(-1, 3)
    assert cols[:, 2].min() == nest.buffers[2].base_bytes


@settings(max_examples=20, deadline=None, derandomize=True)
@given(gemm_schedules(), st.integers(0, 4))
def test_random_schedules_with_a_fuse(params, where):
    n = params[0]
    s = gemm_schedule(*params)
    stage = s.stage
    leaves = stage.leaf_iter_vars
    stage.fuse(leaves[where], leaves[where + 1])
    nest = te.lower(s)
    assert nest.affine_coefficients() is None
    vals = nest.axis_values()
    flat = (vals[:, 0] * n + vals[:, 1]) * n + vals[:, 2]
    assert np.array_equal(np.sort(flat), np.arange(n**3))
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    c = te.build(s)(a, b)
    want = a @ b
    assert np.max(np.abs(c - want)) / np.max(np.abs(want)) <= 1e-12
