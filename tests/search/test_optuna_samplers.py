from __future__ import annotations

import importlib.util

import numpy as np
import optuna
import pytest

from autotile.search import encoding_for, make_searcher, tune
from tests.search.conftest import ToyMeasurer


def test_tpe_end_to_end_with_infeasible_proposals(small_space):
    m = ToyMeasurer(small_space)
    st = tune(small_space, m, "tpe", budget=60, seed=0, storage=":memory:", progress=False,
              searcher_kwargs=dict(n_startup_trials=10))
    recs = st.trials
    assert len(recs) == 60
    bad = [r for r in recs if r.status == "infeasible"]
    assert bad, "TPE samples knobs independently, so some (a, b) break a * b <= 32"
    for r in bad:
        t = st.optuna_study.trials[r.number]
        assert t.state == optuna.trial.TrialState.FAIL
        assert "constraint 'constraint_0' is violated by a=" in t.user_attrs["error"]
        assert t.params["a"] * t.params["b"] > 32
    ok = [r for r in recs if r.status == "ok"]
    assert all(small_space.is_valid(r.config) for r in ok)
    # Repeated proposals reuse the first measurement instead of measuring again.
    assert len(m.calls) == len(set(m.calls)) == len({str(r.config) for r in ok})
    h = st.history()
    assert np.isinf(h[[r.number for r in bad]]).all()
    assert st.best_value == min(m.measure(r.config).metrics["cost"] for r in ok)


@pytest.mark.parametrize("name", ["tpe", "nsga2", "qmc", "gp", "cmaes"])
def test_optuna_samplers_run_on_a_permutation_space(mixed_space, name):
    # Optional dependencies are not installed by ``pip install ".[test]"``: without
    # them the factory must say which package is missing, and the run is skipped.
    needs = {"cmaes": ("cmaes",), "gp": ("torch", "scipy")}.get(name, ())
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if missing:
        with pytest.raises(ImportError, match=f"needs the package.*{missing[0]}"):
            make_searcher(name, mixed_space, seed=0)
        pytest.skip(f"searcher {name!r} needs {', '.join(missing)}")
    sampler = make_searcher(name, mixed_space, seed=0)
    assert encoding_for(sampler) == ("index" if name in ("qmc", "cmaes") else "categorical")
    budget = 12 if name == "gp" else 30
    runs = [tune(mixed_space, ToyMeasurer(mixed_space), name, budget=budget, seed=0,
                 storage=":memory:", progress=False) for _ in range(2)]
    a = [(r.status, str(r.config)) for r in runs[0].trials]
    assert len(a) == budget and a == [(r.status, str(r.config)) for r in runs[1].trials]
    assert any(s == "ok" for s, _ in a)
