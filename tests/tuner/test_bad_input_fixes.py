"""``@autotune`` bad input from the second new-user test: misspelt knob names in
configs or a space, a single config instead of a list, a non-list ``key``, and
scorers or ``perf_model`` estimates that are NaN or negative."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autotile.errors import InvalidConfigError, MeasureError
from autotile.space import Choice, PowerOfTwo, Space
from autotile.tuner import Config, autotune
from tests.tuner._kernels import double_kernel, grid_1d, time_by_block

CONFIGS = [Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 32)]
N = 40
PARAMS = "['x_ptr', 'out_ptr', 'n', 'BLOCK', 'TAIL']"


def _x():
    return np.arange(N, dtype=np.float32)


def test_config_with_unknown_knob_raises_at_decoration_naming_it():
    bad = [CONFIGS[0], Config({"BLOKC": 32, "TAIL": "mask"})]
    with pytest.raises(InvalidConfigError) as exc:
        autotune(bad, key=["n"], scorer=time_by_block, disk_cache=False)(double_kernel)
    assert str(exc.value) == (
        f"@autotune of 'double_kernel': configs[1] sets 'BLOKC', not a parameter of the "
        f"kernel (parameters: {PARAMS}); got configs[1]=BLOKC: 32, TAIL: mask, "
        f"num_warps: 4, num_stages: 3")


def test_space_with_unknown_knob_raises_at_decoration_naming_it():
    space = Space([PowerOfTwo("BLOK", 16, 64), Choice("TAIL", ("mask",)),
                   Choice("num_warps", (2, 4))])
    with pytest.raises(InvalidConfigError) as exc:
        autotune(key=["n"], space=space, budget=2, scorer=time_by_block)(double_kernel)
    assert str(exc.value) == (
        f"@autotune of 'double_kernel': space knob(s) 'BLOK' are not parameters of the "
        f"kernel (parameters: {PARAMS}) nor launch options ('num_warps', 'num_stages', "
        f"'num_ctas', 'maxnreg')")


def test_space_callable_with_unknown_knob_raises_at_the_call():
    k = autotune(key=["n"], space=lambda args: Space([PowerOfTwo("BLOK", 16, 64)]),
                 budget=2, scorer=time_by_block, disk_cache=False)(double_kernel)
    with pytest.raises(InvalidConfigError, match="space knob\\(s\\) 'BLOK' are not"):
        k[grid_1d](_x(), np.zeros(N, np.float32), N)


@pytest.mark.parametrize("space", [{"BLOCK": [16, 32]}, [16, 32], "BLOCK"])
def test_space_that_is_not_a_space_raises(space):
    with pytest.raises(InvalidConfigError,
                       match=r"space must be an autotile.space.Space .* got "
                             + type(space).__name__):
        autotune(key=["n"], space=space, budget=2, scorer=time_by_block)(double_kernel)


def test_single_config_instead_of_a_list_raises():
    with pytest.raises(InvalidConfigError) as exc:
        autotune(CONFIGS[0], key=["n"], scorer=time_by_block)(double_kernel)
    assert str(exc.value) == (
        "@autotune of 'double_kernel': configs must be a list of configs, got LaunchConfig "
        "LaunchConfig(BLOCK: 16, TAIL: mask, num_warps: 4, num_stages: 3); write "
        "configs=[...] even for one config")


def test_config_list_element_that_is_not_a_config_raises_with_its_index():
    with pytest.raises(InvalidConfigError) as exc:
        autotune([CONFIGS[0], None], key=["n"], scorer=time_by_block)(double_kernel)
    assert str(exc.value) == (
        "@autotune of 'double_kernel': configs[1]: a config must be a LaunchConfig "
        "(autotile.tuner.Config) or a mapping of knob values, got NoneType None")


@pytest.mark.parametrize("key", [3, ["n", 3]])
def test_key_that_is_not_names_raises(key):
    with pytest.raises(InvalidConfigError,
                       match=rf"key must be a list of kernel parameter names \(str\), got "
                             rf"{type(key).__name__} "):
        autotune(CONFIGS, key=key, scorer=time_by_block)(double_kernel)


@pytest.mark.parametrize("value", [float("nan"), -1e-6])
def test_scorer_returning_nan_or_negative_marks_the_config_failed(value):
    def scorer(config, args):
        return value if config.kwargs["BLOCK"] == 16 else time_by_block(config, args)

    k = autotune(CONFIGS, key=["n"], scorer=scorer, disk_cache=False)(double_kernel)
    out = np.zeros(N, np.float32)
    k[grid_1d](_x(), out, N)
    rec = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert rec[16].status == "failed" and rec[16].time_s == math.inf
    assert rec[16].reason == (f"scorer returned time_s={value}; a time in seconds must be "
                              f"finite and >= 0 (inf: the config cannot run)")
    assert rec[32].status == "ok" and k.best_config.kwargs["BLOCK"] == 32
    np.testing.assert_array_equal(out, 2 * _x())


def test_scorer_returning_inf_is_still_infeasible():
    k = autotune(CONFIGS, key=["n"], disk_cache=False,
                 scorer=lambda c, a: math.inf if c.kwargs["BLOCK"] == 16
                 else time_by_block(c, a))(double_kernel)
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    assert [(r.status, r.reason) for r in k.history][0] == ("infeasible", "scorer returned inf")


@pytest.mark.parametrize("estimate", [float("nan"), None, "fast"])
def test_perf_model_returning_nan_or_a_non_number_raises_naming_the_config(estimate):
    configs = CONFIGS + [Config({"BLOCK": 64, "TAIL": "mask"})]
    k = autotune(configs, key=["n"], scorer=time_by_block, disk_cache=False,
                 prune_configs_by={"perf_model": lambda **kw: estimate, "top_k": 2}
                 )(double_kernel)
    with pytest.raises(InvalidConfigError) as exc:
        k[grid_1d](_x(), np.zeros(N, np.float32), N)
    assert str(exc.value) == (
        f"prune_configs_by's perf_model must return an estimated time (a real number, inf "
        f"for a config that cannot run), got {type(estimate).__name__} {estimate!r} for "
        f"config BLOCK: 16, TAIL: mask, num_warps: 4, num_stages: 3")


def test_perf_model_inf_and_numpy_estimates_rank():
    configs = CONFIGS + [Config({"BLOCK": 64, "TAIL": "mask"})]
    est = {16: math.inf, 32: np.float32(2.0), 64: np.array(1.0)}
    k = autotune(configs, key=["n"], scorer=time_by_block, disk_cache=False,
                 prune_configs_by={"perf_model": lambda **kw: est[kw["BLOCK"]], "top_k": 2}
                 )(double_kernel)
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    assert sorted(r.config.kwargs["BLOCK"] for r in k.history if r.status != "pruned") \
        == [32, 64]


def test_all_failed_scorer_names_every_candidate():
    k = autotune(CONFIGS, key=["n"], scorer=lambda c, a: float("nan"),
                 disk_cache=False)(double_kernel)
    with pytest.raises(MeasureError, match="every candidate was skipped"):
        k[grid_1d](_x(), np.zeros(N, np.float32), N)


@pytest.mark.parametrize("kernel, shown", [("matmul", "str 'matmul' (a kernel's name is not "
                                                      "enough: pass the function itself)"),
                                           (3, "int 3")])
def test_perf_model_of_something_that_is_not_a_kernel_raises(kernel, shown):
    import autotile

    with pytest.raises(InvalidConfigError) as exc:
        autotile.perf_model(kernel, grid=(1,))
    assert str(exc.value) == ("perf_model: kernel must be a triton.jit function, an "
                              f"autotile.lang.jit kernel or a Python function, got {shown}")


def test_repeated_config_is_tuned_once_with_a_warning():
    configs = [CONFIGS[0], CONFIGS[1], Config({"TAIL": "mask", "BLOCK": 16})]
    with pytest.warns(UserWarning) as rec:
        k = autotune(configs, key=["n"], scorer=time_by_block, disk_cache=False)(double_kernel)
    assert [str(w.message) for w in rec] == [
        "@autotune of 'double_kernel': configs[2] repeats configs[0] (TAIL: mask, BLOCK: 16, "
        "num_warps: 4, num_stages: 3); it is tuned once"]
    assert k.configs == CONFIGS
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    assert [r.config.kwargs["BLOCK"] for r in k.history] == [16, 32]


@pytest.mark.parametrize("value", ["big", -1, 1.5, True])
def test_check_max_elems_must_be_a_non_negative_int(value):
    with pytest.raises(InvalidConfigError) as exc:
        autotune(CONFIGS, key=["n"], scorer=time_by_block, check_max_elems=value)(double_kernel)
    assert str(exc.value) == ("@autotune of 'double_kernel': check_max_elems must be an int "
                              f">= 0 (array elements), got check_max_elems={value!r}")


def test_check_max_elems_accepts_numpy_ints():
    k = autotune(CONFIGS, key=["n"], scorer=time_by_block,
                 check_max_elems=np.int64(100))(double_kernel)
    assert k.check_max_elems == 100 and type(k.check_max_elems) is int


@pytest.mark.parametrize("make", [np.float32, np.float16, np.int64, np.float64])
def test_scorer_returning_a_numpy_scalar_is_a_time(make):
    # session 13: np.float32 (not a float subclass) was refused and every config failed
    k = autotune(CONFIGS, key=["n"], disk_cache=False,
                 scorer=lambda c, a: make(4 if c.kwargs["BLOCK"] == 16 else 2))(double_kernel)
    out = np.zeros(N, np.float32)
    k[grid_1d](_x(), out, N)
    assert [(r.config.kwargs["BLOCK"], r.status, r.time_s) for r in k.history] == [
        (16, "ok", 4.0), (32, "ok", 2.0)]
    assert k.best_config.kwargs["BLOCK"] == 32
    np.testing.assert_array_equal(out, 2 * _x())


def test_scorer_returning_a_numpy_bool_fails_naming_the_value():
    k = autotune(CONFIGS, key=["n"], disk_cache=False,
                 scorer=lambda c, a: np.bool_(True) if c.kwargs["BLOCK"] == 16
                 else time_by_block(c, a))(double_kernel)
    k[grid_1d](_x(), np.zeros(N, np.float32), N)
    rec = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert rec[16].status == "failed"
    assert rec[16].reason == ("scorer raised TypeError: a scorer must return a MeasureResult "
                              f"or a time in seconds, got {type(np.bool_(True)).__name__} "
                              f"{np.bool_(True)!r}")
    assert rec[32].status == "ok"


@pytest.mark.parametrize("what", ["scorer", "small_args", "reference"])
def test_non_callable_scorer_small_args_or_reference_is_refused_at_decoration(what):
    # session 13: scorer=3 was accepted and every candidate then failed "'int' object is
    # not callable" at the first launch
    with pytest.raises(InvalidConfigError) as exc:
        autotune(CONFIGS, key=["n"], disk_cache=False, **{what: 3})(double_kernel)
    assert str(exc.value) == (f"@autotune of 'double_kernel': {what} must be a callable or "
                              f"None, got int {what}=3")


@pytest.mark.parametrize("bad", [3, 2.5, b"/tmp/x", ["/tmp"]])
def test_cache_dir_that_is_not_a_path_is_refused_at_decoration(bad):
    # session 13: cache_dir=3 reached pathlib: "expected str, bytes or os.PathLike object"
    with pytest.raises(InvalidConfigError) as exc:
        autotune(CONFIGS, key=["n"], scorer=time_by_block, cache_dir=bad)(double_kernel)
    assert str(exc.value) == ("cache_dir must be a directory path (str or path) or None, got "
                              f"{type(bad).__name__} cache_dir={bad!r}")


def test_cache_dir_that_is_an_existing_file_is_refused_on_both_paths(tmp_path):
    from tests.tuner._fake_gpu import FakeBackend

    f = tmp_path / "cache.json"
    f.write_text("{}")
    msg = f"cache_dir must be a directory, got cache_dir={str(f)!r}, which is an existing file"
    with pytest.raises(InvalidConfigError) as exc:
        autotune(CONFIGS, key=["n"], scorer=time_by_block, cache_dir=f)(double_kernel)
    assert str(exc.value) == msg
    with pytest.raises(InvalidConfigError) as exc:
        autotune(CONFIGS, key=["n"], backend=FakeBackend(lambda meta: 1e-3), cache_dir=f,
                 model_prior=False)(double_kernel)
    assert str(exc.value) == msg
    # with the disk cache off the path is never used
    autotune(CONFIGS, key=["n"], scorer=time_by_block, cache_dir=f, disk_cache=False)(
        double_kernel)


def test_space_searcher_given_as_a_class_is_named_as_one():
    # session 13: a searcher class was described as "got ABCMeta object"
    from autotile.search import RandomSearcher

    space = Space([PowerOfTwo("BLOCK", 16, 32), Choice("TAIL", ("mask",))])
    with pytest.raises(InvalidConfigError) as exc:
        autotune(key=["n"], space=space, searcher=RandomSearcher, budget=2,
                 scorer=time_by_block)(double_kernel)
    assert str(exc.value) == (
        "autotune(): searcher must be a searcher's name (str, e.g. 'model' or 'bandit'; its "
        "options go in searcher_kwargs=), got the class RandomSearcher; to tune with a "
        "searcher object, use autotile.search.tune")
