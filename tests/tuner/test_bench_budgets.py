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
