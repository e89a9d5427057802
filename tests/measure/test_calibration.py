"""Calibration of the GPU time model: synthetic recovery, agreement with the measurer,
and the held-out accuracy on the committed H200 measurements (CPU only)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from autotile.errors import MeasureError
from autotile.measure import H200, GpuModelParams, KernelModelMeasurer, matmul_space
from autotile.measure.gpu._calibrate import (
    DEFAULT_FIT,
    MatmulObservations,
    calibrate_matmul,
    fit_gpu_model,
    matmul_observations_from_csv,
    predict_matmul_time,
    rank_accuracy,
)
from autotile.measure.gpu._time_model import SMEM_PORT_BYTES_PER_S_PER_SM

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "h200" / "data"
# the calibration versions' recipes are history, kept with the benchmarks
from benchmarks.h200.h200_fit_versions import (  # noqa: E402
    PIPELINE_FIT,
    PIPELINE_STARTS,
    POWER_FIT,
    POWER_STARTS,
    SMEM_FIT,
    SMEM_OVERLAP_NORM_H200,
    SMEM_STARTS,
)

TRUE = GpuModelParams(peak_efficiency=0.95, tile_overhead_elems=40.0, k_overhead_elems=20.0,
                      warp_efficiency=((2, 0.25), (4, 0.7), (8, 0.9)),
                      mma_fallback_efficiency=0.35, bandwidth_efficiency=0.8,
                      overlap_decay=0.5)
#: TRUE with the software-pipeline term on (eq. 5b)
PIPED = dataclasses.replace(TRUE, pipeline_latency_s=0.8e-6, sm_load_bytes_per_s=70e9)
#: PIPED with the shared-memory port term on (eq. 5c)
PORTED = dataclasses.replace(PIPED, smem_bytes_per_s_per_sm=180e9)
#: PORTED with the power-cap term on (eq. 9)
CAPPED = dataclasses.replace(PORTED, power_cap_s_per_byte=5e-14)
#: CAPPED with the smooth port/tensor maximum (eq. 5c', q = 2)
SMOOTH = dataclasses.replace(CAPPED, smem_overlap_norm=2.0)


def _obs_from_model(shape: tuple[int, int, int], configs: list[dict[str, int]],
                    params: GpuModelParams) -> tuple[MatmulObservations, np.ndarray]:
    m = KernelModelMeasurer("matmul", dict(zip("MNK", shape)), hardware=H200, params=params)
    cols: dict[str, list[float]] = {k: [] for k in (
        "block_m", "block_n", "block_k", "num_warps", "num_stages", "blocks_per_sm",
        "hbm_read_bytes", "hbm_write_bytes", "time_s")}
    times = []
    for c in configs:
        r = m.measure(c)
        if not r.ok:
            continue
        for k, knob in (("block_m", "BLOCK_M"), ("block_n", "BLOCK_N"),
                        ("block_k", "BLOCK_K"), ("num_warps", "num_warps"),
                        ("num_stages", "num_stages")):
            cols[k].append(c[knob])
        cols["blocks_per_sm"].append(r.metrics["blocks_per_sm"])
        cols["hbm_read_bytes"].append(r.metrics["hbm_read_bytes"])
        cols["hbm_write_bytes"].append(r.metrics["hbm_bytes"] - r.metrics["hbm_read_bytes"])
        cols["time_s"].append(r.metrics["time_s"])
        times.append(r.metrics["time_s"])
    n = len(times)
    obs = MatmulObservations(M=np.full(n, shape[0]), N=np.full(n, shape[1]),
                             K=np.full(n, shape[2]), **{k: np.array(v) for k, v in cols.items()})
    return obs, np.array(times)


def test_vectorised_time_equals_the_kernel_measurer() -> None:
    cfgs = [dict(c) for c in matmul_space(512, 512, 512).sample(3, 25)]
    for params in (GpuModelParams(), TRUE, PIPED, PORTED, CAPPED, SMOOTH):
        obs, t = _obs_from_model((512, 512, 512), cfgs, params)
        assert len(obs) >= 15
        np.testing.assert_allclose(predict_matmul_time(obs, params, H200), t, rtol=1e-12)


def test_vectorised_time_equals_the_kernel_measurer_on_partial_waves_and_scalar_tiles() -> None:
    # 1700 x 2800 x 2400: launches that leave a partial wave after full waves (eq. 5',
    # on by default); 1000 x 1000 x 1000 and 2000 x 2048 x 1000: tiles Triton loads with
    # scalar loads (eq. 5d: A weighs scalar_a_weight, the chains run in waves). Before
    # session 11's fix the vectorised time was 29 % and 97 % off the measurer's there.
    n_tail = 0
    for shape in ((1700, 2800, 2400), (1000, 1000, 1000), (2000, 2048, 1000)):
        cfgs = [dict(c) for c in matmul_space(*shape).sample(3, 25)]
        for params in (GpuModelParams(), CAPPED):
            obs, t = _obs_from_model(shape, cfgs, params)
            assert len(obs) >= 15
            np.testing.assert_allclose(predict_matmul_time(obs, params, H200), t, rtol=1e-12)
        n_prog = np.ceil(obs.M / obs.block_m) * np.ceil(obs.N / obs.block_n)
        full, rest = np.divmod(n_prog, H200.n_sms * obs.blocks_per_sm)
        n_tail += int(np.sum((full >= 1) & (np.ceil(rest / H200.n_sms) > 0)
                             & (np.ceil(rest / H200.n_sms) < obs.blocks_per_sm)))
    assert n_tail >= 5  # the partial-wave term is exercised
    # with the term off the two sides still agree, and the term lengthens some launches
    no_tail = GpuModelParams(tail_rate_exponent=0.0)
    cfgs = [dict(c) for c in matmul_space(1700, 2800, 2400).sample(3, 25)]
    obs, t = _obs_from_model((1700, 2800, 2400), cfgs, no_tail)
    off = predict_matmul_time(obs, no_tail, H200)
    np.testing.assert_allclose(off, t, rtol=1e-12)
    assert np.any(predict_matmul_time(obs, GpuModelParams(), H200) > off * 1.05)


def _synthetic(n: int, seed: int) -> MatmulObservations:
    """Random configs at three shapes with plausible traffic; times from TRUE + 5% noise."""
    rng = np.random.default_rng(seed)
    space = matmul_space(8192, 8192, 8192)
    cfgs = [dict(c) for c in space.sample(seed, n)]
    shapes = [(8192, 8192, 8192), (4096, 4096, 4096), (8192, 8192, 2048)]
    rows = []
    for i, c in enumerate(cfgs):
        M, N, K = shapes[i % 3]
        comp = 2.0 * (M * K + K * N)
        read = comp * (1 + 8 * 128 / min(c["BLOCK_M"], c["BLOCK_N"]) * rng.uniform(0.2, 1))
        rows.append((M, N, K, c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["num_warps"],
                     c["num_stages"], int(rng.integers(1, 4)), read, 2.0 * M * N, 1.0))
    a = np.array(rows, np.float64).T
    obs = MatmulObservations(*a, groups=tuple(str(i) for i in range(n)))
    t = predict_matmul_time(obs, TRUE, H200) * np.exp(rng.normal(0.0, 0.05, n))
    return dataclasses.replace(obs, time_s=t)


def test_calibration_recovers_synthetic_parameters_and_improves_held_out_accuracy() -> None:
    obs = _synthetic(240, seed=1)
    rep = calibrate_matmul(obs, H200, test_fraction=0.3, seed=0)
    assert len(rep.test_index) == 72 and len(rep.train_index) == 168
    assert not set(rep.test_index) & set(rep.train_index)
    # 5% multiplicative noise: held-out error near 4% (median |N(0, .05)|) after the fit
    assert rep.after["median_abs_rel_error"] < 0.08
    assert rep.after["spearman"] > 0.95
    assert rep.after["median_abs_rel_error"] < rep.before["median_abs_rel_error"]
    assert rep.after["spearman"] >= rep.before["spearman"]
    # the well-determined parameters come back
    assert rep.params.peak_efficiency * rep.params.warp_factor(8) == pytest.approx(
        TRUE.peak_efficiency * TRUE.warp_factor(8), rel=0.1)
    assert rep.params.warp_factor(2) / rep.params.warp_factor(8) == pytest.approx(
        TRUE.warp_factor(2) / TRUE.warp_factor(8), rel=0.15)


def test_fit_rejects_bad_input() -> None:
    obs = _synthetic(12, seed=2)
    with pytest.raises(MeasureError, match="as many observations as fitted parameters"):
        fit_gpu_model(obs.subset(np.arange(5)), H200)
    with pytest.raises(MeasureError, match="cannot fit 'launch_overhead_s'"):
        fit_gpu_model(obs, H200, fit=("launch_overhead_s",))
    with pytest.raises(MeasureError, match="a start may only set fitted parameters"):
        fit_gpu_model(obs, H200, starts=({"pipeline_latency_s": 1e-6},))
    with pytest.raises(MeasureError, match="test_fraction must be in"):
        calibrate_matmul(obs, H200, test_fraction=1.0)
    with pytest.raises(MeasureError, match="one length"):
        MatmulObservations(*([np.ones(3)] * 11), np.ones(2))
    with pytest.raises(MeasureError, match="time_s must be > 0"):
        MatmulObservations(*([np.ones(3)] * 11), np.zeros(3))


def test_rank_accuracy_numbers() -> None:
    acc = rank_accuracy([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0])
    assert acc["spearman"] == pytest.approx(1.0) and acc["kendall"] == pytest.approx(1.0)
    assert acc["median_abs_rel_error"] == pytest.approx(0.5)
    assert acc["geo_mean_ratio"] == pytest.approx(0.5)
    assert rank_accuracy([4.0, 3.0, 2.0, 1.0], [1.0, 2.0, 3.0, 4.0])["spearman"] == \
        pytest.approx(-1.0)


# ------------------------------------------------------------------ the committed H200 data
# Figures reported in benchmarks/RESULTS.md ("Real hardware: H200 validation"), held-out
# configs (seed 0, 30%), all three shapes pooled; the test allows a small margin.
REPORTED_HELD_OUT_SPEARMAN_AFTER = 0.962  # pooled over the three shapes (111 configs)
REPORTED_HELD_OUT_SPEARMAN_8192 = 0.911  # 8192^3 alone (38 configs)
REPORTED_HELD_OUT_MEDIAN_ERR_AFTER = 0.223
MARGIN = 0.02


@pytest.mark.skipif(not (DATA / "h200_matmul_model.csv").exists(),
                    reason="H200 data not present")
def test_calibrated_model_keeps_its_reported_held_out_accuracy_on_h200_data() -> None:
    obs = matmul_observations_from_csv(DATA / "h200_matmul.csv",
                                       DATA / "h200_matmul_model.csv", l2_bytes=62_914_560)
    assert len(obs) >= 300
    hw = dataclasses.replace(H200, l2_bytes=62_914_560)
    # the reported figures predate session 13's port clock and c_mn (after v7)
    before_v7 = GpuModelParams(smem_bytes_per_s_per_sm=SMEM_PORT_BYTES_PER_S_PER_SM,
                               tile_overhead_elems=16.0)
    rep = calibrate_matmul(obs, hw, before_v7, test_fraction=0.3, seed=0)
    assert rep.after["spearman"] >= REPORTED_HELD_OUT_SPEARMAN_AFTER - MARGIN
    assert rep.after["median_abs_rel_error"] <= REPORTED_HELD_OUT_MEDIAN_ERR_AFTER + MARGIN
    assert rep.after["spearman"] > rep.before["spearman"]
    assert rep.after["median_abs_rel_error"] < rep.before["median_abs_rel_error"]
    te = obs.subset(np.array(rep.test_index))
    at = (te.M == 8192) & (te.N == 8192) & (te.K == 8192)
    acc = rank_accuracy(predict_matmul_time(te, rep.params, hw)[at], te.time_s[at])
    assert acc["n"] == 38
    assert acc["spearman"] >= REPORTED_HELD_OUT_SPEARMAN_8192 - MARGIN
    assert set(DEFAULT_FIT) >= {"peak_efficiency", "bandwidth_efficiency"}


# The same protocol with the software-pipeline term (eq. 5b, PIPELINE_FIT from
# PIPELINE_STARTS): held-out rank correlation is a little lower (ties among configs
# whose operand feed is L2-bandwidth bound), the error much lower. RESULTS.md reports both.
REPORTED_PIPELINE_SPEARMAN = 0.954  # pooled, 111 held-out configs
REPORTED_PIPELINE_SPEARMAN_8192 = 0.875
REPORTED_PIPELINE_MEDIAN_ERR = 0.117


def _held_out_on_h200(fit: tuple[str, ...], starts: Any, spearman: float,
                      spearman_8192: float, median_err: float,
                      params0: GpuModelParams | None = None) -> tuple[Any, Any]:
    """Calibrate with the RESULTS.md protocol (70/30, seed 0, 60 MiB L2); check the figures."""
    obs = matmul_observations_from_csv(DATA / "h200_matmul.csv",
                                       DATA / "h200_matmul_model.csv", l2_bytes=62_914_560)
    hw = dataclasses.replace(H200, l2_bytes=62_914_560)
    if params0 is None:
        # the reported fits predate the partial-wave term (eq. 5'), which the vectorised
        # time left out until session 11 whatever its parameter said
        params0 = GpuModelParams(tail_rate_exponent=0.0,
                                 smem_bytes_per_s_per_sm=SMEM_PORT_BYTES_PER_S_PER_SM,
                                 tile_overhead_elems=16.0)  # and session 13's after v7
    rep = calibrate_matmul(obs, hw, params0, test_fraction=0.3, seed=0, fit=fit,
                           starts=starts)
    assert rep.after["spearman"] >= spearman - MARGIN
    assert rep.after["median_abs_rel_error"] <= median_err + MARGIN
    te = obs.subset(np.array(rep.test_index))
    at = (te.M == 8192) & (te.N == 8192) & (te.K == 8192)
    acc = rank_accuracy(predict_matmul_time(te, rep.params, hw)[at], te.time_s[at])
    assert acc["spearman"] >= spearman_8192 - MARGIN
    return rep, hw


@pytest.mark.skipif(not (DATA / "h200_matmul_model.csv").exists(),
                    reason="H200 data not present")
def test_pipeline_term_keeps_its_reported_held_out_accuracy_on_h200_data() -> None:
    rep, _ = _held_out_on_h200(PIPELINE_FIT, PIPELINE_STARTS, REPORTED_PIPELINE_SPEARMAN,
                               REPORTED_PIPELINE_SPEARMAN_8192, REPORTED_PIPELINE_MEDIAN_ERR)
    # the fitted feed: ~0.8 us loaded latency, ~67 GB/s per SM (~8.8 TB/s over 132 SMs)
    assert 0.5e-6 < rep.params.pipeline_latency_s < 1.2e-6
    assert 50e9 < rep.params.sm_load_bytes_per_s < 90e9


# The same protocol with the shared-memory port term too (eq. 5c, SMEM_FIT from
# SMEM_STARTS, "v3"): rank correlation up at every shape, pooled median error
# 0.7 points above the pipeline-term fit. RESULTS.md reports both.
REPORTED_SMEM_SPEARMAN = 0.961  # pooled, 111 held-out configs
REPORTED_SMEM_SPEARMAN_8192 = 0.880
REPORTED_SMEM_MEDIAN_ERR = 0.124


@pytest.mark.skipif(not (DATA / "h200_matmul_model.csv").exists(),
                    reason="H200 data not present")
def test_smem_port_term_keeps_its_reported_held_out_accuracy_on_h200_data() -> None:
    rep, hw = _held_out_on_h200(SMEM_FIT, SMEM_STARTS, REPORTED_SMEM_SPEARMAN,
                                REPORTED_SMEM_SPEARMAN_8192, REPORTED_SMEM_MEDIAN_ERR)
    # the fitted port: ~178 GB/s per SM, 97 B/clk at 1.83 GHz (the port is 128 B/clk)
    assert 150e9 < rep.params.smem_bytes_per_s_per_sm < 200e9
    # it separates the orientations: 256x128x64 (m64n128 wgmma) above 128x256x64
    te2 = MatmulObservations(*(np.array([a, b], np.float64) for a, b in zip(
        (8192, 8192, 8192, 128, 256, 64, 8, 4, 1, 1e9, 1.3e8, 1.0),
        (8192, 8192, 8192, 256, 128, 64, 8, 4, 1, 1e9, 1.3e8, 1.0))))
    t = predict_matmul_time(te2, rep.params, hw)
    assert t[1] > 1.015 * t[0]  # 2.0% with the held-out split fit


# The same protocol with the power-cap term fitted jointly (eq. 9, POWER_FIT, "v6"):
# timings alone put b near the energy probe's 4.8e-14 s/B. RESULTS.md reports both.
REPORTED_POWER_SPEARMAN = 0.960  # pooled, 111 held-out configs
REPORTED_POWER_SPEARMAN_8192 = 0.878
REPORTED_POWER_MEDIAN_ERR = 0.123


@pytest.mark.skipif(not (DATA / "h200_matmul_model.csv").exists(),
                    reason="H200 data not present")
def test_power_cap_term_fitted_on_timings_agrees_with_the_energy_probe() -> None:
    rep, _ = _held_out_on_h200(POWER_FIT, POWER_STARTS, REPORTED_POWER_SPEARMAN,
                               REPORTED_POWER_SPEARMAN_8192, REPORTED_POWER_MEDIAN_ERR)
    # 6.5e-14 s/B on the split (probe 4.8e-14 on another tile, held-out tie slope 6.6e-14)
    assert 4e-14 < rep.params.power_cap_s_per_byte < 9e-14


# The same protocol with eq. 5c' (port and tensor time as a smooth maximum of norm
# q = 2, chosen by training cost), "v7": RESULTS.md reports it.
REPORTED_SMOOTH_SPEARMAN = 0.967  # pooled, 111 held-out configs
REPORTED_SMOOTH_SPEARMAN_8192 = 0.902
REPORTED_SMOOTH_MEDIAN_ERR = 0.120


@pytest.mark.skipif(not (DATA / "h200_matmul_model.csv").exists(),
                    reason="H200 data not present")
def test_smooth_port_maximum_keeps_its_reported_held_out_accuracy_on_h200_data() -> None:
    base = dataclasses.replace(GpuModelParams(), smem_overlap_norm=SMEM_OVERLAP_NORM_H200,
                               tail_rate_exponent=0.0)  # the reported fit predates eq. 5'
    rep, hw = _held_out_on_h200(POWER_FIT, POWER_STARTS, REPORTED_SMOOTH_SPEARMAN,
                                REPORTED_SMOOTH_SPEARMAN_8192, REPORTED_SMOOTH_MEDIAN_ERR,
                                params0=base)
    assert rep.params.smem_overlap_norm == 2.0
    # held out of every fit: the energy probe's 256x128x64 / 128x256x64 pair (same
    # bytes, same clock) measured 1.060; the model gives 1.056 (v6, q = inf: 0.999)
    pair = MatmulObservations(*(np.array(v, np.float64) for v in zip(
        (8192, 8192, 8192, 128, 256, 64, 8, 4, 1, 1.5e9, 0.0, 1.0),
        (8192, 8192, 8192, 256, 128, 64, 8, 4, 1, 1.5e9, 0.0, 1.0))))
    t = predict_matmul_time(pair, rep.params, hw)
    assert t[1] / t[0] == pytest.approx(1.06, abs=0.01)
