import math

import numpy as np
import pytest

from autotile import autotune as top_level_autotune
from autotile.errors import InvalidConfigError, MeasureError, OutOfBoundsError
from autotile.measure import MeasureResult
from autotile.space import Choice, Constraint, Space
from autotile.tuner import Autotuner, Config, autotune
from tests.tuner._kernels import double_kernel, grid_1d, inc_kernel, sum_kernel, time_by_block

N = 96  # 16 and 32 divide it, 64 does not


def _double(configs, **kw):
    kw.setdefault("scorer", time_by_block)
    return autotune(configs=configs, key=["n"], **kw)(double_kernel)


def _x(n=N, dtype=np.float32):
    return np.arange(n, dtype=dtype) - 7


def test_top_level_export_and_wrapper():
    import autotile

    assert top_level_autotune is autotune and autotile.Config is Config
    k = _double([Config({"BLOCK": 16, "TAIL": "mask"})])
    assert isinstance(k, Autotuner) and k.fn is double_kernel


def test_config_list_picks_fastest_valid_and_runs_it():
    k = _double([Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 32, 64)])
    x, out = _x(), np.zeros(N, np.float32)
    k[grid_1d](x, out, N)
    assert k.best_config == Config({"BLOCK": 64, "TAIL": "mask"})
    np.testing.assert_array_equal(out, 2 * x)
    assert [r.status for r in k.history] == ["ok", "ok", "ok"]
    assert k.configs_timings[k.best_config] == pytest.approx(1e-3 / 64)
    assert double_kernel.last_record.meta["BLOCK"] == 64
    assert (k.n_tuned, k.cache_source) == (1, "tuned")
    k[grid_1d](x, out, N)  # same key: no re-tune
    assert (k.n_tuned, k.cache_hit, k.cache_source) == (1, True, "memory")


def test_wrong_result_config_rejected_against_first_config():
    # TAIL="skip" drops the last partial block: right for BLOCK=32 (divides 96), wrong for 64
    cfgs = [Config({"BLOCK": 16, "TAIL": "mask"}), Config({"BLOCK": 32, "TAIL": "skip"}),
            Config({"BLOCK": 64, "TAIL": "skip"})]
    k = _double(cfgs)
    x, out = _x(), np.zeros(N, np.float32)
    k[grid_1d](x, out, N)
    st = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert st[64].status == "wrong" and math.isinf(st[64].time_s)
    assert "out_ptr differs from the expected output in 32 of 96 elements" in st[64].reason
    assert st[32].status == "ok" and k.best_config == cfgs[1]
    np.testing.assert_array_equal(out, 2 * x)


def test_reference_catches_a_wrong_first_config():
    cfgs = [Config({"BLOCK": 64, "TAIL": "skip"}), Config({"BLOCK": 16, "TAIL": "mask"})]
    k = _double(cfgs, reference=lambda a: {"out_ptr": 2 * a["x_ptr"]})
    x, out = _x(), np.zeros(N, np.float32)
    k[grid_1d](x, out, N)
    assert [r.status for r in k.history] == ["wrong", "ok"]
    assert k.best_config == cfgs[1]


@pytest.mark.parametrize("reference, message", [
    (lambda *a: 42, "reference must return a dict {argument name: expected array}, e.g. "
                    "{'c_ptr': a @ b}, got int 42"),
    (lambda a: 2 * a["x_ptr"], "got ndarray array([-14., -12.,"),
    (lambda a: {0: 2 * a["x_ptr"]}, "keyed by argument names (str), got the key 0 (int)"),
])
def test_reference_that_returns_no_dict_is_a_clear_type_error(reference, message):
    k = _double([Config({"BLOCK": 16, "TAIL": "mask"}), Config({"BLOCK": 32, "TAIL": "mask"})],
                reference=reference)
    x, out = _x(), np.zeros(N, np.float32)
    with pytest.raises(TypeError) as info:
        k[grid_1d](x, out, N)
    assert message in str(info.value)
    np.testing.assert_array_equal(out, 0)  # nothing launched


def test_out_of_bounds_config_fails_with_reason_and_tuning_goes_on():
    cfgs = [Config({"BLOCK": 16, "TAIL": "mask"}), Config({"BLOCK": 64, "TAIL": "none"})]
    k = _double(cfgs)
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    bad = k.history[1]
    assert bad.status == "failed" and "OutOfBoundsError" in bad.reason
    assert k.best_config == cfgs[0]


