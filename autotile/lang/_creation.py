"""Program ids and creation builtins: ``program_id``, ``arange``, ``full``, ``zeros``, ``cast``.

Triton's "programming model" and "creation ops": the values a kernel starts
from (the program's id along each grid axis, ranges, constant blocks) and
conversions between dtypes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang import _opcount
from autotile.lang import _semantic as S
from autotile.lang._operands import as_dtype, emit
from autotile.lang._pointers import int_to_pointer, pointer_to_int
from autotile.lang._state import CURRENT, current, shape_str, type_str
from autotile.lang._tensor import BatchedTensor, tensor, to_tensor, unwrap, values, wrap

__all__ = ["program_id", "num_programs", "arange", "full", "zeros", "zeros_like", "cast"]


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


def full(shape: Any, value: Any, dtype: Any) -> tensor:
    """Return a block of ``shape`` filled with ``value`` cast to ``dtype``.

    Raises
    ------
    LangError
        If ``shape`` is not a tuple of constexpr ints.
    """
    shp = S.check_constexpr_shape(unwrap(shape), "full")
    dt = as_dtype(dtype)
    v = unwrap(value)
    if isinstance(v, tensor):
        v = v.v
    arr = np.empty(shp, dtype=dt.np)
    arr[...] = dt.cast(np.asarray(v))
    emit(f"arith.constant : {type_str(shp, dt)}")
    return tensor(arr, dt)


def zeros(shape: Any, dtype: Any) -> tensor:
    """Return a block of zeros of ``shape`` and ``dtype``."""
    shp = S.check_constexpr_shape(unwrap(shape), "zeros")
    dt = as_dtype(dtype)
    emit(f"arith.constant : {type_str(shp, dt)}")
    return tensor(np.zeros(shp, dtype=dt.np), dt)


def zeros_like(input: Any) -> tensor:
    """Return zeros with the shape and dtype of ``input``."""
    t = to_tensor(input)
    return tensor(np.zeros(t.shape, dtype=t.dtype.np), t.dtype)


def _cast_pointer(t: tensor, dt: Any) -> tensor:
    """Casts with a pointer on either side (Triton's ``semantic.cast`` rules).

    ``ptr.to(tl.pointer_type(T))`` sees the same addresses as pointers to
    ``T``; ``ptr.to(tl.int64)`` is the address and ``x.to(tl.pointer_type(T))``
    of an integer a pointer made from an address (:mod:`autotile.lang._pointers`).

    Raises
    ------
    LangError
        If ``T`` has another size than the pointed-to type (element offsets
        would change meaning), or the cast is one Triton refuses.
    """
    src = t.dtype
    if not isinstance(dt, D.pointer_type):
        out = pointer_to_int(t, as_dtype(dt))
        emit(f"tt.ptr_to_int {src}->{out.dtype} : {shape_str(out.shape)}")
        return out
    if not isinstance(src, D.pointer_type):
        out = int_to_pointer(t, dt)
        emit(f"tt.int_to_ptr {src}->{dt} : {shape_str(out.shape)}")
        return out
    if dt == src:
        return t
    old, new = src.element_ty, dt.element_ty
    if t.buf is None:  # an address: any element type
        return wrap(values(t), dt, type(t) is BatchedTensor)
    if old.itemsize != new.itemsize:
        raise LangError(f"cannot cast {src} to {dt}: the interpreter reinterprets a buffer "
                        f"only between element types of one size ({old.itemsize} and "
                        f"{new.itemsize} bytes)")
    buf = t.buf.retyped(new)
    return wrap(values(t), dt, type(t) is BatchedTensor, buf)


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
    if isinstance(t.dtype, D.pointer_type) or isinstance(unwrap(dtype), D.pointer_type):
        return _cast_pointer(t, unwrap(dtype))
    dt = as_dtype(dtype)
    src = t.dtype
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
        r = D.float_to_int(v, dt.np)
    else:
        r = dt.cast(v)
    out: tensor
    if batched:
        out = BatchedTensor(r, dt)
    else:
        if np.ndim(r) == 0:
            r = np.asarray(r)[()]
        emit(f"tt.cast {src}->{dt} : {shape_str(np.shape(r))}")
        out = tensor(r, dt)
    # a conversion is one ALU lane per element; a bitcast only renames registers
    return out if unwrap(bitcast) else _opcount.alu(out)

