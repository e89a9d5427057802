"""Reductions and scans: ``sum``, ``max``, ``argmax``, ``cumsum``, ...

A reduction along ``axis`` (all axes when None) removes that axis unless
``keep_dims``.  Result types are Triton's (``python/triton/language/standard.py``
v3.4): ``sum``/``cumsum`` widen integers narrower than 32 bits to int32
(signed) or uint32 (unsigned and int1), ``max``/``min`` widen types narrower
than 32 bits to int32/float32, bfloat16 scans and ``max``/``min`` work in
float32.  Integer results wrap around in their type, as on the GPU.
``softmax`` is here too: a ``max`` and ``sum`` along ``dim`` (default 0) around ``exp``.
``tl.reduce`` and ``tl.associative_scan`` (user combine functions) are in
:mod:`autotile.lang._combine`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang import _opcount
from autotile.lang import _semantic as S
from autotile.lang._math import exp
from autotile.lang._operands import as_dtype, emit
from autotile.lang._state import CURRENT, shape_str
from autotile.lang._tensor import BatchedTensor, tensor, to_tensor, unwrap, values

__all__ = [
    "sum", "xor_sum", "reduce_or", "max", "min", "argmax", "argmin", "cumsum", "cumprod", "softmax",
    "sum_dtype",
]


def _red_prep(input: Any, axis: Any, name: str) -> tuple[tensor, Any]:
    t = to_tensor(input)
    if isinstance(t.dtype, D.pointer_type):
        raise LangError(f"tl.{name} cannot reduce pointers")
    axis = unwrap(axis)
    if axis is None:
        return t, None
    return t, S.check_axis(axis, len(t.shape))


def _red_in(t: tensor, v: Any, ax: Any, contiguous: bool = False) -> tuple[Any, Any]:
    """Values and NumPy axis of a reduction of ``t`` (values ``v``) along block axis ``ax``.

    ``ax=None`` reduces the flattened block.  With ``contiguous`` the values
    are made C-contiguous first, so a float sum adds in the same order in one
    program and in a batch of programs (NumPy's order depends on the layout).
    """
    if contiguous and isinstance(v, np.ndarray) and not v.flags.c_contiguous:
        v = np.ascontiguousarray(v)
    if type(t) is BatchedTensor:
        if ax is None:
            return v.reshape(v.shape[0], -1), 1
        return v, ax + 1
    if ax is None:
        return np.reshape(v, -1), 0
    return v, ax


def _red_finish(r: Any, t: tensor, axis: Any, keep_dims: bool, dt: Any, name: str) -> tensor:
    _opcount.reduction(t)
    if type(t) is BatchedTensor:
        if keep_dims:
            r = np.reshape(r, r.shape[:1] + (1,) * len(t.shape)) if axis is None else \
                np.expand_dims(r, axis + 1)
        return BatchedTensor(r, dt)
    if keep_dims:
        if axis is None:
            r = np.reshape(r, (1,) * len(t.shape))
        else:
            r = np.expand_dims(r, axis)
    if np.ndim(r) == 0:
        r = np.asarray(r)[()]
    st = CURRENT.get()
    if st is not None and st.ir is not None:
        ax = "None" if axis is None else axis
        st.emit(f"tt.reduce({name}) axis={ax} : {shape_str(t.shape)} -> "
                f"{shape_str(np.shape(r))}")
    return tensor(r, dt)


def sum_dtype(dt: Any, dtype: Any = None) -> Any:
    """Type ``tl.sum``/``tl.cumsum`` of ``dt`` accumulate in (Triton's ``_pick_sum_dtype``).

    ``dtype`` when given; else int8/int16 sum in int32 and int1/uint8/uint16
    in uint32 (Triton counts int1 as unsigned); every other type in itself.
    """
    if unwrap(dtype) is not None:
        return as_dtype(dtype)
    if dt.kind != 3 and dt.bits < 32:
        return D.int32 if dt.kind == 2 else D.uint32
    return dt


def sum(input: Any, axis: Any = None, keep_dims: bool = False, dtype: Any = None) -> tensor:
    """Sum along ``axis`` (all axes if None), in the type :func:`sum_dtype` picks.

    The result has that type: int8/int16 give int32, int1/uint8/uint16 give
    uint32, ``dtype=`` casts first; integer sums wrap around in it (two's
    complement, as on the GPU; an int1 sum is the count modulo 2).  float16,
    bfloat16 and fp8 sums keep their type; the interpreter accumulates them in
    float32 and rounds the result.
    """
    t, ax = _red_prep(input, axis, "sum")
    dt = sum_dtype(t.dtype, dtype)
    v = values(t)
    if dt is not t.dtype:
        v = dt.cast(v)
    v, nax = _red_in(t, v, ax, contiguous=True)
    if dt is D.float16 or dt.rounds:  # float16, bfloat16, fp8: float32 accumulator
        r = dt.cast(np.sum(np.asarray(v, np.float32), axis=nax))
    elif dt is D.int1:  # int1 wraps modulo 2 on the GPU (NumPy's bool sum would be a logical or)
        r = (np.sum(v, axis=nax, dtype=np.int64) & 1).astype(dt.np)
    else:
        r = np.sum(v, axis=nax, dtype=dt.np)
    return _red_finish(r, t, ax, keep_dims, dt, "add")


def xor_sum(input: Any, axis: Any = None, keep_dims: bool = False) -> tensor:
    """Bitwise xor along ``axis``."""
    t, ax = _red_prep(input, axis, "xor_sum")
    v, nax = _red_in(t, np.asarray(values(t)), ax)
    r = np.bitwise_xor.reduce(v, axis=nax)
    return _red_finish(r, t, ax, keep_dims, t.dtype, "xor")


def reduce_or(input: Any, axis: Any, keep_dims: bool = False) -> tensor:
    """Bitwise or along ``axis`` (integers only, as Triton's ``tl.reduce_or``).

    Raises
    ------
    LangError
        If ``input`` is not an integer tensor.
    """
    t, ax = _red_prep(input, axis, "reduce_or")
    if t.dtype.kind == 3:
        raise LangError(f"reduce_or only supported for integers, got {t.dtype}")
    v, nax = _red_in(t, np.asarray(values(t)), ax)
    r = np.bitwise_or.reduce(v, axis=nax)
    return _red_finish(r, t, ax, keep_dims, t.dtype, "or")


def _maxmin(input: Any, axis: Any, return_indices: bool, keep_dims: bool, is_max: bool) -> Any:
    name = "max" if is_max else "min"
    t, ax = _red_prep(input, axis, name)
    # Triton's tl.max/tl.min: bfloat16 compares in float32; without indices, a type
    # narrower than 32 bits is widened first (floats to float32, integers to int32)
    dt = t.dtype
    if dt is D.bfloat16 or (not unwrap(return_indices) and dt.bits < 32):
        dt = D.float32 if dt.kind == 3 else D.int32
    v = values(t) if dt is t.dtype else dt.cast(values(t))
    v, nax = _red_in(t, np.asarray(v), ax)
    if dt.kind == 3:
        r = (np.fmax if is_max else np.fmin).reduce(v, axis=nax)
    else:
        r = (np.max if is_max else np.min)(v, axis=nax)
    out = _red_finish(r, t, ax, keep_dims, dt, name)
    if unwrap(return_indices):
        idx = (argmax if is_max else argmin)(t, ax, keep_dims=keep_dims)
        return out, idx
    return out


def max(input: Any, axis: Any = None, return_indices: bool = False,
        return_indices_tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Maximum along ``axis`` (NaN loses unless all lanes are NaN, as ``max.f32``).

    The result type is Triton's: bfloat16 gives float32, and without
    ``return_indices`` a type narrower than 32 bits is widened (float16 and
    fp8 to float32, int8/int16/uint8/uint16/int1 to int32).  With
    ``return_indices`` also the index of :func:`argmax` (same NaN rule, so
    the index points at the returned value).
    """
    return _maxmin(input, axis, return_indices, keep_dims, True)


def min(input: Any, axis: Any = None, return_indices: bool = False,
        return_indices_tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Minimum along ``axis`` (NaN loses unless all lanes are NaN, as ``min.f32``).

    Result types as :func:`max`.  With ``return_indices`` also the index of
    :func:`argmin` (same NaN rule).
    """
    return _maxmin(input, axis, return_indices, keep_dims, False)


def _argext(input: Any, axis: Any, tie_break_left: bool, keep_dims: bool, is_max: bool) -> Any:
    name = "argmax" if is_max else "argmin"
    t, ax = _red_prep(input, axis, name)
    v, a = _red_in(t, np.asarray(values(t)), ax)
    left = unwrap(tie_break_left)
    if t.dtype.kind == 3:
        # the lanes equal to the NaN-ignoring extremum (as tl.max/tl.min); all of them
        # when every lane is NaN
        m = (np.fmax if is_max else np.fmin).reduce(v, axis=a, keepdims=True)
        hit = (v == m) | np.isnan(m)
        if left:
            r = np.argmax(hit, axis=a)
        else:
            r = v.shape[a] - 1 - np.argmax(np.flip(hit, axis=a), axis=a)
    elif left:
        r = (np.argmax if is_max else np.argmin)(v, axis=a)
    else:
        f = np.flip(v, axis=a)
        r = v.shape[a] - 1 - (np.argmax if is_max else np.argmin)(f, axis=a)
    return _red_finish(np.asarray(r, dtype=np.int32), t, ax, keep_dims, D.int32, name)


def argmax(input: Any, axis: Any, tie_break_left: bool = True, keep_dims: bool = False) -> tensor:
    """Index (int32) of the maximum along ``axis``, with the NaN rule of :func:`max`.

    Parameters
    ----------
    input : tensor
        The block.
    axis : int or None
        Axis to reduce (None: the flattened block).
    tie_break_left : bool, default=True
        Ties go to the lowest index; with False, to the highest (Triton
        leaves that order unspecified).
    keep_dims : bool, default=False
        Keep the reduced axis with length 1.

    Returns
    -------
    tensor of int32
        For floats, the index of a lane equal to ``tl.max(input, axis)``:
        NaN lanes are ignored, as ``max`` (``max.f32``/``fmaxf``) ignores
        them, so ``x[argmax(x)] == max(x)``; ``[1, nan, 5, 2]`` gives 2.  A
        row whose lanes are all NaN (``max`` is NaN) gives index 0 (the last
        index with ``tie_break_left=False``).  On the GPU, Triton's argmax
        combine (``value1 > value2``) has no NaN rule: a NaN lane wins or
        loses depending on its place in the reduction tree (Triton #10291,
        #10697); the interpreter's rule is the one ``max`` already follows.
    """
    return _argext(input, axis, tie_break_left, keep_dims, True)  # type: ignore[no-any-return]


def argmin(input: Any, axis: Any, tie_break_left: bool = True, keep_dims: bool = False) -> tensor:
    """Index (int32) of the minimum along ``axis``, with the NaN rule of :func:`min`.

    NaN lanes are ignored as ``min`` ignores them (``[1, nan, 5, 2]`` gives
    0); an all-NaN row gives index 0 (the last index with
    ``tie_break_left=False``); ties go to the lowest index.  See
    :func:`argmax`.
    """
    return _argext(input, axis, tie_break_left, keep_dims, False)  # type: ignore[no-any-return]


def _scan(input: Any, axis: int, reverse: bool, fn: Any, name: str, dt: Any) -> tensor:
    """Inclusive ``fn`` (``np.cumsum``/``np.cumprod``) of ``input`` along ``axis`` in ``dt``."""
    t = to_tensor(input)
    ax = S.check_axis(axis, len(t.shape))
    v = np.asarray(t.v if dt is t.dtype else dt.cast(t.v))
    if reverse:
        v = np.flip(v, ax)
    if dt.kind == 3:
        # float16 adds in float16 step by step (NumPy); bfloat16 never gets here (float32);
        # fp8 accumulates in float32 and is rounded once
        r = dt.cast(fn(v.astype(np.float32) if dt.rounds else v, axis=ax))
    elif dt is D.int1:  # int1 wraps modulo 2 on the GPU (NumPy's bool sum would be a logical or)
        r = (fn(v, axis=ax, dtype=np.int64) & 1).astype(dt.np)
    else:
        r = fn(v, axis=ax, dtype=dt.np)  # wraps in dt, as the GPU's integer adds/multiplies
    _opcount.reduction(t)
    if reverse:
        r = np.flip(r, ax)
    emit(f"tt.scan({name}) axis={ax} : {shape_str(t.shape)}")
    return tensor(r, dt)


def _scan_input_dtype(input: Any) -> Any:
    """The dtype of ``input``, bfloat16 promoted to float32 (Triton's scans)."""
    dt = to_tensor(input).dtype
    if isinstance(dt, D.pointer_type):
        raise LangError("a scan cannot combine pointers")
    return D.float32 if dt is D.bfloat16 else dt


def cumsum(input: Any, axis: int = 0, reverse: bool = False, dtype: Any = None) -> tensor:
    """Inclusive prefix sum along ``axis``, in the type :func:`sum_dtype` picks.

    bfloat16 is promoted to float32 first (Triton), then int8/int16 scan in
    int32 and int1/uint8/uint16 in uint32 unless ``dtype=`` names a type;
    the result has that type and integer sums wrap around in it.
    """
    return _scan(input, axis, reverse, np.cumsum, "add",
                 sum_dtype(_scan_input_dtype(input), dtype))


def cumprod(input: Any, axis: int = 0, reverse: bool = False) -> tensor:
    """Inclusive prefix product along ``axis``.

    bfloat16 is promoted to float32 (Triton); every other type keeps its
    type, and integer products wrap around in it (an int8 product is an
    int8, as on the GPU).
    """
    return _scan(input, axis, reverse, np.cumprod, "mul", _scan_input_dtype(input))


def softmax(x: Any, dim: Any = None, keep_dims: bool = False,
            ieee_rounding: bool = False) -> tensor:
    """Softmax along ``dim``: ``exp(x - max) / sum(exp(x - max))``.

    Triton's ``standard.softmax`` (v3.4): ``dim`` defaults to 0, not to the
    last axis, and the row ``max`` and ``sum`` are taken with ``keep_dims``.
    Without ``keep_dims`` they broadcast against ``x`` from the right, as in
    Triton, so ``dim`` other than 0 needs ``keep_dims=True`` unless the
    shapes happen to broadcast.  The result type follows ``max``: float16
    and narrower floats give float32.

    Parameters
    ----------
    x : tensor
        Floating-point block.
    dim : int, default=None
        Axis to normalise along; None means 0.
    keep_dims : bool, default=False
        Keep the reduced axis (size 1) in the row max and sum.
    ieee_rounding : bool, default=False
        Accepted for Triton's signature; the division is always IEEE here.
    """
    t = to_tensor(x)
    d = unwrap(dim)
    d = 0 if d is None else d
    z = t - max(t, d, keep_dims=keep_dims)
    num = exp(z)
    return num / sum(num, d, keep_dims=keep_dims)
