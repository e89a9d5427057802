"""``lower``: turn a schedule into a :class:`LoopNest`."""

from __future__ import annotations

import numpy as np

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

__all__ = ["lower"]


def lower(s: Schedule) -> LoopNest:
    """Lower a schedule to a loop nest (TVM's ``tvm.lower``).

    The nest is a snapshot: later schedule changes do not affect it.

    Parameters
    ----------
    s : Schedule
        Made by :func:`autotile.te.create_schedule`.

    Returns
    -------
    LoopNest
        ``str(nest)`` prints the loops as Python-like code.

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
