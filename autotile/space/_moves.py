"""Search moves over a space's valid configs: sampling, neighbours, mutation, crossover.

:class:`SpaceMoves` is the part of :class:`~autotile.space.Space` that
searchers drive: random search draws uniformly (:meth:`~SpaceMoves.sample`),
local search steps to knob neighbours, evolutionary search mutates and
crosses over. Every move returns valid configs only: a candidate is checked
against the constraints and redrawn, with the documented fallbacks once
``_MAX_TRIES`` attempts fail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from autotile.errors import InvalidConfigError
from autotile.space._config import Config
from autotile.space._enumerate import INT64_LIMIT
from autotile.space._knob import Knob
from autotile.space._permutation import Permutation, order_crossover

__all__ = ["SpaceMoves"]

_MAX_TRIES = 100


def _as_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


class SpaceMoves:
    """Sampling and search moves of a :class:`~autotile.space.Space` (a mixin of ``Space``)."""

    if TYPE_CHECKING:  # provided by Space
        _knobs: tuple[Knob, ...]
        _names: tuple[str, ...]
        _radices: list[int]
        _strides: list[int]

        @property
        def size(self) -> int: ...
        def config_at(self, index: int) -> Config: ...
        def _decode(self, p: int) -> Config: ...
        def _check_knobs(self, mapping: Any) -> tuple[list[Any] | None, list[str]]: ...
        def _satisfied(self, values: Sequence[Any]) -> list[str]: ...
        def _own(self, items: tuple[tuple[str, Any], ...]) -> Config: ...

    def sample(
        self, rng: np.random.Generator | int | None = None, n: int = 1, unique: bool = True
    ) -> list[Config]:
        """Draw configs uniformly from the valid configs.

        Parameters
        ----------
        rng : numpy.random.Generator or int, optional
            Generator or seed; the same seed gives the same configs.
        n : int, default=1
            Number of configs.
        unique : bool, default=True
            Draw without replacement.

        Returns
        -------
        list of Config
            ``n`` configs.

        Raises
        ------
        InvalidConfigError
            If the space is empty, or ``unique`` and ``n > size``.
        """
        gen = _as_rng(rng)
        n = int(n)
        if n < 0:
            raise InvalidConfigError(f"n must be >= 0, got n={n}")
        size = self.size
        if n and size == 0:
            raise InvalidConfigError("cannot sample from a space with no valid configs")
        if unique and n > size:
            raise InvalidConfigError(
                f"cannot sample n={n} distinct configs from a space of size {size}"
            )
        if size < INT64_LIMIT:
            if unique:
                idx = gen.choice(size, size=n, replace=False)
            else:
                idx = gen.integers(0, size, size=n)
            return [self.config_at(int(i)) for i in idx]
        # Huge and unconstrained: draw each knob's digit independently.
        out: list[Config] = []
        seen: set[Config] = set()
        while len(out) < n:
            p = sum(int(gen.integers(r)) * s for r, s in zip(self._radices, self._strides))
            cfg = self._decode(p)
            if unique and cfg in seen:
                continue
            seen.add(cfg)
            out.append(cfg)
        return out

    def neighbours(self, config: Mapping[str, Any]) -> list[Config]:
        """Return the valid configs one knob-neighbour step away from ``config``.

        Parameters
        ----------
        config : Mapping
            A config (need not itself satisfy the constraints).

        Returns
        -------
        list of Config
            In knob order, then in each knob's ``neighbours`` order.
        """
        values, problems = self._check_knobs(config)
        if values is None:
            raise InvalidConfigError("; ".join(problems))
        out = []
        for k, knob in enumerate(self._knobs):
            for v in knob.neighbours(values[k]):
                cand = values[:k] + [v] + values[k + 1 :]
                if not self._satisfied(cand):
                    out.append(self._own(tuple(zip(self._names, cand))))
        return out

    def mutate(self, config: Mapping[str, Any], rng: np.random.Generator | int | None) -> Config:
        """Change one random knob (random other value or permutation move) until valid.

        After 100 invalid attempts a random valid neighbour is returned, and
        failing that a random other valid config.

        Parameters
        ----------
        config : Mapping
            The parent.
        rng : numpy.random.Generator or int
            Source of randomness.

        Returns
        -------
        Config
            A valid config different from ``config`` (``config`` itself only
            if the space has a single config).
        """
        gen = _as_rng(rng)
        values, problems = self._check_knobs(config)
        if values is None:
            raise InvalidConfigError("; ".join(problems))
        movable = [k for k, knob in enumerate(self._knobs) if len(knob) > 1]
        if movable:
            for _ in range(_MAX_TRIES):
                k = movable[int(gen.integers(len(movable)))]
                cand = list(values)
                cand[k] = self._knobs[k].mutate(values[k], gen)
                if not self._satisfied(cand):
                    return self._own(tuple(zip(self._names, cand)))
        nbrs = self.neighbours(config)
        if nbrs:
            return nbrs[int(gen.integers(len(nbrs)))]
        me = self._own(tuple(zip(self._names, values)))
        if self.size <= 1:
            return self.config_at(0) if self.size else me
        while True:
            cand_cfg = self.sample(gen, 1)[0]
            if cand_cfg != me:
                return cand_cfg

    def crossover(
        self,
        a: Mapping[str, Any],
        b: Mapping[str, Any],
        rng: np.random.Generator | int | None,
    ) -> Config:
        """Uniform per-knob crossover; permutation knobs use order crossover (OX).

        Retries up to 100 times for a valid child, then returns a random parent.

        Parameters
        ----------
        a, b : Mapping
            Valid parents.
        rng : numpy.random.Generator or int
            Source of randomness.

        Returns
        -------
        Config
            A valid child.
        """
        gen = _as_rng(rng)
        va, pa = self._check_knobs(a)
        vb, pb = self._check_knobs(b)
        if va is None or vb is None:
            raise InvalidConfigError("; ".join(pa + pb))
        for _ in range(_MAX_TRIES):
            child = []
            for knob, x, y in zip(self._knobs, va, vb):
                if isinstance(knob, Permutation) and x != y:
                    first, second = (x, y) if gen.random() < 0.5 else (y, x)
                    child.append(order_crossover(first, second, gen))
                else:
                    child.append(x if gen.random() < 0.5 else y)
            if not self._satisfied(child):
                return self._own(tuple(zip(self._names, child)))
        parent = va if gen.random() < 0.5 else vb
        return self._own(tuple(zip(self._names, parent)))
