from __future__ import annotations

import optuna
import pytest

from autotile.search import (
    GridSearcher,
    RandomSearcher,
    create_study,
    make_searcher,
    suggest_config,
    tune,
)
from tests.search.conftest import ToyMeasurer


def test_grid_enumerates_the_whole_space_in_order_then_stops(small_space):
    n = len(small_space)
    assert n == 114  # 19 (a, b) pairs with a * b <= 32, times 3!
    study = tune(small_space, ToyMeasurer(small_space), "grid", budget=n + 10,
                 storage=":memory:", progress=False)
    assert len(study) == n
    assert [r.config for r in study.trials] == list(small_space)


def test_grid_resumes_where_it_stopped(small_space):
    storage = optuna.storages.InMemoryStorage()
    m = ToyMeasurer(small_space)
    tune(small_space, m, "grid", budget=7, storage=storage, study_name="g", progress=False)
    study = tune(small_space, m, "grid", budget=12, storage=storage, study_name="g",
                 progress=False)
    assert [r.config for r in study.trials] == [small_space.config_at(i) for i in range(12)]
    assert len(m.calls) == 12


@pytest.mark.parametrize("name", ["grid", "random"])
def test_only_valid_unique_configs(mixed_space, name):
    study = tune(mixed_space, ToyMeasurer(mixed_space), name, budget=60, seed=3,
                 storage=":memory:", progress=False)
    cfgs = [r.config for r in study.trials]
    assert len(cfgs) == 60 and len(set(cfgs)) == 60
    assert all(mixed_space.is_valid(c) for c in cfgs)
    assert {r.status for r in study.trials} == {"ok"}


def test_random_is_seeded_and_covers_the_space_without_repeats(small_space):
    def run(seed, n_jobs=1):
        s = tune(small_space, ToyMeasurer(small_space), "random", budget=40, seed=seed,
                 storage=":memory:", progress=False, n_jobs=n_jobs)
        return [str(r.config) for r in s.trials]

    a, b, c = run(0), run(0), run(1)
    assert a == b and a != c
    full = tune(small_space, ToyMeasurer(small_space), "random", budget=150, seed=0,
                storage=":memory:", progress=False)
    assert sorted(str(r.config) for r in full.trials) == sorted(str(x) for x in small_space)
    assert [str(r.config) for r in full.trials][:40] == a


def test_searcher_inside_a_plain_optuna_study(small_space):
    sampler = RandomSearcher(small_space, seed=5)
    seen = []

    def objective(trial):
        cfg = suggest_config(trial, small_space)
        seen.append(cfg)
        return cfg["a"] * cfg["b"] + len(cfg["order"])

    st = optuna.create_study(sampler=sampler)
    st.optimize(objective, n_trials=30)
    assert len(set(seen)) == 30 and all(small_space.is_valid(c) for c in seen)
    idx = suggest_config(optuna.trial.FixedTrial(st.trials[0].params), small_space)
    assert idx == seen[0]


def test_grid_with_index_encoding_in_plain_optuna(small_space):
    st = optuna.create_study(sampler=GridSearcher(small_space))
    st.optimize(lambda t: suggest_config(t, small_space, "index")["a"], n_trials=5)
    assert [t.params["b"] for t in st.trials] == [0, 0, 0, 0, 0]
    assert [t.params["order"] for t in st.trials] == [0, 1, 2, 3, 4]


def test_make_searcher_names(small_space):
    assert isinstance(make_searcher("grid", small_space), GridSearcher)
    assert isinstance(make_searcher("Random", small_space, seed=1), RandomSearcher)
    assert isinstance(make_searcher("tpe", small_space, seed=1), optuna.samplers.TPESampler)
    with pytest.raises(ValueError, match="searcher must be one of"):
        make_searcher("annealing", small_space)


def test_study_basics(small_space):
    m = ToyMeasurer(small_space)
    study = create_study(small_space, m, searcher="random", seed=0, storage=":memory:")
    assert len(study) == 0 and study.best_config is None
    study.optimize(25, progress=False)
    h = study.history()
    assert h.shape == (25,) and h.dtype.name == "float64"
    assert study.best_value == h.min() == study.best_so_far()[-1]
    assert m.measure(study.best_config).metrics["cost"] == study.best_value
    assert list(study.history("aux")) == pytest.approx(list(h ** 0.5))
    t0 = study.optuna_study.trials[0]
    assert set(t0.user_attrs) >= {"config", "metrics", "status", "error"}
    assert t0.user_attrs["metrics"]["cost"] == h[0]
    rec = study.to_records()[0]
    assert rec["value"] == h[0] and rec["cost"] == h[0]
    with pytest.raises(ValueError, match="objective must be one of"):
        create_study(small_space, m, objective="time_s", storage=":memory:")
    study.optimize(25, progress=False)
    assert len(study) == 25
