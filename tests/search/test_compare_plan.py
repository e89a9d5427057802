"""``ComparisonPlan``: the expected time and the header printed before the first trial."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autotile.measure import GroundTruth, ReplayMeasurer
from autotile.search._compare_plan import machine_load, plan_comparison
from autotile.space import Choice, Space


@pytest.fixture(scope="module")
def plan():  # type: ignore[no-untyped-def]
    space = Space([Choice("a", tuple(range(8))), Choice("b", tuple(range(8)))], name="tiny")
    m = ReplayMeasurer(space, GroundTruth({"cost": np.arange(64.0) + 1.0},
                                          np.zeros(64, np.int8), {}), "cost")
    return plan_comparison(space, m, ["random", "tpe"], budget=500, seeds=5)


def test_expected_seconds_counts_runs_storage_and_report(plan) -> None:  # type: ignore[no-untyped-def]
    # random: 5.5e-4*500 + 1e-7*500^2 = 0.3 s; tpe: 2e-3*500 + 8.4e-6*500^2 = 3.1 s;
    # + 0.15 s hand-off per run, 5 seeds each, on 2 workers, + 3 s start
    runs = 5 * (0.3 + 0.15) + 5 * (3.1 + 0.15)
    assert plan.expected_seconds(2) == pytest.approx(3.0 + runs / 2)
    # storing 5,000 trials (2.5 s) overlaps the runs (9.25 s); the report comes after
    assert plan.expected_seconds(2, stored=True, report=True) == pytest.approx(
        3.0 + runs / 2 + 2.5)
    assert plan.expected_seconds(100) == pytest.approx(3.0 + 3.25)  # the longest run
    assert plan.expected_seconds(100, stored=True) == pytest.approx(3.0 + 3.25)


def test_header_says_what_the_time_covers_and_when_the_machine_is_busy(plan) -> None:  # type: ignore[no-untyped-def]
    lines = plan.header(2, stored=True, report=True, load=(0.3, 2))
    assert lines == [
        "space: tiny (64 configs, 64 valid)",
        "objective: cost (minimised), optimum 1 (1 optimal config)",
        "budget: 500 trials per run x 5 seeds (seeds 0..4) x 2 searchers (random, tpe) = "
        "5,000 trials",
        "expected time: about 15 s on 2 workers if the cores are free (the runs, storing them "
        "and the report)"]
    assert plan.header(2)[-1] == ("expected time: about 10 s on 2 workers if the cores are "
                                  "free (the runs)")
    busy = plan.header(2, load=(1.6, 2))
    assert busy[-1] == ("  this machine is busy (load average 1.6 on 2 cores), so expect it "
                        "to take longer")
    assert plan.header(1, load=(0.9, 2))[-1].startswith("expected time:")  # one free core
    load = machine_load()
    assert load is None or (load[0] >= 0.0 and load[1] >= 1 and not math.isnan(load[0]))


def test_history_memory_refuses_a_budget_past_half_the_memory() -> None:
    from autotile.search._compare_plan import check_history_memory

    # 10 runs x 10**9 trials x 8 bytes x 3 arrays = 240e9 bytes > 64 GiB / 2
    with pytest.raises(ValueError, match=r"budget=1,000,000,000 is too large: the histories "
                                         r"of 10 runs .* need about 223\.5 GiB .* choose a "
                                         r"budget of at most 143,165,576"):
        check_history_memory(10**9, 10, memory=64 * 2**30)
    check_history_memory(143_165_576, 10, memory=64 * 2**30)  # fits: no error
    with pytest.raises(ValueError):
        check_history_memory(143_165_577, 10, memory=64 * 2**30)


def test_compare_with_a_huge_budget_is_refused_before_any_run() -> None:
    from autotile.measure.cpu._schedule_measurer import memory_bytes
    from autotile.search import compare
    from tests.search.conftest import ToyMeasurer

    space = Space([Choice("a", [3, 1, 2])], name="tiny")
    budget = 10**15
    assert memory_bytes() is not None
    with pytest.raises(ValueError, match=r"budget=1,000,000,000,000,000 is too large: the "
                                         r"histories of 2 runs"):
        compare(space, ToyMeasurer(space), ["random"], budget=budget, seeds=2, optimum=0.0,
                progress=False)
