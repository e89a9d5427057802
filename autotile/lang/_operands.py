"""Operand handling shared by the builtins of :mod:`autotile.lang._core`.

IR emission for ``kernel.trace``, ``tl`` dtype arguments, promotion of two
operands to their common type (:func:`~autotile.lang._semantic.computation_type`)
and alignment of batched operands (program axis first) before NumPy
broadcasting.
"""

from __future__ import annotations

import builtins
from typing import Any

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang import _semantic as S
from autotile.lang._state import CURRENT
from autotile.lang._tensor import BatchedTensor, aligned, tensor, to_tensor, unwrap

__all__ = ["emit", "as_dtype", "common", "common_batched", "any_batched", "realign"]


def emit(text: str) -> None:
    """Add ``text`` to the IR listing of the current launch, if one is being recorded."""
    st = CURRENT.get()
    if st is not None and st.ir is not None:
        st.emit(text)


def as_dtype(dtype: Any) -> D.dtype:
    """Check that ``dtype`` (or a constexpr of it) is a ``tl`` dtype and return it."""
    dtype = unwrap(dtype)
    if not isinstance(dtype, D.dtype):
        raise LangError(f"expected a tl dtype such as tl.float32, got {dtype!r}")
    return dtype


def _int_scalar(op: Any) -> bool:
    """Whether ``op`` is a Python int (or a constexpr of one), not a bool."""
    v = unwrap(op)
    return isinstance(v, int) and not isinstance(v, bool)


def _check_scalar(op: Any, ct: Any) -> None:
    """Raise if the Python int ``op`` does not fit ``ct``, as the binary operators do.

    Triton converts a scalar operand of ``where``/``maximum``/... with the same
    rule as ``+``: "Scalar ... is out of range for type ..." and no negative
    scalar with an unsigned tensor.
    """
    if _int_scalar(op) and isinstance(ct, D.dtype) and ct.kind != 3:
        from autotile.lang._arith import _scalar_value
        _scalar_value(unwrap(op), ct)


def common(x: Any, y: Any) -> tuple[Any, Any, Any]:
    """Values of ``x`` and ``y`` promoted to their common type, and that type.

    Raises
    ------
    LangError
        If a Python int operand is out of range for the common integer type.
    """
    tx, ty = isinstance(x, tensor), isinstance(y, tensor)
    xt = x if tx else to_tensor(x)
    yt = y if ty else to_tensor(y)
    if isinstance(xt.dtype, D.pointer_type) or isinstance(yt.dtype, D.pointer_type):
        return xt.v, yt.v, xt.dtype
    ct = S.computation_type(xt.dtype, not tx, yt.dtype, not ty, False)
    _check_scalar(x, ct)
    _check_scalar(y, ct)
    xv = xt.v if xt.dtype is ct else ct.cast(xt.v)
    yv = yt.v if yt.dtype is ct else ct.cast(yt.v)
    return xv, yv, ct


def common_batched(*ops: Any) -> tuple[list[Any], Any, bool]:
    """Values of ``ops`` aligned for broadcasting (program axis first when batched).

    The last two operands are promoted to their common type, as :func:`common`
    does; any operands before them (conditions) are returned unconverted.
    """
    ts = [op if isinstance(op, tensor) else to_tensor(op) for op in ops]
    vals, batched = aligned(*ts)
    xt, yt = ts[-2], ts[-1]
    if isinstance(xt.dtype, D.pointer_type) or isinstance(yt.dtype, D.pointer_type):
        return vals, xt.dtype, batched
    ct = S.computation_type(xt.dtype, not isinstance(ops[-2], tensor), yt.dtype,
                            not isinstance(ops[-1], tensor), False)
    _check_scalar(ops[-2], ct)
    _check_scalar(ops[-1], ct)
    if xt.dtype is not ct:
        vals[-2] = ct.cast(vals[-2])
    if yt.dtype is not ct:
        vals[-1] = ct.cast(vals[-1])
    return vals, ct, batched


def any_batched(*xs: Any) -> bool:
    """Whether any of ``xs`` is a :class:`BatchedTensor`."""
    return any(type(x) is BatchedTensor for x in xs)


def realign(ops: tuple[Any, ...], vals: tuple[Any, ...]) -> list[Any]:
    """Pad batched ``vals`` (program axis first) to the largest block rank of ``ops``."""
    rank = builtins.max(len(to_tensor(o).shape) for o in ops)
    out = []
    for o, v in zip(ops, vals):
        if type(o) is BatchedTensor and v.ndim < rank + 1:
            v = v.reshape(v.shape[:1] + (1,) * (rank + 1 - v.ndim) + v.shape[1:])
        out.append(v)
    return out

