"""Signed integer overflow checks: the launch option ``sanitize_overflow``.

On the GPU, a signed integer ``+``, ``-``, ``*`` or ``<<`` whose exact result
does not fit its type wraps around (two's complement), so ``pid * stride``
with ``pid = 4`` and ``stride = 2**30`` is 0 in int32 and the load reads
element 0 without any error (Triton issue #6748).  The interpreter exists to
catch such bugs, so by default it checks every signed integer (int8, int16,
int32 and int64) ``+``, ``-``, ``*``, ``<<`` and unary ``-`` against the exact
result and raises :class:`~autotile.errors.IntegerOverflowError` naming the
kernel, the program, the operands and the value the GPU would have produced.
This is what Triton's own ``sanitize_overflow`` does in ``debug`` mode for
types narrower than 64 bits; the interpreter checks int64 too.

``kernel[grid](..., sanitize_overflow=False)`` keeps the GPU's wrapping, for
kernels that wrap on purpose (hashes, linear congruential generators).
Unsigned integers always wrap (their arithmetic is modular by definition),
as do ``//``, ``%``, ``abs``, casts and atomics (Triton's sanitizer does not
check them either), and reductions and scans, including the arithmetic of a
``tl.reduce``/``tl.associative_scan`` combine function (:func:`wrapping`;
Triton's debug mode would check a combine function's ``+``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from autotile.errors import IntegerOverflowError
from autotile.lang import _dtypes as D
from autotile.lang._state import CURRENT

__all__ = ["CHECKED_OPS", "SIGNED", "sanitizing", "wrapping", "check_binary", "check_negate"]

#: Binary operators whose signed integer results are checked.
CHECKED_OPS = ("add", "sub", "mul", "lshift")
#: The signed integer types that are checked.
SIGNED = (D.int8, D.int16, D.int32, D.int64)

_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "lshift": "<<"}


def sanitizing() -> bool:
    """Whether the running launch checks overflow (True outside a launch)."""
    st = CURRENT.get()
    return True if st is None else bool(st.sanitize_overflow)


@contextmanager
def wrapping() -> Iterator[None]:
    """Run the body with the launch's overflow check off (a reduction's combine function).

    The partial results of an integer reduction or scan depend on the order
    in which lanes are combined, which the source does not fix (the GPU
    combines in a tree); with wrapping, a sum or product of integers is the
    same in every order, so only the final value in its type is meaningful.
    """
    st = CURRENT.get()
    if st is None or not st.sanitize_overflow:
        yield
        return
    st.sanitize_overflow = False
    try:
        yield
    finally:
        st.sanitize_overflow = True


def _exact(op: str, x: int, y: int) -> int:
    if op == "add":
        return x + y
    if op == "sub":
        return x - y
    if op == "mul":
        return x * y
    return x << y


def _bad(op: str, av: Any, bv: Any, r: Any, dt: D.dtype) -> Any:
    """Boolean mask (or scalar) of the elements whose result ``r`` is not exact."""
    if op == "add":
        return np.bitwise_and(np.bitwise_xor(av, r), np.bitwise_xor(bv, r)) < 0
    if op == "sub":
        return np.bitwise_and(np.bitwise_xor(av, bv), np.bitwise_xor(av, r)) < 0
    if op == "mul":
        if dt.bits <= 32:
            return np.multiply(av, bv, dtype=np.int64) != r
        # int64: a float64 product below 2**62 in magnitude is certainly exact
        cand = np.abs(np.multiply(av, bv, dtype=np.float64)) >= 2.0**62
        if not np.any(cand):
            return cand
        shape = np.shape(r)
        ab = np.broadcast_to(av, shape).reshape(-1)
        bb = np.broadcast_to(bv, shape).reshape(-1)
        out = np.zeros(ab.size, dtype=bool)
        lo, hi = -(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1
        for i in np.flatnonzero(np.broadcast_to(cand, shape)).tolist():
            out[i] = not lo <= int(ab[i]) * int(bb[i]) <= hi
        return out.reshape(shape)
    # lshift: a shift amount outside [0, bits) is undefined; else shifting back must
    # give the operand
    inrange = (bv >= 0) & (bv < dt.bits)
    back = np.right_shift(r, np.where(inrange, bv, 0).astype(dt.np))
    return ~inrange | (back != av)


def _element(arr: Any, shape: tuple[int, ...], idx: tuple[int, ...]) -> int:
    return int(np.broadcast_to(arr, shape)[idx])


def _raise(dt: D.dtype, what: str, shape: tuple[int, ...], bad: Any, text: Any) -> None:
    st = CURRENT.get()
    where = st.where() if st is not None else "a kernel value outside a launch"
    idx: tuple[int, ...] = ()
    at = ""
    if shape:
        idx = tuple(int(i) for i in np.argwhere(np.broadcast_to(bad, shape))[0])
        at = f" at element {idx}"
    expr, exact, wrapped = text(idx)
    lo, hi = -(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1
    raise IntegerOverflowError(
        f"{dt} overflow in {where}: {what}{at}: {expr} = {exact} does not fit in {dt} "
        f"[{lo}, {hi}] (it wraps to {wrapped} on the GPU); compute it in a wider type "
        f"(e.g. x.to(tl.int64) * stride for pointer offsets), or launch with "
        f"sanitize_overflow=False to keep the GPU's wrapping")


def check_binary(op: str, av: Any, bv: Any, r: Any, dt: D.dtype, a: Any, b: Any) -> None:
    """Raise if the signed integer result ``r = av <op> bv`` wrapped.

    Parameters
    ----------
    op : {"add", "sub", "mul", "lshift"}
        The operator.
    av, bv : ndarray or numpy scalar
        Operand values in ``dt`` (broadcastable to ``r``).
    r : ndarray or numpy scalar
        The result NumPy computed in ``dt`` (wrapped).
    dt : dtype
        A signed integer type.
    a, b : Any
        The operands as written in the kernel (named in the message).

    Raises
    ------
    IntegerOverflowError
        If an element of ``r`` differs from the exact result, naming the
        kernel, the program id, the operands, the first such element, its
        exact value and the wrapped one.
    """
    if type(r) is np.ndarray:
        bad = _bad(op, av, bv, r, dt)
        if not bad.any():
            return
    else:  # scalars (the most common case, e.g. ``pid * BLOCK``): Python ints are faster
        x, y = int(av), int(bv)
        half = 1 << (dt.bits - 1)
        if op == "lshift":
            if 0 <= y < dt.bits and -half <= x << y < half:
                return
        elif -half <= _exact(op, x, y) < half:
            return
        bad = True
    from autotile.lang._tensor import describe

    shape = np.shape(r)
    sym = _SYMBOL[op]

    def text(idx: tuple[int, ...]) -> tuple[str, Any, int]:
        x, y = _element(av, shape, idx), _element(bv, shape, idx)
        w = _element(r, shape, idx)
        if op == "lshift" and not 0 <= y < dt.bits:
            return f"{x} << {y}", f"(shift amount {y} outside [0, {dt.bits}))", w
        return f"{x} {sym} {y}", _exact(op, x, y), w

    _raise(dt, f"{describe(a)} {sym} {describe(b)}", shape, bad, text)


def check_negate(v: Any, r: Any, dt: D.dtype, a: Any) -> None:
    """Raise if ``r = -v`` wrapped (``v`` is the type's minimum).

    Raises
    ------
    IntegerOverflowError
        Naming the kernel, the program and the operand.
    """
    lo = -(2 ** (dt.bits - 1))
    bad = v == lo
    if not np.any(bad):
        return
    from autotile.lang._tensor import describe

    shape = np.shape(r)

    def text(idx: tuple[int, ...]) -> tuple[str, Any, int]:
        return f"-({lo})", -lo, _element(r, shape, idx)

    _raise(dt, f"-{describe(a)}", shape, bad, text)
