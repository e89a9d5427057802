"""``IndexCodec``: configs as space indices, with vectorised moves and encoding."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from autotile.space import Config, Knob, Permutation, Space

__all__ = ["IndexCodec", "neighbour_positions"]

_MAX_TABLE = 1 << 16
_MAX_PRODUCT = 1 << 27  # Space enumerates constrained products up to this size
_MUTATE_TRIES = 100  # as Space.mutate


@functools.lru_cache(maxsize=64)
def neighbour_positions(knob: Knob) -> tuple[tuple[int, ...], ...]:
    """Positions of ``knob.neighbours(v)`` for each value ``v``, in ``knob.values`` order.

    An explicit cache (``neighbour_positions.cache_clear()``) keyed by the
    knob (frozen, hashable): the 720-value permutation knob of the GEMM
    space takes about 0.2 s of CPU to tabulate, which every searcher of
    every study of that space would otherwise pay again.
    """
    values = knob.values
    try:
        pos = {v: i for i, v in enumerate(values)}
    except TypeError:  # unhashable values: rank them through the knob
        pos = {}
    return tuple(tuple(pos[w] if w in pos else knob.index(w) for w in knob.neighbours(v))
                 for v in values)


class IndexCodec:
    """Vectorised helpers over the indices of a space's valid configs.

    Every config has a mixed-radix *product index* (the knob value
    positions, last knob fastest). For a space without constraints (the
    common case for schedule templates) it is the space index; for a space
    with constraints or an explicit valid set (Kernel Tuner caches) the
    space index ``i`` is product index ``valid[i]`` of the space's sorted
    valid product indices, and a product index maps back by binary search.
    Either way moves and encodings run on NumPy arrays of indices:
    :meth:`mutate` changes one knob per row (another value; for a
    permutation knob a random neighbour move from a precomputed table;
    drawn again for rows that land on an invalid config, as
    ``space.mutate`` does), :meth:`neighbours` keeps the valid ones, and
    :meth:`encode` gathers per-knob feature tables (equal to
    ``space.encode``). Only spaces too large to enumerate (constraints and
    a product above ``2**27``) go through ``space.mutate`` and
    ``space.encode`` config by config.

    Parameters
    ----------
    space : Space
        The space.
    bridge : bool, default=False
        Whether :meth:`neighbours` also bridges invalid moves: on a space
        with constraints or an explicit valid set, a one-knob move that
        lands on an invalid config is followed by every one-knob move from
        there, and the valid configs so reached are neighbours too. Only
        where moves are vectorised (:attr:`fast`); ignored on constrained
        spaces too large to enumerate.

    Raises
    ------
    ValueError
        If ``bridge`` is not a bool.
    """

    def __init__(self, space: Space, bridge: bool = False) -> None:
        if not isinstance(bridge, (bool, np.bool_)):
            raise ValueError(f"bridge must be a bool, got bridge={bridge!r}")
        self.space = space
        #: Whether :meth:`neighbours` bridges invalid one-knob moves (see the class docstring).
        self.bridge = bool(bridge)
        knobs = space.knobs
        small = all(len(k) <= _MAX_TABLE for k in knobs) and space.product_size < (1 << 62)
        constrained = bool(space.constraints) or space.is_explicit
        self._valid: npt.NDArray[np.int64] | None = None
        if small and constrained and space.product_size <= _MAX_PRODUCT:
            self._valid = space.valid_product_indices()
        #: Whether moves and encodings are vectorised (see the class docstring).
        self.fast = small and (not constrained or self._valid is not None)
        self._radices = np.array([len(k) for k in knobs], dtype=np.int64)
        self._strides = np.array([math.prod(len(k) for k in knobs[i + 1:])
                                  for i in range(len(knobs))], dtype=np.int64)
        self._movable = np.array([i for i, k in enumerate(knobs) if len(k) > 1], dtype=np.int64)
        self._tables: list[npt.NDArray[np.float64]] | None = None
        self._moves: dict[int, npt.NDArray[np.int64]] = {}
        self._nbrs: list[npt.NDArray[np.int64]] | None = None

    # -- conversions ------------------------------------------------------------------
    def product(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Product indices of space indices (fast spaces only)."""
        idx = np.asarray(idx, dtype=np.int64)
        return idx if self._valid is None else self._valid[idx]

    def from_product(self, p: npt.NDArray[np.int64]
                     ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """Space indices of product indices, and which of them are valid configs.

        Returns
        -------
        idx : ndarray of shape (n,), int64
            The space index where ``ok`` holds (meaningless elsewhere).
        ok : ndarray of shape (n,), bool
            Whether the product index is a valid config.
        """
        p = np.asarray(p, dtype=np.int64)
        if self._valid is None:
            return p, np.ones(p.shape, dtype=bool)
        pos = np.searchsorted(self._valid, p)
        clipped = np.minimum(pos, self._valid.size - 1)
        return clipped, self._valid[clipped] == p

    @property
    def radices(self) -> npt.NDArray[np.int64]:
        """Number of values of each knob, shape (n_knobs,)."""
        return self._radices

    def compose(self, digits: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Product indices of knob value positions of shape (n, n_knobs) (any space)."""
        d = np.asarray(digits, dtype=np.int64).reshape(-1, self._radices.size)
        out: npt.NDArray[np.int64] = d @ self._strides
        return out

    def digits(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Knob value positions of indices, shape (n, n_knobs) (fast spaces only)."""
        p = self.product(idx)
        return (p[:, None] // self._strides[None, :]) % self._radices[None, :]

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
            rows = [list(r) for r in neighbour_positions(self.space.knobs[j])]
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
        out = idx.copy()
        todo = np.arange(idx.size)
        for _ in range(_MUTATE_TRIES):
            got, ok = self.from_product(self._move(self.product(idx[todo]), rng))
            out[todo[ok]] = got[ok]
            todo = todo[~ok]
            if todo.size == 0:
                return out
        # rows that found no valid move: Space.mutate's fallbacks, config by config
        out[todo] = self.index([self.space.mutate(c, rng) for c in self.configs(idx[todo])])
        return out

    def _move(self, p: npt.NDArray[np.int64], rng: np.random.Generator
              ) -> npt.NDArray[np.int64]:
        """One random knob move of each product index (valid or not)."""
        d = (p[:, None] // self._strides[None, :]) % self._radices[None, :]
        which = self._movable[rng.integers(self._movable.size, size=p.size)]
        cur = d[np.arange(p.size), which]
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
        moved = np.asarray(p + (new - cur) * self._strides[which], dtype=np.int64)
        return moved

    def neighbours(self, idx: Sequence[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The distinct valid configs one knob-neighbour step from any of ``idx``.

        The union of ``space.neighbours`` over the configs at ``idx`` (one
        knob moved to an adjacent value; for a permutation, an adjacent swap
        or one loop moved), the configs at ``idx`` themselves excluded.
        With :attr:`bridge`, a step that lands on an invalid config is
        followed by a second step (any knob, the same one included), and the
        valid configs so reached are added: on a Kernel Tuner space where
        ``tile_stride_x`` must be 0 when ``tile_size_x`` is 1, the move from
        ``(tile_size_x=2, tile_stride_x=1)`` to ``(1, 0)`` is then one
        neighbour step instead of none (vectorised spaces only).

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
                rows = [list(r) for r in neighbour_positions(k)]
                width = max(1, max(len(r) for r in rows))
                self._nbrs.append(np.array([r + [-1] * (width - len(r)) for r in rows],
                                           dtype=np.int64))
        steps = self._steps(self.product(idx))
        got, ok = self.from_product(steps)
        found = got[ok]
        if self.bridge and self._valid is not None and not ok.all():
            # invalid landing points: one more step from each, the valid ones kept
            bad = np.unique(steps[~ok])
            got2, ok2 = self.from_product(self._steps(bad))
            found = np.concatenate([found, got2[ok2]])
        res: npt.NDArray[np.int64] = np.setdiff1d(found, idx)
        return res

    def _steps(self, p: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Product indices one knob-neighbour step from product indices ``p`` (valid or not)."""
        assert self._nbrs is not None
        d = (p[:, None] // self._strides[None, :]) % self._radices[None, :]
        parts = []
        for j, tab in enumerate(self._nbrs):
            to = tab[d[:, j]]
            cand = p[:, None] + (to - d[:, j, None]) * self._strides[j]
            parts.append(cand[to >= 0])
        return np.concatenate(parts)
