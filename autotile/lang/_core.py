"""Builtins of the tile language: creation, math, reductions, ``dot``, casts, shapes.

Names and signatures follow ``triton.language``; argument checks live in
:mod:`autotile.lang._semantic`.
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Iterator
from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang import _semantic as S
from autotile.lang._state import CURRENT, NeedsSequential, current, shape_str, type_str
from autotile.lang._tensor import (
    BatchedTensor,
    aligned,
    binary,
    constexpr,
    tensor,
    to_tensor,
    unwrap,
    values,
)

__all__ = [
    "program_id", "num_programs", "arange", "zeros", "zeros_like", "full", "cast", "where",
    "maximum", "minimum", "clamp", "PropagateNan", "exp", "exp2", "log", "log2", "sqrt",
    "sqrt_rn", "rsqrt", "abs", "sigmoid", "cos", "sin", "fma", "floor", "ceil", "erf",
    "fdiv", "div_rn", "sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum",
    "cumsum", "cumprod", "associative_scan", "dot", "reshape", "view", "trans", "permute",
    "broadcast_to", "broadcast", "expand_dims", "ravel", "join", "split", "cat", "flip",
    "softmax", "static_range", "range", "multiple_of", "max_contiguous", "max_constancy",
    "debug_barrier", "static_assert", "static_print", "device_assert", "device_print",
    "assume", "cdiv", "next_power_of_2",
]


def _emit(text: str) -> None:
    st = CURRENT.get()
    if st is not None and st.ir is not None:
        st.emit(text)


# -- program ids and creation ------------------------------------------------------------
def program_id(axis: int) -> tensor:
    """Return the id of the current program along ``axis`` (0, 1 or 2), an int32 scalar.

    In a batched launch it is a :class:`BatchedTensor` holding the id of every
    program of the batch (a plain scalar when they all share it).
    """
    st = current("program_id")
    axis = unwrap(axis)
    if axis not in (0, 1, 2):
        raise LangError(f"program_id axis must be 0, 1, or 2 but got {axis}")
    st.emit(f"tt.get_program_id axis={axis}")
    return st.pid_tensors[axis]  # type: ignore[no-any-return]


def num_programs(axis: int) -> tensor:
    """Return the number of programs launched along ``axis`` (0, 1 or 2), an int32 scalar."""
    st = current("num_programs")
    axis = unwrap(axis)
    if axis not in (0, 1, 2):
        raise LangError(f"num_programs axis must be 0, 1, or 2 but got {axis}")
    st.emit(f"tt.get_num_programs axis={axis}")
    return tensor(np.int32(st.grid[axis]), D.int32)


def arange(start: int, end: int) -> tensor:
    """Return the int32 block ``[start, end)``; ``end - start`` must be a power of two.

    Raises
    ------
    LangError
        If ``start``/``end`` are not constexpr ints or the length is not a power of two.
    """
    start, end = unwrap(start), unwrap(end)
    st = CURRENT.get()
    key = (start, end)
    if st is not None:
        v = st.arange_cache.get(key)
        if v is None:
            S.check_power_of_two_range(start, end)
            v = np.arange(start, end, dtype=np.int32)
            v.flags.writeable = False
            st.arange_cache[key] = v
        if st.ir is not None:
            st.emit(f"tt.make_range {{start={start}, end={end}}} : {type_str(v.shape, D.int32)}")
        return tensor(v, D.int32)
    S.check_power_of_two_range(start, end)
    return tensor(np.arange(start, end, dtype=np.int32), D.int32)


def _dt(dtype: Any) -> D.dtype:
    dtype = unwrap(dtype)
    if not isinstance(dtype, D.dtype):
        raise LangError(f"expected a tl dtype such as tl.float32, got {dtype!r}")
    return dtype


def full(shape: Any, value: Any, dtype: Any) -> tensor:
    """Return a block of ``shape`` filled with ``value`` cast to ``dtype``.

    Raises
    ------
    LangError
        If ``shape`` is not a tuple of constexpr ints.
    """
    shp = S.check_constexpr_shape(unwrap(shape), "full")
    dt = _dt(dtype)
    v = unwrap(value)
    if isinstance(v, tensor):
        v = v.v
    arr = np.empty(shp, dtype=dt.np)
    arr[...] = dt.cast(np.asarray(v))
    _emit(f"arith.constant : {type_str(shp, dt)}")
    return tensor(arr, dt)


def zeros(shape: Any, dtype: Any) -> tensor:
    """Return a block of zeros of ``shape`` and ``dtype``."""
    shp = S.check_constexpr_shape(unwrap(shape), "zeros")
    dt = _dt(dtype)
    _emit(f"arith.constant : {type_str(shp, dt)}")
    return tensor(np.zeros(shp, dtype=dt.np), dt)


def zeros_like(input: Any) -> tensor:
    """Return zeros with the shape and dtype of ``input``."""
    t = to_tensor(input)
    return tensor(np.zeros(t.shape, dtype=t.dtype.np), t.dtype)


# -- casts -------------------------------------------------------------------------------
def cast(input: Any, dtype: Any, fp_downcast_rounding: str | None = None,
         bitcast: bool = False) -> tensor:
    """Cast ``input`` to ``dtype`` (``x.to(dtype)``).

    Float to int truncates toward zero and saturates (NaN gives 0), as the
    GPU's ``cvt.rzi``; float narrowing rounds to nearest even.  With
    ``bitcast=True`` the bits are reinterpreted (equal widths required).

    Raises
    ------
    LangError
        For a bitcast between types of different widths.
    """
    t = to_tensor(input)
    dt = _dt(dtype)
    src = t.dtype
    if isinstance(src, D.pointer_type):
        raise LangError(f"cannot cast a pointer to {dt}")
    if src is dt:
        return t
    batched = type(t) is BatchedTensor
    v = values(t)
    if unwrap(bitcast):
        if src.bits != dt.bits:
            raise LangError(f"bitcast needs equal bit widths, got {src} ({src.bits}) -> "
                            f"{dt} ({dt.bits})")
        raw = np.asarray(src.to_storage(v)).view(dt.storage)
        r: Any = dt.to_compute(raw)
    elif dt.kind in (1, 2) and src.kind == 3:
        f = np.asarray(v, dtype=np.float64)
        info = np.iinfo(dt.np)
        r = np.clip(np.nan_to_num(np.trunc(f), nan=0.0), info.min, info.max).astype(dt.np)
    else:
        r = dt.cast(v)
    if batched:
        return BatchedTensor(r, dt)
    if np.ndim(r) == 0:
        r = np.asarray(r)[()]
    _emit(f"tt.cast {src}->{dt} : {shape_str(np.shape(r))}")
    return tensor(r, dt)


# -- elementwise -------------------------------------------------------------------------
class PropagateNan(enum.Enum):
    """NaN policy of ``maximum``/``minimum`` (Triton's ``tl.PropagateNan``)."""

    NONE = 0
    ALL = 0xFFFF


def _common(x: Any, y: Any) -> tuple[Any, Any, Any]:
    tx, ty = isinstance(x, tensor), isinstance(y, tensor)
    xt = x if tx else to_tensor(x)
    yt = y if ty else to_tensor(y)
    if isinstance(xt.dtype, D.pointer_type) or isinstance(yt.dtype, D.pointer_type):
        return xt.v, yt.v, xt.dtype
    ct = S.computation_type(xt.dtype, not tx, yt.dtype, not ty, False)
    xv = xt.v if xt.dtype is ct else ct.cast(xt.v)
    yv = yt.v if yt.dtype is ct else ct.cast(yt.v)
    return xv, yv, ct


def _common_batched(*ops: Any) -> tuple[list[Any], Any, bool]:
    """Values of ``ops`` aligned for broadcasting (program axis first when batched).

    The last two operands are promoted to their common type, as :func:`_common`
    does; any operands before them (conditions) are returned unconverted.
    """
    ts = [op if isinstance(op, tensor) else to_tensor(op) for op in ops]
    vals, batched = aligned(*ts)
    xt, yt = ts[-2], ts[-1]
    if isinstance(xt.dtype, D.pointer_type) or isinstance(yt.dtype, D.pointer_type):
        return vals, xt.dtype, batched
    ct = S.computation_type(xt.dtype, not isinstance(ops[-2], tensor), yt.dtype,
                            not isinstance(ops[-1], tensor), False)
    if xt.dtype is not ct:
        vals[-2] = ct.cast(vals[-2])
    if yt.dtype is not ct:
        vals[-1] = ct.cast(vals[-1])
    return vals, ct, batched


def _any_batched(*xs: Any) -> bool:
    return any(type(x) is BatchedTensor for x in xs)


def _realign(ops: tuple[Any, ...], vals: tuple[Any, ...]) -> list[Any]:
    """Pad batched ``vals`` (program axis first) to the largest block rank of ``ops``."""
    rank = builtins.max(len(to_tensor(o).shape) for o in ops)
    out = []
    for o, v in zip(ops, vals):
        if type(o) is BatchedTensor and v.ndim < rank + 1:
            v = v.reshape(v.shape[:1] + (1,) * (rank + 1 - v.ndim) + v.shape[1:])
        out.append(v)
    return out


def where(condition: Any, x: Any, y: Any) -> tensor:
    """Select ``x`` where ``condition`` is true, else ``y`` (broadcasting)."""
    buf = x.buf if isinstance(x, tensor) and x.buf is not None else getattr(y, "buf", None)
    if _any_batched(condition, x, y):
        c = to_tensor(condition)
        (cv, xv, yv), ct, _ = _common_batched(c, x, y)
        if c.dtype is not D.int1:
            cv = cv != 0
        return BatchedTensor(np.where(cv, xv, yv), ct, buf)
    c = to_tensor(condition)
    cv = c.v if c.dtype is D.int1 else (c.v != 0)
    xv, yv, ct = _common(x, y)
    try:
        r = np.where(cv, xv, yv)
    except ValueError:
        raise LangError(f"where: shapes {c.shape}, {np.shape(xv)} and {np.shape(yv)} do not "
                        "broadcast") from None
    if r.ndim == 0:
        r = r[()]
    _emit(f"arith.select : {shape_str(np.shape(r))}")
    return tensor(r, ct, buf)


def _minmax(x: Any, y: Any, nan_fn: Any, num_fn: Any, propagate_nan: Any, name: str) -> tensor:
    if _any_batched(x, y):
        (xv, yv), ct, _ = _common_batched(x, y)
        fn = num_fn if ct.kind != 3 or propagate_nan != PropagateNan.ALL else nan_fn
        return BatchedTensor(fn(xv, yv), ct)
    xv, yv, ct = _common(x, y)
    fn = num_fn if ct.kind != 3 or propagate_nan != PropagateNan.ALL else nan_fn
    try:
        r = fn(xv, yv)
    except ValueError:
        raise LangError(f"{name}: shapes {np.shape(xv)} and {np.shape(yv)} do not "
                        "broadcast") from None
    _emit(f"arith.{name}{'f' if ct.kind == 3 else 'i'} : {shape_str(np.shape(r))}")
    return tensor(r, ct)


def maximum(x: Any, y: Any, propagate_nan: PropagateNan = PropagateNan.NONE) -> tensor:
    """Elementwise maximum.  With ``PropagateNan.NONE`` (default) a NaN loses, as ``max.f32``."""
    return _minmax(x, y, np.maximum, np.fmax, propagate_nan, "max")


def minimum(x: Any, y: Any, propagate_nan: PropagateNan = PropagateNan.NONE) -> tensor:
    """Elementwise minimum.  With ``PropagateNan.NONE`` (default) a NaN loses, as ``min.f32``."""
    return _minmax(x, y, np.minimum, np.fmin, propagate_nan, "min")


def clamp(x: Any, min: Any, max: Any, propagate_nan: PropagateNan = PropagateNan.NONE) -> tensor:
    """Clamp ``x`` to ``[min, max]``."""
    return minimum(maximum(x, min, propagate_nan), max, propagate_nan)


def _math1(x: Any, fn: Any, name: str, allow_int: bool = False) -> tensor:
    t = to_tensor(x)
    dt = t.dtype
    if isinstance(dt, D.pointer_type) or (dt.kind != 3 and not allow_int):
        raise LangError(f"tl.{name} expects a floating-point tensor, got {dt}")
    v = values(t)
    if dt is D.float16:
        r = fn(np.asarray(v, dtype=np.float32)).astype(np.float16)
    elif dt is D.bfloat16:
        r = D.round_to_bf16(fn(v))
    else:
        r = fn(v)
    if type(t) is BatchedTensor:
        return BatchedTensor(r, dt)
    if np.ndim(r) == 0:
        r = np.asarray(r)[()]
    _emit(f"math.{name} : {shape_str(np.shape(r))}")
    return tensor(r, dt)


def exp(x: Any) -> tensor:
    """Elementwise ``e**x``."""
    return _math1(x, np.exp, "exp")


def exp2(x: Any) -> tensor:
    """Elementwise ``2**x``."""
    return _math1(x, np.exp2, "exp2")


def log(x: Any) -> tensor:
    """Elementwise natural logarithm."""
    return _math1(x, np.log, "log")


def log2(x: Any) -> tensor:
    """Elementwise base-2 logarithm."""
    return _math1(x, np.log2, "log2")


def sqrt(x: Any) -> tensor:
    """Elementwise square root."""
    return _math1(x, np.sqrt, "sqrt")


def sqrt_rn(x: Any) -> tensor:
    """Elementwise square root, rounded to nearest."""
    return _math1(x, np.sqrt, "sqrt")


def rsqrt(x: Any) -> tensor:
    """Elementwise ``1 / sqrt(x)``."""
    return _math1(x, lambda v: 1.0 / np.sqrt(v), "rsqrt")


def abs(x: Any) -> tensor:
    """Elementwise absolute value (ints and floats)."""
    return _math1(x, np.abs, "absf", allow_int=True)


def cos(x: Any) -> tensor:
    """Elementwise cosine."""
    return _math1(x, np.cos, "cos")


def sin(x: Any) -> tensor:
    """Elementwise sine."""
    return _math1(x, np.sin, "sin")


def floor(x: Any) -> tensor:
    """Elementwise floor."""
    return _math1(x, np.floor, "floor")


def ceil(x: Any) -> tensor:
    """Elementwise ceiling."""
    return _math1(x, np.ceil, "ceil")


def erf(x: Any) -> tensor:
    """Elementwise error function."""
    from scipy.special import erf as _erf

    return _math1(x, _erf, "erf")


def sigmoid(x: Any) -> tensor:
    """Elementwise ``1 / (1 + exp(-x))`` (Triton's composition, same result dtype)."""
    t = to_tensor(x)
    return 1 / (1 + exp(-t))


def softmax(x: Any, ieee_rounding: bool = False) -> tensor:
    """Softmax over the last axis: ``exp(x - max) / sum(exp(x - max))``."""
    t = to_tensor(x)
    ax = len(t.shape) - 1
    z = t - max(t, ax, keep_dims=True)
    num = exp(z)
    return num / sum(num, ax, keep_dims=True)


def fma(x: Any, y: Any, z: Any) -> tensor:
    """Fused multiply-add ``x * y + z`` with one rounding."""
    batched = _any_batched(x, y, z)
    if batched:
        zt = to_tensor(z)
        (xv, yv), ct, _ = _common_batched(x, y)
        xv, yv, zv = _realign((x, y, zt), (xv, yv, values(zt)))
    else:
        xv, yv, ct = _common(x, y)
        zt = to_tensor(z)
        zv = zt.v
    ct = S.computation_type(ct, False, zt.dtype, not isinstance(z, tensor), False)
    if ct.kind == 3 and ct is not D.float64:
        r = ct.cast(np.asarray(xv, np.float64) * np.asarray(yv, np.float64)
                    + np.asarray(zv, np.float64))
    else:
        r = ct.cast(np.asarray(xv) * np.asarray(yv) + np.asarray(zv))
    if batched:
        return BatchedTensor(r, ct)
    if np.ndim(r) == 0:
        r = np.asarray(r)[()]
    _emit(f"math.fma : {shape_str(np.shape(r))}")
    return tensor(r, ct)


def fdiv(x: Any, y: Any, ieee_rounding: bool = False) -> tensor:
    """Floating-point division ``x / y``."""
    return binary(x, y, "truediv")


def div_rn(x: Any, y: Any) -> tensor:
    """Floating-point division rounded to nearest."""
    return binary(x, y, "truediv")


# -- reductions --------------------------------------------------------------------------
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


def sum(input: Any, axis: Any = None, keep_dims: bool = False, dtype: Any = None) -> tensor:
    """Sum along ``axis`` (all axes if None).

    Integers narrower than 32 bits (and int1) sum in int32; float16 and
    bfloat16 accumulate in float32 and round the result back.
    """
    t, ax = _red_prep(input, axis, "sum")
    dt = t.dtype
    v = values(t)
    if unwrap(dtype) is not None:
        dt = _dt(dtype)
        v = dt.cast(v)
    elif dt.kind != 3 and dt.bits < 32:
        dt = D.int32 if dt.kind != 1 else D.uint32
        v = np.asarray(v).astype(dt.np)
    v, nax = _red_in(t, v, ax, contiguous=True)
    if dt in (D.float16, D.bfloat16):
        r = dt.cast(np.sum(np.asarray(v, np.float32), axis=nax))
    else:
        r = np.sum(v, axis=nax, dtype=dt.np)
    return _red_finish(r, t, ax, keep_dims, dt, "add")


def xor_sum(input: Any, axis: Any = None, keep_dims: bool = False) -> tensor:
    """Bitwise xor along ``axis``."""
    t, ax = _red_prep(input, axis, "xor_sum")
    v, nax = _red_in(t, np.asarray(values(t)), ax)
    r = np.bitwise_xor.reduce(v, axis=nax)
    return _red_finish(r, t, ax, keep_dims, t.dtype, "xor")


def _maxmin(input: Any, axis: Any, return_indices: bool, keep_dims: bool, is_max: bool) -> Any:
    name = "max" if is_max else "min"
    t, ax = _red_prep(input, axis, name)
    v, nax = _red_in(t, np.asarray(values(t)), ax)
    if t.dtype.kind == 3:
        r = (np.fmax if is_max else np.fmin).reduce(v, axis=nax)
    else:
        r = (np.max if is_max else np.min)(v, axis=nax)
    out = _red_finish(r, t, ax, keep_dims, t.dtype, name)
    if unwrap(return_indices):
        idx = (argmax if is_max else argmin)(t, ax, keep_dims=keep_dims)
        return out, idx
    return out


def max(input: Any, axis: Any = None, return_indices: bool = False,
        return_indices_tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Maximum along ``axis`` (NaN loses unless all lanes are NaN, as ``max.f32``)."""
    return _maxmin(input, axis, return_indices, keep_dims, True)


def min(input: Any, axis: Any = None, return_indices: bool = False,
        return_indices_tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Minimum along ``axis`` (NaN loses unless all lanes are NaN, as ``min.f32``)."""
    return _maxmin(input, axis, return_indices, keep_dims, False)


def _argext(input: Any, axis: Any, tie_break_left: bool, keep_dims: bool, is_max: bool) -> Any:
    name = "argmax" if is_max else "argmin"
    t, ax = _red_prep(input, axis, name)
    v, a = _red_in(t, np.asarray(values(t)), ax)
    if unwrap(tie_break_left):
        r = (np.argmax if is_max else np.argmin)(v, axis=a)
    else:
        f = np.flip(v, axis=a)
        r = v.shape[a] - 1 - (np.argmax if is_max else np.argmin)(f, axis=a)
    return _red_finish(np.asarray(r, dtype=np.int32), t, ax, keep_dims, D.int32, name)


def argmax(input: Any, axis: Any, tie_break_left: bool = True, keep_dims: bool = False) -> tensor:
    """Index (int32) of the maximum along ``axis``; ties go to the lowest index."""
    return _argext(input, axis, tie_break_left, keep_dims, True)  # type: ignore[no-any-return]


def argmin(input: Any, axis: Any, tie_break_left: bool = True, keep_dims: bool = False) -> tensor:
    """Index (int32) of the minimum along ``axis``; ties go to the lowest index."""
    return _argext(input, axis, tie_break_left, keep_dims, False)  # type: ignore[no-any-return]


def _call(fn: Any, *args: Any) -> Any:
    f = getattr(fn, "fn", fn)
    return f(*args)


def reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: bool = False) -> tensor:
    """Reduce along ``axis`` with ``combine_fn(a, b)`` applied as a pairwise tree."""
    t, ax = _red_prep(input, axis, "reduce")
    v = np.asarray(t.v)
    if ax is None:
        v = v.reshape(-1)
    a = 0 if ax is None else ax
    x = tensor(np.moveaxis(v, a, -1), t.dtype)
    while x.shape[-1] > 1:
        n = x.shape[-1]
        h = n // 2
        left = tensor(x.v[..., :h], x.dtype)
        right = tensor(x.v[..., h:2 * h], x.dtype)
        c = to_tensor(_call(combine_fn, left, right))
        if n % 2:
            c = tensor(np.concatenate([c.v, x.v[..., 2 * h:]], axis=-1), c.dtype)
        x = c
    return _red_finish(x.v[..., 0], t, ax, keep_dims, x.dtype, "combine")


def associative_scan(input: Any, axis: int, combine_fn: Any, reverse: bool = False) -> tensor:
    """Inclusive scan along ``axis`` with ``combine_fn`` (applied sequentially)."""
    t = to_tensor(input)
    ax = S.check_axis(axis, len(t.shape))
    v = np.moveaxis(np.asarray(t.v), ax, 0)
    if reverse:
        v = v[::-1]
    outs = [v[0]]
    acc = tensor(v[0], t.dtype)
    for i in builtins.range(1, v.shape[0]):
        acc = to_tensor(_call(combine_fn, acc, tensor(v[i], t.dtype)))
        outs.append(acc.v)
    r = np.stack(outs)
    if reverse:
        r = r[::-1]
    _emit(f"tt.scan axis={ax} : {shape_str(t.shape)}")
    return tensor(np.moveaxis(r, 0, ax), acc.dtype)


def _scan(input: Any, axis: int, reverse: bool, fn: Any, name: str) -> tensor:
    t = to_tensor(input)
    ax = S.check_axis(axis, len(t.shape))
    dt = t.dtype if t.dtype.kind == 3 or t.dtype.bits >= 32 else D.int32
    v = np.asarray(t.v).astype(dt.np)
    if reverse:
        v = np.flip(v, ax)
    r = fn(v, axis=ax)
    if reverse:
        r = np.flip(r, ax)
    _emit(f"tt.scan({name}) axis={ax} : {shape_str(t.shape)}")
    return tensor(dt.cast(r), dt)


def cumsum(input: Any, axis: int = 0, reverse: bool = False, dtype: Any = None) -> tensor:
    """Inclusive prefix sum along ``axis``."""
    return _scan(input, axis, reverse, np.cumsum, "add")


def cumprod(input: Any, axis: int = 0, reverse: bool = False) -> tensor:
    """Inclusive prefix product along ``axis``."""
    return _scan(input, axis, reverse, np.cumprod, "mul")


# -- dot ---------------------------------------------------------------------------------
def dot(input: Any, other: Any, acc: Any = None, input_precision: Any = None,
        allow_tf32: Any = None, max_num_imprecise_acc: Any = None,
        out_dtype: Any = D.float32) -> tensor:
    """Block matrix product ``input @ other (+ acc)``.

    float16/bfloat16/float32 operands accumulate in float32 (float64 in
    float64, int8 in int32).  Products of fp16/bf16 values are exact in
    float32, so the result matches a float32 GEMM.  ``input_precision`` and
    ``allow_tf32`` are ignored: float32 operands are multiplied in full
    float32 (the GPU would use TF32 by default).  Shapes below 16 are allowed.

    Raises
    ------
    LangError
        If ranks are not 2/3, inner dimensions differ or dtypes differ.
    """
    a, b = to_tensor(input), to_tensor(other)
    S.check_dot_shapes(a.shape, b.shape)
    if a.dtype is not b.dtype:
        raise LangError(f"dot operands must have the same dtype, got {a.dtype} and {b.dtype}")
    cdt: Any
    if a.dtype is D.float64:
        rt, cdt = D.float64, np.float64
    elif a.dtype.kind != 3:
        rt, cdt = D.int32, np.int32
    else:
        rt, cdt = _dt(out_dtype), np.float32
    batched = _any_batched(a, b, acc)
    # a batched operand's program axis is a matmul batch axis (the other one broadcasts)
    r = np.matmul(np.asarray(values(a), dtype=cdt), np.asarray(values(b), dtype=cdt))
    r_shape = r.shape[1:] if _any_batched(a, b) else r.shape
    if acc is not None:
        at = to_tensor(acc)
        if at.shape != r_shape:
            raise LangError(f"dot accumulator shape {at.shape} does not match the product shape "
                            f"{r_shape}")
        rt = at.dtype
        r = np.asarray(values(at), dtype=np.float64 if rt is D.float64 else cdt) + r
    r = rt.cast(r)
    if batched:
        return BatchedTensor(r, rt)
    _emit(f"tt.dot : {shape_str(a.shape)} * {shape_str(b.shape)} -> {shape_str(r.shape)}")
    return tensor(r, rt)


# -- shapes ------------------------------------------------------------------------------
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
    if type(t) is BatchedTensor:
        return BatchedTensor(t.pv.reshape(t.pv.shape[:1] + shp), t.dtype, t.buf)
    _emit(f"tt.reshape : {shape_str(t.shape)} -> {shape_str(shp)}")
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
    if type(t) is BatchedTensor:
        return BatchedTensor(np.transpose(t.pv, (0,) + tuple(d + 1 for d in dims)), t.dtype,
                             t.buf)
    _emit(f"tt.trans order={list(dims)} : {shape_str(t.shape)}")
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
    _emit(f"tt.broadcast : {shape_str(t.shape)} -> {shape_str(shp)}")
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
    """Insert size-1 dimensions at ``axis`` (an int or a sequence)."""
    t = to_tensor(input)
    axis = unwrap(axis)
    if type(t) is BatchedTensor:
        axes = tuple(int(unwrap(a)) for a in axis) if isinstance(axis, (list, tuple)) else \
            (int(axis),)
        out_rank = len(t.shape) + len(axes)
        if any(not -out_rank <= a < out_rank for a in axes):
            raise NeedsSequential("expand_dims axis out of range")
        return BatchedTensor(np.expand_dims(t.pv, tuple(a % out_rank + 1 for a in axes)),
                             t.dtype, t.buf)
    r = np.expand_dims(t.v, tuple(axis) if isinstance(axis, (list, tuple)) else axis)
    _emit(f"tt.expand_dims : {shape_str(t.shape)} -> {shape_str(r.shape)}")
    return tensor(r, t.dtype, t.buf)


def ravel(x: Any, can_reorder: bool = False) -> tensor:
    """Flatten to 1-D."""
    t = to_tensor(x)
    return reshape(t, t.numel)


def join(a: Any, b: Any) -> tensor:
    """Stack two same-shape tensors along a new last axis of size 2."""
    x, y = to_tensor(a), to_tensor(b)
    xv, yv, ct = _common(x, y)
    return tensor(np.stack(np.broadcast_arrays(xv, yv), axis=-1), ct)


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
    xv, yv, ct = _common(input, other)
    return tensor(np.concatenate([xv, yv], axis=0), ct)


def flip(x: Any, dim: Any = None) -> tensor:
    """Reverse along ``dim`` (the last axis if None)."""
    t = to_tensor(x)
    d = len(t.shape) - 1 if unwrap(dim) is None else S.check_axis(dim, len(t.shape))
    return tensor(np.flip(t.v, d), t.dtype)


# -- iteration, hints and debugging ------------------------------------------------------
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


def _attach() -> None:
    tensor.to = cast  # type: ignore[attr-defined]
    for name in ("sum", "max", "min", "argmax", "argmin", "reduce", "reshape", "view", "trans",
                 "permute", "broadcast_to", "expand_dims", "ravel", "cumsum", "cumprod", "exp",
                 "exp2", "log", "log2", "sqrt", "abs", "sigmoid", "cos", "sin", "split",
                 "xor_sum", "flip", "softmax", "associative_scan"):
        setattr(tensor, name, globals()[name])


_attach()
__all__ += ["constexpr"]
