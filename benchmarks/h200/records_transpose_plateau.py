"""Why the records model missed transpose's rank target at v10 (fp32): the plateau.

The v10 check (``records_model_h200.py --set v10``) timed the transpose in fp32
for the first time; the rank target (Spearman >= 0.8) was missed (0.653) while
every fp16 transpose check met it. This script reads only committed data and
prints:

``--part cross`` (measured timings only, seconds)
    The HBM-bound *plateau* of each timed transpose set: the configs with
    ``BLOCK_N >= 64`` and at least 2048 elements per tile, each config's time
    over the set's median plateau time, and Spearman's rho of that order
    between every pair of sets (is the order a property of the config or of
    the shape?). Then every config's time over the ``64 x 128, 8 warps``
    config of its set, fp16 (mean, min, max over the fp16 sets) against fp32
    (v10), and rho between the fp32 order and the fp16 order at twice the
    ``BLOCK_N`` (the same bytes per tile row).
``--part model`` (the interpreter: about a minute per set)
    The current records model's Spearman and pick over best measured for each
    timed transpose set, and the same over the plateau alone.

    python benchmarks/h200/records_transpose_plateau.py --part cross
    python benchmarks/h200/records_transpose_plateau.py --part model --sets v9 v10
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

#: The reference config of the byte-equivalence table (on the plateau in every set).
REF = {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 8}


def _key(cfg: dict[str, int]) -> tuple[int, int, int]:
    return cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"]


def measured(set_name: str) -> dict[tuple[int, int, int], float]:
    """Median measured time (s) of every transpose config that ran in one set.

    Parameters
    ----------
    set_name : str
        A key of ``SETS`` with a data file ``records_model_<set>_h200.csv``.

    Returns
    -------
    dict of (BLOCK_M, BLOCK_N, num_warps) to float
        Seconds; empty if the set timed no transpose.
    """
    path = DATA / f"records_model_{set_name}_h200.csv"
    if not path.is_file():
        return {}
    return {_key(json.loads(r["config"])): float(r["median_time_s"])
            for r in csv.DictReader(open(path))
            if r["kernel"] == "transpose" and r["median_time_s"]}


def _on_plateau(k: tuple[int, int, int]) -> bool:
    return k[1] >= 64 and k[0] * k[1] >= 2048


def cross(args: argparse.Namespace) -> None:
    from scipy.stats import spearmanr

    times = {s: measured(s) for s in args.sets}
    sets = [s for s in args.sets if times[s]]
    dtype = {s: SETS[s]["transpose"][2] for s in sets}
    common = sorted(set.intersection(*(set(times[s]) for s in sets)))
    plat = [k for k in common if _on_plateau(k)]
    x = np.array([[times[s][k] for k in plat] for s in sets])
    x = x / np.median(x, axis=1, keepdims=True)
    print(f"plateau: {len(plat)} configs (BLOCK_N >= 64, >= 2048 elements); "
          "Spearman of their measured order between sets")
    print("      " + " ".join(f"{s:>5s}" for s in sets))
    for i, s in enumerate(sets):
        print(f"{s:>5s} " + " ".join(f"{spearmanr(x[i], x[j]).statistic:5.2f}"
                                     for j in range(len(sets))))
    print("plateau spread (slowest / fastest): "
          + ", ".join(f"{s} {row.max() / row.min():.3f}" for s, row in zip(sets, x)))
    half = [s for s in sets if dtype[s] == "float16"]
    full = [s for s in sets if dtype[s] == "float32"]
    if not half or not full:
        return
    ref = _key(REF)
    rel16 = {k: np.array([times[s][k] / times[s][ref] for s in half]) for k in common}
    print(f"\ntime over {REF} of the same set: fp16 ({', '.join(half)}) mean [min, max] "
          f"| fp32 ({', '.join(full)}) | fp16 at 2 x BLOCK_N (same bytes per row)")
    a, b = [], []
    for k in common:
        r32 = [times[s][k] / times[s][ref] for s in full]
        twin = (k[0], 2 * k[1], k[2])
        t16 = f"{rel16[twin].mean():.3f}" if twin in rel16 else "  -  "
        if twin in rel16:
            a.append(float(np.mean(r32)))
            b.append(float(rel16[twin].mean()))
        v = rel16[k]
        print(f"{k[0]:4d} x {k[1]:3d} w{k[2]}  {v.mean():.3f} [{v.min():.3f}, {v.max():.3f}] | "
              + " ".join(f"{r:.3f}" for r in r32) + f" | {t16}")
    same32 = [float(np.mean([times[s][k] / times[s][ref] for s in full])) for k in common]
    same16 = [float(rel16[k].mean()) for k in common]
    print(f"fp32 order against the fp16 order at 2 x BLOCK_N: Spearman "
          f"{spearmanr(a, b).statistic:.3f} over {len(a)} configs; against fp16 at the same "
          f"BLOCK_N: {spearmanr(same32, same16).statistic:.3f} over {len(common)}")


def model(args: argparse.Namespace) -> None:
    from scipy.stats import spearmanr

    from autotile.measure import H200_MEASURED_L2, KernelModelMeasurer

    for s in args.sets:
        t = measured(s)
        if not t:
            continue
        spec, shape, dtype = SETS[s]["transpose"]
        m = KernelModelMeasurer(spec, shape, H200_MEASURED_L2, dtype=dtype)
        pred = {}
        for i in range(m.space.size):
            cfg = dict(m.space.config_at(i))
            r = m.measure(cfg)
            if r.ok and _key(cfg) in t:
                pred[_key(cfg)] = float(r.metrics["time_s"])
        ks = sorted(pred)
        p = np.array([pred[k] for k in ks])
        y = np.array([t[k] for k in ks])
        on = np.array([_on_plateau(k) for k in ks])
        print(f"{s:>4s} {dtype:8s} {json.dumps(shape):26s} configs {len(ks)}: Spearman "
              f"{spearmanr(p, y).statistic:.3f}, pick/best {y[np.argmin(p)] / y.min():.3f}; "
              f"plateau ({int(on.sum())}): Spearman {spearmanr(p[on], y[on]).statistic:.3f}",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", required=True, choices=("cross", "model"))
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    args = ap.parse_args()
    {"cross": cross, "model": model}[args.part](args)


if __name__ == "__main__":
    main()
