"""The block value of the tile language.

A :class:`tensor` is a thin wrapper around a NumPy array ``v`` (0-d for a
scalar) and a ``tl`` dtype.  A pointer tensor additionally carries the
:class:`~autotile.lang._state.Buffer` it points into, and ``v`` holds int64
*element* offsets into that buffer.  Its Python operators (``+``, ``<``,
``&``, ...) are Triton's, implemented in :mod:`autotile.lang._arith`.

When a launch runs a batch of programs at once (``batch_programs=``, see
:mod:`autotile.lang._batch`), a value that differs between the programs is a
:class:`BatchedTensor`: ``pv`` holds one block per program along a leading
*program axis*.  Program-invariant values (constants, ``arange``, scalar
arguments) stay plain tensors.  Operators align the two before NumPy
broadcasting: a batched operand gets size-1 block axes inserted *after* the
program axis, so block shapes broadcast exactly as in one program.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang._semantic import short_value
from autotile.lang._state import CURRENT, Divergence, NeedsSequential, shape_str

__all__ = ["tensor", "const", "constexpr", "Shape", "to_tensor", "unwrap", "BatchedTensor",
           "values", "aligned", "wrap", "align_pair", "describe"]


class const:  # noqa: N801 - Triton's name
    """Marks a pointer parameter as pointing to constant data (annotation).

    Used as ``in_ptr: tl.const``, as in Triton: the kernel may load through
    the pointer (and pointers derived from it) but ``tl.store`` and the
    atomics refuse it ("Cannot store to a constant pointer").
    """


class constexpr:  # noqa: N801 - Triton's name
    """Marks a kernel parameter as a compile-time constant (annotation).

    Used as ``BLOCK: tl.constexpr``; such arguments reach the kernel as plain
    Python values.  ``tl.constexpr(v)`` also wraps a value.
    """

    __slots__ = ("value",)
    value: Any

    def __init__(self, value: Any = None):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __index__(self) -> int:
        return int(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __eq__(self, other: object) -> bool:
        return bool(self.value == unwrap(other))

    def __hash__(self) -> int:
        return hash(self.value)

    def __getattr__(self, name: str) -> Any:
        if name == "dtype" and isinstance(self.value, (bool, int, float)):
            return D.literal_dtype(self.value)  # tl.constexpr(5).dtype is int32, as in Triton
        return getattr(self.value, name)


class Shape(tuple):  # type: ignore[type-arg]
    """A block shape: a tuple of ints that also equals the list of the same ints.

    Triton's ``tensor.shape`` compares equal to a list (``x.shape == [M, N]``
    in a ``tl.static_assert``); a plain tuple does not.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return tuple(self) == tuple(unwrap(o) for o in other)
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = tuple.__hash__


def unwrap(v: Any) -> Any:
    """Return ``v.value`` for a constexpr, else ``v``."""
    return v.value if isinstance(v, constexpr) else v


_NP_SCALARS = (np.generic,)


def to_tensor(v: Any) -> tensor:
    """Wrap a Python/NumPy scalar (or return a tensor unchanged).

    Raises
    ------
    LangError
        If ``v`` cannot be a kernel value.
    """
    if isinstance(v, tensor):
        return v
    v = unwrap(v)
    if isinstance(v, (bool, int, float)):
        dt = D.literal_dtype(v)
        return tensor(np.array(v, dtype=dt.np)[()], dt)
    if isinstance(v, np.generic):
        ndt = D.from_numpy(v.dtype)
        if ndt is not None:
            return tensor(v, ndt)
    raise LangError(f"expected a tensor or a number, got {type(v).__name__}: {v!r}")


def describe(x: Any) -> str:
    """``x`` for an error message: ``'name' tensor<shape x dtype>`` or its repr."""
    if isinstance(x, tensor):
        nm = f"{x.name!r} " if x.name else ""
        return f"{nm}tensor<{shape_str(x.shape)}x{x.dtype}>"
    return short_value(x)


