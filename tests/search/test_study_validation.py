"""``create_study``/``tune``/``Study.optimize``: argument checks and runs that measure nothing."""

from __future__ import annotations

import math
import os
import warnings

import optuna
import pytest

from autotile.errors import MeasureError
from autotile.measure import Measurer, MeasureResult
from autotile.search import create_study, tune
from autotile.space import Boolean, Divisors, Space
from tests.search.conftest import ToyMeasurer


def _tune(space, measurer=None, **kw):
    kw = {"storage": ":memory:", "progress": False, "seed": 0, "budget": 5, **kw}
    return tune(space, measurer if measurer is not None else ToyMeasurer(space), **kw)


class _Fixed(Measurer):
    metrics = ("cost",)
    objective = "cost"

    def __init__(self, space, value):
        self.space = space
        self.value = value

    def _measure(self, config):
        return MeasureResult(str(config), "ok", {"cost": self.value})


@pytest.mark.parametrize("seed", [-1, 1.5, "a", True])
def test_seed_must_be_a_non_negative_int(small_space, seed):
    with pytest.raises(ValueError, match=f"seed must be None or an int >= 0, got seed={seed!r}"):
        _tune(small_space, seed=seed)


@pytest.mark.parametrize("budget", [0, -5, None, 2.5, "10"])
def test_budget_must_be_positive(small_space, budget):
    with pytest.raises(ValueError, match=f"budget must be an int >= 1, got budget={budget!r}"):
        _tune(small_space, budget=budget)


@pytest.mark.parametrize("n_trials", [0, -1])
def test_optimize_n_trials_must_be_positive(small_space, n_trials):
    st = create_study(small_space, ToyMeasurer(small_space), storage=":memory:", seed=0)
    with pytest.raises(ValueError, match=f"n_trials must be an int >= 1, got n_trials={n_trials}"):
        st.optimize(n_trials, progress=False)


@pytest.mark.parametrize("timeout", [0, -1, "1"])
def test_timeout_must_be_positive(small_space, timeout):
    with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
        _tune(small_space, timeout=timeout)
    st = create_study(small_space, ToyMeasurer(small_space), storage=":memory:", seed=0)
    with pytest.raises(ValueError, match=f"got timeout={timeout!r}"):
        st.optimize(3, progress=False, timeout=timeout)


def test_sqlite_file_path_is_accepted(small_space, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("runs.db", "runs.sqlite", str(tmp_path / "abs.sqlite3"), tmp_path / "p.db"):
        st = _tune(small_space, storage=name, budget=3)
        assert len(st.trials) == 3
        assert os.path.exists(os.fspath(name))
    # The same path resumes the same study.
    st = _tune(small_space, storage="runs.db", budget=4)
    assert len(st.trials) == 4


def test_bad_storage(small_space):
    with pytest.raises(ValueError, match=r"got storage='mystudies'.*sqlite:///file\.db"):
        _tune(small_space, storage="mystudies")
    with pytest.raises(TypeError, match="storage must be .*, got int 5"):
        _tune(small_space, storage=5)
    with pytest.raises(ValueError, match="directory '/nonexistent/dir' does not exist"):
        _tune(small_space, storage="sqlite:////nonexistent/dir/x.db")
    st = _tune(small_space, storage=optuna.storages.InMemoryStorage(), budget=2)
    assert len(st.trials) == 2


def test_measurer_must_be_a_measurer(small_space):
    with pytest.raises(TypeError, match="measurer must be an autotile.measure.Measurer, "
                                        "got function"):
        _tune(small_space, lambda c: 1.0)
    with pytest.raises(TypeError, match="space must be an autotile.space.Space, got str"):
        tune("gemm", ToyMeasurer(small_space), storage=":memory:", progress=False)


def test_measurer_of_another_space_is_rejected(small_space):
    other = Space([Divisors("x", 8)], name="other")
    with pytest.raises(ValueError, match=r"space 'toy' has knobs \['a', 'b', 'order'\], "
                                         r"the measurer's space 'other' has knobs \['x'\]"):
        create_study(small_space, ToyMeasurer(other), storage=":memory:")


def test_objective_must_exist(small_space):
    class NoObjective(ToyMeasurer):
        metrics = ()
        objective = ""

    with pytest.raises(ValueError, match="objective must name a metric, got objective=''"):
        create_study(small_space, NoObjective(small_space), storage=":memory:")
    with pytest.raises(ValueError, match="objective must be one of the measurer's metrics"):
        create_study(small_space, ToyMeasurer(small_space), objective="speed",
                     storage=":memory:")


def test_all_failed_run_warns_with_the_errors(small_space):
    class Broken(ToyMeasurer):
        def _measure(self, config):
            raise RuntimeError(f"boom {config['a']}")

    with pytest.warns(RuntimeWarning, match=r"all 5 trials of this run failed or were "
                                            r"infeasible.*'RuntimeError: boom \d+'") as rec:
        st = _tune(small_space, Broken(small_space), searcher="grid")
    assert rec[0].filename == __file__  # points at the caller
    assert len(st.trials) == 5 and math.isinf(st.best_value) and st.best_config is None
    # Quotes at most three distinct errors.
    assert str(rec[0].message).count("boom") <= 3


@pytest.mark.parametrize("value, error", [
    ("fast", "metrics must be real numbers, got cost='fast' (str)"),
    (None, "metrics must be real numbers, got cost=None (NoneType)"),
    (float("nan"), "the objective 'cost' is NaN"),
])
def test_non_numeric_objective_is_a_failed_trial(small_space, value, error):
    with pytest.warns(RuntimeWarning, match="all 5 trials"):
        st = _tune(small_space, _Fixed(small_space, value))
    errors = {t.user_attrs["error"] for t in st.optuna_study.trials}
    assert errors == {error}
    assert [r.status for r in st.trials] == ["failed"] * 5


def test_a_run_with_one_ok_trial_does_not_warn(small_space):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st = _tune(small_space, budget=10)
    assert len(st.trials) == 10


def test_empty_space_raises(small_space):
    empty = Space([Boolean("a")], constraints=[lambda c: False], name="empty")
    for searcher in ("random", "grid", "tpe"):
        with pytest.raises(MeasureError, match="space 'empty' has no valid config"):
            _tune(empty, ToyMeasurer(empty), searcher=searcher)
