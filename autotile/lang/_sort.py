"""Sorting within a block: ``tl.sort`` and ``tl.topk`` (along the last axis).

Triton sorts with a bitonic network over the minor dimension only; the
interpreter gives the same values with ``np.sort`` (a NaN sorts last
ascending, first descending, where the GPU network leaves its place open).

References
----------
Triton, ``python/triton/language/standard.py`` (``sort``, ``topk``), v3.4.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang import _opcount
from autotile.lang._operands import emit
from autotile.lang._state import shape_str
from autotile.lang._tensor import BatchedTensor, tensor, to_tensor, unwrap, values, wrap

__all__ = ["sort", "topk"]


def _minor(t: tensor, dim: Any, name: str) -> None:
    if isinstance(t.dtype, D.pointer_type) or not t.shape:
        raise LangError(f"tl.{name} needs a block of numbers, got {t.dtype} of shape "
                        f"{tuple(t.shape)}")
    dim = unwrap(dim)
    if dim is not None and dim not in (len(t.shape) - 1, -1):
        raise LangError(f"only minor dimension is currently supported: tl.{name} sorts along "
                        f"the last axis ({len(t.shape) - 1}), got dim={dim}")
    n = t.shape[-1]
    if n & (n - 1):
        raise LangError(f"tl.{name} needs a power-of-two last dimension, got shape "
                        f"{tuple(t.shape)}")


def sort(x: Any, dim: Any = None, descending: Any = False) -> tensor:
    """Sort a block along its last axis.

    Parameters
    ----------
    x : tensor
        Block whose last dimension is a power of two.
    dim : int, optional
        Must be None or the last axis (Triton's restriction).
    descending : bool, default=False
        Largest first.

    Returns
    -------
    tensor
        Same shape and dtype.

    Raises
    ------
    LangError
        If ``dim`` is not the last axis or the last dimension is not a
        power of two.
    """
    t = to_tensor(x)
    _minor(t, dim, "sort")
    r = np.sort(values(t), axis=-1)
    if unwrap(descending):
        r = np.flip(r, axis=-1)
    _opcount.reduction(t)
    emit(f"tt.sort : {shape_str(t.shape)}")
    return wrap(np.ascontiguousarray(r), t.dtype, type(t) is BatchedTensor)


def topk(x: Any, k: Any, dim: Any = None) -> tensor:
    """The ``k`` largest values along the last axis, largest first.

    Parameters
    ----------
    x : tensor
        Block whose last dimension is a power of two.
    k : int
        Power of two, at most the last dimension (constexpr).
    dim : int, optional
        Must be None or the last axis.

    Returns
    -------
    tensor
        Shape ``x.shape[:-1] + (k,)``, ``x``'s dtype.

    Raises
    ------
    LangError
        If ``k`` is not a power of two in ``[1, x.shape[-1]]`` or ``dim`` is
        not the last axis.
    """
    t = to_tensor(x)
    _minor(t, dim, "topk")
    k = unwrap(k)
    n = t.shape[-1]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n or k & (k - 1):
        raise LangError(f"tl.topk k must be a power of two in [1, {n}], got k={k!r}")
    r = np.flip(np.sort(values(t), axis=-1), axis=-1)[..., :k]
    _opcount.reduction(t)
    emit(f"tt.topk k={k} : {shape_str(t.shape)}")
    return wrap(np.ascontiguousarray(r), t.dtype, type(t) is BatchedTensor)
