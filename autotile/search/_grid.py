"""``GridSearcher``: every config of the space, in index order."""

from __future__ import annotations

from typing import Any

from autotile.search._base import History, SpaceSearcher
from autotile.space import Config, Space

__all__ = ["GridSearcher"]


class GridSearcher(SpaceSearcher):
    """Propose ``space.config_at(0)``, ``config_at(1)``, ... skipping configs already in the study.

    The order is the space's bijection (mixed-radix over the knobs, last
    knob fastest), so a resumed study continues the grid where it stopped.
    There is no randomness; ``seed`` is accepted for a uniform signature.
    See :class:`SpaceSearcher` for the sampler contract.

    Parameters
    ----------
    space : Space
        The space.
    seed : int, optional
        Unused.

    Examples
    --------
    >>> from autotile.space import Divisors, Space
    >>> from autotile.search import GridSearcher
    >>> searcher = GridSearcher(Space([Divisors("tile", 8)]))
    """

    def __init__(self, space: Space, seed: int | None = None) -> None:
        super().__init__(space, seed)

    def _propose(self, history: History, number: int, memory: dict[str, Any]) -> Config:
        size = len(self.space)
        cursor = int(memory.get("cursor", 0))
        while cursor < size and cursor in history.taken:
            cursor += 1
        if cursor >= size:
            return self._fallback(number)
        memory["cursor"] = cursor
        return self.space.config_at(cursor)
