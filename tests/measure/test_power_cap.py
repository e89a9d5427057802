"""The power-cap term of the GPU time model (eq. 9) and its fit on the H200 energy probe."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from autotile.errors import MeasureError
from autotile.measure import H100_SXM, H200, GpuModelParams, KernelModelMeasurer
from autotile.measure.gpu._time_model import estimate_time

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "h200" / "data"
KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


def _est(params: GpuModelParams, hbm_bytes: float, flops: float = 1e10):
    hw = dataclasses.replace(H100_SXM, launch_overhead_s=1e-6)
    return estimate_time(hw, params, flops_per_program=flops, n_programs=132,
                         hbm_bytes=hbm_bytes, efficiency=1.0, blocks_per_sm=1, num_stages=4)


def test_power_cap_adds_seconds_per_byte_to_compute_bound_kernels() -> None:
    off = _est(GpuModelParams(overlap_decay=0.0), 1e9)
    assert off.power_s == 0.0
    b = 5e-14
    on = _est(GpuModelParams(overlap_decay=0.0, power_cap_s_per_byte=b), 1e9)
    assert off.bound == "compute" and on.compute_s == off.compute_s
    assert on.power_s == pytest.approx(off.compute_s + b * 1e9)
    assert on.time_s == pytest.approx(off.compute_s + b * 1e9 + 1e-6)
    # twice the bytes, twice the extra time
    on2 = _est(GpuModelParams(overlap_decay=0.0, power_cap_s_per_byte=b), 2e9)
    assert on2.time_s - off.compute_s - 1e-6 == pytest.approx(2 * b * 1e9)


def test_power_cap_leaves_memory_bound_kernels_on_the_memory_roof() -> None:
    # 1 MFLOP per program, 100 GB: memory_s ~ 30 ms >> compute + b * bytes
    p = GpuModelParams(overlap_decay=0.0, power_cap_s_per_byte=5e-14)
    on = _est(p, 1e11, flops=1e6)
    off = _est(GpuModelParams(overlap_decay=0.0), 1e11, flops=1e6)
    assert on.bound == "memory" and on.time_s == off.time_s


@pytest.mark.parametrize("bad", [-1e-14, math.inf, math.nan])
def test_power_cap_rejects_bad_values(bad: float) -> None:
    with pytest.raises(MeasureError, match="power_cap_s_per_byte must be finite and >= 0"):
        GpuModelParams(power_cap_s_per_byte=bad)


def test_power_cap_round_trips_through_json() -> None:
    p = GpuModelParams(power_cap_s_per_byte=4.8e-14)
    assert GpuModelParams(**p.to_json()) == p


# --- the committed H200 energy probe (benchmarks/RESULTS.md, "Energy probe") ----------
def _probe() -> tuple[dict[tuple[int, ...], float], dict[tuple[int, ...], float]]:
    with (DATA / "h200_power.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["kind"] == "triton"]
    t: dict[tuple[int, ...], list[float]] = {}
    for r in rows:
        t.setdefault(tuple(int(r[k]) for k in KNOBS), []).append(float(r["time_s"]))
    with (DATA / "h200_power_ncu.csv").open() as f:
        d = {tuple(int(r[k]) for k in KNOBS): float(r["dram_read_bytes"])
             + float(r["dram_write_bytes"]) for r in csv.DictReader(f)}
    return {k: float(np.mean(v)) for k, v in t.items()}, d


def _params(name: str) -> tuple[GpuModelParams, int]:
    with (DATA / name).open() as f:
        p = {r["name"]: r["value"] for r in csv.DictReader(f)}
    d = json.loads(p["params_json"])
    d["warp_efficiency"] = tuple(map(tuple, d["warp_efficiency"]))
    return GpuModelParams(**d), int(p["l2_bytes"])


@pytest.mark.skipif(not (DATA / "h200_power.csv").exists(), reason="H200 data not present")
def test_h200_probe_fit_gives_the_committed_v5_term_and_orders_the_held_out_tie() -> None:
    t, d = _probe()
    fit = [k for k in t if k[:3] == (256, 128, 64)]
    b = float(np.polyfit([d[k] for k in fit], [t[k] for k in fit], 1)[0])
    # 0.048 ms per GB; e_D = b x (688 - 257 W) = 21 pJ/B, under the copy kernel's 60 pJ/B
    assert 4.0e-14 < b < 5.5e-14
    p5, l2 = _params("h200_calibrated_params_v5.csv")
    p3, _ = _params("h200_calibrated_params_v3.csv")
    assert p5.power_cap_s_per_byte == pytest.approx(b, rel=1e-9)
    assert dataclasses.replace(p5, power_cap_s_per_byte=0.0) == p3
    # held out of the fit: the 14 configs v3 ties (128x256x64, 8 warps, 3-4 stages)
    tie = sorted(k for k in t if k[:3] == (128, 256, 64))
    assert len(tie) == 14
    hw = dataclasses.replace(H200, l2_bytes=l2)
    pred = {}
    for label, p in (("v3", p3), ("v5", p5)):
        m = KernelModelMeasurer("matmul", {"M": 8192, "N": 8192, "K": 8192}, hardware=hw,
                                params=p)
        pred[label] = np.array([m.measure(dict(zip(KNOBS, k))).metrics["time_s"]
                                for k in tie])
    assert np.ptp(pred["v3"]) < 1e-9 * pred["v3"].min()  # the tie
    meas = np.array([t[k] for k in tie])
    assert spearmanr(pred["v5"], meas).statistic >= 0.70  # RESULTS: 0.708
    # v5's best of the 14 is GROUP_M 16 (both stage counts): the fastest measured
    best = [tie[i] for i in np.flatnonzero(pred["v5"] <= pred["v5"].min() * (1 + 1e-12))]
    assert {k[3] for k in best} == {16}
    assert min(tie, key=t.__getitem__)[3] == 16


@pytest.mark.skipif(not (DATA / "h200_sim2real_rounds_call6.csv").exists(),
                    reason="H200 data not present")
def test_v5_optimum_measures_above_95_percent_of_cublas_in_the_confirmation_rounds() -> None:
    # call 6 timed v5's choices (committed first) against cuBLAS in 12 interleaved rounds
    with (DATA / "h200_sim2real_rounds_call6.csv").open() as f:
        rows = list(csv.DictReader(f))
    cub: dict[str, list[float]] = {}
    for r in rows:
        if r["label"] == "cuBLAS":
            cub.setdefault(r["round"], []).append(float(r["tflops"]))
    share: dict[tuple[int, ...], list[float]] = {}
    for r in rows:
        if r["label"] != "cuBLAS":
            share.setdefault(tuple(int(r[k]) for k in KNOBS), []).append(
                float(r["tflops"]) / float(np.mean(cub[r["round"]])))
    assert len(cub) == 12
    for gm_stages in ((16, 3), (16, 4)):  # v5 ranks 1 and 2
        k = (128, 256, 64, gm_stages[0], 8, gm_stages[1])
        assert np.median(share[k]) >= 0.95  # RESULTS: 98.3% both
    # and the 256x128x64 configs v5 puts 0.1% behind measure lower (RESULTS: 91-93%)
    assert np.median(share[(256, 128, 64, 8, 8, 4)]) < np.median(share[(128, 256, 64, 16, 8, 4)])


@pytest.mark.skipif(not (DATA / "h200_power2.csv").exists(), reason="H200 data not present")
def test_v5_orders_same_tile_group_m_variants_out_of_sample() -> None:
    # predictions committed (h200_power2_configs.csv) before the probe timed them; v3
    # ties every group, so any order it gets right comes from eq. 9
    with (DATA / "h200_power2_configs.csv").open() as f:
        cfg = list(csv.DictReader(f))
    p5, l2 = _params("h200_calibrated_params_v5.csv")
    m = KernelModelMeasurer("matmul", {"M": 8192, "N": 8192, "K": 8192},
                            hardware=dataclasses.replace(H200, l2_bytes=l2), params=p5)
    c0 = {k: int(cfg[0][k]) for k in KNOBS}
    # the committed predictions are what the current model gives
    assert m.measure(c0).metrics["time_s"] == pytest.approx(float(cfg[0]["v5_time_s"]),
                                                            rel=1e-9)
    with (DATA / "h200_power2.csv").open() as f:
        meas: dict[tuple[int, ...], list[float]] = {}
        for r in csv.DictReader(f):
            if r["kind"] == "triton":
                meas.setdefault(tuple(int(r[k]) for k in KNOBS), []).append(
                    float(r["time_s"]))
    ok = n = 0
    for lab in dict.fromkeys(c["label"] for c in cfg):
        g = [c for c in cfg if c["label"] == lab]
        for i, a in enumerate(g):
            for b in g[i + 1:]:
                dp = float(a["v5_time_s"]) - float(b["v5_time_s"])
                if abs(dp) > 1e-9 * float(a["v5_time_s"]):
                    ka, kb = (tuple(int(c[k]) for k in KNOBS) for c in (a, b))
                    n += 1
                    ok += dp * (np.mean(meas[ka]) - np.mean(meas[kb])) > 0
    assert n == 20 and ok >= 17  # RESULTS: 17 of 20


@pytest.mark.skipif(not (DATA / "h200_calibrated_params_v5.csv").exists(),
                    reason="H200 data not present")
def test_shipped_h200_fit_equals_the_committed_v5_calibration() -> None:
    from autotile.measure import H200_FITTED_PARAMS, H200_MEASURED_L2

    p5, l2 = _params("h200_calibrated_params_v5.csv")
    # v5 predates eq. 5e (the wave-tail clock), A's and B's address registers (eq. 2) and
    # the partial-wave term (eq. 5'), which the shipped fit keeps off
    assert H200_FITTED_PARAMS == dataclasses.replace(
        p5, clock_exponent=0.0, scalar_a_extra_regs=0.0, tail_rate_exponent=0.0,
        scalar_b_extra_regs=0.0)
    assert H200_FITTED_PARAMS.smem_bytes_per_s_per_sm == pytest.approx(178.937e9, rel=1e-5)
    assert H200_MEASURED_L2.l2_bytes == l2 == 62_914_560
    assert dataclasses.replace(H200_MEASURED_L2, name=H200.name, l2_bytes=H200.l2_bytes) == H200


def test_shipped_h200_fit_ranks_the_tutorial_config_above_a_small_tile() -> None:
    from autotile.measure import H200_FITTED_PARAMS, H200_MEASURED_L2

    m = KernelModelMeasurer("matmul", {"M": 8192, "N": 8192, "K": 8192},
                            hardware=H200_MEASURED_L2, params=H200_FITTED_PARAMS)
    best = m.measure(dict(zip(KNOBS, (128, 256, 64, 16, 8, 3)))).metrics
    small = m.measure(dict(zip(KNOBS, (64, 64, 32, 8, 4, 3)))).metrics
    # v5 predicts 628 TFLOP/s for its optimum (RESULTS.md, sim-to-real with v5)
    assert best["tflops"] == pytest.approx(628.0, abs=1.0)
    # a 64x64x32 tile: 2.14x the optimum's time in the model (not timed on the H200)
    assert small["time_s"] / best["time_s"] == pytest.approx(2.137, rel=1e-3)


def test_smooth_max_spans_max_to_sum() -> None:
    from autotile.measure.gpu._time_model import smooth_max

    assert smooth_max(3.0, 4.0, math.inf) == 4.0
    assert smooth_max(3.0, 4.0, 1.0) == pytest.approx(7.0)
    assert smooth_max(3.0, 4.0, 2.0) == pytest.approx(5.0)
    assert float(smooth_max(0.0, 0.0, 2.0)) == 0.0
    big = smooth_max(np.array([1e-3, 2e-3]), np.array([1e-3, 1e-6]), 64.0)
    np.testing.assert_allclose(big, [1e-3 * 2 ** (1 / 64), 2e-3], rtol=1e-12)


@pytest.mark.parametrize("bad", [0.5, 0.0, -1.0, math.nan])
def test_smem_overlap_norm_rejects_values_below_one(bad: float) -> None:
    with pytest.raises(MeasureError, match="smem_overlap_norm must be"):
        GpuModelParams(smem_overlap_norm=bad)
