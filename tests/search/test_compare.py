from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from autotile.measure import GroundTruth, ReplayMeasurer
from autotile.search._compare import (
    compare,
    expected_best_random,
    expected_trials_to_hit,
    methodology_budget,
    methodology_score,
    random_trials_quantile,
    trials_to_target,
)
from autotile.space import Choice, Space


def _brute_force(values: list[float], t: int) -> float:
    """Mean of the minimum over every t-subset of the values (exact enumeration)."""
    return float(np.mean([min(c) for c in itertools.combinations(values, t)]))


@pytest.mark.parametrize("values", [
    [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0],        # ties
    [2.5, 7.0, 0.5, 3.25, 3.25, 3.25, 10.0, -1.0, 4.0],
    [5.0, 5.0, 5.0],
])
def test_random_expectation_matches_enumeration(values: list[float]) -> None:
    e = expected_best_random(values)
    assert e.shape == (len(values),)
    for t in range(1, len(values) + 1):
        assert e[t - 1] == pytest.approx(_brute_force(values, t), rel=1e-12, abs=1e-12)
    assert e[0] == pytest.approx(np.mean(values))
    assert e[-1] == min(values)


def test_random_expectation_drops_failed_and_pads() -> None:
    e = expected_best_random([3.0, np.nan, 1.0, np.inf, 2.0], budget=5)
    assert e.tolist() == pytest.approx([2.0, 4 / 3, 1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="finite"):
        expected_best_random([np.nan, np.inf])
    with pytest.raises(ValueError, match="budget"):
        expected_best_random([1.0], budget=0)


def test_random_expectation_matches_monte_carlo() -> None:
    rng = np.random.default_rng(7)
    values = np.round(rng.lognormal(size=400), 2)  # many ties
    budget = 40
    e = expected_best_random(values, budget)
    runs = np.array([np.minimum.accumulate(rng.permutation(values)[:budget])
                     for _ in range(20000)])
    mc = runs.mean(axis=0)
    se = runs.std(axis=0) / math.sqrt(runs.shape[0])
    assert np.all(np.abs(mc - e) <= 5 * se + 1e-12)


def test_random_expectation_large_space_is_fast_and_exact_at_the_ends() -> None:
    rng = np.random.default_rng(0)
    values = rng.integers(1000, 5000, size=246960).astype(float)
    e = expected_best_random(values, 500)
    assert e[0] == pytest.approx(values.mean())
    assert np.all(np.diff(e) <= 1e-9)
    assert e[-1] >= values.min()


def test_methodology_score_random_is_zero_oracle_is_one() -> None:
    values = np.array([4.0, 2.0, 8.0, 1.0, 3.0, 6.0])
    rc = expected_best_random(values, 5)
    assert np.allclose(methodology_score(rc, rc, 1.0), 0.0)
    assert np.allclose(methodology_score(np.ones(5), rc, 1.0), 1.0)
    worse = methodology_score(np.full(5, 8.0), rc, 1.0)
    assert np.all(worse < 0)
    # undefined once random search is at the optimum (t = N)
    rc6 = expected_best_random(values)
    assert np.isnan(methodology_score(np.ones(6), rc6, 1.0)[-1])


def test_trials_to_target() -> None:
    best = np.array([[5.0, 3.0, 3.0, 1.0], [2.0, 2.0, 2.0, 2.0], [9.0, 9.0, 1.0, 1.0]])
    assert trials_to_target(best, 1.0).tolist() == [4.0, math.inf, 3.0]
    assert trials_to_target(best, 3.0).tolist() == [2.0, 1.0, 3.0]
    assert float(trials_to_target(best[0], 5.0)) == 1.0


def test_methodology_budget_by_hand() -> None:
    # values 1..10: opt 1, median 5.5, target 1 + 4.5 * 0.05 = 1.225; 9 values are worse,
    # fevals = ceil(9 / (10 + 1 - 9)) = 5, +10 % margin -> 6
    assert methodology_budget(np.arange(1.0, 11.0)) == 6
    assert methodology_budget(np.arange(1.0, 11.0), margin=0.0) == 5
    assert methodology_budget(np.r_[np.arange(1.0, 11.0), [np.nan] * 3]) == 6
    assert methodology_budget([1.0, 1.0, 1.0]) == 1
    with pytest.raises(ValueError, match="cutoff"):
        methodology_budget([1.0, 2.0], cutoff=0.0)


def test_expected_trials_to_hit() -> None:
    assert expected_trials_to_hit(9, 1) == 5.0
    assert expected_trials_to_hit(246960, 1259) == pytest.approx(196.0, abs=0.1)
    with pytest.raises(ValueError):
        expected_trials_to_hit(10, 0)


def test_random_trials_quantile_matches_enumeration() -> None:
    n, k = 7, 2
    firsts = np.sort([next(i + 1 for i, x in enumerate(p) if x < k)
                      for p in itertools.permutations(range(n))])
    for q in (0.1, 0.25, 0.5, 0.9, 1.0):
        assert random_trials_quantile(n, k, q) == firsts[math.ceil(q * len(firsts)) - 1]
    assert np.mean(firsts) == pytest.approx(expected_trials_to_hit(n, k))
    assert random_trials_quantile(9, 1) == 5
    assert random_trials_quantile(246960, 1262) == 136
    with pytest.raises(ValueError):
        random_trials_quantile(5, 1, q=0.0)


# -- compare on a synthetic replay table ---------------------------------------------------
@pytest.fixture(scope="module")
def replay() -> tuple[Space, ReplayMeasurer]:
    space = Space([Choice("a", tuple(range(12))), Choice("b", tuple(range(10)))], name="synth")
    rng = np.random.default_rng(3)
    cost = rng.integers(10, 60, size=len(space)).astype(float)
    cost[17] = 5.0                      # a unique optimum
    status = np.zeros(len(space), np.int8)
    status[[3, 40, 99]] = 1             # failed configs
    cost[status == 1] = np.nan
    truth = GroundTruth({"cost": cost, "double": 2 * cost}, status, {})
    return space, ReplayMeasurer(space, truth, "cost")


def random_fn(space: Any, measurer: Any, budget: int, seed: int) -> list[float]:
    order = np.random.default_rng(seed).permutation(len(space))[:budget]
    return [measurer.measure(space.config_at(int(i))).value(measurer.objective) for i in order]


def oracle_fn(space: Any, measurer: Any, budget: int, seed: int) -> list[float]:
    best = int(np.nanargmin(measurer.truth.column(measurer.objective)))
    return [measurer.measure(space.config_at(best)).value(measurer.objective)] * budget


def failing_fn(space: Any, measurer: Any, budget: int, seed: int) -> list[float]:
    return [math.inf] * 2 + [30.0] * (budget - 2)


def test_compare_statistics(replay: tuple[Space, ReplayMeasurer]) -> None:
    space, m = replay
    res = compare(space, m, [("random", random_fn), ("oracle", oracle_fn),
                             ("failing", failing_fn)],
                  budget=30, seeds=8, progress=False)
    assert res.searchers == ("random", "oracle", "failing")
    assert res.optimum == 5.0 and res.values is not None and res.values.shape == (117,)
    assert res.histories["random"].shape == (8, 30)
    assert res.trials_to("oracle").tolist() == [1.0] * 8
    assert res.score("oracle") == pytest.approx(1.0)
    assert np.allclose(res.score_curve("oracle"), 1.0)
    p_fail = res.score_curve("failing")
    assert res.score("failing", t_max=2) == pytest.approx(p_fail[:2].mean())
    assert res.score("failing") == pytest.approx(p_fail.mean())
    # "nothing valid yet" counts as the worst valid value
    assert res.best_so_far("failing")[0, 0] == math.inf
    assert res.curve("failing")["median"][0] == res.worst == np.nanmax(m.truth.column("cost"))
    # random's curve agrees with its own trials
    h = res.histories["random"]
    assert np.array_equal(res.best_so_far("random"), np.minimum.accumulate(h, axis=1))
    t_opt = res.trials_to("random")
    first = [next((i + 1 for i, v in enumerate(row) if v <= 5.0), math.inf) for row in h]
    assert t_opt.tolist() == first
    rows = {r["searcher"]: r for r in res.summary()}
    assert rows["oracle"]["trials_to_opt"] == 1.0 and rows["oracle"]["missed_opt"] == 0
    assert rows["random"]["missed_opt"] == sum(math.isinf(x) for x in first)
    exp = rows["random (expected)"]
    assert exp["trials_to_opt"] == 59.0  # median of the uniform first-hit time on 1..117
    assert exp["mean_trials_to_opt"] == pytest.approx(118 / 2)
    assert exp["mean_score"] == 0.0
    mb = methodology_budget(m.truth.column("cost"))
    assert res.methodology_budget == mb
    assert rows["oracle"]["mean_score_mbudget"] == pytest.approx(1.0)
    assert rows["failing"]["mean_score_mbudget"] == pytest.approx(res.score("failing", mb))
    table = res.table().split("\n")
    # the random expectation closes the table; the best configs and notes follow
    row = next(i for i, line in enumerate(table) if line.startswith("random (expected)"))
    assert table[row + 1] == "" and table[row + 2].startswith("best config found")
    assert any(line.startswith("P(t): 1 = found the optimum, 0 = as good as random")
               for line in table)


def test_compare_random_scores_about_zero(replay: tuple[Space, ReplayMeasurer]) -> None:
    space, m = replay
    res = compare(space, m, [("random", random_fn)], budget=20, seeds=400, progress=False)
    assert abs(res.score("random")) < 0.1


def test_compare_objective_and_defaults(replay: tuple[Space, ReplayMeasurer]) -> None:
    space, m = replay
    res = compare(space, m, [("oracle", oracle_fn)], seeds=[4, 9], objective="double",
                  progress=False)
    assert res.objective == "double" and res.optimum == 10.0
    assert res.seeds == (4, 9)
    assert res.budget == methodology_budget(m.truth.column("double"))
    assert m.objective == "cost"  # the caller's measurer is untouched


def test_compare_parallel_matches_serial(replay: tuple[Space, ReplayMeasurer]) -> None:
    space, m = replay
    a = compare(space, m, [("random", random_fn)], budget=15, seeds=4, progress=False)
    b = compare(space, m, [("random", random_fn)], budget=15, seeds=4, n_jobs=2,
                progress=False)
    assert np.array_equal(a.histories["random"], b.histories["random"])


def test_compare_errors(replay: tuple[Space, ReplayMeasurer]) -> None:
    space, m = replay
    with pytest.raises(ValueError, match="unknown searcher 'nope'"):
        compare(space, m, ["nope"], budget=5, seeds=1, progress=False)
    with pytest.raises(ValueError, match="objective"):
        compare(space, m, [("r", random_fn)], budget=5, seeds=1, objective="watts",
                progress=False)
    with pytest.raises(ValueError, match="seed"):
        compare(space, m, [("r", random_fn)], budget=5, seeds=[], progress=False)
    with pytest.raises(ValueError, match="distinct"):
        compare(space, m, [("r", random_fn), ("r", oracle_fn)], budget=5, seeds=1,
                progress=False)


def test_compare_rejects_a_measurer_of_another_space(replay: tuple[Space, ReplayMeasurer]) -> None:
    # Same knob names, other values: the table used to be replayed for the wrong space and the
    # report printed "synth (96 configs, 120 valid)".
    space, m = replay
    smaller = Space([Choice("a", tuple(range(12))), Choice("b", tuple(range(8)))], name="small")
    with pytest.raises(ValueError, match=r"the measurer must be built for the study's space: "
                                         r"knob 'b' is Choice with values \(0, 1, 2, 3, 4, 5, "
                                         r"6, 7\) in the study's space 'small' but Choice with "
                                         r"values \(0, 1, .*, 9\) in the measurer's space "
                                         r"'synth'"):
        compare(smaller, m, [("random", random_fn)], budget=5, seeds=1, progress=False)
    twin = Space([Choice("a", tuple(range(12))), Choice("b", tuple(range(10)))], name="twin")
    res = compare(twin, m, [("random", random_fn)], budget=5, seeds=1, progress=False)
    assert res.meta["space_size"] == res.meta["n_configs"] == 120


def test_compare_rejects_duplicate_seeds(replay: tuple[Space, ReplayMeasurer]) -> None:
    # seeds=[0, 0] used to leave one row of the history all inf.
    space, m = replay
    with pytest.raises(ValueError, match=r"got seed 0 2 times in seeds=\[0, 0\]"):
        compare(space, m, ["random"], budget=10, seeds=[0, 0], progress=False)
    with pytest.raises(ValueError, match=r"got seed 3 2 times in seeds=\(3, 1, 3\)"):
        compare(space, m, [("r", random_fn)], budget=10, seeds=(3, 1, 3), progress=False)


_SEEDS_RULE = (r"seeds must be an int >= 1 \(seeds 0 \.\. k-1\) or a non-empty sequence of "
               r"distinct ints with 0 <= seed < 2\*\*32, got ")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"budget": 1.5}, r"budget must be an int >= 1, got budget=1\.5"),
    ({"budget": "10"}, r"budget must be an int >= 1, got budget='10'"),
    ({"budget": True}, r"budget must be an int >= 1, got budget=True"),
    ({"budget": 0}, r"budget must be an int >= 1, got budget=0"),
    ({"seeds": 0}, r"seeds must be an int >= 1, got seeds=0"),
    ({"seeds": True}, _SEEDS_RULE + r"seeds=True"),
    ({"seeds": 2.5}, _SEEDS_RULE + r"seeds=2\.5"),
    ({"seeds": [1.5]}, _SEEDS_RULE + r"seed 1\.5 in seeds=\[1\.5\]"),
    ({"seeds": "3"}, _SEEDS_RULE + r"seeds='3'"),
    ({"seeds": [-1]}, _SEEDS_RULE + r"seed -1 in seeds=\[-1\]"),
    ({"seeds": [2**32]}, _SEEDS_RULE + r"seed 4294967296 in seeds=\[4294967296\]"),
    ({"n_jobs": 0}, r"n_jobs must be a non-zero int \(-1: all cores\), got n_jobs=0"),
    ({"n_jobs": 1.5}, r"n_jobs must be a non-zero int \(-1: all cores\), got n_jobs=1\.5"),
    ({"optimum": float("nan")}, r"optimum must be a finite number or None, got optimum=nan"),
    ({"optimum": "5"}, r"optimum must be a finite number or None, got optimum='5'"),
])
def test_compare_validates_arguments_like_tune(replay: tuple[Space, ReplayMeasurer],
                                               kwargs: dict[str, Any], message: str) -> None:
    space, m = replay
    args: dict[str, Any] = {"budget": 5, "seeds": 2, "progress": False, **kwargs}
    with pytest.raises(ValueError, match=message):
        compare(space, m, ["random"], **args)