def _index_axes(idx: Any) -> tuple[int, ...]:
    """Axes a ``x[...]`` index inserts (Triton's ``tensor.__getitem__``).

    ``None`` at position ``i`` inserts a size-1 axis at ``i``; a full slice
    (``:``, ``None:``, ``::None``, ...) keeps the axis (or does nothing past
    the tensor's rank, as in Triton).

    Raises
    ------
    LangError
        For any other index ("unsupported tensor index").
    """
    if not isinstance(idx, tuple):
        idx = (idx,)
    axes = []
    for i, sl in enumerate(idx):
        sl = unwrap(sl)
        if sl is None:
            axes.append(i)
        elif isinstance(sl, slice) and all(unwrap(a) is None for a in (sl.start, sl.stop,
                                                                         sl.step)):
            continue
        else:
            raise LangError(f"unsupported tensor index: {sl!r} (only None and ':' are allowed)")
    return tuple(axes)


class tensor:  # noqa: N801 - Triton's name
    """A block (or 0-d scalar) value inside a kernel.

    Attributes
    ----------
    v : ndarray or numpy scalar
        Values in the dtype's compute representation; for pointers, int64
        element offsets into ``buf``.
    dtype : dtype or pointer_type
        Element type.
    buf : Buffer or None
        Buffer a pointer points into.
    name : str or None
        Kernel parameter name, for kernel arguments (used in messages).
    """

    __slots__ = ("v", "dtype", "buf", "name")
    __array_priority__ = 1000.0

    def __init__(self, v: Any, dtype: Any, buf: Any = None, name: str | None = None):
        self.v = v
        self.dtype = dtype
        self.buf = buf
        self.name = name
        st = CURRENT.get()
        if st is not None:  # max_tile_elems (autotile.lang._opcount), inline: hot path
            n = v.size if type(v) is np.ndarray else 1
            if n > st.ops.max_tile_elems:
                st.ops.max_tile_elems = n

    # -- shape ---------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        """Block shape (``()`` for a scalar); equals the list of the same ints, as in Triton."""
        return Shape(np.shape(self.v))

    @property
    def type(self) -> Any:
        """Element type (Triton's ``tensor.type.scalar``)."""
        return self.dtype

    @property
    def numel(self) -> int:
        """Number of elements."""
        return int(np.size(self.v))

    @property
    def T(self) -> tensor:  # noqa: N802 - Triton's name
        """Transpose of a 2-D tensor."""
        _opcount.layout(self)
        return tensor(np.swapaxes(self.v, -1, -2), self.dtype, self.buf)

    def __repr__(self) -> str:
        return f"tensor({self.v!r}, dtype={self.dtype})"

    def item(self) -> tensor:
        """The one element of a single-element block, as a scalar (Triton's ``_unsplat``).

        Raises
        ------
        LangError
            If the block has more than one element.
        """
        if self.numel != 1:
            raise LangError(f"item() needs a block of one element, got shape "
                            f"{tuple(self.shape)}")
        return tensor(np.asarray(self.v).reshape(-1)[0], self.dtype, self.buf)

    # -- Python protocol -----------------------------------------------------
    def __bool__(self) -> bool:
        if np.size(self.v) != 1:
            raise LangError(f"the truth value of a block of shape {self.shape} is ambiguous; "
                            "use tl.where or reduce it first")
        return bool(np.asarray(self.v).reshape(-1)[0])

    def __index__(self) -> int:
        if np.ndim(self.v) != 0 or isinstance(self.dtype, D.pointer_type) or self.dtype.kind == 3:
            raise LangError(
                f"only integer scalars can be used as Python ints, got {describe(self)}")
        return int(self.v)

    __int__ = __index__

    def __float__(self) -> float:
        return float(self.v)

    __hash__ = object.__hash__

    def __getitem__(self, idx: Any) -> tensor:
        r = self.v
        for a in _index_axes(idx):  # one at a time, as Triton (past the rank: appended)
            r = np.expand_dims(r, min(a, np.ndim(r)))
        st = CURRENT.get()
        if st is not None and st.ir is not None:
            st.emit(f"tt.expand_dims : {shape_str(self.shape)} -> {shape_str(np.shape(r))}")
        return tensor(r, self.dtype, self.buf)

    # -- arithmetic ----------------------------------------------------------
    def __add__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "add")

    def __radd__(self, o: Any) -> tensor:
        return _arith.binary(o, self, "add")

    def __sub__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "sub")

    def __rsub__(self, o: Any) -> tensor:
        return _arith.binary(o, self, "sub")

    def __mul__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "mul")

    def __rmul__(self, o: Any) -> tensor:
        return _arith.binary(o, self, "mul")

    def __truediv__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "truediv")

    def __rtruediv__(self, o: Any) -> tensor:
        return _arith.binary(o, self, "truediv")

    def __floordiv__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "floordiv")

    def __rfloordiv__(self, o: Any) -> tensor:
        return _arith.binary(o, self, "floordiv")

    def __mod__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "mod")

    def __rmod__(self, o: Any) -> tensor:
        return _arith.binary(o, self, "mod")

    def __lt__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "lt")

    def __le__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "le")

    def __gt__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "gt")

    def __ge__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "ge")

    def __eq__(self, o: Any) -> tensor:  # type: ignore[override]
        return _arith.binary(self, o, "eq")

    def __ne__(self, o: Any) -> tensor:  # type: ignore[override]
        return _arith.binary(self, o, "ne")

    def __and__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "and")

    def __rand__(self, o: Any) -> tensor:
        return _arith.binary(o, self, "and")

    def __or__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "or")

    def __ror__(self, o: Any) -> tensor:
        return _arith.binary(o, self, "or")

    def __xor__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "xor")

    def __rxor__(self, o: Any) -> tensor:
        return _arith.binary(o, self, "xor")

    def __lshift__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "lshift")

    def __rlshift__(self, o: Any) -> tensor:
        return _arith.binary(o, self, "lshift")

    def __rshift__(self, o: Any) -> tensor:
        return _arith.binary(self, o, "rshift")

    def __rrshift__(self, o: Any) -> tensor:
        return _arith.binary(o, self, "rshift")

    def __neg__(self) -> tensor:
        if isinstance(self.dtype, D.pointer_type):
            raise LangError("cannot negate a pointer")
        if self.dtype.kind == 0:
            raise LangError("cannot negate an int1 tensor")
        return _arith.negate(self)

    def __pos__(self) -> tensor:
        return self

    def __invert__(self) -> tensor:
        if isinstance(self.dtype, D.pointer_type) or self.dtype.kind == 3:
            raise LangError(f"~ requires an integer or int1 tensor, got {self.dtype}")
        return _opcount.alu(tensor(np.invert(self.v), self.dtype))

    def __abs__(self) -> tensor:
        return _opcount.alu(tensor(np.abs(self.v), self.dtype))


