"""The lecture notes' §7.2 schedule walk-through: each step of the TVM CPU GEMM tutorial.

Each step is a schedule of ``C[i, j] += A[i, k] * B[k, j]`` at 64 x 64; the
walk-through lowers it, checks it against NumPy, and counts its misses in an
8 KB, 4-way, 64-byte-line cache and in a fully associative cache of the same
size (their difference is the conflict misses).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autotile import te
from autotile.measure import CacheConfig, MissBreakdown, classify_misses, simulate_nest

__all__ = ["Step", "walkthrough_steps", "run_walkthrough"]


@dataclass(frozen=True)
class Step:
    """One schedule of the walk-through.

    Attributes
    ----------
    title : str
        What the step does.
    n : int
        Matrix size.
    apply : callable
        ``apply(s, A, B, C)`` applies the step's primitives to schedule ``s``.
    """

    title: str
    n: int
    apply: Callable[[Any, Any, Any, Any], None]

    def schedule(self) -> Any:
        """Build the step's :class:`autotile.te.Schedule`."""
        n = self.n
        A = te.placeholder((n, n), dtype="float32", name="A")
        B = te.placeholder((n, n), dtype="float32", name="B")
        k = te.reduce_axis((0, n), name="k")
        C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
        s = te.create_schedule(C.op)
        self.apply(s, A, B, C)
        return s


def _default(s: Any, A: Any, B: Any, C: Any) -> None:
    pass


def _ikj(s: Any, A: Any, B: Any, C: Any) -> None:
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    s[C].reorder(i, k, j)


def _blocking(s: Any, A: Any, B: Any, C: Any) -> None:
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, jo, ii, ji = s[C].tile(i, j, x_factor=16, y_factor=16)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ki, ii, ji)


def _permutation(s: Any, A: Any, B: Any, C: Any) -> None:
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, jo, ii, ji = s[C].tile(i, j, x_factor=16, y_factor=16)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)


def _packing(s: Any, A: Any, B: Any, C: Any) -> None:
    _permutation(s, A, B, C)
    s.transform_layout(B, te.PackedLayout(tile=16))


def walkthrough_steps() -> list[Step]:
    """The steps, in the order of the TVM CPU GEMM tutorial ("How to optimize GEMM on CPU").

    Returns
    -------
    list of Step
        Default ``i, j, k``; reorder ``i, k, j``; blocking (tile 16 x 16, split
        k by 4, reorder ``io, jo, ko, ki, ii, ji``); loop permutation
        (``io, jo, ko, ii, ki, ji``); array packing of B into
        ``[j // 16][k][j % 16]``; and the 65 x 65 default of exercise 5.
    """
    return [
        Step("default order i, j, k", 64, _default),
        Step("reorder to i, k, j", 64, _ikj),
        Step("blocking: tile(i, j, 16, 16), split(k, 4), reorder(io, jo, ko, ki, ii, ji)",
             64, _blocking),
        Step("loop permutation: reorder(io, jo, ko, ii, ki, ji)", 64, _permutation),
        Step("array packing: B -> [j // 16][k][j % 16]", 64, _packing),
        Step("65 x 65, default order (exercise 5)", 65, _default),
    ]


def run_walkthrough(print_fn: Callable[[str], None] = print, show_ir: bool = True,
                    cache: CacheConfig | None = None) -> list[MissBreakdown]:
    """Run every step: lower, check against NumPy, count misses; print a table.

    Parameters
    ----------
    print_fn : callable, default=print
        Where lines go.
    show_ir : bool, default=True
        Print each step's lowered loop nest.
    cache : CacheConfig, optional
        Default 8 KB, 4-way, 64-byte lines.

    Returns
    -------
    list of MissBreakdown
        One per step, in order.
    """
    cache = cache or CacheConfig()
    rng = np.random.default_rng(0)
    rows = []
    out = []
    for step in walkthrough_steps():
        s = step.schedule()
        nest = te.lower(s)
        a = rng.standard_normal((step.n, step.n))
        b = rng.standard_normal((step.n, step.n))
        c = np.asarray(te.build(s)(a, b), dtype=np.float64)  # float64 already: no copy
        err = float(np.abs(c - a @ b).max() / np.abs(a @ b).max())
        aff = nest.affine_coefficients()
        mb = simulate_nest(nest, cache) if aff is not None else classify_misses(
            nest.byte_trace(), cache)
        out.append(mb)
        if show_ir:
            print_fn(f"## {step.title}")
            print_fn(str(nest))
            print_fn("")
        rows.append((step.title, step.n, mb.total, mb.fully_assoc.n_misses, mb.conflict,
                     mb.compulsory, err))
    print_fn(f"Cache: {cache.size_bytes} B, {cache.ways}-way, {cache.line_bytes} B lines "
             f"({cache.n_sets} sets); fully associative of the same size for comparison.")
    hdr = ("step", "n", "misses", "fully assoc.", "conflict", "compulsory", "max rel. err")
    width = max(len(r[0]) for r in rows)
    print_fn(f"{hdr[0]:<{width}}  {hdr[1]:>3}  {hdr[2]:>8}  {hdr[3]:>12}  {hdr[4]:>8}  "
             f"{hdr[5]:>10}  {hdr[6]:>12}")
    for r in rows:
        print_fn(f"{r[0]:<{width}}  {r[1]:>3}  {r[2]:>8,}  {r[3]:>12,}  {r[4]:>8,}  "
                 f"{r[5]:>10,}  {r[6]:>12.1e}")
    return out
