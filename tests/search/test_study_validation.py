"""``create_study``/``tune``/``Study.optimize``: argument checks and runs that measure nothing."""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import optuna
import pytest

from autotile.errors import MeasureError
from autotile.measure import GroundTruth, Measurer, MeasureResult, ReplayMeasurer, ScheduleMeasurer
from autotile.search import create_study, make_searcher, tune
from autotile.space import Boolean, Choice, Constraint, Divisors, Space, gemm_space
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
    with pytest.raises(ValueError, match=r"seed must be None or an int with 0 <= seed < 2\*\*32, "
                                         f"got seed={seed!r}"):
        _tune(small_space, seed=seed)


@pytest.mark.parametrize("searcher", ["random", "grid", "model", "evolutionary", "tpe", "nsga2",
                                      "qmc"])
def test_seed_must_be_below_2_pow_32_for_every_searcher(small_space, searcher):
    # 2**32 used to pass the check and crash deep in NumPy for tpe/nsga2/qmc.
    with pytest.raises(ValueError, match=r"seed must be None or an int with 0 <= seed < 2\*\*32, "
                                         r"got seed=4294967296"):
        _tune(small_space, searcher=searcher, seed=2**32)
    with pytest.raises(ValueError, match=r"0 <= seed < 2\*\*32, got seed=4294967296"):
        make_searcher(searcher, small_space, seed=2**32)
    study = _tune(small_space, searcher=searcher, seed=2**32 - 1, budget=3)
    assert len(study.trials) == 3


@pytest.mark.parametrize("budget", [0, -5, None, 2.5, "10"])
def test_budget_must_be_positive(small_space, budget):
    with pytest.raises(ValueError, match=f"budget must be an int >= 1, got budget={budget!r}"):
        _tune(small_space, budget=budget)


@pytest.mark.parametrize("n_trials", [0, -1])
def test_optimize_n_trials_must_be_positive(small_space, n_trials):
    st = create_study(small_space, ToyMeasurer(small_space), storage=":memory:", seed=0)
    with pytest.raises(ValueError, match=f"n_trials must be an int >= 1, got n_trials={n_trials}"):
        st.optimize(n_trials, progress=False)


@pytest.mark.parametrize("name, error, message", [
    (5, TypeError, "study_name must be a non-empty str or None, got int 5"),
    (b"gemm", TypeError, "study_name must be a non-empty str or None, got bytes b'gemm'"),
    ("", ValueError, "study_name must be a non-empty str or None, got study_name=''"),
    ("  ", ValueError, "got study_name='  '"),
])
def test_study_name_must_be_a_non_empty_str(small_space, tmp_path, name, error, message):
    for storage in (":memory:", str(tmp_path / "runs.db")):
        with pytest.raises(error) as info:
            _tune(small_space, study_name=name, storage=storage)
        assert message in str(info.value)
    assert not (tmp_path / "runs.db").exists()  # refused before the storage is opened


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


def test_measurer_of_a_space_with_the_same_knob_names_is_rejected():
    # gemm_space(4) and gemm_space(8) share knob names; the measurer used to be accepted and
    # scored configs of the wrong problem size (best 192 reported for n=64 instead of 266768).
    with pytest.raises(ValueError, match=r"the measurer must be built for the study's space: "
                                         r"knob 'i_factor' is Divisors with values "
                                         r"\(1, 2, 4, 8\) in the study's space 'gemm_n8' but "
                                         r"Divisors with values \(1, 2, 4\) in the measurer's "
                                         r"space 'gemm_n4'"):
        _tune(gemm_space(8), ScheduleMeasurer(gemm_space(4)))
    small = Space([Choice("a", (1, 2, 3))], name="small")
    big = Space([Choice("a", (1, 2, 3, 4))], name="big")
    replay = ReplayMeasurer(big, GroundTruth({"cost": np.arange(4.0)}, np.zeros(4, np.int8), {}))
    with pytest.raises(ValueError, match=r"knob 'a' is Choice with values \(1, 2, 3\) in the "
                                         r"study's space 'small' but Choice with values "
                                         r"\(1, 2, 3, 4\) in the measurer's space 'big'"):
        create_study(small, replay, storage=":memory:")


