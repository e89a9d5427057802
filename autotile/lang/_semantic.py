"""Argument checks and type promotion of the tile language (Triton's rules).

Promotion follows ``triton/language/semantic.py``:

* a Python scalar of a lower or equal kind (bool < int < float; signed and
  unsigned integers are one kind) than the tensor it meets takes the
  tensor's type (``x_fp16 * 2.0`` is float16, ``x_uint8 // 3`` is uint8);
* float64 > float32 > float16 > bfloat16 > fp8; float16 with bfloat16 is
  float16; ``/`` and ``%`` on float16/bfloat16 compute in float32; two
  different fp8 types give float16;
* integers of equal signedness promote to the wider one, mixed signedness to
  the unsigned type unless the signed one is wider (C's rules); ``/`` on
  integers is a float32 division; ``//`` is defined for integers only, and
  ``/ // %`` refuse operands of different signedness.

Error messages start with Triton's wording ("invalid operands of type",
"Cannot use /, #, or % with ...", "Scalar ... is out of range for type
...", "invalid axis ..."), so searching Triton's documentation and issues
for a message finds the rule.
"""

from __future__ import annotations

import operator
import reprlib
import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang._backend import TritonBackendWarning, current_backend

__all__ = [
    "computation_type",
    "integer_promote",
    "check_power_of_two_range",
    "check_numel",
    "MAX_TENSOR_NUMEL",
    "check_constexpr_shape",
    "check_dot_shapes",
    "check_input_precision",
    "DOT_INPUT_PRECISIONS",
    "check_axis",
    "wrap_axis",
    "check_grid",
    "check_batch_programs",
    "check_programs",
    "check_sanitize_overflow",
    "check_num_warps",
    "check_writable",
    "MAX_PROGRAMS",
]

#: Most programs one launch may run.  The interpreter runs programs one after
#: another and keeps a few int64 counters per program, so a larger grid could
#: only fail later in a huge allocation (or run for days).
MAX_PROGRAMS = 2**24
_MAX_GRID_ENTRY = 2**31 - 1

_PROMOTE_CACHE: dict[tuple[Any, ...], D.dtype] = {}


def integer_promote(a: D.dtype, b: D.dtype) -> D.dtype:
    """Promote two integer types (Triton's ``integer_promote_impl``)."""
    if a is b:
        return a
    if a.kind == b.kind or D.int1 in (a, b):
        if a.kind == 0:
            return b
        if b.kind == 0:
            return a
        return a if a.bits >= b.bits else b
    u, s = (a, b) if a.kind == 1 else (b, a)
    return u if u.bits >= s.bits else s


def computation_type(a: D.dtype, a_scalar: bool, b: D.dtype, b_scalar: bool,
                     div_or_mod: bool = False) -> D.dtype:
    """Return the type an arithmetic op computes in.

    Parameters
    ----------
    a, b : dtype
        Operand types.
    a_scalar, b_scalar : bool
        Whether the operand is a Python scalar (not a tensor).
    div_or_mod : bool, default=False
        Whether the op is ``/``, ``//`` or ``%``.

    Returns
    -------
    dtype
        The common type.
    """
    key = (a, a_scalar, b, b_scalar, div_or_mod)
    r = _PROMOTE_CACHE.get(key)
    if r is None:
        r = _computation_type(a, a_scalar, b, b_scalar, div_or_mod)
        _PROMOTE_CACHE[key] = r
    return r


def _triton_kind(t: D.dtype) -> int:
    """Triton's ``dtype.kind()``: 0 bool, 1 integer (signed or not), 2 float."""
    return 0 if t.kind == 0 else (2 if t.kind == 3 else 1)


