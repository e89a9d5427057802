"""``warmup``/``rep`` of ``@autotune`` and ``TritonMeasurer``: milliseconds, checked at once.

A negative ``warmup`` or a ``rep <= 0`` used to be accepted and handed to
``do_bench``, which clamps them to one run each: a silently different timing.
"""

from __future__ import annotations

import numpy as np
import pytest

from autotile.errors import InvalidConfigError, MeasureError
from autotile.measure import TritonMeasurer
from autotile.tuner import Config, autotune
from tests.tuner._fake_gpu import FakeBackend
from tests.tuner._kernels import double_kernel, time_by_block

CONFIGS = [Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 32)]


@pytest.mark.parametrize("kwargs, message", [
    ({"warmup": -5}, "autotune(): warmup must be a finite number of milliseconds >= 0, "
                     "got warmup=-5"),
    ({"rep": -1}, "autotune(): rep must be a finite number of milliseconds > 0, got rep=-1"),
    ({"rep": 0}, "autotune(): rep must be a finite number of milliseconds > 0, got rep=0"),
    ({"warmup": float("nan")}, "got warmup=nan"),
    ({"rep": float("inf")}, "got rep=inf"),
    ({"warmup": "25"}, "warmup must be a real number of milliseconds >= 0, got "
                       "warmup='25' (str)"),
    ({"rep": True}, "got rep=True (bool)"),
])
def test_autotune_rejects_bad_bench_budgets_at_decoration(kwargs, message):
    with pytest.raises(InvalidConfigError) as info:
        autotune(CONFIGS, key=["n"], scorer=time_by_block, disk_cache=False, **kwargs)
    assert message in str(info.value)


def test_gpu_autotuner_checks_them_too():
    from autotile.tuner._gpu_tuner import GpuAutotuner

    with pytest.raises(InvalidConfigError, match="got warmup=-5"):
        GpuAutotuner(double_kernel, FakeBackend(), CONFIGS, ["n"], warmup=-5)


def test_valid_budgets_are_kept():
    k = autotune(CONFIGS, key=["n"], scorer=time_by_block, disk_cache=False, warmup=0,
                 rep=np.float32(50))(double_kernel)
    assert (k.warmup, k.rep) == (0, np.float32(50))
    k = autotune(CONFIGS, key=["n"], backend=FakeBackend(), model_prior=False,
                 disk_cache=False, warmup=0, rep=12.5)(double_kernel)
    assert (k.warmup_ms, k.rep_ms) == (0.0, 12.5)


@pytest.mark.parametrize("kwargs, message", [
    ({"warmup_ms": -5.0}, "TritonMeasurer: warmup_ms must be a finite number of milliseconds "
                          ">= 0, got warmup_ms=-5.0"),
    ({"rep_ms": -1}, "TritonMeasurer: rep_ms must be a finite number of milliseconds > 0, "
                     "got rep_ms=-1"),
])
def test_triton_measurer_rejects_bad_bench_budgets_before_needing_a_gpu(kwargs, message):
    with pytest.raises(MeasureError) as info:
        TritonMeasurer("matmul", {"M": 64, "N": 64, "K": 64}, **kwargs)
    assert str(info.value) == message


# -- the space form's searcher, budget and seed, and perf_model's grid: checked at once ---
SPACE_KW = {"key": ["n"], "scorer": time_by_block, "disk_cache": False}


def _space():
    from autotile.space import Choice, Space

    return Space([Choice("BLOCK", [16, 32]), Choice("TAIL", ["mask"])])


@pytest.mark.parametrize("kwargs, message", [
    ({"searcher": "nope"}, "autotune(): searcher must be one of ('grid', 'random'"),
    # a searcher object used to be refused as "must be one of (...), got <... at 0x...>"
    ({"searcher": None}, "autotune(): searcher must be a searcher's name (str, e.g. 'model' "
                         "or 'bandit'; its options go in searcher_kwargs=), got NoneType "
                         "object"),
    ({"searcher": "BanditSearcher"}, "searcher must be one of"),
    ({"seed": -1}, "autotune(): seed must be None or an int with 0 <= seed < 2**32, got "
                   "seed=-1"),
    ({"budget": "10"}, "budget must be an int >= 1, got budget='10'"),
    ({"budget": 2.5}, "budget must be an int >= 1, got budget=2.5"),
    ({"budget": None}, "budget must be an int >= 1, got budget=None"),
])
def test_space_form_arguments_are_checked_at_decoration(kwargs, message):
    with pytest.raises(InvalidConfigError) as info:
        autotune(space=_space(), **SPACE_KW, **kwargs)(double_kernel)
    assert message in str(info.value)
    with pytest.raises(InvalidConfigError) as info:
        autotune(space=_space(), backend=FakeBackend(), model_prior=False, disk_cache=False,
                 key=["n"], **kwargs)(double_kernel)
    assert message in str(info.value)


def test_space_form_names_a_searcher_object_and_points_to_tune():
    from autotile.search import BanditSearcher

    obj = BanditSearcher(_space(), arms=("descent", "random"), seed=0)
    with pytest.raises(InvalidConfigError, match=r"autotune\(\): searcher must be a "
                       r"searcher's name .*its options go in searcher_kwargs=\), got "
                       r"BanditSearcher object; to tune with a searcher object, use "
                       r"autotile.search.tune"):
        autotune(space=_space(), **SPACE_KW, searcher=obj)(double_kernel)


def test_perf_model_rejects_a_grid_that_is_not_one():
    import autotile

    with pytest.raises(InvalidConfigError, match=r"perf_model\('double_kernel'\): grid must "
                                                 r"be a tuple of 1 to 3 ints or a callable "
                                                 r"returning one, got grid='x'"):
        autotile.perf_model(double_kernel, grid="x")
    pm = autotile.perf_model(double_kernel, grid=(3,))
    x = np.zeros(40, np.float32)
    assert np.isfinite(pm(x_ptr=x, out_ptr=x, n=40, BLOCK=16, TAIL="mask"))


def test_searcher_kwargs_empty_or_none_fail_alike_on_a_missing_dependency(monkeypatch):
    # checking the options needs only the searcher's class: searcher_kwargs={} used to raise
    # the missing package's ImportError at decoration, None only at the first tuning
    import autotile.search._factory as F
    from autotile.search import make_searcher
    from autotile.tuner._config import check_space_search

    monkeypatch.setitem(F._NEEDS, "cmaes", ("autotile_no_such_package",))
    assert check_space_search("cmaes", 4, 0, None) == 4
    assert check_space_search("cmaes", 4, 0, {}) == 4
    assert check_space_search("cmaes", 4, 0, {"sigma0": 0.5}) == 4
    with pytest.raises(InvalidConfigError, match=r"autotune\(\): searcher 'cmaes' has no "
                                                 r"option\(s\) \['sigma'\]; its options are "
                                                 r"\['x0', 'sigma0'"):
        check_space_search("cmaes", 4, 0, {"sigma": 0.5})
    with pytest.raises(ImportError, match=r"searcher 'cmaes' needs the package\(s\) "
                                          "autotile_no_such_package"):
        make_searcher("cmaes", _space(), seed=0, sigma0=0.5)
