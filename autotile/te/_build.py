"""``build``: execute a lowered loop nest on NumPy arrays."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import LangError
from autotile.te._expr import BinOp, Const, Expr, IterVar, Load
from autotile.te._loop_nest import CHUNK_ITERS, LoopNest
from autotile.te._lower import check_tvm_args, lower
from autotile.te._schedule import Schedule
from autotile.te._tensor import Tensor

__all__ = ["BuiltFunction", "build"]


@dataclass(frozen=True)
class BuiltFunction:
    """A callable running a :class:`LoopNest` on NumPy arrays.

    Call as ``fn(*inputs)`` or ``fn(*inputs, out=array)``; inputs are given
    in buffer order (placeholders in creation order). TVM's form
    ``fn(*inputs, output)`` (one more array, written in place) is the same
    as ``fn(*inputs, out=output)``.

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
            One array per input buffer, with the placeholder's shape;
            optionally followed by the output array (TVM's calling
            convention, instead of ``out=``).
        out : ndarray, optional
            Output array of the compute's shape; overwritten and returned.

        Returns
        -------
        ndarray
            The output, of the compute dtype (see :func:`build`) unless ``out``
            is given.

        Raises
        ------
        LangError
            If the number or shapes of the arrays do not match (or the
            output is given both positionally and as ``out``), an array's
            dtype kind does not match its placeholder's (see :func:`build`),
            or ``out`` is not an ndarray of the output shape whose dtype the
            result can be cast to without changing kind.
        """
        nest = self.nest
        in_bufs, out_buf = nest.buffers[:-1], nest.buffers[-1]
        if len(inputs) == len(in_bufs) + 1:  # TVM's fn(a, b, c): the output comes last
            if out is not None:
                raise LangError(
                    f"{nest.op.name}: give the output {out_buf.name} either as the last "
                    f"positional array or as out=, not both"
                )
            last = inputs[-1]
            if not isinstance(last, np.ndarray):
                raise LangError(
                    f"the output {out_buf.name} (last positional array) must be a NumPy "
                    f"array, got {type(last).__name__}"
                )
            out, inputs = last, inputs[:-1]
        if len(inputs) != len(in_bufs):
            raise LangError(
                f"{nest.op.name} takes {len(in_bufs)} inputs {[b.name for b in in_bufs]} "
                f"(then optionally the output {out_buf.name}), got {len(inputs)} arrays"
            )
        arrays = [np.asarray(x) for x in inputs]
        storage: dict[str, npt.NDArray[np.generic]] = {}
        in_dtypes = []
        for buf, arr in zip(in_bufs, arrays):
            if arr.shape != buf.shape:
                raise LangError(
                    f"input {buf.name} must have shape {buf.shape}, got shape {arr.shape}"
                )
            dt = _input_dtype(buf.name, np.dtype(buf.dtype), arr.dtype)
            in_dtypes.append(dt)
            flat = np.zeros(buf.n_elements, dtype=dt)
            grid = np.indices(buf.shape).reshape(len(buf.shape), -1)
            flat[buf.layout.element_offset(*grid)] = arr.reshape(-1)
            storage[buf.name] = flat
        dtype = _compute_dtype(in_dtypes, np.dtype(out_buf.dtype))
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise LangError(
                    f"out must be a NumPy array, got {type(out).__name__} for {out_buf.name}"
                )
            if out.shape != out_buf.shape:
                raise LangError(
                    f"out must have shape {out_buf.shape}, got shape {out.shape} "
                    f"for {out_buf.name}"
                )
            if not np.can_cast(dtype, out.dtype, casting="same_kind"):
                raise LangError(
                    f"out must have a dtype {dtype} can be cast to without changing kind, "
                    f"got out.dtype={out.dtype} for {out_buf.name}"
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


_KIND_NAMES = {"b": "bool", "i": "integer", "u": "integer", "f": "float", "c": "complex"}
# placeholder kind -> array kinds it accepts
_ACCEPTS = {"b": "b", "i": "iu", "u": "iu", "f": "f", "c": "fc"}


def _input_dtype(name: str, ph: np.dtype[Any], got: np.dtype[Any]) -> np.dtype[Any]:
    """Dtype an input of placeholder dtype ``ph`` is stored in, given an array of ``got``."""
    accepts = _ACCEPTS.get(ph.kind, "")
    if got.kind not in accepts:
        want = " or ".join(sorted({_KIND_NAMES[k] for k in accepts})) or ph.name
        raise LangError(
            f"input {name} must be a {want} array for placeholder dtype {ph.name}, "
            f"got dtype {got.name}"
        )
    if ph.kind == "b":
        return ph
    return np.promote_types(ph, got)


def _compute_dtype(in_dtypes: list[np.dtype[Any]], declared: np.dtype[Any]) -> np.dtype[Any]:
    """Dtype the body is evaluated and accumulated in.

    Floats (and complex) compute in the widest input type; integers and bools
    in int64 (uint64 if an input is uint64) so that sums do not wrap.
    """
    dt = np.result_type(*in_dtypes) if in_dtypes else declared
    if dt.kind in "biu":
        return np.dtype(np.uint64) if dt == np.uint64 else np.dtype(np.int64)
    return dt


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


_CPU_TARGETS = ("llvm", "c")


def build(s: Schedule, args: Sequence[Tensor] | None = None, target: str | None = None,
          name: str | None = None) -> BuiltFunction:
    """Compile a schedule into a callable that runs its loop nest.

    Also takes TVM's form ``tvm.build(s, [A, B, C], target="llvm",
    name="mmult")``: the function then runs as ``fn(a, b, c)``, writing
    ``c`` in place (and returning it).

    Parameters
    ----------
    s : Schedule
        Made by :func:`autotile.te.create_schedule`.
    args : list of Tensor, optional
        TVM's argument list, checked and otherwise unused: the schedule's
        placeholders in creation order, then its output (``[A, B, C]``).
        Other orders are not supported.
    target : str, optional
        A CPU target (``"llvm"``, ``"llvm -mcpu=..."`` or ``"c"``), accepted
        for TVM compatibility: the nest always runs on NumPy.
    name : str, optional
        Accepted for TVM compatibility and ignored.

    Returns
    -------
    BuiltFunction
        ``fn(*inputs, out=None)`` (or ``fn(*inputs, output)``) returns the
        output array.

    Raises
    ------
    LangError
        If ``s`` is not a :class:`Schedule`, ``args`` is not a list of
        tensors, or ``target`` is not a CPU target.
    ScheduleError
        If ``args`` lists other tensors than the placeholders in creation
        order and then the output.

    Notes
    -----
    Input arrays must have their placeholder's shape and a dtype of the same
    kind, else :class:`~autotile.errors.LangError` names the placeholder, its
    dtype and the array's dtype:

    * a float placeholder takes any float array (never an integer or bool
      one) and computes in the wider of the two float types: float64 arrays
      keep float64 accuracy on a float32 placeholder, float16 arrays are
      widened to float32;
    * an integer placeholder takes signed or unsigned integer arrays, and a
      bool placeholder bool arrays; integer and bool computes evaluate and
      accumulate in int64 (uint64 for uint64 inputs), so an int8 matmul does
      not wrap around;
    * a complex placeholder takes float or complex arrays.

    The output has the type the body was computed in (the widest input type
    after these rules); ``out=`` must be an array of a dtype of the same kind.

    Examples
    --------
    >>> import numpy as np
    >>> from autotile import te
    >>> A = te.placeholder((8,), name="A")
    >>> B = te.compute((8,), lambda i: A[i] * 2 + 1, name="B")
    >>> te.build(te.create_schedule(B))(np.arange(8.0))
    array([ 1.,  3.,  5.,  7.,  9., 11., 13., 15.])
    """
    check_tvm_args(s, args, "build")
    if target is not None and (not isinstance(target, str)
                               or target.split(" ")[0] not in _CPU_TARGETS):
        raise LangError(f"te.build runs loop nests on NumPy: target must be None or a CPU "
                        f"target {list(_CPU_TARGETS)}, got target={target!r}")
    return BuiltFunction(lower(s))