def test_infeasible_configs_skipped_with_reason_and_never_run():
    ran = []

    def scorer(cfg, args):
        if cfg.kwargs["BLOCK"] > 32:
            return MeasureResult(str(cfg), "infeasible", {}, 0.0, "BLOCK > 32 needs too much smem")
        return time_by_block(cfg, args)

    def pre(kw):
        ran.append(kw["BLOCK"])

    cfgs = [Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 32, 64)]
    k = _double(cfgs, scorer=scorer, pre_hook=pre)
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    assert k.history[2].status == "infeasible"
    assert k.history[2].reason == "BLOCK > 32 needs too much smem"
    # the first candidate runs twice (the second time with its pure outputs poisoned)
    assert ran == [16, 16, 32] and k.best_config == cfgs[1]


def test_no_valid_config_raises_listing_every_reason():
    cfgs = [Config({"BLOCK": 64, "TAIL": "none"}), Config({"BLOCK": 32, "TAIL": "none"})]
    k = _double(cfgs, scorer=lambda c, a: math.inf if c.kwargs["BLOCK"] == 32 else 1.0)
    with pytest.raises(MeasureError, match="no valid config") as ei:
        k[grid_1d](_x(), np.zeros(N, np.float32), N)
    msg = str(ei.value)
    assert "OutOfBoundsError" in msg and "scorer returned inf" in msg


def test_reset_to_zero_honoured_between_candidates():
    x = np.linspace(-1, 1, N).astype(np.float32)
    cfgs = [Config({"BLOCK": b}) for b in (16, 32, 64)]
    k = autotune(cfgs, key=["n"], reset_to_zero=["out_ptr"], scorer=time_by_block)(sum_kernel)
    out = np.full(1, 5.0, np.float32)
    k[grid_1d](x, out, N)
    assert [r.status for r in k.history] == ["ok", "ok", "ok"]
    assert out[0] == pytest.approx(x.sum(), abs=1e-5)  # zeroed before the real launch too
    # without it, each candidate's check still starts from the call's own state (the
    # check restores every array), so none is marked wrong and the sum is right
    k2 = autotune(cfgs, key=["n"], scorer=time_by_block, disk_cache=False)(sum_kernel)
    out2 = np.zeros(1, np.float32)
    k2[grid_1d](x + 1, out2, N)
    assert [r.status for r in k2.history] == ["ok", "ok", "ok"]
    assert out2[0] == pytest.approx((x + 1).sum(), abs=1e-4)


def test_restore_value_undoes_each_candidate():
    cfgs = [Config({"BLOCK": b}) for b in (16, 32, 64)]
    k = autotune(cfgs, key=["n"], restore_value=["x_ptr"], scorer=time_by_block)(inc_kernel)
    x0 = _x()
    x = x0.copy()
    k[grid_1d](x, N)
    assert [r.status for r in k.history] == ["ok", "ok", "ok"]
    np.testing.assert_array_equal(x, x0 + 1)  # tuning left no increments behind
    # without restore_value the checks leave the caller's array as they found it too:
    # only the chosen config's launch increments it
    k2 = autotune(cfgs, key=["n"], scorer=time_by_block, disk_cache=False)(inc_kernel)
    x2 = x0.copy()
    k2[grid_1d](x2, N)
    assert [r.status for r in k2.history] == ["ok", "ok", "ok"]
    np.testing.assert_array_equal(x2, x0 + 1)


def test_without_reference_the_majority_of_candidates_decides():
    # TAIL="skip" is wrong for BLOCK=64 (64 does not divide 96): listed first, it would be
    # the baseline; the two that agree with each other outvote it, with a warning
    cfgs = [Config({"BLOCK": 64, "TAIL": "skip"}), Config({"BLOCK": 16, "TAIL": "mask"}),
            Config({"BLOCK": 32, "TAIL": "skip"})]
    k = _double(cfgs, disk_cache=False)
    x, out = _x(), np.zeros(N, np.float32)
    with pytest.warns(RuntimeWarning, match="2 of 3 checked candidates agree"):
        k[grid_1d](x, out, N)
    st = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert st[64].status == "wrong" and st[64].reason.startswith("disagrees with the 2 of 3")
    assert st[16].status == "ok" and st[32].status == "ok" and k.best_config == cfgs[2]
    np.testing.assert_array_equal(out, 2 * x)
    # two that disagree: the first stays the baseline, with a warning
    k2 = _double(cfgs[:2], disk_cache=False)
    with pytest.warns(RuntimeWarning, match="no group of them is larger"):
        k2[grid_1d](x, np.zeros(N, np.float32), N)