def _computation_type(a: D.dtype, a_scalar: bool, b: D.dtype, b_scalar: bool,
                      div_or_mod: bool) -> D.dtype:
    if a_scalar != b_scalar:
        # a Python scalar of a lower or equal kind (bool < int < float) takes the tensor's type
        s, t = (a, b) if a_scalar else (b, a)
        if _triton_kind(s) <= _triton_kind(t):
            if div_or_mod and t in (D.float16, D.bfloat16):
                return D.float32
            return t
    if D.float64 in (a, b):
        return D.float64
    if D.float32 in (a, b):
        return D.float32
    if D.float16 in (a, b):
        return D.float32 if div_or_mod else D.float16
    if D.bfloat16 in (a, b):
        if a is b and not div_or_mod:
            return D.bfloat16
        return D.float32
    if a.is_fp8() and b.is_fp8():
        return a if a is b else D.float16
    if a.kind == 3 or b.kind == 3:
        raise LangError(f"unexpected type {a} and {b}")
    if div_or_mod and a.kind != b.kind and a.kind and b.kind:
        raise LangError(
            f"Cannot use /, #, or % with {a} and {b} because they have different signedness; "
            f"this is unlikely to result in a useful answer. Cast them to the same signedness.")
    return integer_promote(a, b)


def wrap_axis(axis: Any, ndim: int) -> int:
    """Normalise an axis of a ``ndim``-D tensor; negative axes count from the end.

    Parameters
    ----------
    axis : int or constexpr
        The axis, in ``[-ndim, ndim)``.
    ndim : int
        Rank of the tensor (for ``expand_dims``: of the result).

    Returns
    -------
    int
        ``axis`` in ``[0, ndim)``.

    Raises
    ------
    LangError
        If ``axis`` is not an int in ``[-ndim, ndim)`` (Triton's "invalid
        axis" message, ``core._wrap_axis``).
    """
    if hasattr(axis, "value") and not hasattr(axis, "v"):
        axis = axis.value
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or \
            not -ndim <= axis < ndim:
        raise LangError(f"invalid axis {axis}. Expected {-ndim} <= axis < {ndim}")
    return int(axis) % ndim


#: Triton's ``TRITON_MAX_TENSOR_NUMEL`` (language/core.py): the most elements of a block.
MAX_TENSOR_NUMEL = 1048576


def check_numel(numel: int, what: str) -> None:
    """Check that a block of ``numel`` elements fits Triton's tensor limit.

    Raises
    ------
    LangError
        If ``numel`` exceeds ``MAX_TENSOR_NUMEL`` (2**20), with Triton's message.
    """
    if numel > MAX_TENSOR_NUMEL:
        raise LangError(f"{what}: numel ({numel}) exceeds triton maximum tensor numel "
                        f"({MAX_TENSOR_NUMEL})")


