"""A DRAM cost per contiguous read run for the records model, judged leave one set out.

The records model charges HBM reads made in short contiguous pieces a step
penalty (``SHORT_READ_PENALTY``: 15 % on reads in pieces of <= 64 bytes, 7.5 %
at 128 bytes, nothing from 256 bytes). This script scores a one-constant
replacement on every timed transpose set (the only kernel of the five whose
reads come in pieces shorter than 256 bytes: GELU, RMS norm, online softmax and
layer norm read blocks of >= 128 elements, >= 256 bytes, so their predictions
are unchanged by either form): a read run of ``L`` bytes costs the DRAM
``L + L0`` bytes' time relative to runs of >= 256 bytes, i.e. the read bytes are
weighted by ``1 + L0 * (1/L - 1/256)`` (``L`` the mean contiguous run of the
program's read ops, ``run_r`` of :func:`launch_features`, at least one 32-byte
sector). ``L0`` is fitted: 8, 12, 16, 20, 24, 32 and 48 bytes are tried.

``--part features`` runs the transpose's window for each set (the interpreter;
about 1-3 min a set on two shared cores) and caches the features as
``records_features_<set>_transpose.json`` (the cache format of
``records_fit.py``) under ``--cache`` (default ``/tmp/records_read_runs``). They
lack ``records_fit.py``'s extra L2 replays (``l2_curve``), so keep them out of its
cache: there they would replace the transpose rows, and its L2-share replays would
leave transpose unchanged without a word. ``--part loso`` prints Spearman's rho and the measured
time of the model's pick over the best measured config for every set and
candidate (in-sample), then leave one set out: the candidate chosen on the
other sets (most targets met, Spearman >= 0.8 and pick <= 1.05, then the
highest mean Spearman), scored on the set left out, against the model's own.
``--part layout`` prints, per set, Spearman's rho between the model's log
residual (measured over predicted time) on the HBM-bound plateau (read rows of
>= 128 bytes, written rows of >= 64) and quantities of Triton's blocked layout
that follow from the records: bytes per thread, rows per warp load and store
instruction at 16 bytes a thread, layout repetitions per thread, row bytes,
blocks per SM, occupancy.

    python benchmarks/h200/records_read_runs.py --part features --sets v1 v2 v3 v4 v5 v6 v7 v9 v10
    python benchmarks/h200/records_read_runs.py --part loso --sets v1 v2 v3 v4 v5 v6 v7 v9 v10
    python benchmarks/h200/records_read_runs.py --part layout --sets v5 v6 v9 v10
    python benchmarks/h200/records_read_runs.py --part scratch

``--part scratch`` (committed data only) relates the fp16 plateau's mean measured
order (v1-v7, v9; time over the ``64 x 128``, 8-warp config of each set) to
Triton's own registers and shared memory for those configs
(``records_regs_h200.csv``, v1): the rounds of the layout conversion (tile bytes
over the shared memory Triton allocated), blocks and warps per SM.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "h200"))

from records_model_h200 import DATA, SETS  # noqa: E402

#: Kernel whose window runs are cached and scored.
KERNEL = "transpose"
#: Read runs of at least this many bytes cost nothing extra (the model's own threshold).
FULL_RUN_BYTES = 256.0
#: Candidate per-run DRAM overheads, bytes.
L0_BYTES = (8, 12, 16, 20, 24, 32, 48)


def read_run_factor(run_bytes: float, l0_bytes: float) -> float:
    """Weight of read bytes moved in contiguous runs of ``run_bytes`` (>= 1).

    Parameters
    ----------
    run_bytes : float
        Mean contiguous run of the program's read ops, bytes (clipped below at
        one 32-byte sector).
    l0_bytes : float
        DRAM overhead per run, bytes.

    Returns
    -------
    float
        ``1 + l0_bytes * (1/run - 1/FULL_RUN_BYTES)``, at least 1.
    """
    r = max(float(run_bytes), 32.0)
    return 1.0 + max(l0_bytes / r - l0_bytes / FULL_RUN_BYTES, 0.0)


def features(args: argparse.Namespace) -> None:
    import records_fit

    records_fit.cache_kernel_features(args.sets, KERNEL, args.cache)


def _timed(cache: str, s: str) -> list[tuple[list[dict[str, float]], float]]:
    """(features of each launch, measured median s) of every timed transpose config."""
    path = Path(cache) / f"records_features_{s}_{KERNEL}.json"
    data = DATA / f"records_model_{s}_h200.csv"
    if not path.is_file() or not data.is_file():
        return []
    meas = {r["config"]: float(r["median_time_s"]) for r in csv.DictReader(open(data))
            if r["kernel"] == KERNEL and r["median_time_s"]}
    return [(r["launches"], meas[r["config"]]) for r in json.loads(path.read_text())
            if not r.get("reason") and r["config"] in meas]


def _candidates() -> dict[str, Callable[[dict[str, float], str], float]]:
    from autotile.measure import H200_MEASURED_L2 as hw
    from autotile.measure.gpu import _records_model as rm
    from autotile.measure.gpu._time_model import GpuModelParams

    params = GpuModelParams()
    own = rm.SHORT_READ_PENALTY

    def model(f: dict[str, float], dtype: str) -> float:
        return float(rm.launch_time(f, hw, params, dtype)["time_s"])

    def runs(l0: float) -> Callable[[dict[str, float], str], float]:
        def fn(f: dict[str, float], dtype: str) -> float:
            g = dict(f)
            g["read_b"] = f["read_b"] * read_run_factor(f["run_r"], l0)
            rm.SHORT_READ_PENALTY = 0.0
            try:
                return float(rm.launch_time(g, hw, params, dtype)["time_s"])
            finally:
                rm.SHORT_READ_PENALTY = own
        return fn

    return {"model": model, **{f"L0={b}": runs(float(b)) for b in L0_BYTES}}


def loso(args: argparse.Namespace) -> None:
    import records_fit

    sets = [s for s in args.sets if _timed(args.cache, s)]
    cands = _candidates()
    table: dict[str, dict[str, tuple[float, float]]] = {}
    for name, fn in cands.items():
        table[name] = {}
        for s in sets:
            dtype = SETS[s][KERNEL][2]
            rows = _timed(args.cache, s)
            p = np.array([sum(fn(f, dtype) for f in launches) for launches, _ in rows])
            t = np.array([m for _, m in rows])
            table[name][s] = records_fit.rank_and_pick(p, t)

    def score(name: str, among: list[str]) -> tuple[int, float]:
        return records_fit.targets_met([table[name][s] for s in among])

    print(f"{KERNEL}: Spearman / pick over best per set (in-sample), targets met of "
          f"{2 * len(sets)}, mean Spearman")
    short = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
    print(" " * 8 + " ".join(f"{s + ' ' + short[SETS[s][KERNEL][2]]:>12s}" for s in sets))
    for name in cands:
        print(f"{name:7s} " + " ".join(f"{table[name][s][0]:6.3f}/{table[name][s][1]:.3f}"
                                       for s in sets) + "  %d %.3f" % score(name, sets))
    for out in sets:
        rest = [s for s in sets if s != out]
        best = max(cands, key=lambda c: score(c, rest))
        r, p = table[best][out]
        r0, p0 = table["model"][out]
        print(f"leave {out} out: chosen {best}; held out {r:.3f}/{p:.3f} (model {r0:.3f}/{p0:.3f})")


def layout(args: argparse.Namespace) -> None:
    from scipy.stats import spearmanr

    model = _candidates()["model"]
    for s in args.sets:
        rows = _timed(args.cache, s)
        if not rows:
            continue
        dtype = SETS[s][KERNEL][2]
        item = {"float16": 2, "bfloat16": 2, "float32": 4}[dtype]
        q: dict[str, list[float]] = {}
        for launches, t in rows:
            f = launches[0]
            tile, nw = f["inflight"], f["num_warps"]
            # the written row: the tile's rows are the store's columns
            rows_r = tile / f["run_r"]
            w_run = rows_r * item
            if f["run_r"] < 128 or w_run < 64:
                continue
            res = float(np.log(t / sum(model(g, dtype) for g in launches)))
            vals = {"bytes/thread": tile / (32 * nw),
                    "rows/ld instr": 512 / min(f["run_r"], 512),
                    "rows/st instr": 512 / min(w_run, 512),
                    "reps/thread": max(1.0, tile / (512 * nw)),
                    "read row B": f["run_r"], "write row B": w_run,
                    "blocks/SM": f["bps"], "occupancy": f["occupancy"], "res": res}
            for k, v in vals.items():
                q.setdefault(k, []).append(float(v))
        print(f"{s} {dtype} plateau {len(q['res'])}: " + ", ".join(
            f"{k} {spearmanr(v, q['res']).statistic:+.2f}" for k, v in q.items() if k != "res"))


def scratch(args: argparse.Namespace) -> None:
    from records_transpose_plateau import REF, _key, measured
    from scipy.stats import spearmanr

    sets = [s for s in ("v1", "v2", "v3", "v4", "v5", "v6", "v7", "v9") if measured(s)]
    times = {s: measured(s) for s in sets}
    ref = _key(REF)
    rows = [r for r in csv.DictReader(open(DATA / "records_regs_h200.csv"))
            if r["kernel"] == KERNEL and r["set"] == "v1" and r["dtype"] == "float16"]
    q: dict[str, list[float]] = {}
    for r in rows:
        k = _key(json.loads(r["config"]))
        if k[0] < 32 or k[1] < 64:
            continue
        regs, smem, nw = int(r["n_regs"]), int(r["shared"]), k[2]
        # blocks per SM: 32 at most, 64 warps, 64 K registers, 228 KB of shared memory
        bps = min(32, 64 // nw, 65536 // (regs * 32 * nw), 233472 // max(smem, 1))
        vals = {"time": float(np.mean([times[s][k] / times[s][ref] for s in sets])),
                "cvt rounds": k[0] * k[1] * 2 / smem, "warps/SM": bps * nw,
                "blocks/SM": bps, "regs": regs}
        for n, v in vals.items():
            q.setdefault(n, []).append(float(v))
    print(f"fp16 plateau ({len(q['time'])} configs, {', '.join(sets)}): Spearman with the "
          "mean measured time: " + ", ".join(
              f"{n} {spearmanr(v, q['time']).statistic:+.2f}" for n, v in q.items()
              if n != "time"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", required=True, choices=("features", "loso", "layout", "scratch"))
    ap.add_argument("--sets", nargs="+", default=[s for s in SETS if KERNEL in SETS[s]])
    ap.add_argument("--cache", default="/tmp/records_read_runs",
                    help="feature cache; not records_fit.py's (these rows lack l2_curve)")
    args = ap.parse_args()
    {"features": features, "loso": loso, "layout": layout,
     "scratch": scratch}[args.part](args)


if __name__ == "__main__":
    main()
