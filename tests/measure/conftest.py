from __future__ import annotations

from collections.abc import Callable

import pytest

from autotile import te


def _gemm(n: int, steps: Callable[..., None] | None = None, pack: int | None = None,
          width: int | None = None) -> te.Schedule:
    A = te.placeholder((n, n), dtype="float32", name="A")
    B = te.placeholder((n, n), dtype="float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    if steps is not None:
        steps(s, C)
    if pack:
        s.transform_layout(B, te.PackedLayout(tile=pack))
    if width:
        for t in (A, B):
            s.transform_layout(t, te.PaddedLayout(width=width))
    return s


@pytest.fixture(scope="session")
def gemm() -> Callable[..., te.Schedule]:
    return _gemm
