"""@autotune(configs=..., key=...) on kernels outside the library, with no scorer=:
the records GPU model scores them, infeasible configs are skipped with reasons,
and the choice is cached on disk."""

from __future__ import annotations

import numpy as np
import pytest

from autotile.tuner import Config, RecordsScorer, autotune
from examples.user_kernels import (
    gelu_kernel,
    gelu_reference,
    online_softmax_kernel,
    rms_norm_kernel,
    rms_norm_reference,
    softmax_reference,
    transpose_kernel,
)

RNG = np.random.default_rng(0)


def _tune(kernel, configs, key):
    return autotune(configs=configs, key=key)(kernel)


def test_gelu_tunes_with_no_scorer_and_caches_on_disk(_isolated_cache):
    cfgs = [Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 1024) for w in (2, 4, 8)]
    k = _tune(gelu_kernel, cfgs, ["n"])
    assert isinstance(k.scorer, RecordsScorer)
    n = 5000
    x = RNG.standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    k[lambda m: (-(-n // m["BLOCK"]),)](x, y, n)
    np.testing.assert_allclose(y, gelu_reference(x), rtol=1e-5, atol=1e-6)
    ok = [r for r in k.history if r.status == "ok"]
    assert len(ok) == len(cfgs) and k.best_config in cfgs
    times = {r.config: r.time_s for r in ok}
    assert len(set(times.values())) > 1  # the model tells the configs apart
    assert k.best_config == min(times, key=times.get)
    assert list(_isolated_cache.rglob("*.json"))  # written to the disk cache
    k2 = _tune(gelu_kernel, cfgs, ["n"])
    y2 = np.zeros(n, np.float32)
    k2[lambda m: (-(-n // m["BLOCK"]),)](x, y2, n)
    assert k2.cache_source == "disk" and k2.best_config == k.best_config


def test_rms_norm_tunes_with_no_scorer():
    m, n = 32, 1000
    cfgs = [Config({"BLOCK": 1024}, num_warps=w) for w in (1, 2, 4, 8, 16)]
    k = _tune(rms_norm_kernel, cfgs, ["N"])
    x = RNG.standard_normal((m, n)).astype(np.float32)
    w = RNG.standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    k[(m,)](x, w, y, n, n, 1e-6)
    np.testing.assert_allclose(y, rms_norm_reference(x, w), rtol=1e-4, atol=1e-5)
    assert all(r.status == "ok" for r in k.history)


def test_transpose_skips_a_tile_that_needs_too_much_shared_memory():
    M, N = 200, 150
    cfgs = [Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=4)
            for bm, bn in ((32, 32), (64, 64), (256, 256))]
    k = _tune(transpose_kernel, cfgs, ["M", "N"])
    x = RNG.standard_normal((M, N)).astype(np.float32)
    y = np.zeros((N, M), np.float32)
    k[lambda meta: (-(-M // meta["BLOCK_M"]), -(-N // meta["BLOCK_N"]))](x, y, M, N)
    np.testing.assert_array_equal(y, x.T)
    st = {r.config.kwargs["BLOCK_M"]: r for r in k.history}
    assert st[256].status == "infeasible" and "shared memory" in st[256].reason
    assert st[32].status == "ok" and st[64].status == "ok"
    assert k.best_config.kwargs["BLOCK_M"] in (32, 64)


def test_online_softmax_with_a_column_loop_tunes_with_no_scorer():
    m, n = 16, 700
    cfgs = [Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 512) for w in (1, 4)]
    k = _tune(online_softmax_kernel, cfgs, ["N"])
    x = RNG.standard_normal((m, n)).astype(np.float32)
    y = np.zeros_like(x)
    k[(m,)](x, y, n, n)
    np.testing.assert_allclose(y, softmax_reference(x), rtol=1e-4, atol=1e-6)
    assert all(r.status == "ok" for r in k.history)
    t = {r.config: r.time_s for r in k.history}
    assert len(set(t.values())) > 1


@pytest.fixture
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTILE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_many_warps_cap_registers_per_thread_instead_of_refusing_the_config():
    """ptxas caps registers so one block fits the SM and spills the rest: a big block is
    launchable with any num_warps, slower than a block that needs no spills."""
    from autotile.measure import H200
    from autotile.tuner import LaunchConfig

    n = 1 << 20
    sc = RecordsScorer(gelu_kernel, H200)
    args = {"x_ptr": np.zeros(n, np.float32), "y_ptr": np.zeros(n, np.float32), "n": n}
    grid = lambda m: (-(-n // m["BLOCK"]),)  # noqa: E731
    big = [sc(LaunchConfig({"BLOCK": 65536}, num_warps=w), args, grid=grid) for w in (1, 16, 32)]
    assert [r.status for r in big] == ["ok", "ok", "ok"]
    fit = sc(LaunchConfig({"BLOCK": 1024}, num_warps=4), args, grid=grid)
    assert all(r.metrics["time_s"] > fit.metrics["time_s"] for r in big)


def test_a_spec_whose_grid_is_not_a_tuple_fails_naming_the_spec():
    import dataclasses

    from autotile.measure import H200, KernelModelMeasurer
    from examples.user_kernels import GELU_SPEC

    bad = dataclasses.replace(GELU_SPEC, grid=lambda s, meta: s["n"] // meta["BLOCK"])
    r = KernelModelMeasurer(bad, {"n": 4096}, H200).measure({"BLOCK": 1024, "num_warps": 4})
    assert r.status == "failed" and "spec 'gelu'" in r.error and "grid" in r.error
