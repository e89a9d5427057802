"""Tensors and the operations that produce them: ``placeholder`` and ``compute``."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from autotile.errors import LangError
from autotile.te._expr import (
    Expr,
    ExprLike,
    IterVar,
    Load,
    Reduce,
    _is_int,
    _next_id,
    affine_form,
    as_expr,
)

__all__ = ["Tensor", "PlaceholderOp", "ComputeOp", "placeholder", "compute"]


@dataclass(frozen=True, eq=False)
class PlaceholderOp:
    """An input buffer declared with :func:`placeholder`."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    order: int = field(default_factory=_next_id, repr=False)

    def output(self, index: int = 0) -> Tensor:
        """Return the tensor this operation produces."""
        return Tensor(self)


@dataclass(frozen=True, eq=False)
class ComputeOp:
    """An output buffer defined elementwise by :func:`compute`.

    Attributes
    ----------
    axis : tuple of IterVar
        Spatial axes, one per output dimension.
    reduce_axis : tuple of IterVar
        Reduction axes of the top-level ``te.sum`` (empty if none).
    body : Expr
        The value of one output element (the summand for reductions).
    input_tensors : tuple of Tensor
        Distinct placeholders read by ``body``, in declaration order.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    axis: tuple[IterVar, ...]
    reduce_axis: tuple[IterVar, ...]
    body: Expr
    input_tensors: tuple[Tensor, ...]

    @property
    def is_reduction(self) -> bool:
        """Whether the body is a ``te.sum``."""
        return bool(self.reduce_axis)

    def output(self, index: int = 0) -> Tensor:
        """Return the tensor this operation produces."""
        return Tensor(self)


@dataclass(frozen=True)
class Tensor:
    """A tensor: the output of a :class:`PlaceholderOp` or :class:`ComputeOp`.

    Index it with axes or affine expressions of axes: ``A[i, k]``,
    ``X[i + r]``, ``X[2 * i, j]``.
    """

    op: PlaceholderOp | ComputeOp

    @property
    def name(self) -> str:
        """Buffer name."""
        return self.op.name

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape in elements."""
        return self.op.shape

    @property
    def dtype(self) -> str:
        """NumPy dtype name, e.g. ``"float32"``."""
        return self.op.dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.op.shape)

    def __getitem__(self, indices: ExprLike | tuple[ExprLike, ...]) -> Load:
        idx = indices if isinstance(indices, tuple) else (indices,)
        if len(idx) != self.ndim:
            raise LangError(
                f"tensor {self.name} has {self.ndim} dimensions but was indexed with "
                f"{len(idx)} indices"
            )
        exprs = tuple(as_expr(i) for i in idx)
        for d, e in enumerate(exprs):
            if affine_form(e) is None:
                raise LangError(
                    f"index {d} of tensor {self.name} must be an integer affine expression "
                    f"of axes, got {e}"
                )
        return Load(self, exprs)

    def __repr__(self) -> str:
        return f"Tensor(name={self.name!r}, shape={self.shape}, dtype={self.dtype!r})"


def _check_shape(shape: object, what: str) -> tuple[int, ...]:
    if _is_int(shape):
        shape = (shape,)
    if not isinstance(shape, Sequence) or not shape:
        raise LangError(f"{what} shape must be a non-empty tuple of ints, got {shape!r}")
    for s in shape:
        if not _is_int(s):
            raise LangError(f"{what} shape must contain ints, got {s!r} in shape={tuple(shape)}")
        if int(s) < 1:
            raise LangError(f"{what} shape entries must be >= 1, got {s} in shape={tuple(shape)}")
    return tuple(int(s) for s in shape)


