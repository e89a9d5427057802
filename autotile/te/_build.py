"""``build``: execute a lowered loop nest on NumPy arrays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import LangError
from autotile.te._expr import BinOp, Const, Expr, IterVar, Load
from autotile.te._loop_nest import CHUNK_ITERS, LoopNest
from autotile.te._lower import lower
from autotile.te._schedule import Schedule

__all__ = ["BuiltFunction", "build"]


@dataclass(frozen=True)
class BuiltFunction:
    """A callable running a :class:`LoopNest` on NumPy arrays.

    Call as ``fn(*inputs)`` or ``fn(*inputs, out=array)``; inputs are given
    in buffer order (placeholders in creation order).

    Attributes
    ----------
    nest : LoopNest
        The loop nest that is executed.
    """

    nest: LoopNest

    def __call__(
        self, *inputs: npt.ArrayLike, out: npt.NDArray[np.generic] | None = None
    ) -> npt.NDArray[np.generic]:
        """Run the nest in its loop order.

        Each input is first stored in its buffer layout (packing and padding
        change storage only).  Iterations run in execution order, a chunk of
        consecutive iterations at a time: the chunk's root axis values index
        the stored inputs and ``np.add.at`` accumulates into the output in
        iteration order.

        Parameters
        ----------
        *inputs : array-like
            One array per input buffer, with the placeholder's shape.
        out : ndarray, optional
            Output array of the compute's shape; overwritten and returned.

        Returns
        -------
        ndarray
            The output; its dtype is the result type of the inputs (float64
            inputs compute and accumulate in float64) unless ``out`` is given.

        Raises
        ------
        LangError
            If the number or shapes of the arrays do not match.
        """
        nest = self.nest
        in_bufs, out_buf = nest.buffers[:-1], nest.buffers[-1]
        if len(inputs) != len(in_bufs):
            raise LangError(
                f"{nest.op.name} takes {len(in_bufs)} inputs {[b.name for b in in_bufs]}, "
                f"got {len(inputs)}"
            )
        arrays = [np.asarray(x) for x in inputs]
        storage: dict[str, npt.NDArray[np.generic]] = {}
        for buf, arr in zip(in_bufs, arrays):
            if arr.shape != buf.shape:
                raise LangError(
                    f"input {buf.name} must have shape {buf.shape}, got shape {arr.shape}"
                )
            flat = np.zeros(buf.n_elements, dtype=arr.dtype)
            grid = np.indices(buf.shape).reshape(len(buf.shape), -1)
            flat[buf.layout.element_offset(*grid)] = arr.reshape(-1)
            storage[buf.name] = flat
        dtype = np.result_type(*arrays) if arrays else np.dtype(out_buf.dtype)
        if out is not None and out.shape != out_buf.shape:
            raise LangError(
                f"out must have shape {out_buf.shape}, got shape {out.shape} for {out_buf.name}"
            )
        result = np.zeros(out_buf.n_elements, dtype=dtype)

        axis_col = {id(a): n for n, a in enumerate(nest.op.axis + nest.op.reduce_axis)}
        loads = [node for node in nest.op.body.walk() if isinstance(node, Load)]
        load_col = {id(node): n for n, node in enumerate(loads)}
        for start in range(0, nest.n_iters, CHUNK_ITERS):
            stop = min(start + CHUNK_ITERS, nest.n_iters)
            vals = nest.axis_values(start, stop)
            offsets = nest.element_offsets(vals)
            values = _evaluate(nest.op.body, vals, offsets, storage, axis_col, load_col, dtype)
            values = np.broadcast_to(np.asarray(values, dtype=dtype), (stop - start,))
            if nest.op.is_reduction:
                np.add.at(result, offsets[-1], values)
            else:
                result[offsets[-1]] = values
        shaped = result.reshape(out_buf.shape)
        if out is None:
            return shaped
        out[...] = shaped
        return out


def _evaluate(
    expr: Expr,
    vals: npt.NDArray[np.int64],
    offsets: list[npt.NDArray[np.int64]],
    storage: dict[str, npt.NDArray[np.generic]],
    axis_col: dict[int, int],
    load_col: dict[int, int],
    dtype: np.dtype[Any],
) -> Any:
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, IterVar):
        return vals[:, axis_col[id(expr)]].astype(dtype)
    if isinstance(expr, Load):
        buf = storage[expr.tensor.name]
        return buf[offsets[load_col[id(expr)]]].astype(dtype, copy=False)
    if isinstance(expr, BinOp):
        a = _evaluate(expr.a, vals, offsets, storage, axis_col, load_col, dtype)
        b = _evaluate(expr.b, vals, offsets, storage, axis_col, load_col, dtype)
        if expr.op == "+":
            return np.add(a, b)
        if expr.op == "-":
            return np.subtract(a, b)
        return np.multiply(a, b)
    raise LangError(f"cannot evaluate {expr!r}")


def build(s: Schedule) -> BuiltFunction:
    """Compile a schedule into a callable that runs its loop nest.

    Parameters
    ----------
    s : Schedule
        Made by :func:`autotile.te.create_schedule`.

    Returns
    -------
    BuiltFunction
        ``fn(*inputs, out=None)`` returns the output array.

    Examples
    --------
    >>> import numpy as np
    >>> from autotile import te
    >>> A = te.placeholder((8,), name="A")
    >>> B = te.compute((8,), lambda i: A[i] * 2 + 1, name="B")
    >>> te.build(te.create_schedule(B))(np.arange(8.0))
    array([ 1.,  3.,  5.,  7.,  9., 11., 13., 15.])
    """
    return BuiltFunction(lower(s))
