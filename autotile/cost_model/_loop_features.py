"""Loop-structure features of one lowered loop nest (the reference path).

AutoTVM's itervar features (Chen et al., "Learning to Optimize Tensor
Programs", NeurIPS 2018, §4 and App.; ``tvm/autotvm/feature.py``,
``get_itervar_feature_flatten``) describe a loop nest level by level: per
loop, its extent and, per buffer, the stride of the buffer's address in the
loop variable, the memory touched under the loop and the reuse ratio. This
module computes the same quantities from a :class:`autotile.te.LoopNest`
by enumerating the iterations that matter, so it works for any affine nest
(any layout). :class:`~autotile.cost_model.LoopFeaturizer` uses it for
arbitrary schedules and checks its fast GEMM path against it.

Feature definitions, for loop level ``l`` (0 = outermost) and buffer ``b``;
"under level ``l``" means the iterations of loops ``l, l+1, ..., L-1`` with
the outer loops ``0..l-1`` at their first value (0):

``L{l}.extent:log2``
    ``log2(extent_l)``.
``L{l}.{b}.stride_bytes:log2p1``
    ``log2(1 + |s|)`` where ``s`` is the change in byte address of ``b``'s
    first access when loop variable ``l`` goes from 0 to 1, all others at 0.
    0 when the loop has extent 1 or ``b`` does not depend on it.
``L{l}.{b}.touched_bytes:log2``
    ``log2(itemsize * distinct elements of b touched under level l)``.
``L{l}.{b}.touched_lines:log2``
    ``log2(distinct cache lines of b touched under level l)``, lines of
    ``line_bytes`` counted from byte address 0 (buffer bases included).
``L{l}.{b}.reuse:log2``
    ``log2(iterations under level l / distinct elements touched)``.
``n_loop_steps:log2``
    ``log2(sum_l prod(extent_0..extent_l))``, the loop-overhead term of
    :class:`autotile.measure.CpuCostModel`.

Nests shallower than ``max_depth`` are padded with zeros after their
innermost level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from autotile.errors import ScheduleError

if TYPE_CHECKING:
    from autotile.te import LoopNest

__all__ = ["PER_BUFFER_FEATURES", "loop_feature_names", "loop_nest_features"]

#: Per (level, buffer) feature kinds, in column order.
PER_BUFFER_FEATURES = (
    "stride_bytes:log2p1",
    "touched_bytes:log2",
    "touched_lines:log2",
    "reuse:log2",
)

#: Above this many enumerated iterations, distinct counts use upper bounds.
MAX_ENUM_ITERS = 1 << 20


def loop_feature_names(buffers: Sequence[str], max_depth: int) -> list[str]:
    """Column names of :func:`loop_nest_features`.

    Parameters
    ----------
    buffers : sequence of str
        Buffer names, in the nest's ``buffers`` order.
    max_depth : int
        Number of loop levels (nests are padded to it).

    Returns
    -------
    list of str
        ``max_depth * (1 + len(PER_BUFFER_FEATURES) * len(buffers)) + 1``
        names; level-major, then buffer, then feature kind; last
        ``"n_loop_steps:log2"``.
    """
    names: list[str] = []
    for level in range(max_depth):
        names.append(f"L{level}.extent:log2")
        for b in buffers:
            names.extend(f"L{level}.{b}.{kind}" for kind in PER_BUFFER_FEATURES)
    names.append("n_loop_steps:log2")
    return names


def n_loop_steps(extents: Sequence[int]) -> int:
    """``sum_l prod(extents[0..l])``: steps taken by all loop levels together."""
    total, prod = 0, 1
    for e in extents:
        prod *= int(e)
        total += prod
    return total


def _mixed_radix(extents: Sequence[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """All counter tuples of loops with ``extents``, shape (prod, len(extents))."""
    grids = np.meshgrid(*(np.arange(e, dtype=np.int64) for e in extents), indexing="ij")
    return np.stack([g.reshape(-1) for g in grids], axis=1) if grids else np.zeros((1, 0),
                                                                                   np.int64)


def loop_nest_features(
    nest: LoopNest, max_depth: int | None = None, line_bytes: int = 64
) -> npt.NDArray[np.float64]:
    """Itervar-style features of one affine loop nest (see module docstring).

    Parameters
    ----------
    nest : autotile.te.LoopNest
        A lowered nest whose root axes are affine in the loop variables
        (no fused loops).
    max_depth : int, optional
        Levels to emit; default ``len(nest.loops)``.
    line_bytes : int, default=64
        Cache line size in bytes for ``touched_lines``.

    Returns
    -------
    ndarray of shape (n_features,), dtype float64
        Columns named by ``loop_feature_names([b.name for b in nest.buffers],
        max_depth)``.

    Raises
    ------
    ScheduleError
        If the nest has fused loops (not affine), or has more than
        ``max_depth`` loops.
    ValueError
        If ``line_bytes < 1``.

    Notes
    -----
    Distinct elements and lines are counted exactly by enumerating the loops
    under the level that the buffer depends on; when those span more than
    ``MAX_ENUM_ITERS`` iterations, the product of their extents (capped at
    the buffer size) is used instead, and lines are estimated as
    ``ceil(bytes / line_bytes)``.
    """
    if line_bytes < 1:
        raise ValueError(f"line_bytes must be >= 1, got line_bytes={line_bytes}")
    coef = nest.affine_coefficients()
    if coef is None:
        raise ScheduleError("loop features need an affine nest (no fused loops)")
    n_loops = len(nest.loops)
    depth = n_loops if max_depth is None else int(max_depth)
    if n_loops > depth:
        raise ScheduleError(f"nest has {n_loops} loops, more than max_depth={depth}")
    extents = np.array([lp.extent for lp in nest.loops], dtype=np.int64)
    axis_min = np.asarray(nest.axis_min, dtype=np.int64)
    n_buf = len(nest.buffers)
    per_level = 1 + len(PER_BUFFER_FEATURES) * n_buf
    out = np.zeros(depth * per_level + 1, dtype=np.float64)

    for bi, buf in enumerate(nest.buffers):
        accs = [a for a in nest.accesses if a.buffer == buf.name]
        if not accs:
            continue
        # Dependence of each access's index on each loop: (n_dims, n_loops).
        dep = [a.index_coefficients @ coef.T for a in accs]
        touches = np.zeros(n_loops, dtype=bool)
        for d in dep:
            touches |= np.any(d != 0, axis=0)

        def offsets(counters: npt.NDArray[np.int64], loops: Sequence[int]) -> list[
            npt.NDArray[np.int64]
        ]:
            ax = counters @ coef[list(loops)] + axis_min if loops else np.broadcast_to(
                axis_min, (counters.shape[0], axis_min.size))
            res = []
            for a in accs:
                idx = ax @ a.index_coefficients.T + a.index_offsets
                res.append(np.asarray(buf.layout.element_offset(
                    *(idx[:, d] for d in range(idx.shape[1]))), dtype=np.int64))
            return res

        # Stride of the first access per loop.
        origin = offsets(np.zeros((1, 0), np.int64), [])[0][0]
        for level in range(n_loops):
            base = level * per_level + 1 + bi * len(PER_BUFFER_FEATURES)
            if extents[level] > 1 and touches[level]:
                unit = offsets(np.ones((1, 1), np.int64), [level])[0][0]
                stride = int(unit - origin) * buf.itemsize
                out[base] = math.log2(1 + abs(stride))
            under = [lv for lv in range(level, n_loops) if touches[lv]]
            n_under = int(np.prod(extents[level:]))
            n_enum = int(np.prod(extents[under])) if under else 1
            if n_enum <= MAX_ENUM_ITERS:
                offs = np.concatenate(offsets(_mixed_radix(extents[under]), under))
                n_elems = int(np.unique(offs).size)
                lines = (buf.base_bytes + offs * buf.itemsize) // line_bytes
                n_lines = int(np.unique(lines).size)
            else:
                n_elems = min(n_enum * len(accs), buf.n_elements)
                n_lines = -(-n_elems * buf.itemsize // line_bytes)
            out[base + 1] = math.log2(n_elems * buf.itemsize)
            out[base + 2] = math.log2(n_lines)
            out[base + 3] = math.log2(n_under / n_elems)
    for level in range(n_loops):
        out[level * per_level] = math.log2(extents[level])
    out[-1] = math.log2(max(n_loop_steps(extents.tolist()), 1))
    return out
