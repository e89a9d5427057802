"""Where ncu's DRAM read bytes lie between simple bounds of the L2 simulator (issue #6).

For the 35 model-feasible fitting launches (``data/h200_ncu.csv``) and the 30
out-of-sample launches (``data/h200_ncu_validation.csv``) this prints, per
launch, the measured ``dram__bytes_read.sum`` and, all in MB:

* ``compulsory``: A + B read once, ``(M * K + K * N) * 2`` bytes (fp16);
* ``no reuse``: every tile load of every program from DRAM (no L2);
* ``lockstep``: lockstep waves, 2 partitions of the 60 MiB device L2;
* ``DRIFT``: :data:`~autotile.measure.gpu._l2sim.DRIFT` (stagger 0.5 on an SM);
* ``lockstep 1 part.``: lockstep waves on one undivided 60 MiB L2;
* ``DRIFT``: :data:`~autotile.measure.gpu._l2sim.DRIFT` (stagger 0.5 on an SM);
* ``desync``: the programs resident at once start at independent random
  phases spread uniformly over one program's duration, across *all* SMs
  (no co-running program is in step with any other), same 2-partition LRU;
* DRIFT on 0.8x and 1.25x the L2 (a ratio far above 1 marks an LRU cliff).

It then asks whether one mechanism (drift between SMs) puts ncu on the
``lockstep -> desync`` side in the misses and whether the amount of drift
follows the waves or memory-boundness (Spearman rho), and fits three
one-value variants on the 35 fitting launches, scoring them on the 30
held-out ones: a random global stagger ``sigma`` (phases uniform in
``[0, sigma * T)``), the same in program order, and lockstep starts with
lognormal per-program step times of coefficient of variation ``cv`` (drift
that grows with the waves).

Usage::

    python benchmarks/h200_dram_bounds.py [--quick]

``--quick`` skips the ``cv`` scan (bounds only). Runs on the CPU (a few minutes).
"""

from __future__ import annotations

