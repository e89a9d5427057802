"""ncu DRAM read bytes against the L2 models: in sample, leave-one-shape-out, and the v2 plan.

Issue #13, "Traffic": ncu DRAM read bytes within 15% of the prediction on >= 80%
of at least 30 launches across >= 3 shapes, half of them with ``GROUP_M >= 8``.

What it does (on the CPU, no GPU):

* **In sample.** Predicts the read bytes of every model-feasible launch of the
  four ncu files already measured on the H200 (``data/h200_ncu.csv``: 35
  feasible of 40, ``h200_ncu_validation.csv``: 30, ``h200_power_ncu.csv``: 25,
  ``h200_power2_ncu.csv``: 21; 111 launches on three shapes, all fp16) with
  :data:`~autotile.measure.gpu.LOCKSTEP` (the default of ``KernelModelMeasurer``
  and of ``@autotune``'s zero-shot ranking) and
  :data:`~autotile.measure.gpu.DRIFT`, both on
  :data:`~autotile.measure.gpu.H200_MEASURED_L2` (60 MiB), and prints the
  share within 15% per file, per ``GROUP_M`` class and per shape. DRIFT's one
  constant (``stagger``) was fitted on ``h200_ncu.csv`` in an earlier session,
  so only the other three files are out of its sample.
* **``--scan``.** A grid of ``L2Model(stagger=s)`` on a capacity of
  ``f x 60 MiB`` (``f = 0.5`` with ``s = 0.5`` is DRIFT); the pair is chosen
  by the most launches within 15% (ties: the smaller mean ``|log ratio|``),
  in sample and leave-one-shape-out (fit on two shapes, score the third).
* **``--write-predictions``.** Writes ``data/ncu_traffic_v2_predictions.csv``:
  the v2 device list (:data:`V2_PLAN`, 32 configs on 4 shapes no earlier file
  holds, 17 with ``GROUP_M >= 8``, fp16 and bf16) with each model's predicted
  read bytes. It refuses to overwrite the file (``--force`` does): the
  predictions are committed before the device run.
* If ``data/ncu_traffic_v2_measured.csv`` exists, compares it with those
  committed predictions (nothing re-simulated). Since that run the 32 v2
  launches are part of the launches above (143 in all, seven shapes): in sample
  for anything chosen after it. The v3 file (36 launches, four more shapes) is
  loaded too since its run: 179 launches on eleven shapes.
* **``--warm``.** The experimental "drift_warm" model (:func:`warm_stagger`:
  DRIFT's stagger reached only after ``WARM_STEPS`` program steps of the launch),
  its constant scanned with leave-one-shape-out and leave-one-file-out.
* **``--write-predictions-v3``.** Writes ``data/ncu_traffic_v3_predictions.csv``
  for :data:`V3_PLAN` (36 configs on 4 new shapes, 18 with ``GROUP_M >= 8``),
  with LOCKSTEP, DRIFT, drift_mix and drift_warm read bytes; compared with
  ``data/ncu_traffic_v3_measured.csv`` once that exists.

Device command (one call: parallel compiles, then one ncu run; the 30-launch
validation's ncu run took 38 s; run in session 9, 55 s)::

    python benchmarks/h200/bench_h200.py --part ncu --out $OUT \\
        --ncu-configs benchmarks/h200/data/ncu_traffic_v2_predictions.csv \\
        --ncu-name ncu_traffic_v2_measured

v3 device command (the same part; not yet run)::

    python benchmarks/h200/bench_h200.py --part ncu --out $OUT \\
        --ncu-configs benchmarks/h200/data/ncu_traffic_v3_predictions.csv \\
        --ncu-name ncu_traffic_v3_measured

Usage::

    python benchmarks/h200/h200_traffic_v2.py [--scan] [--mix] [--warm]
        [--write-predictions | --write-predictions-v3 [--force]]
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotile.measure import KernelModelMeasurer  # noqa: E402
from autotile.measure.gpu import DRIFT, H200_MEASURED_L2, LOCKSTEP, L2Model  # noqa: E402
from autotile.measure.gpu._l2sim import _sim_timed, _stagger_starts, simulate_l2  # noqa: E402
from autotile.measure.gpu._matmul_schedule import matmul_tile_schedule  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
#: The ncu files measured so far: tag -> CSV under ``data/`` (fp16 unless a ``dtype``
#: column says otherwise; "v2" and "v3" are the first two held-out checks, in sample
#: for anything chosen after them).
SETS = {"fit": "h200_ncu.csv", "val": "h200_ncu_validation.csv",
        "pow": "h200_power_ncu.csv", "pow2": "h200_power2_ncu.csv",
        "v2": "ncu_traffic_v2_measured.csv", "v3": "ncu_traffic_v3_measured.csv"}
#: The models compared: name -> L2Model (on H200_MEASURED_L2).
MODELS: dict[str, L2Model] = {"lockstep": LOCKSTEP, "drift": DRIFT}
#: Tolerance of the issue's criterion (relative).
TOL = 0.15
#: ``--scan`` grid: stagger values and capacity factors (of the 60 MiB L2).
SCAN_STAGGER = (0.25, 0.5, 0.75, 1.0)
SCAN_CAP = (0.3, 0.375, 0.425, 0.5, 0.625, 0.75, 1.0)
#: Experimental "drift_warm": DRIFT's stagger reached after this many program steps of
#: the launch (waves x K steps); chosen in sample (``--warm``) from :data:`WARM_SCAN`.
WARM_STEPS = 800.0
WARM_SCAN = (300.0, 500.0, 800.0, 1200.0)
#: Ramps of "drift_warm_mix" (``--warm``): the largest one averaged is scanned.
WARM_MIX_SCAN = (0.0, 0.1, 0.2, 0.3)
#: ``--mix``: ramps of the SM-order stagger averaged by the experimental "drift_mix"
#: model (fractions of a program's duration; see :func:`drift_mix_read_bytes`).
MIX_SIGMAS = (0.0, 0.1, 0.2)
PRED_FILE = DATA / "ncu_traffic_v2_predictions.csv"
MEASURED_FILE = DATA / "ncu_traffic_v2_measured.csv"

#: The v2 device list: (M, N, K, dtype) -> configs (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
#: num_warps, num_stages). Four shapes no earlier data file holds: small M (320,
#: bf16), sizes that are not multiples of 128 (6000 x 4880 x 7056, fp16; all
#: multiples of 16, so Triton still vectorises the loads), deep K (18432, fp16)
#: and M >> N (bf16). 17 of the 32 have GROUP_M >= 8; 128x128x64 GROUP_M=8 at
#: M=320 (3 tile rows) runs as written and is scored as its equivalent GROUP_M=4.
V2_PLAN: dict[tuple[int, int, int, str], tuple[tuple[int, ...], ...]] = {
    (320, 9216, 6144, "bfloat16"): (
        (32, 128, 64, 8, 4, 4), (32, 128, 64, 16, 4, 4), (16, 256, 64, 8, 4, 3),
        (64, 128, 64, 8, 4, 4), (128, 128, 64, 8, 4, 3), (32, 64, 64, 1, 2, 4),
        (64, 256, 32, 1, 8, 3), (16, 128, 128, 2, 4, 3)),
    (6000, 4880, 7056, "float16"): (
        (128, 256, 64, 8, 8, 3), (128, 128, 32, 8, 4, 4), (64, 128, 64, 16, 4, 4),
        (128, 64, 64, 32, 4, 4), (128, 128, 64, 1, 4, 3), (64, 64, 64, 4, 4, 3),
        (256, 128, 64, 2, 8, 3), (32, 64, 32, 1, 2, 5)),
    (2816, 3328, 18432, "float16"): (
        (128, 128, 64, 8, 4, 3), (64, 256, 32, 8, 4, 4), (128, 64, 64, 16, 4, 4),
        (256, 64, 64, 8, 4, 3), (128, 256, 64, 1, 8, 3), (64, 64, 128, 2, 4, 3),
        (64, 128, 32, 4, 4, 4), (32, 128, 64, 1, 4, 3)),
    (14336, 1536, 5120, "bfloat16"): (
        (128, 128, 64, 8, 4, 3), (256, 64, 64, 16, 4, 3), (64, 128, 64, 32, 4, 4),
        (128, 64, 32, 64, 4, 4), (128, 256, 64, 1, 8, 3), (64, 64, 64, 2, 4, 3),
        (128, 32, 64, 4, 4, 4), (64, 256, 32, 4, 4, 4)),
}


#: The v3 device list (issue #13, second held-out check), chosen after the v2 run: four
#: shapes that no data file holds, 9 configs each, 18 of 36 with GROUP_M >= 8: small M
#: (416 = 13 x 32, bf16, N >> M), deep K (16384, fp16), M >> N with B (22 MB) under half
#: the L2 (bf16), and sizes that are not multiples of 128 (5040 x 8208 x 3024, fp16;
#: multiples of 16). GROUP_M above the tile rows (64 x 128 GROUP_M 16 at M = 416: 7 rows)
#: runs as written.
V3_PLAN: dict[tuple[int, int, int, str], tuple[tuple[int, ...], ...]] = {
    (416, 11008, 4096, "bfloat16"): (
        (32, 128, 64, 8, 4, 4), (64, 128, 64, 16, 4, 4), (16, 256, 64, 8, 4, 3),
        (128, 64, 64, 8, 4, 4), (32, 64, 64, 1, 2, 4), (64, 128, 32, 1, 4, 4),
        (32, 256, 64, 2, 8, 3), (64, 64, 64, 4, 4, 3), (128, 128, 64, 1, 4, 3)),
    (3072, 5120, 16384, "float16"): (
        (128, 256, 64, 8, 8, 3), (128, 128, 64, 16, 4, 4), (64, 128, 32, 8, 4, 4),
        (256, 128, 64, 32, 8, 3), (64, 64, 64, 8, 4, 4), (128, 128, 32, 1, 4, 4),
        (32, 128, 64, 2, 4, 4), (128, 64, 64, 4, 4, 3), (64, 256, 64, 1, 8, 3)),
    (10240, 3072, 3584, "bfloat16"): (
        (128, 128, 64, 8, 4, 4), (128, 256, 64, 16, 8, 3), (64, 64, 32, 32, 4, 4),
        (256, 64, 64, 8, 4, 3), (128, 64, 64, 64, 4, 4), (64, 128, 64, 1, 4, 4),
        (32, 64, 64, 2, 2, 4), (128, 128, 32, 4, 4, 4), (128, 32, 64, 1, 4, 4)),
    (5040, 8208, 3024, "float16"): (
        (128, 128, 64, 8, 4, 3), (64, 128, 64, 8, 4, 4), (128, 64, 32, 16, 4, 4),
        (64, 64, 64, 32, 4, 3), (256, 128, 64, 4, 8, 3), (128, 256, 64, 2, 8, 3),
        (32, 64, 32, 1, 2, 5), (64, 128, 32, 1, 4, 4), (128, 128, 64, 1, 8, 4)),
}
PRED_FILE_V3 = DATA / "ncu_traffic_v3_predictions.csv"
MEASURED_FILE_V3 = DATA / "ncu_traffic_v3_measured.csv"

def rows(path: Path) -> list[dict[str, str]]:
    """Rows of a CSV as dicts of strings."""
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


class Predictor:
    """Read-byte predictions of the matmul GPU model, one measurer per (shape, dtype, model)."""

    def __init__(self) -> None:
        self._meas: dict[tuple[Any, ...], KernelModelMeasurer] = {}

    def __call__(self, shape: tuple[int, int, int], dtype: str, cfg: dict[str, int],
                 model: L2Model) -> dict[str, float] | None:
        """``read`` (``hbm_read_bytes``), ``b`` (blocks per SM) and ``k_merge``; None
        for a config the model calls infeasible."""
        key = (shape, dtype, model)
        if key not in self._meas:
            self._meas[key] = KernelModelMeasurer(
                "matmul", dict(zip("MNK", shape)), hardware=H200_MEASURED_L2, dtype=dtype,
                l2_model=None if model == LOCKSTEP else model)
        res = self._meas[key].measure(cfg)
        if not res.ok:
            return None
        m = res.metrics
        return {"read": float(m["hbm_read_bytes"]), "b": int(m["blocks_per_sm"]),
                "k_merge": int(m["k_merge"])}


def ramp_read_bytes(shape: tuple[int, int, int], cfg: dict[str, int], b: int,
                    k_merge: int, sigmas: tuple[float, ...] = MIX_SIGMAS,
                    stagger: float | None = None) -> list[float]:
    """Experimental L2 variant "drift_mix": DRIFT plus a ramp over the SMs, averaged.

    DRIFT (two partitions of the 60 MiB L2, the ``k``-th of the ``b`` programs
    of an SM started ``0.5 k / b`` of a program later) with, in addition, the
    slot of SM ``i`` (``i = 0 .. 131``) started ``sigma * T * i / 132`` steps
    later (``T``: steps of a program): programs far apart in program id drift
    apart, neighbours stay together. A single ``sigma`` turns reuse between
    SMs on or off at once (an LRU cliff); the read bytes are averaged over
    ``sigmas`` (a spread of drifts) by :func:`drift_mix_read_bytes`. One
    constant: the largest ramp (0.2, chosen in sample by ``--mix``). ``stagger``
    replaces DRIFT's 0.5 (``drift_warm_mix`` passes :func:`warm_stagger`).

    Returns
    -------
    list of float
        HBM read bytes per ``sigma`` (probe prefix scaled as :func:`simulate_l2` does).
    """
    sched, n_prog = matmul_tile_schedule(*shape, cfg["BLOCK_M"], cfg["BLOCK_N"],
                                         cfg["BLOCK_K"], cfg["GROUP_M"], k_merge=k_merge,
                                         max_probe_programs=4096)
    n_sms = H200_MEASURED_L2.n_sms
    n_conc = n_sms * b
    cap = H200_MEASURED_L2.l2_bytes // DRIFT.partitions
    p_hi, scale = sched.n_programs, 1.0
    if n_prog > sched.n_programs:  # probe prefix: whole waves, bytes scaled
        full = (sched.n_programs // n_conc) * n_conc
        p_hi = full if full > 0 else sched.n_programs
        scale = n_prog / p_hi
    s = sched
    steps = float(s.seg_n_steps[s.prog_seg_ptr[0]:s.prog_seg_ptr[1]].sum())
    st = DRIFT.stagger if stagger is None else stagger
    base = _stagger_starts(s, st, n_conc, n_sms).astype(np.float64)
    ramp = (np.arange(n_conc) % n_sms).astype(np.float64) / n_sms
    out = [float(_sim_timed(s.prog_seg_ptr, s.seg_n_steps, s.seg_op_ptr, s.op_base,
                            s.op_stride, s.op_lo, s.op_hi, s.op_write, s.tile_bytes, n_conc,
                            cap, p_hi, base + sig * steps * ramp, np.ones(p_hi))[2]) * scale
           for sig in sigmas]
    return out


def drift_mix_read_bytes(shape: tuple[int, int, int], cfg: dict[str, int], b: int,
                         k_merge: int, warm: bool = False) -> float:
    """The "drift_mix" read bytes: :func:`ramp_read_bytes` averaged over :data:`MIX_SIGMAS`.

    With ``warm``, "drift_warm_mix": the same ramps on :func:`warm_stagger`'s
    stagger instead of DRIFT's.
    """
    st = warm_stagger(shape, cfg, b) if warm else None
    return float(np.mean(ramp_read_bytes(shape, cfg, b, k_merge, MIX_SIGMAS, st)))


def warm_stagger(shape: tuple[int, int, int], cfg: dict[str, int], b: int,
                 warm_steps: float = WARM_STEPS) -> float:
    """Stagger of the experimental "drift_warm" model for one launch.

    ``DRIFT.stagger * min(1, n_waves * n_k_steps / warm_steps)``, with
    ``n_waves = programs / (132 b)`` (fractional) and ``n_k_steps =
    cdiv(K, BLOCK_K)``: the programs of an SM start a launch together and
    drift apart as the launch runs, reaching DRIFT's stagger after
    ``warm_steps`` program steps. Launches of a few waves (small M, or a deep K
    on a small grid) stay closer to lockstep.

    Parameters
    ----------
    shape : tuple of int
        ``(M, N, K)`` of the matmul, elements.
    cfg : dict of str to int
        ``BLOCK_M``, ``BLOCK_N`` and ``BLOCK_K`` at least.
    b : int
        Programs resident per SM (the model's ``blocks_per_sm``).
    warm_steps : float, default=WARM_STEPS
        Program steps of the launch after which the stagger is DRIFT's.

    Returns
    -------
    float
        Stagger in ``[0, DRIFT.stagger]`` (fraction of a program's duration).
    """
    M, N, K = shape
    n_prog = -(-M // cfg["BLOCK_M"]) * -(-N // cfg["BLOCK_N"])
    elapsed = n_prog / (H200_MEASURED_L2.n_sms * b) * -(-K // cfg["BLOCK_K"])
    return DRIFT.stagger * min(1.0, elapsed / warm_steps)


def drift_warm_read_bytes(shape: tuple[int, int, int], cfg: dict[str, int], b: int,
                          k_merge: int, warm_steps: float = WARM_STEPS) -> float:
    """HBM read bytes of "drift_warm": DRIFT with the stagger of :func:`warm_stagger`.

    Same schedule, probe prefix and ``k_merge`` as the measurer, 60 MiB L2 in two
    partitions; the replay is the library's (``simulate_l2``, exact for its stagger).

    Returns
    -------
    float
        Predicted HBM read bytes of the launch (probe prefix scaled).
    """
    c = cfg
    sched, n_prog = matmul_tile_schedule(*shape, c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"],
                                         c["GROUP_M"], k_merge=k_merge, max_probe_programs=4096)
    model = L2Model(stagger=warm_stagger(shape, cfg, b, warm_steps), partitions=DRIFT.partitions)
    n_sms = H200_MEASURED_L2.n_sms
    return simulate_l2(sched, l2_bytes=H200_MEASURED_L2.l2_bytes, n_concurrent=n_sms * b,
                       total_programs=n_prog, model=model, n_sms=n_sms).hbm_read_bytes


def load_launches(pred: Predictor) -> list[dict[str, Any]]:
    """Model-feasible launches of :data:`SETS` with ncu bytes and each model's prediction."""
    out = []
    for tag, name in SETS.items():
        for r in rows(DATA / name):
            if not r.get("dram_read_bytes"):
                continue
            shp = (int(r["M"]), int(r["N"]), int(r["K"]))
            cfg = {k: int(r[k]) for k in KNOBS}
            dtype = r.get("dtype") or "float16"
            p = {m: pred(shp, dtype, cfg, mod) for m, mod in MODELS.items()}
            if any(v is None for v in p.values()):
                continue
            ln = {"set": tag, "shape": shp, "dtype": dtype, "cfg": cfg,
                  "ncu": float(r["dram_read_bytes"]),
                  "b": p["drift"]["b"], "k_merge": p["drift"]["k_merge"]}  # type: ignore[index]
            ln.update({m: v["read"] for m, v in p.items()})  # type: ignore[index]
            out.append(ln)
    return out


def within(pred: np.ndarray, meas: np.ndarray, tol: float = TOL) -> np.ndarray:
    """``|pred / meas - 1| <= tol`` per launch."""
    return np.abs(pred / meas - 1.0) <= tol


def mean_abs_log(pred: np.ndarray, meas: np.ndarray) -> float:
    """Mean ``|log(pred / meas)|``."""
    return float(np.mean(np.abs(np.log(pred / meas))))


def best_candidate(cands: dict[Any, np.ndarray], meas: np.ndarray, sel: np.ndarray) -> Any:
    """The key of ``cands`` chosen on the launches ``sel``: most within :data:`TOL`, then
    the smallest :func:`mean_abs_log` (the first such key on ties).

    ``cands`` maps each candidate to its predicted read bytes, shape (n_launches,);
    ``meas`` the ncu bytes, shape (n_launches,); ``sel`` a bool mask of the launches
    scored.
    """
    return max(cands, key=lambda k: (int(within(cands[k][sel], meas[sel]).sum()),
                                     -mean_abs_log(cands[k][sel], meas[sel])))


def group_class(g: int) -> str:
    """``GROUP_M`` class of the issue: 1-2, 4-8 (here 4), >= 8."""
    return "GROUP_M 1-2" if g <= 2 else ("GROUP_M 4" if g < 8 else "GROUP_M >= 8")


def report(launches: list[dict[str, Any]], models: list[str]) -> None:
    """Markdown tables: share within 15% per file, GROUP_M class and shape."""
    meas = np.array([ln["ncu"] for ln in launches])
    groups: dict[str, Callable[[dict[str, Any]], str]] = {
        "file": lambda ln: SETS[ln["set"]],
        "GROUP_M": lambda ln: group_class(ln["cfg"]["GROUP_M"]),
        "shape": lambda ln: "x".join(map(str, ln["shape"])),
    }
    print(f"\n| group | n | {' | '.join(f'{m} within 15%' for m in models)} | "
          f"{' | '.join(f'{m} median ratio' for m in models)} |")
    print("|---|---:|" + "---:|" * (2 * len(models)))
    for gname, fn in groups.items():
        labels = np.array([fn(ln) for ln in launches])
        for lab in sorted(set(labels)):
            sel = labels == lab
            cells = [f"{int(within(np.array([ln[m] for ln in launches])[sel], meas[sel]).sum())}"
                     f"/{int(sel.sum())}" for m in models]
            med = [f"{np.median(np.array([ln[m] for ln in launches])[sel] / meas[sel]):.2f}"
                   for m in models]
            print(f"| {gname}: {lab} | {int(sel.sum())} | {' | '.join(cells)} | "
                  f"{' | '.join(med)} |")
    cells = [f"{int(within(np.array([ln[m] for ln in launches]), meas).sum())}/{len(meas)}"
             for m in models]
    med = [f"{np.median(np.array([ln[m] for ln in launches]) / meas):.2f}" for m in models]
    print(f"| **all** | {len(meas)} | {' | '.join(cells)} | {' | '.join(med)} |")


def scan(launches: list[dict[str, Any]], n_threads: int = 2) -> None:
    """Grid of (stagger, capacity factor); in-sample and leave-one-shape-out choice."""
    l2 = H200_MEASURED_L2.l2_bytes
    grid = [(s, f) for s in SCAN_STAGGER for f in SCAN_CAP]

    def work(ln: dict[str, Any]) -> list[float]:
        c = ln["cfg"]
        sched, n_prog = matmul_tile_schedule(*ln["shape"], c["BLOCK_M"], c["BLOCK_N"],
                                             c["BLOCK_K"], c["GROUP_M"], k_merge=ln["k_merge"],
                                             max_probe_programs=4096)
        return [simulate_l2(sched, l2_bytes=int(l2 * f), n_concurrent=132 * ln["b"],
                            total_programs=n_prog, model=L2Model(stagger=s), n_sms=132
                            ).hbm_read_bytes for s, f in grid]

    with ThreadPoolExecutor(n_threads) as ex:  # the numba replays release the GIL
        pred = np.array(list(ex.map(work, launches)))
    meas = np.array([ln["ncu"] for ln in launches])
    shapes = np.array(["x".join(map(str, ln["shape"])) for ln in launches])

    cols = {j: pred[:, j] for j in range(len(grid))}

    def best(sel: np.ndarray) -> int:
        return int(best_candidate(cols, meas, sel))

    print("\n| stagger | capacity (x 60 MiB) | within 15% (all) | mean abs log |")
    print("|---:|---:|---:|---:|")
    for j, (s, f) in enumerate(grid):
        print(f"| {s} | {f} | {int(within(pred[:, j], meas).sum())}/{len(meas)} | "
              f"{mean_abs_log(pred[:, j], meas):.3f} |")
    everything = np.ones(len(meas), bool)
    j = best(everything)
    print(f"\nin sample: best {grid[j]}: {int(within(pred[:, j], meas).sum())}/{len(meas)}")
    pooled = np.empty(len(meas))
    for shp in sorted(set(shapes)):
        te = shapes == shp
        j = best(~te)
        pooled[te] = pred[te, j]
        print(f"leave out {shp}: fitted {grid[j]} on {int((~te).sum())}, held out "
              f"{int(within(pred[te, j], meas[te]).sum())}/{int(te.sum())}")
    print(f"leave-one-shape-out, pooled: {int(within(pooled, meas).sum())}/{len(meas)}")


#: ``--mix`` scan: ramps simulated; "drift_mix" with largest ramp ``x`` averages those <= x.
MIX_SCAN = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)


def mix_scan(launches: list[dict[str, Any]], n_threads: int = 2) -> None:
    """Largest ramp of "drift_mix": in sample, leave-one-shape-out, leave-one-file-out,
    and fitted on ``h200_ncu.csv`` only (scored on the other files)."""
    with ThreadPoolExecutor(n_threads) as ex:
        per = np.array(list(ex.map(lambda ln: ramp_read_bytes(
            ln["shape"], ln["cfg"], ln["b"], ln["k_merge"], MIX_SCAN), launches)))
    meas = np.array([ln["ncu"] for ln in launches])
    shapes = np.array(["x".join(map(str, ln["shape"])) for ln in launches])
    sets = np.array([ln["set"] for ln in launches])
    cands = {x: per[:, :i + 1].mean(axis=1) for i, x in enumerate(MIX_SCAN) if i > 0}
    for ln, v in zip(launches, cands[max(MIX_SIGMAS)]):
        ln["drift_mix"] = float(v)

    def best(sel: np.ndarray) -> float:
        return best_candidate(cands, meas, sel)

    print("\n| largest ramp | within 15% (all) | mean abs log |")
    print("|---:|---:|---:|")
    for x, p in cands.items():
        print(f"| {x} | {int(within(p, meas).sum())}/{len(meas)} | "
              f"{mean_abs_log(p, meas):.3f} |")
    pooled = np.empty(len(meas))
    for shp in sorted(set(shapes)):
        te = shapes == shp
        x = best(~te)
        pooled[te] = cands[x][te]
        print(f"leave out {shp}: fitted {x}, held out {int(within(cands[x][te], meas[te]).sum())}"
              f"/{int(te.sum())} (DRIFT {int(within(per[te, 0], meas[te]).sum())})")
    print(f"leave-one-shape-out, pooled: {int(within(pooled, meas).sum())}/{len(meas)} "
          f"(DRIFT {int(within(per[:, 0], meas).sum())})")
    fit = sets == "fit"
    x = best(fit)
    print(f"fitted on {SETS['fit']} only: {x}; the other files "
          f"{int(within(cands[x][~fit], meas[~fit]).sum())}/{int((~fit).sum())} "
          f"(DRIFT {int(within(per[~fit, 0], meas[~fit]).sum())})")
    held_out(launches, "drift_mix (largest ramp)", cands)


def held_out(launches: list[dict[str, Any]], name: str,
             cands: dict[float, np.ndarray]) -> np.ndarray:
    """Print in-sample and held-out shares of a one-constant family; pooled LOSO predictions.

    ``cands`` maps each value of the constant to the read bytes of every launch. The
    value is chosen by the most launches within 15% (ties: smaller mean ``|log
    ratio|``) on all launches (in sample), on all but one shape (leave-one-shape-out,
    seven folds) and on all but one file (leave-one-file-out, five folds).
    """
    meas = np.array([ln["ncu"] for ln in launches])
    labels = {"shape": np.array(["x".join(map(str, ln["shape"])) for ln in launches]),
              "file": np.array([ln["set"] for ln in launches])}

    def best(sel: np.ndarray) -> float:
        return best_candidate(cands, meas, sel)

    x = best(np.ones(len(meas), bool))
    print(f"\n{name}: in sample {x}: {int(within(cands[x], meas).sum())}/{len(meas)}")
    out = np.empty(len(meas))
    for kind, lab in labels.items():
        pooled = np.empty(len(meas))
        picks = []
        for v in sorted(set(lab)):
            te = lab == v
            xv = best(~te)
            picks.append(xv)
            pooled[te] = cands[xv][te]
        print(f"  leave-one-{kind}-out: picks {picks}, pooled "
              f"{int(within(pooled, meas).sum())}/{len(meas)}, mean abs log "
              f"{mean_abs_log(pooled, meas):.3f}")
        if kind == "shape":
            out = pooled
    return out


def warm_scan(launches: list[dict[str, Any]], n_threads: int = 2) -> None:
    """"drift_warm" over :data:`WARM_SCAN`: in sample and held out; sets ``ln["drift_warm"]``."""
    with ThreadPoolExecutor(n_threads) as ex:
        per = np.array(list(ex.map(lambda ln: [drift_warm_read_bytes(
            ln["shape"], ln["cfg"], ln["b"], ln["k_merge"], w) for w in WARM_SCAN], launches)))
    cands = {w: per[:, i] for i, w in enumerate(WARM_SCAN)}
    held_out(launches, "drift_warm (warm_steps)", cands)
    for ln, v in zip(launches, cands[WARM_STEPS]):
        ln["drift_warm"] = float(v)
    # drift_warm_mix: ramps on the warm stagger; the largest ramp scanned, WARM_STEPS kept
    with ThreadPoolExecutor(n_threads) as ex:
        ramps = np.array(list(ex.map(lambda ln: ramp_read_bytes(
            ln["shape"], ln["cfg"], ln["b"], ln["k_merge"], WARM_MIX_SCAN[1:],
            warm_stagger(ln["shape"], ln["cfg"], ln["b"])), launches)))
    per = np.column_stack([cands[WARM_STEPS], ramps])
    mix = {x: per[:, :i + 1].mean(axis=1) for i, x in enumerate(WARM_MIX_SCAN) if i > 0}
    held_out(launches, "drift_warm_mix (largest ramp; warm_steps fixed)", mix)
    for ln, v in zip(launches, mix[max(MIX_SIGMAS)]):
        ln["drift_warm_mix"] = float(v)


def write_predictions(pred: Predictor, force: bool, plan: dict[tuple[int, int, int, str],
                      tuple[tuple[int, ...], ...]] = V2_PLAN, path: Path = PRED_FILE,
                      warm: bool = False, models: dict[str, L2Model] | None = None,
                      extra: tuple[str, ...] | None = None) -> None:
    """Write ``path`` (the configs of ``plan`` plus each model's predicted read bytes).

    ``plan`` maps ``(M, N, K, dtype)`` to configs ``(BLOCK_M, BLOCK_N, BLOCK_K,
    GROUP_M, num_warps, num_stages)``; the file has one row per config, the
    columns ``bench_h200.py --part ncu --ncu-configs`` reads, ``blocks_per_sm``,
    ``pred_read_bytes_<model>`` (bytes) per model of ``models`` (default
    :data:`MODELS`), right after ``drift``'s the experimental columns ``extra``
    (default ``drift_mix``, plus ``drift_warm`` and ``drift_warm_mix`` with
    ``warm``), and ``compulsory_read_bytes`` (``(MK + KN) x 2``).

    Raises
    ------
    SystemExit
        If ``path`` exists and ``force`` is false, or a model calls a config
        infeasible.
    """
    if path.exists() and not force:
        raise SystemExit(f"{path} exists (predictions are committed before the device "
                         "run); --force overwrites it")
    if extra is None:
        extra = ("drift_mix",) + (("drift_warm", "drift_warm_mix") if warm else ())
    experimental = {"drift_mix": drift_mix_read_bytes, "drift_warm": drift_warm_read_bytes,
                    "drift_warm_mix": lambda *a: drift_mix_read_bytes(*a, warm=True)}
    out = []
    for (M, N, K, dtype), cfgs in plan.items():
        for c in cfgs:
            cfg = dict(zip(KNOBS, c))
            row: dict[str, Any] = {"M": M, "N": N, "K": K, "dtype": dtype, **cfg}
            for name, mod in (MODELS if models is None else models).items():
                p = pred((M, N, K), dtype, cfg, mod)
                if p is None:
                    raise SystemExit(f"model {name} calls {M}x{N}x{K} {cfg} infeasible")
                row["blocks_per_sm"] = p["b"]
                row[f"pred_read_bytes_{name}"] = int(round(p["read"]))
                if name == "drift":
                    for x in extra:
                        row[f"pred_read_bytes_{x}"] = int(round(experimental[x](
                            (M, N, K), cfg, p["b"], p["k_merge"])))
            row["compulsory_read_bytes"] = (M * K + K * N) * 2
            out.append(row)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)
    n8 = sum(r["GROUP_M"] >= 8 for r in out)
    print(f"wrote {path} ({len(out)} configs, {len(plan)} shapes, {n8} with "
          f"GROUP_M >= 8)")


