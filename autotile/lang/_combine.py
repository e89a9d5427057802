"""Reductions and scans with a user combine function: ``tl.reduce``, ``tl.associative_scan``.

Both take one tensor or a tuple of tensors of one shape (Triton's
multi-operand form, e.g. ``(values, indices)`` for an argmax or ``(a, b)``
for a linear recurrence) and a ``combine_fn`` of ``2 * n`` arguments
returning ``n`` values: ``combine_fn(a0, .., a{n-1}, b0, .., b{n-1})``.  A
``@jit`` function or a plain Python function may be the combine function;
it is called on blocks (every lane of a level at once), not on scalars.

* :func:`reduce` combines *adjacent* pairs level by level
  (``combine(x[0], x[1])``, ``combine(x[2], x[3])``, ...; an odd last
  element carries over), so the result equals a left-to-right fold for
  any associative ``combine_fn``, commutative or not.
* :func:`associative_scan` folds left to right along ``axis``
  (``acc = combine(acc, x[i])``), from the end with ``reverse=True``, as
  Triton's interpreter does.

Results keep the input dtypes: each combine result is cast back to the
dtype of its input (Triton's combine region returns the input types).
Integer arithmetic inside the combine function wraps around, as on the GPU,
even with the launch's ``sanitize_overflow`` check on
(:func:`autotile.lang._overflow.wrapping`).  In a
batched launch (:mod:`autotile.lang._batch`) the combine function runs on
batched blocks, so a batch of programs reduces in one pass.

References
----------
Triton, ``python/triton/language/core.py`` (``reduce``,
``associative_scan``) and ``semantic.py`` (``reduction``,
``associative_scan``), v3.4.
"""

from __future__ import annotations

import builtins
import inspect
from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang import _opcount
from autotile.lang import _semantic as S
from autotile.lang._operands import emit
from autotile.lang._overflow import wrapping
from autotile.lang._state import shape_str
from autotile.lang._tensor import BatchedTensor, tensor, to_tensor, unwrap, values, wrap

__all__ = ["reduce", "associative_scan"]


def _operands(input: Any, name: str) -> tuple[list[tensor], bool]:
    """The input tensors of a reduce/scan and whether ``input`` was a single tensor.

    Raises
    ------
    LangError
        If the tuple is empty, holds pointers, or its tensors' shapes differ.
    """
    single = not isinstance(input, (tuple, list))
    ts = [to_tensor(x) for x in ((input,) if single else input)]
    if not ts:
        raise LangError(f"tl.{name} needs at least one tensor, got an empty tuple")
    for i, t in enumerate(ts):
        if isinstance(t.dtype, D.pointer_type):
            raise LangError(f"tl.{name} cannot combine pointers, got input[{i}] of type "
                            f"{t.dtype}")
    shape = ts[0].shape
    for i, t in enumerate(ts[1:], 1):
        if t.shape != shape:
            raise LangError(f"all {name} inputs must have the same shape, got input[0] of shape "
                            f"{tuple(shape)} and input[{i}] of shape {tuple(t.shape)}")
    return ts, single


def _stacked(ts: list[tensor]) -> tuple[list[Any], bool]:
    """Values of ``ts``; when any is batched, all with the batch's program axis first."""
    batched = builtins.any(type(t) is BatchedTensor for t in ts)
    if not batched:
        return [np.asarray(t.v) for t in ts], False
    n = next(t.pv.shape[0] for t in ts if type(t) is BatchedTensor)
    out = []
    for t in ts:
        v = values(t)
        if type(t) is not BatchedTensor:
            v = np.broadcast_to(v, (n,) + tuple(t.shape))
        out.append(np.asarray(v))
    return out, True


