from __future__ import annotations

import optuna
import pytest

from autotile.search import EvolutionarySearcher, ModelGuidedSearcher, make_searcher, tune
from tests.search.conftest import ToyMeasurer

FAST = {
    "model": dict(plan_size=16, n_sa_iters=30, n_parallel=32, early_stop=10),
    "evolutionary": dict(batch_size=8, population=16),
    "evo-xgb": dict(batch_size=8, population=16, cost_model="xgb"),
}


def _run(space, name, seed, budget=48, n_jobs=1):
    kind = "evolutionary" if name == "evo-xgb" else name
    st = tune(space, ToyMeasurer(space), kind, budget=budget, seed=seed, storage=":memory:",
              progress=False, n_jobs=n_jobs, searcher_kwargs=FAST.get(name))
    return [str(r.config) for r in st.trials], st


@pytest.mark.parametrize("name", ["grid", "random", "model", "evolutionary", "evo-xgb"])
def test_valid_unique_and_seeded(mixed_space, name):
    a, st = _run(mixed_space, name, seed=7)
    assert len(a) == 48 and len(set(a)) == 48
    assert all(mixed_space.is_valid(r.config) for r in st.trials)
    b, _ = _run(mixed_space, name, seed=7)
    assert a == b
    if name != "grid":
        c, _ = _run(mixed_space, name, seed=8)
        assert a != c


@pytest.mark.parametrize("name", ["model", "evolutionary"])
def test_seeded_with_parallel_batches(small_space, name):
    a, _ = _run(small_space, name, seed=1, budget=40, n_jobs=2)
    b, _ = _run(small_space, name, seed=1, budget=40, n_jobs=2)
    assert a == b and len(set(a)) == 40


def test_exhausts_a_space_without_repeats(small_space):
    names, st = _run(small_space, "evo-xgb", seed=0, budget=200)
    assert sorted(names) == sorted(str(c) for c in small_space)


def test_model_guided_in_plain_optuna_with_index_encoding(small_space):
    from autotile.search import suggest_config

    sampler = ModelGuidedSearcher(small_space, seed=0, plan_size=8, n_sa_iters=20)
    st = optuna.create_study(sampler=sampler, direction="maximize")

    def objective(trial):
        cfg = suggest_config(trial, small_space, "index")
        return float(cfg["a"] * cfg["b"])

    st.optimize(objective, n_trials=30)
    params = [tuple(t.params.values()) for t in st.trials]
    assert len(set(params)) == 30


def test_bad_arguments(small_space):
    with pytest.raises(ValueError, match="plan_size must be an int >= 1"):
        ModelGuidedSearcher(small_space, plan_size=0)
    with pytest.raises(ValueError, match="epsilon must be in"):
        EvolutionarySearcher(small_space, epsilon=1.5)
    with pytest.raises(ValueError, match="cost_model must be one of"):
        make_searcher("model", small_space, cost_model="svm")
    with pytest.raises(ValueError, match="featurizer must be"):
        make_searcher("evo", small_space, cost_model="rf", featurizer=3)


@pytest.mark.parametrize("temperature", [float("nan"), 1.0, (float("nan"), 0.0), (1.0,),
                                         (1.0, -0.5), (float("inf"), 0.0), ("1", 0), (True, 0)])
def test_bad_temperature_is_refused_naming_it(small_space, temperature):
    # session 13: 1.0 failed with "'float' object is not subscriptable"; (nan, 0) was taken
    # and every annealing step then rejected its move without a word
    with pytest.raises(ValueError) as exc:
        make_searcher("model", small_space, seed=0, temperature=temperature)
    assert str(exc.value) == ("temperature must be a pair (start, end) of finite numbers >= 0, "
                              f"got temperature={temperature!r}")


def test_temperature_as_a_list_or_numpy_numbers_is_taken(small_space):
    import numpy as np

    s = make_searcher("model", small_space, seed=0, temperature=[np.float32(2), 0])
    assert s.temperature == (2.0, 0.0) and type(s.temperature[0]) is float


@pytest.mark.parametrize("tabu", [True, False])
def test_model_guided_tabu_restarts_on_a_known_plateau(small_space, tabu):
    from autotile.search._base import History

    searcher = ModelGuidedSearcher(small_space, seed=0, plan_size=4, patience=100, tabu=tabu)
    idx = list(range(12))
    cfgs = [small_space.config_at(i) for i in idx]
    # The local search that started at trial 4 has reached 2.0, the value at which an
    # earlier local search was abandoned; its last improvement was 6 trials ago.
    values = [5.0, 4.0, 3.0, 2.0, 9.0, 8.0, 2.0, 7.0, 6.0, 6.0, 6.0, 6.0]
    history = History(taken=set(idx), indices=idx, configs=cfgs, values=values)
    memory = {"restart_at": 4, "abandoned": {2.0}, "fitted_at": 8}
    cfg = searcher._propose(history, 12, memory)
    assert small_space.index_of(cfg) not in history.taken
    assert memory["restart_at"] == (12 if tabu else 4)
