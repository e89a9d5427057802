"""Robustness off the shipped table: searchers on the GEMM space scored live with other caches.

The 246,960-schedule space ``gemm_space(64)`` is scored live by
:class:`ScheduleMeasurer` (exact cache simulation) with caches other than the
shipped table's 8 KB 4-way one, so no searcher default can have been tuned on
them. For each cache, each searcher runs ``--budget`` trials x ``--seeds``
seeds; the best value any run found is the reference ("best known"). Prints
per (cache, searcher): the trials each seed needed to reach the best known
value (``-`` if it never did), how many seeds reached it, the median, and the
CPU time per trial (searcher plus live simulation).

Also prints, on the shipped table (replayed), the trials to the optimum of
the default searcher at budget 200 over ``--gemm-seeds`` seeds (the issue's
target: median <= 25, no seed above 100).

Usage::

    python benchmarks/gemm/bench_other_caches.py [--seeds 5] [--budget 300]
        [--searchers bandit,tpe] [--caches 16384:4,4096:2] [--gemm-seeds 20]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _run(task: tuple[str, int, int, int, str, int]) -> tuple[str, str, int, Any, float]:
    import optuna

    from autotile.measure import CacheConfig, GroundTruth, ReplayMeasurer, ScheduleMeasurer
    from autotile.search import create_study, make_searcher
    from autotile.space import gemm_space

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cache, size, ways, seed, name, budget = task
    space = gemm_space(64)
    if cache == "shipped":
        from pathlib import Path

        table = Path(__file__).resolve().parents[2] / "autotile" / "data" / "gemm64_truth.npz"
        m: Any = ReplayMeasurer(space, GroundTruth.load(table), "misses")
    else:
        m = ScheduleMeasurer(space, objective="misses",
                             cache=CacheConfig(size_bytes=size, ways=ways))
    c0 = time.process_time()
    study = create_study(space, m, searcher=make_searcher(name, space, seed=seed), seed=seed,
                         storage=":memory:")
    study.optimize(budget, progress=False)
    return cache, name, seed, study.best_so_far(), time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--searchers", default="bandit,tpe")
    ap.add_argument("--caches", default="16384:4,4096:2", help="size_bytes:ways,...")
    ap.add_argument("--gemm-seeds", type=int, default=20)
    ap.add_argument("--n-jobs", type=int, default=2)
    args = ap.parse_args(argv)
    names = [s for s in args.searchers.split(",") if s]
    caches = [(f"{c}", *map(int, c.split(":"))) for c in args.caches.split(",") if c]
    tasks = [(c, size, ways, s, n, args.budget) for c, size, ways in caches for n in names
             for s in range(args.seeds)]
    tasks += [("shipped", 0, 0, s, "bandit", 200) for s in range(args.gemm_seeds)]
    t0 = time.perf_counter()
    with mp.get_context("fork").Pool(args.n_jobs) as pool:
        out = list(pool.imap_unordered(_run, tasks))
    print(f"# GEMM space off the shipped table ({time.perf_counter() - t0:.0f} s wall)\n")
    print("| cache (bytes:ways) | searcher | trials to best known, per seed | reached | median "
          "| CPU ms/trial |")
    print("|---|---|---|---:|---:|---:|")
    for c, _, _ in caches:
        best = min(float(r[3][-1]) for r in out if r[0] == c)
        for n in names:
            rs = sorted((r for r in out if r[0] == c and r[1] == n), key=lambda r: r[2])
            hits = [np.flatnonzero(r[3] <= best) for r in rs]
            t = [float(h[0] + 1) if h.size else np.inf for h in hits]
            cells = ", ".join("-" if np.isinf(x) else f"{x:.0f}" for x in t)
            cpu = 1e3 * np.mean([r[4] for r in rs]) / args.budget
            print(f"| {c} (best known {best:.0f}) | {n} | {cells} | {sum(np.isfinite(t))}/"
                  f"{len(t)} | {np.median(t):.0f} | {cpu:.1f} |")
    rs = sorted((r for r in out if r[0] == "shipped"), key=lambda r: r[2])
    if rs:
        t = [float(np.flatnonzero(r[3] <= 1536)[0] + 1) if (r[3] <= 1536).any() else np.inf
             for r in rs]
        cpu = 1e3 * np.mean([r[4] for r in rs]) / 200
        print(f"\nShipped table (misses, optimum 1,536), bandit, budget 200, {len(rs)} seeds: "
              f"trials to the optimum {', '.join('-' if np.isinf(x) else f'{x:.0f}' for x in t)}"
              f"; median {np.median(t):.0f}, max {max(t):.0f}; CPU {cpu:.1f} ms/trial")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
