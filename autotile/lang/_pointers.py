"""Pointers as addresses: casts between pointers and integers.

An interpreter pointer is a buffer and element offsets into it
(:class:`~autotile.lang._tensor.tensor` with ``buf``).  Each buffer of a
launch also has a virtual byte address (``Buffer.base_addr``), so a pointer
has an address: ``base_addr + offset * itemsize``.  Triton's casts between
pointers and integers (``semantic.cast``) work on those addresses:

* ``ptr.to(tl.int64)`` (or ``uint64``) is the address, ``ptr.to(tl.int1)``
  whether it is non-zero; other integer widths are refused, as in Triton;
* ``x.to(tl.pointer_type(T))`` of an integer ``x`` is a pointer *made from an
  address* (``buf`` None, ``v`` holding byte addresses).  It can be offset,
  compared, selected with ``tl.where``, cast back and stored as an int64.
  A ``load``, ``store`` or atomic through it finds the kernel argument whose
  memory holds its lanes (:func:`resolve`); an address in no argument is a
  :class:`~autotile.errors.LangError`.  When its lanes lie in several
  arguments (``tl.where(c, a_ptr + i, b_ptr + i)`` per element), the access
  is split into one access per argument (:func:`split`), each masked to its
  own lanes, so every lane reads or writes the argument it points into.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang._state import NeedsSequential, current
from autotile.lang._tensor import BatchedTensor, describe, tensor, values, wrap

__all__ = ["addresses", "pointer_to_int", "int_to_pointer", "resolve", "split"]


def addresses(t: tensor) -> Any:
    """Byte addresses of the pointer tensor ``t`` (int64, program axis first when batched)."""
    v = values(t)
    if t.buf is None:
        return v
    return np.int64(t.buf.base_addr) + np.asarray(v, np.int64) * np.int64(t.buf.itemsize)


def pointer_to_int(t: tensor, dt: D.dtype) -> tensor:
    """``ptr.to(dt)`` for an integer ``dt``: the address (64 bits) or ``address != 0`` (int1).

    Raises
    ------
    LangError
        For an integer type of another width (Triton: "cannot cast").
    """
    batched = type(t) is BatchedTensor
    a = addresses(t)
    if dt is D.int1:
        return wrap(np.asarray(a) != 0 if np.ndim(a) else bool(a != 0), D.int1, batched)
    if dt.kind in (1, 2) and dt.bits == 64:
        r = np.asarray(a, np.int64).astype(dt.np)
        return wrap(r if r.ndim else r[()], dt, batched)
    raise LangError(f"cannot cast {describe(t)} to {dt}: a pointer casts to int64, uint64 "
                    f"or int1 only")


def int_to_pointer(t: tensor, dt: D.pointer_type) -> tensor:
    """``x.to(tl.pointer_type(T))`` for an integer ``x``: a pointer made from an address.

    The integer is zero-extended to 64 bits (LLVM's ``inttoptr``).

    Raises
    ------
    LangError
        If ``x`` is not an integer.
    """
    src = t.dtype
    if not isinstance(src, D.dtype) or src.kind not in (0, 1, 2):
        raise LangError(f"cannot cast {describe(t)} to {dt}: only integers cast to pointers")
    v = np.asarray(values(t))
    if src.kind == 0:
        a = v.astype(np.int64)
    else:  # zero-extend: the bits as unsigned, then as int64
        a = v.astype(np.dtype(f"u{src.itemsize}")).astype(np.uint64).view(np.int64)
    return wrap(a if a.ndim else a[()], dt, type(t) is BatchedTensor)


def resolve(p: tensor, what: str) -> tensor:
    """``p`` as a pointer into a kernel argument (``p`` itself when it already is one).

    A pointer made from an address points into the argument whose memory
    holds the most of its lanes; lanes outside it get offsets outside the
    buffer, which the bounds check reports when they are active.

    Raises
    ------
    LangError
        If no lane is inside an argument, an address is not a multiple of the
        element size from the argument's start, or the argument's element
        size differs from the pointer's.
    """
    if p.buf is not None:
        return p
    st = current(what)
    a = np.asarray(values(p), np.int64)
    best, best_n = None, 0
    for b in st.buffers:
        lo = b.base_addr
        n = int(np.count_nonzero((a >= lo) & (a < lo + b.n * b.itemsize)))
        if n > best_n:
            best, best_n = b, n
    et = p.dtype.element_ty
    first = int(a.reshape(-1)[0]) if a.size else 0
    if best is None:
        raise LangError(f"{what} through a pointer made from an integer: address {first:#x} "
                        f"is in no kernel argument (arguments live at "
                        f"{[(b.name, hex(b.base_addr)) for b in st.buffers]})")
    if best.itemsize != et.itemsize:
        raise LangError(f"{what} through a pointer made from an integer: {describe(p)} points "
                        f"into {best.name!r} of {best.dtype}, another element size")
    off, rem = np.divmod(a - np.int64(best.base_addr), np.int64(et.itemsize))
    if np.any(rem):
        raise LangError(f"{what} through a pointer made from an integer: an address is not "
                        f"aligned to the {et.itemsize}-byte elements of {best.name!r}")
    buf = best if best.dtype == et else best.retyped(et)
    return wrap(off if off.ndim else off[()], p.dtype, type(p) is BatchedTensor, buf)


def split(p: tensor, what: str) -> list[tuple[tensor, Any]]:
    """``p`` as pointers into kernel arguments, one per argument its lanes point into.

    Parameters
    ----------
    p : tensor
        Pointer block; one into a kernel argument (``buf`` set) is returned as is.
    what : str
        Builtin name for error messages.

    Returns
    -------
    list of (tensor, ndarray of bool or None)
        Pairs of a pointer into one argument and the lanes (shape of ``p``)
        that point into it; the lane masks partition the block.  One pair
        with mask None when all lanes point into one argument (or none:
        :func:`resolve` reports that).  Lanes in no argument go with the
        first pair, whose bounds check reports them when they are active.

    Raises
    ------
    NeedsSequential
        In a batched run, when the lanes point into several arguments.
    """
    if p.buf is not None:
        return [(p, None)]
    st = current(what)
    a = np.asarray(values(p), np.int64)
    hit = []
    for b in st.buffers:
        lo = b.base_addr
        inb = (a >= lo) & (a < lo + b.n * b.itemsize)
        if inb.any():
            hit.append((b, inb))
    if len(hit) <= 1:
        return [(resolve(p, what), None)]
    if type(p) is BatchedTensor:
        raise NeedsSequential(f"{what} through pointers into several arguments")
    nowhere = ~np.logical_or.reduce([inb for _, inb in hit])
    parts = []
    for i, (b, inb) in enumerate(hit):
        lanes = inb | nowhere if i == 0 else inb
        q = np.where(lanes, a, np.int64(b.base_addr))  # other lanes: the argument's start
        parts.append((resolve(wrap(q if q.ndim else q[()], p.dtype, False), what), lanes))
    return parts
