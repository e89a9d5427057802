"""Builtins of the tile language: the ``tl.*`` namespace and ``tensor`` methods.

Names and signatures follow ``triton.language``; argument checks live in
:mod:`autotile.lang._semantic`.  The builtins are defined by family, as
Triton's documentation groups them:

* :mod:`~autotile.lang._creation`: program ids, ``arange``, ``full``,
  ``zeros``, ``cast``;
* :mod:`~autotile.lang._math`: elementwise math (``where``, ``maximum``,
  ``exp``, ``fma``, ...);
* :mod:`~autotile.lang._reduce`: reductions, scans and ``softmax``;
* :mod:`~autotile.lang._combine`: ``reduce`` and ``associative_scan`` with a
  user combine function (one tensor or a tuple);
* :mod:`~autotile.lang._dot`: the block matrix product;
* :mod:`~autotile.lang._shape`: ``reshape``, ``trans``, ``broadcast_to``,
  ``join``, ``interleave``, ...;
* :mod:`~autotile.lang._gather`: ``gather`` and ``histogram``;
* :mod:`~autotile.lang._sort`: ``sort`` and ``topk``;
* :mod:`~autotile.lang._control`: loop ranges, compiler hints, debugging,
  ``cdiv``.

Loads, stores and atomics are in :mod:`autotile.lang._memory`.  Importing
this module attaches the method forms (``x.to(...)``, ``x.sum(...)``, ...)
to :class:`~autotile.lang._tensor.tensor`.
"""

from __future__ import annotations

from autotile.lang._combine import associative_scan, reduce
from autotile.lang._control import (
    assume,
    cdiv,
    debug_barrier,
    device_assert,
    device_print,
    max_constancy,
    max_contiguous,
    multiple_of,
    next_power_of_2,
    range,
    static_assert,
    static_print,
    static_range,
    swizzle2d,
)
from autotile.lang._creation import arange, cast, full, num_programs, program_id, zeros, zeros_like
from autotile.lang._dot import dot
from autotile.lang._gather import gather, histogram
from autotile.lang._math import (
    PropagateNan,
    abs,
    ceil,
    clamp,
    cos,
    div_rn,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    log,
    log2,
    maximum,
    minimum,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    sqrt_rn,
    umulhi,
    where,
)
from autotile.lang._reduce import (
    argmax,
    argmin,
    cumprod,
    cumsum,
    max,
    min,
    reduce_or,
    softmax,
    sum,
    xor_sum,
)
from autotile.lang._shape import (
    broadcast,
    broadcast_to,
    cat,
    expand_dims,
    flip,
    interleave,
    join,
    permute,
    ravel,
    reshape,
    split,
    trans,
    view,
)
from autotile.lang._sort import sort, topk
from autotile.lang._tensor import constexpr, tensor

__all__ = [
    "program_id", "num_programs", "arange", "zeros", "zeros_like", "full", "cast", "where",
    "maximum", "minimum", "clamp", "PropagateNan", "exp", "exp2", "log", "log2", "sqrt",
    "sqrt_rn", "rsqrt", "abs", "sigmoid", "cos", "sin", "fma", "floor", "ceil", "erf",
    "fdiv", "div_rn", "sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum",
    "cumsum", "cumprod", "associative_scan", "dot", "reshape", "view", "trans", "permute",
    "broadcast_to", "broadcast", "expand_dims", "ravel", "join", "split", "cat", "flip",
    "softmax", "static_range", "range", "multiple_of", "max_contiguous", "max_constancy",
    "debug_barrier", "static_assert", "static_print", "device_assert", "device_print",
    "assume", "cdiv", "next_power_of_2", "umulhi", "gather", "histogram", "interleave",
    "reduce_or", "swizzle2d", "sort", "topk",
]


def _attach() -> None:
    tensor.to = cast  # type: ignore[attr-defined]
    for name in ("sum", "max", "min", "argmax", "argmin", "reduce", "reshape", "view", "trans",
                 "permute", "broadcast_to", "expand_dims", "ravel", "cumsum", "cumprod", "exp",
                 "exp2", "log", "log2", "sqrt", "abs", "sigmoid", "cos", "sin", "split",
                 "xor_sum", "flip", "softmax", "associative_scan", "cast", "histogram",
                 "gather", "sqrt_rn", "rsqrt", "erf", "floor", "ceil", "reduce_or"):
        setattr(tensor, name, globals()[name])


_attach()
__all__ += ["constexpr"]
