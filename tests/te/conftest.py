from __future__ import annotations

import pytest

from autotile import te


def make_gemm(n: int = 64, dtype: str = "float32"):
    A = te.placeholder((n, n), dtype=dtype, name="A")
    B = te.placeholder((n, n), dtype=dtype, name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


@pytest.fixture
def gemm64():
    return make_gemm(64)
