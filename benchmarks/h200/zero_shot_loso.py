"""Leave-one-shape-out selection of GPU-model constants on the H200 tutorial-03 timings (CPU only).

Every matmul shape with H200 timings of tutorial 03's configs
(``data/autotune_gpu_summary.csv``, ``data/autotune_gpu_v3/``, ``data/autotune_gpu_v4/``,
``data/autotune_gpu_v5/`` and the tutorial rows of ``data/h200_matmul.csv`` at 8192 x 8192
x 8192 and 8192 x 8192 x 2048; 34 shapes, 26 without v5) is held out in turn; the
constant of a grid that scores best on the other shapes (criterion: mean fraction of the
best tutorial config reached by the model's pick plus mean Spearman's rho, as in
``zero_shot.py``) is scored on the held-out shape. Prints, per held-out shape, the
zero-shot pick's % of the best, Spearman and the best of the model's top 4 (what
``perf_model(top_k=4)`` measures) as % of the best.

* ``--grid after_v5`` (default): the model change after v5 (:func:`after_v5`: A's
  address registers, the shared-memory port, the partial-wave exponent); ``--fine``
  adds four exponents; ``--without-v5`` holds out over the 26 shapes before v5 only.
* ``--grid scalar_a``: ``scalar_a_weight`` (eq. 5d) over 0.05-1.0; only the shapes with
  unvectorised operands (N or K not a multiple of 16) depend on it, so only they are
  held out.
* ``--grid tile``: ``tile_overhead_elems`` x ``k_overhead_elems`` (eq. 4) over all
  shapes (the session-10 diagnosis of the deep-K shapes; not shipped).
* ``--grid port_tile`` (session 13, after v7; **shipped**): the clock of eq. 5c's port
  (128 B/clk at 1.83, 1.56 or 1.33 GHz) x eq. 4's ``c_mn`` (16-32) over the 50 shapes
  of :func:`measured_all` (``measured`` plus v6 and v7). Every other grid pins the
  two at their values before that change (:data:`BEFORE_AFTER_V7`), so that its
  figures stand.
* ``--efficiency`` (session 13): the diagnosis behind ``port_tile``: per tutorial
  config, its shared-memory bytes per FLOP (eq. 5c) and the measured fraction of the
  tensor peak ``ceil(programs / 132) x FLOPs a program / (peak / 132) / time`` at the
  seven largest launches.

Run ``python benchmarks/h200/zero_shot_loso.py [--grid after_v5|scalar_a|tile|port_tile]
[--efficiency]`` (about 1 min, 15 s, 1 min, 1 min and 5 s).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.h200.h200_configs import TUTORIAL_CONFIGS  # noqa: E402
from benchmarks.h200.zero_shot import DATA, config_text, read_summary, spearman  # noqa: E402


def measured() -> dict[str, dict[str, float]]:
    """``{shape: {config text: median seconds}}`` over every file with tutorial timings."""
    meas: dict[str, dict[str, float]] = {}
    meas.update(read_summary(DATA / "autotune_gpu_summary.csv"))
    meas.update(read_summary(DATA / "autotune_gpu_v3" / "autotune_gpu_summary.csv"))
    meas.update(read_summary(DATA / "autotune_gpu_v4" / "autotune_gpu_summary.csv"))
    meas.update(read_summary(DATA / "autotune_gpu_v5" / "autotune_gpu_summary.csv"))
    with (DATA / "h200_matmul.csv").open() as f:
        for r in csv.DictReader(f):
            if r["source"] != "tutorial" or r["status"] != "ok":
                continue
            shape = f"{r['M']}x{r['N']}x{r['K']}:float16"
            if shape in meas and shape != "8192x8192x8192:float16" and \
                    shape != "8192x8192x2048:float16":
                continue  # 4096^3 fp16: the autotune_gpu run's timings are kept
            c = config_text(*(int(r[k]) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M",
                                                   "num_stages", "num_warps")))
            meas.setdefault(shape, {})[c] = float(r["time_s"])
    return meas


#: The 16 summaries of the runs after v5: ``measured_all`` adds them to ``measured``.
LATER_RUNS = ("autotune_gpu_v6", "autotune_gpu_v7")


def measured_all() -> dict[str, dict[str, float]]:
    """:func:`measured` plus v6 and v7 (:data:`LATER_RUNS`): 50 shapes."""
    meas = measured()
    for run in LATER_RUNS:
        meas.update(read_summary(DATA / run / "autotune_gpu_summary.csv"))
    return meas


def before_after_v7(**kw: Any) -> Any:
    """``GpuModelParams`` of the model before session 13's change after v7 (plus ``kw``).

    The port of eq. 5c at 1.83 GHz (234 GB/s) and eq. 4's ``c_mn = 16``; the grids
    written before that change are scored from it.
    """
    from autotile.measure import GpuModelParams
    from autotile.measure.gpu._time_model import SMEM_PORT_BYTES_PER_S_PER_SM

    return GpuModelParams(**({"smem_bytes_per_s_per_sm": SMEM_PORT_BYTES_PER_S_PER_SM,
                              "tile_overhead_elems": 16.0} | kw))


def model_times(shape: str, params: Any, configs: Any = TUTORIAL_CONFIGS) -> dict[str, float]:
    """Model seconds per config (inf: infeasible), default H200 profile.

    Parameters
    ----------
    shape : str
        ``"MxNxK:dtype"``.
    params : GpuModelParams
        The time model's constants.
    configs : iterable of tuple of int, default=TUTORIAL_CONFIGS
        ``(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps)`` tuples
        (default: tutorial 03's 16).

    Returns
    -------
    dict of str to float
        Config text (``config_text``) -> predicted time, seconds (``inf`` where the
        model calls the config infeasible).
    """
    from autotile.measure import KernelModelMeasurer
    from autotile.measure.gpu import H200_MEASURED_L2

    dims, dtype = shape.split(":")
    M, N, K = (int(v) for v in dims.split("x"))
    m = KernelModelMeasurer("matmul", {"M": M, "N": N, "K": K}, H200_MEASURED_L2,
                            params=params, dtype=dtype)
    out = {}
    for bm, bn, bk, g, s, w in configs:
        r = m.measure(dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, num_warps=w,
                           num_stages=s))
        out[config_text(bm, bn, bk, g, s, w)] = r.metrics["time_s"] if r.ok else math.inf
    return out


def score(pred: dict[str, float], meas: dict[str, float]) -> tuple[float, float, float]:
    """Pick's % of the best, Spearman over the configs that ran, best of the top 4 in %."""
    names = list(meas)
    rho = spearman([pred[n] for n in names], [meas[n] for n in names])
    ranked = sorted((n for n in pred if math.isfinite(pred[n])), key=lambda n: pred[n])
    best = min(meas.values())
    pct = 100.0 * best / meas[ranked[0]] if ranked[0] in meas else 0.0
    top4 = [meas[n] for n in ranked[:4] if n in meas]
    return pct, rho, (100.0 * best / min(top4) if top4 else 0.0)


def loso_criterion(scores: dict[Any, dict[str, tuple[float, float, float]]], key: Any,
                   on: list[str]) -> float:
    """Selection criterion of grid point ``key`` on the shapes ``on``.

    Parameters
    ----------
    scores : dict
        Grid point to shape to :func:`score`'s (pick %, Spearman, top-4 best %).
    key
        A key of ``scores``.
    on : list of str
        The shapes scored (the held-out shape's complement, or all).

    Returns
    -------
    float
        Mean fraction of the best reached by the pick (pick % / 100) plus mean
        Spearman's rho over ``on``.
    """
    return (statistics.fmean(scores[key][s][0] / 100 for s in on)
            + statistics.fmean(scores[key][s][1] for s in on))


def after_v5(meas: dict[str, dict[str, float]], base: Any, pool: list[str], *,
             fine: bool = False) -> int:
    """Leave-one-shape-out of the model change after v5 (docs/gpu_model.md §3.7).

    The grid crosses A's address registers ``scalar_a_extra_regs`` (0 or 1), the
    shared-memory port ``smem_bytes_per_s_per_sm`` (off or 128 B/clk at 1.83 GHz) and the
    partial-wave exponent ``tail_rate_exponent`` (0, 0.25, 0.5, 0.75, 1, the grid of the
    session-10 diagnosis); ``fine`` (``--fine``) adds 0.6, 0.7, 0.8, 0.9. Each shape of ``pool`` is
    held out in turn and scored with the grid point that is best on the others (mean pick
    fraction plus mean Spearman).
    """
    import dataclasses

    from autotile.measure.gpu._time_model import SMEM_PORT_BYTES_PER_S_PER_SM

    gs = (0.0, 0.25, 0.5, 0.75, 1.0) + ((0.6, 0.7, 0.8, 0.9) if fine else ())
    grid = list(itertools.product((0.0, 1.0), (math.inf, SMEM_PORT_BYTES_PER_S_PER_SM), gs))
    scores = {k: {s: score(model_times(s, dataclasses.replace(
        base, scalar_a_extra_regs=k[0], smem_bytes_per_s_per_sm=k[1],
        tail_rate_exponent=k[2])), meas[s]) for s in pool} for k in grid}
    before = (0.0, math.inf, 0.0)

    def name(k: tuple[float, float, float]) -> str:
        port = "off" if math.isinf(k[1]) else f"{k[1] / 1e9:.0f} GB/s"
        return f"x = {k[0]:g}, port {port}, g = {k[2]:g}"

    print("| held-out shape | selected on the others | pick % | Spearman | top-4 best % "
          "| before (v5 model): pick % | Spearman |")
    print("|---|---|---|---|---|---|---|")
    held = []
    for h in pool:
        k = max(grid, key=lambda j: loso_criterion(scores, j, [s for s in pool if s != h]))
        p, r, t = scores[k][h]
        held.append((p, r, t))
        print(f"| {h} | {name(k)} | {p:.1f}% | {r:.3f} | {t:.1f}% | {scores[before][h][0]:.1f}% "
              f"| {scores[before][h][1]:.3f} |")
    for k in (before, max(grid, key=lambda j: loso_criterion(scores, j, pool))):
        p = [scores[k][s][0] for s in pool]
        print(f"in-sample {name(k)}: {sum(v >= 90 for v in p)} of {len(p)} >= 90%, median "
              f"{statistics.median(p):.1f}%, min {min(p):.1f}%, Spearman median "
              f"{statistics.median([scores[k][s][1] for s in pool]):.3f}")
    p = [x[0] for x in held]
    print(f"held out: {sum(v >= 90 for v in p)} of {len(p)} >= 90%, median "
          f"{statistics.median(p):.1f}%, min {min(p):.1f}%; Spearman median "
          f"{statistics.median([x[1] for x in held]):.3f}; top-4 best median "
          f"{statistics.median([x[2] for x in held]):.1f}%, min {min(x[2] for x in held):.1f}%")
    return 0


#: The largest launches of the pool (every config several waves): ``--efficiency``.
LARGE_SHAPES = ("4096x4096x4096:float16", "8192x8192x8192:float16", "8192x8192x2048:float16",
                "6144x6144x6144:bfloat16", "16384x1024x4096:float16",
                "12288x1536x8192:float16", "5200x4800x4000:float16")


def efficiency(meas: dict[str, dict[str, float]]) -> int:
    """Print each tutorial config's measured fraction of the tensor peak at :data:`LARGE_SHAPES`.

    The fraction is ``ceil(programs / n_sms) x 2 BM BN BK ceil(K / BK) / (peak / n_sms)
    / time`` (the busiest SM's padded FLOPs over its share of the H200 profile's peak);
    next to it the config's shared-memory bytes per FLOP (:func:`matmul_smem_step_bytes`
    over a step's FLOPs) and the bound that 128 B/clk puts on the fraction when the port
    and the tensor cores share one clock, ``(128 / 4096) / bytes per FLOP``.

    Returns
    -------
    int
        0.
    """
    from autotile.measure.gpu import H200_MEASURED_L2
    from autotile.measure.gpu._time_model import matmul_smem_step_bytes

    hw = H200_MEASURED_L2
    print("| config | smem B/FLOP | port bound | " + " | ".join(LARGE_SHAPES) + " |")
    print("|---" * (3 + len(LARGE_SHAPES)) + "|")
    for bm, bn, bk, g, s, w in TUTORIAL_CONFIGS:
        c = config_text(bm, bn, bk, g, s, w)
        per_flop = matmul_smem_step_bytes(bm, bn, bk, w, 2) / (2.0 * bm * bn * bk)
        cells = []
        for shape in LARGE_SHAPES:
            if c not in meas.get(shape, {}):
                cells.append("-")
                continue
            dims, dtype = shape.split(":")
            M, N, K = (int(v) for v in dims.split("x"))
            rounds = math.ceil(math.ceil(M / bm) * math.ceil(N / bn) / hw.n_sms)
            flops = 2.0 * bm * bn * bk * math.ceil(K / bk) * rounds
            peak_sm = hw.tensor_flops_per_s(dtype) / hw.n_sms
            cells.append(f"{flops / peak_sm / meas[shape][c]:.3f}")
        print(f"| {c} | {per_flop:.4f} | {128 / 4096 / per_flop:.2f} | " + " | ".join(cells) + " |")
    return 0


def port_tile(meas: dict[str, dict[str, float]]) -> int:
    """Leave-one-shape-out of the port's clock (eq. 5c) and eq. 4's ``c_mn`` (session 13).

    The grid: 128 B/clk at 1.83 GHz (the model before the change), 1.56 GHz or
    1.33 GHz (the clock under the power cap, ``CAPPED_SM_CLOCK_HZ``) x ``c_mn`` in
    16, 20, 24, 28, 32; every other constant as shipped. Each of the 50 shapes is held
    out in turn and scored with the grid point best on the other 49 (mean pick fraction
    plus mean Spearman). Prints the baseline (1.83 GHz, 16: in-sample = held out), the
    held-out result, every shape whose pick moved, the shapes that fell below 90 %, the
    v7 shapes and the point selected on all 50.

    Returns
    -------
    int
        0.
    """
    from autotile.measure.gpu._time_model import SMEM_BYTES_PER_CLK_PER_SM

    pool = list(meas)
    grid = list(itertools.product((1.83e9, 1.56e9, 1.33e9), (16.0, 20.0, 24.0, 28.0, 32.0)))
    scores = {k: {s: score(model_times(s, before_after_v7(
        smem_bytes_per_s_per_sm=SMEM_BYTES_PER_CLK_PER_SM * k[0], tile_overhead_elems=k[1])),
        meas[s]) for s in pool} for k in grid}
    before = (1.83e9, 16.0)

    def line(label: str, v: list[tuple[float, float, float]]) -> str:
        p = [x[0] for x in v]
        return (f"{label}: {sum(x >= 90 for x in p)} of {len(p)} picks >= 90% of the best, "
                f"median {statistics.median(p):.1f}%, min {min(p):.1f}%; Spearman median "
                f"{statistics.median([x[1] for x in v]):.3f}; top-4 best min "
                f"{min(x[2] for x in v):.1f}%")

    print(line("before (port at 1.83 GHz, c_mn 16), 50 shapes", [scores[before][s] for s in pool]))
    held = {h: max(grid, key=lambda j: loso_criterion(scores, j, [s for s in pool if s != h]))
            for h in pool}
    print(line("held out", [scores[held[h]][h] for h in pool]))
    for h in pool:
        p, r, _ = scores[held[h]][h]
        if abs(p - scores[before][h][0]) > 0.05 or p < 90:
            print(f"    {h}: selected {held[h][0] / 1e9:.2f} GHz, c_mn {held[h][1]:g}: pick "
                  f"{p:.1f}% (before {scores[before][h][0]:.1f}%), Spearman {r:.3f} (before "
                  f"{scores[before][h][1]:.3f})")
    lost = [h for h in pool if scores[before][h][0] >= 90 > scores[held[h]][h][0]]
    print(f"  shapes >= 90% before that fall below 90% held out: {', '.join(lost) or 'none'}")
    v7 = list(read_summary(DATA / LATER_RUNS[-1] / "autotune_gpu_summary.csv"))
    print("  v7, held out: " + ", ".join(f"{h} {scores[held[h]][h][0]:.1f}%" for h in v7))
    for k in grid:
        print(line(f"  in-sample {k[0] / 1e9:.2f} GHz, c_mn {k[1]:g}",
                   [scores[k][s] for s in pool]))
    k = max(grid, key=lambda j: loso_criterion(scores, j, pool))
    print(f"selected on all 50: {k[0] / 1e9:.2f} GHz, c_mn {k[1]:g}")
    return 0


def main(argv: list[str] | None = None) -> int:
    import dataclasses


    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", choices=("after_v5", "scalar_a", "tile", "port_tile"),
                    default="after_v5")
    ap.add_argument("--efficiency", action="store_true",
                    help="print the measured efficiency of the largest launches by "
                         "shared-memory bytes per FLOP and exit")
    ap.add_argument("--without-v5", action="store_true",
                    help="only the 26 shapes measured before v5")
    ap.add_argument("--fine", action="store_true", help="after_v5: a finer exponent grid")
    args = ap.parse_args(argv)
    meas = measured()
    if args.without_v5:
        v5 = read_summary(DATA / "autotune_gpu_v5" / "autotune_gpu_summary.csv")
        meas = {s: t for s, t in meas.items() if s not in v5}
    # every grid here predates B's address registers (eq. 2, session 13; scored in
    # zero_shot_scalar_b.py --candidate address_once): off, so that the figures stand
    base = before_after_v7(scalar_b_extra_regs=0.0)
    if args.efficiency:
        return efficiency(meas)
    if args.grid == "port_tile":
        return port_tile(measured_all())
    if args.grid == "after_v5":
        return after_v5(meas, base, list(meas), fine=args.fine)
    if args.grid == "scalar_a":
        grid = [{"scalar_a_weight": a}
                for a in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.7, 1.0)]
        shapes = [s for s in meas
                  if any(int(v) % 16 for v in s.split(":")[0].split("x")[1:])]
    else:
        grid = [{"tile_overhead_elems": c, "k_overhead_elems": k}
                for c, k in itertools.product((16.0, 32.0, 48.0, 64.0, 96.0), (4.0, 8.0, 16.0))]
        shapes = list(meas)
    scores = {i: {s: score(model_times(s, dataclasses.replace(base, **g)), meas[s])
                  for s in shapes} for i, g in enumerate(grid)}
    shipped = {s: score(model_times(s, base), meas[s]) for s in shapes}

    print("| held-out shape | selected on the others | pick % | Spearman | top-4 best % "
          "| shipped (in-sample): pick % | Spearman | top-4 best % |")
    print("|---|---|---|---|---|---|---|---|")
    held = []
    for h in shapes:
        i = max(scores, key=lambda j: loso_criterion(scores, j, [s for s in shapes if s != h]))
        p, r, t = scores[i][h]
        held.append((p, r, t))
        sp, sr, st = shipped[h]
        print(f"| {h} | {grid[i]} | {p:.1f}% | {r:.3f} | {t:.1f}% | {sp:.1f}% | {sr:.3f} "
              f"| {st:.1f}% |")
    for k, name in enumerate(("pick %", "Spearman", "top-4 best %")):
        v = [x[k] for x in held]
        print(f"held out, {name}: median {statistics.median(v):.3f}, min {min(v):.3f}")
    i = max(scores, key=lambda j: loso_criterion(scores, j, shapes))
    print(f"selected on all {len(shapes)} shapes: {grid[i]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