def placeholder(shape: Sequence[int], dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """Declare an input tensor.

    Parameters
    ----------
    shape : tuple of int
        Shape in elements, each >= 1.
    dtype : str, default="float32"
        NumPy dtype name.
    name : str, default="placeholder"
        Buffer name; must be unique within one compute.

    Returns
    -------
    Tensor

    Raises
    ------
    LangError
        If ``shape`` is not a tuple of positive ints or ``dtype`` is unknown.
    """
    shape_t = _check_shape(shape, f"placeholder {name}")
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise LangError(f"unknown dtype {dtype!r} for placeholder {name}") from exc
    return Tensor(PlaceholderOp(name, shape_t, dt.name))


def compute(
    shape: Sequence[int], fcompute: Callable[..., ExprLike | Reduce], name: str = "compute"
) -> Tensor:
    """Define a tensor elementwise: ``out[axes] = fcompute(*axes)``.

    Parameters
    ----------
    shape : tuple of int
        Output shape (one spatial axis per entry).
    fcompute : callable
        Takes one :class:`IterVar` per dimension (named after the lambda's
        parameters) and returns an expression, or ``te.sum(...)`` for a
        reduction.
    name : str, default="compute"
        Output buffer name.

    Returns
    -------
    Tensor

    Raises
    ------
    LangError
        If the shape is not ints, ``fcompute`` takes the wrong number of
        arguments, an index uses an axis that does not belong to this compute,
        a reduction axis is used outside its ``te.sum``, an index can leave
        the bounds of its tensor, or the body reads a non-placeholder tensor.
    """
    shape_t = _check_shape(shape, f"compute {name}")
    try:
        params = list(inspect.signature(fcompute).parameters)
    except (TypeError, ValueError):
        params = []
    if params and len(params) != len(shape_t):
        raise LangError(
            f"compute {name} has {len(shape_t)} dimensions but fcompute takes {len(params)} "
            f"arguments"
        )
    names = params or [f"i{d}" for d in range(len(shape_t))]
    axes = tuple(IterVar(n, s) for n, s in zip(names, shape_t))
    result = fcompute(*axes)
    if isinstance(result, Reduce):
        body, raxes = result.source, result.axes
    else:
        body, raxes = as_expr(result), ()
    allowed = {id(a) for a in axes + raxes}
    inputs: dict[int, Tensor] = {}
    for node in body.walk():
        if isinstance(node, IterVar) and id(node) not in allowed:
            if node.kind == "reduce":
                raise LangError(
                    f"reduce axis {node.name} is used in compute {name} but not reduced by its "
                    f"te.sum"
                )
            raise LangError(f"axis {node.name} does not belong to compute {name}")
        if isinstance(node, Reduce):  # pragma: no cover - Reduce is not an Expr
            raise LangError("te.sum must be the whole body of te.compute")
        if isinstance(node, Load):
            _check_bounds(node, name)
            if not isinstance(node.tensor.op, PlaceholderOp):
                raise LangError(
                    f"compute {name} reads {node.tensor.name}, which is not a placeholder; "
                    f"only single-stage computes are supported"
                )
            inputs.setdefault(id(node.tensor.op), node.tensor)
    ordered = tuple(sorted(inputs.values(), key=lambda t: t.op.order))  # type: ignore[union-attr]
    dtypes = [t.dtype for t in ordered]
    dtype = np.result_type(*dtypes).name if dtypes else "float32"
    return Tensor(ComputeOp(name, shape_t, dtype, axes, raxes, body, ordered))


def _check_bounds(load: Load, compute_name: str) -> None:
    for d, (idx, size) in enumerate(zip(load.indices, load.tensor.shape)):
        form = affine_form(idx)
        assert form is not None
        coefs, off = form
        lo = hi = off
        for var, c in coefs.items():
            a, b = c * var.lo, c * (var.lo + var.extent - 1)
            lo += min(a, b)
            hi += max(a, b)
        if lo < 0 or hi >= size:
            raise LangError(
                f"index {d} of {load.tensor.name} in compute {compute_name} ranges over "
                f"[{lo}, {hi}] but the dimension has extent {size}: {idx}"
            )
