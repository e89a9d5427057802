"""Storage layouts of buffers: row-major, padded rows, packed column tiles.

A layout maps a logical index ``(x0, ..., x{n-1})`` of a buffer of shape
``shape`` to an element offset in its allocation.  Layouts change storage
only, never results.  A layout made by the user (``PackedLayout(tile=16)``)
is unbound; :meth:`bind` attaches the buffer shape, which
:meth:`element_offset` and ``n_elements`` need.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Union

import numpy as np
import numpy.typing as npt

from autotile.errors import ScheduleError
from autotile.te._expr import _is_int

__all__ = ["RowMajor", "PaddedLayout", "PackedLayout", "Layout"]


def _shape_of(layout: Layout) -> tuple[int, ...]:
    if layout.shape is None:
        raise ScheduleError(f"{layout!r} is not bound to a buffer shape; call bind(shape) first")
    return layout.shape


def _row_major(shape: tuple[int, ...], idx: list[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    off = np.zeros(np.broadcast(*idx).shape if idx else (), dtype=np.int64)
    for size, x in zip(shape, idx):
        off = off * size + x
    return off


def _as_index(
    shape: tuple[int, ...], index_arrays: tuple[object, ...]
) -> list[npt.NDArray[np.int64]]:
    if len(index_arrays) != len(shape):
        raise ScheduleError(
            f"element_offset needs {len(shape)} index arrays for shape {shape}, "
            f"got {len(index_arrays)}"
        )
    return [np.asarray(x, dtype=np.int64) for x in index_arrays]


@dataclass(frozen=True)
class RowMajor:
    """Dense C-order layout: offset = ravel_multi_index(index, shape).

    Parameters
    ----------
    shape : tuple of int or None, default=None
        Buffer shape; set by :meth:`bind`.
    """

    shape: tuple[int, ...] | None = None

    def bind(self, shape: tuple[int, ...], name: str = "buffer") -> RowMajor:
        """Return this layout attached to a buffer of ``shape``."""
        return dataclasses.replace(self, shape=tuple(shape))

    @property
    def n_elements(self) -> int:
        """Allocated elements."""
        return math.prod(_shape_of(self))

    def element_offset(self, *index_arrays: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Element offsets of logical indices (one int array per dimension)."""
        shape = _shape_of(self)
        return _row_major(shape, _as_index(shape, index_arrays))

    def describe(self, index_text: tuple[str, ...]) -> str:
        """Return a one-line description for printed loop nests."""
        return "row-major"


@dataclass(frozen=True)
class PaddedLayout:
    """Row-major with every row (last dimension) padded to ``width`` elements.

    The stride of the second-to-last dimension is ``width``; padding
    elements are allocated but never touched.  Used to break cache-set
    conflicts of power-of-two row strides.

    Parameters
    ----------
    width : int
        Allocated elements per row; must be >= the row length.
    shape : tuple of int or None, default=None
        Buffer shape; set by :meth:`bind`.

    Raises
    ------
    ScheduleError
        If ``width < 1``, or on :meth:`bind` if ``width`` is smaller than the row.
    """

    width: int
    shape: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not _is_int(self.width) or self.width < 1:
            raise ScheduleError(f"padded width must be an int >= 1, got width={self.width!r}")

    def bind(self, shape: tuple[int, ...], name: str = "buffer") -> PaddedLayout:
        """Return this layout attached to a buffer of ``shape``."""
        if self.width < shape[-1]:
            raise ScheduleError(
                f"padded width {self.width} is smaller than the row length {shape[-1]} of "
                f"buffer {name}"
            )
        return dataclasses.replace(self, shape=tuple(shape))

    @property
    def n_elements(self) -> int:
        """Allocated elements, padding included."""
        shape = _shape_of(self)
        return math.prod(shape[:-1]) * self.width

    def element_offset(self, *index_arrays: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Element offsets of logical indices (one int array per dimension)."""
        shape = _shape_of(self)
        idx = _as_index(shape, index_arrays)
        return _row_major(shape[:-1] + (self.width,), idx)

    def describe(self, index_text: tuple[str, ...]) -> str:
        """Return a one-line description for printed loop nests."""
        return f"rows padded to {self.width} elements (row stride {self.width})"


@dataclass(frozen=True)
class PackedLayout:
    """Array packing: the last dimension is cut into tiles of ``tile`` columns.

    For a 2-D ``B[k, j]`` of shape ``(K, N)`` the element is stored at
    ``Bp[j // tile, k, j % tile]`` of a ``(N // tile, K, tile)`` array (TVM CPU
    GEMM tutorial); in general ``[x_last // tile, x_0, ..., x_last % tile]``.

    Parameters
    ----------
    tile : int
        Columns per packed tile; must divide the last dimension.
    shape : tuple of int or None, default=None
        Buffer shape; set by :meth:`bind`.

    Raises
    ------
    ScheduleError
        If ``tile < 1``, or on :meth:`bind` if ``tile`` does not divide the
        last dimension.
    """

    tile: int
    shape: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not _is_int(self.tile) or self.tile < 1:
            raise ScheduleError(f"pack tile must be an int >= 1, got tile={self.tile!r}")

    def bind(self, shape: tuple[int, ...], name: str = "buffer") -> PackedLayout:
        """Return this layout attached to a buffer of ``shape``."""
        if shape[-1] % self.tile != 0:
            raise ScheduleError(
                f"pack tile {self.tile} does not divide dimension {len(shape) - 1} "
                f"(extent {shape[-1]}) of buffer {name}"
            )
        return dataclasses.replace(self, shape=tuple(shape))

    @property
    def n_elements(self) -> int:
        """Allocated elements."""
        return math.prod(_shape_of(self))

    def element_offset(self, *index_arrays: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Element offsets of logical indices (one int array per dimension)."""
        shape = _shape_of(self)
        idx = _as_index(shape, index_arrays)
        t = self.tile
        inner = _row_major(shape[:-1], idx[:-1])
        n_rows = math.prod(shape[:-1])
        out = (idx[-1] // t) * (n_rows * t) + inner * t + idx[-1] % t
        return np.asarray(out, dtype=np.int64)

    def describe(self, index_text: tuple[str, ...]) -> str:
        """Return a one-line description for printed loop nests."""
        last = index_text[-1]
        if not last.isidentifier():
            last = f"({last})"
        parts = [f"{last} // {self.tile}", *index_text[:-1], f"{last} % {self.tile}"]
        return f"packed: stored at [{', '.join(parts)}]"


Layout = Union[RowMajor, PaddedLayout, PackedLayout]
