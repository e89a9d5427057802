"""The lowered loop nest: loops, buffers, accesses and vectorised traces.

This is the contract between ``te`` and the measurement layer.  A
:class:`LoopNest` is a perfect loop nest (``loops``, outer to inner) whose
innermost body performs ``accesses`` in order.  Every iteration is
identified by the values of the root axes (``axes``: spatial axes of the
compute, then its reduction axes), available for all iterations at once
through :meth:`LoopNest.axis_values`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from autotile.errors import ScheduleError
from autotile.te._layout import Layout, RowMajor
from autotile.te._tensor import ComputeOp

__all__ = ["Loop", "AffineIndex", "Access", "BufferInfo", "LoopNest"]

#: Iterations processed at a time by the vectorised helpers.
CHUNK_ITERS = 1 << 18


@dataclass(frozen=True)
class Loop:
    """One loop of a nest: ``for name in range(extent)``.

    Parameters
    ----------
    name : str
        Loop variable, e.g. ``"i_o"``.
    extent : int
        Trip count, >= 1.
    kind : {"spatial", "reduce"}, default="spatial"
        Whether the loop variable feeds a reduction axis.
    """

    name: str
    extent: int
    kind: str = "spatial"


@dataclass(frozen=True)
class AffineIndex:
    """One index of an access: ``coefficients @ axis_values + offset``.

    Parameters
    ----------
    coefficients : tuple of int
        One multiplier per root axis (``LoopNest.axes`` order).
    offset : int
        Constant term.
    text : str
        The index as written in the compute, e.g. ``"i + r"``.
    """

    coefficients: tuple[int, ...]
    offset: int
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Access:
    """One memory access of the innermost loop body.

    Parameters
    ----------
    buffer : str
        Buffer name (a :class:`BufferInfo` name).
    index : tuple of AffineIndex
        One affine map per buffer dimension.
    is_write : bool
        True for the output access (a read-modify-write for reductions).
    is_read : bool, default=True
        False only for a plain (non-reduction) output store.
    """

    buffer: str
    index: tuple[AffineIndex, ...]
    is_write: bool
    is_read: bool = True

    @property
    def index_coefficients(self) -> npt.NDArray[np.int64]:
        """Array of shape (n_dims, n_axes): dim ``d`` = ``coef[d] @ axis_values``."""
        return np.array([ix.coefficients for ix in self.index], dtype=np.int64)

    @property
    def index_offsets(self) -> npt.NDArray[np.int64]:
        """Array of shape (n_dims,): constant term of each index."""
        return np.array([ix.offset for ix in self.index], dtype=np.int64)

    def indices(self, axis_values: npt.NDArray[np.int64]) -> list[npt.NDArray[np.int64]]:
        """Per-dimension index arrays for ``axis_values`` of shape (n, n_axes)."""
        vals = axis_values @ self.index_coefficients.T + self.index_offsets
        return [vals[:, d] for d in range(vals.shape[1])]

    def __str__(self) -> str:
        return f"{self.buffer}[{', '.join(ix.text for ix in self.index)}]"


@dataclass(frozen=True)
class BufferInfo:
    """A buffer's place in memory.

    Buffers are laid out contiguously from byte 0 in declaration order
    (placeholders in creation order, then the output).

    Parameters
    ----------
    name : str
        Buffer name.
    shape : tuple of int
        Logical shape in elements.
    dtype : str
        NumPy dtype name.
    itemsize : int
        Bytes per element (float32: 4, float64: 8).
    layout : RowMajor, PaddedLayout or PackedLayout
        Bound storage layout.
    base_bytes : int
        Byte address of element offset 0.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    itemsize: int
    layout: Layout
    base_bytes: int

    @property
    def n_elements(self) -> int:
        """Allocated elements, padding included."""
        return self.layout.n_elements

    @property
    def size_bytes(self) -> int:
        """Allocated bytes: ``n_elements * itemsize``."""
        return self.layout.n_elements * self.itemsize


@dataclass(frozen=True)
class _SplitRel:
    parent: str
    outer: str
    inner: str
    factor: int


@dataclass(frozen=True)
class _FuseRel:
    outer: str
    inner: str
    fused: str
    inner_extent: int


