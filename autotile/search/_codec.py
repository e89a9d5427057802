"""``IndexCodec``: configs as space indices, with vectorised moves and encoding."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from autotile.space import Config, Permutation, Space

__all__ = ["IndexCodec"]

_MAX_TABLE = 1 << 16


class IndexCodec:
    """Vectorised helpers over the indices of a space's valid configs.

    For a space without constraints (the common case for schedule
    templates) index ``i`` is the mixed-radix number of the knob value
    positions, so moves and encodings run on NumPy arrays of indices:
    :meth:`mutate` changes one knob per row (another value; for a
    permutation knob a random neighbour move from a precomputed table) and
    :meth:`encode` gathers per-knob feature tables (equal to
    ``space.encode``). Spaces with constraints or an explicit valid set go
    through ``space.mutate`` and ``space.encode`` config by config.

    Parameters
    ----------
    space : Space
        The space.
    """

    def __init__(self, space: Space) -> None:
        self.space = space
        knobs = space.knobs
        self.fast = (
            not space.constraints
            and not space.is_explicit
            and all(len(k) <= _MAX_TABLE for k in knobs)
            and space.product_size < (1 << 62)
        )
        self._radices = np.array([len(k) for k in knobs], dtype=np.int64)
        self._strides = np.array([math.prod(len(k) for k in knobs[i + 1:])
                                  for i in range(len(knobs))], dtype=np.int64)
        self._movable = np.array([i for i, k in enumerate(knobs) if len(k) > 1], dtype=np.int64)
        self._tables: list[npt.NDArray[np.float64]] | None = None
        self._moves: dict[int, npt.NDArray[np.int64]] = {}
        self._nbrs: list[npt.NDArray[np.int64]] | None = None

    # -- conversions ------------------------------------------------------------------
    def digits(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Knob value positions of indices, shape (n, n_knobs) (fast spaces only)."""
        idx = np.asarray(idx, dtype=np.int64)
        return (idx[:, None] // self._strides[None, :]) % self._radices[None, :]

    def configs(self, idx: Sequence[int] | npt.NDArray[np.int64]) -> list[Config]:
        """``[space.config_at(i) for i in idx]``."""
        return [self.space.config_at(int(i)) for i in idx]

    def index(self, configs: Sequence[Config]) -> npt.NDArray[np.int64]:
        """``space.index_of`` of each config, as an int64 array."""
        return np.fromiter((self.space.index_of(c) for c in configs), dtype=np.int64,
                           count=len(configs))

    # -- encoding ---------------------------------------------------------------------
    def encode(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """``space.encode`` of the configs at ``idx``, shape (n, space.n_features)."""
        idx = np.asarray(idx, dtype=np.int64)
        if not self.fast:
            return self.space.encode(self.configs(idx))
        if self._tables is None:
            self._tables = [
                np.array([k.encode(v) for v in k.values], dtype=np.float64).reshape(
                    len(k), k.n_features)
                for k in self.space.knobs
            ]
        d = self.digits(idx)
        cols = [t[d[:, j]] for j, t in enumerate(self._tables)]
        return np.hstack(cols) if cols else np.zeros((len(idx), 0))

    # -- moves ------------------------------------------------------------------------
    def _move_table(self, j: int) -> npt.NDArray[np.int64]:
        tab = self._moves.get(j)
        if tab is None:
            knob = self.space.knobs[j]
            rows = [[knob.index(w) for w in knob.neighbours(v)] for v in knob.values]
            width = max(len(r) for r in rows)
            tab = np.array([r + [r[0]] * (width - len(r)) if r else [i] * width
                            for i, r in enumerate(rows)], dtype=np.int64)
            self._moves[j] = tab
        return tab

    def mutate(self, idx: npt.NDArray[np.int64], rng: np.random.Generator
               ) -> npt.NDArray[np.int64]:
        """Move each index to a random neighbour: one knob changed (see ``Space.mutate``).

        Parameters
        ----------
        idx : ndarray of shape (n,), int64
            Space indices.
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        ndarray of shape (n,), int64
            Mutated indices (valid configs).
        """
        idx = np.asarray(idx, dtype=np.int64)
        if not self.fast:
            return self.index([self.space.mutate(c, rng) for c in self.configs(idx)])
        if self._movable.size == 0 or idx.size == 0:
            return idx.copy()
        d = self.digits(idx)
        which = self._movable[rng.integers(self._movable.size, size=idx.size)]
        cur = d[np.arange(idx.size), which]
        new = cur.copy()
        for j in np.unique(which):
            rows = which == j
            if isinstance(self.space.knobs[j], Permutation) and len(self.space.knobs[j]) > 2:
                tab = self._move_table(int(j))
                pick = rng.integers(tab.shape[1], size=int(rows.sum()))
                new[rows] = tab[cur[rows], pick]
            else:
                r = self._radices[j]
                step = rng.integers(1, r, size=int(rows.sum()))
                new[rows] = (cur[rows] + step) % r
        return idx + (new - cur) * self._strides[which]

    def neighbours(self, idx: Sequence[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The distinct valid configs one knob-neighbour step from any of ``idx``.

        The union of ``space.neighbours`` over the configs at ``idx`` (one
        knob moved to an adjacent value; for a permutation, an adjacent swap
        or one loop moved), the configs at ``idx`` themselves excluded.

        Parameters
        ----------
        idx : array-like of shape (n,), int
            Space indices.

        Returns
        -------
        ndarray of shape (n_neighbours,), int64
            Sorted space indices.
        """
        idx = np.unique(np.asarray(idx, dtype=np.int64))
        if idx.size == 0:
            return idx
        if not self.fast:
            out = {self.space.index_of(c) for cfg in self.configs(idx)
                   for c in self.space.neighbours(cfg)}
            return np.setdiff1d(np.fromiter(out, np.int64, len(out)), idx)
        if self._nbrs is None:
            self._nbrs = []
            for k in self.space.knobs:
                rows = [[k.index(w) for w in k.neighbours(v)] for v in k.values]
                width = max(1, max(len(r) for r in rows))
                self._nbrs.append(np.array([r + [-1] * (width - len(r)) for r in rows],
                                           dtype=np.int64))
        d = self.digits(idx)
        parts = []
        for j, tab in enumerate(self._nbrs):
            to = tab[d[:, j]]
            cand = idx[:, None] + (to - d[:, j, None]) * self._strides[j]
            parts.append(cand[to >= 0])
        return np.setdiff1d(np.concatenate(parts), idx)
