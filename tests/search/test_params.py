from __future__ import annotations

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, IntDistribution

from autotile.errors import InvalidConfigError
from autotile.measure import Measurer, MeasureResult
from autotile.search import knob_distribution, space_distributions, suggest_config
from autotile.search._params import param_of, value_of
from autotile.space import gemm_space


@pytest.mark.parametrize("encoding", ["categorical", "index"])
def test_param_round_trip_every_knob_kind(mixed_space, encoding):
    for cfg in list(mixed_space)[::7]:
        for knob in mixed_space.knobs:
            dist = knob_distribution(knob, encoding)
            p = param_of(knob, cfg[knob.name], dist)
            assert dist._contains(dist.to_internal_repr(p))
            assert value_of(knob, p, dist) == cfg[knob.name]


def test_distributions_of_the_gemm_space():
    d = space_distributions(gemm_space(64))
    assert d["i_factor"] == CategoricalDistribution([1, 2, 4, 8, 16, 32, 64])
    # 720 orders: suggested by rank, so a stored trial holds one int, not 720 strings
    assert d["order"] == IntDistribution(0, 719)
    di = space_distributions(gemm_space(64), "index")
    assert di["order"] == IntDistribution(0, 719)
    assert di["k_factor"] == IntDistribution(0, 6)


def test_mixed_space_distributions(mixed_space):
    d = space_distributions(mixed_space)
    assert d["layout"].choices == ("row", "col", "(1,2)")
    assert d["stages"] == IntDistribution(1, 7, step=2)
    with pytest.raises(ValueError, match="encoding must be one of"):
        knob_distribution(mixed_space["tile"], "onehot")


def test_suggest_config_with_fixed_trial(small_space):
    trial = optuna.trial.FixedTrial({"a": 4, "b": 8, "order": "z,x,y"})
    cfg = suggest_config(trial, small_space)
    assert str(cfg) == "a=4, b=8, order=(z,x,y)"
    bad = optuna.trial.FixedTrial({"a": 16, "b": 16, "order": "z,x,y"})
    with pytest.raises(InvalidConfigError, match="constraint"):
        suggest_config(bad, small_space)
    assert suggest_config(bad, small_space, validate=False)["a"] == 16


def test_long_permutation_is_stored_as_one_int_and_the_objective_is_named(tmp_path):
    # issue 15: 720 categorical choices per trial made optuna-dashboard download 9 MB for
    # 200 trials; the rank is one number, and the study names its objective
    from autotile.search import tune
    from autotile.space import Divisors, Permutation, Space

    space = Space([Divisors("a", 4), Permutation("order", ("a", "b", "c", "d", "e"))],
                  name="perm5")

    class Cost(Measurer):
        metrics = ("cost",)
        objective = "cost"

        def _measure(self, config):
            return MeasureResult(str(config), "ok", {"cost": float(space.index_of(config))})

    url = f"sqlite:///{tmp_path / 's.db'}"
    st = tune(space, Cost(), "tpe", budget=12, seed=0, storage=url, progress=False)
    loaded = optuna.load_study(study_name=st.study_name, storage=url)
    assert loaded.metric_names == ["cost"]
    t = loaded.trials[0]
    assert t.distributions["order"] == IntDistribution(0, 119)
    assert t.distributions["a"] == CategoricalDistribution([1, 2, 4])
    assert str(space.config_at(int(t.user_attrs["metrics"]["cost"]))) == t.user_attrs["config"]
    # the rank stands for the config's order
    cfg = space.parse(t.user_attrs["config"])
    assert space["order"].value_at(t.params["order"]) == cfg["order"]