def check_power_of_two_range(start: Any, end: Any) -> None:
    """Check ``arange(start, end)``: constexpr ints, ``end - start`` a power of two.

    Raises
    ------
    LangError
        If ``start``/``end`` is not a constexpr int or the length is not a
        power of two.
    """
    for nm, v in (("start", start), ("end", end)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise LangError(f"arange {nm} must be a constexpr int, got {nm}={_describe(v)}")
    n = end - start
    if n <= 0 or n & (n - 1):
        raise LangError(
            f"arange's range must be a power of two, got end - start = {end} - {start} = {n}")
    check_numel(n, "arange")


def check_constexpr_shape(shape: Any, what: str) -> tuple[int, ...]:
    """Check that a block shape is a tuple of positive constexpr ints and return it.

    Raises
    ------
    LangError
        If an entry is a runtime tensor or not a positive int.
    """
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise LangError(f"{what} shape must be a tuple of constexpr ints, got {_describe(shape)}")
    out = []
    for d in dims:
        if hasattr(d, "value") and not hasattr(d, "v"):
            d = d.value
        if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
            raise LangError(
                f"{what} shape must be positive constexpr ints, got {_describe(d)} in {dims!r}")
        out.append(int(d))
    numel = 1
    for d in out:
        numel *= d
    check_numel(numel, what)
    return tuple(out)


def triton_type_name(dt: Any) -> str:
    """Return Triton's ``str`` of a dtype (``fp16``, ``bf16``, ``fp8e4nv``, ``int8``, ...).

    Parameters
    ----------
    dt : dtype-like
        A NumPy dtype, an autotile ``tl`` dtype (anything with a ``name``) or a
        dtype name such as ``"float16"``.

    Returns
    -------
    str
        The name Triton prints in its error messages: ``float16/bfloat16/float32/
        float64`` become ``fp16/bf16/fp32/fp64``, ``float8*`` becomes ``fp8*``,
        any other name (``int8``, ``int1``, ...) is returned unchanged.
    """
    name = str(getattr(dt, "name", dt))
    return {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32",
            "float64": "fp64"}.get(name, name.replace("float8", "fp8"))


def check_atomic_type(kind: str, element_ty: Any) -> None:
    """Refuse an atomic on an element type that Triton refuses, with Triton's message.

    As Triton 3.4's ``semantic.atom_red_typechecking_impl`` and ``atomic_cas``:
    the read-modify-write atomics (``add``, ``max``, ``min``, ``xchg``, ``and``,
    ``or``, ``xor``) need elements of at least 16 bits other than int16 and
    uint16, and float16/bfloat16 only with ``add``; ``atomic_cas`` needs 16-,
    32- or 64-bit elements. Triton's CPU interpreter applies the same checks.

    Parameters
    ----------
    kind : str
        The atomic without its ``atomic_`` prefix, e.g. ``"add"`` or ``"cas"``.
    element_ty : dtype
        The pointer's element type.

    Raises
    ------
    LangError
        "atomic_max does not support fp16", "atomic_add does not support int8",
        "atomic_cas only supports elements with width {16, 32, 64}".
    """
    bits = element_ty.primitive_bitwidth
    if kind == "cas":
        if bits not in (16, 32, 64):
            raise LangError("atomic_cas only supports elements with width {16, 32, 64}, "
                            f"got {element_ty}")
        return
    name = triton_type_name(element_ty)
    if name in ("fp16", "bf16") and kind != "add":
        raise LangError(f"atomic_{kind} does not support {name}")
    if name in ("int16", "uint16") or bits < 16:
        raise LangError(f"atomic_{kind} does not support {name}")


def check_dot_shapes(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    """Check ``dot`` operand shapes: rank 2 or 3 and matching inner dimension.

    Raises
    ------
    LangError
        If the ranks differ, are not 2 or 3, or ``a.shape[-1] != b.shape[-2]``.
    """
    if len(a_shape) not in (2, 3) or len(a_shape) != len(b_shape):
        raise LangError(
            f"dot operands must both be 2-D or 3-D, got shapes {a_shape} and {b_shape}")
    if a_shape[-1] != b_shape[-2]:
        raise LangError(
            f"dot inner dimensions must match, got a.shape={a_shape} (K={a_shape[-1]}) "
            f"and b.shape={b_shape} (K={b_shape[-2]})")
    if len(a_shape) == 3 and a_shape[0] != b_shape[0]:
        raise LangError(f"dot batch dimensions must match, got {a_shape} and {b_shape}")


def check_dot_min_size(a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                       bitwidth: int) -> None:
    """Check ``dot``'s smallest block sizes, as Triton's NVIDIA backend does.

    Triton's ``semantic.dot`` asks the target for ``min_dot_size`` and asserts
    ``M >= m, N >= n and K >= k``. On NVIDIA GPUs
    (``third_party/nvidia/backend/compiler.py`` since triton-lang/triton PR
    #7411, July 2025; Triton 3.6.0 has it) that is ``(1, 1, 16)``, and
    ``(1, 1, 32)`` for 8-bit operands (int8, uint8, fp8): ``M`` and ``N`` may be
    small, ``K`` may not. (Earlier Triton 3.x releases asked ``M, N >= 16``
    too; Triton's own CPU interpreter checks nothing.)

    Parameters
    ----------
    a_shape, b_shape : tuple of int
        Operand shapes ``(..., M, K)`` and ``(..., K, N)``, already checked by
        :func:`check_dot_shapes`.
    bitwidth : int
        Bits per operand element (both operands have the same dtype).

    Under the default rules (Triton's CPU interpreter, which checks nothing)
    a smaller ``K`` is computed and warned about; inside
    ``backend_rules("nvidia")`` (the GPU model's runs) it is an error.

    Warns
    -----
    TritonBackendWarning
        Under the interpreter's rules, with the message below.

    Raises
    ------
    LangError
        Under ``backend_rules("nvidia")``: "Input shapes should have M >= 1,
        N >= 1 and K >= 16" (``K >= 32`` for 8-bit operands), Triton's
        message, followed by the shapes and a note that Triton's CPU
        interpreter does not check this minimum.
    """
    m_min, n_min, k_min = (1, 1, 32) if bitwidth == 8 else (1, 1, 16)
    if a_shape[-2] >= m_min and a_shape[-1] >= k_min and b_shape[-1] >= n_min:
        return
    msg = (f"Input shapes should have M >= {m_min}, N >= {n_min} and K >= {k_min}; "
           f"got a.shape={a_shape} and b.shape={b_shape} (M={a_shape[-2]}, "
           f"N={b_shape[-1]}, K={a_shape[-1]}); this is the minimum of Triton's "
           f"NVIDIA backend, which Triton's CPU interpreter does not check")
    if current_backend() == "nvidia":
        raise LangError(msg)
    warnings.warn(f"{msg}: computed as Triton's interpreter does; the kernel will not "
                  f"compile for an NVIDIA GPU (with autotile.lang.backend_rules('nvidia') "
                  f"this is an error)", TritonBackendWarning, stacklevel=4)


#: ``tl.dot``'s ``input_precision`` values (Triton's NVIDIA backend,
#: ``allowed_dot_input_precisions``; matched case-insensitively as Triton does).
DOT_INPUT_PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")


def check_input_precision(value: Any) -> str | None:
    """Check ``tl.dot``'s ``input_precision``: None or one of :data:`DOT_INPUT_PRECISIONS`.

    Returns
    -------
    str or None
        The value in lower case.

    Raises
    ------
    LangError
        If ``value`` is not None and not one of the allowed strings.
    """
    if hasattr(value, "value") and not hasattr(value, "v"):
        value = value.value
    if value is None:
        return None
    if isinstance(value, str) and value.lower() in DOT_INPUT_PRECISIONS:
        return value.lower()
    raise LangError(f"input_precision must be one of {DOT_INPUT_PRECISIONS} or None, got "
                    f"input_precision={short_value(value)}")


def check_axis(axis: Any, ndim: int) -> int:
    """Normalise a reduction axis; negative axes count from the end.

    Raises
    ------
    LangError
        If ``axis`` is out of ``[-ndim, ndim)``.
    """
    if hasattr(axis, "value") and not hasattr(axis, "v"):
        axis = axis.value
    if not isinstance(axis, int) or not -ndim <= axis < max(ndim, 1):
        raise LangError(f"axis must be in [{-ndim}, {ndim}) for a {ndim}-D tensor, got axis={axis}")
    return axis % max(ndim, 1)


def check_grid(grid: Any, max_programs: int | None = MAX_PROGRAMS) -> tuple[int, int, int]:
    """Check a launch grid and pad it to three entries.

    Parameters
    ----------
    grid : int or sequence of int
        What ``kernel[grid]`` got, or what a grid callable returned.  Entries
        must be Python or NumPy integers (not bool, float or str): ``x / 1024``
        is a float, use ``tl.cdiv(x, 1024)``.
    max_programs : int or None, default=MAX_PROGRAMS
        Largest allowed product of the entries; None for no limit.

    Returns
    -------
    tuple of (int, int, int)
        The grid with missing trailing entries set to 1.

    Raises
    ------
    LangError
        If ``grid`` is not 1 to 3 entries, an entry is not an integer, is
        negative or exceeds ``2**31 - 1``, or the grid has more than ``max_programs`` programs.
    """
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, (bool, np.bool_)):
        grid = (grid,)
    if isinstance(grid, (str, bytes)) or not hasattr(grid, "__iter__"):
        raise LangError(f"grid must be a tuple of 1 to 3 ints or a callable returning one, "
                        f"got grid={grid!r}")
    entries = tuple(grid)
    g = []
    for x in entries:
        if hasattr(x, "value") and not hasattr(x, "v"):  # constexpr
            x = x.value
        if isinstance(x, (bool, np.bool_)):
            raise LangError(f"grid must hold ints, got grid={entries!r} (bool {x!r})")
        try:
            g.append(operator.index(x))
        except TypeError:
            hint = ("; use tl.cdiv for a ceiling division"
                    if isinstance(x, (float, np.floating)) else "")
            raise LangError(f"grid must hold ints, got grid={entries!r} "
                            f"({type(x).__name__} {x!r}){hint}") from None
    if not 1 <= len(g) <= 3 or any(x < 0 for x in g):
        raise LangError(f"grid must have 1 to 3 non-negative entries, got grid={tuple(g)}")
    if any(x > _MAX_GRID_ENTRY for x in g):
        raise LangError(f"grid entries must be at most 2**31 - 1 (program ids are int32), "
                        f"got grid={tuple(g)}")
    g3 = (tuple(g) + (1, 1))[:3]
    n = g3[0] * g3[1] * g3[2]
    if max_programs is not None and n > max_programs:
        raise LangError(f"grid must have at most {max_programs} programs (the interpreter "
                        f"runs them one by one), got grid={tuple(g)} with {n} programs")
    return g3  # type: ignore[return-value]


def short_value(v: Any, limit: int = 60) -> str:
    """``v`` for an error message, at most about ``limit`` characters.

    An array is its type, shape and dtype (``ndarray of shape (1000,),
    float32``); a list or tuple its type, length and first items (``list of
    1000 items [0, 1, 2, 3, 4, 5, ...]``); anything else its ``repr`` cut to
    ``limit`` characters.
    """
    if isinstance(v, np.ndarray):
        return f"ndarray of shape {v.shape}, {v.dtype}"
    if isinstance(v, (list, tuple)):
        r = reprlib.Repr()
        r.maxlist = r.maxtuple = 6
        r.maxother = r.maxstring = r.maxlevel = 12
        return f"{type(v).__name__} of {len(v)} items {r.repr(v)}"
    text = repr(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _describe(v: Any) -> str:
    name = getattr(v, "name", None)
    if name is not None and hasattr(v, "v"):
        return f"runtime argument {name!r} (declare it tl.constexpr)"
    if hasattr(v, "v"):
        return f"a runtime tensor of shape {tuple(v.shape)}"
    return short_value(v)


def check_batch_programs(value: Any) -> bool | int:
    """Check the ``batch_programs`` launch option: a bool or a positive int.

    Raises
    ------
    LangError
        If ``value`` is neither a bool nor an int >= 1.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value >= 1:
        return int(value)
    raise LangError(f"batch_programs must be a bool or an int >= 1 (programs per batch), "
                    f"got batch_programs={value!r}")


def check_programs(value: Any, grid: tuple[int, int, int],
                   max_programs: int = MAX_PROGRAMS) -> npt.NDArray[np.int64]:
    """Check the ``programs`` launch option: a subset of the grid to run.

    Parameters
    ----------
    value : sequence or ndarray of int
        Linear program indices ``pid0 + grid0 * (pid1 + grid1 * pid2)``:
        1-D, at least one, strictly increasing, each in ``[0, n_programs)``.
        A list, tuple, range or integer ndarray.
    grid : tuple of (int, int, int)
        The launch grid.
    max_programs : int, default=MAX_PROGRAMS
        Most indices allowed.

    Returns
    -------
    ndarray of int64 of shape (n,)
        The indices.

    Raises
    ------
    LangError
        If ``value`` is not a 1-D sequence of ints (a bool mask, floats,
        strings, a scalar, a set), is empty or too long, is not strictly
        increasing, or holds an index outside the grid.
    """
    n_total = grid[0] * grid[1] * grid[2]
    what = (f"programs must be a sequence or 1-D ndarray of ints (linear program indices "
            f"in [0, {n_total}) of grid={grid})")

    def out_of_range(i: int, x: int) -> LangError:
        return LangError(f"programs must be linear program indices in [0, {n_total}) of "
                         f"grid={grid}, got programs[{i}]={x}")

    if isinstance(value, (list, tuple)):
        arr = np.empty(len(value), dtype=np.int64)
        for i, x in enumerate(value):
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
                raise LangError(f"{what}, got programs[{i}]={x!r} ({type(x).__name__})")
            if not 0 <= x < n_total:
                raise out_of_range(i, int(x))
            arr[i] = x
    elif isinstance(value, (range, np.ndarray)):
        arr = np.asarray(value)
        if arr.ndim != 1:
            raise LangError(f"{what}, got programs={short_value(value)} with shape {arr.shape}")
        if arr.dtype.kind == "b":
            raise LangError(f"{what}, got a bool array {short_value(value)}; pass "
                            f"np.flatnonzero(mask) to select programs with a mask")
        if arr.dtype.kind not in "iu":
            x = arr[0] if arr.size else None
            raise LangError(f"{what}, got {short_value(value)} (programs[0]={x!r})")
        bad = np.flatnonzero((arr < 0) | (arr >= n_total))
        if bad.size:
            raise out_of_range(int(bad[0]), int(arr[bad[0]]))
        arr = arr.astype(np.int64)
    else:
        raise LangError(f"{what}, got programs={short_value(value)}")
    if arr.size == 0:
        raise LangError(f"programs must name at least one program, got programs="
                        f"{short_value(value)}")
    down = np.flatnonzero(arr[1:] <= arr[:-1])
    if down.size:
        i = int(down[0])
        raise LangError(f"programs must be strictly increasing (sorted, no duplicates), got "
                        f"programs[{i}]={int(arr[i])} followed by programs[{i + 1}]="
                        f"{int(arr[i + 1])}")
    if arr.size > max_programs:
        raise LangError(f"programs must name at most {max_programs} programs (the "
                        f"interpreter runs them one by one), got {arr.size}")
    return arr


def check_sanitize_overflow(value: Any) -> bool:
    """Check the ``sanitize_overflow`` launch option: a bool.

    Raises
    ------
    LangError
        If ``value`` is not a bool.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise LangError(f"sanitize_overflow must be a bool (True: raise on signed integer "
                    f"overflow, False: wrap like the GPU), got sanitize_overflow={value!r}")


def check_num_warps(value: Any) -> int:
    """Check the ``num_warps`` launch option: a power of 2 (Triton's compiler options).

    Parameters
    ----------
    value : int or None
        The launch's ``num_warps`` (a Python or NumPy int; ``bool`` is refused).

    Returns
    -------
    int
        ``value``, or 4 (Triton's default) when it is None.

    Raises
    ------
    LangError
        "num_warps must be a power of 2" (Triton's wording) if ``value`` is not
        a positive int power of 2.
    """
    if value is None:
        return 4
    if (isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0
            and value & (value - 1) == 0):
        return int(value)
    raise LangError(f"num_warps must be a power of 2, got num_warps={value!r}")


def check_writable(buf: Any, op: str, where: str) -> None:
    """Check that a store or atomic may write to a buffer.

    Parameters
    ----------
    buf : Buffer
        The buffer written (its ``flat`` view carries the array's flags).
    op : str
        The op, e.g. ``"store"`` or ``"atomic_add"``.
    where : str
        The kernel and program, from ``Launch.where()``.

    Raises
    ------
    LangError
        If the kernel parameter is annotated ``tl.const`` ("Cannot store to a
        constant pointer", Triton's message) or the argument's array is
        read-only (``flags.writeable`` is False).
    """
    if getattr(buf, "const", False):
        raise LangError(f"Cannot store to a constant pointer: {op} through argument "
                        f"{buf.name!r}, annotated tl.const, in {where}")
    if not buf.flat.flags.writeable:
        raise LangError(f"{op} to read-only argument {buf.name!r} in {where}: a buffer the "
                        f"kernel writes must be a writeable array, got {buf.name} with "
                        f"flags.writeable=False (pass a writeable copy, e.g. np.array(x))")
