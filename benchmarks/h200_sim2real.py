"""Sim-to-real: tune matmul 8192^3 on the simulator (CPU), list the configs to time on the H200.

Runs :func:`autotile.search.tune` with the model-guided searcher (random
forest cost model, plans of 10, budget 40: the budget of the GPU-direct
tuning in ``bench_h200.py --part main``) on :class:`KernelModelMeasurer`
with the H200 profile, once with the default :class:`GpuModelParams` and
once with the calibrated ones, and writes
``benchmarks/data/h200_sim2real_configs.csv``: those two configs plus the
tutorial's best measured config and the GPU-direct tuning results, for
``bench_h200.py --part sim2real`` to time side by side with cuBLAS.

Usage::

    python benchmarks/h200_sim2real.py --stage default
    python benchmarks/h200_sim2real.py --stage calibrated   # after h200_analyze.py
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DATA = Path(__file__).resolve().parent / "data"
OUT = DATA / "h200_sim2real_configs.csv"
KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
SHAPE = (8192, 8192, 8192)
BUDGET = 40
SEARCHER_KW = {"plan_size": 10, "cost_model": "rf"}


def sim_tune(params: Any, l2_bytes: int, budget: int = BUDGET, seed: int = 0,
             searcher: str = "model", searcher_kwargs: dict[str, Any] | None = None
             ) -> tuple[dict[str, int], float, float]:
    """Best config of a model-guided study on the simulator, its predicted time, wall s."""
    from autotile.measure import H200, KernelModelMeasurer
    from autotile.search import tune

    hw = dataclasses.replace(H200, l2_bytes=l2_bytes)
    m = KernelModelMeasurer("matmul", dict(zip("MNK", SHAPE)), hardware=hw, params=params)
    t0 = time.perf_counter()
    kw = dict(SEARCHER_KW) if searcher_kwargs is None else searcher_kwargs
    st = tune(m.space, m, searcher=searcher, budget=budget, seed=seed, storage=":memory:",
              progress=False, searcher_kwargs=kw or None)
    best = st.best_config
    assert best is not None
    return {k: int(best[k]) for k in KNOBS}, float(st.best_value), time.perf_counter() - t0


def read_rows() -> list[dict[str, Any]]:
    if not OUT.exists():
        return []
    with OUT.open() as f:
        return list(csv.DictReader(f))


def write_rows(rows: list[dict[str, Any]]) -> None:
    keys = ["label", "M", "N", "K", *KNOBS, "predicted_time_s", "note"]
    with OUT.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def fixed_rows() -> list[dict[str, Any]]:
    """Tutorial best (from the main run) and the GPU-direct tuning winners."""
    rows = []
    with (DATA / "h200_matmul.csv").open() as f:
        mm = [r for r in csv.DictReader(f) if r["status"] == "ok"
              and (int(r["M"]), int(r["N"]), int(r["K"])) == SHAPE]
    tut = max((r for r in mm if r["source"] == "tutorial"), key=lambda r: float(r["tflops"]))
    rows.append({"label": "tutorial best", **{k: tut[k] for k in KNOBS},
                 "note": f"best of tutorial 03's configs in the main run "
                         f"({float(tut['tflops']):.0f} TFLOP/s)"})
    with (DATA / "h200_gpu_tuning.csv").open() as f:
        for r in csv.DictReader(f):
            if r["trial"] == "best":
                cfg = dict(kv.split("=") for kv in r["config"].replace(" ", "").split(","))
                rows.append({"label": f"GPU-direct {r['searcher']} (budget {BUDGET})",
                             **{k: cfg[k] for k in KNOBS},
                             "note": f"tuned on the H200 in the main run "
                                     f"({2 * 8192**3 / float(r['value']) / 1e12:.0f} TFLOP/s)"})
    return [{"M": SHAPE[0], "N": SHAPE[1], "K": SHAPE[2], "predicted_time_s": "", **r}
            for r in rows]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stage", choices=("default", "calibrated"), required=True)
    ap.add_argument("--params", default=str(DATA / "h200_calibrated_params.csv"))
    ap.add_argument("--budget", type=int, default=BUDGET)
    ap.add_argument("--searcher", default="model")
    ap.add_argument("--searcher-kwargs", default=json.dumps(SEARCHER_KW),
                    help="JSON; '{}' for the searcher's defaults")
    args = ap.parse_args()
    from autotile.measure import GpuModelParams

    kw = json.loads(args.searcher_kwargs)
    suffix = "" if args.budget == BUDGET else f", budget {args.budget}"
    if args.searcher != "model" or kw != SEARCHER_KW:
        suffix += f", {args.searcher} {json.dumps(kw)}"
    rows = read_rows()
    if args.stage == "default":
        if not any(r["label"].startswith("tutorial") for r in rows):
            rows += fixed_rows()
        params, l2 = GpuModelParams(), 50_000_000
        label, note = f"sim-tuned (default params{suffix})", "H200 profile, default GpuModelParams"
    else:
        with open(args.params) as f:
            p = {r["name"]: r["value"] for r in csv.DictReader(f)}
        l2 = int(p.pop("l2_bytes"))
        d = json.loads(p.pop("params_json"))
        params = GpuModelParams(**{**d, "warp_efficiency": tuple(map(tuple,
                                                                     d["warp_efficiency"]))})
        label = f"sim-tuned (calibrated{suffix})"
        note = f"calibrated GpuModelParams, l2_bytes={l2}"
    rows = [r for r in rows if r["label"] != label]
    cfg, pred, wall = sim_tune(params, l2, budget=args.budget, searcher=args.searcher,
                               searcher_kwargs=kw)
    print(f"{label}: {cfg} predicted {pred * 1e3:.3f} ms "
          f"({2 * 8192**3 / pred / 1e12:.0f} TFLOP/s) in {wall:.0f} s")
    rows.append({"label": label, "M": SHAPE[0], "N": SHAPE[1], "K": SHAPE[2], **cfg,
                 "predicted_time_s": pred, "note": f"{note}; tune(searcher={args.searcher!r}, "
                                                   f"budget={args.budget}, seed=0) in "
                                                   f"{wall:.0f} s"})
    write_rows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
