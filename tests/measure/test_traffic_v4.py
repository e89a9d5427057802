"""DRIFT_WARM (``L2Model.warm_steps``) and the v4 ncu traffic plan (issue #13, "Traffic").

``benchmarks/h200/data/ncu_traffic_v4_predictions.csv`` was written by
``benchmarks/h200/h200_traffic_v4.py --write-predictions-v4`` before its device run;
these tests pin what the issue asks of the list, that its predictions are the
library's models and that the device driver reads it.
"""

from __future__ import annotations

import csv

import pytest

from autotile.errors import MeasureError
from autotile.measure import KernelModelMeasurer
from autotile.measure.gpu import DRIFT, DRIFT_WARM, H200_MEASURED_L2, L2Model
from autotile.measure.gpu._l2sim import simulate_l2
from autotile.measure.gpu._matmul_schedule import matmul_tile_schedule

from ._traffic_plans import DATA, KNOBS, assert_driver_reads_plan, read_rows
from ._traffic_plans import load_bench as _load

PRED_V4 = DATA / "ncu_traffic_v4_predictions.csv"


@pytest.fixture(scope="module")
def v4_rows() -> list[dict[str, str]]:
    return read_rows(PRED_V4)


def test_warm_steps_scales_the_stagger():
    assert DRIFT_WARM == L2Model(stagger=0.5, partitions=2, warm_steps=800.0)
    assert DRIFT_WARM.launch_stagger(2.0, 100.0) == pytest.approx(0.5 * 200 / 800)
    assert DRIFT_WARM.launch_stagger(10.0, 128.0) == 0.5
    assert DRIFT.launch_stagger(0.1, 1.0) == 0.5  # warm_steps 0: the stagger from the start
    # 1024^2 x 512, 64x64x32 GROUP_M 2, 3 SMs x 2: 256 programs / 6 slots x 16 steps
    # = 682.7 steps: stagger 0.5 x 682.7 / 800, replayed as that constant stagger
    sched, n = matmul_tile_schedule(1024, 1024, 512, 64, 64, 32, 2)
    kw = {"l2_bytes": 200_000, "n_concurrent": 6, "total_programs": n, "n_sms": 3}
    warm = simulate_l2(sched, model=L2Model(0.5, 2, warm_steps=800.0), **kw)
    same = simulate_l2(sched, model=L2Model(0.5 * (256 / 6 * 16) / 800, 2), **kw)
    drift = simulate_l2(sched, model=L2Model(0.5, 2), **kw)
    assert warm.hbm_read_bytes == same.hbm_read_bytes
    assert warm.hbm_read_bytes != drift.hbm_read_bytes
    # k_merge counts the steps before merging: 8 merged steps x 2 = 16
    merged, _ = matmul_tile_schedule(1024, 1024, 512, 64, 64, 32, 2, k_merge=2)
    a = simulate_l2(merged, model=L2Model(0.5, 2, warm_steps=800.0), k_merge=2, **kw)
    b = simulate_l2(merged, model=L2Model(0.5 * (256 / 6 * 16) / 800, 2), **kw)
    assert a.hbm_read_bytes == b.hbm_read_bytes


def test_warm_steps_errors():
    with pytest.raises(MeasureError, match="warm_steps must be a finite number >= 0, got "
                                           "warm_steps=-1.0"):
        L2Model(0.5, 2, warm_steps=-1.0)
    with pytest.raises(MeasureError, match="warm_steps=inf"):
        L2Model(0.5, 2, warm_steps=float("inf"))
    sched, _ = matmul_tile_schedule(64, 64, 64, 16, 16, 16, 1)
    with pytest.raises(MeasureError, match="k_merge must be an int >= 1, got k_merge=0"):
        simulate_l2(sched, l2_bytes=1000, n_concurrent=4, k_merge=0)