# -- batched values --------------------------------------------------------------------
class BatchedTensor(tensor):
    """A value that differs between the programs of a batched launch.

    ``pv`` has shape ``(n_programs, *block_shape)``: row ``i`` is the value
    in the ``i``-th program of the batch.  ``shape`` is the block shape, as in
    one program.  Reading ``v`` raises :class:`NeedsSequential`, so a builtin
    that does not know the program axis sends the launch back to one program
    at a time instead of computing on the wrong axes.

    Python-level conversions (``bool``, ``int``, ``float``, ``range``) return
    the common value when every program of the batch has the same one and
    raise :class:`Divergence` otherwise.
    """

    __slots__ = ("pv",)

    def __init__(self, pv: Any, dtype: Any, buf: Any = None, name: str | None = None):
        self.pv = pv
        self.dtype = dtype
        self.buf = buf
        self.name = name
        st = CURRENT.get()
        if st is not None:  # max_tile_elems of one program's block
            n = pv.size // pv.shape[0]
            if n > st.ops.max_tile_elems:
                st.ops.max_tile_elems = n

    @property
    def v(self) -> Any:
        """Not available: the builtin reading it runs one program at a time."""
        raise NeedsSequential("a builtin without batched support read a batched value")

    @property
    def shape(self) -> Shape:
        """Block shape of one program (the program axis left out)."""
        return Shape(self.pv.shape[1:])

    @property
    def numel(self) -> int:
        """Number of elements of one program's block."""
        return int(np.prod(self.pv.shape[1:], dtype=np.int64))

    @property
    def T(self) -> tensor:  # noqa: N802 - Triton's name
        """Transpose of a 2-D tensor."""
        if self.pv.ndim != 3:
            raise NeedsSequential("T of a batched value that is not 2-D")
        _opcount.layout(self)
        return BatchedTensor(np.swapaxes(self.pv, -1, -2), self.dtype, self.buf)

    def __repr__(self) -> str:
        return f"BatchedTensor(shape={self.shape}, n_programs={self.pv.shape[0]}, " \
               f"dtype={self.dtype})"

    def _uniform(self, key: Any, what: str) -> Any:
        if self.pv.ndim != 1:
            raise NeedsSequential(f"{what} of a batched block")
        if key.size and (key == key[0]).all():
            return self.pv[0]
        raise Divergence(key)

    def __bool__(self) -> bool:
        return bool(self._uniform(self.pv.astype(bool), "bool"))

    def __index__(self) -> int:
        if isinstance(self.dtype, D.pointer_type) or self.dtype.kind == 3:
            raise NeedsSequential("int() of a batched pointer or float")
        return int(self._uniform(self.pv, "int"))

    __int__ = __index__

    def __float__(self) -> float:
        pv = np.ascontiguousarray(self.pv)
        key = pv.view(np.dtype(f"u{pv.itemsize}")) if pv.dtype.kind in "fc" else pv
        return float(self._uniform(key, "float"))

    def __getitem__(self, idx: Any) -> tensor:
        pv = self.pv
        for a in _index_axes(idx):
            pv = np.expand_dims(pv, min(a, pv.ndim - 1) + 1)
        return BatchedTensor(pv, self.dtype, self.buf)

    def __neg__(self) -> tensor:
        if isinstance(self.dtype, D.pointer_type) or self.dtype.kind == 0:
            raise NeedsSequential("negation of a pointer or int1")
        return _arith.negate(self)

    def __invert__(self) -> tensor:
        if isinstance(self.dtype, D.pointer_type) or self.dtype.kind == 3:
            raise NeedsSequential("~ of a pointer or float")
        return _opcount.alu(BatchedTensor(np.invert(self.pv), self.dtype))

    def __abs__(self) -> tensor:
        return _opcount.alu(BatchedTensor(np.abs(self.pv), self.dtype))


