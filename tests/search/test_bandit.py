"""BanditSearcher (the default searcher) and Prior (transfer from earlier tables)."""

from __future__ import annotations

import numpy as np
import optuna
import pytest

from autotile.search import BanditSearcher, Prior, create_study, make_searcher
from autotile.search._bandit import ARMS
from autotile.search._base import History
from autotile.search._codec import IndexCodec
from autotile.space import Choice, PowerOfTwo, Space
from tests.search.conftest import ToyMeasurer


def _study(space, searcher, budget):
    st = create_study(space, ToyMeasurer(space), searcher=searcher, storage=":memory:")
    st.optimize(budget, progress=False)
    return st


def test_bandit_is_a_seeded_optuna_sampler_within_budget_without_repeats(small_space):
    s = make_searcher("bandit", small_space, seed=3)
    assert isinstance(s, optuna.samplers.BaseSampler) and isinstance(s, BanditSearcher)
    st = _study(small_space, s, 40)
    configs = [t.user_attrs["config"] for t in st.optuna_study.trials]
    assert len(configs) == 40 and len(set(configs)) == 40
    again = _study(small_space, make_searcher("auto", small_space, seed=3), 40)
    assert [t.user_attrs["config"] for t in again.optuna_study.trials] == configs
    # every arm of the default portfolio proposed something after the 4 random starts
    arms = list(list(s._states.values())[0].values())[0].extra["arm_of"].values()
    assert set(arms) == {"model", "parzen", "random"} and len(arms) == 36


def test_descent_moves_to_better_neighbours_and_restarts_at_local_minima(small_space):
    s = BanditSearcher(small_space, seed=1, arms=("descent",), descent_patience=3)
    st = _study(small_space, s, 60)
    codec = IndexCodec(small_space)
    extra = list(list(s._states.values())[0].values())[0].extra
    state = extra["descent"]
    trials = st.optuna_study.trials
    idx = [small_space.index_of(small_space.parse(t.user_attrs["config"])) for t in trials]
    vals = [t.value for t in trials]
    assert len(set(idx)) == 60 and all(extra["arm_of"][i] == "descent" for i in idx[4:])
    # replay: a start, then neighbours of the centre; the centre moves on a lower value;
    # a new start only after `patience` proposals without a move or on an earlier minimum
    centre, cval, fails, minima, starts, wins = None, None, 0, set(), 0, set()
    for i, v in zip(idx[4:], vals[4:]):
        if i not in state["starts"]:
            assert i in codec.neighbours([centre]).tolist()
            if v < cval:
                centre, cval, fails = i, v, 0
                wins.add(i)
            else:
                fails += 1
            continue
        assert centre is None or fails >= 3 or cval in minima  # a restart, and why
        if centre is not None:
            minima.add(cval)
        centre, cval, fails, starts = i, v, 0, starts + 1
    assert starts == len(state["starts"]) >= 3 and minima == state["minima"]
    assert wins == state["wins"] and len(wins) >= 3


def test_warm_start_enqueues_the_prior_best_first(small_space):
    n = len(small_space)
    values = np.arange(n, dtype=float)[::-1]  # the source's best is the last config
    prior = Prior(small_space, [(small_space, values)])
    assert prior.ranked[:3].tolist() == [n - 1, n - 2, n - 3]
    s = BanditSearcher(small_space, seed=0, prior=prior, n_init=3)
    st = _study(small_space, s, 5)
    first = [small_space.index_of(small_space.parse(t.user_attrs["config"]))
             for t in st.optuna_study.trials[:3]]
    assert first == [n - 1, n - 2, n - 3]
    assert "prior" in s.arms


def test_prior_percentiles_and_value_mapping_across_sizes():
    old = Space([PowerOfTwo("block", 16, 1024), Choice("load", ("ldg", "tex"))])
    new = Space([PowerOfTwo("block", 16, 256), Choice("load", ("ldg", "tex"))])
    pairs = [({"block": 1024, "load": "tex"}, 1.0),   # 1024 -> the nearest, 256
             ({"block": 32, "load": "ldg"}, 2.0),
             ({"block": 64, "load": "lds"}, 0.5)]     # no "lds" here: dropped
    p = Prior(new, [pairs])
    assert [new.config_at(int(i)) for i in p.ranked] == [
        new.validate({"block": 256, "load": "tex"}), new.validate({"block": 32, "load": "ldg"})]
    assert p.scores.tolist() == [0.5, 1.0]  # percentiles within the source of 3
    tab = Prior(new, [(old, np.array([np.nan] + [1.0] * (len(old) - 1)))])
    assert tab.scores.max() == 1.0 and tab.n_sources == 1
    with pytest.raises(ValueError, match=r"prior source 0 needs one value per config of its "
                       r"space \(14\), got 3 values"):
        Prior(new, [(old, [1.0, 2.0, 3.0])])


