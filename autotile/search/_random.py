"""``RandomSearcher``: uniform over the valid configs, without repeats."""

from __future__ import annotations

from typing import Any

from autotile.search._base import History, SpaceSearcher
from autotile.space import Config, Space

__all__ = ["RandomSearcher"]


class RandomSearcher(SpaceSearcher):
    """Propose configs uniformly at random among those not yet in the study.

    Draws indices of the space's bijection (``config_at``), so the
    distribution is uniform over the *valid* configs whatever the
    constraints, and rejects indices already taken (drawing from the
    explicit complement once half the space is taken). The generator of
    trial ``n`` is derived from ``(seed, n)``: the same seed gives the same
    sequence, also with parallel batches and after a resume. See
    :class:`SpaceSearcher` for the sampler contract.

    Parameters
    ----------
    space : Space
        The space.
    seed : int, optional
        Seed; ``None`` draws fresh entropy.

    Examples
    --------
    >>> from autotile.space import gemm_space
    >>> from autotile.search import RandomSearcher
    >>> searcher = RandomSearcher(gemm_space(64), seed=0)
    """

    def __init__(self, space: Space, seed: int | None = None) -> None:
        super().__init__(space, seed)

    def _propose(self, history: History, number: int, memory: dict[str, Any]) -> Config:
        picked = self._random_untaken(history.taken, self._trial_rng(number))
        if not picked:
            return self._fallback(number)
        return self.space.config_at(picked[0])