@dataclass(frozen=True, eq=False)
class LoopNest:
    """A lowered, perfectly nested loop program (see module docstring).

    Build with :func:`autotile.te.lower`; ``str(nest)`` is readable
    Python-like code.

    Attributes
    ----------
    loops : tuple of Loop
        Outer to inner.
    axes : tuple of str
        Root axis names: spatial axes of the compute, then reduction axes.
    axis_min : tuple of int
        First value of each root axis (0 except for ``reduce_axis((lo, hi))``
        with ``lo != 0``).
    buffers : tuple of BufferInfo
        Placeholders in creation order, then the output.
    accesses : tuple of Access
        Accesses of one innermost iteration, in order: the tensor reads of
        the body left to right, then the output (last).
    """

    loops: tuple[Loop, ...]
    axes: tuple[str, ...]
    axis_min: tuple[int, ...]
    buffers: tuple[BufferInfo, ...]
    accesses: tuple[Access, ...]
    op: ComputeOp = field(repr=False)
    relations: tuple[_SplitRel | _FuseRel, ...] = field(repr=False)

    # -- sizes ---------------------------------------------------------------
    @property
    def n_iters(self) -> int:
        """Number of innermost iterations: product of loop extents."""
        return math.prod(loop.extent for loop in self.loops)

    @property
    def n_accesses(self) -> int:
        """Accesses per iteration."""
        return len(self.accesses)

    def buffer(self, name: str) -> BufferInfo:
        """Return the buffer called ``name``."""
        for b in self.buffers:
            if b.name == name:
                return b
        names = [b.name for b in self.buffers]
        raise ScheduleError(f"no buffer named {name!r}; buffers are {names}")

    # -- iteration space -----------------------------------------------------
    def loop_counters(self, start: int = 0, stop: int | None = None) -> npt.NDArray[np.int64]:
        """Loop variable values of iterations ``start..stop`` in execution order.

        Returns
        -------
        ndarray of shape (stop - start, n_loops), dtype int64
            Mixed-radix digits of the iteration number (outer loop first).
        """
        stop = self.n_iters if stop is None else stop
        t = np.arange(start, stop, dtype=np.int64)
        out = np.empty((t.size, len(self.loops)), dtype=np.int64)
        stride = 1
        for col in range(len(self.loops) - 1, -1, -1):
            ext = self.loops[col].extent
            out[:, col] = (t // stride) % ext
            stride *= ext
        return out

    def axis_values(self, start: int = 0, stop: int | None = None) -> npt.NDArray[np.int64]:
        """Root axis values of every iteration, in execution order.

        Parameters
        ----------
        start, stop : int, optional
            Restrict to iterations ``start..stop`` (default: all).

        Returns
        -------
        ndarray of shape (n_iters, n_axes), dtype int64
            Column ``a`` is the value of ``axes[a]``; handles fused loops.
        """
        counters = self.loop_counters(start, stop)
        vals: dict[str, npt.NDArray[np.int64]] = {
            loop.name: counters[:, col] for col, loop in enumerate(self.loops)
        }
        for rel in reversed(self.relations):
            if isinstance(rel, _SplitRel):
                vals[rel.parent] = vals[rel.outer] * rel.factor + vals[rel.inner]
            else:
                fused = vals[rel.fused]
                vals[rel.outer] = fused // rel.inner_extent
                vals[rel.inner] = fused % rel.inner_extent
        out = np.empty((counters.shape[0], len(self.axes)), dtype=np.int64)
        for a, (name, lo) in enumerate(zip(self.axes, self.axis_min)):
            out[:, a] = vals[name] + lo
        return out

    def affine_coefficients(self) -> npt.NDArray[np.int64] | None:
        """Multiplier of each loop variable in each root axis, if affine.

        Returns
        -------
        ndarray of shape (n_loops, n_axes), dtype int64, or None
            ``axis_values() == loop_counters() @ coef + axis_min``; None when
            a fused loop makes the mapping non-affine.
        """
        n_loops = len(self.loops)
        coef: dict[str, npt.NDArray[np.int64]] = {}
        for col, loop in enumerate(self.loops):
            coef[loop.name] = np.zeros(n_loops, dtype=np.int64)
            coef[loop.name][col] = 1
        for rel in reversed(self.relations):
            if isinstance(rel, _FuseRel):
                return None
            coef[rel.parent] = coef[rel.outer] * rel.factor + coef[rel.inner]
        return np.stack([coef[name] for name in self.axes], axis=1)

    # -- traces --------------------------------------------------------------
    def element_offsets(self, axis_values: npt.NDArray[np.int64]) -> list[npt.NDArray[np.int64]]:
        """Element offsets of each access for iterations given by ``axis_values``.

        Returns
        -------
        list of ndarray of shape (n,)
            One per access, in ``accesses`` order, through each buffer layout.
        """
        by_name = {b.name: b for b in self.buffers}
        return [
            by_name[acc.buffer].layout.element_offset(*acc.indices(axis_values))
            for acc in self.accesses
        ]

    def byte_trace(self, itemsize: int | None = None) -> npt.NDArray[np.uint64]:
        """Byte address of every access, in execution order.

        Parameters
        ----------
        itemsize : int, optional
            Bytes per element for every buffer (bases are recomputed, still
            contiguous in declaration order).  Default: each buffer's own.

        Returns
        -------
        ndarray of shape (n_iters * n_accesses,), dtype uint64
            Iteration-major: the accesses of iteration 0 (e.g. A, B, C), then
            of iteration 1, and so on.
        """
        if itemsize is None:
            bases = [b.base_bytes for b in self.buffers]
            sizes = [b.itemsize for b in self.buffers]
        else:
            if itemsize < 1:
                raise ScheduleError(f"itemsize must be >= 1, got itemsize={itemsize}")
            sizes = [int(itemsize)] * len(self.buffers)
            bases = list(np.cumsum([0] + [b.n_elements * itemsize for b in self.buffers[:-1]]))
        where = {b.name: k for k, b in enumerate(self.buffers)}
        n_acc = len(self.accesses)
        out = np.empty((self.n_iters, n_acc), dtype=np.uint64)
        for start in range(0, self.n_iters, CHUNK_ITERS):
            stop = min(start + CHUNK_ITERS, self.n_iters)
            offsets = self.element_offsets(self.axis_values(start, stop))
            for col, (acc, off) in enumerate(zip(self.accesses, offsets)):
                k = where[acc.buffer]
                out[start:stop, col] = (int(bases[k]) + off * sizes[k]).astype(np.uint64)
        return out.reshape(-1)

    # -- printing ------------------------------------------------------------
    def _assignments(self) -> list[str]:
        """Statements recovering the root axes from the loop variables.

        Emitted depth-first per root axis (in ``axes`` order), each
        statement after the statements defining its inputs.
        """
        available = {loop.name for loop in self.loops}
        producer: dict[str, _SplitRel | _FuseRel] = {}
        for rel in self.relations:
            if isinstance(rel, _SplitRel):
                producer[rel.parent] = rel
            else:
                producer[rel.outer] = producer[rel.inner] = rel
        lo = dict(zip(self.axes, self.axis_min))
        lines: list[str] = []

        def shift(name: str, text: str) -> str:
            return f"{text} + {lo[name]}" if lo.get(name, 0) else text

        def emit(name: str) -> None:
            if name in available:
                return
            rel = producer[name]
            if isinstance(rel, _SplitRel):
                emit(rel.outer)
                emit(rel.inner)
                expr = f"{rel.outer} * {rel.factor} + {rel.inner}"
                lines.append(f"{rel.parent} = ({shift(rel.parent, expr)})")
                available.add(rel.parent)
            else:
                emit(rel.fused)
                div = f"{rel.fused} // {rel.inner_extent}"
                mod = f"{rel.fused} % {rel.inner_extent}"
                lines.append(f"{rel.outer} = {shift(rel.outer, div)}")
                lines.append(f"{rel.inner} = {shift(rel.inner, mod)}")
                available.update((rel.outer, rel.inner))

        for name in self.axes:
            emit(name)
        return lines

    def __str__(self) -> str:
        out_name = self.op.name
        first_access: dict[str, Access] = {}
        for acc in self.accesses:
            first_access.setdefault(acc.buffer, acc)
        lines: list[str] = []
        for b in self.buffers:
            if not isinstance(b.layout, RowMajor):
                text = tuple(ix.text for ix in first_access[b.name].index)
                lines.append(f"# {b.name}[{', '.join(text)}]: {b.layout.describe(text)}")
        spatial = ", ".join(a.name for a in self.op.axis)
        if self.op.is_reduction:
            lines.append(f"{out_name}[{', '.join(':' for _ in self.op.axis)}] = 0")
        lo = dict(zip(self.axes, self.axis_min))
        for depth, loop in enumerate(self.loops):
            start = lo.get(loop.name, 0)
            rng = f"{start}, {start + loop.extent}" if start else f"{loop.extent}"
            lines.append(f"{'    ' * depth}for {loop.name} in range({rng}):")
        indent = "    " * len(self.loops)
        assigns = self._assignments()
        if assigns:
            lines.append(indent + "; ".join(assigns))
        op = "+=" if self.op.is_reduction else "="
        lines.append(f"{indent}{out_name}[{spatial}] {op} {self.op.body}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        loops = ", ".join(f"{lp.name}:{lp.extent}" for lp in self.loops)
        return f"LoopNest({self.op.name}; loops=[{loops}]; n_iters={self.n_iters})"
