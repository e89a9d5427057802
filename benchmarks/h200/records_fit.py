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

``--part features`` also replays each window's L2 stream at 13 shares of the
L2 (``2**(k/2)``, k = -10..2, of ``l2_bytes``) and caches them as ``l2_curve``;
``--part shares`` then scores candidate rules for the L2 share (a centre times a
spread of factors; the model's rule is 0.5 times 0.5-2) on every set and
kernel, with leave-one-set-out, without rerunning the interpreter. The cache
also holds two replays the model does not use (``l2_curve_stagger``: programs at
staggered phases, stores passing or taking L2 lines), scored with ``--set-const
CURVE=l2_curve_stagger`` or ``CURVE=l2_curve_stagger:alloc``. With
``--kernels``, ``--part features`` writes ``records_features_<set>_<kernels>.json``;
``--part eval`` and ``--part shares`` read a set's full cache and any such
per-kernel files (the latter replace a kernel's rows).

    python benchmarks/h200/records_fit.py --part features --sets v1 v2 v3 v4 v5 v6
    python benchmarks/h200/records_fit.py --part eval --sets v1 v2 v3 v4 v5 v6
    python benchmarks/h200/records_fit.py --part fit --sets v1 --kernels gelu rms_norm
    python benchmarks/h200/records_fit.py --part features --sets v8 \\
        --kernels layer_norm rms_norm online_softmax
    python benchmarks/h200/records_fit.py --part shares --sets v5 v6 v7 v8
    python benchmarks/h200/records_fit.py --part loso --sets v5 v6 v7 v8 v9 \\
        --grid LOAD_ISSUE_SLOTS=4,8,12,16 REDUCE_ISSUE_SLOTS=0,25,50,75,100

``--part loso`` scores a grid of the model's constants on every set and kernel
(in-sample) and with leave-one-set-out (the v10 change: ``LOAD_ISSUE_SLOTS`` with
``REDUCE_ISSUE_SLOTS``).
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

#: Ranking targets of every records-model check: Spearman >= this and ...
TARGET_SPEARMAN = 0.8
#: ... the fastest predicted config within this factor of the fastest measured one.
TARGET_PICK = 1.05


def rank_and_pick(pred: np.ndarray, meas: np.ndarray) -> tuple[float, float]:
    """Spearman of predicted against measured times and the pick ratio.

    Parameters
    ----------
    pred, meas : ndarray of shape (n_configs,), dtype float64
        Predicted and measured times (s) of one kernel's configs, in the same order.

    Returns
    -------
    tuple of (float, float)
        Spearman's rho, and the measured time of the config predicted fastest over
        the fastest measured time (>= 1).
    """
    from scipy.stats import spearmanr

    return (float(spearmanr(pred, meas).statistic),
            float(meas[int(np.argmin(pred))] / meas.min()))


def targets_met(scores: list[tuple[float, float]]) -> tuple[int, float]:
    """Targets met and mean Spearman over (Spearman, pick) pairs (the LOSO criterion).

    Parameters
    ----------
    scores : list of (float, float)
        :func:`rank_and_pick` of each (set, kernel) scored.

    Returns
    -------
    tuple of (int, float)
        How many of the ``2 * len(scores)`` targets hold (Spearman >=
        :data:`TARGET_SPEARMAN`, pick <= :data:`TARGET_PICK`), then the mean Spearman;
        compared as a tuple: most targets met, then the highest mean Spearman.
    """
    return (int(sum((r >= TARGET_SPEARMAN) + (p <= TARGET_PICK) for r, p in scores)),
            float(np.mean([r for r, _ in scores])))


def _features_of(set_name: str, name: str) -> list[dict[str, object]]:
    from autotile.measure import H200_MEASURED_L2, KernelModelMeasurer
    from autotile.measure.gpu import _records_model as rm

    rm.ELEMENTWISE_TRACE = True  # cache ew_elems for records_alu_elementwise.py
    spec, shape, dtype = SETS[set_name][name]
    m = KernelModelMeasurer(spec, shape, H200_MEASURED_L2, dtype=dtype)
    from records_l2_curves import window_curves

    rm._WINDOW_HOOK = window_curves
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
        jobs = [(s, n) for n in SETS[s] if not args.kernels or n in args.kernels]
        parts = Parallel(n_jobs=args.jobs)(delayed(_features_of)(*j) for j in jobs)
        tag = "" if not args.kernels else "_" + "_".join(args.kernels)
        out = Path(args.cache) / f"records_features_{s}{tag}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps([r for p in parts for r in p]))
        print(f"{s}: wrote {out}", flush=True)


def cache_kernel_features(sets: list[str], kernel: str, cache: str) -> None:
    """Write ``<cache>/records_features_<set>_<kernel>.json`` for each set holding ``kernel``.

    One kernel's :func:`_features_of` per set, without the refit-only L2 replays
    (``records_l2_curves.window_curves``, switched off for this process): the cache
    of ``records_read_runs.py`` and ``records_spans.py``.
    """
    import records_l2_curves

    records_l2_curves.window_curves = lambda **kw: {}  # the refit-only replays: not needed
    out = Path(cache)
    out.mkdir(parents=True, exist_ok=True)
    for s in sets:
        if kernel not in SETS[s]:
            continue
        rows = _features_of(s, kernel)
        (out / f"records_features_{s}_{kernel}.json").write_text(json.dumps(rows))
        print(f"{s}: {len(rows)} configs cached", flush=True)


def _load_features(cache: str, s: str) -> list[dict[str, object]]:
    """The cached features of set ``s``: ``records_features_{s}.json`` and any
    ``records_features_{s}_<kernels>.json`` (later files replace a kernel's rows)."""
    rows: dict[str, list[dict[str, object]]] = {}
    files = sorted(Path(cache).glob(f"records_features_{s}_*.json"))
    full = Path(cache) / f"records_features_{s}.json"
    for path in ([full] if full.exists() else []) + files:
        part: dict[str, list[dict[str, object]]] = {}
        for r in json.loads(path.read_text()):
            part.setdefault(str(r["kernel"]), []).append(r)
        rows.update(part)
    return [r for k in rows for r in rows[k]]


def with_share(f: dict[str, float], fracs: list[float]) -> dict[str, float]:
    """Features with the L2 replay averaged over ``fracs`` (shares of ``l2_bytes``),
    interpolated in log share on the cached ``l2_curve``; unchanged without one."""
    name, _, col = CURVE[0].partition(":")
    curve = f.get(name)
    if not curve or not fracs:
        return f
    c = np.asarray(curve, float)
    if col:  # the second triple of columns: stores take L2 lines
        c = c[:, [0, 4, 5, 6]]
    x = np.log(c[:, 0])
    g = dict(f)
    for j, k in ((1, "read_b"), (2, "write_b"), (3, "hit_rate")):
        g[k] = float(np.mean([np.interp(np.log(q), x, c[:, j]) for q in fracs]))
    return g


SHARES: list[float] = []
#: Which cached replay :func:`with_share` reads (``--set-const CURVE=l2_curve_stagger``;
#: a ``:alloc`` suffix: the replay in which stores take L2 lines).
CURVE = ["l2_curve"]


def _set_consts(pairs: list[str] | None) -> None:
    """Override the records model's module constants: ``NAME=VALUE`` each.

    ``REDUCE_SCALE=x`` scales the measured reduction latencies (0: off);
    ``SHARES=a,b,...`` averages the cached L2 replays at those shares of the L2
    (:func:`with_share`) in place of the model's own.
    """
    from autotile.measure.gpu import _records_model as rm

    for kv in pairs or []:
        k, v = kv.split("=")
        if k == "CURVE":
            CURVE[0] = v
        elif k == "SHARES":
            SHARES[:] = [float(q) for q in v.split(",")]
        elif k == "REDUCE_SCALE":
            rm.REDUCE_LATENCY_S = {w: t * float(v) for w, t in rm.REDUCE_LATENCY_S.items()}
        else:
            setattr(rm, k, float(v))


def evaluate(args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    from autotile.measure import H200_MEASURED_L2
    from autotile.measure.gpu import _records_model as rm
    from autotile.measure.gpu._time_model import GpuModelParams

    _set_consts(args.set_const)
    params = GpuModelParams()
    res: dict[str, tuple[float, float]] = {}
    for s in args.sets:
        feats = _load_features(args.cache, s)
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
                p.append(sum(rm.launch_time(with_share(f, SHARES), H200_MEASURED_L2, params,
                                            dtype)["time_s"]
                             for f in row["launches"]))
                t.append(float(mr["median_time_s"]))
            if not p:
                continue
            pa, ta = np.array(p), np.array(t)
            rho, pick = rank_and_pick(pa, ta)
            res[f"{s}/{name}"] = (rho, pick)
            if not args.quiet:
                print(f"{s} {name:15s} n={len(p):3d} rho={rho:6.3f} pick={pick:6.3f} "
                      f"med|err|={float(np.median(np.abs(np.log(pa / ta)))):.3f}")
    return res


def _pairs(sets: list[str], kernels: list[str] | None, cache: str) -> list[tuple]:
    """(features of each launch, dtype, measured median s) for every timed config."""
    out = []
    for s in sets:
        feats = _load_features(cache, s)
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


def _share_rules() -> dict[str, list[float]]:
    """Candidate L2 shares: a centre times a log-spaced spread (the model's rule)."""
    rules = {}
    for c in (0.42, 0.5, 0.59, 0.667, 0.71, 0.84, 1.0):
        for name, spread in (("1", (1.0,)), ("1.19", (0.84, 1.0, 1.19)),
                             ("1.41", (0.71, 1.0, 1.41)),
                             ("2", (0.5, 0.71, 1.0, 1.41, 2.0)),
                             ("d1.41", (0.71, 1.0)), ("d2", (0.5, 0.71, 1.0)),
                             ("d2.8", (0.35, 0.5, 0.71, 1.0))):
            rules[f"c{c}/x{name}"] = [c * f for f in spread]
    return rules


def shares(args: argparse.Namespace) -> None:
    """Spearman and pick of every kernel and set for each candidate L2 share rule,
    and leave-one-set-out: the rule chosen on the other sets (most targets met,
    then the highest mean Spearman), scored on the set left out."""
    table: dict[str, dict[str, tuple[float, float]]] = {}
    args.quiet = True
    for rule, fr in _share_rules().items():
        SHARES[:] = fr
        table[rule] = evaluate(args)
    SHARES[:] = []
    keys = sorted(next(iter(table.values())))

    def score(rule: str, sets: list[str]) -> tuple[int, float]:
        return targets_met([table[rule][k] for k in keys if k.split("/")[0] in sets])

    print("rule (Spearman/pick per set and kernel; targets met, mean Spearman)")
    print(" " * 14 + " ".join(f"{k[:2]} {k.split('/')[1][:6]:>6s}" for k in keys))
    for rule in table:
        met, mean = score(rule, args.sets)
        print(f"{rule:13s} " + " ".join(f"{table[rule][k][0]:.2f}/{table[rule][k][1]:.2f}"
                                        for k in keys) + f"  {met} {mean:.3f}")
    for out in args.sets:
        rest = [s for s in args.sets if s != out]
        best = max(table, key=lambda r: score(r, rest))
        held = {k: table[best][k] for k in keys if k.startswith(out + "/")}
        print(f"leave {out} out: chosen {best}; on {out}: " + ", ".join(
            f"{k.split('/')[1]} {r:.3f}/{p:.3f}" for k, (r, p) in held.items()))


def loso(args: argparse.Namespace) -> None:
    """Spearman and pick of every kernel and set on a grid of constants (``--grid
    NAME=a,b,... NAME2=...``), targets met per grid point (all sets, in-sample), and
    leave-one-set-out: the point chosen on the other sets (most targets met, then the
    highest mean Spearman), scored on the set left out against the model's own."""
    import itertools

    from autotile.measure.gpu import _records_model as rm

    names = [g.split("=")[0] for g in args.grid]
    values = [[float(v) for v in g.split("=")[1].split(",")] for g in args.grid]
    own = tuple(float(getattr(rm, n)) for n in names)
    points = sorted(set(itertools.product(*values)) | {own})
    table: dict[tuple[float, ...], dict[str, tuple[float, float]]] = {}
    args.quiet = True
    for pt in points:
        for n, v in zip(names, pt):
            setattr(rm, n, v)
        table[pt] = evaluate(args)
    for n, v in zip(names, own):
        setattr(rm, n, v)
    keys = sorted(table[own])

    def score(pt: tuple[float, ...], sets: list[str]) -> tuple[int, float]:
        return targets_met([table[pt][k] for k in keys if k.split("/")[0] in sets])

    print(f"{names}: targets met of {2 * len(keys)}, mean Spearman (in-sample)")
    for pt in points:
        print(pt, *score(pt, args.sets), "(the model's)" if pt == own else "")
    for out in args.sets:
        rest = [s for s in args.sets if s != out]
        best = max(points, key=lambda q: score(q, rest))
        print(f"leave {out} out: chosen {best}; on {out}: " + ", ".join(
            f"{k.split('/')[1]} {table[best][k][0]:.3f}/{table[best][k][1]:.3f}"
            f" (model {table[own][k][0]:.3f}/{table[own][k][1]:.3f})"
            for k in keys if k.startswith(out + "/")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", required=True, choices=("features", "eval", "fit", "shares", "loso"))
    ap.add_argument("--kernels", nargs="*", default=None,
                    help="--part fit: kernels fitted on; --part features: kernels run")
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    ap.add_argument("--cache", default="/tmp/records_fit")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--set-const", nargs="*", default=None)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--grid", nargs="*", default=["LOAD_ISSUE_SLOTS=4,8,12,16",
                                                  "REDUCE_ISSUE_SLOTS=0,25,50,75,100"],
                    help="--part loso: constants and their values, NAME=a,b,...")
    args = ap.parse_args()
    {"features": features, "eval": evaluate, "fit": fit, "shares": shares,
     "loso": loso}[args.part](args)


if __name__ == "__main__":
    main()
