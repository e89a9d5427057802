"""Layer norm's num_warps picks under the records model: the v5 miss, and what was tried.

The v5 kernels run (``autotune_kernels_gpu.py --cases v5``) missed issue #13's 90 %
on layer norm 1408 x 7600 fp16 (BLOCK 8192): the model picked 8 warps, measured
23.6 us against 20.5 for 4 warps (87.2 %). This script scores the current records
model, and variants of its time constants, on every timed layer-norm case of the
v1-v5 kernels runs (each case: one block, ``num_warps`` 1-32, all timed in the
rounds CSVs), in-sample and leaving one case out.

``--part features`` runs each config's window once (the interpreter, through
``autotile.perf_model``'s :class:`PerfModel`, the zero-shot prior) and caches every
launch's :func:`autotile.measure.gpu._records_model.launch_features` as JSON (about
20 s a case set on a free core). ``--part eval`` prints each case's predicted and
measured times and the pick's share of the best measured config under the model's
constants; ``--part grid`` scores ``ALU_CYCLES_PER_WARP_OP`` x ``REDUCE_ISSUE_SLOTS``
x ``LOAD_ISSUE_SLOTS`` on all cases (in-sample: the cases with a pick below 90 %)
and then leave one case out (the variant with the most cases >= 90 %, then the
highest median, on the other cases; ties keep the model's constants), scored on the
case left out.

    python benchmarks/h200/records_layer_norm_warps.py --part features
    python benchmarks/h200/records_layer_norm_warps.py --part eval
    python benchmarks/h200/records_layer_norm_warps.py --part grid
    python benchmarks/h200/records_layer_norm_warps.py --part lead

``--part lead`` probes the lead: the chain at 2-4 cycles per ALU warp instruction plus
0-16 cycles per element a thread loads one at a time (``ELEMENTWISE_LOAD_CYCLES``), on
the loads the records flag as ones Triton cannot vectorise (``ew_elems``; it first
checks that flag against the case's N % 16 != 0).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DATA = ROOT / "benchmarks" / "h200" / "data"
KERNEL = "layer_norm"
#: The variants of ``--part grid``: (ALU_CYCLES_PER_WARP_OP, REDUCE_ISSUE_SLOTS,
#: LOAD_ISSUE_SLOTS); the model's own (:data:`MODEL`) is one of them.
GRID = list(itertools.product((1.0, 2.0, 3.0, 4.0), (25.0, 50.0, 75.0, 100.0, 150.0),
                              (8.0, 16.0)))
#: The model's own (ALU_CYCLES_PER_WARP_OP, REDUCE_ISSUE_SLOTS, LOAD_ISSUE_SLOTS), read
#: from ``_records_model`` by :func:`main`.
MODEL = (4.0, 50.0, 8.0)
NAMES = ("ALU_CYCLES_PER_WARP_OP", "REDUCE_ISSUE_SLOTS", "LOAD_ISSUE_SLOTS")


def features(args: argparse.Namespace) -> None:
    """Cache each layer-norm config's launch features (the interpreter's window run)."""
    from autotune_kernels_gpu import CASE_SETS, Case

    from autotile.measure.gpu import H200_MEASURED_L2
    from autotile.measure.gpu import _records_model as rm
    from autotile.tuner._perf_model import PerfModel

    rm.ELEMENTWISE_TRACE = True  # ew_elems in every cached launch (the flag check)
    seen: list[dict[str, float]] = []
    orig = rm.launch_time

    def capture(f: dict[str, float], *a: Any, **k: Any) -> Any:
        seen.append(dict(f))
        return orig(f, *a, **k)

    rm.launch_time = capture
    out: dict[str, Any] = {}
    for s in args.sets:
        for kernel, shape, dtype in CASE_SETS[s]:
            if kernel != KERNEL:
                continue
            case = Case(kernel, shape, dtype, None)
            fn, named, grid = case.host_args()
            pm = PerfModel(fn, H200_MEASURED_L2, grid)
            for c in case.configs:
                seen.clear()
                pm.estimate(**named, **c.all_kwargs())
                out[f"{case.id}|{c.num_warps}"] = {"dtype": dtype, "launches": list(seen)}
            print(case.id, flush=True)
    rm.launch_time = orig
    Path(args.cache).write_text(json.dumps(out))
    print(f"wrote {args.cache}")


def measured() -> dict[str, dict[int, float]]:
    """Median time (ms) of every timed layer-norm config of the v1-v5 kernels runs."""
    times: dict[tuple[str, int], list[float]] = {}
    for path in sorted(DATA.glob("autotune_kernels*/**/autotune_kernels_rounds.csv")):
        for r in csv.DictReader(open(path)):
            if r["case"].startswith(KERNEL) and r["name"].startswith("cfg"):
                w = int(r["config"].split()[1][1:])
                times.setdefault((r["case"], w), []).append(float(r["ms"]))
    out: dict[str, dict[int, float]] = {}
    for (case, w), v in times.items():
        out.setdefault(case, {})[w] = statistics.median(v)
    return out


def score(feat: dict[str, Any], meas: dict[str, dict[int, float]], consts: tuple[float, ...],
          verbose: bool = False) -> dict[str, float]:
    """Each case's measured time of the model's pick over the best measured config."""
    from autotile.measure.gpu import H200_MEASURED_L2 as hw
    from autotile.measure.gpu import _records_model as rm
    from autotile.measure.gpu._time_model import GpuModelParams

    old = [getattr(rm, n) for n in NAMES]
    for n, v in zip(NAMES, consts):
        setattr(rm, n, v)
    params = GpuModelParams()
    res: dict[str, float] = {}
    try:
        for case in sorted(meas):
            ws = sorted(w for w in meas[case] if f"{case}|{w}" in feat)
            if not ws:
                continue
            pred = np.array([sum(rm.launch_time(f, hw, params, feat[f"{case}|{w}"]["dtype"])
                                 ["time_s"] for f in feat[f"{case}|{w}"]["launches"])
                             for w in ws])
            t = np.array([meas[case][w] for w in ws])
            res[case] = float(t.min() / t[int(np.argmin(pred))])
            if verbose:
                print(f"{case:36s} pick {ws[int(np.argmin(pred))]:2d} warps: {res[case]:.3f} | "
                      + " ".join(f"w{w}:{p * 1e6:.1f}/{m * 1e3:.1f}"
                                 for w, p, m in zip(ws, pred, t)) + "  (us predicted/measured)")
    finally:
        for n, v in zip(NAMES, old):
            setattr(rm, n, v)
    return res


#: ``--part lead``: chain cycles per element a thread loads one at a time
#: (``_records_model.ELEMENTWISE_LOAD_CYCLES``), tried.
SCALAR_CYCLES = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0)
#: ``--part lead``: ALU_CYCLES_PER_WARP_OP values tried with them.
ALU_CYCLES = (2.0, 2.5, 3.0, 3.5, 4.0)


def flag_check(feat: dict[str, Any]) -> int:
    """Print each case whose records-derived element-wise flag disagrees with N % 16.

    The flag is :func:`launch_features`' ``ew_elems`` > 0 (loads Triton cannot
    vectorise, from the records: ``_records_model.elementwise_buffers``), for every
    config of the case; the case's N comes from its id.

    Returns
    -------
    int
        Cases whose configs disagree with ``N % 16 != 0`` (0 when all agree).

    Raises
    ------
    SystemExit
        If the cache predates the flag (no ``ew_elems``): rerun ``--part features``.
    """
    import re

    cases: dict[str, set[bool]] = {}
    for k, v in feat.items():
        if any("ew_elems" not in f for f in v["launches"]):
            raise SystemExit(f"{k}: cached without ew_elems; rerun --part features")
        cases.setdefault(k.split("|")[0], set()).update(
            f["ew_elems"] > 0 for f in v["launches"])
    bad = 0
    for case, flags in sorted(cases.items()):
        n = int(re.search(r"xN(\d+)", case).group(1))  # type: ignore[union-attr]
        ok = flags == {n % 16 != 0}
        bad += not ok
        if not ok or n % 16:
            print(f"{case}: N % 16 = {n % 16}, element-wise from the records: "
                  f"{sorted(flags)}{'' if ok else '  DISAGREES'}")
    print(f"flag from the records agrees with N % 16 != 0 on {len(cases) - bad} of "
          f"{len(cases)} cases")
    return bad


def lead(feat: dict[str, Any], meas: dict[str, dict[int, float]],
         alus: tuple[float, ...] = ALU_CYCLES) -> None:
    """ALU chain cycles 2-4 x element-wise load cycles: in-sample, then leave one out.

    The element-wise loads are the records' own (``ew_elems``, :func:`flag_check`),
    charged ``ELEMENTWISE_LOAD_CYCLES`` per element a thread loads; ``alus`` are the
    ``ALU_CYCLES_PER_WARP_OP`` values tried (the model's own is added). Ties keep the
    model's own pair.
    """
    from autotile.measure.gpu import _records_model as rm

    flag_check(feat)
    own = rm.ELEMENTWISE_LOAD_CYCLES, rm.ALU_CYCLES_PER_WARP_OP
    alus = tuple(sorted(set(alus) | {own[1]}))
    res: dict[tuple[float, float], dict[str, float]] = {}
    try:
        for sc in SCALAR_CYCLES:
            rm.ELEMENTWISE_LOAD_CYCLES = sc
            for alu in alus:
                res[(sc, alu)] = score(feat, meas, (alu, 50.0, 8.0))
                print(f"element-wise {sc:4.1f} cycles, ALU {alu}: "
                      f"{_summary(list(res[(sc, alu)].values()))}")
    finally:
        rm.ELEMENTWISE_LOAD_CYCLES = own[0]
    base = own
    held = []
    for case in res[base]:
        def key(g: tuple[float, float], case: str = case) -> tuple[int, float, bool]:
            e = np.array([v for c, v in res[g].items() if c != case])
            return int((e >= 0.9).sum()), float(np.median(e)), g == base
        best = max(res, key=key)
        held.append(res[best][case])
        print(f"left out {case}: chose {best}, held out {res[best][case]:.3f}")
    print("leave one case out:", _summary(held))


def _summary(v: list[float]) -> str:
    e = np.array(v)
    return (f"{int((e >= 0.9).sum())} of {e.size} >= 90 %, median {np.median(e):.3f}, "
            f"min {e.min():.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", required=True, choices=("features", "eval", "grid", "lead"))
    ap.add_argument("--sets", nargs="+", default=["v1", "v2", "v3", "v4", "v5"])
    ap.add_argument("--cache", default="/tmp/records_layer_norm_warps.json")
    ap.add_argument("--alu", nargs="+", type=float, default=None,
                    help="--part lead: the ALU_CYCLES_PER_WARP_OP values tried "
                         "(default ALU_CYCLES)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks" / "h200"))
    from autotile.measure.gpu import _records_model as rm

    global MODEL
    MODEL = tuple(float(getattr(rm, n)) for n in NAMES)
    if args.part == "features":
        features(args)
        return
    feat = json.loads(Path(args.cache).read_text())
    meas = measured()
    if args.part == "eval":
        print(_summary(list(score(feat, meas, MODEL, verbose=True).values())))
        return
    if args.part == "lead":
        lead(feat, meas, tuple(args.alu) if args.alu else ALU_CYCLES)
        return
    res = {g: score(feat, meas, g) for g in GRID}
    for g in GRID:
        miss = ", ".join(f"{c.split(':')[1]} {v:.3f}" for c, v in res[g].items() if v < 0.9)
        print(f"{g}: {_summary(list(res[g].values()))}; below 90 %: {miss}")
    held = []
    for case in res[MODEL]:
        def key(g: tuple[float, ...], case: str = case) -> tuple[int, float, bool]:
            e = np.array([v for c, v in res[g].items() if c != case])
            return int((e >= 0.9).sum()), float(np.median(e)), g == MODEL
        best = max(GRID, key=key)
        held.append(res[best][case])
        print(f"left out {case}: chose {best}, held out {res[best][case]:.3f}")
    print("leave one case out:", _summary(held))


if __name__ == "__main__":
    main()
