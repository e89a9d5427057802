"""Binary operators of block values: Triton's promotion, broadcasting, pointer arithmetic.

:func:`binary` implements ``+ - * / // % < <= > >= == != & | ^ << >>`` of
:class:`~autotile.lang._tensor.tensor`.  Index arithmetic keeps Triton's
types (``program_id`` and ``arange`` are int32); a signed integer ``+ - * <<``
(and unary ``-``, :func:`negate`) whose exact result does not fit its type
raises :class:`~autotile.errors.IntegerOverflowError` unless the launch passes
``sanitize_overflow=False``, which wraps like the GPU
(:mod:`autotile.lang._overflow`).  Pointer offsets themselves are kept in
int64.  A Python int operand must fit the type the op computes in (Triton's
"Scalar ... is out of range" rule).  Same-dtype operands and an
int32/int64/float32/float64 tensor with a Python scalar take table-driven
fast paths; everything else goes through
:func:`~autotile.lang._semantic.computation_type`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang import _opcount
from autotile.lang import _overflow as O
from autotile.lang._pointers import addresses
from autotile.lang._semantic import computation_type, short_value
from autotile.lang._state import CURRENT, shape_str
from autotile.lang._tensor import BatchedTensor, align_pair, constexpr, describe, tensor, wrap

__all__ = ["binary", "negate"]


def _scalar_value(b: Any, dt: D.dtype) -> Any:
    """A Python scalar as a NumPy scalar of ``dt``'s compute type.

    Raises
    ------
    LangError
        If ``b`` is an int outside ``dt``'s range (Triton: "Scalar ... is out
        of range for type ...").
    """
    if dt.rounds:
        return dt.cast(np.float64(b))[()]
    if dt.kind == 1 and b < 0:
        raise LangError(f"Cannot perform a binary operation between an unsigned tensor and a "
                        f"negative scalar. Perform a explicit cast on one of them (scalar {b}, "
                        f"the op computes in {dt})")
    try:
        return dt.np.type(b)
    except OverflowError:
        if dt.kind == 3:
            return np.array(b).astype(dt.np)[()]
        info = np.iinfo(dt.np)
        raise LangError(f"Scalar {b} is out of range for type {dt} [{info.min}, {info.max}], "
                        f"the type the op computes in; cast the tensor first (e.g. "
                        f"x.to(tl.int64))") from None


def _operand(b: Any) -> tuple[Any, D.dtype | D.pointer_type, bool] | None:
    if isinstance(b, tensor):
        return (b.pv if type(b) is BatchedTensor else b.v), b.dtype, False
    if isinstance(b, constexpr):
        b = b.value
    if isinstance(b, (bool, int, float)):
        return b, D.literal_dtype(b), True
    if isinstance(b, np.generic):
        dt = D.from_numpy(b.dtype)
        if dt is not None:
            return b, dt, False
    return None


def _trunc_div(a: Any, b: Any) -> Any:
    r = np.fmod(a, b)
    return (a - r) // b


def _shift_right(a: Any, b: Any) -> Any:
    return np.right_shift(a, b)


def _shift_right_by_sign(av: Any, bv: Any, ct: D.dtype, signed: bool) -> Any:
    """``av >> bv`` in type ``ct``: arithmetic when ``signed``, else logical.

    Triton picks ``ashr`` or ``lshr`` from the signedness of the shifted
    operand's own type, then shifts in the promoted type ``ct``: ``int8 >>
    uint16`` is an arithmetic shift of the sign-extended 16-bit pattern.
    """
    if signed == (ct.kind == 2) or ct.kind == 0:
        return np.right_shift(av, bv)
    other = np.dtype(f"{'i' if signed else 'u'}{ct.np.itemsize}")
    r = np.right_shift(np.asarray(av).view(other) if np.ndim(av) else other.type(av),
                       np.asarray(bv).astype(other))
    return np.asarray(r).view(ct.np) if np.ndim(r) else np.asarray(r).view(ct.np)[()]


# name -> (numpy function, div_or_mod, result is bool, int-only, MLIR int name, MLIR float name)
_OPS: dict[str, tuple[Any, bool, bool, bool, str, str]] = {
    "add": (np.add, False, False, False, "arith.addi", "arith.addf"),
    "sub": (np.subtract, False, False, False, "arith.subi", "arith.subf"),
    "mul": (np.multiply, False, False, False, "arith.muli", "arith.mulf"),
    "truediv": (np.true_divide, True, False, False, "arith.divf", "arith.divf"),
    "floordiv": (_trunc_div, True, False, True, "arith.divsi", "arith.divsi"),
    "mod": (np.fmod, True, False, False, "arith.remsi", "arith.remf"),
    "lt": (np.less, False, True, False, "arith.cmpi slt", "arith.cmpf olt"),
    "le": (np.less_equal, False, True, False, "arith.cmpi sle", "arith.cmpf ole"),
    "gt": (np.greater, False, True, False, "arith.cmpi sgt", "arith.cmpf ogt"),
    "ge": (np.greater_equal, False, True, False, "arith.cmpi sge", "arith.cmpf oge"),
    "eq": (np.equal, False, True, False, "arith.cmpi eq", "arith.cmpf oeq"),
    "ne": (np.not_equal, False, True, False, "arith.cmpi ne", "arith.cmpf une"),
    "and": (np.bitwise_and, False, False, True, "arith.andi", "arith.andi"),
    "or": (np.bitwise_or, False, False, True, "arith.ori", "arith.ori"),
    "xor": (np.bitwise_xor, False, False, True, "arith.xori", "arith.xori"),
    "lshift": (np.left_shift, False, False, True, "arith.shli", "arith.shli"),
    "rshift": (_shift_right, False, False, True, "arith.shrsi", "arith.shrsi"),
}


def _fast_table() -> dict[tuple[str, D.dtype], tuple[Any, D.dtype, str]]:
    """(op, dtype) -> (function, result dtype, IR name) for same-dtype operands."""
    table = {}
    for dt in D.ALL_DTYPES:
        if dt is D.bfloat16:
            continue
        for op, (fn, div, is_cmp, int_only, iname, fname) in _OPS.items():
            if int_only and dt.kind == 3:
                continue
            if div and (dt.kind != 3 or dt is D.float16):
                continue
            if dt.kind == 0 and not (is_cmp or int_only):
                continue
            table[(op, dt)] = (fn, D.int1 if is_cmp else dt, fname if dt.kind == 3 else iname)
    return table


_FAST = _fast_table()
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
           "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "&",
           "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}
#: (op, dtype) pairs whose results are checked for overflow (see ``_overflow``).
_CHECKED = frozenset((op, dt) for op in O.CHECKED_OPS for dt in O.SIGNED)


_SCALAR_FAST_DTYPES = {D.int32: 0, D.int64: 0, D.float32: 1, D.float64: 1}


def _scalar_fast(a: Any, b: Any, op: str) -> tensor | None:
    """Fast path for an int32/int64/float32/float64 tensor with a Python scalar."""
    if type(a) is tensor:
        t, s, t_first = a, b, True
    elif type(b) is tensor:
        t, s, t_first = b, a, False
    else:
        return None
    dt = t.dtype
    kind = _SCALAR_FAST_DTYPES.get(dt)
    ts = type(s)
    if kind is None or not (ts is int or (ts is float and kind == 1)):
        return None
    if ts is int and not -(2**31) <= s < 2**31:
        return None
    spec = _FAST.get((op, dt))
    if spec is None:
        return None
    sv = dt.np.type(s)
    try:
        r = spec[0](t.v, sv) if t_first else spec[0](sv, t.v)
    except ValueError:
        return None
    st = CURRENT.get()
    if (op, dt) in _CHECKED and (st is None or st.sanitize_overflow):
        if t_first:
            O.check_binary(op, t.v, sv, r, dt, a, b)
        else:
            O.check_binary(op, sv, t.v, r, dt, a, b)
    if st is not None and st.ir is not None:
        st.emit(f"{spec[2]} : {shape_str(np.shape(r))}", True)
    return _opcount.binary(op, tensor(r, spec[1]))


def _shape_of(v: Any) -> tuple[int, ...]:
    return np.shape(v)


def binary(a: Any, b: Any, op: str) -> tensor:
    """Apply a binary operator with Triton's promotion and broadcasting.

    Raises
    ------
    LangError
        On incompatible shapes or operand types.
    """
    if type(a) is tensor and type(b) is tensor:
        ta = a.dtype
        if ta is b.dtype and type(ta) is D.dtype and ta is not D.bfloat16:
            spec = _FAST.get((op, ta))
            if spec is not None:
                try:
                    r = spec[0](a.v, b.v)
                except ValueError:
                    pass
                else:
                    st = CURRENT.get()
                    if (op, ta) in _CHECKED and (st is None or st.sanitize_overflow):
                        O.check_binary(op, a.v, b.v, r, ta, a, b)
                    if st is not None and st.ir is not None:
                        st.emit(f"{spec[2]} : {shape_str(np.shape(r))}", True)
                    return _opcount.binary(op, tensor(r, spec[1]))
    else:
        r = _scalar_fast(a, b, op)
        if r is not None:
            return r
    pa = _operand(a)
    pb = _operand(b)
    if pa is None or pb is None:
        bad = a if pa is None else b
        raise LangError(f"unsupported operand for {op}: {short_value(bad)}")
    av, ta, sa = pa
    bv, tb, sb = pb
    batched = type(a) is BatchedTensor or type(b) is BatchedTensor
    if batched:
        av, bv = align_pair(a, av, b, bv)
    fn, div, is_cmp, int_only, iname, fname = _OPS[op]
    if isinstance(ta, D.pointer_type) or isinstance(tb, D.pointer_type):
        return _pointer_binary(a, b, av, ta, bv, tb, op, batched)
    ct = computation_type(ta, sa, tb, sb, div)
    if op == "truediv" and ct.kind != 3:
        ct = D.float32
    if int_only and ct.kind == 3:
        if op == "floordiv":
            raise LangError(f"unexpected type {ct}: // needs integer operands, got {ta} and "
                            f"{tb}")
        raise LangError(f"invalid operands of type {ct} and {ct} (from {ta} and {tb}): "
                        f"{_SYMBOL[op]} needs integer operands")
    if sa:
        av = _scalar_value(av, ct)
    elif ta is not ct:
        av = ct.cast(av)
    if sb:
        bv = _scalar_value(bv, ct)
    elif tb is not ct:
        bv = ct.cast(bv)
    try:
        if op == "rshift":
            # the shifted operand's own signedness picks ashr or lshr (Triton's __rshift__);
            # for ``x >> y`` with a Python int x, Triton's __rrshift__ looks at y
            src = tb if sa else ta
            r = _shift_right_by_sign(av, bv, ct, src.kind == 2)
        else:
            r = fn(av, bv)
    except ValueError:
        raise LangError(
            f"incompatible shapes for {op}: {describe(a)} and {describe(b)}") from None
    if (op, ct) in _CHECKED and O.sanitizing():
        O.check_binary(op, av, bv, r, ct, a, b)
    if is_cmp:
        rt = D.int1
    else:
        rt = ct
        if ct.rounds:
            r = ct.cast(r)
            if r.ndim == 0:
                r = r[()]
    if batched:
        return _opcount.binary(op, BatchedTensor(r, rt))
    st = CURRENT.get()
    if st is not None and st.ir is not None:
        st.emit(f"{fname if ct.kind == 3 else iname} : {shape_str(np.shape(r))}", True)
    return _opcount.binary(op, tensor(r, rt))


def _pointer_binary(a: Any, b: Any, av: Any, ta: Any, bv: Any, tb: Any, op: str,
                    batched: bool = False) -> tensor:
    if isinstance(ta, D.pointer_type) and isinstance(tb, D.pointer_type):
        if op in ("lt", "le", "gt", "ge", "eq", "ne", "sub"):
            if a.buf is None or a.buf is not b.buf:  # compare the addresses
                av, bv = align_pair(a, addresses(a), b, addresses(b)) if batched else \
                    (addresses(a), addresses(b))
                if op == "sub":
                    r = np.subtract(av, bv, dtype=np.int64) // ta.element_ty.itemsize
                    return wrap(r, D.int64, batched)
            r = _OPS[op][0](av, bv)
            return wrap(r, D.int1 if op != "sub" else D.int64, batched)
        raise LangError(f"operator {op} is not defined between two pointers")
    if op not in ("add", "sub"):
        raise LangError(
            f"operator {op} is not defined on pointers ({describe(a)}, {describe(b)})")
    if isinstance(tb, D.pointer_type):
        if op == "sub":
            raise LangError("cannot subtract a pointer from an integer")
        a, b, av, ta, bv, tb = b, a, bv, tb, av, ta
    if tb.kind == 3:
        raise LangError(f"pointer offsets must be integers, got {tb} in {op} with {describe(a)}")
    if a.buf is None:  # a pointer made from an address: offsets count elements
        bv = np.multiply(bv, ta.element_ty.itemsize, dtype=np.int64)
    try:
        if op == "add":
            r = np.add(av, bv, dtype=np.int64)
        else:
            r = np.subtract(av, bv, dtype=np.int64)
    except ValueError:
        raise LangError(
            f"incompatible shapes for pointer {op}: {describe(a)} and {describe(b)}") from None
    if batched:
        return BatchedTensor(r, ta, a.buf)
    st = CURRENT.get()
    if st is not None and st.ir is not None:
        st.emit(f"tt.addptr : {shape_str(np.shape(r))}", True)
    return tensor(r, ta, a.buf)


def negate(t: tensor) -> tensor:
    """``-t`` for a tensor that is not a pointer or int1 (checked like :func:`binary`).

    Counts one ALU lane per element (:func:`autotile.lang._opcount.alu`).

    Raises
    ------
    IntegerOverflowError
        If ``t`` is a signed integer holding its type's minimum (unless the
        launch passes ``sanitize_overflow=False``).
    """
    batched = type(t) is BatchedTensor
    v = t.pv if type(t) is BatchedTensor else t.v
    r = np.negative(v)
    if t.dtype in O.SIGNED and O.sanitizing():
        O.check_negate(v, r, t.dtype, t)
    return _opcount.alu(wrap(r, t.dtype, batched))
