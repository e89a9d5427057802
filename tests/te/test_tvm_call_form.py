"""TVM's call forms ``tvm.build(s, [A, B, C], target="llvm")`` / ``tvm.lower(s, args)``."""

from __future__ import annotations

import numpy as np
import pytest

from autotile import te
from autotile.errors import LangError, ScheduleError


def _matmul(n=8):
    A = te.placeholder((n, n), dtype="float32", name="A")
    B = te.placeholder((n, n), dtype="float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, te.create_schedule(C.op)


def test_build_with_tvm_args_writes_the_output_in_place():
    A, B, C, s = _matmul()
    s[C].tile(*s[C].op.axis, x_factor=4, y_factor=4)
    fn = te.build(s, [A, B, C], target="llvm", name="mmult")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 8)).astype(np.float32)
    b = rng.standard_normal((8, 8)).astype(np.float32)
    c = np.zeros((8, 8), np.float32)
    assert fn(a, b, c) is c
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(te.build(s)(a, b), c)  # the autotile form, same numbers


def test_lower_with_tvm_args_is_the_same_nest():
    A, B, C, s = _matmul(4)
    assert str(te.lower(s, [A, B, C], simple_mode=True)) == str(te.lower(s))


@pytest.mark.parametrize(("make_args", "message"), [
    (lambda A, B, C: [B, A, C], r"must be the schedule's placeholders in creation order, then "
                                r"its output: \[A, B, C\], got \[B, A, C\]"),
    (lambda A, B, C: [A, B], r"\[A, B, C\], got \[A, B\]"),
])
def test_build_rejects_other_tensor_lists(make_args, message):
    A, B, C, s = _matmul(4)
    with pytest.raises(ScheduleError, match=message):
        te.build(s, make_args(A, B, C))


def test_build_bad_call_forms_name_the_expected_form():
    A, B, C, s = _matmul(4)
    with pytest.raises(LangError, match=r"takes a Schedule from te.create_schedule\(C\) "
                                        r"first, got Tensor"):
        te.build(C)
    with pytest.raises(LangError, match=r"args must be a list of tensors .* got args='A'"):
        te.build(s, "A")
    with pytest.raises(LangError, match=r"target must be None or a CPU target .* "
                                        r"got target='cuda'"):
        te.build(s, [A, B, C], target="cuda")
    fn = te.build(s, [A, B, C])
    x = np.ones((4, 4), np.float32)
    with pytest.raises(LangError, match="either as the last positional array or as out="):
        fn(x, x, np.zeros((4, 4), np.float32), out=np.zeros((4, 4), np.float32))
    with pytest.raises(LangError, match=r"takes 2 inputs \['A', 'B'\] \(then optionally the "
                                        r"output C\), got 4 arrays"):
        fn(x, x, x, x)
