"""Correctness checks of ``@autotune`` candidates: which instance, and how outputs compare."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.lang import BFloat16Array, bf16_to_float32

__all__ = [
    "arrays_of",
    "snapshot",
    "as_float_view",
    "default_tolerance",
    "compare_outputs",
    "reference_outputs",
    "call_small_args",
    "n_elems",
    "poison",
    "write_only_buffers",
]


def arrays_of(named: Mapping[str, Any]) -> dict[str, npt.NDArray[Any]]:
    """Return the NumPy-array arguments of a call, by name, in argument order."""
    return {k: v for k, v in named.items() if isinstance(v, np.ndarray)}


def n_elems(named: Mapping[str, Any]) -> int:
    """Return the total element count of the array arguments."""
    return int(sum(a.size for a in arrays_of(named).values()))


def snapshot(named: Mapping[str, Any]) -> dict[str, npt.NDArray[Any]]:
    """Return copies of the array arguments (their state right now)."""
    return {k: v.copy() for k, v in arrays_of(named).items()}


def poison(a: npt.NDArray[Any]) -> None:
    """Fill an output buffer with a value no correct kernel leaves there by accident.

    NaN for floating buffers (bfloat16 included), the dtype's minimum for
    integer buffers; boolean buffers are left alone.
    """
    if isinstance(a, BFloat16Array):
        a[...] = 0x7FC0  # bfloat16 quiet NaN
    elif np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.complexfloating):
        a[...] = np.nan
    elif np.issubdtype(a.dtype, np.integer):
        a[...] = np.iinfo(a.dtype).min


def write_only_buffers(record: Any, named: Mapping[str, Any]) -> list[str]:
    """Return the array arguments a launch wrote but never read (its pure outputs).

    Parameters
    ----------
    record : LaunchRecord
        The launch's record (``buffer_names``, ``elems_read``, ``elems_written``).
    named : mapping of str to value
        The launch's arguments by name.

    Returns
    -------
    list of str
        Names in argument order; a buffer read or updated atomically (an
        accumulator, an in-place operand) is not write-only.
    """
    if record is None:
        return []
    read = np.asarray(record.elems_read).sum(axis=0)
    written = np.asarray(record.elems_written).sum(axis=0)
    out = [n for i, n in enumerate(record.buffer_names)
           if written[i] > 0 and read[i] == 0 and isinstance(named.get(n), np.ndarray)]
    return list(dict.fromkeys(out))


def as_float_view(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Return values comparable with ``np.allclose`` (bfloat16 bits -> float32)."""
    if isinstance(a, BFloat16Array):
        return np.asarray(bf16_to_float32(a))
    return np.asarray(a)


def default_tolerance(a: npt.NDArray[Any]) -> tuple[float, float]:
    """Return ``(rtol, atol)`` for comparing outputs of dtype ``a.dtype``.

    Candidates differ in block shapes, hence in summation order, so float
    results match only to rounding: float16 and bfloat16 ``(1e-2, 1e-2)``,
    float32 ``(1e-4, 1e-5)``, float64 ``(1e-10, 1e-12)``; integers and bools
    must match exactly.
    """
    if isinstance(a, BFloat16Array) or a.dtype == np.float16:
        return 1e-2, 1e-2
    if a.dtype == np.float32:
        return 1e-4, 1e-5
    if np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.complexfloating):
        return 1e-10, 1e-12
    return 0.0, 0.0


def reference_outputs(result: Any) -> dict[str, Any]:
    """Check what ``reference(args)`` returned and return it as a dict.

    Parameters
    ----------
    result : Any
        The return value of the user's ``reference`` callable.

    Returns
    -------
    dict of str to array
        The expected outputs by argument name.

    Raises
    ------
    TypeError
        If ``result`` is not a mapping of argument names (str) to arrays,
        e.g. ``42`` or the bare expected array.
    """
    if not isinstance(result, Mapping):
        raise TypeError(
            f"reference must return a dict {{argument name: expected array}}, e.g. "
            f"{{'c_ptr': a @ b}}, got {type(result).__name__} {_short(result)}")
    bad = [k for k in result if not isinstance(k, str)]
    if bad:
        raise TypeError(
            f"reference must return a dict {{argument name: expected array}} keyed by "
            f"argument names (str), got the key {bad[0]!r} ({type(bad[0]).__name__})")
    return dict(result)


