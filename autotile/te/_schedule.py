"""Schedules: TVM-style loop transformations of one compute stage.

A :class:`Stage` starts with one loop per axis of its compute (spatial axes,
then reduction axes, outer to inner).  ``split``, ``tile``, ``reorder`` and
``fuse`` rewrite the list of *leaf* loops; the relations they record map
leaf loop variables back to the original (root) axes.  A :class:`Schedule`
also records the storage layout of each input buffer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from autotile.errors import ScheduleError
from autotile.te._expr import IterVar, _is_int
from autotile.te._layout import Layout, PackedLayout, PaddedLayout, RowMajor
from autotile.te._tensor import ComputeOp, PlaceholderOp, Tensor

__all__ = ["Split", "Fuse", "Stage", "Schedule", "create_schedule"]


@dataclass(frozen=True)
class Split:
    """``parent = outer * factor + inner`` (``inner`` ranges over ``factor``)."""

    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int


@dataclass(frozen=True)
class Fuse:
    """``outer = fused // inner.extent`` and ``inner = fused % inner.extent``."""

    outer: IterVar
    inner: IterVar
    fused: IterVar


def _base(name: str) -> str:
    return name[:-2] if name.endswith("_f") else name


class Stage:
    """The loop structure of one :class:`ComputeOp`; get it with ``s[C]``.

    Attributes
    ----------
    op : ComputeOp
        The compute; ``op.axis`` and ``op.reduce_axis`` are the root axes.
    """

    def __init__(self, op: ComputeOp) -> None:
        self.op = op
        self._root: tuple[IterVar, ...] = op.axis + op.reduce_axis
        self._all: list[IterVar] = list(self._root)
        self._leaves: list[IterVar] = list(self._root)
        self._relations: list[Split | Fuse] = []
        self._consumed: dict[int, str] = {}
        self._names = {a.name for a in self._root}
        if len(self._names) != len(self._root):
            names = [a.name for a in self._root]
            raise ScheduleError(f"axis names of compute {op.name} must be distinct, got {names}")

    # -- introspection -------------------------------------------------------
    @property
    def root_iter_vars(self) -> tuple[IterVar, ...]:
        """Original axes: spatial axes then reduction axes."""
        return self._root

    @property
    def leaf_iter_vars(self) -> tuple[IterVar, ...]:
        """Current loops, outer to inner."""
        return tuple(self._leaves)

    @property
    def all_iter_vars(self) -> tuple[IterVar, ...]:
        """Every axis of this stage, root and derived, in creation order."""
        return tuple(self._all)

    @property
    def relations(self) -> tuple[Split | Fuse, ...]:
        """Recorded splits and fuses in the order they were applied."""
        return tuple(self._relations)

    # -- checks --------------------------------------------------------------
    def _check_leaf(self, axis: object, verb: str) -> IterVar:
        if not isinstance(axis, IterVar):
            raise ScheduleError(f"{verb} expects an axis (IterVar), got {axis!r}")
        if not any(axis is a for a in self._all):
            raise ScheduleError(
                f"axis {axis.name} does not belong to stage {self.op.name} (cannot {verb} it)"
            )
        how = self._consumed.get(id(axis))
        if how is not None:
            raise ScheduleError(
                f"axis {axis.name} has already been {how} and is no longer a loop of stage "
                f"{self.op.name} (cannot {verb} it)"
            )
        return axis

    def _fresh(self, name: str) -> str:
        out, n = name, 1
        while out in self._names:
            out, n = f"{name}{n}", n + 1
        self._names.add(out)
        return out

    def _new_var(self, name: str, extent: int, kind: str) -> IterVar:
        var = IterVar(self._fresh(name), extent, 0, kind)
        self._all.append(var)
        return var

    # -- primitives ----------------------------------------------------------
    def split(
        self, parent: IterVar, factor: int | None = None, nparts: int | None = None
    ) -> tuple[IterVar, IterVar]:
        """Split ``parent`` into ``(outer, inner)`` with ``parent = outer * factor + inner``.

        It requires: 1) exactly one of ``factor`` and ``nparts``; 2) the value
        is an int >= 1 that divides the extent of ``parent`` (guarded tail
        loops are not implemented); 3) ``parent`` is a current loop of this
        stage.  The outer loop takes the place of ``parent``, the inner loop
        comes right after it.  A split of ``i`` names its loops ``i_o`` and
        ``i_i``.

        Parameters
        ----------
        parent : IterVar
            A leaf axis of this stage.
        factor : int, optional
            Extent of the inner loop.
        nparts : int, optional
            Extent of the outer loop.

        Returns
        -------
        tuple of (IterVar, IterVar)
            ``(outer, inner)``.

        Raises
        ------
        ScheduleError
            If any requirement fails; the message names the axis and value.
        """
        with self._atomic():
            parent, inner_ext = self._check_split(parent, factor, nparts)
            return self._apply_split(parent, inner_ext)

    def _check_split(
        self, parent: object, factor: int | None, nparts: int | None, verb: str = "split"
    ) -> tuple[IterVar, int]:
        """Validate a split without changing the stage; return the leaf and inner extent."""
        if (factor is None) == (nparts is None):
            raise ScheduleError(
                f"split of axis {getattr(parent, 'name', parent)} needs exactly one of factor "
                f"and nparts, got factor={factor}, nparts={nparts}"
            )
        leaf = self._check_leaf(parent, verb)
        what, value = ("factor", factor) if factor is not None else ("nparts", nparts)
        if not _is_int(value) or value < 1:  # type: ignore[operator]
            raise ScheduleError(
                f"split {what} must be an int >= 1, got {what}={value!r} for axis {leaf.name}"
            )
        assert value is not None
        value = int(value)
        if leaf.extent % value != 0:
            raise ScheduleError(
                f"split {what} {value} does not divide extent {leaf.extent} of axis "
                f"{leaf.name} (guarded tail loops are not implemented)"
            )
        return leaf, value if factor is not None else leaf.extent // value

    def _apply_split(self, parent: IterVar, inner_ext: int) -> tuple[IterVar, IterVar]:
        outer = self._new_var(f"{parent.name}_o", parent.extent // inner_ext, parent.kind)
        inner = self._new_var(f"{parent.name}_i", inner_ext, parent.kind)
        pos = self._leaves.index(parent)
        self._leaves[pos : pos + 1] = [outer, inner]
        self._relations.append(Split(parent, outer, inner, inner_ext))
        self._consumed[id(parent)] = "split"
        return outer, inner

    @contextmanager
    def _atomic(self) -> Iterator[None]:
        """Undo every change to the stage if the block raises."""
        saved = (list(self._all), list(self._leaves), list(self._relations),
                 dict(self._consumed), set(self._names))
        try:
            yield
        except BaseException:
            self._all, self._leaves, self._relations, self._consumed, self._names = saved
            raise

    def tile(
        self, x_parent: IterVar, y_parent: IterVar, x_factor: int, y_factor: int
    ) -> tuple[IterVar, IterVar, IterVar, IterVar]:
        """Tile two axes: split both, then reorder to ``(x_o, y_o, x_i, y_i)``.

        Parameters
        ----------
        x_parent, y_parent : IterVar
            Two distinct leaf axes (usually adjacent, ``x`` outside ``y``).
        x_factor, y_factor : int
            Tile sizes (inner extents).

        Returns
        -------
        tuple of IterVar
            ``(x_outer, y_outer, x_inner, y_inner)``, outer to inner.

        Raises
        ------
        ScheduleError
            As for :meth:`split` and :meth:`reorder`.  Both splits are checked
            before either is made, so a failed ``tile`` leaves the stage as it
            was (as does any failed primitive).
        """
        if x_parent is y_parent:
            name = getattr(x_parent, "name", x_parent)
            raise ScheduleError(f"tile needs two distinct axes, got axis {name} twice")
        # validate both splits before changing anything
        x_leaf, x_ext = self._check_split(x_parent, x_factor, None, "tile")
        y_leaf, y_ext = self._check_split(y_parent, y_factor, None, "tile")
        with self._atomic():
            xo, xi = self._apply_split(x_leaf, x_ext)
            yo, yi = self._apply_split(y_leaf, y_ext)
            self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def reorder(self, *args: IterVar) -> None:
        """Reorder loops; ``args`` are given outer to inner.

        The listed axes are permuted among the positions they currently
        occupy; other loops stay where they are (TVM semantics).

        Raises
        ------
        ScheduleError
            If an axis is repeated, is not a current loop, or belongs to
            another stage.
        """
        with self._atomic():
            self._reorder(args)

    def _reorder(self, args: tuple[IterVar, ...]) -> None:
        axes = [self._check_leaf(a, "reorder") for a in args]
        seen: set[int] = set()
        for a in axes:
            if id(a) in seen:
                raise ScheduleError(f"reorder lists axis {a.name} more than once")
            seen.add(id(a))
        positions = sorted(self._leaves.index(a) for a in axes)
        for pos, a in zip(positions, axes):
            self._leaves[pos] = a

    def fuse(self, *args: IterVar) -> IterVar:
        """Fuse adjacent loops into one; ``args`` are given outer to inner.

        It requires each axis to be directly outside the next one in the
        current loop order.  Fusing ``i`` and ``j`` gives ``i_j_f`` with
        ``i = i_j_f // extent(j)`` and ``j = i_j_f % extent(j)``.

        Parameters
        ----------
        *args : IterVar
            Two or more adjacent leaf axes, outer to inner.

        Returns
        -------
        IterVar
            The fused axis, in place of the fused loops.

        Raises
        ------
        ScheduleError
            If fewer than two axes are given, or they are not adjacent in
            order, or are not current loops of this stage.
        """
        if len(args) < 2:
            raise ScheduleError(f"fuse needs at least two axes, got {len(args)}")
        with self._atomic():
            return self._fuse(args)

    def _fuse(self, args: tuple[IterVar, ...]) -> IterVar:
        axes = [self._check_leaf(a, "fuse") for a in args]
        for outer, inner in zip(axes, axes[1:]):
            if outer is inner:
                raise ScheduleError(f"fuse lists axis {outer.name} more than once")
            po, pi = self._leaves.index(outer), self._leaves.index(inner)
            if pi != po + 1:
                raise ScheduleError(
                    f"fuse needs axis {outer.name} directly outside axis {inner.name}, but they "
                    f"are loops {po} and {pi} of {[a.name for a in self._leaves]}"
                )
        fused = axes[0]
        for inner in axes[1:]:
            kind = "reduce" if "reduce" in (fused.kind, inner.kind) else "spatial"
            new = self._new_var(
                f"{_base(fused.name)}_{_base(inner.name)}_f", fused.extent * inner.extent, kind
            )
            pos = self._leaves.index(fused)
            self._leaves[pos : pos + 2] = [new]
            self._relations.append(Fuse(fused, inner, new))
            self._consumed[id(fused)] = "fused"
            self._consumed[id(inner)] = "fused"
            fused = new
        return fused

    def __repr__(self) -> str:
        return f"Stage({self.op.name}, loops={[a.name for a in self._leaves]})"


class Schedule:
    """A schedule of one compute: its :class:`Stage` and buffer layouts.

    Create with :func:`create_schedule`; get the stage with ``s[C]``.
    """

    def __init__(self, op: ComputeOp) -> None:
        self.op = op
        self.stage = Stage(op)
        names = [t.name for t in op.input_tensors] + [op.name]
        if len(set(names)) != len(names):
            raise ScheduleError(f"buffer names of compute {op.name} must be distinct, got {names}")
        self._layouts: dict[str, Layout] = {
            t.name: RowMajor().bind(t.shape) for t in op.input_tensors
        }
        self._layouts[op.name] = RowMajor().bind(op.shape)

    @property
    def outputs(self) -> tuple[ComputeOp, ...]:
        """The scheduled compute operations."""
        return (self.op,)

    @property
    def layouts(self) -> dict[str, Layout]:
        """Bound layout of every buffer (inputs then output), by name."""
        return dict(self._layouts)

    def __getitem__(self, key: Tensor | ComputeOp) -> Stage:
        op = key.op if isinstance(key, Tensor) else key
        if op is not self.op:
            name = getattr(op, "name", op)
            raise ScheduleError(
                f"{name} is not a stage of this schedule (only {self.op.name} is scheduled)"
            )
        return self.stage

    def transform_layout(self, tensor: Tensor, layout: Layout) -> None:
        """Store an input buffer in ``layout``; results do not change.

        Parameters
        ----------
        tensor : Tensor
            A placeholder read by the scheduled compute.
        layout : RowMajor, PaddedLayout or PackedLayout
            Unbound layout, e.g. ``PackedLayout(tile=16)``.

        Raises
        ------
        ScheduleError
            If ``tensor`` is not an input of the compute, the padded width is
            smaller than the row, or the pack tile does not divide the last
            dimension.
        """
        if not isinstance(tensor, Tensor) or not any(
            tensor.op is t.op for t in self.op.input_tensors
        ):
            name = getattr(tensor, "name", tensor)
            inputs = [t.name for t in self.op.input_tensors]
            raise ScheduleError(
                f"transform_layout needs an input buffer of compute {self.op.name} "
                f"(one of {inputs}), got {name}"
            )
        if not isinstance(layout, (RowMajor, PaddedLayout, PackedLayout)):
            raise ScheduleError(f"unknown layout {layout!r}")
        assert isinstance(tensor.op, PlaceholderOp)
        self._layouts[tensor.name] = layout.bind(tensor.shape, tensor.name)

    def pack(self, tensor: Tensor, tile: int) -> None:
        """Shorthand for ``transform_layout(tensor, PackedLayout(tile))``."""
        self.transform_layout(tensor, PackedLayout(tile))

    def pad(self, tensor: Tensor, width: int) -> None:
        """Shorthand for ``transform_layout(tensor, PaddedLayout(width))``."""
        self.transform_layout(tensor, PaddedLayout(width))

    def __repr__(self) -> str:
        return f"Schedule({self.stage!r})"


def create_schedule(
    ops: ComputeOp | PlaceholderOp | Tensor | list[ComputeOp | PlaceholderOp | Tensor],
) -> Schedule:
    """Create the default schedule of a compute (one loop per axis).

    Parameters
    ----------
    ops : ComputeOp, Tensor, or list of one of them
        ``C.op`` or ``C`` where ``C`` was made by :func:`autotile.te.compute`
        (``Tensor.op`` is typed ``PlaceholderOp | ComputeOp``; a placeholder
        raises).

    Returns
    -------
    Schedule

    Raises
    ------
    ScheduleError
        If ``ops`` is not a single compute (placeholders and multi-stage
        schedules are not supported).
    """
    if isinstance(ops, (list, tuple)):
        if len(ops) != 1:
            raise ScheduleError(f"only single-stage schedules are supported, got {len(ops)} ops")
        ops = ops[0]
    op = ops.op if isinstance(ops, Tensor) else ops
    if not isinstance(op, ComputeOp):
        raise ScheduleError(f"create_schedule needs a compute op, got {op!r}")
    return Schedule(op)
