from __future__ import annotations

import numpy as np
import pytest

from autotile import te
from autotile.errors import LangError

from .conftest import make_gemm


def test_compute_axes_named_after_lambda_parameters():
    A, B, C = make_gemm(8)
    assert [a.name for a in C.op.axis] == ["i", "j"]
    assert [a.name for a in C.op.reduce_axis] == ["k"]
    assert C.op.axis[0].dom == (0, 8)
    assert C.shape == (8, 8) and C.dtype == "float32"
    assert [t.name for t in C.op.input_tensors] == ["A", "B"]
    assert str(C.op.body) == "A[i, k] * B[k, j]"


def test_inputs_follow_creation_order_not_use_order():
    A = te.placeholder((4, 4), name="A")
    B = te.placeholder((4, 4), name="B")
    C = te.compute((4, 4), lambda i, j: B[i, j] + A[j, i], name="C")
    assert [t.name for t in C.op.input_tensors] == ["A", "B"]
    nest = te.lower(te.create_schedule(C))
    assert [b.name for b in nest.buffers] == ["A", "B", "C"]
    # accesses follow the body left to right, output last
    assert [a.buffer for a in nest.accesses] == ["B", "A", "C"]
    a = np.arange(16.0).reshape(4, 4)
    b = 100 + a
    np.testing.assert_array_equal(te.build(te.create_schedule(C))(a, b), b + a.T)


def test_affine_indices_and_printing():
    X = te.placeholder((20, 8), dtype="float64", name="X")
    r = te.reduce_axis((0, 3), name="r")
    Y = te.compute((8, 4), lambda i, j: te.sum(X[2 * i + r, j * 2] - 1.5, axis=r), name="Y")
    assert str(Y.op.body) == "X[2 * i + r, j * 2] - 1.5"
    nest = te.lower(te.create_schedule(Y))
    acc = nest.accesses[0]
    np.testing.assert_array_equal(acc.index_coefficients, [[2, 0, 1], [0, 2, 0]])
    np.testing.assert_array_equal(acc.index_offsets, [0, 0])
    x = np.random.default_rng(0).standard_normal((20, 8))
    want = np.array(
        [[sum(x[2 * i + r, 2 * j] - 1.5 for r in range(3)) for j in range(4)] for i in range(8)]
    )
    np.testing.assert_allclose(te.build(te.create_schedule(Y))(x), want, rtol=1e-14)


def test_reduce_axis_with_nonzero_start():
    X = te.placeholder((10,), dtype="float64", name="X")
    r = te.reduce_axis((1, 4), name="r")
    Y = te.compute((6,), lambda i: te.sum(X[i + r], axis=r), name="Y")
    s = te.create_schedule(Y)
    nest = te.lower(s)
    assert nest.axis_min == (0, 1)
    assert "for r in range(1, 4):" in str(nest)
    vals = nest.axis_values()
    assert vals[:3].tolist() == [[0, 1], [0, 2], [0, 3]]
    x = np.arange(10.0) ** 2
    want = np.array([x[i + 1] + x[i + 2] + x[i + 3] for i in range(6)])
    np.testing.assert_array_equal(te.build(s)(x), want)


def test_multiple_reduce_axes_conv1d_like():
    X = te.placeholder((6, 10), dtype="float64", name="X")
    W = te.placeholder((6, 3), dtype="float64", name="W")
    c = te.reduce_axis((0, 6), name="c")
    r = te.reduce_axis((0, 3), name="r")
    Y = te.compute((8,), lambda i: te.sum(X[c, i + r] * W[c, r], axis=[c, r]), name="Y")
    nest = te.lower(te.create_schedule(Y))
    assert nest.axes == ("i", "c", "r")
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((6, 10)), rng.standard_normal((6, 3))
    want = np.array([np.sum(x[:, i : i + 3] * w) for i in range(8)])
    np.testing.assert_allclose(te.build(te.create_schedule(Y))(x, w), want, rtol=1e-13)


def test_three_spatial_axes_elementwise():
    A = te.placeholder((2, 3, 4), dtype="float64", name="A")
    B = te.compute((2, 3, 4), lambda b, i, j: A[b, i, j] * A[b, i, j] + 1, name="B")
    s = te.create_schedule(B)
    s[B].fuse(*s[B].op.axis)
    nest = te.lower(s)
    assert [lp.name for lp in nest.loops] == ["b_i_j_f"]
    assert nest.accesses[-1].is_write and not nest.accesses[-1].is_read
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(te.build(s)(a), a * a + 1)


def test_wrong_number_of_indices():
    A = te.placeholder((4, 4), name="A")
    with pytest.raises(LangError, match="tensor A has 2 dimensions but was indexed with 1"):
        te.compute((4,), lambda i: A[i], name="B")


def test_axis_of_another_compute():
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j], name="B")
    x = B.op.axis[0]
    with pytest.raises(LangError, match="axis i does not belong to compute C"):
        te.compute((4, 4), lambda p, q: A[x, q], name="C")


def test_reduce_axis_not_reduced():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(LangError, match="reduce axis k .* not reduced"):
        te.compute((4,), lambda i: A[i, k], name="B")


@pytest.mark.parametrize("shape", [(4.0, 4), ("4",), (4, True), (0, 4), ()])
def test_non_int_shapes(shape):
    with pytest.raises(LangError, match="shape"):
        te.placeholder(shape, name="A")
    with pytest.raises(LangError, match="shape"):
        te.compute(shape, lambda *axes: 1.0, name="C")


def test_nonaffine_index_and_out_of_bounds():
    A = te.placeholder((16,), name="A")
    with pytest.raises(LangError, match="affine"):
        te.compute((4,), lambda i: A[i * i], name="B")
    with pytest.raises(LangError, match=r"ranges over \[2, 16\] but the dimension has extent 16"):
        te.compute((8,), lambda i: A[2 * i + 2], name="B")


def test_sum_must_be_top_level():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(LangError, match="te.sum must be the whole body"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2, name="B")
    with pytest.raises(LangError, match="made by te.reduce_axis"):
        te.compute((4,), lambda i: te.sum(A[i, i], axis=i), name="B")


def test_wrong_arity_and_bad_reduce_dom():
    with pytest.raises(LangError, match="2 dimensions but fcompute takes 1"):
        te.compute((4, 4), lambda i: 1.0, name="B")
    with pytest.raises(LangError, match=r"hi > lo, got dom=\(3, 3\) for axis k"):
        te.reduce_axis((3, 3), name="k")