def test_compare_accepts_a_single_searcher(replay: tuple[Space, ReplayMeasurer]) -> None:
    space, m = replay
    res = compare(space, m, "random", budget=5, seeds=[4, 2], progress=False)
    assert list(res.histories) == ["random"] and res.seeds == (4, 2)
    res = compare(space, m, ("oracle", oracle_fn), budget=5, seeds=np.arange(2), progress=False)
    assert list(res.histories) == ["oracle"]
    assert res.histories["oracle"].tolist() == [[5.0] * 5] * 2
    with pytest.raises(ValueError, match="each searcher must be a name or a \\(label, callable\\) "
                                         "pair, got 3"):
        compare(space, m, ["random", 3], budget=5, seeds=1, progress=False)


def test_compare_rejects_an_optimum_below_the_table(replay: tuple[Space, ReplayMeasurer]) -> None:
    # optimum=-1 used to print "nan trials ... 0 optimal configs".
    space, m = replay
    with pytest.raises(ValueError, match=r"optimum must not be below the table's best cost .*, "
                                         r"got optimum=-1 < 5\.0"):
        compare(space, m, [("oracle", oracle_fn)], budget=5, seeds=1, optimum=-1,
                progress=False)
    with pytest.raises(ValueError, match=r"got optimum=9\.0 < 10\.0"):
        compare(space, m, [("oracle", oracle_fn)], budget=5, seeds=1, optimum=9.0,
                objective="double", progress=False)
    # The table's best, or a looser target above it, is accepted.
    res = compare(space, m, [("oracle", oracle_fn)], budget=5, seeds=1, optimum=5.0,
                  progress=False)
    assert res.optimum == 5.0
    res = compare(space, m, [("oracle", oracle_fn)], budget=5, seeds=1, optimum=6,
                  progress=False)
    assert res.optimum == 6.0
