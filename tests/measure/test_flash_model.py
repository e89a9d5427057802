"""The flash-attention GPU model (``"flash_attention_io"``): pipes in sequence, wgmma rows."""

from __future__ import annotations

import pytest

from autotile.measure import H200_MEASURED_L2, KernelModelMeasurer


def _times(shape: dict[str, int]) -> dict[tuple[int, int, int, int], float]:
    m = KernelModelMeasurer("flash_attention", shape, H200_MEASURED_L2, dtype="float16")
    out = {}
    for bm, bn, w, s in [(64, 64, 4, 2), (64, 64, 4, 3), (64, 128, 4, 3), (128, 64, 4, 3),
                         (128, 128, 4, 3), (128, 128, 8, 3)]:
        r = m._measure({"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s})
        assert r.ok, r.error
        out[bm, bn, w, s] = float(r.metrics["time_s"])
    return out


def test_flash_model_ranks_64_row_tiles_first_at_head_dim_64():
    # H200, 8 heads x N 16384 x d 64 (benchmarks/h200/data/autotune_kernels, in-sample):
    # 64 x 64, 4 warps, 3 stages measured best; 128-row tiles with 4 warps 1.5-1.7x slower
    t = _times({"N": 16384, "d": 64, "heads": 8})
    best = min(t, key=t.get)
    assert best == (64, 64, 4, 3)
    assert t[128, 64, 4, 3] / t[64, 64, 4, 3] == pytest.approx(2.0 * 1.5 / 1.25, rel=0.05)
    assert t[64, 64, 4, 2] > t[64, 64, 4, 3]  # one step ahead leaves load latency exposed


def test_flash_model_spills_instead_of_refusing():
    # 128 x 128 with 4 warps at d=128 needs more than 255 registers a thread: Triton
    # spills and the config runs (0.33 ms measured), so the model slows it, not refuses it
    m = KernelModelMeasurer("flash_attention", {"N": 2048, "d": 128, "heads": 24},
                            H200_MEASURED_L2, dtype="float16")
    r = m._measure({"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 4, "num_stages": 3})
    assert r.ok
    assert r.metrics["spill_factor"] > 1.5