def test_bandit_rejects_bad_arguments(small_space):
    with pytest.raises(ValueError, match=r"arms must be a non-empty sequence of"):
        BanditSearcher(small_space, arms=("model", "sa"))
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\), got gamma=1.5"):
        BanditSearcher(small_space, gamma=1.5)
    with pytest.raises(ValueError, match=r"descent_patience must be an int >= 1, got "
                       r"descent_patience=0"):
        BanditSearcher(small_space, descent_patience=0)


def test_every_arm_has_a_proposer(small_space):
    # each name of ARMS is served by a whole searcher or by the mapping of proposers
    s = BanditSearcher(small_space, arms=tuple(a for a in ARMS if a != "prior"))
    assert set(s._subs) == {"model", "evolutionary"}
    assert set(s._subs) | set(s._proposers) == set(ARMS)
    assert not set(s._subs) & set(s._proposers)


def test_bandit_arms_are_checked_by_name_and_value(small_space):
    # one str is not split into letters
    with pytest.raises(ValueError, match=r"arms must be a sequence of arm names, not one "
                       r"str: got arms='descent'; pass arms=\('descent',\)"):
        BanditSearcher(small_space, arms="descent")
    with pytest.raises(ValueError, match=r"\(unknown: 'sa'\)"):
        BanditSearcher(small_space, arms=("model", "sa"))
    with pytest.raises(ValueError, match=r"arms must be a non-empty sequence of .*got arms=\(\)"):
        BanditSearcher(small_space, arms=())
    with pytest.raises(ValueError, match=r"got NoneType arms=None"):
        BanditSearcher(small_space, arms=None)
    with pytest.raises(ValueError, match=r"got int arms=5"):
        BanditSearcher(small_space, arms=5)
    with pytest.raises(ValueError, match=r"\(unknown: 1\)"):
        BanditSearcher(small_space, arms=[1])
    with pytest.raises(ValueError, match=r"arms must not repeat an arm, got arms="
                       r"\('descent', 'random', 'descent'\) \(repeated: 'descent'\)"):
        BanditSearcher(small_space, arms=("descent", "random", "descent"))
    # the prior arm without a prior used to fail with an AssertionError at the first trial
    with pytest.raises(ValueError, match=r"the 'prior' arm needs prior= \(earlier tables or "
                       r"studies\), got arms=\('prior', 'random'\) and prior=None"):
        BanditSearcher(small_space, arms=("prior", "random"))
    assert BanditSearcher(small_space, arms=["descent"]).arms == ("descent",)


def test_bandit_counts_and_seed_give_named_errors(small_space):
    for bad in (float("nan"), None, 2.5, True):
        with pytest.raises(ValueError, match=rf"n_init must be an int >= 1, got "
                           rf"n_init={bad!r}"):
            BanditSearcher(small_space, n_init=bad)
    for bad in (-1, 1.5, 2**32):
        with pytest.raises(ValueError, match=rf"seed must be None or an int with "
                           rf"0 <= seed < 2\*\*32, got seed={bad!r}"):
            BanditSearcher(small_space, seed=bad)


def test_codec_moves_on_explicit_spaces_match_the_space(small_space):
    explicit = Space.from_configs(small_space.knobs, [small_space.config_at(i)
                                                      for i in range(0, len(small_space), 3)])
    for space in (small_space, explicit):
        codec = IndexCodec(space)
        assert codec.fast
        idx = np.arange(len(space), dtype=np.int64)
        ref = {i: {space.index_of(c) for c in space.neighbours(space.config_at(i))} - {i}
               for i in idx.tolist()}
        for i in idx.tolist():
            assert set(codec.neighbours([i]).tolist()) == ref[i]
        moved = codec.mutate(np.repeat(idx, 4), np.random.default_rng(0))
        assert moved.min() >= 0 and moved.max() < len(space)
        assert np.array_equal(codec.encode(idx), space.encode(codec.configs(idx)))


