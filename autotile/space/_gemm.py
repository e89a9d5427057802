"""The GEMM schedule template: split factors of i, j, k and the loop order."""

from __future__ import annotations

from autotile.space._numeric import Divisors
from autotile.space._permutation import Permutation
from autotile.space._space import Space

__all__ = ["gemm_space", "GEMM_LOOPS"]

GEMM_LOOPS = ("io", "ii", "jo", "ji", "ko", "ki")


def gemm_space(n: int = 64) -> Space:
    """Return the GEMM schedule space (split factors and loop order)."""
    return Space(
        [
            Divisors("i_factor", n),
            Divisors("j_factor", n),
            Divisors("k_factor", n),
            Permutation("order", GEMM_LOOPS),
        ],
        name=f"gemm{n}",
    )


def gemm_schedule(*a, **k):  # noqa: D103
    raise NotImplementedError


def gemm_canonical_key(*a, **k):  # noqa: D103
    raise NotImplementedError
