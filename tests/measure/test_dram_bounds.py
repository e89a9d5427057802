"""Where the committed H200 ncu DRAM bytes lie between the L2 simulator's bounds
(``benchmarks/h200/h200_dram_bounds.py``; issue #6, "why DRIFT misses")."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

import numpy as np
import pytest

from autotile.measure.gpu._calibrate import traffic_accuracy

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "h200" / "h200_dram_bounds.py"


@pytest.fixture(scope="module")
def bounds():
    spec = importlib.util.spec_from_file_location("h200_dram_bounds", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("h200_dram_bounds", mod)  # dataclasses look the module up
    spec.loader.exec_module(mod)
    l2 = mod.device_l2_bytes()
    launches = mod.load_launches()
    mod.compute_bounds(launches, l2)
    with contextlib.redirect_stdout(io.StringIO()):
        summ = mod.summary(launches)
        rho = mod.correlations(launches)
    return mod, l2, launches, summ, rho


def _by_label(launches, label):
    return next(ln for ln in launches if ln.label == label)


def test_launch_counts_and_drift_misses(bounds):
    _, _, launches, summ, _ = bounds
    assert sum(ln.set == "fit" for ln in launches) == 35
    assert sum(ln.set == "val" for ln in launches) == 30
    # every DRIFT under-prediction is bracketed by lockstep and full desync ...
    assert summ["under"] == dict(n=14, between=14, desync10=3, above=0, below=0)
    # ... but 4 over-predictions lie below both (no amount of drift explains them)
    assert summ["over"] == dict(n=9, between=5, desync10=4, above=0, below=4)
    assert summ["cliff"] == dict(misses=8, n_misses=23, hits=10, n_hits=42)


def test_bounds_of_three_misses(bounds):
    _, _, launches, _, _ = bounds
    ln = _by_label(launches, "8192x8192x8192 16 256 64 1 8 2")  # DRIFT/ncu 0.30
    bd = ln.bounds
    assert bd["compulsory"] == 268_435_456
    assert bd["no reuse"] == 73_014_444_032
    assert bd["lockstep"] == pytest.approx(5_696_254_606, rel=1e-6)
    assert bd["desync"] == pytest.approx(66_817_643_729, rel=1e-6)
    assert (ln.ncu - bd["lockstep"]) / (bd["desync"] - bd["lockstep"]) == \
        pytest.approx(0.82, abs=0.01)
    ln = _by_label(launches, "8192x8192x8192 128 256 64 1 8 4")  # DRIFT/ncu 0.74
    bd = ln.bounds
    assert bd["lockstep"] == bd["DRIFT"] == pytest.approx(2_311_061_504, rel=1e-9)
    assert bd["desync"] == pytest.approx(8_653_619_200, rel=1e-6)
    assert (ln.ncu - bd["lockstep"]) / (bd["desync"] - bd["lockstep"]) == \
        pytest.approx(0.13, abs=0.01)
    ln = _by_label(launches, "8192x8192x2048 32 64 64 4 2 3")  # DRIFT/ncu 1.52
    bd = ln.bounds
    # ncu (935 MB) lies between one undivided L2 and two partitions: capacity, not timing
    assert bd["lockstep 1 part."] == pytest.approx(312_361_258, rel=1e-6)
    assert bd["lockstep 1 part."] < ln.ncu < 0.9 * min(bd["lockstep"], bd["desync"])


def test_drift_amount_does_not_follow_waves_or_memory_boundness(bounds):
    _, _, _, _, rho = bounds
    assert rho["waves"] == pytest.approx(0.117, abs=0.005)
    # 0.045 with the time model of commit 43d496a; only its size is pinned (the ratio
    # comes from the time model, which is refitted elsewhere)
    assert abs(rho["memory_s / compute_s (DRIFT)"]) < 0.2
    assert rho["min(BLOCK_M, BLOCK_N)"] == pytest.approx(-0.349, abs=0.005)


def test_global_stagger_fit_ties_drift_out_of_sample(bounds):
    mod, l2, launches, _, _ = bounds
    cap = l2 // mod.PARTITIONS
    pred = np.array([mod.global_stagger_read_bytes(ln, cap, 0.3) for ln in launches])
    ncu = np.array([ln.ncu for ln in launches])
    val = np.array([ln.set == "val" for ln in launches])
    held = traffic_accuracy(pred[val], ncu[val])
    fit = traffic_accuracy(pred[~val], ncu[~val])
    assert round(held["within_10"] * 30) == 19  # DRIFT: 19
    assert round(held["within_25"] * 30) == 25  # DRIFT: 24
    assert round(fit["within_10"] * 35) == 22  # DRIFT: 23