def test_bridged_neighbours_cross_one_invalid_step():
    # Kernel Tuner's dedispersion pattern: a stride only exists for tiles above 1
    tile, stride = Choice("tile", (1, 2, 3)), Choice("stride", (0, 1))
    knobs = [tile, stride, Choice("b", (8, 16, 32))]
    ok = [dict(tile=t, stride=s, b=b) for t in (1, 2, 3) for s in (0, 1) for b in (8, 16, 32)
          if not (t == 1 and s == 1)]
    space = Space.from_configs(knobs, ok)
    at = space.index_of(dict(tile=2, stride=1, b=16))
    plain = {str(space.config_at(i)) for i in IndexCodec(space).neighbours([at]).tolist()}
    bridged = {str(space.config_at(i))
               for i in IndexCodec(space, bridge=True).neighbours([at]).tolist()}
    assert plain == {str(space.config_at(space.index_of(c))) for c in (
        dict(tile=3, stride=1, b=16), dict(tile=2, stride=0, b=16),
        dict(tile=2, stride=1, b=8), dict(tile=2, stride=1, b=32))}
    # through the invalid (tile=1, stride=1): its valid neighbours (1, 0, 16) -- the
    # basin a one-knob step cannot reach -- and (2, 1, 16) itself, excluded
    assert bridged - plain == {str(space.config_at(space.index_of(
        dict(tile=1, stride=0, b=16))))}
    # a space without invalid products: the same neighbours as without bridging
    full = Space(knobs)
    for i in range(len(full)):
        assert np.array_equal(IndexCodec(full, bridge=True).neighbours([i]),
                              IndexCodec(full).neighbours([i]))
    with pytest.raises(ValueError, match="bridge must be a bool, got bridge=1"):
        IndexCodec(space, bridge=1)
    assert BanditSearcher(space).bridge is False  # opt-in: lowered one file held out
    assert BanditSearcher(space, bridge=True)._subs["model"].bridge is True
    assert make_searcher("bandit", space, seed=0, bridge=True).bridge is True
    from autotile.search import ModelGuidedSearcher

    for ctor in (BanditSearcher, ModelGuidedSearcher):
        with pytest.raises(ValueError, match="bridge must be a bool, got bridge='yes'"):
            ctor(space, bridge="yes")


def test_refit_follows_ansors_growth_schedule(small_space):
    from autotile.search import History
    from autotile.search._model import ModelScorer

    codec = IndexCodec(small_space)
    scorer = ModelScorer(small_space, "xgb", "knob", codec)
    memory: dict = {}
    fits = []
    for n in range(2, 61):
        h = History(indices=list(range(n)), values=[float(i % 7 + 1) for i in range(n)],
                    configs=[small_space.config_at(i) for i in range(n)])
        before = memory.get("model_n_fitted")
        assert scorer.refit(h, 0, 0.2, memory)
        if memory["model_n_fitted"] != before:
            fits.append(n)
    # a fit whenever the data grew by more than 20 % since the last one
    assert fits == [2, 3, 4, 5, 7, 9, 11, 14, 17, 21, 26, 32, 39, 47, 57]


def test_descent_waits_for_its_start_with_several_workers(small_space):
    s = BanditSearcher(small_space, seed=0, arms=("descent",))
    memory: dict = {}
    rng = np.random.default_rng(0)
    start = s._descent(History(), rng, memory)
    assert start is not None and memory["descent"]["starts"] == {start}
    # the start still runs on another worker: no second start
    assert s._descent(History(taken={start}), rng, memory) is None
    assert memory["descent"]["starts"] == {start}
    # once it finishes it is the centre, and the next proposal is one of its neighbours
    done = History(taken={start}, indices=[start], configs=[small_space.config_at(start)],
                   values=[1.0])
    nxt = s._descent(done, rng, memory)
    assert memory["descent"]["centre"] == start and memory["descent"]["val"] == 1.0
    assert nxt in IndexCodec(small_space).neighbours([start]).tolist()


