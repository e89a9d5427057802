"""When the optimize loop stops: budget, an exhausted finite space, or the timeout."""

from __future__ import annotations

import optuna
import pytest

from autotile.search import tune
from autotile.space import Choice, Space
from tests.search.conftest import ToyMeasurer


def _tiny() -> Space:
    return Space([Choice("a", [3, 1, 2])], name="tiny")


@pytest.mark.parametrize("searcher", ["tpe", "random", "grid"])
def test_huge_budget_on_a_finite_space_stops_once_every_config_is_measured(searcher):
    space = _tiny()
    m = ToyMeasurer(space)
    if searcher == "tpe":  # an Optuna sampler: repeats, then stops with a warning
        with pytest.warns(RuntimeWarning, match=r"every one of the 3 configs .* is measured"):
            st = tune(space, m, searcher, budget=10**12, seed=0, storage=":memory:",
                      progress=False)
    else:
        st = tune(space, m, searcher, budget=10**12, seed=0, storage=":memory:",
                  progress=False)
    assert st.stop_reason == "exhausted"
    assert sorted(m.calls) == ["a=1", "a=2", "a=3"]
    assert {str(r.config) for r in st.trials} == {"a=1", "a=2", "a=3"}
    assert st.best_value == min(float(space.index_of(c) * 7919 % 1009)
                                for c in ({"a": 3}, {"a": 1}, {"a": 2}))


def test_budget_within_the_space_stops_at_the_budget():
    space = _tiny()
    st = tune(space, ToyMeasurer(space), "tpe", budget=2, seed=0, storage=":memory:",
              progress=False)
    assert st.stop_reason == "budget"
    assert len(st.trials) == 2


def test_timeout_ends_a_run_of_repeated_proposals():
    # A 1000-config space where the sampler only ever proposes a=0: after the first
    # measurement every trial is told from the cache, all inside one claim of the
    # loop, which the timeout must end (before the fix it ran for the whole budget).
    space = Space([Choice("a", list(range(1000)))], name="big")
    with pytest.warns(optuna.exceptions.ExperimentalWarning):
        sampler = optuna.samplers.PartialFixedSampler({"a": 0}, optuna.samplers.RandomSampler(0))
    m = ToyMeasurer(space)
    st = tune(space, m, sampler, budget=10**9, storage=":memory:", progress=False,
              timeout=2.0)  # long enough for 2+ trials on a loaded CI box
    assert st.stop_reason == "timeout"
    assert m.calls == ["a=0"]
    assert len(st.trials) >= 2
    assert {str(r.config) for r in st.trials} == {"a=0"}
