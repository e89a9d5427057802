"""Counting the valid configs of a constrained space by (chunked) enumeration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.space._constraint import Constraint
from autotile.space._knob import MAX_LISTED_VALUES, Knob

__all__ = ["decode_digits", "valid_product_indices", "INT64_LIMIT"]

#: Product indices are int64: spaces of at least this product size are sampled knob by
#: knob and cannot be explicit.
INT64_LIMIT = 1 << 62
_CHUNK = 1 << 18


class _ByPosition:
    """``knob.value_at(i)`` as ``seq[i]``, for a knob too large to list."""

    def __init__(self, knob: Knob) -> None:
        self.knob = knob

    def __getitem__(self, i: int) -> Any:
        return self.knob.value_at(i)


def decode_digits(
    idx: npt.NDArray[np.int64], radices: Sequence[int]
) -> list[npt.NDArray[np.int64]]:
    """Split product indices into per-knob value indices (last knob fastest).

    Parameters
    ----------
    idx : ndarray of shape (m,), dtype int64
        Product indices, ``0 <= idx < prod(radices)``.
    radices : sequence of int
        Number of values of each knob, in knob order.

    Returns
    -------
    list of ndarray of shape (m,)
        One array of value indices per knob.
    """
    digits: list[npt.NDArray[np.int64]] = [np.empty(0, np.int64)] * len(radices)
    rest = idx.copy()
    for k in range(len(radices) - 1, -1, -1):
        rest, digits[k] = np.divmod(rest, radices[k])
    return digits


def valid_product_indices(
    knobs: Sequence[Knob], constraints: Sequence[Constraint], product_size: int
) -> npt.NDArray[np.int64]:
    """Return the sorted product indices of the configs satisfying every constraint.

    Vectorised constraints are evaluated on columns of a chunk first; plain
    constraints then run in Python on the rows that survive.

    Parameters
    ----------
    knobs : sequence of Knob
        Knobs in declaration order.
    constraints : sequence of Constraint
        The constraints.
    product_size : int
        ``prod(len(k) for k in knobs)``; must fit in int64.

    Returns
    -------
    ndarray of shape (n_valid,), dtype int64
        Ascending product indices.
    """
    radices = [len(k) for k in knobs]
    names = [k.name for k in knobs]
    vec = [c for c in constraints if c.vectorized]
    py = [c for c in constraints if not c.vectorized]
    # knobs too large to list (an IntRange of 2**25 values) are read by position
    arrays = [k.value_array() if len(k) <= MAX_LISTED_VALUES else None
              for k in knobs] if vec else []
    lists = [k.values if len(k) <= MAX_LISTED_VALUES else _ByPosition(k)
             for k in knobs] if py else []
    out = []
    for start in range(0, product_size, _CHUNK):
        idx = np.arange(start, min(start + _CHUNK, product_size), dtype=np.int64)
        digits = decode_digits(idx, radices)
        mask = np.ones(idx.shape[0], dtype=bool)
        if vec:
            cols = {n: a[d] if a is not None else k.values_at(d)
                    for n, a, d, k in zip(names, arrays, digits, knobs)}
            for c in vec:
                mask &= c.evaluate_columns(cols, idx.shape[0])
        if py:
            rows = np.flatnonzero(mask)
            columns = [[lst[i] for i in d[rows].tolist()] for lst, d in zip(lists, digits)]
            ok = np.fromiter(
                (all(c(dict(zip(names, combo))) for c in py) for combo in zip(*columns)),
                dtype=bool,
                count=rows.shape[0],
            )
            mask[rows[~ok]] = False
        out.append(idx[mask])
    if not out:
        return np.empty(0, dtype=np.int64)
    return np.concatenate(out)
