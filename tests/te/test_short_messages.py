"""Error messages of te.build/te.lower name the bad argument without dumping its repr."""

import pytest

from autotile import te
from autotile.errors import LangError


def _matmul(n=16):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, te.create_schedule(C.op)


def test_build_with_an_op_names_it_and_stays_short():
    A, B, C, s = _matmul()
    with pytest.raises(LangError) as exc:
        te.build(s, [A, B, C.op])
    msg = str(exc.value)
    assert "got args=[Tensor 'A', Tensor 'B', ComputeOp 'C']: args[2] is not a Tensor" in msg
    assert "pass the tensor C itself" in msg
    assert "IterVar" not in msg and "body=" not in msg
    assert len(msg) < 300
    te.build(s, [A, B, C])  # the corrected call builds


def test_lower_with_a_long_list_argument_is_cut():
    A, B, C, s = _matmul()
    with pytest.raises(LangError) as exc:
        te.lower(s, [A, list(range(1000)), C])
    msg = str(exc.value)
    assert "args[1] is not a Tensor" in msg
    assert "999" not in msg and len(msg) < 250


def test_lower_with_a_long_string_is_cut():
    _, _, _, s = _matmul()
    with pytest.raises(LangError, match=r"got args='x{20,}\.\.\. \(str\)$"):
        te.lower(s, "x" * 1000)
