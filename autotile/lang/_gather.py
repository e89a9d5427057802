"""Data-dependent indexing within a block: ``tl.gather`` and ``tl.histogram``.

Both read lanes of a block chosen by the values of another block, without
touching memory.  An index outside the source (``gather``) is an error
naming the first bad one, where the GPU would read an undefined lane; a
``histogram`` value outside ``[0, num_bins)`` is not counted, as in
Triton's interpreter.  A batched launch runs these one program at a time.

References
----------
Triton, ``python/triton/language/core.py`` (``gather``, ``histogram``) and
``semantic.py``, v3.4.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang import _opcount
from autotile.lang import _semantic as S
from autotile.lang._operands import emit
from autotile.lang._state import NeedsSequential, shape_str
from autotile.lang._tensor import BatchedTensor, tensor, to_tensor, unwrap

__all__ = ["gather", "histogram"]


def gather(src: Any, index: Any, axis: Any) -> tensor:
    """Gather ``src`` along ``axis`` at ``index`` (``out[i][j] = src[index[i][j]][j]`` for axis 0).

    Parameters
    ----------
    src : tensor
        The source block.
    index : tensor of int
        Same rank as ``src``; every dimension but ``axis`` equal to
        ``src``'s; values in ``[0, src.shape[axis])``.
    axis : int
        The dimension to gather along (negative counts from the end).

    Returns
    -------
    tensor
        ``index``'s shape, ``src``'s dtype (``np.take_along_axis``).

    Raises
    ------
    LangError
        If ``index`` is not an integer tensor, the ranks or the other
        dimensions differ, ``axis`` is out of range, or an index is outside
        ``src``.
    """
    s, ix = to_tensor(src), to_tensor(index)
    if type(s) is BatchedTensor or type(ix) is BatchedTensor:
        raise NeedsSequential("tl.gather runs one program at a time")
    if isinstance(ix.dtype, D.pointer_type) or ix.dtype.kind not in (1, 2):
        raise LangError(f"index must be an integer tensor, got index of type {ix.dtype}")
    rank = len(s.shape)
    if len(ix.shape) != rank:
        raise LangError(f"source and index tensors must have the same rank, got src of shape "
                        f"{tuple(s.shape)} and index of shape {tuple(ix.shape)}")
    ax = S.wrap_axis(unwrap(axis), rank)
    for d in range(rank):
        if d != ax and ix.shape[d] != s.shape[d]:
            raise LangError(f"index dim {d} must match the corresponding source dim, got src of "
                            f"shape {tuple(s.shape)} and index of shape {tuple(ix.shape)} "
                            f"(axis={ax})")
    iv = np.asarray(ix.v).astype(np.int64)
    bad = (iv < 0) | (iv >= s.shape[ax])
    if bad.any():
        raise LangError(f"tl.gather index out of range: src.shape[{ax}] = {s.shape[ax]}, got "
                        f"index values {sorted(set(iv[bad].tolist()))[:5]}")
    r = np.take_along_axis(np.asarray(s.v), iv, axis=ax)
    _opcount.layout(s)
    emit(f"tt.gather axis={ax} : {shape_str(s.shape)} -> {shape_str(r.shape)}")
    return tensor(r, s.dtype)


def histogram(input: Any, num_bins: Any, mask: Any = None) -> tensor:
    """Count the values of a 1-D integer block in bins ``0 .. num_bins - 1`` of width 1.

    Parameters
    ----------
    input : tensor of int
        1-D block of bin indices.
    num_bins : int
        Number of bins (constexpr).
    mask : tensor of int1, optional
        Lanes to count (broadcast to ``input``'s shape); others are skipped.

    Returns
    -------
    tensor of int32 of shape (num_bins,)
        ``out[b]`` is the number of (unmasked) lanes equal to ``b``; values
        outside ``[0, num_bins)`` are not counted.

    Raises
    ------
    LangError
        If ``input`` is not a 1-D integer block, ``num_bins`` is not a
        positive int, or ``mask`` is not int1.
    """
    t = to_tensor(input)
    nb = unwrap(num_bins)
    m = unwrap(mask)
    if type(t) is BatchedTensor or type(m) is BatchedTensor:
        raise NeedsSequential("tl.histogram runs one program at a time")
    if len(t.shape) != 1:
        raise LangError(f"histogram only supports 1D input, got shape {tuple(t.shape)}")
    if isinstance(t.dtype, D.pointer_type) or t.dtype.kind not in (1, 2):
        raise LangError(f"histogram only supports integer input, got {t.dtype}")
    if isinstance(nb, bool) or not isinstance(nb, (int, np.integer)) or nb < 1:
        raise LangError(f"histogram num_bins must be a positive constexpr int, got num_bins={nb!r}")
    v = np.asarray(t.v).astype(np.int64)
    keep = (v >= 0) & (v < nb)
    if m is not None:
        mt = to_tensor(m)
        if mt.dtype is not D.int1:
            raise LangError(f"Mask must have boolean scalar type, got mask of type {mt.dtype}")
        try:
            keep &= np.broadcast_to(np.asarray(mt.v), v.shape)
        except ValueError:
            raise LangError(f"histogram mask of shape {tuple(mt.shape)} cannot broadcast to the "
                            f"input shape {tuple(t.shape)}") from None
    r = np.bincount(v[keep], minlength=int(nb)).astype(np.int32)
    _opcount.reduction(t)
    emit(f"tt.histogram : {shape_str(t.shape)} -> {shape_str(r.shape)}")
    return tensor(r, D.int32)
