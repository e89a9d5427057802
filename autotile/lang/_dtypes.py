"""Data types of the tile language and the bfloat16 and fp8 representations.

Every ``tl`` dtype has a *compute* NumPy dtype (how values live inside a
kernel) and a *storage* NumPy dtype (how they sit in a buffer).  They agree
for every type except ``bfloat16`` and the fp8 types:

* inside a kernel a bfloat16 block is a ``float32`` array whose values are
  exactly representable in bfloat16 (every cast, arithmetic result, load and
  store is rounded to bfloat16 with round-to-nearest-even);
* in memory a bfloat16 buffer is a :class:`BFloat16Array`, a ``uint16``
  NumPy array (subclass) holding the raw bfloat16 bits.  Create one with
  :func:`bf16_array` and read it back with :func:`bf16_to_float32`;
* the fp8 types (``float8e5``, ``float8e4nv``, ``float8e4b15``,
  ``float8e5b16``, ``float8e4b8``) work the same way: float32 values on the
  format's grid inside a kernel (rounded to nearest even, saturating to the
  largest finite value; :mod:`autotile.lang._fp8`), raw bytes in a
  :class:`Float8Array` buffer (:func:`fp8_array`, :func:`fp8_to_float32`,
  or :func:`reinterpret` of a uint8 array).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.lang._fp8 import FORMATS as _FP8

__all__ = [
    "dtype",
    "pointer_type",
    "BFloat16Array",
    "bf16_array",
    "bf16_to_float32",
    "round_to_bf16",
    "Float8Array",
    "fp8_array",
    "fp8_to_float32",
    "reinterpret",
]

_KIND_BOOL, _KIND_UINT, _KIND_INT, _KIND_FLOAT = 0, 1, 2, 3
#: name -> dtype, filled as the types are defined below (``tl.dtype("int8")``).
_BY_NAME: dict[str, Any] = {}


class dtype:  # noqa: N801 - Triton's name
    """A scalar element type (``tl.float32``, ``tl.int32``, ...).

    Parameters
    ----------
    name : str
        Triton's name, e.g. ``"float16"`` or ``"int1"``.
    compute : numpy dtype
        NumPy dtype of values inside a kernel.
    storage : numpy dtype
        NumPy dtype of a buffer holding this type.
    kind : int
        0 bool, 1 unsigned, 2 signed int, 3 float (Triton's promotion order).
    bits : int
        Bit width of one element in memory.
    """

    __slots__ = ("name", "np", "storage", "kind", "bits", "short", "fp8", "__weakref__")

    #: Triton's lists of type names (``tl.dtype.SINT_TYPES``, ...).
    SINT_TYPES = ("int8", "int16", "int32", "int64")
    UINT_TYPES = ("int1", "uint8", "uint16", "uint32", "uint64")
    FP8_TYPES = ("float8e4b15", "float8e4nv", "float8e4b8", "float8e5", "float8e5b16")
    STANDARD_FP_TYPES = ("float16", "bfloat16", "float32", "float64")
    FP_TYPES = FP8_TYPES + STANDARD_FP_TYPES
    OTHER_TYPES = ("void",)

    def __new__(cls, name: Any, *args: Any) -> dtype:
        if args:
            return super().__new__(cls)
        name = getattr(name, "value", name)  # tl.dtype("int8") or tl.dtype(constexpr)
        found = _BY_NAME.get(name)
        if found is None:
            raise ValueError(f"unknown dtype name {name!r}; known names are "
                             f"{sorted(_BY_NAME)}")
        return found  # type: ignore[no-any-return]

    def __init__(self, name: str, compute: Any = None, storage: Any = None, kind: int = 0,
                 bits: int = 0, short: str = ""):
        if compute is None:  # tl.dtype("int8"): __new__ returned the existing type
            return
        self.fp8 = _FP8.get(name)
        self.name = name
        self.np = np.dtype(compute)
        self.storage = np.dtype(storage)
        self.kind = kind
        self.bits = bits
        self.short = short
        _BY_NAME[name] = self

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    @property
    def primitive_bitwidth(self) -> int:
        """Bit width of one element."""
        return self.bits

    @property
    def itemsize(self) -> int:
        """Bytes of one element in memory."""
        return max(1, self.bits // 8)

    @property
    def scalar(self) -> dtype:
        """The element type itself (Triton compatibility)."""
        return self

    def is_floating(self) -> bool:
        """Whether this is a floating-point type."""
        return self.kind == _KIND_FLOAT

    def is_int(self) -> bool:
        """Whether this is an integer type (including ``int1``)."""
        return self.kind != _KIND_FLOAT

    def is_int_signed(self) -> bool:
        """Whether this is a signed integer type."""
        return self.kind == _KIND_INT

    def is_int_unsigned(self) -> bool:
        """Whether this is an unsigned integer type."""
        return self.kind == _KIND_UINT

    def is_bool(self) -> bool:
        """Whether this is ``int1``."""
        return self.kind == _KIND_BOOL

    def is_fp16(self) -> bool:
        """Whether this is ``float16``."""
        return self.name == "float16"

    def is_bf16(self) -> bool:
        """Whether this is ``bfloat16``."""
        return self.name == "bfloat16"

    def is_fp32(self) -> bool:
        """Whether this is ``float32``."""
        return self.name == "float32"

    def is_fp64(self) -> bool:
        """Whether this is ``float64``."""
        return self.name == "float64"

    def is_fp8(self) -> bool:
        """Whether this is one of the 8-bit float types."""
        return self.fp8 is not None

    def is_fp8e4nv(self) -> bool:
        """Whether this is ``float8e4nv``."""
        return self.name == "float8e4nv"

    def is_fp8e5(self) -> bool:
        """Whether this is ``float8e5``."""
        return self.name == "float8e5"

    def is_fp8e4b15(self) -> bool:
        """Whether this is ``float8e4b15``."""
        return self.name == "float8e4b15"

    def is_ptr(self) -> bool:
        """Whether this is a pointer type (never, for a scalar dtype)."""
        return False

    def is_block(self) -> bool:
        """Whether this is a block type (never, for a scalar dtype)."""
        return False

    @property
    def int_bitwidth(self) -> int:
        """Bit width of an integer type (Triton compatibility)."""
        return self.bits if self.kind != _KIND_FLOAT else 0

    @property
    def fp_mantissa_width(self) -> int:
        """Explicit mantissa bits of a float type (Triton compatibility)."""
        if self.fp8 is not None:
            return self.fp8.mbits
        return {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}.get(self.name, 0)

    @property
    def exponent_bias(self) -> int:
        """Exponent bias of a float type (Triton compatibility)."""
        if self.fp8 is not None:
            return self.fp8.bias
        return {"float16": 15, "bfloat16": 127, "float32": 127, "float64": 1023}.get(self.name, 0)

    def get_int_max_value(self) -> int:
        """Largest value of an integer type."""
        return int(np.iinfo(self.np).max) if self.kind != _KIND_BOOL else 1

    def get_int_min_value(self) -> int:
        """Smallest value of an integer type."""
        return int(np.iinfo(self.np).min) if self.kind != _KIND_BOOL else 0

    def to_compute(self, raw: Any) -> Any:
        """Convert raw storage values (from a buffer) to compute values."""
        if self.name == "bfloat16":
            return bf16_to_float32(raw)
        if self.fp8 is not None:
            return self.fp8.decode(raw)
        return raw

    def to_storage(self, vals: Any) -> Any:
        """Convert compute values to storage values (for a buffer)."""
        if self.name == "bfloat16":
            return _f32_to_bf16_bits(np.asarray(vals, dtype=np.float32))
        if self.fp8 is not None:
            return self.fp8.encode(vals)
        return np.asarray(vals).astype(self.storage, copy=False)

    def cast(self, vals: Any) -> Any:
        """Cast NumPy values of any dtype to this type's compute representation.

        bfloat16 and fp8 values are rounded to their grid (nearest even; fp8
        saturates to its largest finite value, see :mod:`autotile.lang._fp8`).
        """
        if self.name == "bfloat16":
            return round_to_bf16(vals)
        if self.fp8 is not None:
            return self.fp8.round(vals)
        if self.kind == _KIND_BOOL:
            return np.asarray(vals) != 0
        a = np.asarray(vals)
        if a.dtype.kind == "f" and self.kind != _KIND_FLOAT:
            return float_to_int(a, self.np)
        return a.astype(self.np, copy=False)

    @property
    def rounds(self) -> bool:
        """Whether compute values are float32 rounded to a narrower grid (bf16, fp8)."""
        return self.name == "bfloat16" or self.fp8 is not None


def float_to_int(vals: Any, np_dtype: Any) -> Any:
    """Float values converted to the integer NumPy type ``np_dtype`` as the GPU's ``cvt.rzi``.

    Truncates toward zero and saturates: values above the type's range give its
    maximum (including +inf), below it its minimum (including -inf), NaN gives 0.
    The bounds are compared in float64 against powers of two, so ``2.0**63``
    (which is what ``float(int64 max)`` rounds to) saturates instead of wrapping.
    """
    f = np.trunc(np.asarray(vals, dtype=np.float64))
    info = np.iinfo(np_dtype)
    over = f >= float(int(info.max) + 1)   # a power of two, exact in float64
    under = f < float(info.min)            # 0 or -2**(bits-1), exact
    bad = over | under | np.isnan(f)
    r = np.where(bad, 0.0, f).astype(np_dtype)
    if bad.any():
        r = np.where(over, info.max, np.where(under, info.min, r)).astype(np_dtype)
    return r


class pointer_type:  # noqa: N801 - Triton's name
    """Type of a pointer (or a block of pointers) to ``element_ty``.

    Parameters
    ----------
    element_ty : dtype
        Type of the pointed-to elements.
    """

    __slots__ = ("element_ty",)

    def __init__(self, element_ty: dtype):
        self.element_ty = element_ty

    def __repr__(self) -> str:
        return f"pointer<{self.element_ty.name}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, pointer_type) and other.element_ty is self.element_ty

    def __hash__(self) -> int:
        return hash(("ptr", self.element_ty.name))

    @property
    def name(self) -> str:
        """Triton's name of the pointer type, e.g. ``"pointer<int32>"``."""
        return repr(self)

    @property
    def scalar(self) -> pointer_type:
        """The pointer type itself (Triton compatibility)."""
        return self

    def is_ptr(self) -> bool:
        """Whether this is a pointer type (always)."""
        return True

    def is_floating(self) -> bool:
        """Pointers are not floats."""
        return False

    def is_int(self) -> bool:
        """Pointers are not integers."""
        return False


int1 = dtype("int1", np.bool_, np.bool_, _KIND_BOOL, 8, "i1")
int8 = dtype("int8", np.int8, np.int8, _KIND_INT, 8, "i8")
int16 = dtype("int16", np.int16, np.int16, _KIND_INT, 16, "i16")
int32 = dtype("int32", np.int32, np.int32, _KIND_INT, 32, "i32")
int64 = dtype("int64", np.int64, np.int64, _KIND_INT, 64, "i64")
uint8 = dtype("uint8", np.uint8, np.uint8, _KIND_UINT, 8, "u8")
uint16 = dtype("uint16", np.uint16, np.uint16, _KIND_UINT, 16, "u16")
uint32 = dtype("uint32", np.uint32, np.uint32, _KIND_UINT, 32, "u32")
uint64 = dtype("uint64", np.uint64, np.uint64, _KIND_UINT, 64, "u64")
float16 = dtype("float16", np.float16, np.float16, _KIND_FLOAT, 16, "float16")
bfloat16 = dtype("bfloat16", np.float32, np.uint16, _KIND_FLOAT, 16, "bfloat16")
float32 = dtype("float32", np.float32, np.float32, _KIND_FLOAT, 32, "float32")
float64 = dtype("float64", np.float64, np.float64, _KIND_FLOAT, 64, "float64")
float8e5 = dtype("float8e5", np.float32, np.uint8, _KIND_FLOAT, 8, "fp8e5")
float8e4nv = dtype("float8e4nv", np.float32, np.uint8, _KIND_FLOAT, 8, "fp8e4nv")
float8e4b15 = dtype("float8e4b15", np.float32, np.uint8, _KIND_FLOAT, 8, "fp8e4b15")
float8e5b16 = dtype("float8e5b16", np.float32, np.uint8, _KIND_FLOAT, 8, "fp8e5b16")
float8e4b8 = dtype("float8e4b8", np.float32, np.uint8, _KIND_FLOAT, 8, "fp8e4b8")

ALL_DTYPES = (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, bfloat16, float32, float64)
FP8_DTYPES = (float8e5, float8e4nv, float8e4b15, float8e5b16, float8e4b8)

_FROM_NUMPY = {
    np.dtype(np.bool_): int1,
    np.dtype(np.int8): int8,
    np.dtype(np.int16): int16,
    np.dtype(np.int32): int32,
    np.dtype(np.int64): int64,
    np.dtype(np.uint8): uint8,
    np.dtype(np.uint16): uint16,
    np.dtype(np.uint32): uint32,
    np.dtype(np.uint64): uint64,
    np.dtype(np.float16): float16,
    np.dtype(np.float32): float32,
    np.dtype(np.float64): float64,
}


def from_numpy(np_dtype: Any) -> dtype | None:
    """Return the ``tl`` dtype of a NumPy dtype, or None if unsupported."""
    return _FROM_NUMPY.get(np.dtype(np_dtype))


class BFloat16Array(np.ndarray):
    """A ``uint16`` NumPy array whose elements are raw bfloat16 bits.

    Passing one to a kernel gives a pointer to ``tl.bfloat16``.  Build it with
    :func:`bf16_array`; convert back with :func:`bf16_to_float32`.
    """


def _f32_to_bf16_bits(x: npt.NDArray[np.float32]) -> npt.NDArray[np.uint16]:
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    bias = ((b >> np.uint32(16)) & np.uint32(1)) + np.uint32(0x7FFF)
    r = ((b + bias) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        r = np.where(nan, ((b >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16), r)
    return r


def round_to_bf16(x: Any) -> Any:
    """Round values to the nearest bfloat16 (ties to even), returned as float32.

    Parameters
    ----------
    x : array-like
        Values of any float or int dtype.  float64 inputs are first rounded
        to float32 (a double rounding that can differ from a direct
        float64->bfloat16 conversion only on exact float32 ties).

    Returns
    -------
    ndarray of float32
        Same shape, every value exactly representable in bfloat16.
    """
    a = np.asarray(x, dtype=np.float32)
    bits = _f32_to_bf16_bits(a).astype(np.uint32) << np.uint32(16)
    return bits.view(np.float32).reshape(a.shape)


def bf16_to_float32(a: Any) -> npt.NDArray[np.float32]:
    """Decode raw bfloat16 bits (uint16) to float32 values (exact).

    Parameters
    ----------
    a : ndarray of uint16
        Raw bits, e.g. a :class:`BFloat16Array`.

    Returns
    -------
    ndarray of float32
        Same shape.
    """
    raw = np.asarray(a).view(np.uint16) if np.asarray(a).dtype == np.uint16 else np.asarray(a)
    out = (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return out.reshape(np.shape(a))


def bf16_array(x: Any) -> BFloat16Array:
    """Make a bfloat16 buffer from values (rounded to nearest even).

    Parameters
    ----------
    x : array-like
        Values of any real dtype and shape.

    Returns
    -------
    BFloat16Array
        Same shape, dtype uint16 holding bfloat16 bits, C-contiguous.

    Examples
    --------
    >>> import numpy as np
    >>> a = bf16_array(np.array([1.0, 1.00390625]))
    >>> bf16_to_float32(a).tolist()
    [1.0, 1.0]
    """
    a = np.asarray(x, dtype=np.float32)
    return np.ascontiguousarray(_f32_to_bf16_bits(a).reshape(a.shape)).view(BFloat16Array)


def py_scalar_dtype(v: Any) -> dtype:
    """Type Triton gives a Python scalar: int1, int32/int64/uint64 or float32."""
    if isinstance(v, bool):
        return int1
    if isinstance(v, int):
        if -(2**31) <= v < 2**31:
            return int32
        if -(2**63) <= v < 2**63:
            return int64
        return uint64
    return float32


def literal_dtype(v: Any) -> dtype:
    """Type Triton gives a Python scalar inside a kernel (``semantic.to_tensor``).

    bool is int1; an int is int32, uint32, int64 or uint64, the first whose
    range holds it; a float is float32, or float64 when its magnitude is
    outside float32's normal range (not 0, inf or NaN).  Kernel *arguments*
    follow :func:`py_scalar_dtype` instead.

    Raises
    ------
    LangError
        For an int outside ``[-2**63, 2**64)`` ("Nonrepresentable integer").
    """
    if isinstance(v, bool):
        return int1
    if isinstance(v, int):
        if -(2**31) <= v < 2**31:
            return int32
        if 2**31 <= v < 2**32:
            return uint32
        if -(2**63) <= v < 2**63:
            return int64
        if 2**63 <= v < 2**64:
            return uint64
        from autotile.errors import LangError

        raise LangError(f"Nonrepresentable integer {v}: a kernel literal must fit int64 or "
                        f"uint64")
    a = abs(float(v))
    if a == 0.0 or a == float("inf") or a != a or 2.0**-126 <= a <= (2 - 2**-23) * 2.0**127:
        return float32
    return float64


class Float8Array(np.ndarray):
    """A ``uint8`` NumPy array whose elements are raw fp8 bytes of ``fp8_dtype``.

    Passing one to a kernel gives a pointer to ``fp8_dtype``.  Build it with
    :func:`fp8_array` (from values) or :func:`reinterpret` (from raw bytes);
    convert back with :func:`fp8_to_float32`.

    Attributes
    ----------
    fp8_dtype : dtype
        One of ``float8e5``, ``float8e4nv``, ``float8e4b15``, ``float8e5b16``,
        ``float8e4b8``; kept by slices and views.
    """

    fp8_dtype: dtype

    def __array_finalize__(self, obj: Any) -> None:
        self.fp8_dtype = getattr(obj, "fp8_dtype", None)  # type: ignore[assignment]


def _fp8_type(dt: Any) -> dtype:
    dt = getattr(dt, "value", dt)
    if not isinstance(dt, dtype) or dt.fp8 is None:
        from autotile.errors import LangError

        raise LangError(f"expected an fp8 dtype (one of {[d.name for d in FP8_DTYPES]}), "
                        f"got {dt!r}")
    return dt


def fp8_array(x: Any, fp8_dtype: Any) -> Float8Array:
    """Make an fp8 buffer from values (nearest even, saturating).

    Parameters
    ----------
    x : array-like
        Values of any real dtype and shape.
    fp8_dtype : dtype
        The fp8 type, e.g. ``tl.float8e4nv``.

    Returns
    -------
    Float8Array
        Same shape, dtype uint8 holding the fp8 bytes, C-contiguous.

    Examples
    --------
    >>> import numpy as np
    >>> a = fp8_array(np.array([1.0, 1.1, 1000.0]), float8e4nv)
    >>> fp8_to_float32(a).tolist()
    [1.0, 1.125, 448.0]
    """
    dt = _fp8_type(fp8_dtype)
    fmt = dt.fp8
    assert fmt is not None  # checked by _fp8_type
    raw = np.ascontiguousarray(fmt.encode(x)).view(Float8Array)
    raw.fp8_dtype = dt
    return raw


def fp8_to_float32(a: Float8Array, fp8_dtype: Any = None) -> npt.NDArray[np.float32]:
    """Decode raw fp8 bytes to float32 values (exact).

    Parameters
    ----------
    a : Float8Array or ndarray of uint8
        Raw bytes.
    fp8_dtype : dtype, optional
        The fp8 type; defaults to ``a.fp8_dtype``.

    Returns
    -------
    ndarray of float32
        Same shape.
    """
    dt = _fp8_type(fp8_dtype if fp8_dtype is not None else getattr(a, "fp8_dtype", None))
    fmt = dt.fp8
    assert fmt is not None  # checked by _fp8_type
    return fmt.decode(np.asarray(a).view(np.uint8))


def reinterpret(a: Any, dtype_: Any) -> Any:
    """View raw bytes as a buffer of a narrow float type (``triton.reinterpret``).

    Parameters
    ----------
    a : ndarray
        A uint8 (or int8) array for an fp8 type, a uint16 (or int16) array
        for ``bfloat16``; any other array is returned as a view of
        ``dtype_``'s storage dtype.
    dtype_ : dtype
        The element type a kernel sees.

    Returns
    -------
    Float8Array, BFloat16Array or ndarray
        A view of ``a``'s memory (no copy).

    Raises
    ------
    LangError
        If ``a``'s itemsize differs from ``dtype_``'s.
    """
    dt = getattr(dtype_, "value", dtype_)
    arr = np.asarray(a)
    if not isinstance(dt, dtype) or arr.itemsize != dt.storage.itemsize:
        from autotile.errors import LangError

        raise LangError(f"reinterpret needs an array whose itemsize matches the dtype, got "
                        f"{arr.dtype} (itemsize {arr.itemsize}) and {dt!r}")
    if dt.fp8 is not None:
        out = arr.view(np.uint8).view(Float8Array)
        out.fp8_dtype = dt
        return out
    if dt is bfloat16:
        return arr.view(np.uint16).view(BFloat16Array)
    return arr.view(dt.storage)
