"""Searcher comparison on autotile's 246,960-config GEMM schedule space (replayed).

For the miss-count objective (``misses``) and the estimated-cycles objective
(``est_cycles``), runs each searcher for ``--budget`` trials x ``--seeds``
seeds against the shipped ground-truth table and prints, per objective, a
Markdown table: median trials to the optimum and to within 1 / 5 / 10 % of it
(seeds that never got there in brackets), the median final best, the mean
methodology score P(t) (Willemsen et al., FGCS 2024) over t = 1..budget and
over the methodology's own budget, and the wall time. The last row of each
table is calculated for uniform random sampling without replacement: the
median trials to the first of k optimal configs among N (the mean,
(N+1)/(k+1), is in the heading).

Usage::

    python benchmarks/gemm/bench_compare.py [--budget 1000] [--seeds 10] [--n-jobs -1]
        [--searchers grid,random,model,evolutionary,tpe] [--objectives misses,est_cycles]
        [--out autotile-results/bench_compare] [--per-seed]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotile.measure import GroundTruth, ReplayMeasurer  # noqa: E402
from autotile.search._compare import compare  # noqa: E402
from autotile.search._report import format_markdown  # noqa: E402
from autotile.space import gemm_space  # noqa: E402

TABLE = Path(__file__).resolve().parents[2] / "autotile" / "data" / "gemm64_truth.npz"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--n-jobs", type=int, default=-1)
    ap.add_argument("--searchers", default="grid,random,model,evolutionary,tpe")
    ap.add_argument("--objectives", default="misses,est_cycles")
    ap.add_argument("--per-seed", action="store_true",
                    help="also list each seed's trials to the optimum")
    ap.add_argument("--out", default="autotile-results/bench_compare",
                    help="where the full reports (HTML, JSON, ...) go")
    args = ap.parse_args(argv)
    if not TABLE.is_file():
        print(f"The GEMM ground-truth table {TABLE} is missing; nothing to compare.")
        return 0
    t0 = time.perf_counter()
    truth = GroundTruth.load(TABLE)
    space = gemm_space(64)
    searchers = [s for s in args.searchers.split(",") if s]
    print(f"# Searcher comparison on gemm_space(64): {len(space)} configs\n")
    print(f"{args.seeds} seeds (0..{args.seeds - 1}), budget {args.budget} trials, "
          f"n_jobs={args.n_jobs}; {platform.processor() or platform.machine()}, "
          f"Python {sys.version.split()[0]}\n")
    for objective in [o for o in args.objectives.split(",") if o]:
        m = ReplayMeasurer(space, truth, objective)
        res = compare(space, m, searchers, budget=args.budget, seeds=args.seeds,
                      objective=objective, n_jobs=args.n_jobs, progress=False)
        res.write(Path(args.out) / objective)
        k = res.n_within(0)
        n = 0 if res.values is None else res.values.shape[0]
        print(f"## objective `{objective}`: optimum {res.optimum:g}, {k} optimal configs of "
              f"{n} valid; random search needs (N+1)/(k+1) = "
              f"{res.expected_random_trials(0):.1f} trials in expectation\n")
        print(format_markdown(res))
        if args.per_seed:
            print("\nTrials to the optimum per seed (- = not within the budget):\n")
            for name in searchers:
                t = res.trials_to(name)
                cells = ", ".join("-" if not np.isfinite(x) else f"{x:.0f}" for x in t)
                print(f"* {name}: {cells}")
        print(f"\n({res.meta['total_wall_time_s']:.0f} s; trial counts are medians over "
              "seeds, (n miss) = seeds that never got there within the budget, which count "
              "as +inf in the median)\n")
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
