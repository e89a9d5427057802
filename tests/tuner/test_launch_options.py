"""Interpreter launch options of an autotuned call also apply to its check launches."""

import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import MeasureError
from autotile.lang import jit
from autotile.tuner import Config, RecordsScorer, autotune
from tests.tuner._kernels import time_by_block

N = 96
CFGS = [Config({"BLOCK": b}) for b in (16, 32)]


def test_interpreter_launch_options_reach_the_check_launches():
    """``sanitize_overflow=False`` on an autotuned launch also applies while tuning."""
    @jit
    def lcg_kernel(out_ptr, n, seed, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        h = (offs + seed) * 1103515245 + 12345  # wraps in int32 on purpose
        tl.store(out_ptr + offs, h, mask=offs < n)

    def grid(meta):
        return (tl.cdiv(meta["n"], meta["BLOCK"]),)

    k = autotune(CFGS, key=["n"], scorer=time_by_block, disk_cache=False)(lcg_kernel)
    out = np.zeros(N, np.int32)
    k[grid](out, N, 7, sanitize_overflow=False)
    assert [r.status for r in k.history] == ["ok", "ok"]
    want = (((np.arange(N) + 7) * 1103515245 + 12345) % 2**32).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(out, want)
    k2 = autotune(CFGS, key=["n"], scorer=time_by_block, disk_cache=False)(lcg_kernel)
    with pytest.raises(MeasureError, match="IntegerOverflowError"):
        k2[grid](out, N, 7)


@jit
def lcg_kernel_default_scorer(out_ptr, n, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    h = (offs + seed) * 1103515245 + 12345  # wraps in int32 on purpose
    tl.store(out_ptr + offs, h, mask=offs < n)


def test_sanitize_overflow_reaches_the_default_records_scorer():
    """The records model runs ``programs=`` subsets of the call: they wrap as the call asks."""
    def grid(meta):
        return (tl.cdiv(meta["n"], meta["BLOCK"]),)

    k = autotune(CFGS, key=["n"], disk_cache=False)(lcg_kernel_default_scorer)
    assert isinstance(k.scorer, RecordsScorer)
    out = np.zeros(N, np.int32)
    k[grid](out, N, 7, sanitize_overflow=False)
    assert [r.status for r in k.history] == ["ok", "ok"]
    assert all(r.metrics["alu_ops"] > 0 for r in k.history)
    want = (((np.arange(N) + 7) * 1103515245 + 12345) % 2**32).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(out, want)
    k2 = autotune(CFGS, key=["n"], disk_cache=False)(lcg_kernel_default_scorer)
    with pytest.raises(MeasureError, match="scorer raised IntegerOverflowError"):
        k2[grid](out, N, 7)


def test_a_key_on_an_array_argument_is_refused_naming_it():
    import numpy as np

    import autotile.lang as tl
    from autotile.errors import InvalidConfigError
    from autotile.tuner import LaunchConfig, autotune

    @autotune(configs=[LaunchConfig({"BLOCK": 16}), LaunchConfig({"BLOCK": 32})], key=["x_ptr"],
              scorer=lambda c, a: 1e-6 * c.kwargs["BLOCK"], disk_cache=False)
    @tl.jit
    def copy_k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    x = np.ones(40, np.float32)
    with pytest.raises(InvalidConfigError, match=r"key names 'x_ptr'.*shape \(40,\)"):
        copy_k[lambda m: (4,)](x, np.zeros_like(x), 40)