def _check_arity(combine_fn: Any, n: int, name: str) -> None:
    """Check that ``combine_fn`` takes ``2 * n`` positional arguments.

    Raises
    ------
    LangError
        If it cannot take them.
    """
    fn = getattr(combine_fn, "fn", combine_fn)
    if not callable(fn):
        raise LangError(f"the combine_fn of tl.{name} must be a function, got {fn!r}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # a builtin without a signature: let the call decide
    try:
        sig.bind(*range(2 * n))
    except TypeError:
        raise LangError(f"the combine_fn of tl.{name} over {n} tensor(s) must take {2 * n} "
                        f"arguments (the {n} running value(s), then the {n} next one(s)), got "
                        f"{getattr(fn, '__name__', fn)}{sig}") from None


def _call(combine_fn: Any, args: list[tensor], dtypes: list[Any], shape: tuple[int, ...],
          batched: bool, name: str) -> list[Any]:
    """Call ``combine_fn(*args)``; its results as value arrays of ``shape`` in ``dtypes``.

    Raises
    ------
    LangError
        If the combine function returns the wrong number of values.
    """
    fn = getattr(combine_fn, "fn", combine_fn)
    res = fn(*args)
    res = list(res) if isinstance(res, (tuple, list)) else [res]
    n = len(dtypes)
    if len(res) != n:
        raise LangError(f"the combine_fn of tl.{name} over {n} tensor(s) must return {n} "
                        f"value(s), got {len(res)}")
    out = []
    for r, dt in zip(res, dtypes):
        r = to_tensor(unwrap(r))
        v = values(r)
        if r.dtype is not dt:
            v = dt.cast(v)
        # a constant (or, in a batch, a program-invariant) result broadcasts to the level
        out.append(np.asarray(v) if np.shape(v) == shape else np.broadcast_to(v, shape))
    return out


def reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: bool = False) -> Any:
    """Reduce ``input`` along ``axis`` with ``combine_fn``.

    Parameters
    ----------
    input : tensor or tuple of tensors
        One tensor, or several of one shape reduced together.
    axis : int or None
        Axis to reduce; None reduces the flattened tensors.
    combine_fn : callable
        ``combine_fn(a0, .., a{n-1}, b0, .., b{n-1})`` returning ``n``
        values (one value for one tensor); must be associative.  Called on
        blocks of adjacent pairs, level by level.
    keep_dims : bool, default=False
        Keep the reduced axis (every axis when ``axis`` is None) with length 1.

    Returns
    -------
    tensor or tuple of tensors
        A tensor for a tensor input, a tuple for a tuple input; dtypes are
        the inputs' dtypes.

    Raises
    ------
    LangError
        If the inputs' shapes differ, ``axis`` is out of range, or
        ``combine_fn`` returns the wrong number of values.
    """
    ts, single = _operands(input, "reduce")
    axis = unwrap(axis)
    keep_dims = bool(unwrap(keep_dims))
    block = tuple(ts[0].shape)
    if axis is not None:
        axis = S.wrap_axis(axis, len(block))
    vals, batched = _stacked(ts)
    lead = 1 if batched else 0
    if axis is None:
        vals = [v.reshape(v.shape[:lead] + (-1,)) for v in vals]
        ax = lead
    else:
        ax = axis + lead
    xs = [np.moveaxis(v, ax, -1) for v in vals]
    dtypes = [t.dtype for t in ts]
    _check_arity(combine_fn, len(ts), "reduce")
    snap = _opcount.snapshot()  # counted once per input element below
    with wrapping():  # integer partial results wrap, as on the GPU
        while xs[0].shape[-1] > 1:
            n = xs[0].shape[-1]
            h = n // 2
            left = [wrap(x[..., 0:2 * h:2], dt, batched) for x, dt in zip(xs, dtypes)]
            right = [wrap(x[..., 1:2 * h:2], dt, batched) for x, dt in zip(xs, dtypes)]
            shape = xs[0].shape[:-1] + (h,)
            level = _call(combine_fn, left + right, dtypes, shape, batched, "reduce")
            if n % 2:
                level = [np.concatenate([c, x[..., 2 * h:]], axis=-1)
                         for c, x in zip(level, xs)]
            xs = level
    _opcount.restore(snap)
    outs: list[tensor] = []
    for i, (x, t, dt) in enumerate(zip(xs, ts, dtypes)):
        r = x[..., 0]
        if keep_dims:
            if axis is None:
                r = r.reshape(r.shape[:lead] + (1,) * len(block))
            else:
                r = np.expand_dims(r, axis + lead)
        _opcount.reduction(t, step=i == 0)
        if batched:
            outs.append(BatchedTensor(np.ascontiguousarray(r), dt))
        else:
            outs.append(tensor(r[()] if r.ndim == 0 else np.ascontiguousarray(r), dt))
    emit(f"tt.reduce(combine) axis={axis} : {shape_str(block)} -> "
         f"{shape_str(tuple(outs[0].shape))}")
    return outs[0] if single else tuple(outs)


def associative_scan(input: Any, axis: Any, combine_fn: Any, reverse: bool = False) -> Any:
    """Inclusive scan of ``input`` along ``axis`` with ``combine_fn``.

    Parameters
    ----------
    input : tensor or tuple of tensors
        One tensor, or several of one shape scanned together.
    axis : int
        Axis to scan (negative counts from the end).
    combine_fn : callable
        ``combine_fn(a0, .., a{n-1}, b0, .., b{n-1})`` returning ``n``
        values, where ``a`` is the running value and ``b`` the next element.
    reverse : bool, default=False
        Scan from the last element toward the first.

    Returns
    -------
    tensor or tuple of tensors
        Same shape(s) and dtypes as ``input``: element ``i`` combines
        elements ``0..i`` (``i..n-1`` with ``reverse``).

    Raises
    ------
    LangError
        If the inputs' shapes differ, ``axis`` is out of range, or
        ``combine_fn`` returns the wrong number of values.
    """
    ts, single = _operands(input, "associative_scan")
    block = tuple(ts[0].shape)
    axis = S.wrap_axis(unwrap(axis), len(block))
    reverse = bool(unwrap(reverse))
    vals, batched = _stacked(ts)
    lead = 1 if batched else 0
    xs = [np.moveaxis(v, axis + lead, 0) for v in vals]  # scan axis first
    if reverse:
        xs = [x[::-1] for x in xs]
    dtypes = [t.dtype for t in ts]
    _check_arity(combine_fn, len(ts), "associative_scan")
    outs = [np.empty(x.shape, dtype=x.dtype) for x in xs]
    acc = [x[0] for x in xs]
    for o, a in zip(outs, acc):
        o[0] = a
    shape = xs[0].shape[1:]
    snap = _opcount.snapshot()  # counted once per input element below
    with wrapping():  # integer partial results wrap, as on the GPU
        for i in builtins.range(1, xs[0].shape[0]):
            args = [wrap(a, dt, batched) for a, dt in zip(acc, dtypes)] + \
                   [wrap(x[i], dt, batched) for x, dt in zip(xs, dtypes)]
            acc = _call(combine_fn, args, dtypes, shape, batched, "associative_scan")
            for o, a in zip(outs, acc):
                o[i] = a
    _opcount.restore(snap)
    res: list[tensor] = []
    for i, (o, t, dt) in enumerate(zip(outs, ts, dtypes)):
        if reverse:
            o = o[::-1]
        r = np.ascontiguousarray(np.moveaxis(o, 0, axis + lead))
        _opcount.reduction(t, step=i == 0)
        res.append(BatchedTensor(r, dt) if batched else tensor(r, dt))
    emit(f"tt.scan axis={axis} reverse={reverse} : {shape_str(block)}")
    return res[0] if single else tuple(res)
