"""``@autotune`` on a problem with a zero-size dimension: an empty grid is a no-op launch."""

from __future__ import annotations

import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import InvalidConfigError
from autotile.kernels import matmul_kernel
from autotile.space import Choice, Space
from autotile.tuner import Config, autotune
from tests.tuner._kernels import double_kernel, grid_1d

MM_CONFIGS = [
    Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8,
            "PID_ORDER": "grouped"}, num_warps=4),
    Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
            "PID_ORDER": "grouped"}, num_warps=8),
]


def mm_grid(meta):
    return (tl.cdiv(meta["M"], meta["BLOCK_M"]) * tl.cdiv(meta["N"], meta["BLOCK_N"]),)


def _matmul(mm, M, N, K):
    a = np.ones((M, K), np.float16)
    b = np.ones((K, N), np.float16)
    c = np.full((M, N), 7, np.float16)
    mm[mm_grid](a, b, c, M, N, K, max(K, 1), 1, max(N, 1), 1, max(N, 1), 1)
    return c


@pytest.mark.parametrize(("M", "N", "K"), [(0, 64, 48), (64, 0, 48), (0, 0, 0), (0, 64, 0)])
def test_matmul_with_empty_output_is_a_noop_launch(M, N, K, _isolated_cache):
    mm = autotune(configs=MM_CONFIGS, key=["M", "N", "K"])(matmul_kernel)
    c = _matmul(mm, M, N, K)
    assert c.shape == (M, N)
    assert mm.cache_source == "empty" and not mm.cache_hit
    assert mm.best_config == MM_CONFIGS[0]
    assert mm.n_tuned == 0 and mm.history == [] and mm.cache == {}
    assert not _isolated_cache.exists()  # nothing written to the disk cache


def test_matmul_empty_then_real_call_tunes_normally():
    mm = autotune(configs=MM_CONFIGS, key=["M", "N", "K"], disk_cache=False)(matmul_kernel)
    _matmul(mm, 0, 64, 48)
    c = _matmul(mm, 256, 256, 48)
    np.testing.assert_array_equal(c, np.full((256, 256), 48, np.float16))
    assert mm.cache_source == "tuned" and mm.n_tuned == 1
    assert [r.status for r in mm.history] == ["ok", "ok"]


def test_matmul_k0_with_default_scorer_names_the_dimension():
    mm = autotune(configs=MM_CONFIGS, key=["M", "N", "K"], disk_cache=False)(matmul_kernel)
    with pytest.raises(InvalidConfigError, match=r"matmul GPU model .*got K=0.*scorer="):
        _matmul(mm, 64, 32, 0)


def test_matmul_k0_single_config_writes_zeros():
    mm = autotune(configs=MM_CONFIGS[:1], key=["M", "N", "K"], disk_cache=False)(matmul_kernel)
    c = _matmul(mm, 64, 32, 0)
    np.testing.assert_array_equal(c, np.zeros((64, 32), np.float16))
    assert mm.cache_source == "single"


def test_empty_grid_runs_no_scorer_in_config_and_space_form():
    calls = []

    def scorer(config, args):
        calls.append(config)
        return 1.0 / config.kwargs["BLOCK"]

    x, out = np.zeros(0, np.float32), np.zeros(0, np.float32)
    k = autotune(configs=[Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 32)], key=["n"],
                 scorer=scorer, disk_cache=False)(double_kernel)
    k[grid_1d](x, out, 0)
    space = Space([Choice("BLOCK", (16, 32, 64)), Choice("TAIL", ("mask", "skip"))])
    ks = autotune(key=["n"], space=space, scorer=scorer, disk_cache=False)(double_kernel)
    ks[grid_1d](x, out, 0)
    assert calls == []
    assert k.cache_source == ks.cache_source == "empty"
    assert ks.best_config.kwargs == {"BLOCK": 16, "TAIL": "mask"} and ks.study is None


def test_grid_empty_for_some_configs_only_is_tuned():
    # n // BLOCK launches nothing for BLOCK=64 > n=32: that candidate is wrong, not a no-op
    def floor_grid(meta):
        return (meta["n"] // meta["BLOCK"],)

    k = autotune(configs=[Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 64)], key=["n"],
                 scorer=lambda c, a: 1.0 / c.kwargs["BLOCK"], disk_cache=False)(double_kernel)
    x, out = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    k[floor_grid](x, out, 32)
    assert [r.status for r in k.history] == ["ok", "wrong"]
    np.testing.assert_array_equal(out, 2 * x)