def test_tpe_gamma_and_weights_are_optunas():
    from autotile.search._parzen import tpe_gamma, tpe_weights

    assert [tpe_gamma(n) for n in (1, 10, 11, 100, 250, 251, 3000)] == [1, 1, 2, 10, 25, 25, 25]
    assert np.array_equal(tpe_weights(3), np.ones(3))
    w = tpe_weights(27)  # a ramp over the 2 oldest, then 25 ones
    assert w.shape == (27,) and np.allclose(w[:2], [1 / 27, 1.0]) and np.all(w[2:] == 1.0)


def test_multivariate_parzen_density_by_hand():
    from autotile.search._parzen import _kernels, _log_density

    # two good trials (0, 1) and (1, 1) on knobs of 2 and 3 values, plus the prior kernel:
    # each trial's kernel puts 1/3 on every value and 1 more on its own, normalised
    mix, tabs = _kernels(np.array([[0, 1], [1, 1]]), np.ones(2), [2, 3])
    assert np.allclose(mix, [1 / 3] * 3)
    assert np.allclose(tabs[0], [[0.8, 0.2], [0.2, 0.8], [0.5, 0.5]])
    assert np.allclose(tabs[1], [[1 / 6, 2 / 3, 1 / 6]] * 2 + [[1 / 3] * 3])
    # l(0, 1) = (0.8 * 2/3 + 0.2 * 2/3 + 0.5 * 1/3) / 3 = 5/18
    assert np.allclose(_log_density(np.array([[0, 1], [0, 0]]), mix, tabs),
                       np.log([5 / 18, (0.8 / 6 + 0.2 / 6 + 0.5 / 3) / 3]))


def test_multivariate_parzen_keeps_knob_values_together():
    from autotile.search._parzen import multivariate_parzen

    # the good configs have a == b; the per-knob estimator sees a and b each half 0, half 1
    space = Space([Choice("a", (0, 1)), Choice("b", (0, 1)), Choice("c", tuple(range(16)))])
    good = [space.index_of({"a": k, "b": k, "c": c}) for k in (0, 1) for c in (0, 1)]
    rest = [i for i in range(space.size) if space.config_at(i)["a"] != space.config_at(i)["b"]]
    rest = rest[:36]
    idx = good + rest
    vals = [1.0] * len(good) + [10.0] * len(rest)
    vals[-1] = float("inf")  # a failed trial is in neither set
    h = History(indices=idx, values=vals, configs=[space.config_at(i) for i in idx])
    codec = IndexCodec(space)
    picks = [multivariate_parzen(codec, h, np.random.default_rng(s)) for s in range(200)]
    same = sum(space.config_at(i)["a"] == space.config_at(i)["b"] for i in picks)
    assert all(i not in h.taken for i in picks)
    s = BanditSearcher(space, seed=0, arms=("parzen",))
    indep = [s._parzen(h, np.random.default_rng(k)) for k in range(200)]
    same_indep = sum(space.config_at(i)["a"] == space.config_at(i)["b"] for i in indep)
    # 200 of 200 draws keep a == b, against 48 of 200 knob by knob
    assert (same, same_indep) == (200, 48)
    assert multivariate_parzen(codec, History(indices=idx[:1], values=vals[:1],
                                              configs=h.configs[:1]),
                               np.random.default_rng(0)) is None


def test_parzen_estimator_is_checked_and_reaches_the_arm(small_space):
    with pytest.raises(ValueError, match=r"parzen must be one of \('independent', "
                       r"'multivariate'\), got parzen='mv'"):
        BanditSearcher(small_space, parzen="mv")
    # opt-in: it lowered the 246,960 table's two objectives on the check seeds
    assert BanditSearcher(small_space).parzen == "independent"
    s = make_searcher("bandit", small_space, seed=0, parzen="multivariate")
    assert s.parzen == "multivariate" and s._proposers["parzen"] == s._parzen_mv
    # before 10 finite values the multivariate arm proposes as the per-knob one
    runs = [[t.user_attrs["config"] for t in _study(
        small_space, BanditSearcher(small_space, seed=2, parzen=p), 40).optuna_study.trials]
        for p in ("independent", "multivariate")]
    first = next(k for k, (a, b) in enumerate(zip(*runs)) if a != b)
    assert first == 13  # trial 14: the first multivariate Parzen trial that differs
