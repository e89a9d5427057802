"""ncu DRAM read bytes, fourth held-out check (v5) of issue #13's traffic target (CPU only).

Issue #13, "Traffic": ncu DRAM read bytes within 15% of the prediction on >= 80%
of at least 30 launches across >= 3 shapes, half of them with ``GROUP_M >= 8``.

What it does (on the CPU, no GPU):

* ``--write-configs-v5``: writes ``data/ncu_traffic_v5_configs.csv``, the v5
  device list (:data:`V5_PLAN`: 36 fp16 configs on four shapes that no
  committed ncu file holds, 19 with ``GROUP_M >= 8``). The list is committed
  before the predictions, and the predictions before the device run.
* ``--write-predictions-v5``: writes ``data/ncu_traffic_v5_predictions.csv``
  with, for every config of the list, the read bytes of the library's models
  (:data:`MODELS_V5`; the first, DRIFT_WARM, is the chosen one) and of the
  experimental variants of :data:`EXPERIMENTAL_V5` (``h200_l2_policy.py``: write
  allocation, random replacement, a mixture; none adopted, their v5 figures are
  out of sample all the same). The writers refuse to overwrite their file
  (``--force`` does).
* ``--write-predictions-v5-setassoc``: writes
  ``data/ncu_traffic_v5_predictions_setassoc.csv`` (a later commit than the
  predictions above, still before the device run): DRIFT_WARM on a hashed
  set-associative L2 of 16, 32 and 64 ways (``setassoc_read_bytes`` of
  ``h200_l2_policy.py``; experimental, not adopted).
* Compares ``data/ncu_traffic_v5_measured.csv`` with the committed predictions
  once it exists (nothing re-simulated).

v5 device command (one call: parallel compiles, then one ncu run; v4's 36
launches took 56 s)::

    python benchmarks/h200/bench_h200.py --part ncu --out $OUT \\
        --ncu-configs benchmarks/h200/data/ncu_traffic_v5_configs.csv \\
        --ncu-name ncu_traffic_v5_measured

Usage::

    python benchmarks/h200/h200_traffic_v5.py \
        [--write-configs-v5 | --write-predictions-v5 | --write-predictions-v5-setassoc
         [--force]]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from h200_l2_policy import MIB, policy_read_bytes, setassoc_read_bytes  # noqa: E402
from h200_traffic_v2 import DATA, KNOBS, TOL, Predictor, compare_v2, rows  # noqa: E402

from autotile.measure.gpu import DRIFT, DRIFT_WARM, LOCKSTEP, L2Model  # noqa: E402

#: The library models of the v5 predictions: name -> L2Model (on H200_MEASURED_L2); the
#: first is the chosen one (the traffic model of issue #13 since v4).
MODELS_V5: dict[str, L2Model] = {"drift_warm": DRIFT_WARM, "drift": DRIFT,
                                 "lockstep": LOCKSTEP}
#: Experimental columns (``h200_l2_policy.py``): name -> list of (weight, (policy,
#: write_allocate, capacity MiB, stagger, warm_steps)); the read bytes are the weighted
#: sum. ``walloc``: DRIFT_WARM whose stores take L2 space (leave one file out picks it
#: in every fold of its family); ``random``: the in-sample best random-replacement
#: candidate; ``mix_walloc``: the in-sample best of the even mixtures with DRIFT_WARM.
EXPERIMENTAL_V5: dict[str, list[tuple[float, tuple[int, int, int, float, float]]]] = {
    "walloc": [(1.0, (0, 1, 30, 0.5, 800.0))],
    "random": [(1.0, (1, 0, 30, 1.0, 800.0))],
    "mix_walloc": [(0.5, (0, 0, 30, 0.5, 800.0)), (0.5, (0, 1, 30, 1.0, 800.0))],
}

#: The v5 device list (issue #13, fourth held-out check), fixed before any v5
#: prediction was written: four fp16 shapes that no committed ncu file holds, 9
#: configs each, 19 of 36 with GROUP_M >= 8 and GROUP_M 1, 2 or 4 on every shape:
#: a square problem smaller than 8192^3 whose A and B (63 MB each) exceed the L2
#: (5632^3), M >> N with B (4.7 MB) far under the L2 (20480 x 768 x 3072; GROUP_M 64
#: with BLOCK_M 256 spans 64 of the 80 tile rows), small M and wide N (384 x 13824 x
#: 5120; B 142 MB; GROUP_M above the tile rows runs as written) and a deep K on a
#: small grid (2304 x 4352 x 19456). No committed data file (ncu or timing) holds
#: these shapes.
V5_PLAN: dict[tuple[int, int, int, str], tuple[tuple[int, ...], ...]] = {
    (5632, 5632, 5632, "float16"): (
        (128, 256, 64, 8, 8, 3), (128, 128, 64, 16, 4, 4), (64, 128, 32, 8, 4, 4),
        (256, 64, 64, 32, 4, 3), (64, 64, 64, 8, 4, 4), (128, 128, 64, 1, 4, 3),
        (64, 256, 32, 2, 4, 4), (128, 64, 64, 4, 4, 4), (32, 128, 64, 1, 4, 4)),
    (20480, 768, 3072, "float16"): (
        (128, 128, 64, 8, 4, 3), (256, 128, 64, 16, 8, 3), (64, 128, 64, 32, 4, 4),
        (128, 64, 64, 8, 4, 4), (64, 64, 32, 1, 4, 4), (128, 256, 64, 1, 8, 3),
        (128, 128, 32, 2, 4, 4), (64, 128, 64, 4, 4, 4), (256, 64, 64, 64, 4, 3)),
    (384, 13824, 5120, "float16"): (
        (64, 128, 64, 8, 4, 4), (32, 128, 64, 16, 4, 4), (128, 128, 64, 8, 4, 3),
        (64, 64, 64, 16, 4, 4), (128, 256, 64, 1, 8, 3), (32, 64, 64, 1, 2, 4),
        (64, 128, 32, 2, 4, 4), (64, 256, 64, 4, 8, 3), (16, 128, 64, 8, 4, 4)),
    (2304, 4352, 19456, "float16"): (
        (128, 128, 64, 8, 4, 3), (64, 128, 64, 8, 4, 4), (128, 256, 64, 16, 8, 3),
        (128, 64, 64, 32, 4, 4), (64, 64, 32, 4, 4, 4), (128, 128, 64, 1, 4, 3),
        (64, 128, 32, 1, 4, 4), (32, 64, 64, 2, 2, 4), (256, 128, 64, 2, 8, 3)),
}
CONFIGS_FILE_V5 = DATA / "ncu_traffic_v5_configs.csv"
PRED_FILE_V5 = DATA / "ncu_traffic_v5_predictions.csv"
MEASURED_FILE_V5 = DATA / "ncu_traffic_v5_measured.csv"
PRED_FILE_V5_SA = DATA / "ncu_traffic_v5_predictions_setassoc.csv"
#: Associativities of the set-associative columns (30 MiB, DRIFT_WARM's order).
SA_WAYS_V5 = (16, 32, 64)


def _refuse_overwrite(path: Path, force: bool, why: str) -> None:
    """Raise SystemExit if ``path`` exists and ``force`` is false (``why``: in the message)."""
    if path.exists() and not force:
        raise SystemExit(f"{path} exists ({why}); --force overwrites it")


def _write_rows(path: Path, out: list[dict[str, object]]) -> None:
    """Write ``out`` to ``path`` (header: the first row's keys) and say so."""
    with path.open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(out[0]))
        wr.writeheader()
        wr.writerows(out)
    print(f"wrote {path} ({len(out)} configs)")