def values(t: tensor) -> Any:
    """Values of ``t`` with the program axis when batched (for elementwise code only)."""
    return t.pv if type(t) is BatchedTensor else t.v


def wrap(r: Any, dtype: Any, batched: bool, buf: Any = None) -> tensor:
    """A :class:`BatchedTensor` of ``r`` when ``batched``, else a plain tensor."""
    return BatchedTensor(r, dtype, buf) if batched else tensor(r, dtype, buf)


def _pad(pv: Any, rank: int) -> Any:
    """Insert size-1 block axes after the program axis up to block rank ``rank``."""
    pad = rank + 1 - pv.ndim
    if pad <= 0:
        return pv
    return pv.reshape(pv.shape[:1] + (1,) * pad + pv.shape[1:])


def align_pair(a: Any, av: Any, b: Any, bv: Any) -> tuple[Any, Any]:
    """Values ``av``/``bv`` of operands ``a``/``b`` aligned as :func:`aligned` does."""
    rank = max(np.ndim(av) - (type(a) is BatchedTensor), np.ndim(bv) - (type(b) is BatchedTensor))
    if type(a) is BatchedTensor:
        av = _pad(av, rank)
    if type(b) is BatchedTensor:
        bv = _pad(bv, rank)
    return av, bv


def aligned(*ts: tensor) -> tuple[list[Any], bool]:
    """Values of ``ts`` ready for NumPy broadcasting, and whether any is batched.

    Batched operands get size-1 block axes after the program axis up to the
    largest block rank of ``ts``; plain operands are returned as they are
    (NumPy aligns them on the right, inside the block axes).
    """
    if not any(type(t) is BatchedTensor for t in ts):
        return [t.v for t in ts], False
    rank = max(len(t.shape) for t in ts)
    return [_pad(t.pv, rank) if type(t) is BatchedTensor else t.v for t in ts], True


# ``tensor``'s operators call ``_arith.binary``, and ``_arith`` builds tensors: import
# it last and as a module, so that either module may be imported first.
from autotile.lang import _arith, _opcount  # noqa: E402
