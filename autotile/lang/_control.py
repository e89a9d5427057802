"""Builtins that steer a kernel rather than compute blocks.

Loop ranges (``static_range``, ``range``), compiler hints (``multiple_of``,
``max_contiguous``, ...; no-ops here), debugging (``static_assert``,
``device_assert``, ``device_print``, ...) and the integer helpers ``cdiv``
and ``next_power_of_2``.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang._state import CURRENT, NeedsSequential
from autotile.lang._tensor import tensor, to_tensor, unwrap

__all__ = [
    "static_range", "range", "multiple_of", "max_contiguous", "max_constancy", "assume",
    "debug_barrier", "static_assert", "static_print", "device_assert", "device_print", "cdiv",
    "next_power_of_2", "swizzle2d",
]


def _int(v: Any) -> int:
    v = unwrap(v)
    return int(v)


def static_range(arg1: Any, arg2: Any = None, step: Any = None) -> builtins.range:
    """A Python ``range`` over constexpr bounds (unrolled by Triton)."""
    if arg2 is None:
        return builtins.range(_int(arg1))
    return builtins.range(_int(arg1), _int(arg2), 1 if step is None else _int(step))


class range:  # noqa: N801 - Triton's name
    """``tl.range``: a loop range; pipelining hints (``num_stages``, ...) are ignored."""

    def __init__(self, arg1: Any, arg2: Any = None, step: Any = None, num_stages: Any = None,
                 loop_unroll_factor: Any = None, disallow_acc_multi_buffer: bool = False,
                 flatten: bool = False, warp_specialize: bool = False, **kwargs: Any):
        if arg2 is None:
            self._r = builtins.range(_int(arg1))
        else:
            self._r = builtins.range(_int(arg1), _int(arg2), 1 if step is None else _int(step))

    def __iter__(self) -> Iterator[int]:
        return iter(self._r)


def multiple_of(input: Any, values: Any) -> Any:
    """Compiler hint; returns ``input`` unchanged."""
    return input


def max_contiguous(input: Any, values: Any) -> Any:
    """Compiler hint; returns ``input`` unchanged."""
    return input


def max_constancy(input: Any, values: Any) -> Any:
    """Compiler hint; returns ``input`` unchanged."""
    return input


def assume(cond: Any) -> None:
    """Compiler hint; does nothing."""


def debug_barrier() -> None:
    """Block-level barrier; a no-op in the sequential interpreter."""


def static_assert(cond: Any, msg: str = "") -> None:
    """Assert a compile-time condition.

    Raises
    ------
    LangError
        If ``cond`` is false.
    """
    if not bool(unwrap(cond)):
        raise LangError(f"static_assert failed: {msg}")


def static_print(*values: Any, sep: str = " ", end: str = "\n", file: Any = None,
                 flush: bool = False) -> None:
    """Print at "compile time" (here: when executed, once per program)."""
    _no_batch("static_print")
    print(*values, sep=sep, end=end, file=file, flush=flush)


def device_assert(cond: Any, msg: str = "", mask: Any = None) -> None:
    """Assert that every lane of ``cond`` is true.

    Raises
    ------
    LangError
        If a lane is false.
    """
    c = np.asarray(to_tensor(cond).v)
    if mask is not None:
        c = c | ~np.asarray(to_tensor(mask).v, dtype=bool)
    if not np.all(c):
        st = CURRENT.get()
        where = st.where() if st is not None else "host"
        raise LangError(f"device_assert failed in {where}: {msg}")


def device_print(prefix: str, *args: Any, hex: bool = False) -> None:
    """Print values with the program id."""
    _no_batch("device_print")
    st = CURRENT.get()
    pid = st.pid_tuple() if st is not None else ()
    print(f"pid {pid} {prefix}", *[to_tensor(a).v for a in args])


def _no_batch(what: str) -> None:
    """Send a batched launch back to one program at a time (for per-program side effects)."""
    st = CURRENT.get()
    if st is not None and st.batch is not None:
        raise NeedsSequential(f"tl.{what} runs once per program")


def cdiv(x: Any, div: Any) -> Any:
    """Ceiling division ``(x + div - 1) // div``; plain ints give a plain int."""
    x, div = unwrap(x), unwrap(div)
    if isinstance(x, tensor) or isinstance(div, tensor):
        return (x + div - 1) // div
    return (x + div - 1) // div


def next_power_of_2(n: int) -> int:
    """Smallest power of two ``>= n`` (1 for ``n <= 1``)."""
    n = int(unwrap(n))
    return 1 if n <= 1 else 1 << (n - 1).bit_length()



def swizzle2d(i: Any, j: Any, size_i: Any, size_j: Any, size_g: Any) -> tuple[Any, Any]:
    """Row-major indices ``(i, j)`` of a ``size_i x size_j`` grid, column-major per group of rows.

    Triton's ``tl.swizzle2d`` (``standard.py``): within each group of
    ``size_g`` rows (the last group may be shorter) consecutive linear
    indices walk down the rows first, the grouped ordering of a tiled
    matmul.  Works on ints and int tensors alike.

    Returns
    -------
    tuple
        ``(new_i, new_j)``.
    """
    from autotile.lang._math import minimum

    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = minimum(size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % size_g, ij // size_g
