import pytest

from autotile.errors import InvalidConfigError
from autotile.kernels import io_flash, onchip_flash_bytes
from autotile.kernels._spaces import (
    flash_attention_space,
    matmul_space,
    persistent_matmul_space,
    softmax_space,
)
from autotile.measure import flash_attention_study  # moved to autotile.search; old name
from autotile.measure.gpu import (
    KERNEL_MODEL_METRICS,
    KernelModelMeasurer,
    flash_attention_objectives,
    flash_attention_pareto,
)

MIB = 2**20


def test_space_sizes():
    s = matmul_space(8192, 8192, 8192)
    assert (len(s), s.product_size) == (7091, 8400)
    assert s.names == ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
    assert "smem_fits" in [c.name for c in s.constraints]
    assert len(persistent_matmul_space(8192, 8192, 8192)) == 5 * 7091
    # 5 BLOCK_M x 4 BLOCK_N x 3 warps x 4 stages, less BLOCK_M=256 with BLOCK_N=128
    # (on-chip 4 * 256 * (128 + 128) B > 228 KiB); BLOCK_N need not divide BLOCK_M
    assert len(flash_attention_space(4096, 128)) == 240 - 12
    assert len(softmax_space(4096, 1000)) == 30
    with pytest.raises(InvalidConfigError, match="M must be a positive int"):
        matmul_space(0, 1, 1)
    with pytest.raises(InvalidConfigError, match="dtype must be one of"):
        matmul_space(64, 64, 64, "int8")


def test_seed_flash_block_m_tradeoff():
    lo = flash_attention_objectives(4096, 128, 32, 32)
    hi = flash_attention_objectives(4096, 128, 256, 64)
    assert round(lo[0] / MIB) == 258 and round(hi[0] / MIB) == 34
    assert (lo[1], hi[1]) == (20 * 1024, 192 * 1024) == (onchip_flash_bytes(32, 128),
                                                         onchip_flash_bytes(256, 128))
    assert (lo[2], hi[2]) == (128, 16)


def test_flash_pareto_front_and_study():
    front = flash_attention_pareto(4096, 128)
    assert [(p["BLOCK_M"], p["BLOCK_N"]) for p in front] == [
        (16, 16), (32, 16), (64, 16), (128, 16), (256, 16)]
    assert front[-1]["hbm_bytes"] == io_flash(4096, 128, 256, 2)
    study = flash_attention_study(1024, 64, n_trials=24, seed=0)
    found = {(t.params["BLOCK_M"], t.params["BLOCK_N"]) for t in study.best_trials}
    exact = {(p["BLOCK_M"], p["BLOCK_N"]) for p in flash_attention_pareto(1024, 64)}
    assert found & exact  # NSGA-II reaches part of the exact front in 24 trials


def test_measurer_matmul_8192():
    m = KernelModelMeasurer("matmul", {"M": 8192, "N": 8192, "K": 8192})
    r = m.measure(dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8,
                       num_stages=3))
    assert r.ok and set(r.metrics) == set(KERNEL_MODEL_METRICS)
    assert r.metrics["blocks_per_sm"] == 2 and r.metrics["k_merge"] == 1
    assert r.metrics["hbm_bytes"] == r.metrics["hbm_read_bytes"] + 8192**2 * 2
    assert 0 < r.metrics["tflops"] < 989.4 and r.metrics["bound"] in (0.0, 1.0)
    bad = m.measure(dict(BLOCK_M=256, BLOCK_N=256, BLOCK_K=32, GROUP_M=8, num_warps=4,
                         num_stages=2))
    assert bad.status == "infeasible" and "registers per thread 552 > " in bad.error
    bad = m.measure(dict(BLOCK_M=256, BLOCK_N=256, BLOCK_K=128, GROUP_M=8, num_warps=8,
                         num_stages=5))
    assert bad.status == "infeasible" and "smem_fits" in bad.error
    assert m.measure(dict(BLOCK_M=128)).status == "infeasible"


def test_measurer_other_kernels():
    f = KernelModelMeasurer("flash_attention", {"N": 4096, "d": 128})
    r = f.measure(dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=2))
    # K and V (2 MiB) stay in L2: Q, K, V and O cross HBM once, plus the fp32 statistic
    assert r.ok and r.metrics["hbm_bytes"] == 4 * 4096 * 128 * 2 + 4 * 4096
    # at N = 65536 they are 32 MiB, past the H100's 25 MiB reuse share: Dao et al.'s count
    f = KernelModelMeasurer("flash_attention", {"N": 65536, "d": 128})
    r = f.measure(dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=2))
    assert r.ok and r.metrics["hbm_bytes"] == io_flash(65536, 128, 128, 2)
    s = KernelModelMeasurer("softmax_fused", {"M": 4096, "N": 1000}, dtype="float32")
    r = s.measure(dict(num_warps=4, ROWS_PER_PROGRAM=1))
    assert r.ok and r.metrics["bound"] == 1.0
    p = KernelModelMeasurer("matmul_persistent", {"M": 1024, "N": 1024, "K": 1024})
    r = p.measure(dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8,
                       num_stages=3, NUM_SMS=66))
    assert r.ok and r.metrics["n_waves"] == 1
    with pytest.raises(Exception, match="one of the registered kernels"):
        KernelModelMeasurer("nope", {})


@pytest.mark.parametrize("kernel, shape", [
    ("matmul", {"M": 64, "N": 64, "K": 64, "Q": 3}),
    ("softmax_fused", {"M": 64, "N": 64, "K": 64}),
    ("flash_attention", {"N": 256, "d": 64, "M": 1}),
])
def test_unknown_shape_keys_are_refused(kernel, shape):
    from autotile.errors import MeasureError

    with pytest.raises(MeasureError, match=r"takes the keys .* got unknown"):
        KernelModelMeasurer(kernel, shape)


def test_model_measurer_scores_group_m_above_the_tile_rows_as_its_equivalent():
    # tutorial 03's GROUP_M=8 at M=256 with BLOCK_M=128 (2 tile rows) launches the same
    # column-major order as GROUP_M=2; it is scored, under its own name, not refused
    m = KernelModelMeasurer("matmul", {"M": 256, "N": 4096, "K": 4096})
    cfg = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3)
    r8, r2 = m.measure(cfg), m.measure(dict(cfg, GROUP_M=2))
    assert r8.ok and r2.ok
    assert r8.config == str(cfg)
    assert r8.metrics == r2.metrics
    r4 = m.measure(dict(cfg, GROUP_M=4))
    assert r4.metrics == r2.metrics
    # a GROUP_M below the tile rows is still checked as written
    big = KernelModelMeasurer("matmul", {"M": 2048, "N": 4096, "K": 4096})
    assert big.measure(cfg).ok
    assert big.measure(dict(cfg, GROUP_M=3)).status == "infeasible"
