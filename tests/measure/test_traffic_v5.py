"""The v5 ncu traffic check (issue #13, "Traffic") and the experimental L2 replays.

``benchmarks/h200/data/ncu_traffic_v5_configs.csv`` (the device list) was committed
before ``ncu_traffic_v5_predictions.csv`` and ``ncu_traffic_v5_predictions_setassoc.csv``
(``benchmarks/h200/h200_traffic_v5.py``), all before the device run; these tests pin
what the issue asks of the list, that the predictions are the library's models and the
scripts' variants, and that the device driver reads the list.
"""

from __future__ import annotations

import csv

import pytest

from autotile.measure import KernelModelMeasurer
from autotile.measure.gpu import DRIFT, DRIFT_WARM, H200_MEASURED_L2

from ._traffic_plans import DATA, KNOBS, assert_driver_reads_plan, read_rows
from ._traffic_plans import load_bench as _load

CONFIGS_V5 = DATA / "ncu_traffic_v5_configs.csv"
PRED_V5 = DATA / "ncu_traffic_v5_predictions.csv"
PRED_V5_SA = DATA / "ncu_traffic_v5_predictions_setassoc.csv"


@pytest.fixture(scope="module")
def v5_rows() -> list[dict[str, str]]:
    return read_rows(CONFIGS_V5)


def _key(r: dict[str, str]) -> tuple[str, ...]:
    return tuple(r[k] for k in ("M", "N", "K", "dtype", *KNOBS))


def test_v5_list_meets_the_issue(v5_rows):
    shapes = {(int(r["M"]), int(r["N"]), int(r["K"])) for r in v5_rows}
    assert len(v5_rows) == 36 and len(shapes) == 4
    assert sum(int(r["GROUP_M"]) >= 8 for r in v5_rows) == 19
    for s in shapes:  # GROUP_M 1, 2 and 4 on every shape
        assert {1, 2, 4} <= {int(r["GROUP_M"]) for r in v5_rows
                             if (int(r["M"]), int(r["N"]), int(r["K"])) == s}
    assert {r["dtype"] for r in v5_rows} == {"float16"}
    old = set()
    for path in DATA.rglob("*.csv"):  # this check's own files excluded
        if path.name.startswith("ncu_traffic_v5_"):
            continue
        with path.open(newline="") as f:
            rd = csv.DictReader(f)
            if rd.fieldnames and {"M", "N", "K"} <= set(rd.fieldnames):
                old |= {(r["M"], r["N"], r["K"]) for r in rd}
    assert not {tuple(map(str, s)) for s in shapes} & old


def test_v5_predictions_cover_the_list_and_are_the_models(v5_rows):
    pred = read_rows(PRED_V5)
    sa = read_rows(PRED_V5_SA)
    assert [_key(r) for r in pred] == [_key(r) for r in v5_rows] == [_key(r) for r in sa]
    for r in (pred[0], pred[20], pred[-1]):
        shape = {"M": int(r["M"]), "N": int(r["N"]), "K": int(r["K"])}
        cfg = {k: int(r[k]) for k in KNOBS}
        for name, mod in (("drift_warm", DRIFT_WARM), ("drift", DRIFT)):
            res = KernelModelMeasurer("matmul", shape, hardware=H200_MEASURED_L2,
                                      dtype=r["dtype"], l2_model=mod).measure(cfg)
            assert res.ok
            assert int(round(res.metrics["hbm_read_bytes"])) == int(r[f"pred_read_bytes_{name}"])


def test_v5_experimental_columns_are_the_scripts(v5_rows):
    pol = _load("h200_l2_policy")
    v5 = _load("h200_traffic_v5")
    # 384 x 13824 x 5120, 128x128x64 GROUP_M 8: 2 per SM, k_merge 1
    i = 20
    r, rs = read_rows(PRED_V5)[i], read_rows(PRED_V5_SA)[i]
    assert (int(r["M"]), int(r["BLOCK_M"]), int(r["BLOCK_N"]), int(r["GROUP_M"])) == (
        384, 128, 128, 8)
    shape = (384, 13824, 5120)
    cfg = {k: int(r[k]) for k in KNOBS}
    res = KernelModelMeasurer("matmul", dict(zip("MNK", shape)), hardware=H200_MEASURED_L2,
                              l2_model=DRIFT_WARM).measure(cfg)
    b, km = int(res.metrics["blocks_per_sm"]), int(res.metrics["k_merge"])
    assert b == int(r["blocks_per_sm"]) == 2
    mib = pol.MIB
    # LRU, stores bypass, 30 MiB, DRIFT_WARM's starts: DRIFT_WARM byte for byte
    assert pol.policy_read_bytes(shape, cfg, b, km, 30 * mib, 0.5, 0, False, 800.0) == (
        res.metrics["hbm_read_bytes"])
    for name, parts in v5.EXPERIMENTAL_V5.items():
        got = sum(wt * pol.policy_read_bytes(shape, cfg, b, km, cap * mib, s, p, bool(wa), w)
                  for wt, (p, wa, cap, s, w) in parts)
        assert int(round(got)) == int(r[f"pred_read_bytes_{name}"])
    sa = pol.setassoc_read_bytes(shape, cfg, b, km, 30 * mib, (*v5.SA_WAYS_V5, 10**7))
    for w, v in zip(v5.SA_WAYS_V5, sa):
        assert int(round(v)) == int(rs[f"pred_read_bytes_setassoc{w}"])
    # many ways: the fully associative LRU (DRIFT_WARM) again
    assert sa[-1] == pytest.approx(res.metrics["hbm_read_bytes"], rel=1e-6)
    # the random replacement is seeded: the same bytes twice, other bytes on another seed
    a = pol.policy_read_bytes(shape, cfg, b, km, 30 * mib, 1.0, 1, False, 800.0)
    assert a == pol.policy_read_bytes(shape, cfg, b, km, 30 * mib, 1.0, 1, False, 800.0)
    assert a != pol.policy_read_bytes(shape, cfg, b, km, 30 * mib, 1.0, 1, False, 800.0, seed=1)


def test_v5_device_driver_reads_the_list(v5_rows):
    assert_driver_reads_plan(CONFIGS_V5, v5_rows, _load("h200_traffic_v5").V5_PLAN, 36)
