"""CPU per trial of the default searcher and its anchors, measured in one process.

On the 246,960-schedule GEMM table (objective ``misses``, budget 200) and on
the RTX 3090 gemm file of the tuning-caches dataset (budget 1411, its
methodology budget), runs each searcher for ``--seeds`` seeds, interleaved
(seed 0 of every searcher, then seed 1, ...) so that a change of load on a
shared machine hits all of them alike, and prints per searcher the CPU time
per trial (``time.process_time`` of a whole run: searcher, study and
replayed measurement, divided by the budget), mean and per seed. A short
warm-up run of every searcher first pays the imports.

Usage::

    python benchmarks/kernel_tuner/bench_searcher_cpu.py [--seeds 5]
        [--searchers bandit,random,tpe] [--spaces gemm64,gemm_file] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT.parent / "shared" / "datasets" / "tuning-caches"


def _space(name: str, path: Path) -> tuple[object, object, int]:
    if name == "gemm64":
        from autotile.measure import GroundTruth, ReplayMeasurer
        from autotile.space import gemm_space

        space = gemm_space(64)
        truth = GroundTruth.load(ROOT / "autotile" / "data" / "gemm64_truth.npz")
        return space, ReplayMeasurer(space, truth, "misses"), 200
    from autotile.measure._kernel_tuner import load_kernel_tuner
    from autotile.search import methodology_budget

    rec = load_kernel_tuner(path / "gemm__RTX_3090.json.gz")
    return rec.space, rec.measurer(), methodology_budget(rec.truth.column(rec.objective))


def _run(space: object, m: object, name: str, seed: int, budget: int) -> tuple[float, float]:
    from autotile.search import create_study, make_searcher

    c0 = time.process_time()
    study = create_study(space, m, searcher=make_searcher(name, space, seed=seed), seed=seed,
                         storage=":memory:")
    study.optimize(budget, progress=False)
    cpu = time.process_time() - c0
    h = study.history()
    return cpu, float(np.min(np.where(np.isfinite(h), h, np.inf)))


def main(argv: list[str] | None = None) -> int:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--searchers", default="bandit,random,tpe")
    ap.add_argument("--spaces", default="gemm64,gemm_file")
    ap.add_argument("--path", default=str(DATASET), help="tuning-caches folder")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    names = [s for s in args.searchers.split(",") if s]
    lines: list[str] = []

    def out(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    out(f"# CPU per trial ({platform.machine()}, {os.cpu_count()} cores, one process)\n")
    for key in [s for s in args.spaces.split(",") if s]:
        if key != "gemm64" and not (Path(args.path) / "gemm__RTX_3090.json.gz").is_file():
            out(f"{key}: the tuning-caches dataset is absent ({args.path}); skipped\n")
            continue
        space, m, budget = _space(key, Path(args.path))
        for name in names:  # warm-up: imports, first XGBoost fit
            _run(space, m, name, 10_000, min(budget, 30))
        load0 = os.getloadavg()[0]
        cpu: dict[str, list[float]] = {n: [] for n in names}
        best: dict[str, list[float]] = {n: [] for n in names}
        for seed in range(args.seeds):
            for name in names:
                c, b = _run(space, m, name, seed, budget)
                cpu[name].append(c)
                best[name].append(b)
        load1 = os.getloadavg()[0]
        out(f"## {key}, budget {budget}, seeds 0-{args.seeds - 1} "
            f"(1-min load average {load0:.1f} at the start, {load1:.1f} at the end)\n")
        out("| searcher | CPU ms/trial, mean | per seed | best found per seed |")
        out("|---|---:|---|---|")
        for name in names:
            per = ", ".join(f"{1e3 * c / budget:.1f}" for c in cpu[name])
            out(f"| {name} | {1e3 * float(np.mean(cpu[name])) / budget:.2f} | {per} | "
                f"{', '.join(f'{b:.6g}' for b in best[name])} |")
        out()
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