def test_pre_and_post_hooks_called_like_triton():
    calls = []
    cfg_hook_calls = []
    cfgs = [Config({"BLOCK": 16, "TAIL": "mask"}, pre_hook=lambda kw: cfg_hook_calls.append(1)),
            Config({"BLOCK": 64, "TAIL": "none"})]
    k = _double(cfgs, pre_hook=lambda kw: calls.append(("pre", kw["BLOCK"], kw["n"])),
                post_hook=lambda kw, exception: calls.append(
                    ("post", kw["BLOCK"], type(exception).__name__)))
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    assert calls == [("pre", 16, N), ("post", 16, "NoneType")] * 2 + [
        ("pre", 64, N), ("post", 64, OutOfBoundsError.__name__)]
    assert cfg_hook_calls == [1, 1, 1]  # two check runs and the real launch


def test_prune_configs_by():
    scored = []

    def scorer(cfg, args):
        scored.append(cfg.kwargs["BLOCK"])
        return time_by_block(cfg, args)

    def early(configs, named, **kwargs):
        assert named["n"] == N
        return [c for c in configs if c.kwargs["BLOCK"] != 128]

    cfgs = [Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 32, 64, 128)]
    k = _double(cfgs, scorer=scorer, prune_configs_by={
        "early_config_prune": early, "perf_model": lambda **kw: kw["BLOCK"] % 64, "top_k": 2})
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    assert sorted(scored) == [16, 64]  # perf model ranks 64 (0) and 16 (16) first
    assert [r.status for r in k.history if r.status == "pruned"] == ["pruned", "pruned"]
    assert k.best_config.kwargs["BLOCK"] == 64


def test_print_with_env_var(monkeypatch, capsys):
    monkeypatch.setenv("AUTOTILE_PRINT_AUTOTUNING", "1")
    cfgs = [Config({"BLOCK": 16, "TAIL": "mask"}), Config({"BLOCK": 64, "TAIL": "none"})]
    k = _double(cfgs)
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    out = capsys.readouterr().out
    assert "BLOCK: 16, TAIL: mask, num_warps: 4, num_stages: 3 -> ok, time_s=6.25e-05" in out
    assert "BLOCK: 64, TAIL: none, num_warps: 4, num_stages: 3 -> failed: interpreter raised " \
           "OutOfBoundsError" in out
    assert "best config selected: BLOCK: 16, TAIL: mask" in out and "finished after" in out
    k.clear_cache()
    k[grid_1d](_x(), np.zeros(N, np.float32), N)  # from disk: says so
    assert "cache hit" in capsys.readouterr().out


def test_key_values_and_dtypes_form_the_cache_key():
    k = _double([Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 32)], disk_cache=False)
    for n, dt in [(N, np.float32), (N, np.float32), (64, np.float32), (N, np.float64)]:
        k[grid_1d](_x(n, dt), np.zeros(n, dt), n)
    assert k.n_tuned == 3
    assert set(k.cache) == {(96, "float32", "float32"), (64, "float32", "float32"),
                            (96, "float64", "float64")}


def test_space_form_with_searcher_and_budget():
    space = Space([Choice("BLOCK", (16, 32, 64, 128)), Choice("TAIL", ("mask", "skip")),
                   Choice("num_warps", (1, 2, 4))],
                  [Constraint("block_le_64", lambda c: c["BLOCK"] <= 64)])
    k = autotune(key=["n"], space=space, searcher="grid", budget=100,
                 scorer=time_by_block)(double_kernel)
    x, out = _x(), np.zeros(N, np.float32)
    k[grid_1d](x, out, N)
    np.testing.assert_array_equal(out, 2 * x)
    assert len(k.history) == len(space) == 18
    by_status = {s: sum(r.status == s for r in k.history) for s in ("ok", "wrong")}
    assert by_status == {"ok": 15, "wrong": 3}  # BLOCK=64 with TAIL=skip, 3 num_warps
    assert k.best_config.kwargs["BLOCK"] == 64 and k.best_config.kwargs["TAIL"] == "mask"
    assert k.study is not None and len(k.study.trials) == 18


def test_space_callable_and_random_searcher_budget():
    seen = []

    def space_of(args):
        seen.append(args["n"])
        return Space([Choice("BLOCK", (16, 32, 64)), Choice("TAIL", ("mask",)),
                      Choice("num_stages", (1, 2, 3, 4))])

    k = autotune(key=["n"], space=space_of, searcher="random", budget=5, seed=1,
                 scorer=time_by_block)(double_kernel)
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    assert seen == [N] and len(k.history) == 5
    assert all(r.status == "ok" for r in k.history)
    assert k.best_config.kwargs["BLOCK"] == max(r.config.kwargs["BLOCK"] for r in k.history)


