"""``compare`` maximises throughput objectives (``GFLOP/s``...) and minimises the rest."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from autotile.measure import GroundTruth, ReplayMeasurer
from autotile.search._cli import compare_main
from autotile.search._compare import compare, objective_direction
from autotile.search._comparison import ComparisonResult
from autotile.space import Choice, Space

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize(("metric", "direction"), [
    ("GFLOP/s", "maximize"), ("TFLOP/s", "maximize"), ("GB/s", "maximize"),
    ("items/sec", "maximize"), ("bytes_per_s", "maximize"), ("GFLOPS", "maximize"),
    ("mem_bandwidth", "maximize"), ("throughput", "maximize"), ("Gbps", "maximize"),
    ("time", "minimize"), ("misses", "minimize"), ("est_cycles", "minimize"),
    ("compile_time", "minimize"), ("n_warps", "minimize"), ("energy", "minimize"),
])
def test_objective_direction_from_the_name(metric: str, direction: str) -> None:
    assert objective_direction(metric) == direction


@pytest.fixture(scope="module")
def mirrored() -> tuple[Space, ReplayMeasurer]:
    """A table with ``cost`` and ``rate/s = -cost``: maximising one is minimising the other."""
    space = Space([Choice("a", tuple(range(8))), Choice("b", tuple(range(6)))], name="mirror")
    rng = np.random.default_rng(5)
    cost = rng.integers(10, 60, size=len(space)).astype(float)
    cost[11] = 4.0
    status = np.zeros(len(space), np.int8)
    status[[2, 30]] = 1
    cost[status == 1] = np.nan
    truth = GroundTruth({"cost": cost, "rate/s": -cost}, status, {})
    return space, ReplayMeasurer(space, truth, "cost")


def test_maximising_is_minimising_the_negation(mirrored: tuple[Space, ReplayMeasurer]) -> None:
    space, m = mirrored
    kw: dict[str, Any] = dict(budget=12, seeds=3, progress=False)
    lo = compare(space, m, ["random", "evolutionary"], objective="cost", **kw)
    hi = compare(space, m, ["random", "evolutionary"], objective="rate/s", **kw)
    assert (lo.direction, hi.direction) == ("minimize", "maximize")
    assert hi.optimum == -4.0 and lo.optimum == 4.0
    assert hi.values is not None and hi.values[0] == -4.0  # sorted best (largest) first
    assert hi.values[-1] == -np.nanmax(m.truth.column("cost"))
    for name in ("random", "evolutionary"):
        # the built-in searchers see the negated objective, so they draw the same configs
        assert np.array_equal(hi.histories[name], -lo.histories[name])
        assert np.array_equal(hi.best_so_far(name), -lo.best_so_far(name))
        for pct in (0.0, 5.0, 10.0):
            assert np.array_equal(hi.trials_to(name, pct), lo.trials_to(name, pct))
        assert np.allclose(hi.score_curve(name), lo.score_curve(name), equal_nan=True)
    assert np.allclose(hi.random_curve(), -lo.random_curve())
    assert hi.worst == -lo.worst and hi.methodology_budget == lo.methodology_budget
    assert [hi.n_within(p) for p in (0, 1, 10)] == [lo.n_within(p) for p in (0, 1, 10)]
    assert "objective: rate/s (maximised), optimum -4" in hi.table()


def _brute_max(values: list[float], t: int) -> float:
    return float(np.mean([max(c) for c in itertools.combinations(values, t)]))


def test_kernel_tuner_gflops_is_maximised() -> None:
    from autotile.measure import load_kernel_tuner

    rec = load_kernel_tuner(DATA / "kt_tiny.json")
    m = rec.measurer("GFLOP/s")
    col = np.asarray(m.truth.column("GFLOP/s"), dtype=float)
    ok = (np.asarray(m.truth.status) == 0) & np.isfinite(col)
    best = float(col[ok].max())
    assert best == 100.0

    def oracle(space: Any, measurer: Any, budget: int, seed: int) -> list[float]:
        return [best] * budget

    def worst_first(space: Any, measurer: Any, budget: int, seed: int) -> list[float]:
        return [math.nan, float(col[ok].min())] + [best] * (budget - 2)

    res = compare(rec.space, m, [("oracle", oracle), ("late", worst_first),
                                 "random"], budget=5, seeds=2, progress=False)
    assert res.direction == "maximize" and res.optimum == 100.0
    assert res.score("oracle") == pytest.approx(1.0)
    assert res.trials_to("oracle").tolist() == [1.0, 1.0]
    assert res.trials_to("late").tolist() == [3.0, 3.0]
    assert res.histories["late"][0, 0] == -math.inf       # failed: the worst, not the best
    assert res.best_so_far("late")[0].tolist() == [-math.inf, col[ok].min(), best, best, best]
    # P(t) of the late run: (f - f_random) / (f_opt - f_random), the worst value at t=1
    rc = res.random_curve()
    assert rc is not None
    vals = sorted(col[ok].tolist())
    assert rc[:3] == pytest.approx([_brute_max(vals, t) for t in (1, 2, 3)])
    f = np.array([min(vals), min(vals), best, best, best])
    assert res.score_curve("late") == pytest.approx((f - rc) / (best - rc))
    # the random searcher's trials are real GFLOP/s values from the table
    h = res.histories["random"]
    assert np.isin(h[np.isfinite(h)], col[ok]).all()
    with pytest.raises(ValueError, match=r"optimum must not be above the table's best GFLOP/s "
                                         r"\(maximized.*got optimum=120 > 100\.0"):
        compare(rec.space, m, [("oracle", oracle)], budget=5, seeds=1, optimum=120,
                progress=False)
    # an explicit direction wins over the name
    low = compare(rec.space, m, [("oracle", oracle)], budget=5, seeds=1, progress=False,
                  direction="minimize")
    assert low.direction == "minimize" and low.optimum == float(col[ok].min())
    with pytest.raises(ValueError, match=r"direction must be one of \('minimize', "
                                         r"'maximize'\).*got direction='max'"):
        compare(rec.space, m, [("oracle", oracle)], budget=5, seeds=1, progress=False,
                direction="max")
    with pytest.raises(ValueError, match="direction must be one of"):
        ComparisonResult({}, (0,), 1, "x", 1.0, direction="up")


def test_cli_maximises_gflops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kt = str(DATA / "kt_tiny.json")
    rc = compare_main(["--kernel-tuner", kt, "--objective", "GFLOP/s", "--searchers",
                       "random", "--seeds", "2", "--n-jobs", "1", "--no-progress",
                       "--out", str(tmp_path / "hi")])
    assert rc == 0
    out = capsys.readouterr().out
    assert "objective: GFLOP/s (maximised), optimum 100 (1 optimal config)" in out
    settings = json.loads((tmp_path / "hi" / "result.json").read_text())["settings"]
    assert settings["direction"] == "maximize" and settings["optimum"] == 100.0
    # --direction overrides the name: the slowest valid time (4 ms) is then the "optimum"
    rc = compare_main(["--kernel-tuner", kt, "--direction", "maximize", "--searchers",
                       "random", "--seeds", "1", "--budget", "3", "--n-jobs", "1",
                       "--no-progress", "--out", str(tmp_path / "t")])
    assert rc == 0
    out = capsys.readouterr().out
    assert "objective: time in ms (maximised), optimum 4 (" in out


def test_cli_constant_objective_writes_its_report(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # compile_time is 10 for every config of kt_tiny: every valid config is optimal, P(t)
    # is undefined, and the log trial axis must still get a range (was a matplotlib
    # "cannot be log-scaled" crash)
    rc = compare_main(["--kernel-tuner", str(DATA / "kt_tiny.json"), "--objective",
                       "compile_time", "--searchers", "random", "--seeds", "2", "--n-jobs",
                       "1", "--no-progress", "--out", str(tmp_path / "c")])
    assert rc == 0
    assert "optimum 10 (11 optimal configs)" in capsys.readouterr().out
    assert (tmp_path / "c" / "curves.png").stat().st_size > 1000
