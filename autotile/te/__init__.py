"""autotile.te: TVM-style tensor expressions, schedules, lowering and build.

Define *what* to compute with :func:`placeholder`, :func:`compute`,
:func:`reduce_axis` and :func:`sum`; decide *how* with a :class:`Schedule`
(``split``, ``tile``, ``reorder``, ``fuse``, ``transform_layout``); then
:func:`lower` to a :class:`LoopNest` (printable code plus vectorised
iteration and address traces) or :func:`build` a NumPy callable.

Examples
--------
>>> from autotile import te
>>> n = 64
>>> A = te.placeholder((n, n), dtype="float32", name="A")
>>> B = te.placeholder((n, n), dtype="float32", name="B")
>>> k = te.reduce_axis((0, n), name="k")
>>> C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
>>> s = te.create_schedule(C.op)
>>> i, j = s[C].op.axis
>>> io, jo, ii, ji = s[C].tile(i, j, x_factor=16, y_factor=16)
>>> nest = te.lower(s)
>>> [loop.name for loop in nest.loops]
['i_o', 'j_o', 'i_i', 'j_i', 'k']
"""

from __future__ import annotations

from autotile.te._build import BuiltFunction, build
from autotile.te._expr import BinOp, Const, Expr, IterVar, Load, Reduce, reduce_axis, sum
from autotile.te._layout import Layout, PackedLayout, PaddedLayout, RowMajor
from autotile.te._loop_nest import Access, AffineIndex, BufferInfo, Loop, LoopNest
from autotile.te._lower import lower
from autotile.te._schedule import Fuse, Schedule, Split, Stage, create_schedule
from autotile.te._tensor import ComputeOp, PlaceholderOp, Tensor, compute, placeholder

__all__ = [
    # expressions and tensors
    "placeholder",
    "compute",
    "reduce_axis",
    "sum",
    "Tensor",
    "PlaceholderOp",
    "ComputeOp",
    "Expr",
    "Const",
    "IterVar",
    "BinOp",
    "Load",
    "Reduce",
    # schedules and layouts
    "create_schedule",
    "Schedule",
    "Stage",
    "Split",
    "Fuse",
    "RowMajor",
    "PaddedLayout",
    "PackedLayout",
    "Layout",
    # lowering and build
    "lower",
    "build",
    "BuiltFunction",
    "LoopNest",
    "Loop",
    "Access",
    "AffineIndex",
    "BufferInfo",
]
