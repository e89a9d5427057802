"""Leave-one-shape-out selection of GPU-model constants on the H200 tutorial-03 timings (CPU only).

Every matmul shape with H200 timings of tutorial 03's configs
(``data/autotune_gpu_summary.csv``, ``data/autotune_gpu_v3/``, ``data/autotune_gpu_v4/``
and the tutorial rows of ``data/h200_matmul.csv`` at 8192 x 8192 x 8192 and 8192 x 8192 x
2048; 26 shapes) is
held out in turn; the constant of a grid that scores best on the other shapes
(criterion: mean fraction of the best tutorial config reached by the model's pick plus
mean Spearman's rho, as in ``zero_shot.py``) is scored on the held-out shape. Prints,
per held-out shape, the zero-shot pick's % of the best, Spearman and the best of the
model's top 4 (what ``perf_model(top_k=4)`` measures) as % of the best, for the shipped
defaults (in-sample for these shapes) and for the held-out choice.

* ``--grid scalar_a`` (default): ``scalar_a_weight`` (eq. 5d) over 0.05-1.0; only the
  shapes with unvectorised operands (N or K not a multiple of 16) depend on it, so only
  they are held out.
* ``--grid tile``: ``tile_overhead_elems`` x ``k_overhead_elems`` (eq. 4) over all 26
  shapes (the diagnosis of 1800 x 2400 x 20000 and 1700 x 2800 x 24000; not shipped).
* ``--grid tail``: a partial-wave term (see :func:`tail`) over all 26 shapes (the
  diagnosis of the two deep-K shapes; not shipped).
* ``--grid a_regs``: ``scalar_a_extra_regs`` 0 (shipped) against 0.5 on all 26 shapes,
  ``scalar_a_weight`` selected per fold (the diagnosis of 3600 x 2800 x 3000; not
  shipped: no other shape tells the two apart).

Run ``python benchmarks/h200/zero_shot_loso.py [--grid tile|a_regs]`` (about 15 s, 2 min
and 15 s).
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


def model_times(shape: str, params: Any) -> dict[str, float]:
    """Model seconds per tutorial config (inf: infeasible), default H200 profile."""
    from autotile.measure import KernelModelMeasurer
    from autotile.measure.gpu import H200_MEASURED_L2

    dims, dtype = shape.split(":")
    M, N, K = (int(v) for v in dims.split("x"))
    m = KernelModelMeasurer("matmul", {"M": M, "N": N, "K": K}, H200_MEASURED_L2,
                            params=params, dtype=dtype)
    out = {}
    for bm, bn, bk, g, s, w in TUTORIAL_CONFIGS:
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


def a_regs(meas: dict[str, dict[str, float]], base: Any) -> int:
    """Table of ``scalar_a_extra_regs`` 0 (shipped) against 0.5 on every shape.

    ``scalar_a_weight`` is selected on the other shapes in each fold (as ``--grid
    scalar_a``). Every value of ``scalar_a_extra_regs`` in 0-1 scores the same on all
    shapes but 3600 x 2800 x 3000, so leave-one-shape-out cannot select it: the 0.5
    column is in-sample for that shape.
    """
    import dataclasses

    weights = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.7, 1.0)
    shapes = list(meas)
    scalar = [s for s in shapes if any(int(v) % 16 for v in s.split(":")[0].split("x")[1:])]
    res: dict[float, dict[str, tuple[float, float, float]]] = {}
    for r in (0.0, 0.5):
        sc = {a: {s: score(model_times(s, dataclasses.replace(
            base, scalar_a_extra_regs=r, scalar_a_weight=a)), meas[s]) for s in scalar}
            for a in weights}
        res[r] = {}
        for h in shapes:
            on = [s for s in scalar if s != h]
            a = max(weights, key=lambda w: statistics.fmean(sc[w][s][0] / 100 + sc[w][s][1]
                                                             for s in on))
            res[r][h] = sc[a][h] if h in scalar else score(model_times(h, dataclasses.replace(
                base, scalar_a_extra_regs=r, scalar_a_weight=a)), meas[h])
    print("| shape | shipped (x = 0): pick % | Spearman | x = 0.5: pick % | Spearman |")
    print("|---|---|---|---|---|")
    for h in shapes:
        b, a = res[0.0][h], res[0.5][h]
        print(f"| {h} | {b[0]:.1f}% | {b[1]:.3f} | {a[0]:.1f}% | {a[1]:.3f} |")
    for r, name in ((0.0, "x = 0 (shipped)"), (0.5, "x = 0.5")):
        p = [res[r][h][0] for h in shapes]
        rho = [res[r][h][1] for h in shapes]
        print(f"{name}: {sum(v >= 90 for v in p)} of {len(p)} shapes >= 90%, median pick "
              f"{statistics.median(p):.1f}%, min {min(p):.1f}%; Spearman median "
              f"{statistics.median(rho):.3f}, min {min(rho):.3f}")
    return 0


def tail(meas: dict[str, dict[str, float]], base: Any) -> int:
    """Leave-one-shape-out of a partial-wave term that the model does not have.

    With ``b`` resident programs an SM, ``W`` full waves of ``n_sms * b`` programs and
    ``k < b`` programs an SM in the last, partial wave (``W >= 1``), the busiest SM's
    tensor time counts ``W * b + k / (k / b) ** g`` programs instead of ``ceil(n /
    n_sms)``: a tail program runs at the rate it had among ``b``. Tried on the
    grid ``g`` in 0-1 by wrapping ``estimate_time`` (the model itself is unchanged).
    """
    import autotile.measure.gpu._analytic as an

    orig = an.estimate_time
    g_now = [0.0]

    def wrapped(hw: Any, params: Any, *, flops_per_program: float, n_programs: int,
                blocks_per_sm: int, **kw: Any) -> Any:
        g, n, b, n_sms = g_now[0], n_programs, blocks_per_sm, hw.n_sms
        if g > 0 and b > 1:
            w, rest = divmod(n, n_sms * b)
            k = -(-rest // n_sms)
            units = w * b + (k / (k / b) ** g if (rest and k < b and w >= 1) else k)
            flops_per_program *= units / -(-n // n_sms)
        return orig(hw, params, flops_per_program=flops_per_program, n_programs=n,
                    blocks_per_sm=b, **kw)

    grid = (0.0, 0.25, 0.5, 0.75, 1.0)
    shapes = list(meas)
    an.estimate_time = wrapped
    try:
        res = {}
        for g in grid:
            g_now[0] = g
            res[g] = {s: score(model_times(s, base), meas[s]) for s in shapes}
    finally:
        an.estimate_time = orig
    print("| shape | g = 0 (shipped): pick % | Spearman | held out: g | pick % | Spearman |")
    print("|---|---|---|---|---|---|")
    held = []
    for h in shapes:
        on = [s for s in shapes if s != h]
        g = max(grid, key=lambda v: statistics.fmean(res[v][s][0] / 100 + res[v][s][1]
                                                       for s in on))
        held.append(res[g][h][0])
        print(f"| {h} | {res[0.0][h][0]:.1f}% | {res[0.0][h][1]:.3f} | {g} "
              f"| {res[g][h][0]:.1f}% | {res[g][h][1]:.3f} |")
    for g in grid:
        p = [res[g][s][0] for s in shapes]
        print(f"in-sample g = {g}: {sum(v >= 90 for v in p)} of {len(p)} >= 90%, median "
              f"{statistics.median(p):.1f}%, Spearman median "
              f"{statistics.median([res[g][s][1] for s in shapes]):.3f}")
    print(f"held out: {sum(v >= 90 for v in held)} of {len(held)} >= 90%, median "
          f"{statistics.median(held):.1f}%")
    return 0


def main(argv: list[str] | None = None) -> int:
    import dataclasses

    from autotile.measure import GpuModelParams

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", choices=("scalar_a", "a_regs", "tile", "tail"),
                    default="scalar_a")
    args = ap.parse_args(argv)
    meas = measured()
    base = GpuModelParams()
    if args.grid == "scalar_a":
        grid = [{"scalar_a_weight": a}
                for a in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.7, 1.0)]
        shapes = [s for s in meas
                  if any(int(v) % 16 for v in s.split(":")[0].split("x")[1:])]
    elif args.grid == "a_regs":
        return a_regs(meas, base)
    elif args.grid == "tail":
        return tail(meas, base)
    else:
        grid = [{"tile_overhead_elems": c, "k_overhead_elems": k}
                for c, k in itertools.product((16.0, 32.0, 48.0, 64.0, 96.0), (4.0, 8.0, 16.0))]
        shapes = list(meas)
    scores = {i: {s: score(model_times(s, dataclasses.replace(base, **g)), meas[s])
                  for s in shapes} for i, g in enumerate(grid)}
    shipped = {s: score(model_times(s, base), meas[s]) for s in shapes}

    def crit(i: int, on: list[str]) -> float:
        return (statistics.fmean(scores[i][s][0] / 100 for s in on)
                + statistics.fmean(scores[i][s][1] for s in on))

    print("| held-out shape | selected on the others | pick % | Spearman | top-4 best % "
          "| shipped (in-sample): pick % | Spearman | top-4 best % |")
    print("|---|---|---|---|---|---|---|---|")
    held = []
    for h in shapes:
        i = max(scores, key=lambda j: crit(j, [s for s in shapes if s != h]))
        p, r, t = scores[i][h]
        held.append((p, r, t))
        sp, sr, st = shipped[h]
        print(f"| {h} | {grid[i]} | {p:.1f}% | {r:.3f} | {t:.1f}% | {sp:.1f}% | {sr:.3f} "
              f"| {st:.1f}% |")
    for k, name in enumerate(("pick %", "Spearman", "top-4 best %")):
        v = [x[k] for x in held]
        print(f"held out, {name}: median {statistics.median(v):.3f}, min {min(v):.3f}")
    i = max(scores, key=lambda j: crit(j, shapes))
    print(f"selected on all {len(shapes)} shapes: {grid[i]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