def compare_v2(pred_file: Path = PRED_FILE, measured_file: Path = MEASURED_FILE,
               label: str = "v2") -> None:
    """Committed predictions against a measured ncu file (when it exists)."""
    if not measured_file.exists():
        print(f"\n{measured_file.name}: not measured yet")
        return

    def key(r: dict[str, str]) -> tuple[Any, ...]:
        return (int(r["M"]), int(r["N"]), int(r["K"]), r.get("dtype") or "float16",
                *(int(r[k]) for k in KNOBS))

    pred = {key(r): r for r in rows(pred_file)}
    got = [(pred[key(r)], float(r["dram_read_bytes"])) for r in rows(measured_file)
           if key(r) in pred and r.get("dram_read_bytes")]
    meas = np.array([g for _, g in got])
    print(f"\n{label} (out of sample, predictions committed before the run): "
          f"{len(got)} launches")
    names = [c[len("pred_read_bytes_"):] for c in got[0][0] if c.startswith("pred_read_bytes_")
             ] if got else []
    for name in names:
        p = np.array([float(r[f"pred_read_bytes_{name}"]) for r, _ in got])
        g8 = np.array([int(r["GROUP_M"]) >= 8 for r, _ in got])
        print(f"  {name}: within 15% {int(within(p, meas).sum())}/{len(meas)} "
              f"(GROUP_M >= 8: {int(within(p[g8], meas[g8]).sum())}/{int(g8.sum())}), "
              f"median ratio {np.median(p / meas):.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scan", action="store_true", help="(stagger, capacity) grid with LOSO")
    ap.add_argument("--mix", action="store_true",
                    help="the experimental drift_mix model: ramp scan with LOSO (minutes)")
    ap.add_argument("--warm", action="store_true",
                    help="the experimental drift_warm model: warm_steps scan with LOSO")
    ap.add_argument("--write-predictions", action="store_true")
    ap.add_argument("--write-predictions-v3", action="store_true",
                    help=f"write {PRED_FILE_V3.name} (the v3 device list, V3_PLAN)")
    ap.add_argument("--force", action="store_true", help="overwrite the predictions file")
    args = ap.parse_args()
    pred = Predictor()
    if args.write_predictions:
        write_predictions(pred, args.force)
    if args.write_predictions_v3:
        write_predictions(pred, args.force, V3_PLAN, PRED_FILE_V3, warm=True)
    launches = load_launches(pred)
    print(f"{len(launches)} model-feasible ncu launches (in sample: DRIFT's stagger was "
          f"fitted on {SETS['fit']}; drift_mix's and drift_warm's constants and form were "
          f"chosen after looking at the first five files, v2 included; all six, v3 included, "
          f"are in sample for anything chosen after the v3 run)\n")
    if args.mix:
        mix_scan(launches)
    if args.warm:
        warm_scan(launches)
    report(launches, list(MODELS) + (["drift_mix"] if args.mix else [])
           + (["drift_warm", "drift_warm_mix"] if args.warm else []))
    if args.scan:
        scan(launches)
    compare_v2()
    compare_v2(PRED_FILE_V3, MEASURED_FILE_V3, "v3")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
