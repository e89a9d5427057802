"""Vectorised loop features of GEMM schedule configs (the fast path).

For :func:`autotile.space.gemm_space` configs the features of
:func:`~autotile.cost_model._loop_features.loop_nest_features` follow from
the split factors and the loop order alone: loop ``xo`` has extent
``n // f_x`` and multiplier ``f_x``, loop ``xi`` extent ``f_x`` and
multiplier 1; a buffer indexed by axes ``(x, y)`` touches
``prod(extents of its loops under the level)`` distinct elements. Buffer
layouts, item sizes and base addresses are read once per combination of
the extra knobs (``pack_tile``, ``row_width``) from a lowered
representative nest, and the distinct cache lines of each (buffer, factors,
set of loops under the level) are counted once by enumeration and kept in a
table. Equality with the lowered path is tested.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.cost_model._loop_features import PER_BUFFER_FEATURES
from autotile.space import divisors
from autotile.space._gemm import GEMM_LOOPS

__all__ = ["GemmLoopFeatures"]

_EXTRA_KNOBS = ("pack_tile", "row_width")
_AXES = ("i", "j", "k")


@dataclass(frozen=True)
class _Buffer:
    name: str
    itemsize: int
    base_bytes: int
    layout: Any
    dim_axes: tuple[int, ...]  # root axis (0=i, 1=j, 2=k) of each dimension
    axes: tuple[int, ...]  # sorted distinct axes


class GemmLoopFeatures:
    """Compute GEMM loop features for many configs at once.

    Parameters
    ----------
    n : int
        Matrix size of the GEMM space.
    lower_fn : callable
        ``lower_fn(config) -> autotile.te.LoopNest`` for a representative
        config (used once per extra-knob combination).
    line_bytes : int
        Cache line size in bytes.

    Notes
    -----
    Holds explicit caches (buffer descriptions, line-count tables, order
    lookups); :meth:`clear_cache` empties them.
    """

    def __init__(self, n: int, lower_fn: Callable[[Mapping[str, Any]], Any],
                 line_bytes: int) -> None:
        self.n = int(n)
        self.lower_fn = lower_fn
        self.line_bytes = int(line_bytes)
        self.divs = np.array(divisors(self.n), dtype=np.int64)
        self._div_index = {int(d): k for k, d in enumerate(self.divs)}
        self._order_ids: dict[tuple[str, ...], tuple[int, ...]] = {}
        self._buffers: dict[tuple[Any, ...], tuple[_Buffer, ...]] = {}
        self._lines: dict[tuple[Any, ...], npt.NDArray[np.int64]] = {}

    def clear_cache(self) -> None:
        """Forget buffer descriptions, line tables and order lookups."""
        self._order_ids.clear()
        self._buffers.clear()
        self._lines.clear()

    # -- per extra-knob combination -------------------------------------------------
    def buffers(self, extras: tuple[tuple[str, Any], ...]) -> tuple[_Buffer, ...]:
        """Buffer descriptions for one combination of extra knobs."""
        if extras in self._buffers:
            return self._buffers[extras]
        cfg: dict[str, Any] = {"i_factor": 1, "j_factor": 1, "k_factor": 1,
                               "order": GEMM_LOOPS, **dict(extras)}
        nest = self.lower_fn(cfg)
        if tuple(nest.axes) != _AXES:
            raise ValueError(f"expected GEMM root axes {_AXES}, got {tuple(nest.axes)}")
        out = []
        for buf in nest.buffers:
            accs = [a for a in nest.accesses if a.buffer == buf.name]
            if len(accs) != 1:
                raise ValueError(f"expected one access of buffer {buf.name}, got {len(accs)}")
            ic = accs[0].index_coefficients
            if np.any(accs[0].index_offsets != 0) or not np.all(
                    (ic == 0) | (ic == 1)) or np.any(ic.sum(axis=1) != 1):
                raise ValueError(f"access {accs[0]} is not a plain axis index")
            dim_axes = tuple(int(np.argmax(row)) for row in ic)
            out.append(_Buffer(buf.name, buf.itemsize, buf.base_bytes, buf.layout, dim_axes,
                               tuple(sorted(set(dim_axes)))))
        self._buffers[extras] = tuple(out)
        return self._buffers[extras]

    def _line_count(self, extras: tuple[tuple[str, Any], ...], bi: int,
                    factors: tuple[int, ...], mask: int) -> int:
        """Distinct lines of buffer ``bi`` when the loops in ``mask`` iterate."""
        buf = self.buffers(extras)[bi]
        values = []
        for a_pos, f in enumerate(factors):
            outer, inner = bool(mask >> (2 * a_pos) & 1), bool(mask >> (2 * a_pos + 1) & 1)
            vo = np.arange(self.n // f if outer else 1, dtype=np.int64) * f
            vi = np.arange(f if inner else 1, dtype=np.int64)
            values.append((vo[:, None] + vi[None, :]).reshape(-1))
        grids = np.meshgrid(*values, indexing="ij")
        axis_vals = {a: g.reshape(-1) for a, g in zip(buf.axes, grids)}
        offs = np.asarray(buf.layout.element_offset(*(axis_vals[a] for a in buf.dim_axes)),
                          dtype=np.int64)
        lines = (buf.base_bytes + offs * buf.itemsize) // self.line_bytes
        return int(np.unique(lines).size)

    def _line_table(self, extras: tuple[tuple[str, Any], ...], bi: int,
                    ) -> npt.NDArray[np.int64]:
        key = (extras, bi)
        if key not in self._lines:
            n_axes = len(self.buffers(extras)[bi].axes)
            shape = (len(self.divs),) * n_axes + (1 << (2 * n_axes),)
            self._lines[key] = np.full(shape, -1, dtype=np.int64)
        return self._lines[key]

    # -- main entry ---------------------------------------------------------------
    def order_ids(self, order: Sequence[str]) -> tuple[int, ...]:
        """Loop ids (index into ``GEMM_LOOPS``) of an order, outer to inner."""
        key = tuple(order)
        ids = self._order_ids.get(key)
        if ids is None:
            ids = self._order_ids[key] = tuple(GEMM_LOOPS.index(x) for x in key)
        return ids

    def features(self, configs: Sequence[Mapping[str, Any]]) -> npt.NDArray[np.float64]:
        """Loop features of validated GEMM configs.

        Parameters
        ----------
        configs : sequence of Mapping
            Valid configs of the GEMM space.

        Returns
        -------
        ndarray of shape (n_configs, n_loop_features), dtype float64
            Same columns as ``loop_nest_features`` with ``max_depth = 6``.
        """
        n_cfg = len(configs)
        f = np.empty((n_cfg, 3), dtype=np.int64)
        ids = np.empty((n_cfg, 6), dtype=np.int64)
        groups: dict[tuple[tuple[str, Any], ...], list[int]] = {}
        for c, cfg in enumerate(configs):
            f[c] = (cfg["i_factor"], cfg["j_factor"], cfg["k_factor"])
            ids[c] = self.order_ids(cfg["order"])
            extras = tuple((k, cfg[k]) for k in _EXTRA_KNOBS if k in cfg)
            groups.setdefault(extras, []).append(c)
        return self.features_of(f, ids, groups)

    def features_of(self, f: npt.NDArray[np.int64], ids: npt.NDArray[np.int64],
                    groups: Mapping[tuple[tuple[str, Any], ...], Sequence[int]],
                    ) -> npt.NDArray[np.float64]:
        """Loop features from split factors and loop orders given as arrays.

        Parameters
        ----------
        f : ndarray of shape (n_configs, 3), int64
            ``i_factor``, ``j_factor``, ``k_factor``.
        ids : ndarray of shape (n_configs, 6), int64
            The loop order as loop ids (:meth:`order_ids`), outer to inner.
        groups : mapping
            Extra-knob combination (``((name, value), ...)``, empty without
            extra knobs) -> the rows that have it; every row in one group.

        Returns
        -------
        ndarray of shape (n_configs, n_loop_features), dtype float64
            As :meth:`features`.
        """
        n_cfg = f.shape[0]
        first = next(iter(groups)) if groups else ()
        n_buf = len(self.buffers(first))
        per_level = 1 + len(PER_BUFFER_FEATURES) * n_buf
        out = np.zeros((n_cfg, 6 * per_level + 1), dtype=np.float64)
        for extras, rows in groups.items():
            r = np.asarray(rows, dtype=np.int64)
            out[r] = self._group(extras, f[r], ids[r], per_level)
        return out

    def _group(self, extras: tuple[tuple[str, Any], ...], f: npt.NDArray[np.int64],
               ids: npt.NDArray[np.int64], per_level: int) -> npt.NDArray[np.float64]:
        n_cfg = f.shape[0]
        rows = np.arange(n_cfg)[:, None]
        axis = ids // 2  # (n_cfg, 6): axis of the loop at each depth
        is_inner = (ids % 2) == 1
        fa = f[rows, axis]
        ext = np.where(is_inner, fa, self.n // fa)
        mult = np.where(is_inner, 1, fa)
        pos = np.empty_like(ids)  # depth of each loop id
        pos[rows, ids] = np.arange(6)[None, :]
        out = np.zeros((n_cfg, 6 * per_level + 1), dtype=np.float64)
        out[:, 0:6 * per_level:per_level] = np.log2(ext)
        n_under = np.cumprod(ext[:, ::-1], axis=1)[:, ::-1]
        fidx = np.vectorize(self._div_index.__getitem__, otypes=[np.int64])(f)
        for bi, buf in enumerate(self.buffers(extras)):
            col0 = 1 + bi * len(PER_BUFFER_FEATURES)
            touches = np.isin(axis, buf.axes)
            # stride: offset(axis value = multiplier) - offset(0)
            idx = [np.where(axis == a, mult, 0) for a in buf.dim_axes]
            origin = int(np.asarray(buf.layout.element_offset(*([0] * len(buf.dim_axes)))))
            stride = (np.asarray(buf.layout.element_offset(*idx), dtype=np.int64)
                      - origin) * buf.itemsize
            stride = np.where(touches & (ext > 1), stride, 0)
            elems = np.cumprod(np.where(touches, ext, 1)[:, ::-1], axis=1)[:, ::-1]
            # line counts from the table, keyed by factors and loops under the level
            table = self._line_table(extras, bi)
            key_f = tuple(fidx[:, a] for a in buf.axes)
            level = np.arange(6)[None, :]
            mask = np.zeros((n_cfg, 6), dtype=np.int64)
            for a_pos, a in enumerate(buf.axes):
                for part in (0, 1):
                    under = pos[:, 2 * a + part][:, None] >= level
                    mask |= under.astype(np.int64) << (2 * a_pos + part)
            where = tuple(k[:, None] for k in key_f) + (mask,)
            lines = table[where]
            if (lines < 0).any():
                # fill each missing table entry once (not once per config and level)
                rc, rl = np.nonzero(lines < 0)
                flat = np.unique(np.ravel_multi_index(
                    tuple(k[rc] for k in key_f) + (mask[rc, rl],), table.shape))
                for key in np.stack(np.unravel_index(flat, table.shape), axis=1).tolist():
                    factors = tuple(int(self.divs[k]) for k in key[:-1])
                    table[tuple(key)] = self._line_count(extras, bi, factors, key[-1])
                lines = table[where]
            for lv in range(6):
                base = lv * per_level + col0
                out[:, base] = np.log2(1 + np.abs(stride[:, lv]))
                out[:, base + 1] = np.log2(elems[:, lv] * buf.itemsize)
                out[:, base + 2] = np.log2(lines[:, lv])
                out[:, base + 3] = np.log2(n_under[:, lv] / elems[:, lv])
        steps = np.cumprod(ext, axis=1).sum(axis=1)
        out[:, -1] = np.log2(steps)
        return out

