"""The v2 and v3 ncu traffic plans (issue #13, "Traffic"): committed config lists and predictions.

``benchmarks/h200/data/ncu_traffic_v2_predictions.csv`` and ``..._v3_...`` were
written by ``benchmarks/h200/h200_traffic_v2.py --write-predictions`` and
``--write-predictions-v3`` before their device runs; these tests pin what the
issue asks of each list and that the device driver reads it.
"""

from __future__ import annotations

import csv

import pytest

from autotile.measure import KernelModelMeasurer
from autotile.measure.gpu import DRIFT, H200_MEASURED_L2

from ._traffic_plans import DATA, KNOBS, assert_driver_reads_plan, read_rows
from ._traffic_plans import load_bench as _load

PRED = DATA / "ncu_traffic_v2_predictions.csv"


@pytest.fixture(scope="module")
def plan_rows() -> list[dict[str, str]]:
    return read_rows(PRED)


def test_v2_list_meets_the_issue(plan_rows):
    shapes = {(int(r["M"]), int(r["N"]), int(r["K"])) for r in plan_rows}
    assert len(plan_rows) == 32 and len(shapes) == 4
    assert sum(int(r["GROUP_M"]) >= 8 for r in plan_rows) == 17
    assert {r["dtype"] for r in plan_rows} == {"float16", "bfloat16"}
    assert min(m for m, _, _ in shapes) <= 512  # small M
    assert any(any(v % 128 for v in s) for s in shapes)  # not multiples of 128
    old = set()
    for name in ("h200_ncu.csv", "h200_ncu_validation.csv", "h200_power_ncu.csv",
                 "h200_power2_ncu.csv", "h200_matmul.csv"):
        with (DATA / name).open(newline="") as f:
            old |= {(int(r["M"]), int(r["N"]), int(r["K"])) for r in csv.DictReader(f)}
    assert not shapes & old


def test_v2_predictions_are_the_models(plan_rows):
    # two rows re-predicted: the committed numbers are the model's (DRIFT on 60 MiB)
    for r in (plan_rows[0], plan_rows[-1]):
        shape = {"M": int(r["M"]), "N": int(r["N"]), "K": int(r["K"])}
        m = KernelModelMeasurer("matmul", shape, hardware=H200_MEASURED_L2, dtype=r["dtype"],
                                l2_model=DRIFT)
        res = m.measure({k: int(r[k]) for k in KNOBS})
        assert res.ok
        assert int(round(res.metrics["hbm_read_bytes"])) == int(r["pred_read_bytes_drift"])
        assert int(r["pred_read_bytes_drift"]) >= int(r["compulsory_read_bytes"]) * 0.99


def test_device_driver_reads_the_list_with_dtypes(plan_rows):
    ncu = _load("h200_ncu")
    plan = ncu.plan_from_csv(PRED)
    assert len(plan) == len(plan_rows)
    assert plan[0] == {"shape": [int(plan_rows[0]["M"]), int(plan_rows[0]["N"]),
                                 int(plan_rows[0]["K"])],
                       "dtype": plan_rows[0]["dtype"],
                       "config": {k: int(plan_rows[0][k]) for k in KNOBS}}
    # a list without a dtype column is fp16, as before
    old = ncu.plan_from_csv(DATA / "h200_ncu_validation_configs.csv")
    assert {p["dtype"] for p in old} == {"float16"} and len(old) == 30


def test_script_plan_is_the_committed_file(plan_rows):
    tv2 = _load("h200_traffic_v2")
    listed = [(s, c) for s, cfgs in tv2.V2_PLAN.items() for c in cfgs]
    got = [((int(r["M"]), int(r["N"]), int(r["K"]), r["dtype"]),
            tuple(int(r[k]) for k in KNOBS)) for r in plan_rows]
    assert got == listed


PRED_V3 = DATA / "ncu_traffic_v3_predictions.csv"


@pytest.fixture(scope="module")
def v3_rows() -> list[dict[str, str]]:
    return read_rows(PRED_V3)


def test_v3_list_meets_the_issue(v3_rows):
    shapes = {(int(r["M"]), int(r["N"]), int(r["K"])) for r in v3_rows}
    assert len(v3_rows) == 36 and len(shapes) == 4
    assert sum(int(r["GROUP_M"]) >= 8 for r in v3_rows) == 18
    assert {r["dtype"] for r in v3_rows} == {"float16", "bfloat16"}
    assert min(m for m, _, _ in shapes) <= 512  # small M
    assert max(k for _, _, k in shapes) >= 16384  # deep K
    assert any(any(v % 128 for v in s) for s in shapes)  # not multiples of 128
    old = set()
    for path in DATA.glob("*.csv"):  # files of this plan's run and of later plans excluded
        if path.name.startswith(("ncu_traffic_v3_", "ncu_traffic_v4_")):
            continue
        with path.open(newline="") as f:
            rd = csv.DictReader(f)
            if rd.fieldnames and {"M", "N", "K"} <= set(rd.fieldnames):
                old |= {(r["M"], r["N"], r["K"]) for r in rd}
    assert not {tuple(map(str, s)) for s in shapes} & old


def test_v3_predictions_are_the_models(v3_rows):
    tv2 = _load("h200_traffic_v2")
    for r in (v3_rows[0], v3_rows[-1]):
        shape = {"M": int(r["M"]), "N": int(r["N"]), "K": int(r["K"])}
        cfg = {k: int(r[k]) for k in KNOBS}
        m = KernelModelMeasurer("matmul", shape, hardware=H200_MEASURED_L2, dtype=r["dtype"],
                                l2_model=DRIFT)
        res = m.measure(cfg)
        assert res.ok
        assert int(round(res.metrics["hbm_read_bytes"])) == int(r["pred_read_bytes_drift"])
        warm = tv2.drift_warm_read_bytes((shape["M"], shape["N"], shape["K"]), cfg,
                                         int(res.metrics["blocks_per_sm"]),
                                         int(res.metrics["k_merge"]))
        assert int(round(warm)) == int(r["pred_read_bytes_drift_warm"])
    # 416 x 11008 x 4096, 32x64x64 GROUP_M 1 (4 per SM, 2.4 waves): warm stays near lockstep
    r = v3_rows[4]
    assert (int(r["M"]), int(r["BLOCK_M"]), int(r["BLOCK_N"]),
            int(r["GROUP_M"])) == (416, 32, 64, 1)
    assert int(r["pred_read_bytes_drift_warm"]) == int(r["pred_read_bytes_lockstep"])
    assert int(r["pred_read_bytes_drift"]) > 2.5 * int(r["pred_read_bytes_lockstep"])


def test_v3_device_driver_reads_the_list(v3_rows):
    assert_driver_reads_plan(PRED_V3, v3_rows, _load("h200_traffic_v2").V3_PLAN, 36)


def test_warm_stagger_reaches_drift():
    tv2 = _load("h200_traffic_v2")
    cfg = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
    # 8192^3, 2 per SM: 4096 programs / 264 slots x 128 steps >> 800: DRIFT's 0.5
    assert tv2.warm_stagger((8192, 8192, 8192), cfg, 2) == DRIFT.stagger
    # 512 x 1024 x 1024: 32 programs / 264 x 16 steps = 1.94 steps
    assert tv2.warm_stagger((512, 1024, 1024), cfg, 2) == pytest.approx(0.5 * (32 / 264 * 16) / 800)