import csv
import dataclasses
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autotile.measure import H200, KernelModelMeasurer  # noqa: E402
from autotile.measure.gpu._calibrate import traffic_accuracy  # noqa: E402
from autotile.measure.gpu._l2sim import DRIFT, LOCKSTEP, _sim_timed, simulate_l2  # noqa: E402
from autotile.measure.gpu._matmul_schedule import matmul_tile_schedule  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
PARTITIONS = DRIFT.partitions
#: ``cv`` values scanned for the jitter model (coefficient of variation of a
#: program's step time, dimensionless).
CV_GRID = (0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
SEED = 0
#: L2 capacity factors for the cliff test: DRIFT re-run on ``factor * l2_bytes``.
CLIFF_FACTORS = (0.8, 1.25)
#: A launch is "on an LRU cliff" when DRIFT's bytes at the two factors differ by more
#: than this ratio.
CLIFF_RATIO = 1.5


def rows(name: str) -> list[dict[str, str]]:
    """Rows of ``benchmarks/data/<name>`` as dicts of strings."""
    with (DATA / name).open() as f:
        return list(csv.DictReader(f))


def device_l2_bytes() -> int:
    """L2 size the H200 reported (``h200_env.csv``, ``main.l2_bytes``), bytes."""
    return int(next(r["value"] for r in rows("h200_env.csv") if r["key"] == "main.l2_bytes"))


@dataclasses.dataclass
class Launch:
    """One ncu launch with its model geometry and bounds (bytes)."""

    set: str
    shape: tuple[int, int, int]
    cfg: dict[str, int]
    ncu: float
    b: int
    n_waves: float
    k_merge: int
    mem_over_compute: float
    bounds: dict[str, float] = dataclasses.field(default_factory=dict)

    @property
    def label(self) -> str:
        """``MxNxK BM BN BK GROUP_M warps stages``."""
        return (f"{'x'.join(map(str, self.shape))} "
                f"{' '.join(str(self.cfg[k]) for k in KNOBS)}")


#: The ncu sets of :func:`load_launches` by default: tag -> CSV in ``benchmarks/data``.
NCU_SETS = {"fit": "h200_ncu.csv", "val": "h200_ncu_validation.csv"}


def load_launches(sets: dict[str, str] | None = None, l2_bytes: int | None = None
                  ) -> list[Launch]:
    """Feasible launches of ``sets`` (default :data:`NCU_SETS`: the 35 fitting and 30
    validation launches) with DRIFT's geometry and ncu read bytes, on ``l2_bytes``
    (default: the device-reported L2)."""
    hw = dataclasses.replace(H200, l2_bytes=device_l2_bytes() if l2_bytes is None
                             else l2_bytes)
    meas: dict[tuple[int, int, int], KernelModelMeasurer] = {}
    out = []
    for tag, name in (NCU_SETS if sets is None else sets).items():
        for r in rows(name):
            shp = (int(r["M"]), int(r["N"]), int(r["K"]))
            cfg = {k: int(r[k]) for k in KNOBS}
            if shp not in meas:
                meas[shp] = KernelModelMeasurer("matmul", dict(zip("MNK", shp)), hardware=hw,
                                                l2_model=DRIFT)
            res = meas[shp].measure(cfg)
            if not res.ok:
                continue
            m = res.metrics
            ln = Launch(tag, shp, cfg, float(r["dram_read_bytes"]), int(m["blocks_per_sm"]),
                        m["n_waves"], int(m["k_merge"]), m["memory_s"] / m["compute_s"])
            ln.bounds["DRIFT"] = m["hbm_read_bytes"]
            out.append(ln)
    return out


def _schedule(ln: Launch) -> tuple[Any, int]:
    c = ln.cfg
    return matmul_tile_schedule(*ln.shape, c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"],
                                c["GROUP_M"], k_merge=ln.k_merge, max_probe_programs=4096)


def _prefix(sched: Any, n_prog: int, n_conc: int) -> tuple[int, float]:
    """Simulated programs and byte scale, as :func:`simulate_l2` does for a probe prefix."""
    if n_prog > sched.n_programs:
        full = (sched.n_programs // n_conc) * n_conc
        p_hi = full if full > 0 else sched.n_programs
        return p_hi, n_prog / p_hi
    return sched.n_programs, 1.0


def timed_read_bytes(ln: Launch, cap: int, start0: np.ndarray, step_t: np.ndarray | None
                     ) -> float:
    """HBM read bytes of a time-ordered replay with given slot starts and step times."""
    sched, n_prog = _schedule(ln)
    n_conc = H200.n_sms * ln.b
    p_hi, scale = _prefix(sched, n_prog, n_conc)
    s = sched
    steps = np.ones(p_hi, np.float64) if step_t is None else step_t[:p_hi]
    out = _sim_timed(s.prog_seg_ptr, s.seg_n_steps, s.seg_op_ptr, s.op_base, s.op_stride,
                     s.op_lo, s.op_hi, s.op_write, s.tile_bytes, n_conc, cap, p_hi, start0,
                     np.ascontiguousarray(steps, np.float64))
    return float(out[2]) * scale


def duration_steps(ln: Launch) -> float:
    """Simulated steps of one program (K steps after merging)."""
    sched, _ = _schedule(ln)
    return float(sched.seg_n_steps[sched.prog_seg_ptr[0]:sched.prog_seg_ptr[1]].sum())


def compute_bounds(launches: list[Launch], l2_bytes: int) -> None:
    """Fill the bounds (bytes): compulsory, no reuse, lockstep (2 partitions and 1),
    desync, and DRIFT on 0.8x and 1.25x the L2 (cliff test)."""
    cap = l2_bytes // PARTITIONS
    for ln in launches:
        M, N, K = ln.shape
        c = ln.cfg
        npm, npn, nk = -(-M // c["BLOCK_M"]), -(-N // c["BLOCK_N"]), -(-K // c["BLOCK_K"])
        ln.bounds["compulsory"] = float((M * K + K * N) * 2)
        ln.bounds["no reuse"] = float(npm * npn * nk * (c["BLOCK_M"] + c["BLOCK_N"])
                                      * c["BLOCK_K"] * 2)
        sched, n_prog = _schedule(ln)
        n_conc = H200.n_sms * ln.b
        ln.bounds["lockstep"] = simulate_l2(sched, l2_bytes=cap, n_concurrent=n_conc,
                                            total_programs=n_prog, model=LOCKSTEP
                                            ).hbm_read_bytes
        ln.bounds["lockstep 1 part."] = simulate_l2(sched, l2_bytes=l2_bytes,
                                                    n_concurrent=n_conc,
                                                    total_programs=n_prog).hbm_read_bytes
        ln.bounds["desync"] = global_stagger_read_bytes(ln, cap, 1.0)
        for f in CLIFF_FACTORS:
            ln.bounds[f"DRIFT x{f}"] = simulate_l2(sched, l2_bytes=int(l2_bytes * f),
                                                   n_concurrent=n_conc, total_programs=n_prog,
                                                   model=DRIFT, n_sms=H200.n_sms
                                                   ).hbm_read_bytes


def jitter_read_bytes(ln: Launch, cap: int, cv: float, seed: int = SEED) -> float:
    """Lockstep start, lognormal per-program step time with coefficient of variation ``cv``."""
    n_conc = H200.n_sms * ln.b
    sched, _ = _schedule(ln)
    rng = np.random.default_rng(seed)
    sig = np.sqrt(np.log1p(cv * cv))
    step_t = np.exp(rng.normal(-sig * sig / 2, sig, sched.n_programs)) if cv > 0 else \
        np.ones(sched.n_programs)
    return timed_read_bytes(ln, cap, np.zeros(n_conc), step_t)


def where(ln: Launch) -> str:
    """ncu relative to the lockstep -> desync interval."""
    lo, hi, x = ln.bounds["lockstep"], ln.bounds["desync"], ln.ncu
    a, b = min(lo, hi), max(lo, hi)
    if x < a * 0.9:
        return "below both"
    if x > b * 1.1:
        return "above both"
    if abs(hi - lo) < 0.1 * x:
        return "both ~equal"
    return f"{(x - lo) / (hi - lo):.2f} of way"


def cliff(ln: Launch) -> float:
    """DRIFT's bytes on 0.8x the L2 over those on 1.25x (1: flat; large: an LRU cliff)."""
    return ln.bounds[f"DRIFT x{CLIFF_FACTORS[0]}"] / ln.bounds[f"DRIFT x{CLIFF_FACTORS[1]}"]


def print_bounds(launches: list[Launch]) -> None:
    print("\n### ncu DRAM read bytes against bounds (MB)\n")
    print("desync = all co-running programs at independent random phases (2 partitions of "
          "60 MiB); position = (ncu - lockstep) / (desync - lockstep).\n")
    print("| set | shape, BM BN BK GROUP_M warps stages | b | waves | mem/comp | ncu | "
          "compulsory | no reuse | lockstep | lockstep 1 part. | DRIFT | desync | DRIFT/ncu | "
          "desync/ncu | position | DRIFT on 0.8x / 1.25x L2 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
          "---: | ---: | --- | ---: |")
    for ln in launches:
        bd = ln.bounds
        miss = abs(bd["DRIFT"] / ln.ncu - 1) > 0.1
        print(f"| {ln.set}{' **miss**' if miss else ''} | {ln.label} | {ln.b} | "
              f"{ln.n_waves:.0f} | {ln.mem_over_compute:.2f} | {ln.ncu / 1e6:.0f} | "
              f"{bd['compulsory'] / 1e6:.0f} | {bd['no reuse'] / 1e6:.0f} | "
              f"{bd['lockstep'] / 1e6:.0f} | {bd['lockstep 1 part.'] / 1e6:.0f} | "
              f"{bd['DRIFT'] / 1e6:.0f} | {bd['desync'] / 1e6:.0f} | "
              f"{bd['DRIFT'] / ln.ncu:.2f} | {bd['desync'] / ln.ncu:.2f} | {where(ln)} | "
              f"{cliff(ln):.2f} |")


def summary(launches: list[Launch]) -> dict[str, Any]:
    """Counts of where the DRIFT misses lie and accuracy of each bound as a predictor."""
    out: dict[str, Any] = {}
    print("\n### Each bound used as the prediction\n")
    print("| predictor | fit: within 10% | fit: within 25% | held out: within 10% | "
          "held out: within 25% | held out: median pred/ncu |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for key in ("compulsory", "lockstep", "DRIFT", "desync", "no reuse"):
        accs = []
        for tag in ("fit", "val"):
            sel = [ln for ln in launches if ln.set == tag]
            accs.append(traffic_accuracy([ln.bounds[key] for ln in sel],
                                         [ln.ncu for ln in sel]))
        out[key] = accs
        print(f"| {key} | {accs[0]['within_10']:.0%} | {accs[0]['within_25']:.0%} | "
              f"{accs[1]['within_10']:.0%} | {accs[1]['within_25']:.0%} | "
              f"{accs[1]['median_ratio']:.3f} |")
    misses = [ln for ln in launches if abs(ln.bounds["DRIFT"] / ln.ncu - 1) > 0.1]
    under = [ln for ln in misses if ln.bounds["DRIFT"] < ln.ncu]
    over = [ln for ln in misses if ln.bounds["DRIFT"] > ln.ncu]

    def between(ln: Launch) -> bool:
        lo, hi = sorted((ln.bounds["lockstep"], ln.bounds["desync"]))
        return lo * 0.9 <= ln.ncu <= hi * 1.1

    print(f"\nDRIFT misses (outside 10%): {len(misses)} of {len(launches)}; under-predicted "
          f"{len(under)}, over-predicted {len(over)}.")
    for name, grp in (("under", under), ("over", over)):
        n_btw = sum(between(ln) for ln in grp)
        n_dsy = sum(abs(ln.bounds["desync"] / ln.ncu - 1) <= 0.1 for ln in grp)
        n_above = sum(ln.ncu > 1.1 * max(ln.bounds["lockstep"], ln.bounds["desync"])
                      for ln in grp)
        n_below = sum(ln.ncu < 0.9 * min(ln.bounds["lockstep"], ln.bounds["desync"])
                      for ln in grp)
        print(f"* {name}-predicted: ncu within [lockstep, desync] (±10%) in {n_btw}, "
              f"desync within 10% in {n_dsy}, ncu above both in {n_above}, below both in "
              f"{n_below}.")
        out[name] = dict(n=len(grp), between=n_btw, desync10=n_dsy, above=n_above,
                         below=n_below)
    hits = [ln for ln in launches if ln not in misses]
    n_cm = sum(cliff(ln) > CLIFF_RATIO for ln in misses)
    n_ch = sum(cliff(ln) > CLIFF_RATIO for ln in hits)
    print(f"\nLRU cliff (DRIFT on 0.8x / 1.25x the L2 > {CLIFF_RATIO}): {n_cm} of "
          f"{len(misses)} misses, {n_ch} of {len(hits)} launches within 10%.")
    out["cliff"] = dict(misses=n_cm, n_misses=len(misses), hits=n_ch, n_hits=len(hits))
    return out


def global_stagger_read_bytes(ln: Launch, cap: int, sigma: float, seed: int = SEED) -> float:
    """Co-running programs start at random phases in ``[0, sigma * T)`` (T: program steps)."""
    n_conc = H200.n_sms * ln.b
    rng = np.random.default_rng(seed)
    start0 = rng.permutation(n_conc) * (sigma * duration_steps(ln) / n_conc)
    return timed_read_bytes(ln, cap, start0.astype(np.float64), None)


def ordered_stagger_read_bytes(ln: Launch, cap: int, sigma: float) -> float:
    """Slot ``j`` of the first wave starts at ``sigma * T * j / n_concurrent`` (program order)."""
    n_conc = H200.n_sms * ln.b
    start0 = np.arange(n_conc, dtype=np.float64) * (sigma * duration_steps(ln) / n_conc)
    return timed_read_bytes(ln, cap, start0, None)


#: The three one-value variants scanned: name -> (grid, predictor(launch, cap, value)).
VARIANTS = {
    "global stagger sigma": ((0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0),
                             global_stagger_read_bytes),
    "global stagger sigma, in program order": ((0.0, 0.25, 0.375, 0.5, 0.75),
                                               ordered_stagger_read_bytes),
    "jitter cv": (CV_GRID, jitter_read_bytes),
}


def variant_scan(launches: list[Launch], cap: int) -> dict[str, Any]:
    """Fit each variant's one value on the fitting launches, score it on the held-out ones.

    The value maximises the fitting launches within 10%, then within 25%, then is the
    smallest. Returns, per variant, the fitted value, accuracies and predictions (bytes).
    """
    out: dict[str, Any] = {}
    for name, (grid, fn) in VARIANTS.items():
        print(f"\n### Variant: {name} (2 partitions of 60 MiB), fitted on the 35 fitting "
              "launches\n")
        print("| value | fit: within 10% | fit: within 25% | held out: within 10% | "
              "held out: within 25% | held out: median pred/ncu |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        res: dict[float, list[dict[str, float]]] = {}
        preds: dict[float, list[float]] = {}
        for v in grid:
            preds[v] = [fn(ln, cap, v) for ln in launches]
            accs = []
            for tag in ("fit", "val"):
                idx = [i for i, ln in enumerate(launches) if ln.set == tag]
                accs.append(traffic_accuracy([preds[v][i] for i in idx],
                                             [launches[i].ncu for i in idx]))
            res[v] = accs
            print(f"| {v} | {accs[0]['within_10']:.0%} | {accs[0]['within_25']:.0%} | "
                  f"{accs[1]['within_10']:.0%} | {accs[1]['within_25']:.0%} | "
                  f"{accs[1]['median_ratio']:.3f} |")
        best = max(grid, key=lambda v: (res[v][0]["within_10"], res[v][0]["within_25"], -v))
        print(f"\nFitted {name} = {best}: held out {res[best][1]['within_10']:.0%} within "
              f"10%, {res[best][1]['within_25']:.0%} within 25% (DRIFT: 63% / 80%).")
        out[name] = {"value": best, "acc": res, "pred": preds}
    return out


def correlations(launches: list[Launch]) -> dict[str, float]:
    """Spearman rho of ncu's position on [lockstep, desync] with waves, memory-boundness, b.

    Only launches where desync and lockstep differ by more than 10% of ncu.
    """
    from scipy.stats import spearmanr

    sel = [ln for ln in launches if abs(ln.bounds["desync"] - ln.bounds["lockstep"])
           > 0.1 * ln.ncu]
    pos = np.array([(ln.ncu - ln.bounds["lockstep"])
                    / (ln.bounds["desync"] - ln.bounds["lockstep"]) for ln in sel])
    feats = {"waves": [ln.n_waves for ln in sel],
             "memory_s / compute_s (DRIFT)": [ln.mem_over_compute for ln in sel],
             "programs per SM b": [ln.b for ln in sel],
             "GROUP_M": [ln.cfg["GROUP_M"] for ln in sel],
             "BLOCK_K": [ln.cfg["BLOCK_K"] for ln in sel],
             "min(BLOCK_M, BLOCK_N)": [min(ln.cfg["BLOCK_M"], ln.cfg["BLOCK_N"]) for ln in sel]}
    print(f"\n### Does the amount of drift follow waves or memory-boundness? ({len(sel)} "
          "launches where desync and lockstep differ by > 10%)\n")
    print(f"position = (ncu - lockstep) / (desync - lockstep): median {np.median(pos):.2f}, "
          f"quartiles {np.quantile(pos, 0.25):.2f}-{np.quantile(pos, 0.75):.2f}\n")
    print("| feature | Spearman rho with position | p |")
    print("| --- | ---: | ---: |")
    out = {}
    for k, v in feats.items():
        r = spearmanr(v, pos)
        out[k] = float(r.statistic)
        print(f"| {k} | {r.statistic:+.2f} | {r.pvalue:.2g} |")
    return out


def main(argv: list[str]) -> int:
    l2 = device_l2_bytes()
    launches = load_launches()
    compute_bounds(launches, l2)
    print_bounds(launches)
    summary(launches)
    correlations(launches)
    if "--quick" not in argv:
        variant_scan(launches, l2 // PARTITIONS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
