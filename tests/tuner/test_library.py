import numpy as np
import pytest

import autotile.lang as tl
from autotile.kernels import matmul_kernel
from autotile.measure import H100_SXM, H200, KernelModelMeasurer, matmul_space
from autotile.tuner import Config, KernelModelScorer, autotune

M, N, K = 128, 96, 64
GOOD = [Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 1}, num_warps=2,
               num_stages=3),
        Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2}, num_warps=2,
               num_stages=2)]
TOO_BIG = Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 1}, num_warps=8,
                 num_stages=5)


def grid(meta):
    return (tl.cdiv(meta["M"], meta["BLOCK_M"]) * tl.cdiv(meta["N"], meta["BLOCK_N"]),)


def _operands(dtype=np.float16):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    return a, b, np.zeros((M, N), dtype)


def _launch(kernel, a, b, c):
    kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, PID_ORDER="grouped")


def test_matmul_config_list_scored_by_the_model():
    k = autotune(configs=[*GOOD, TOO_BIG], key=["M", "N", "K"])(matmul_kernel)
    assert isinstance(k.scorer, KernelModelScorer) and k.hardware is H100_SXM
    a, b, c = _operands()
    _launch(k, a, b, c)
    big = k.history[2]
    assert big.status == "infeasible" and "smem" in big.reason
    ok = [r for r in k.history if r.status == "ok"]
    assert len(ok) == 2 and k.best_config == min(ok, key=lambda r: r.time_s).config
    # the score is the GPU model's time at the real shape
    ref = KernelModelMeasurer("matmul", {"M": M, "N": N, "K": K}).measure(
        {**k.best_config.kwargs, "num_warps": k.best_config.num_warps,
         "num_stages": k.best_config.num_stages})
    assert k.configs_timings[k.best_config] == pytest.approx(ref.metrics["time_s"])
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-2, atol=5e-2)


def test_matmul_space_form_random_searcher():
    k = autotune(key=["M", "N", "K"], space=lambda a: matmul_space(a["M"], a["N"], a["K"]),
                 searcher="random", budget=6, seed=0)(matmul_kernel)
    a, b, c = _operands()
    _launch(k, a, b, c)
    assert len(k.history) == 6 and len(k.study.trials) == 6
    ok = [r for r in k.history if r.status == "ok"]
    assert ok and k.best_config == min(ok, key=lambda r: r.time_s).config
    assert k.best_config.num_warps in (2, 4, 8)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-2, atol=5e-2)


def test_disk_cache_keyed_by_hardware(tmp_path):
    a, b, c = _operands()
    first = autotune(GOOD, key=["M", "N", "K"], cache_dir=tmp_path)(matmul_kernel)
    _launch(first, a, b, c)
    again = autotune(GOOD, key=["M", "N", "K"], cache_dir=tmp_path)(matmul_kernel)
    _launch(again, a, b, c)
    assert (first.cache_source, again.cache_source) == ("tuned", "disk")
    assert again.best_config == first.best_config and again.n_tuned == 0
    h200 = autotune(GOOD, key=["M", "N", "K"], cache_dir=tmp_path, hardware=H200)(matmul_kernel)
    _launch(h200, a, b, c)
    assert h200.cache_source == "tuned" and h200.hardware is H200
    assert len(list(tmp_path.glob("matmul_kernel-*.json"))) == 2


def test_scorer_needs_every_model_knob():
    res = KernelModelScorer("matmul")(Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}),
                                      {"M": M, "N": N, "K": K, "a_ptr": np.zeros(1, np.float16)})
    assert res.status == "infeasible" and "needs knob GROUP_M" in res.error


def test_softmax_model_and_default_small_instance():
    from autotile.kernels import softmax_kernel, softmax_reference

    k = autotune([Config({"BLOCK_SIZE": 128}, num_warps=w) for w in (1, 2, 8)],
                 key=["n_cols"], disk_cache=False)(softmax_kernel)
    x = np.random.default_rng(0).standard_normal((50, 100)).astype(np.float32)
    out = np.empty_like(x)
    k[lambda meta: (meta["input_ptr"].shape[0],)](out, x, 100, 100, 100)
    assert [r.status for r in k.history] == ["ok", "ok", "infeasible"]
    assert "threads_le_elems" in k.history[2].reason  # 256 threads for 128 elements
    np.testing.assert_allclose(out, softmax_reference(x), rtol=1e-5, atol=1e-6)