def write_configs(force: bool, path: Path = CONFIGS_FILE_V5) -> None:
    """Write the v5 device list (``M, N, K, dtype`` and the six knobs, one row per config).

    Raises
    ------
    SystemExit
        If ``path`` exists and ``force`` is false.
    """
    _refuse_overwrite(path, force, "the list is fixed before the predictions")
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["M", "N", "K", "dtype", *KNOBS])
        for (M, N, K, dtype), cfgs in V5_PLAN.items():
            for c in cfgs:
                w.writerow([M, N, K, dtype, *c])
    n = sum(len(c) for c in V5_PLAN.values())
    n8 = sum(c[3] >= 8 for cfgs in V5_PLAN.values() for c in cfgs)
    print(f"wrote {path} ({n} configs, {len(V5_PLAN)} shapes, {n8} with GROUP_M >= 8)")


def write_predictions(force: bool, path: Path = PRED_FILE_V5) -> None:
    """Write ``path``: the v5 list with every model's predicted read bytes.

    Columns: ``M, N, K, dtype``, the six knobs, ``blocks_per_sm``,
    ``pred_read_bytes_<name>`` (bytes) for :data:`MODELS_V5` then
    :data:`EXPERIMENTAL_V5`, and ``compulsory_read_bytes`` (``(MK + KN) x 2``).

    Raises
    ------
    SystemExit
        If ``path`` exists and ``force`` is false, or a model calls a config
        infeasible.
    """
    _refuse_overwrite(path, force, "predictions are committed before the device run")
    pred = Predictor()
    out = []
    for (M, N, K, dtype), cfgs in V5_PLAN.items():
        for c in cfgs:
            cfg = dict(zip(KNOBS, c))
            row: dict[str, object] = {"M": M, "N": N, "K": K, "dtype": dtype, **cfg}
            b = k_merge = 0
            for name, mod in MODELS_V5.items():
                p = pred((M, N, K), dtype, cfg, mod)
                if p is None:
                    raise SystemExit(f"model {name} calls {M}x{N}x{K} {cfg} infeasible")
                b, k_merge = int(p["b"]), int(p["k_merge"])
                row["blocks_per_sm"] = b
                row[f"pred_read_bytes_{name}"] = int(round(p["read"]))
            for name, parts in EXPERIMENTAL_V5.items():
                row[f"pred_read_bytes_{name}"] = int(round(sum(
                    wt * policy_read_bytes((M, N, K), cfg, b, k_merge, cap * MIB, s, pol,
                                           bool(wa), w) for wt, (pol, wa, cap, s, w) in parts)))
            row["compulsory_read_bytes"] = (M * K + K * N) * 2
            out.append(row)
    _write_rows(path, out)


