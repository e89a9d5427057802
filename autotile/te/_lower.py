"""``lower``: turn a schedule into a :class:`LoopNest`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from autotile.errors import LangError, ScheduleError
from autotile.te._expr import Load, affine_form
from autotile.te._loop_nest import (
    Access,
    AffineIndex,
    BufferInfo,
    Loop,
    LoopNest,
    _FuseRel,
    _SplitRel,
)
from autotile.te._schedule import Schedule, Split
from autotile.te._tensor import ComputeOp, PlaceholderOp, Tensor

__all__ = ["lower", "check_tvm_args"]


def _short_arg(v: Any) -> str:
    """One ``build``/``lower`` argument for a message: ``Tensor 'A'``, ``ComputeOp 'C'``, ..."""
    name = getattr(v, "name", None)
    if isinstance(v, (Tensor, ComputeOp, PlaceholderOp)) and isinstance(name, str):
        return f"{type(v).__name__} {name!r}"
    return _cut(repr(v))


def _cut(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def check_tvm_args(s: Any, args: Sequence[Any] | None, where: str) -> None:
    """Check the schedule and TVM's argument list of ``tvm.lower``/``tvm.build``.

    Parameters
    ----------
    s : Schedule
        What the caller got as the schedule.
    args : sequence of Tensor or None
        TVM's ``[A, B, C]``: the schedule's placeholders in creation order,
        then its output.
    where : str
        The function name for messages (``"lower"``, ``"build"``).

    Raises
    ------
    LangError
        If ``s`` is not a :class:`Schedule` or ``args`` is not a list of
        tensors.
    ScheduleError
        If ``args`` lists other tensors or another order.
    """
    if not isinstance(s, Schedule):
        raise LangError(f"te.{where}(s, args=None) takes a Schedule from te.create_schedule(C) "
                        f"first, got {type(s).__name__}")
    if args is None:
        return
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        raise LangError(f"te.{where}(s, args): args must be a list of tensors "
                        f"[placeholders..., output] as in tvm.{where}(s, [A, B, C]), got "
                        f"args={_cut(repr(args))} ({type(args).__name__})")
    bad = [i for i, t in enumerate(args) if not isinstance(t, Tensor)]
    if bad:
        op = args[bad[0]]
        hint = (f"; pass the tensor {op.name} itself (what te.compute/te.placeholder "
                f"returned, {op.name}.op.output(0)), not its op {op.name}.op"
                if isinstance(op, (ComputeOp, PlaceholderOp)) else "")
        raise LangError(
            f"te.{where}(s, args): args must be a list of tensors [placeholders..., output] "
            f"as in tvm.{where}(s, [A, B, C]), got "
            f"args=[{', '.join(_short_arg(t) for t in args)}]: "
            f"{', '.join(f'args[{i}]' for i in bad)} {'is' if len(bad) == 1 else 'are'} "
            f"not a Tensor{hint}")
    expected = [*s.op.input_tensors, s.op.output(0)]
    if len(args) != len(expected) or any(a.op is not e.op for a, e in zip(args, expected)):
        raise ScheduleError(
            f"te.{where}(s, args): args must be the schedule's placeholders in creation order, "
            f"then its output: [{', '.join(t.name for t in expected)}], got "
            f"[{', '.join(t.name for t in args)}]")


def lower(s: Schedule, args: Sequence[Tensor] | None = None,
          simple_mode: bool = False) -> LoopNest:
    """Lower a schedule to a loop nest (TVM's ``tvm.lower``).

    The nest is a snapshot: later schedule changes do not affect it.

    Parameters
    ----------
    s : Schedule
        Made by :func:`autotile.te.create_schedule`.
    args : list of Tensor, optional
        TVM's argument list, checked and otherwise unused: the schedule's
        placeholders in creation order, then its output (``[A, B, C]``).
    simple_mode : bool, default=False
        Accepted for TVM compatibility and ignored.

    Returns
    -------
    LoopNest
        ``str(nest)`` prints the loops as Python-like code.

    Raises
    ------
    LangError
        If ``s`` is not a :class:`Schedule` or ``args`` not a list of tensors.
    ScheduleError
        If ``args`` lists other tensors than the placeholders in creation
        order and then the output.

    Examples
    --------
    >>> from autotile import te
    >>> A = te.placeholder((4, 4), name="A")
    >>> B = te.placeholder((4, 4), name="B")
    >>> k = te.reduce_axis((0, 4), name="k")
    >>> C = te.compute((4, 4), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    >>> print(te.lower(te.create_schedule(C)))
    C[:, :] = 0
    for i in range(4):
        for j in range(4):
            for k in range(4):
                C[i, j] += A[i, k] * B[k, j]
    """
    check_tvm_args(s, args, "lower")
    op = s.op
    stage = s.stage
    roots = stage.root_iter_vars
    col = {id(a): n for n, a in enumerate(roots)}
    loops = tuple(Loop(a.name, a.extent, a.kind) for a in stage.leaf_iter_vars)
    relations = tuple(
        _SplitRel(r.parent.name, r.outer.name, r.inner.name, r.factor)
        if isinstance(r, Split)
        else _FuseRel(r.outer.name, r.inner.name, r.fused.name, r.inner.extent)
        for r in stage.relations
    )

    layouts = s.layouts
    buffers = []
    base = 0
    for name, shape, dtype in [(t.name, t.shape, t.dtype) for t in op.input_tensors] + [
        (op.name, op.shape, op.dtype)
    ]:
        layout = layouts[name]
        itemsize = np.dtype(dtype).itemsize
        buffers.append(BufferInfo(name, shape, dtype, itemsize, layout, base))
        base += layout.n_elements * itemsize

    def affine_index(expr: object) -> AffineIndex:
        form = affine_form(expr)  # type: ignore[arg-type]
        assert form is not None
        coefs, off = form
        vec = [0] * len(roots)
        for var, c in coefs.items():
            vec[col[id(var)]] += c
        return AffineIndex(tuple(vec), int(off), str(expr))

    accesses = [
        Access(node.tensor.name, tuple(affine_index(i) for i in node.indices), False, True)
        for node in op.body.walk()
        if isinstance(node, Load)
    ]
    accesses.append(Access(op.name, tuple(affine_index(a) for a in op.axis), True, op.is_reduction))
    return LoopNest(
        loops=loops,
        axes=tuple(a.name for a in roots),
        axis_min=tuple(a.lo for a in roots),
        buffers=tuple(buffers),
        accesses=tuple(accesses),
        op=op,
        relations=relations,
    )