def test_measurer_of_a_space_with_other_constraints_is_rejected(small_space):
    knobs = small_space.knobs
    fewer = Space(knobs, constraints=[lambda c: c["a"] * c["b"] <= 8], name="toy8")
    assert fewer.names == small_space.names and len(fewer) != len(small_space)
    with pytest.raises(ValueError, match=rf"the study's space 'toy' has {len(small_space)} valid "
                                         rf"configs, the measurer's space 'toy8' has "
                                         rf"{len(fewer)}"):
        create_study(small_space, ToyMeasurer(fewer), storage=":memory:")
    named = Space(knobs, constraints=[Constraint("fits", lambda c: c["a"] * c["b"] <= 32)])
    with pytest.raises(ValueError, match=r"has constraints \['constraint_0'\], the measurer's "
                                         r"space .* has constraints \['fits'\]"):
        create_study(small_space, ToyMeasurer(named), storage=":memory:")
    other_values = Space([Divisors("a", 16), Divisors("b", 16), Boolean("order")], name="bool")
    with pytest.raises(ValueError, match=r"knob 'order' is Permutation with values .* but "
                                         r"Boolean with values \(False, True\)"):
        create_study(small_space, ToyMeasurer(other_values), storage=":memory:")


def test_measurer_of_an_equal_space_is_accepted(small_space):
    # An equal space built separately (or with the knobs in another order) is the same space.
    st = _tune(gemm_space(4), ScheduleMeasurer(gemm_space(4)), budget=3)
    assert len(st.trials) == 3
    reordered = Space(small_space.knobs[::-1], constraints=small_space.constraints, name="r")
    assert len(_tune(small_space, ToyMeasurer(reordered), budget=3).trials) == 3
    no_space = _Fixed(small_space, 2.0)
    del no_space.space  # a measurer without a space (e.g. wrapping a function) is not checked
    assert _tune(small_space, no_space, budget=2).best_value == 2.0


def test_resume_with_another_searcher_or_seed_is_refused(small_space, tmp_path):
    storage = f"sqlite:///{tmp_path / 'r.db'}"
    m = ToyMeasurer(small_space)
    _tune(small_space, m, searcher="random", seed=0, study_name="X", storage=storage, budget=3)
    with pytest.raises(ValueError, match=r"study 'X' was created with searcher='random', got "
                                         r"searcher='tpe'; resuming must use the same searcher"):
        _tune(small_space, m, searcher="tpe", seed=1, study_name="X", storage=storage)
    with pytest.raises(ValueError, match=r"study 'X' was created with seed=0, got seed=1; "
                                         r"resuming must use the same seed"):
        _tune(small_space, m, searcher="random", seed=1, study_name="X", storage=storage)
    with pytest.raises(ValueError, match=r"created with seed=0, got seed=None"):
        _tune(small_space, m, searcher="random", seed=None, study_name="X", storage=storage)
    attrs = optuna.load_study(study_name="X", storage=storage).user_attrs
    assert attrs["autotile:searcher"] == "random" and attrs["autotile:seed"] == 0
    # The same searcher (any spelling of its name) and seed resume the study.
    st = _tune(small_space, m, searcher="Random", seed=0, study_name="X", storage=storage,
               budget=5)
    assert len(st.trials) == 5
    _tune(small_space, m, searcher="xgb", seed=2, study_name="M", storage=storage, budget=2)
    assert len(_tune(small_space, m, searcher="model", seed=2, study_name="M", storage=storage,
                     budget=3).trials) == 3


