"""``n_jobs`` larger than the work is capped: no idle worker processes are started."""

from __future__ import annotations

from typing import Any

import joblib

import autotile.search._compare as compare_mod
from autotile.search import compare, tune
from autotile.space import Choice, Space
from tests.search.conftest import ToyMeasurer


class _Recording(ToyMeasurer):
    def __init__(self, space: Space) -> None:
        super().__init__(space)
        self.n_jobs: list[tuple[int, int]] = []

    def measure_batch(self, configs: Any, n_jobs: int = 1) -> Any:
        configs = list(configs)
        self.n_jobs.append((len(configs), n_jobs))
        return super().measure_batch(configs, n_jobs=1)


def _space() -> Space:
    return Space([Choice("a", list(range(20)))], name="twenty")


def test_tune_caps_n_jobs_at_the_budget():
    space = _space()
    m = _Recording(space)
    st = tune(space, m, "random", budget=3, seed=0, n_jobs=1000, storage=":memory:",
              progress=False)
    assert len(st.trials) == 3
    assert m.n_jobs == [(3, 3)]  # one batch of the whole budget, 3 workers, not 1000


def test_measure_batch_caps_n_jobs_at_the_number_of_configs(monkeypatch):
    space = _space()
    seen: list[int] = []
    real = joblib.Parallel

    def spy(*args: Any, n_jobs: int = 1, **kw: Any) -> Any:
        seen.append(n_jobs)
        return real(*args, n_jobs=1, **kw)

    monkeypatch.setattr(joblib, "Parallel", spy)
    res = ToyMeasurer(space).measure_batch([{"a": 1}, {"a": 2}], n_jobs=1000)
    assert [r.config for r in res] == ["a=1", "a=2"]
    assert seen == [2]


def test_compare_caps_n_jobs_at_the_number_of_runs(monkeypatch):
    space = _space()
    got: list[int] = []

    def serial(plan: Any, tasks: Any, n_jobs: int, report: Any, keep: bool) -> Any:
        got.append(n_jobs)
        for label, fn, seed in tasks:
            yield compare_mod.run_one(plan.space, plan.measurer, label, fn, seed,
                                      plan.budget, plan.direction, report, keep)

    monkeypatch.setattr(compare_mod, "_execute_loky", serial)
    monkeypatch.setattr("multiprocessing.get_all_start_methods", lambda: ["spawn"])
    res = compare(space, ToyMeasurer(space), ["random"], budget=4, seeds=2, optimum=0.0,
                  n_jobs=1000, progress=False)
    assert got == [2]  # two runs (random x 2 seeds): two workers, not 1000
    assert res.histories["random"].shape == (2, 4)
