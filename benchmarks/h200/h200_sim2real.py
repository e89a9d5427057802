"""Sim-to-real: tune matmul 8192^3 on the simulator (CPU), list the configs to time on the H200.

Runs :func:`autotile.search.tune` with the model-guided searcher (random
forest cost model, plans of 10, budget 40: the budget of the GPU-direct
tuning in ``bench_h200.py --part main``) on :class:`KernelModelMeasurer`
with the H200 profile, once with the default :class:`GpuModelParams` and
once with the calibrated ones, and writes
``benchmarks/h200/data/h200_sim2real_configs.csv``: those two configs plus the
tutorial's best measured config and the GPU-direct tuning results, for
``bench_h200.py --part sim2real`` to time side by side with cuBLAS.

Usage::

    python benchmarks/h200/h200_sim2real.py --stage default
    python benchmarks/h200/h200_sim2real.py --stage calibrated   # after h200_analyze.py

Second protocol (issue 6, after the model-guided searcher's restarts and the
~40 ms scores): every stage uses the calibrated parameters and the L2 size
of ``h200_calibrated_params.csv``::

    python benchmarks/h200/h200_sim2real.py --stage exhaustive  # model's score of all 7,091
    python benchmarks/h200/h200_sim2real.py --stage tune        # searchers x budgets x seeds
    python benchmarks/h200/h200_sim2real.py --stage rounds      # device list for the rounds

``--model v2`` (the default) uses the model with the software-pipeline term
(``h200_calibrated_params_v2.csv``) and writes the same files with a
``_v2`` suffix; ``--model v3`` the model that also has the shared-memory
port term (eq. 5c, ``h200_calibrated_params_v3.csv``, files with ``_v3``);
``--model v4`` the v3 parameter set fitted on DRIFT traffic
(``h200_calibrated_params_v4.csv``; scored with ``l2_model=DRIFT``, files
with ``_v4``); ``--model v5`` v3 plus the power-cap term (eq. 9,
``h200_calibrated_params_v5.csv``, files with ``_v5``); ``--model v6`` all
twelve values fitted jointly on timings (files with ``_v6``); ``--model v7``
v6 with eq. 5c' (files with ``_v7``); ``--model v1``
reproduces the files of the first rerun.

``exhaustive`` writes ``h200_sim2real_exhaustive.csv`` (every valid config
and its predicted time), ``tune`` writes ``h200_sim2real_tuned.csv`` (one
row per study: ``searcher="model"`` with the library defaults and
``searcher="random"``, budgets 40/100/300, seeds 0-4; the chosen config,
its predicted time and its rank in the exhaustive list), ``rounds`` writes
``h200_sim2real_rounds_configs.csv``: every distinct sim-tuned config, the
model's top 10, the tutorial's two best and the three fastest measured
sampled configs of the main run, for ``bench_h200.py --part rounds`` to
time interleaved with cuBLAS.
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

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


# --------------------------------------------------------------------------------------
# second protocol: exhaustive model optimum, many studies, interleaved device rounds
EXHAUSTIVE = DATA / "h200_sim2real_exhaustive.csv"
TUNED = DATA / "h200_sim2real_tuned.csv"
ROUNDS = DATA / "h200_sim2real_rounds_configs.csv"
PARAMS = DATA / "h200_calibrated_params.csv"
#: Calibrated models: ``v1`` = eqs. 4-8 (issue 6's first rerun, files kept for
#: the record); ``v2`` = with the software-pipeline term (eq. 5b), fitted by
#: ``h200_analyze.py`` with ``PIPELINE_FIT``; ``v3`` = v2 plus the shared-memory
#: port term (eq. 5c), fitted with ``SMEM_FIT``; ``v4`` = ``SMEM_FIT`` fitted on the
#: DRIFT L2 model's traffic and scored with it; ``v5`` = v3 plus the power-cap term
#: (eq. 9), its one value fitted on the H200 energy probe (``h200_analyze.py
#: --power-only``); ``v6`` = the same twelve values fitted jointly on the main
#: sweep's timings (``POWER_FIT``); ``v7`` = v6 with the port and the tensor cores
#: combined by a smooth maximum of norm 2 (eq. 5c'). ``(params, exhaustive, tuned,
#: rounds)``.
MODELS = {
    "v1": (PARAMS, EXHAUSTIVE, TUNED, ROUNDS),
    "v2": (DATA / "h200_calibrated_params_v2.csv", DATA / "h200_sim2real_exhaustive_v2.csv",
           DATA / "h200_sim2real_tuned_v2.csv", DATA / "h200_sim2real_rounds_configs_v2.csv"),
    "v3": (DATA / "h200_calibrated_params_v3.csv", DATA / "h200_sim2real_exhaustive_v3.csv",
           DATA / "h200_sim2real_tuned_v3.csv", DATA / "h200_sim2real_rounds_configs_v3.csv"),
    "v4": (DATA / "h200_calibrated_params_v4.csv", DATA / "h200_sim2real_exhaustive_v4.csv",
           DATA / "h200_sim2real_tuned_v4.csv", DATA / "h200_sim2real_rounds_configs_v4.csv"),
    "v5": (DATA / "h200_calibrated_params_v5.csv", DATA / "h200_sim2real_exhaustive_v5.csv",
           DATA / "h200_sim2real_tuned_v5.csv", DATA / "h200_sim2real_rounds_configs_v5.csv"),
    "v6": (DATA / "h200_calibrated_params_v6.csv", DATA / "h200_sim2real_exhaustive_v6.csv",
           DATA / "h200_sim2real_tuned_v6.csv", DATA / "h200_sim2real_rounds_configs_v6.csv"),
    "v7": (DATA / "h200_calibrated_params_v7.csv", DATA / "h200_sim2real_exhaustive_v7.csv",
           DATA / "h200_sim2real_tuned_v7.csv", DATA / "h200_sim2real_rounds_configs_v7.csv"),
}
#: Models scored with a non-default L2 model (name of the ``_l2sim`` constant).
L2_MODELS = {"v4": "DRIFT"}
L2_MODEL: str | None = None
BUDGETS = (40, 100, 300)
SEEDS = (0, 1, 2, 3, 4)
TUTORIAL_BEST = (128, 256, 64, 8, 8, 3)


def calibrated(params_path: Path | None = None) -> tuple[Any, int]:
    """``(GpuModelParams, l2_bytes)`` of the calibration (fit on all 379 configs)."""
    from autotile.measure import GpuModelParams

    with Path(PARAMS if params_path is None else params_path).open() as f:
        p = {r["name"]: r["value"] for r in csv.DictReader(f)}
    d = json.loads(p["params_json"])
    params = GpuModelParams(**{**d, "warp_efficiency": tuple(map(tuple,
                                                                 d["warp_efficiency"]))})
    return params, int(p["l2_bytes"])


def calibrated_measurer() -> Any:
    """:class:`KernelModelMeasurer` for matmul 8192^3 fp16, H200 profile, calibrated."""
    import autotile.measure as measure

    params, l2 = calibrated()
    hw = dataclasses.replace(measure.H200, l2_bytes=l2)
    l2_model = None if L2_MODEL is None else getattr(measure, L2_MODEL)
    return measure.KernelModelMeasurer("matmul", dict(zip("MNK", SHAPE)), hardware=hw,
                                       params=params, l2_model=l2_model)


def key(cfg: Any) -> tuple[int, ...]:
    return tuple(int(cfg[k]) for k in KNOBS)


def stage_exhaustive() -> None:
    """Score every valid config of the 8192^3 space with the calibrated model."""
    m = calibrated_measurer()
    n = m.space.size
    rows = []
    t0 = time.perf_counter()
    for i in range(n):
        cfg = m.space.config_at(i)
        res = m.measure(cfg)
        rows.append({**{k: cfg[k] for k in KNOBS}, "status": res.status,
                     "predicted_time_s": res.metrics.get("time_s", ""),
                     "blocks_per_sm": res.metrics.get("blocks_per_sm", "")})
        if (i + 1) % 500 == 0:
            print(f"{i + 1}/{n} in {time.perf_counter() - t0:.0f} s", flush=True)
    wall = time.perf_counter() - t0
    with EXHAUSTIVE.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: r["predicted_time_s"])
    print(f"scored {n} configs in {wall:.0f} s ({1e3 * wall / n:.0f} ms each); "
          f"{len(ok)} feasible in the model")
    for r in ok[:10]:
        t = float(r["predicted_time_s"])
        print(f"  {key(r)} {t * 1e3:.3f} ms ({2 * 8192**3 / t / 1e12:.0f} TFLOP/s)")


def model_ranking() -> dict[tuple[int, ...], int]:
    """Rank (1 = fastest) of each feasible config in the exhaustive list."""
    with EXHAUSTIVE.open() as f:
        ok = [r for r in csv.DictReader(f) if r["status"] == "ok"]
    ok.sort(key=lambda r: float(r["predicted_time_s"]))
    return {key(r): i + 1 for i, r in enumerate(ok)}


def stage_tune(searchers: tuple[str, ...], budgets: tuple[int, ...],
               seeds: tuple[int, ...]) -> None:
    """Studies on the calibrated simulator; one row per (searcher, budget, seed)."""
    from autotile.search import tune

    rank = model_ranking() if EXHAUSTIVE.exists() else {}
    m = calibrated_measurer()
    rows = []
    for searcher in searchers:
        for budget in budgets:
            for seed in seeds:
                t0 = time.perf_counter()
                st = tune(m.space, m, searcher=searcher, budget=budget, seed=seed,
                          storage=":memory:", progress=False)
                wall = time.perf_counter() - t0
                best = st.best_config
                assert best is not None
                hist = st.history()
                first = int(np.flatnonzero(hist == hist.min())[0]) + 1
                n_wide = sum(1 for t in st.trials if t.config is not None
                             and t.config["BLOCK_M"] * t.config["BLOCK_N"] >= 128 * 256)
                pred = float(st.best_value)
                rows.append({"searcher": searcher, "searcher_kwargs": "{}", "budget": budget,
                             "seed": seed, **{k: int(best[k]) for k in KNOBS},
                             "predicted_time_s": pred,
                             "predicted_tflops": 2 * 8192**3 / pred / 1e12,
                             "model_rank": rank.get(key(best), ""), "trial_of_best": first,
                             "n_ok": int(np.isfinite(hist).sum()),
                             "n_tiles_ge_128x256": n_wide, "wall_s": round(wall, 1)})
                r = rows[-1]
                print(f"{searcher} B={budget} seed={seed}: {key(best)} "
                      f"{r['predicted_tflops']:.0f} TFLOP/s pred, rank {r['model_rank']}, "
                      f"found at trial {first}, {wall:.0f} s", flush=True)
    with TUNED.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def stage_rounds(n_top: int = 10, n_measured: int = 3) -> None:
    """Device list: sim-tuned configs, model top ``n_top``, tutorial and measured best."""
    rank = model_ranking()
    by_rank = {v: k for k, v in rank.items()}
    with EXHAUSTIVE.open() as f:
        pred = {key(r): float(r["predicted_time_s"]) for r in csv.DictReader(f)
                if r["status"] == "ok"}
    labels: dict[tuple[int, ...], list[str]] = {}
    with TUNED.open() as f:
        for r in csv.DictReader(f):
            labels.setdefault(key(r), []).append(
                f"sim {r['searcher']} B={r['budget']} s={r['seed']}")
    for i in range(1, n_top + 1):
        labels.setdefault(by_rank[i], []).append(f"model rank {i}")
    with (DATA / "h200_matmul.csv").open() as f:
        mm = [r for r in csv.DictReader(f) if r["status"] == "ok"
              and (int(r["M"]), int(r["N"]), int(r["K"])) == SHAPE]
    mm.sort(key=lambda r: -float(r["tflops"]))
    tut = [r for r in mm if r["source"] == "tutorial"]
    assert key(tut[0]) == TUTORIAL_BEST
    labels.setdefault(TUTORIAL_BEST, []).append("tutorial best")
    labels.setdefault(key(tut[1]), []).append("tutorial #2")
    for i, r in enumerate([r for r in mm if r["source"] == "sampled"][:n_measured]):
        labels.setdefault(key(r), []).append(f"measured sampled #{i + 1}")
    rows = [{"label": " | ".join(lab), "M": SHAPE[0], "N": SHAPE[1], "K": SHAPE[2],
             **dict(zip(KNOBS, k)), "predicted_time_s": pred.get(k, ""),
             "model_rank": rank.get(k, "")} for k, lab in labels.items()]
    with ROUNDS.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {ROUNDS} ({len(rows)} distinct configs)")
    for r in rows:
        print(f"  {r['model_rank']:>5} {key(r)} {r['label']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stage", required=True,
                    choices=("default", "calibrated", "exhaustive", "tune", "rounds"))
    ap.add_argument("--searchers", default="model,random", help="--stage tune")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="--stage tune")
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="--stage tune")
    ap.add_argument("--params", default=str(DATA / "h200_calibrated_params.csv"))
    ap.add_argument("--budget", type=int, default=BUDGET)
    ap.add_argument("--searcher", default="model")
    ap.add_argument("--searcher-kwargs", default=json.dumps(SEARCHER_KW),
                    help="JSON; '{}' for the searcher's defaults")
    ap.add_argument("--model", default="v2", choices=sorted(MODELS),
                    help="--stage exhaustive/tune/rounds: which calibrated model and files")
    args = ap.parse_args()
    global PARAMS, EXHAUSTIVE, TUNED, ROUNDS, L2_MODEL
    PARAMS, EXHAUSTIVE, TUNED, ROUNDS = MODELS[args.model]
    L2_MODEL = L2_MODELS.get(args.model)
    if args.stage == "exhaustive":
        stage_exhaustive()
        return 0
    if args.stage == "tune":
        stage_tune(tuple(args.searchers.split(",")),
                   tuple(int(b) for b in args.budgets.split(",")),
                   tuple(int(x) for x in args.seeds.split(",")))
        return 0
    if args.stage == "rounds":
        stage_rounds()
        return 0
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
