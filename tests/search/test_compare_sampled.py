"""``compare_sampled``: live trials scored against a sampled table's best known value."""

from __future__ import annotations

import numpy as np

from autotile.measure import GroundTruth, ReplayMeasurer, SampledTruth
from autotile.search import compare_sampled
from autotile.search._compare import methodology_score
from autotile.search._compare_sampled import score_against_sample
from autotile.search._comparison import ComparisonResult
from autotile.space import Choice, Space


def _sample(cost: np.ndarray, rows: list[int]) -> SampledTruth:
    idx = np.asarray(rows, np.int64)
    return SampledTruth(idx, {"cost": cost[idx]}, np.zeros(len(rows), np.int8), {"seed": 7})


def test_best_known_is_min_of_sample_and_visited() -> None:
    cost = np.array([9.0, 4.0, 7.0, 2.0, 8.0, 6.0])
    sample = _sample(cost, [0, 2, 4, 5])           # sample best 6
    hist = {"a": np.array([[9.0, 7.0, 5.0]]), "b": np.array([[np.inf, 8.0, 6.0]])}
    res = ComparisonResult(hist, (0,), 3, "cost", optimum=6.0)
    out = score_against_sample(res, sample)
    assert out.optimum == 5.0                       # a visited config beats the sample
    assert out.meta["sample_best"] == 6.0
    assert out.meta["n_sampled"] == 4
    np.testing.assert_array_equal(out.values, [6.0, 7.0, 8.0, 9.0])
    # P(t) is the methodology score against the best known value and the sample's
    # random-search expectation: f_random = 7.5, 40/6, 25/4 (mean best of t of the 4)
    np.testing.assert_allclose(out.random_curve(), [7.5, 40 / 6, 25 / 4])
    want = methodology_score(np.array([[9.0, 7.0, 5.0]]), out.random_curve(), 5.0)
    np.testing.assert_allclose(out.score_runs("a"), want)
    assert out.score_runs("a")[0, -1] == 1.0
    assert sample.best_known("cost") == 6.0
    assert sample.best_known("cost", [3.0, np.nan], "maximize") == 9.0


def test_label_says_best_known_not_optimum() -> None:
    sample = _sample(np.arange(30_000, dtype=float), list(range(20_000)))
    assert sample.label() == "best known (sampled, 20,000 configs), not a proven optimum"
    res = score_against_sample(ComparisonResult({"a": np.array([[5.0]])}, (0,), 1, "cost",
                                                optimum=0.0), sample)
    assert ("objective: cost (minimised), best known (sampled, 20,000 configs), not a proven "
            "optimum 0, 1 sampled configs at it") in res.table()
    assert "20000 valid of 20000 sampled" in res.table()
    assert "to hit the best known (estimated from the sample)" in res.table()


def test_compare_sampled_live_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    space = Space([Choice("a", tuple(range(12))), Choice("b", tuple(range(10)))], name="synth")
    cost = np.random.default_rng(3).integers(10, 60, size=len(space)).astype(float)
    cost[17] = 5.0
    measurer = ReplayMeasurer(space, GroundTruth({"cost": cost},
                                                 np.zeros(len(space), np.int8), {}), "cost")
    rows = [i for i in range(0, 120, 3) if i != 17]   # the sample misses the optimum
    sample = _sample(cost, rows)
    res = compare_sampled(space, measurer, sample, ["random", "tpe"], budget=40, seeds=2,
                          progress=False)
    visited = np.concatenate([h.ravel() for h in res.histories.values()])
    assert res.optimum == min(cost[rows].min(), visited.min())
    assert res.meta["optimum_label"] == sample.label()
    assert res.values.shape == (len(rows),)
    assert "not a proven optimum" in res.table()
    paths = res.write(tmp_path)
    assert "not a proven optimum" in open(paths["json"]).read()
    assert "not a proven optimum" in open(paths["txt"]).read()


def test_visited_rows_do_not_bias_the_random_expectation() -> None:
    cost = np.array([9.0, 4.0, 7.0, 2.0, 8.0, 6.0])
    sample = _sample(cost, [0, 2, 4, 5]).with_visited(
        [3, 1], {"cost": cost[[3, 1]]}, np.zeros(2, np.int8))
    res = score_against_sample(ComparisonResult({"a": np.array([[9.0, 7.0, 5.0]])}, (0,), 3,
                                                "cost", optimum=6.0), sample)
    assert res.optimum == 2.0                       # a visited row is the best known
    np.testing.assert_array_equal(res.values, [6.0, 7.0, 8.0, 9.0])   # random rows only
    assert res.meta["n_sampled"] == 4
    assert res.meta["optimum_label"] == "best known (sampled, 6 configs), not a proven optimum"