def test_searcher_kwargs_reach_the_searcher_and_the_cache_key():
    space = Space([Choice("BLOCK", (16, 32, 64)), Choice("TAIL", ("mask",)),
                   Choice("num_stages", (1, 2, 3, 4))])
    kw = {"n_startup_trials": 2}
    k = autotune(key=["n"], space=space, searcher="tpe", budget=4, seed=0,
                 searcher_kwargs=kw, scorer=time_by_block, disk_cache=False)(double_kernel)
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    ost = k.study.optuna_study
    assert ost.user_attrs["autotile:searcher_kwargs"] == {"n_startup_trials": 2}
    assert ost.sampler._n_startup_trials == 2
    plain = autotune(key=["n"], space=space, searcher="tpe", budget=4, seed=0,
                     scorer=time_by_block, disk_cache=False)(double_kernel)
    assert k._identity(space) != plain._identity(space)
    assert k._identity(space).endswith('|{"n_startup_trials":2}')
    kw["n_startup_trials"] = 3  # the decorator kept its own copy
    assert k.searcher_kwargs == {"n_startup_trials": 2}


def test_searcher_kwargs_cache_key_is_their_data(tmp_path):
    # the key was the options' repr: other order, other key; an array of over 1,000 values
    # is elided by its repr, so two priors differing in the middle shared a key (a stale
    # disk-cache hit); a callable's repr holds its address (a new file every process)
    space = Space([Choice("BLOCK", (16, 32, 64)), Choice("TAIL", ("mask",))])

    def make(kw, **extra):
        return autotune(key=["n"], space=space, searcher="bandit", budget=2, seed=0,
                        searcher_kwargs=kw, scorer=time_by_block, cache_dir=tmp_path,
                        **extra)(double_kernel)

    one = make({"arms": ("random",), "n_init": 2})
    assert one._identity(space) == make({"n_init": 2, "arms": ["random"]})._identity(space)
    assert one._identity(space).endswith('|{"arms":["random"],"n_init":2}')
    a = np.zeros(2000)
    b = a.copy()
    b[1000] = 5.0
    assert repr(a) == repr(b)
    assert (make({"prior": [(space, a)]})._identity(space)
            != make({"prior": [(space, b)]})._identity(space))
    from autotile.search import Prior

    k = make({"arms": ("random",), "n_init": 2,
              "prior": Prior(space, [(space, np.array([3.0, 1.0, 2.0]))])})
    assert k._disk() is None and one._disk() is not None
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    assert k.cache_source == "tuned" and list(tmp_path.iterdir()) == []


def test_searcher_kwargs_errors_name_the_option():
    space = Space([Choice("BLOCK", (16, 32)), Choice("TAIL", ("mask",))])
    with pytest.raises(InvalidConfigError, match=r"searcher 'tpe' has no option\(s\) "
                                                 r"\['n_startup'\]; its options are \[.*"
                                                 r"'n_startup_trials'"):
        autotune(key=["n"], space=space, searcher="tpe", searcher_kwargs={"n_startup": 2},
                 scorer=time_by_block)(double_kernel)
    with pytest.raises(InvalidConfigError, match=r"autotune\(\): searcher 'tpe': 'seed' is not a "
                                                 r"searcher option; pass seed= itself"):
        autotune(key=["n"], space=space, searcher="tpe", searcher_kwargs={"seed": 3},
                 scorer=time_by_block)(double_kernel)
    with pytest.raises(InvalidConfigError, match=r"option n_startup_trials='four': expected "
                                                 r"int \(its default is 10\), got str"):
        autotune(key=["n"], space=space, searcher="tpe",
                 searcher_kwargs={"n_startup_trials": "four"},
                 scorer=time_by_block)(double_kernel)
    with pytest.raises(InvalidConfigError, match=r"searcher_kwargs must be a dict .* got list "
                                                 r"\[\('plan_size', 8\)\]"):
        autotune(key=["n"], space=space, searcher="model",
                 searcher_kwargs=[("plan_size", 8)], scorer=time_by_block)(double_kernel)
    with pytest.raises(InvalidConfigError, match="searcher_kwargs= applies to the space form"):
        autotune([Config({"BLOCK": 16, "TAIL": "mask"})], key=["n"],
                 searcher_kwargs={"plan_size": 8}, scorer=time_by_block)(double_kernel)