def write_predictions_setassoc(force: bool, path: Path = PRED_FILE_V5_SA) -> None:
    """Write ``path``: the v5 list with DRIFT_WARM on a set-associative L2 (:data:`SA_WAYS_V5`).

    Columns: ``M, N, K, dtype``, the six knobs, ``blocks_per_sm``,
    ``pred_read_bytes_setassoc<W>`` (bytes) per ``W`` of :data:`SA_WAYS_V5` and
    ``compulsory_read_bytes``.

    Raises
    ------
    SystemExit
        If ``path`` exists and ``force`` is false, or DRIFT_WARM calls a config
        infeasible.
    """
    _refuse_overwrite(path, force, "predictions are committed before the device run")
    pred = Predictor()
    out = []
    for (M, N, K, dtype), cfgs in V5_PLAN.items():
        for c in cfgs:
            cfg = dict(zip(KNOBS, c))
            p = pred((M, N, K), dtype, cfg, DRIFT_WARM)
            if p is None:
                raise SystemExit(f"DRIFT_WARM calls {M}x{N}x{K} {cfg} infeasible")
            row: dict[str, object] = {"M": M, "N": N, "K": K, "dtype": dtype, **cfg,
                                      "blocks_per_sm": int(p["b"])}
            vals = setassoc_read_bytes((M, N, K), cfg, int(p["b"]), int(p["k_merge"]),
                                       30 * MIB, SA_WAYS_V5)
            for w, v in zip(SA_WAYS_V5, vals):
                row[f"pred_read_bytes_setassoc{w}"] = int(round(v))
            row["compulsory_read_bytes"] = (M * K + K * N) * 2
            out.append(row)
    _write_rows(path, out)


def by_shape(pred_file: Path = PRED_FILE_V5, measured_file: Path = MEASURED_FILE_V5,
             model: str = "drift_warm") -> None:
    """Print, per shape and ``GROUP_M`` class, ``model``'s launches within 15 % and median ratio.

    Nothing is printed while ``measured_file`` does not exist.

    Parameters
    ----------
    pred_file : Path, default=PRED_FILE_V5
        Predictions CSV with a ``pred_read_bytes_<model>`` column (bytes).
    measured_file : Path, default=MEASURED_FILE_V5
        ncu CSV with ``dram_read_bytes`` (bytes) per launch; launches without it or
        without a prediction are skipped.
    model : str, default="drift_warm"
        Which prediction column to compare.
    """
    if not measured_file.exists():
        return
    pred = {tuple(r[k] for k in ("M", "N", "K", *KNOBS)): r for r in rows(pred_file)}
    cells: dict[str, list[float]] = {}
    for r in rows(measured_file):
        key = tuple(r[k] for k in ("M", "N", "K", *KNOBS))
        if key not in pred or not r.get("dram_read_bytes"):
            continue
        ratio = float(pred[key][f"pred_read_bytes_{model}"]) / float(r["dram_read_bytes"])
        g = "GROUP_M >= 8" if int(r["GROUP_M"]) >= 8 else "GROUP_M < 8"
        for lab in (f"{r['M']}x{r['N']}x{r['K']}", g):
            cells.setdefault(lab, []).append(ratio)
    print(f"\n| v5, {model} | n | within 15% | under | over | median predicted / ncu |")
    print("|---|---:|---:|---:|---:|---:|")
    for lab, v in sorted(cells.items(), key=lambda kv: kv[0].startswith("GROUP_M")):
        a = np.array(v)
        print(f"| {lab} | {a.size} | {int((np.abs(a - 1) <= TOL).sum())} | "
              f"{int((a < 1 - TOL).sum())} | {int((a > 1 + TOL).sum())} | "
              f"{np.median(a):.2f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-configs-v5", action="store_true",
                    help=f"write {CONFIGS_FILE_V5.name} (the v5 device list, V5_PLAN)")
    ap.add_argument("--force", action="store_true", help="overwrite the file written")
    ap.add_argument("--write-predictions-v5", action="store_true",
                    help=f"write {PRED_FILE_V5.name} (every model's read bytes of the list)")
    ap.add_argument("--write-predictions-v5-setassoc", action="store_true",
                    help=f"write {PRED_FILE_V5_SA.name} (set-associative DRIFT_WARM)")
    args = ap.parse_args()
    if args.write_configs_v5:
        write_configs(args.force)
    if args.write_predictions_v5:
        write_predictions(args.force)
    if args.write_predictions_v5_setassoc:
        write_predictions_setassoc(args.force)
    compare_v2(PRED_FILE_V5, MEASURED_FILE_V5, "v5")
    by_shape()
    if PRED_FILE_V5_SA.exists():
        compare_v2(PRED_FILE_V5_SA, MEASURED_FILE_V5, "v5, set associative")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
