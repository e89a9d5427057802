"""Shape builtins: ``reshape``, ``trans``, ``broadcast_to``, ``expand_dims``, ``join``, ...

They move elements between block positions without computing on them (C
order throughout).  A batched operand keeps its program axis in front, so
block axes are shifted by one on its ``pv``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _opcount
from autotile.lang import _semantic as S
from autotile.lang._operands import common, emit
from autotile.lang._state import shape_str
from autotile.lang._tensor import BatchedTensor, tensor, to_tensor, unwrap

__all__ = [
    "reshape", "view", "permute", "trans", "broadcast_to", "broadcast", "expand_dims", "ravel",
    "join", "split", "cat", "flip", "interleave",
]


def _shape_args(shape: tuple[Any, ...], what: str) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(unwrap(shape[0]), (tuple, list)):
        shape = tuple(unwrap(shape[0]))
    return S.check_constexpr_shape(tuple(unwrap(s) for s in shape), what)


def reshape(input: Any, *shape: Any, can_reorder: bool = False) -> tensor:
    """Reshape (C order) to ``shape``; the element count must match.

    Raises
    ------
    LangError
        If the element counts differ.
    """
    t = to_tensor(input)
    shp = _shape_args(shape, "reshape")
    if int(np.prod(shp)) != t.numel:
        raise LangError(f"reshape cannot change the number of elements: {t.shape} -> {shp}")
    _opcount.reshape(t, shp)
    if type(t) is BatchedTensor:
        return BatchedTensor(t.pv.reshape(t.pv.shape[:1] + shp), t.dtype, t.buf)
    emit(f"tt.reshape : {shape_str(t.shape)} -> {shape_str(shp)}")
    return tensor(np.reshape(t.v, shp), t.dtype, t.buf)


def view(input: Any, *shape: Any) -> tensor:
    """Same as :func:`reshape` (elements may be reordered in Triton)."""
    return reshape(input, *shape)


def permute(input: Any, *dims: Any) -> tensor:
    """Permute dimensions by ``dims``.

    Raises
    ------
    LangError
        If ``dims`` is not a permutation of the axes.
    """
    t = to_tensor(input)
    if len(dims) == 1 and isinstance(unwrap(dims[0]), (tuple, list)):
        dims = tuple(unwrap(dims[0]))
    dims = tuple(int(unwrap(d)) for d in dims)
    if sorted(dims) != list(builtins.range(len(t.shape))):
        raise LangError(f"permute dims must be a permutation of range({len(t.shape)}), got {dims}")
    if dims != tuple(builtins.range(len(dims))):
        _opcount.layout(t)
    if type(t) is BatchedTensor:
        return BatchedTensor(np.transpose(t.pv, (0,) + tuple(d + 1 for d in dims)), t.dtype,
                             t.buf)
    emit(f"tt.trans order={list(dims)} : {shape_str(t.shape)}")
    return tensor(np.transpose(t.v, dims), t.dtype, t.buf)


def trans(input: Any, *dims: Any) -> tensor:
    """Transpose; without ``dims`` swaps the two axes of a 2-D tensor."""
    t = to_tensor(input)
    if not dims or (len(dims) == 1 and unwrap(dims[0]) is None):
        if len(t.shape) != 2:
            raise LangError(f"trans without dims needs a 2-D tensor, got shape {t.shape}")
        dims = (1, 0)
    return permute(t, *dims)


def broadcast_to(input: Any, *shape: Any) -> tensor:
    """Broadcast ``input`` to ``shape``.

    Raises
    ------
    LangError
        If the shapes are incompatible.
    """
    t = to_tensor(input)
    shp = _shape_args(shape, "broadcast_to")
    if type(t) is BatchedTensor:
        if len(t.shape) > len(shp):
            raise LangError(f"cannot broadcast shape {t.shape} to {shp}")
        pv = t.pv.reshape(t.pv.shape[:1] + (1,) * (len(shp) - len(t.shape)) + t.shape)
        return BatchedTensor(np.broadcast_to(pv, pv.shape[:1] + shp), t.dtype, t.buf)
    try:
        r = np.broadcast_to(t.v, shp)
    except ValueError:
        raise LangError(f"cannot broadcast shape {t.shape} to {shp}") from None
    emit(f"tt.broadcast : {shape_str(t.shape)} -> {shape_str(shp)}")
    return tensor(r, t.dtype, t.buf)


def broadcast(input: Any, other: Any) -> tuple[tensor, tensor]:
    """Broadcast two tensors to their common shape."""
    a, b = to_tensor(input), to_tensor(other)
    try:
        shp = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise LangError(f"shapes {a.shape} and {b.shape} do not broadcast") from None
    return broadcast_to(a, shp), broadcast_to(b, shp)


def expand_dims(input: Any, axis: Any) -> tensor:
    """Insert size-1 dimensions at ``axis`` (an int or a sequence), as Triton does.

    Axes index the *result*: each must be in ``[-new_ndim, new_ndim)`` where
    ``new_ndim`` is the input's rank plus the number of axes.

    Raises
    ------
    LangError
        If an axis is out of range ("invalid axis ...") or two axes name the
        same dimension ("duplicate axes, normalized axes = [...]").
    """
    t = to_tensor(input)
    axis = unwrap(axis)
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    new_ndim = len(t.shape) + len(axes)
    axes = [S.wrap_axis(unwrap(a), new_ndim) for a in axes]
    if len(set(axes)) != len(axes):
        raise LangError(f"expand_dims received duplicate axes, normalized axes = {axes}")
    if type(t) is BatchedTensor:
        return BatchedTensor(np.expand_dims(t.pv, tuple(a + 1 for a in axes)), t.dtype, t.buf)
    r = np.expand_dims(t.v, tuple(axes))
    emit(f"tt.expand_dims : {shape_str(t.shape)} -> {shape_str(r.shape)}")
    return tensor(r, t.dtype, t.buf)


def ravel(x: Any, can_reorder: bool = False) -> tensor:
    """Flatten to 1-D."""
    t = to_tensor(x)
    return reshape(t, t.numel)


def join(a: Any, b: Any) -> tensor:
    """Stack two same-shape tensors along a new last axis of size 2."""
    x, y = to_tensor(a), to_tensor(b)
    xv, yv, ct = common(x, y)
    return tensor(np.stack(np.broadcast_arrays(xv, yv), axis=-1), ct)


def interleave(a: Any, b: Any) -> tensor:
    """Interleave two same-shape tensors along their last axis (Triton's ``tl.interleave``).

    ``interleave([a0, a1], [b0, b1])`` is ``[a0, b0, a1, b1]``: :func:`join`
    then merge the last two axes; two scalars give a block of shape (2,).
    """
    c = join(a, b)
    if len(c.shape) == 1:
        return c
    return reshape(c, tuple(c.shape[:-2]) + (2 * c.shape[-2],))


def split(a: Any) -> tuple[tensor, tensor]:
    """Split a tensor whose last axis has size 2 into two tensors.

    Raises
    ------
    LangError
        If the last axis is not 2.
    """
    t = to_tensor(a)
    if not t.shape or t.shape[-1] != 2:
        raise LangError(f"split needs a last dimension of size 2, got shape {t.shape}")
    return tensor(t.v[..., 0], t.dtype), tensor(t.v[..., 1], t.dtype)


def cat(input: Any, other: Any, can_reorder: bool = False) -> tensor:
    """Concatenate along axis 0."""
    xv, yv, ct = common(input, other)
    return tensor(np.concatenate([xv, yv], axis=0), ct)


def flip(x: Any, dim: Any = None) -> tensor:
    """Reverse along ``dim`` (the last axis if None)."""
    t = to_tensor(x)
    d = len(t.shape) - 1 if unwrap(dim) is None else S.check_axis(dim, len(t.shape))
    return tensor(np.flip(t.v, d), t.dtype)

