"""Tensor descriptors (TMA-style) and block pointers.

A descriptor describes a strided tensor (``base``, ``shape``, ``strides``)
and a block shape; ``desc.load([o0, o1])`` reads the block whose origin is
element coordinate ``(o0, o1)``.  As with Hopper's TMA, the parts of the
block outside ``shape`` read as zero (NaN with ``padding_option="nan"``)
and are never written; they do not touch memory and are not counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang import _semantic as S
from autotile.lang._memory import access
from autotile.lang._pointers import resolve
from autotile.lang._state import current, type_str
from autotile.lang._tensor import tensor, to_tensor, unwrap

__all__ = ["make_tensor_descriptor", "TensorDescriptor", "load_tensor_descriptor",
           "store_tensor_descriptor", "make_block_ptr", "advance"]


def _ints(vals: Any, what: str) -> tuple[int, ...]:
    vals = unwrap(vals)
    if isinstance(vals, tensor):
        raise LangError(f"{what} must be a list of scalars, got a block of shape {vals.shape}")
    out = []
    for v in vals:
        v = unwrap(v)
        if isinstance(v, tensor):
            if v.shape:
                raise LangError(f"{what} entries must be scalars, got shape {v.shape}")
            v = int(v.v)
        out.append(int(v))
    return tuple(out)


def _block_coords(origin: tuple[int, ...], block: tuple[int, ...]) -> list[Any]:
    nd = len(block)
    coords = []
    for d in range(nd):
        shp = [1] * nd
        shp[d] = block[d]
        coords.append((origin[d] + np.arange(block[d], dtype=np.int64)).reshape(shp))
    return coords


def _gather(st: Any, base: tensor, shape: tuple[int, ...], strides: tuple[int, ...],
            origin: tuple[int, ...], block: tuple[int, ...], check: tuple[int, ...],
            padding: str, name: str, masked_label: bool) -> tensor:
    buf, et = base.buf, base.dtype.element_ty
    coords = _block_coords(origin, block)
    off = np.full(block, int(base.v), dtype=np.int64)
    inb = np.ones(block, dtype=bool)
    for d, c in enumerate(coords):
        off = off + c * strides[d]
        if d in check:
            inb = inb & (c >= 0) & (c < shape[d])
    m = None if inb.all() else inb
    act = access(st, buf, off, m, False)
    fill = np.nan if padding == "nan" else 0
    val = np.empty(block, dtype=et.np)
    if m is None:
        val[...] = et.to_compute(buf.flat[act]).reshape(block)
    else:
        val[...] = et.cast(np.asarray(fill))
        val[m] = et.to_compute(buf.flat[act])
    if st.ir is not None:
        st.emit(f"{name} {buf.name}{' (masked)' if masked_label else ''} : "
                f"{type_str(block, et)}")
    return tensor(val, et)


def _scatter(st: Any, base: tensor, shape: tuple[int, ...], strides: tuple[int, ...],
             origin: tuple[int, ...], block: tuple[int, ...], check: tuple[int, ...],
             value: Any, name: str) -> None:
    buf, et = base.buf, base.dtype.element_ty
    vt = to_tensor(value)
    try:
        vv = np.broadcast_to(vt.v, block)
    except ValueError:
        raise LangError(f"stored block of shape {vt.shape} does not match the block shape "
                        f"{block}") from None
    coords = _block_coords(origin, block)
    off = np.full(block, int(base.v), dtype=np.int64)
    inb = np.ones(block, dtype=bool)
    for d, c in enumerate(coords):
        off = off + c * strides[d]
        if d in check:
            inb = inb & (c >= 0) & (c < shape[d])
    m = None if inb.all() else inb
    act = access(st, buf, off, m, True)
    if act.size:
        if st.batch is not None:
            st.batch.save(buf, act)
        vals = np.ravel(vv) if m is None else np.asarray(vv)[m]
        buf.flat[act] = et.to_storage(et.cast(vals))
    if st.ir is not None:
        st.emit(f"{name} {buf.name} : {type_str(block, et)}")


class _DeviceDescriptor:
    """A tensor descriptor inside a kernel (result of ``make_tensor_descriptor``)."""

    def __init__(self, base: tensor, shape: tuple[int, ...], strides: tuple[int, ...],
                 block_shape: tuple[int, ...], padding_option: str = "zero"):
        self.base = base
        self.shape = shape
        self.strides = strides
        self.block_shape = block_shape
        self.padding_option = padding_option
        self.dtype = base.dtype.element_ty

    def load(self, offsets: Any) -> tensor:
        """Load the block whose origin is element coordinate ``offsets``."""
        st = current("tensor_descriptor.load")
        o = _ints(offsets, "descriptor offsets")
        if len(o) != len(self.block_shape):
            raise LangError(f"descriptor of rank {len(self.block_shape)} got {len(o)} offsets")
        return _gather(st, self.base, self.shape, self.strides, o, self.block_shape,
                       tuple(range(len(o))), self.padding_option, "tt.descriptor_load", False)

    def store(self, offsets: Any, value: Any) -> None:
        """Store ``value`` into the block at ``offsets``; out-of-range parts are dropped."""
        st = current("tensor_descriptor.store")
        o = _ints(offsets, "descriptor offsets")
        if len(o) != len(self.block_shape):
            raise LangError(f"descriptor of rank {len(self.block_shape)} got {len(o)} offsets")
        _scatter(st, self.base, self.shape, self.strides, o, self.block_shape,
                 tuple(range(len(o))), value, "tt.descriptor_store")


def make_tensor_descriptor(base: Any, shape: Any, strides: Any, block_shape: Any,
                           padding_option: str = "zero") -> _DeviceDescriptor:
    """Describe a strided tensor for block loads/stores by coordinates.

    Parameters
    ----------
    base : pointer scalar
        Pointer to element ``(0, ..., 0)``.
    shape, strides : list of int or int scalars
        Extent and stride (in elements) of each dimension; the last stride
        must be 1, as for TMA.
    block_shape : list of constexpr int
        Shape of the blocks ``load``/``store`` move.
    padding_option : {"zero", "nan"}, default="zero"
        Value of out-of-range elements on load.

    Returns
    -------
    descriptor
        With ``.load(offsets)`` and ``.store(offsets, value)``.

    Raises
    ------
    LangError
        On rank mismatch, a non-unit last stride, a non-pointer base, or a
        block whose last dimension spans fewer than 16 bytes (Triton's TMA
        rule).
    """
    base = unwrap(base)
    if not isinstance(base, tensor) or not isinstance(base.dtype, D.pointer_type) or base.shape:
        raise LangError(f"make_tensor_descriptor base must be a scalar pointer, got {base!r}")
    base = resolve(base, "make_tensor_descriptor")
    shp = _ints(shape, "descriptor shape")
    strd = _ints(strides, "descriptor strides")
    blk = S.check_constexpr_shape(tuple(unwrap(b) for b in unwrap(block_shape)),
                                  "descriptor block")
    if not len(shp) == len(strd) == len(blk):
        raise LangError(f"descriptor shape {shp}, strides {strd} and block_shape {blk} must "
                        "have the same length")
    if strd[-1] != 1:
        raise LangError(f"tensor descriptor last dim must be contiguous (stride 1), "
                        f"got strides {strd}")
    elem_bytes = base.dtype.element_ty.itemsize
    if blk[-1] * elem_bytes < 16:  # a TMA box row is at least 16 bytes (Triton's check)
        raise LangError(f"Descriptor block shape must have at least 16 bytes in the last "
                        f"dimension, but got {blk[-1]} * {elem_bytes} = "
                        f"{blk[-1] * elem_bytes} bytes (block_shape={list(blk)})")
    return _DeviceDescriptor(base, shp, strd, blk, padding_option)


def load_tensor_descriptor(desc: Any, offsets: Any) -> tensor:
    """Same as ``desc.load(offsets)``."""
    return desc.load(offsets)  # type: ignore[no-any-return]


def store_tensor_descriptor(desc: Any, offsets: Any, value: Any) -> None:
    """Same as ``desc.store(offsets, value)``."""
    desc.store(offsets, value)


class TensorDescriptor:
    """Host-side descriptor (as ``triton.tools.tensor_descriptor.TensorDescriptor``).

    Pass it as a kernel argument; inside the kernel it is a descriptor with
    ``.load``/``.store``.

    Parameters
    ----------
    base : ndarray
        The tensor.
    shape, strides : list of int
        Shape and strides in elements.
    block_shape : list of int
        Block shape.
    padding : {"zero", "nan"}, default="zero"
        Value of out-of-range elements on load.
    """

    def __init__(self, base: Any, shape: Any, strides: Any, block_shape: Any,
                 padding: str = "zero"):
        self.base = base
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides)
        self.block_shape = tuple(int(b) for b in block_shape)
        self.padding = padding

    @staticmethod
    def from_tensor(tensor: Any, block_shape: Any) -> TensorDescriptor:
        """Describe a whole NumPy array (strides taken from the array)."""
        a = np.asarray(tensor) if not isinstance(tensor, np.ndarray) else tensor
        return TensorDescriptor(tensor, a.shape, [s // a.itemsize for s in a.strides],
                                block_shape)

    def _device_descriptor(self, index: int, name: str) -> tuple[_DeviceDescriptor, list[Any]]:
        from autotile.lang._jit import _array_buffer

        buf, first = _array_buffer(index, name, self.base)
        ptr = tensor(np.int64(first), D.pointer_type(buf.dtype), buf, name)
        if self.strides[-1] != 1:
            raise LangError(f"tensor descriptor {name!r} last dim must be contiguous, got "
                            f"strides {self.strides}")
        return _DeviceDescriptor(ptr, self.shape, self.strides, self.block_shape,
                                 self.padding), [buf]


class _BlockPointer:
    """A block pointer (``tl.make_block_ptr``)."""

    def __init__(self, base: tensor, shape: tuple[int, ...], strides: tuple[int, ...],
                 offsets: tuple[int, ...], block_shape: tuple[int, ...], order: Any):
        self.base = base
        self.shape = shape
        self.strides = strides
        self.offsets = offsets
        self.block_shape = block_shape
        self.order = order

    def _checks(self, boundary_check: Any) -> tuple[int, ...]:
        bc = unwrap(boundary_check)
        if bc is None:
            return ()
        return tuple(int(unwrap(b)) for b in bc)

    def _block_load(self, st: Any, boundary_check: Any, padding_option: str) -> tensor:
        return _gather(st, self.base, self.shape, self.strides, self.offsets, self.block_shape,
                       self._checks(boundary_check), padding_option or "zero", "tt.load",
                       bool(self._checks(boundary_check)))

    def _block_store(self, st: Any, value: Any, boundary_check: Any) -> None:
        _scatter(st, self.base, self.shape, self.strides, self.offsets, self.block_shape,
                 self._checks(boundary_check), value, "tt.store")


def make_block_ptr(base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any,
                   order: Any) -> _BlockPointer:
    """Make a block pointer: a ``block_shape`` window at ``offsets`` of a strided tensor.

    ``tl.load(bp, boundary_check=(0, 1), padding_option="zero")`` masks the
    dimensions listed in ``boundary_check``; unchecked out-of-range elements
    are ordinary accesses (and raise if outside the buffer).

    Raises
    ------
    LangError
        On rank mismatch or a non-pointer base.
    """
    base = unwrap(base)
    if not isinstance(base, tensor) or not isinstance(base.dtype, D.pointer_type) or base.shape:
        raise LangError(f"make_block_ptr base must be a scalar pointer, got {base!r}")
    base = resolve(base, "make_block_ptr")
    shp, strd, offs = _ints(shape, "shape"), _ints(strides, "strides"), _ints(offsets, "offsets")
    blk = S.check_constexpr_shape(tuple(unwrap(b) for b in unwrap(block_shape)), "block")
    if not len(shp) == len(strd) == len(offs) == len(blk):
        raise LangError(f"make_block_ptr shape {shp}, strides {strd}, offsets {offs} and "
                        f"block_shape {blk} must have the same length")
    return _BlockPointer(base, shp, strd, offs, blk, order)


def advance(base: Any, offsets: Any) -> _BlockPointer:
    """Return the block pointer moved by ``offsets`` elements per dimension."""
    o = _ints(offsets, "advance offsets")
    if len(o) != len(base.offsets):
        raise LangError(f"advance needs {len(base.offsets)} offsets, got {len(o)}")
    return _BlockPointer(base.base, base.shape, base.strides,
                         tuple(a + b for a, b in zip(base.offsets, o)), base.block_shape,
                         base.order)