def test_resume_with_other_searcher_options_is_refused(small_space, tmp_path):
    from autotile.search import tune

    storage = f"sqlite:///{tmp_path / 'o.db'}"
    m = ToyMeasurer(small_space)
    kw = dict(seed=0, study_name="B", storage=storage, progress=False)
    tune(small_space, m, "bandit", budget=4, searcher_kwargs={"arms": ("random",)}, **kw)
    # another arm used to resume silently: the study's trials then came from two searchers
    with pytest.raises(ValueError, match=r"study 'B' was created with searcher_kwargs="
                       r"\{'arms': \['random'\]\}, got searcher_kwargs=\{'arms': "
                       r"\['descent'\]\}; resuming must use the same searcher options"):
        tune(small_space, m, "bandit", budget=8, searcher_kwargs={"arms": ("descent",)}, **kw)
    with pytest.raises(ValueError, match=r"got searcher_kwargs=\{\}"):
        tune(small_space, m, "bandit", budget=8, **kw)
    attrs = optuna.load_study(study_name="B", storage=storage).user_attrs
    assert attrs["autotile:searcher_kwargs"] == {"arms": ["random"]}
    # the same options (a list for a tuple) resume it
    assert len(tune(small_space, m, "bandit", budget=6, searcher_kwargs={"arms": ["random"]},
                    **kw).trials) == 6


@pytest.mark.parametrize("n_jobs", [0, 1.5, "2", True])
def test_n_jobs_must_be_a_non_zero_int(small_space, n_jobs):
    with pytest.raises(ValueError, match=rf"n_jobs must be a non-zero int \(-1: all cores\), "
                                         rf"got n_jobs={n_jobs!r}"):
        _tune(small_space, n_jobs=n_jobs)
    st = create_study(small_space, ToyMeasurer(small_space), storage=":memory:", seed=0)
    with pytest.raises(ValueError, match=rf"got n_jobs={n_jobs!r}"):
        st.optimize(3, n_jobs=n_jobs, progress=False)


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


def test_all_failed_compare_run_warns_once_with_the_whole_runs_count(small_space):
    # session 13: compare runs a study in chunks and replayed the last chunk's warning,
    # "all 6 trials of this run" for a run of 10 failed trials
    from autotile.search import compare

    class Broken(ToyMeasurer):
        def _measure(self, config):
            raise RuntimeError("boom")

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = compare(small_space, Broken(small_space), ["random"], budget=10, seeds=1,
                      optimum=0.0, progress=False)
    msgs = [str(w.message) for w in rec if issubclass(w.category, RuntimeWarning)]
    assert msgs == [
        "study 'toy-random-cost-seed0': all 10 trials of this run failed or were "
        "infeasible, so nothing was measured; distinct errors: 'RuntimeError: boom'. Check "
        "that the measurer was built for this space and reports the objective 'cost'"]
    assert np.isinf(res.histories["random"]).all()


@pytest.mark.parametrize("value, error", [
    ("fast", "metrics must be real numbers, got cost='fast' (str)"),
    (None, "metrics must be real numbers, got cost=None (NoneType)"),
    (float("nan"), "the objective 'cost' is NaN"),
    (float("inf"), "the objective 'cost' is inf"),
    (float("-inf"), "the objective 'cost' is -inf"),
])
def test_non_numeric_objective_is_a_failed_trial(small_space, value, error):
    with pytest.warns(RuntimeWarning, match="all 5 trials"):
        st = _tune(small_space, _Fixed(small_space, value))
    errors = {t.user_attrs["error"] for t in st.optuna_study.trials}
    assert errors == {error}
    assert [r.status for r in st.trials] == ["failed"] * 5


@pytest.mark.parametrize("bad", [float("-inf"), float("inf"), float("nan")])
def test_a_non_finite_objective_is_never_the_best(small_space, bad):
    class OneBad(ToyMeasurer):
        def _measure(self, config):
            res = super()._measure(config)
            if self.space.index_of(config) == 3:
                return MeasureResult(res.config, "ok", {"cost": bad, "aux": 0.0})
            return res

    st = _tune(small_space, OneBad(small_space), searcher="grid", budget=6)
    assert [r.status for r in st.trials] == ["ok", "ok", "ok", "failed", "ok", "ok"]
    costs = [i * 7919 % 1009 for i in (0, 1, 2, 4, 5)]
    assert st.best_value == min(costs) == 0
    assert small_space.index_of(st.best_config) == 0
    assert np.isfinite(st.best_so_far()).all()


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
