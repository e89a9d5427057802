from __future__ import annotations

import math
from typing import Any

import pytest

from autotile.measure import Measurer, MeasureResult
from autotile.space import Boolean, Choice, Divisors, IntRange, Permutation, Space


class ToyMeasurer(Measurer):
    """Deterministic synthetic scores: fast, with a unique optimum."""

    metrics = ("cost", "aux")
    objective = "cost"

    def __init__(self, space: Space) -> None:
        self.space = space
        self.calls: list[str] = []

    def _measure(self, config: Any) -> MeasureResult:
        cfg = self.space.validate(config)
        self.calls.append(str(cfg))
        cost = float(self.space.index_of(cfg) * 7919 % 1009)
        return MeasureResult(str(cfg), "ok", {"cost": cost, "aux": math.sqrt(cost)})


def _small_constrained() -> Space:
    return Space(
        [Divisors("a", 16), Divisors("b", 16), Permutation("order", ("x", "y", "z"))],
        constraints=[lambda c: c["a"] * c["b"] <= 32],
        name="toy",
    )


@pytest.fixture
def small_space() -> Space:
    return _small_constrained()


@pytest.fixture
def mixed_space() -> Space:
    return Space(
        [Choice("layout", ("row", "col", (1, 2))), IntRange("stages", 1, 7, 2), Boolean("unroll"),
         Divisors("tile", 12), Permutation("order", ("i", "j", "k"))],
        constraints=[lambda c: not (c["unroll"] and c["tile"] == 12)],
        name="mixed",
    )