def test_argument_errors():
    with pytest.raises(InvalidConfigError, match="key must name kernel parameters"):
        autotune([Config({"BLOCK": 16})], key=["m"], scorer=time_by_block)(double_kernel)
    # a kernel outside the library now gets the records GPU model, not an error
    from autotile.tuner import RecordsScorer

    tuned = autotune([Config({"BLOCK": 16}), Config({"BLOCK": 32})], key=["n"])(double_kernel)
    assert isinstance(tuned.scorer, RecordsScorer)
    with pytest.raises(InvalidConfigError, match="above @jit"):
        autotune([Config({"BLOCK": 16})], key=["n"])(lambda x: x)
    k = _double([Config({"BLOCK": 16, "TAIL": "mask"}), Config({"BLOCK": 32, "TAIL": "mask"})])
    with pytest.raises(InvalidConfigError, match="Conflicting meta-parameters: BLOCK"):
        k[grid_1d](_x(), np.zeros(N, np.float32), N, BLOCK=16)
    # session 13: a tuned name given positionally was Python's "got multiple values" deep in
    # the launch; it is the same conflict
    with pytest.raises(InvalidConfigError, match=r"^Conflicting meta-parameters: BLOCK\. "):
        k[grid_1d](_x(), np.zeros(N, np.float32), N, 16)
    big = _double([Config({"BLOCK": 16, "TAIL": "mask"}), Config({"BLOCK": 32, "TAIL": "mask"})],
                  check_max_elems=100)
    with pytest.raises(InvalidConfigError, match="pass small_args="):
        big[grid_1d](_x(), np.zeros(N, np.float32), N)


def test_small_args_instance_is_checked_not_the_real_one():
    n_small = 40
    cfgs = [Config({"BLOCK": 16, "TAIL": "mask"}), Config({"BLOCK": 32, "TAIL": "skip"})]
    k = _double(cfgs, check_max_elems=10,
                small_args=lambda a: (np.ones(n_small, np.float32),
                                      np.zeros(n_small, np.float32), n_small))
    x, out = _x(), np.zeros(N, np.float32)
    k[grid_1d](x, out, N)
    # 32 divides 96 but not 40: the small instance exposes the bug
    assert [r.status for r in k.history] == ["ok", "wrong"]
    np.testing.assert_array_equal(out, 2 * x)


def test_space_constraint_violations_recorded_with_their_config():
    space = Space([Choice("BLOCK", (16, 32, 64, 128)), Choice("TAIL", ("mask",))],
                  [Constraint("block_le_64", lambda c: c["BLOCK"] <= 64)])
    k = autotune(key=["n"], space=space, searcher="tpe", budget=8, seed=0,
                 scorer=time_by_block)(double_kernel)
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    bad = [r for r in k.history if r.status == "infeasible"]
    assert bad and all(r.config.kwargs["BLOCK"] == 128 for r in bad)
    assert all("block_le_64" in r.reason for r in bad)
    ok = [r.config.kwargs["BLOCK"] for r in k.history if r.status == "ok"]
    assert k.best_config.kwargs["BLOCK"] == max(ok)


def test_key_as_one_string_and_numpy_scalar_key_values():
    cfgs = [Config({"BLOCK": 16, "TAIL": "mask"}), Config({"BLOCK": 32, "TAIL": "mask"})]
    k = autotune(configs=cfgs, key="n", scorer=time_by_block, disk_cache=False)(double_kernel)
    assert k.keys == ["n"]  # not ["n"] split into characters (a longer name would be)
    x, out = _x(), np.zeros(N, np.float32)
    k[grid_1d](x, out, np.int32(N))  # a NumPy integer is a scalar key value, not an array
    k[grid_1d](x, out, np.int64(N))
    assert list(k.cache) == [(N, "float32", "float32")]
    np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(InvalidConfigError, match="which received an array of shape"):
        k[grid_1d](x, out, np.array([N]))


def test_options_that_would_be_ignored_are_refused():
    cfgs = [Config({"BLOCK": 16, "TAIL": "mask"}), Config({"BLOCK": 32, "TAIL": "mask"})]
    with pytest.raises(InvalidConfigError, match=r"searcher= applies to the space form"):
        autotune(configs=cfgs, key=["n"], searcher="bogus")
    with pytest.raises(InvalidConfigError, match=r"searcher=, budget= apply to the space form"):
        autotune(configs=cfgs, key=["n"], searcher="random", budget=5)
    k = _double(cfgs, prune_configs_by={"perf_model": lambda **kw: 1.0, "top_k": 0},
                disk_cache=False)
    with pytest.raises(InvalidConfigError, match=r"top_k must be an int >= 1 or a float in "
                                                 r"\(0, 1\], got top_k=0"):
        k[grid_1d](_x(), np.zeros(N, np.float32), N)