def test_drift_warm_is_the_scripts_drift_warm():
    tv2 = _load("h200_traffic_v2")
    shape = (416, 11008, 4096)
    cfg = dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=64, GROUP_M=1, num_warps=2, num_stages=4)
    res = KernelModelMeasurer("matmul", dict(zip("MNK", shape)), hardware=H200_MEASURED_L2,
                              dtype="bfloat16", l2_model=DRIFT_WARM).measure(cfg)
    ref = tv2.drift_warm_read_bytes(shape, cfg, int(res.metrics["blocks_per_sm"]),
                                    int(res.metrics["k_merge"]))
    assert res.metrics["hbm_read_bytes"] == ref
    # the committed v3 prediction of this launch (ncu measured 401 MB; DRIFT said 1.13 GB)
    row = read_rows(DATA / "ncu_traffic_v3_predictions.csv")[4]
    assert (int(row["BLOCK_M"]), int(row["BLOCK_N"]), int(row["GROUP_M"])) == (32, 64, 1)
    assert int(round(ref)) == int(row["pred_read_bytes_drift_warm"])


def test_v4_list_meets_the_issue(v4_rows):
    shapes = {(int(r["M"]), int(r["N"]), int(r["K"])) for r in v4_rows}
    assert len(v4_rows) == 36 and len(shapes) == 4
    assert sum(int(r["GROUP_M"]) >= 8 for r in v4_rows) == 18
    for s in shapes:  # GROUP_M 1, 2 and 4 on every shape
        assert {1, 2, 4} <= {int(r["GROUP_M"]) for r in v4_rows
                             if (int(r["M"]), int(r["N"]), int(r["K"])) == s}
    assert {r["dtype"] for r in v4_rows} == {"float16", "bfloat16"}
    old = set()
    for path in DATA.glob("*.csv"):  # this plan's files (predictions, measured) excluded
        if path.name.startswith("ncu_traffic_v4_"):
            continue
        with path.open(newline="") as f:
            rd = csv.DictReader(f)
            if rd.fieldnames and {"M", "N", "K"} <= set(rd.fieldnames):
                old |= {(r["M"], r["N"], r["K"]) for r in rd}
    assert not {tuple(map(str, s)) for s in shapes} & old


def test_v4_predictions_are_the_models(v4_rows):
    for r in (v4_rows[0], v4_rows[14], v4_rows[-1]):
        shape = {"M": int(r["M"]), "N": int(r["N"]), "K": int(r["K"])}
        cfg = {k: int(r[k]) for k in KNOBS}
        for name, mod in (("drift_warm", DRIFT_WARM), ("drift", DRIFT)):
            res = KernelModelMeasurer("matmul", shape, hardware=H200_MEASURED_L2,
                                      dtype=r["dtype"], l2_model=mod).measure(cfg)
            assert res.ok
            assert int(round(res.metrics["hbm_read_bytes"])) == int(r[f"pred_read_bytes_{name}"])
    # 768 x 7168 x 8192, 64x128x32 GROUP_M 1 (4 per SM, 0.86 waves x 256 steps = 220 < 800):
    # DRIFT_WARM stays near lockstep, DRIFT predicts 2.4 times more
    r = v4_rows[14]
    assert (int(r["M"]), int(r["BLOCK_M"]), int(r["BLOCK_N"]), int(r["BLOCK_K"]),
            int(r["GROUP_M"])) == (768, 64, 128, 32, 1)
    assert int(r["pred_read_bytes_drift"]) > 2.3 * int(r["pred_read_bytes_drift_warm"])
    tv2 = _load("h200_traffic_v2")
    cfg = {k: int(r[k]) for k in KNOBS}
    res = KernelModelMeasurer("matmul", {"M": 768, "N": 7168, "K": 8192},
                              hardware=H200_MEASURED_L2, dtype="bfloat16",
                              l2_model=DRIFT).measure(cfg)
    mix = tv2.drift_mix_read_bytes((768, 7168, 8192), cfg, int(res.metrics["blocks_per_sm"]),
                                   int(res.metrics["k_merge"]), warm=True)
    assert int(round(mix)) == int(r["pred_read_bytes_drift_warm_mix"])


def test_v4_device_driver_reads_the_list(v4_rows):
    assert_driver_reads_plan(PRED_V4, v4_rows, _load("h200_traffic_v4").V4_PLAN, 36)
