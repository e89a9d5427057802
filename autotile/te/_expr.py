"""Scalar expressions of the tensor-expression language.

An expression is a tree of :class:`Const`, :class:`IterVar`, :class:`BinOp`
and :class:`Load` nodes; :class:`Reduce` (made by :func:`sum`) may only be the
top-level body of :func:`autotile.te.compute`.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from autotile.errors import LangError

if TYPE_CHECKING:
    from autotile.te._tensor import Tensor

__all__ = [
    "Expr",
    "Const",
    "IterVar",
    "BinOp",
    "Load",
    "Reduce",
    "ExprLike",
    "as_expr",
    "affine_form",
    "reduce_axis",
    "sum",
]

ExprLike = Union["Expr", int, float]

# Monotonic creation counter: gives placeholders and axes a stable declaration
# order (used to order buffers).  It never influences results.
_CREATION_ORDER = itertools.count()


def _next_id() -> int:
    return next(_CREATION_ORDER)


class Expr:
    """Base class of scalar expressions; supports ``+``, ``-`` and ``*``."""

    def __add__(self, other: ExprLike) -> BinOp:
        return BinOp("+", self, as_expr(other))

    def __radd__(self, other: ExprLike) -> BinOp:
        return BinOp("+", as_expr(other), self)

    def __sub__(self, other: ExprLike) -> BinOp:
        return BinOp("-", self, as_expr(other))

    def __rsub__(self, other: ExprLike) -> BinOp:
        return BinOp("-", as_expr(other), self)

    def __mul__(self, other: ExprLike) -> BinOp:
        return BinOp("*", self, as_expr(other))

    def __rmul__(self, other: ExprLike) -> BinOp:
        return BinOp("*", as_expr(other), self)

    def __neg__(self) -> BinOp:
        return BinOp("*", Const(-1), self)

    def children(self) -> tuple[Expr, ...]:
        """Return the direct sub-expressions, left to right."""
        return ()

    def walk(self) -> Iterator[Expr]:
        """Yield every node of the tree in pre-order (left to right)."""
        yield self
        for child in self.children():
            yield from child.walk()

    def __str__(self) -> str:
        return _format(self, 0)


@dataclass(frozen=True, eq=False)
class Const(Expr):
    """A numeric constant.

    Parameters
    ----------
    value : int or float
        The constant.
    """

    value: int | float

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, numbers.Real):
            raise LangError(f"constants must be int or float, got {self.value!r}")


@dataclass(frozen=True, eq=False)
class IterVar(Expr):
    """An iteration variable (axis) ranging over ``[lo, lo + extent)``.

    Compared by identity, like TVM's ``IterVar``.

    Parameters
    ----------
    name : str
        Variable name, e.g. ``"i"`` or ``"i_o"``.
    extent : int
        Number of values taken.
    lo : int, default=0
        First value.
    kind : {"spatial", "reduce"}, default="spatial"
        Spatial (data-parallel) or reduction axis.
    """

    name: str
    extent: int
    lo: int = 0
    kind: str = "spatial"

    def __post_init__(self) -> None:
        if self.kind not in ("spatial", "reduce"):
            raise LangError(f"kind must be 'spatial' or 'reduce', got kind={self.kind!r}")

    @property
    def dom(self) -> tuple[int, int]:
        """``(lo, hi)``: the half-open range of values."""
        return (self.lo, self.lo + self.extent)

    @property
    def var(self) -> IterVar:
        """The variable itself (TVM's ``IterVar.var``)."""
        return self

    def __repr__(self) -> str:
        return f"IterVar({self.name!r}, dom=({self.lo}, {self.lo + self.extent}), {self.kind})"


@dataclass(frozen=True, eq=False)
class BinOp(Expr):
    """``a op b`` with ``op`` one of ``"+"``, ``"-"``, ``"*"``."""

    op: str
    a: Expr
    b: Expr

    def __post_init__(self) -> None:
        if self.op not in ("+", "-", "*"):
            raise LangError(f"op must be one of '+', '-', '*', got op={self.op!r}")

    def children(self) -> tuple[Expr, ...]:
        """Return ``(a, b)``."""
        return (self.a, self.b)


@dataclass(frozen=True, eq=False)
class Load(Expr):
    """A read ``tensor[indices]``; each index is affine in the axes."""

    tensor: Tensor
    indices: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:
        """Return the index expressions."""
        return self.indices


@dataclass(frozen=True, eq=False)
class Reduce:
    """``sum(source, axis=axes)``; only valid as the body of ``compute``."""

    source: Expr
    axes: tuple[IterVar, ...]

    def _misuse(self, *_: object) -> None:
        raise LangError("te.sum must be the whole body of te.compute, not part of an expression")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _misuse

    def __str__(self) -> str:
        names = ", ".join(a.name for a in self.axes)
        return f"sum({self.source}, axis=[{names}])"


def as_expr(value: object) -> Expr:
    """Convert an int, float or :class:`Expr` to an :class:`Expr`.

    Raises
    ------
    LangError
        If ``value`` is neither a number nor an expression.
    """
    if isinstance(value, Expr):
        return value
    if isinstance(value, Reduce):
        raise LangError("te.sum must be the whole body of te.compute, not part of an expression")
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return Const(int(value) if isinstance(value, numbers.Integral) else float(value))
    raise LangError(f"expected an expression, axis or number, got {value!r}")


def affine_form(expr: Expr) -> tuple[dict[IterVar, int], int] | None:
    """Return ``(coefficients, offset)`` if ``expr`` is affine in its axes.

    Parameters
    ----------
    expr : Expr
        An expression built from integer constants, axes, ``+``, ``-`` and
        ``*`` by a constant.

    Returns
    -------
    tuple of (dict of IterVar to int, int) or None
        ``expr == sum(c * v for v, c in coefficients.items()) + offset``;
        None if ``expr`` is not affine (float constant, tensor read,
        product of two axes).
    """
    if isinstance(expr, Const):
        return ({}, expr.value) if isinstance(expr.value, int) else None
    if isinstance(expr, IterVar):
        return ({expr: 1}, 0)
    if isinstance(expr, BinOp):
        left = affine_form(expr.a)
        right = affine_form(expr.b)
        if left is None or right is None:
            return None
        (ca, oa), (cb, ob) = left, right
        if expr.op in ("+", "-"):
            sign = 1 if expr.op == "+" else -1
            coefs = dict(ca)
            for var, c in cb.items():
                coefs[var] = coefs.get(var, 0) + sign * c
            return ({v: c for v, c in coefs.items() if c != 0}, oa + sign * ob)
        if ca and cb:
            return None
        if not ca:
            ca, oa, cb, ob = cb, ob, ca, oa
        # now cb is empty: right factor is the constant ob
        return ({v: c * ob for v, c in ca.items() if c * ob != 0}, oa * ob)
    return None


def reduce_axis(dom: Sequence[int], name: str = "rv") -> IterVar:
    """Create a reduction axis over ``[lo, hi)``.

    Parameters
    ----------
    dom : tuple of (int, int)
        ``(lo, hi)`` with ``hi > lo``.
    name : str, default="rv"
        Axis name used in printed loop nests.

    Returns
    -------
    IterVar
        An axis of kind ``"reduce"``.

    Raises
    ------
    LangError
        If ``dom`` is not two ints with ``hi > lo``.
    """
    if len(dom) != 2 or not all(_is_int(x) for x in dom):
        raise LangError(f"reduce_axis dom must be (lo, hi) ints, got dom={tuple(dom)!r}")
    lo, hi = int(dom[0]), int(dom[1])
    if hi <= lo:
        raise LangError(f"reduce_axis needs hi > lo, got dom=({lo}, {hi}) for axis {name}")
    return IterVar(name, hi - lo, lo, "reduce")


def sum(expr: ExprLike, axis: IterVar | Sequence[IterVar]) -> Reduce:  # noqa: A001
    """Sum ``expr`` over one or more reduction axes (TVM's ``te.sum``).

    Parameters
    ----------
    expr : Expr
        The summand.
    axis : IterVar or sequence of IterVar
        Reduction axes made by :func:`reduce_axis`.

    Returns
    -------
    Reduce
        Must be the whole body of :func:`autotile.te.compute`.

    Raises
    ------
    LangError
        If an axis is not a reduction axis or is repeated.
    """
    axes = (axis,) if isinstance(axis, IterVar) else tuple(axis)
    if not axes:
        raise LangError("te.sum needs at least one reduction axis, got axis=[]")
    for ax in axes:
        if not isinstance(ax, IterVar) or ax.kind != "reduce":
            raise LangError(f"te.sum axis must be made by te.reduce_axis, got {ax!r}")
    if len({id(a) for a in axes}) != len(axes):
        raise LangError(f"te.sum axes must be distinct, got {[a.name for a in axes]}")
    return Reduce(as_expr(expr), axes)


def _is_int(x: object) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


_PREC = {"+": 1, "-": 1, "*": 2}


def _format(expr: Expr, parent_prec: int, right: bool = False) -> str:
    if isinstance(expr, Const):
        text = repr(expr.value)
        return f"({text})" if expr.value < 0 and parent_prec > 0 else text
    if isinstance(expr, IterVar):
        return expr.name
    if isinstance(expr, Load):
        return f"{expr.tensor.name}[{', '.join(_format(i, 0) for i in expr.indices)}]"
    if isinstance(expr, BinOp):
        prec = _PREC[expr.op]
        text = f"{_format(expr.a, prec)} {expr.op} {_format(expr.b, prec, right=True)}"
        need = prec < parent_prec or (right and prec == parent_prec and parent_prec == 1)
        return f"({text})" if need else text
    raise LangError(f"cannot format {expr!r}")
