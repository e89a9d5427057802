"""Elementwise math builtins: ``where``, ``maximum``/``minimum``, ``exp``, ``sqrt``, ``fma``, ...

Binary operands are promoted to their common type as Triton does; float16
results are computed in float32 and rounded back, bfloat16 and fp8 results
are rounded to their format after every op.  Batched operands (a launch with
``batch_programs=True``) keep their program axis.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang import _opcount
from autotile.lang import _semantic as S
from autotile.lang._arith import binary
from autotile.lang._operands import any_batched, common, common_batched, emit, realign
from autotile.lang._pointers import addresses
from autotile.lang._state import shape_str
from autotile.lang._tensor import BatchedTensor, tensor, to_tensor, unwrap, values, wrap

__all__ = [
    "PropagateNan", "where", "maximum", "minimum", "clamp", "exp", "exp2", "log", "log2",
    "sqrt", "sqrt_rn", "rsqrt", "abs", "cos", "sin", "floor", "ceil", "erf", "sigmoid", "fma",
    "fdiv", "div_rn",
]


class PropagateNan(enum.Enum):
    """NaN policy of ``maximum``/``minimum`` (Triton's ``tl.PropagateNan``)."""

    NONE = 0
    ALL = 0xFFFF


def where(condition: Any, x: Any, y: Any) -> tensor:
    """Select ``x`` where ``condition`` is true, else ``y`` (broadcasting).

    Pointers into two different arguments select between their addresses: the
    result is a pointer made from an address (:mod:`autotile.lang._pointers`).

    Raises
    ------
    LangError
        If the shapes of ``condition``, ``x`` and ``y`` do not broadcast
        ("where: shapes (4,), (4,) and (8,) do not broadcast"), or ``x`` and
        ``y`` have no common type under Triton's promotion rules.
    """
    if isinstance(x, tensor) and isinstance(y, tensor) and isinstance(x.dtype, D.pointer_type) \
            and isinstance(y.dtype, D.pointer_type) and (x.buf is not y.buf or x.buf is None):
        x = wrap(addresses(x), x.dtype, type(x) is BatchedTensor)
        y = wrap(addresses(y), y.dtype, type(y) is BatchedTensor)
    buf = x.buf if isinstance(x, tensor) and x.buf is not None else getattr(y, "buf", None)
    if any_batched(condition, x, y):
        c = to_tensor(condition)
        (cv, xv, yv), ct, _ = common_batched(c, x, y)
        if c.dtype is not D.int1:
            cv = cv != 0
        return _opcount.alu(BatchedTensor(np.where(cv, xv, yv), ct, buf))
    c = to_tensor(condition)
    cv = c.v if c.dtype is D.int1 else (c.v != 0)
    xv, yv, ct = common(x, y)
    try:
        r = np.where(cv, xv, yv)
    except ValueError:
        raise LangError(f"where: shapes {c.shape}, {np.shape(xv)} and {np.shape(yv)} do not "
                        "broadcast") from None
    if r.ndim == 0:
        r = r[()]
    emit(f"arith.select : {shape_str(np.shape(r))}")
    return _opcount.alu(tensor(r, ct, buf))


def _minmax(x: Any, y: Any, nan_fn: Any, num_fn: Any, propagate_nan: Any, name: str) -> tensor:
    if any_batched(x, y):
        (xv, yv), ct, _ = common_batched(x, y)
        fn = num_fn if ct.kind != 3 or propagate_nan != PropagateNan.ALL else nan_fn
        return _opcount.alu(BatchedTensor(fn(xv, yv), ct))
    xv, yv, ct = common(x, y)
    fn = num_fn if ct.kind != 3 or propagate_nan != PropagateNan.ALL else nan_fn
    try:
        r = fn(xv, yv)
    except ValueError:
        raise LangError(f"{name}: shapes {np.shape(xv)} and {np.shape(yv)} do not "
                        "broadcast") from None
    emit(f"arith.{name}{'f' if ct.kind == 3 else 'i'} : {shape_str(np.shape(r))}")
    return _opcount.alu(tensor(r, ct))


def maximum(x: Any, y: Any, propagate_nan: PropagateNan = PropagateNan.NONE) -> tensor:
    """Elementwise maximum.  With ``PropagateNan.NONE`` (default) a NaN loses, as ``max.f32``.

    Raises
    ------
    LangError
        If the shapes do not broadcast ("max: shapes (4,) and (8,) do not
        broadcast"), or ``x`` and ``y`` have no common type under Triton's
        promotion rules.
    """
    return _minmax(x, y, np.maximum, np.fmax, propagate_nan, "max")


def minimum(x: Any, y: Any, propagate_nan: PropagateNan = PropagateNan.NONE) -> tensor:
    """Elementwise minimum.  With ``PropagateNan.NONE`` (default) a NaN loses, as ``min.f32``.

    Raises
    ------
    LangError
        If the shapes do not broadcast ("min: shapes (4,) and (8,) do not
        broadcast"), or ``x`` and ``y`` have no common type under Triton's
        promotion rules.
    """
    return _minmax(x, y, np.minimum, np.fmin, propagate_nan, "min")


def clamp(x: Any, min: Any, max: Any, propagate_nan: PropagateNan = PropagateNan.NONE) -> tensor:
    """Clamp ``x`` to ``[min, max]`` (``minimum(maximum(x, min), max)``).

    Raises
    ------
    LangError
        As :func:`maximum` and :func:`minimum`: shapes that do not broadcast,
        or operands with no common type.
    """
    return minimum(maximum(x, min, propagate_nan), max, propagate_nan)


#: Triton's ``math._check_dtype`` lists (v3.4): element types each builtin accepts
_F32_F64 = ("float32", "float64")


def _check_dtype(name: str, dtypes: tuple[str, ...], *args: Any) -> None:
    """Refuse a block argument of a type ``tl.<name>`` does not take, in Triton's words.

    Python numbers are not checked, as in Triton.
    """
    for a in args:
        if isinstance(a, tensor) and str(a.dtype) not in dtypes:
            raise LangError(f"Expected dtype {list(dtypes)} but got {a.dtype} (tl.{name})")


def _math1(x: Any, fn: Any, name: str, allow_int: bool = False,
           dtypes: tuple[str, ...] | None = None) -> tensor:
    if dtypes is not None:
        _check_dtype(name, dtypes, unwrap(x))
    t = to_tensor(x)
    dt = t.dtype
    if isinstance(dt, D.pointer_type) or (dt.kind != 3 and not allow_int):
        raise LangError(f"tl.{name} expects a floating-point tensor, got {dt}")
    v = values(t)
    if dt is D.float16:
        r = fn(np.asarray(v, dtype=np.float32)).astype(np.float16)
    elif dt.rounds:  # bfloat16 and fp8: computed in float32, rounded to the format
        r = dt.cast(fn(v))
    else:
        r = fn(v)
    if type(t) is BatchedTensor:
        return _opcount.math(name, BatchedTensor(r, dt))
    if np.ndim(r) == 0:
        r = np.asarray(r)[()]
    emit(f"math.{name} : {shape_str(np.shape(r))}")
    return _opcount.math(name, tensor(r, dt))


def exp(x: Any) -> tensor:
    """Elementwise ``e**x``.

    Raises
    ------
    LangError
        If ``x`` is a tensor whose dtype is not float32 or float64 (Triton's
        message "Expected dtype ['float32', 'float64'] but got float16
        (tl.exp)"; pointers included), or a Python int (an int32 scalar:
        "tl.exp expects a floating-point tensor, got int32").
    """
    return _math1(x, np.exp, "exp", dtypes=_F32_F64)


def exp2(x: Any) -> tensor:
    """Elementwise ``2**x``.

    Raises
    ------
    LangError
        If ``x`` is a tensor whose dtype is not float32 or float64 (Triton's
        message "Expected dtype ['float32', 'float64'] but got float16
        (tl.exp2)"; pointers included), or a Python int (an int32 scalar:
        "tl.exp2 expects a floating-point tensor, got int32").
    """
    return _math1(x, np.exp2, "exp2", dtypes=_F32_F64)


def log(x: Any) -> tensor:
    """Elementwise natural logarithm.

    Raises
    ------
    LangError
        If ``x`` is a tensor whose dtype is not float32 or float64 (Triton's
        message "Expected dtype ['float32', 'float64'] but got float16
        (tl.log)"; pointers included), or a Python int (an int32 scalar:
        "tl.log expects a floating-point tensor, got int32").
    """
    return _math1(x, np.log, "log", dtypes=_F32_F64)


def log2(x: Any) -> tensor:
    """Elementwise base-2 logarithm.

    Raises
    ------
    LangError
        If ``x`` is a tensor whose dtype is not float32 or float64 (Triton's
        message "Expected dtype ['float32', 'float64'] but got float16
        (tl.log2)"; pointers included), or a Python int (an int32 scalar:
        "tl.log2 expects a floating-point tensor, got int32").
    """
    return _math1(x, np.log2, "log2", dtypes=_F32_F64)


def sqrt(x: Any) -> tensor:
    """Elementwise square root.

    Raises
    ------
    LangError
        If ``x`` is a tensor whose dtype is not float32 or float64 (Triton's
        message "Expected dtype ['float32', 'float64'] but got float16
        (tl.sqrt)"; pointers included), or a Python int (an int32 scalar:
        "tl.sqrt expects a floating-point tensor, got int32").
    """
    return _math1(x, np.sqrt, "sqrt", dtypes=_F32_F64)


def sqrt_rn(x: Any) -> tensor:
    """Elementwise square root, rounded to nearest (float32 only, as Triton).

    Raises
    ------
    LangError
        If ``x`` is a tensor that is not float32 ("Expected dtype ['float32']
        but got float64 (tl.sqrt_rn)"), or a Python int.
    """
    _check_dtype("sqrt_rn", ("float32",), unwrap(x))
    return _math1(x, np.sqrt, "sqrt")


def rsqrt(x: Any) -> tensor:
    """Elementwise ``1 / sqrt(x)``.

    Raises
    ------
    LangError
        If ``x`` is a tensor whose dtype is not float32 or float64 (Triton's
        message "Expected dtype ['float32', 'float64'] but got float16
        (tl.rsqrt)"; pointers included), or a Python int (an int32 scalar:
        "tl.rsqrt expects a floating-point tensor, got int32").
    """
    return _math1(x, lambda v: 1.0 / np.sqrt(v), "rsqrt", dtypes=_F32_F64)


def abs(x: Any) -> tensor:
    """Elementwise absolute value (ints and floats).

    Raises
    ------
    LangError
        If ``x`` is a pointer ("tl.absf expects a floating-point tensor, got
        pointer<float32>").
    """
    return _math1(x, np.abs, "absf", allow_int=True)


def cos(x: Any) -> tensor:
    """Elementwise cosine.

    Raises
    ------
    LangError
        If ``x`` is a tensor whose dtype is not float32 or float64 (Triton's
        message "Expected dtype ['float32', 'float64'] but got float16
        (tl.cos)"; pointers included), or a Python int (an int32 scalar:
        "tl.cos expects a floating-point tensor, got int32").
    """
    return _math1(x, np.cos, "cos", dtypes=_F32_F64)


def sin(x: Any) -> tensor:
    """Elementwise sine.

    Raises
    ------
    LangError
        If ``x`` is a tensor whose dtype is not float32 or float64 (Triton's
        message "Expected dtype ['float32', 'float64'] but got float16
        (tl.sin)"; pointers included), or a Python int (an int32 scalar:
        "tl.sin expects a floating-point tensor, got int32").
    """
    return _math1(x, np.sin, "sin", dtypes=_F32_F64)


def floor(x: Any) -> tensor:
    """Elementwise floor.

    Raises
    ------
    LangError
        If ``x`` is a tensor whose dtype is not float32 or float64 (Triton's
        message "Expected dtype ['float32', 'float64'] but got float16
        (tl.floor)"; pointers included), or a Python int (an int32 scalar:
        "tl.floor expects a floating-point tensor, got int32").
    """
    return _math1(x, np.floor, "floor", dtypes=_F32_F64)


def ceil(x: Any) -> tensor:
    """Elementwise ceiling.

    Raises
    ------
    LangError
        If ``x`` is a tensor whose dtype is not float32 or float64 (Triton's
        message "Expected dtype ['float32', 'float64'] but got float16
        (tl.ceil)"; pointers included), or a Python int (an int32 scalar:
        "tl.ceil expects a floating-point tensor, got int32").
    """
    return _math1(x, np.ceil, "ceil", dtypes=_F32_F64)


def erf(x: Any) -> tensor:
    """Elementwise error function.

    Raises
    ------
    LangError
        If ``x`` is a tensor whose dtype is not float32 or float64 (Triton's
        message "Expected dtype ['float32', 'float64'] but got float16
        (tl.erf)"; pointers included), or a Python int (an int32 scalar:
        "tl.erf expects a floating-point tensor, got int32").
    """
    from scipy.special import erf as _erf

    return _math1(x, _erf, "erf", dtypes=_F32_F64)


def sigmoid(x: Any) -> tensor:
    """Elementwise ``1 / (1 + exp(-x))`` (Triton's composition, same result dtype).

    Raises
    ------
    LangError
        As :func:`exp`: ``x`` is a tensor that is not float32 or float64
        ("Expected dtype ['float32', 'float64'] but got float16 (tl.exp)"), or
        a Python int.
    """
    t = to_tensor(x)
    return 1 / (1 + exp(-t))


def fma(x: Any, y: Any, z: Any) -> tensor:
    """Fused multiply-add ``x * y + z`` with one rounding.

    Raises
    ------
    LangError
        If an operand is a pointer ("invalid operands of type
        pointer<float32> and float32 (tl.fma)", Triton's wording), the shapes
        do not broadcast ("fma: shapes (4,), (8,) and () do not broadcast"), or
        the operands have no common type under Triton's promotion rules.
    """
    ts = [to_tensor(unwrap(a)) for a in (x, y, z)]
    ptr = next((t for t in ts if isinstance(t.dtype, D.pointer_type)), None)
    if ptr is not None:
        other = next((t for t in ts if t is not ptr), ptr)
        raise LangError(f"invalid operands of type {ptr.dtype} and {other.dtype} (tl.fma)")
    batched = any_batched(x, y, z)
    if batched:
        zt = to_tensor(z)
        (xv, yv), ct, _ = common_batched(x, y)
        xv, yv, zv = realign((x, y, zt), (xv, yv, values(zt)))
    else:
        xv, yv, ct = common(x, y)
        zt = to_tensor(z)
        zv = zt.v
    ct = S.computation_type(ct, False, zt.dtype, not isinstance(z, tensor), False)
    try:
        if ct.kind == 3 and ct is not D.float64:
            r = ct.cast(np.asarray(xv, np.float64) * np.asarray(yv, np.float64)
                        + np.asarray(zv, np.float64))
        else:
            r = ct.cast(np.asarray(xv) * np.asarray(yv) + np.asarray(zv))
    except ValueError:
        raise LangError(f"fma: shapes {np.shape(xv)}, {np.shape(yv)} and {np.shape(zv)} do "
                        "not broadcast") from None
    if batched:
        return _opcount.alu(BatchedTensor(r, ct))
    if np.ndim(r) == 0:
        r = np.asarray(r)[()]
    emit(f"math.fma : {shape_str(np.shape(r))}")
    return _opcount.alu(tensor(r, ct))


def fdiv(x: Any, y: Any, ieee_rounding: bool = False) -> tensor:
    """Floating-point division ``x / y``; both operands floating point (Python ints refused).

    Raises
    ------
    LangError
        If an operand is not floating point (Triton's ``semantic.fdiv``).
    """
    for a in (x, y):
        t = to_tensor(unwrap(a))
        if isinstance(t.dtype, D.pointer_type) or t.dtype.kind != 3:
            raise LangError(f"both operands of fdiv must have floating scalar type, got "
                            f"{to_tensor(unwrap(x)).dtype} and {to_tensor(unwrap(y)).dtype}")
    return binary(x, y, "truediv")


def div_rn(x: Any, y: Any) -> tensor:
    """Floating-point division rounded to nearest (float32 blocks only, as Triton).

    Raises
    ------
    LangError
        If ``x`` or ``y`` is a tensor that is not float32 ("Expected dtype
        ['float32'] but got float16 (tl.div_rn)").
    """
    _check_dtype("div_rn", ("float32",), unwrap(x), unwrap(y))
    return binary(x, y, "truediv")



_UMULHI_DTYPES = ("int32", "int64", "uint32", "uint64")


def _mulhi64(x: Any, y: Any, signed: bool) -> Any:
    """High 64 bits of 64x64-bit products (two's complement when ``signed``)."""
    xu = np.asarray(x).astype(np.uint64)
    yu = np.asarray(y).astype(np.uint64)
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    xl, xh = xu & m32, xu >> s32
    yl, yh = yu & m32, yu >> s32
    ll, lh, hl, hh = xl * yl, xl * yh, xh * yl, xh * yh
    mid = (ll >> s32) + (lh & m32) + (hl & m32)
    hi = hh + (lh >> s32) + (hl >> s32) + (mid >> s32)
    if signed:  # unsigned high part minus the correction for negative operands
        hi = hi - np.where(np.asarray(x) < 0, yu, np.uint64(0)) \
            - np.where(np.asarray(y) < 0, xu, np.uint64(0))
        return hi.astype(np.int64)
    return hi


def umulhi(x: Any, y: Any) -> tensor:
    """High half of the integer product ``x * y`` (``tl.umulhi``, CUDA's ``__umulhi``).

    Parameters
    ----------
    x, y : tensor or int
        int32, int64, uint32 or uint64 operands, promoted to their common
        type as for ``*``.

    Returns
    -------
    tensor
        The most significant 32 (or 64) bits of the exact ``2n``-bit product,
        in the common type: signed operands give the signed high part.

    Raises
    ------
    LangError
        If the common type is not one of int32, int64, uint32, uint64.
    """
    if any_batched(x, y):
        (xv, yv), ct, batched = common_batched(x, y)
    else:
        xv, yv, ct = common(x, y)
        batched = False
    if isinstance(ct, D.pointer_type) or ct.name not in _UMULHI_DTYPES:
        raise LangError(f"Expected dtype {list(_UMULHI_DTYPES)} but got {ct} (tl.umulhi)")
    signed = ct.kind == 2
    if ct.bits == 32:
        wide = np.int64 if signed else np.uint64
        r = ((np.asarray(xv).astype(wide) * np.asarray(yv).astype(wide)) >> 32).astype(ct.np)
    else:
        r = _mulhi64(xv, yv, signed).astype(ct.np)
    if batched:
        return _opcount.alu(BatchedTensor(r, ct))
    if r.ndim == 0:
        r = r[()]
    emit(f"tt.mulhiui : {shape_str(np.shape(r))}")
    return _opcount.alu(tensor(r, ct))


__all__ += ["umulhi"]
