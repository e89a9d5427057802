"""Refit the records model's time constants on cached window runs.

``--part features`` runs each config's window once (the slow, interpreter
part of :func:`autotile.measure.gpu._records_model.launch_features`) for the
checks' shapes and caches the features as JSON; ``--part eval`` recomputes
every config's predicted time from the cache with the library's
:func:`launch_time` (optionally with constants overridden, ``--set-const
NAME=VALUE``) and prints, per check and kernel, Spearman's rho against the
H200 timings of that check and the measured time of the model's pick over the
best measured config. Caches written before model v8 lack ``n_groups`` (the
chain's load groups); :func:`launch_time` then counts every load op as a step,
as model v7 did: rerun ``--part features`` to evaluate model v8.

    python benchmarks/h200/records_fit.py --part features --sets v1 v2 v3 v4 v5 v6
    python benchmarks/h200/records_fit.py --part eval --sets v1 v2 v3 v4 v5 v6
    python benchmarks/h200/records_fit.py --part fit --sets v1 --kernels gelu rms_norm
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "h200"))

from records_model_h200 import DATA, SETS  # noqa: E402


def _features_of(set_name: str, name: str) -> list[dict[str, object]]:
    from autotile.measure import H200_MEASURED_L2, KernelModelMeasurer
    from autotile.measure.gpu import _records_model as rm

    spec, shape, dtype = SETS[set_name][name]
    m = KernelModelMeasurer(spec, shape, H200_MEASURED_L2, dtype=dtype)
    rows: list[dict[str, object]] = []
    for i in range(m.space.size):
        cfg = dict(m.space.config_at(i))
        row: dict[str, object] = {"kernel": name, "config": json.dumps(cfg), "launches": []}
        bad = m.space.violations(cfg)
        if bad:
            row["reason"] = "; ".join(bad)
            rows.append(row)
            continue
        try:
            launches = spec.launches(shape, dtype, cfg, m.model_args())
            for launch in launches:
                reason, f = rm.launch_features(launch, m.hardware, m.params)
                if reason is not None:
                    row["reason"] = reason
                    break
                row["launches"].append(f)
        except Exception as exc:  # noqa: BLE001
            row["reason"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    return rows


def features(args: argparse.Namespace) -> None:
    from joblib import Parallel, delayed

    for s in args.sets:
        jobs = [(s, n) for n in SETS[s]]
        parts = Parallel(n_jobs=args.jobs)(delayed(_features_of)(*j) for j in jobs)
        out = Path(args.cache) / f"records_features_{s}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps([r for p in parts for r in p]))
        print(f"{s}: wrote {out}", flush=True)


def _set_consts(pairs: list[str] | None) -> None:
    """Override the records model's module constants: ``NAME=VALUE`` each.

    ``REDUCE_SCALE=x`` scales the measured reduction latencies (0: off).
    """
    from autotile.measure.gpu import _records_model as rm

    for kv in pairs or []:
        k, v = kv.split("=")
        if k == "REDUCE_SCALE":
            rm.REDUCE_LATENCY_S = {w: t * float(v) for w, t in rm.REDUCE_LATENCY_S.items()}
        else:
            setattr(rm, k, float(v))


def evaluate(args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    from scipy.stats import spearmanr

    from autotile.measure import H200_MEASURED_L2
    from autotile.measure.gpu import _records_model as rm
    from autotile.measure.gpu._time_model import GpuModelParams

    _set_consts(args.set_const)
    params = GpuModelParams()
    res: dict[str, tuple[float, float]] = {}
    for s in args.sets:
        feats = json.loads((Path(args.cache) / f"records_features_{s}.json").read_text())
        meas = {(r["kernel"], r["config"]): r for r in
                csv.DictReader(open(DATA / f"records_model_{s}_h200.csv"))}
        for name in SETS[s]:
            p, t = [], []
            for row in feats:
                if row["kernel"] != name or row.get("reason"):
                    continue
                mr = meas.get((name, row["config"]))
                if not mr or not mr["median_time_s"]:
                    continue
                dtype = SETS[s][name][2]
                p.append(sum(rm.launch_time(f, H200_MEASURED_L2, params, dtype)["time_s"]
                             for f in row["launches"]))
                t.append(float(mr["median_time_s"]))
            if not p:
                continue
            pa, ta = np.array(p), np.array(t)
            rho = float(spearmanr(pa, ta).statistic)
            pick = float(ta[int(np.argmin(pa))] / ta.min())
            res[f"{s}/{name}"] = (rho, pick)
            if not args.quiet:
                print(f"{s} {name:15s} n={len(p):3d} rho={rho:6.3f} pick={pick:6.3f} "
                      f"med|err|={float(np.median(np.abs(np.log(pa / ta)))):.3f}")
    return res


def _pairs(sets: list[str], kernels: list[str] | None, cache: str) -> list[tuple]:
    """(features of each launch, dtype, measured median s) for every timed config."""
    out = []
    for s in sets:
        feats = json.loads((Path(cache) / f"records_features_{s}.json").read_text())
        meas = {(r["kernel"], r["config"]): r for r in
                csv.DictReader(open(DATA / f"records_model_{s}_h200.csv"))}
        for row in feats:
            if row.get("reason") or (kernels and row["kernel"] not in kernels):
                continue
            mr = meas.get((row["kernel"], row["config"]))
            if mr and mr["median_time_s"]:
                out.append((row["launches"], SETS[s][row["kernel"]][2],
                            float(mr["median_time_s"])))
    return out


def fit(args: argparse.Namespace) -> None:
    """Grid search of HBM_LATENCY_S and PROGRAM_LATENCY_S: least median |log error|."""
    from autotile.measure import H200_MEASURED_L2
    from autotile.measure.gpu import _records_model as rm
    from autotile.measure.gpu._time_model import GpuModelParams

    _set_consts(args.set_const)
    pairs = _pairs(args.sets, args.kernels, args.cache)
    params = GpuModelParams()
    best = None
    for hbm in np.arange(1.5e-7, 8.01e-7, 0.2e-7):
        for prog in np.arange(0.0, 1.01e-6, 0.5e-7):
            rm.HBM_LATENCY_S, rm.PROGRAM_LATENCY_S = float(hbm), float(prog)
            err = [abs(np.log(sum(rm.launch_time(f, H200_MEASURED_L2, params, d)["time_s"]
                                  for f in launches) / t)) for launches, d, t in pairs]
            score = float(np.median(err))
            if best is None or score < best[0]:
                best = (score, float(hbm), float(prog))
    print(f"{len(pairs)} configs of {args.sets} {args.kernels}: median |log err| "
          f"{best[0]:.4f} at HBM_LATENCY_S={best[1]:.3g}, PROGRAM_LATENCY_S={best[2]:.3g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", required=True, choices=("features", "eval", "fit"))
    ap.add_argument("--kernels", nargs="*", default=None, help="--part fit: kernels fitted on")
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    ap.add_argument("--cache", default="/tmp/records_fit")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--set-const", nargs="*", default=None)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    {"features": features, "eval": evaluate, "fit": fit}[args.part](args)


if __name__ == "__main__":
    main()