def _short(value: Any) -> str:
    """``repr(value)``, cut to 80 characters (an array's repr can be long)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def compare_outputs(got: Mapping[str, npt.NDArray[Any]],
                    expected: Mapping[str, npt.NDArray[Any]],
                    rtol: float | None = None, atol: float | None = None) -> str | None:
    """Compare the buffers of ``expected`` with those of ``got``.

    Parameters
    ----------
    got : mapping of str to ndarray
        Buffers after the candidate ran, by argument name.
    expected : mapping of str to ndarray
        Expected values of some buffers (every name must be in ``got``).
    rtol, atol : float, optional
        ``np.allclose`` tolerances; default :func:`default_tolerance` of
        each expected buffer.

    Returns
    -------
    str or None
        None when every buffer matches; else the first mismatch, e.g.
        ``"c_ptr differs from the expected output in 12 of 64 elements
        (max abs error 0.5 at (3, 1), rtol=0.01, atol=0.01)"``.
    """
    for name, want in expected.items():
        if name not in got:
            return f"the expected outputs name {name!r}, which is not an array argument"
        g, w = as_float_view(got[name]), as_float_view(np.asarray(want))
        if g.shape != w.shape:
            return f"{name} has shape {g.shape}, the expected output has shape {w.shape}"
        r0, a0 = default_tolerance(np.asarray(want))
        r = r0 if rtol is None else rtol
        a = a0 if atol is None else atol
        if g.dtype == np.bool_ or w.dtype == np.bool_:
            bad = g != w
        else:
            gf, wf = g.astype(np.float64), w.astype(np.float64)
            close = np.isclose(gf, wf, rtol=r, atol=a, equal_nan=True)
            bad = ~close
        if bad.any():
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            diff = np.where(np.isnan(diff), np.inf, diff)
            worst = np.unravel_index(int(np.argmax(np.where(bad, diff, -1.0))), bad.shape)
            where = tuple(int(i) for i in worst)
            return (f"{name} differs from the expected output in {int(bad.sum())} of "
                    f"{bad.size} elements (max abs error {float(diff[worst]):.4g} at "
                    f"{where if len(where) != 1 else where[0]}, rtol={r:g}, atol={a:g})")
    return None


def call_small_args(small_args: Callable[..., Any], named: Mapping[str, Any],
                    arg_names: list[str]) -> dict[str, Any]:
    """Call a ``small_args`` callable and return the check instance by name.

    Parameters
    ----------
    small_args : callable
        ``small_args(args_by_name)`` or ``small_args()``, returning a tuple
        (positional kernel arguments) or a dict (by name).
    named : mapping of str to value
        The real call's arguments by name; names ``small_args`` does not
        give (e.g. a ``PID_ORDER`` meta-parameter) are taken from here.
    arg_names : list of str
        The kernel's parameter names.

    Returns
    -------
    dict
        ``{**named, **small}``.

    Raises
    ------
    TypeError
        If ``small_args`` returns something other than a tuple, list or dict,
        or more positional values than the kernel has parameters, or names
        an unknown parameter.
    """
    try:
        n_params = len(inspect.signature(small_args).parameters)
    except (TypeError, ValueError):
        n_params = 1
    out = small_args() if n_params == 0 else small_args(dict(named))
    if isinstance(out, Mapping):
        small = dict(out)
    elif isinstance(out, (tuple, list)):
        if len(out) > len(arg_names):
            raise TypeError(f"small_args returned {len(out)} positional values, the kernel "
                            f"takes {len(arg_names)} ({', '.join(arg_names)})")
        small = dict(zip(arg_names, out))
    else:
        raise TypeError(f"small_args must return a tuple or a dict of kernel arguments, got "
                        f"{type(out).__name__}")
    unknown = [k for k in small if k not in arg_names]
    if unknown:
        raise TypeError(f"small_args names unknown kernel parameters {unknown}; parameters "
                        f"are {arg_names}")
    return {**named, **small}
