"""Mean methodology score P(t) of each searcher on real brute-forced GPU tuning spaces.

For every Kernel Tuner / T4 file in the tuning-caches dataset (default
``../shared/datasets/tuning-caches/`` next to the repository; ``--path`` to
change), loads it as a replayed space (:func:`load_kernel_tuner`), sets the
budget the comparison methodology sets (:func:`methodology_budget`: the draws
random search needs in expectation to get 95 % of the way from the median to
the optimum, +10 %), runs each searcher for that budget x ``--seeds`` seeds,
and prints one Markdown table: per file the space size, the budget, and the
mean P(t) over t = 1..budget of each searcher (0 = random search in
expectation, 1 = optimal; Willemsen et al., FGCS 2024). A second table gives
the median trials to the optimum (seeds that never got there in brackets).

When the dataset folder is absent (users of autotile do not have it) it says
so and exits 0.

Usage::

    python benchmarks/kernel_tuner/bench_tuning_caches.py [--path DIR] [--seeds 10] [--n-jobs -1]
        [--searchers grid,random,model,evolutionary,tpe] [--max-budget N]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotile.measure._kernel_tuner import load_kernel_tuner  # noqa: E402
from autotile.search._compare import compare, methodology_budget  # noqa: E402

DEFAULT = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "tuning-caches"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default=str(DEFAULT), help="dataset folder (default: %(default)s)")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--n-jobs", type=int, default=-1)
    ap.add_argument("--searchers", default="grid,random,model,evolutionary,tpe")
    ap.add_argument("--max-budget", type=int, default=None,
                    help="cap the methodology budget (reported when it applies)")
    ap.add_argument("--files", default="", help="comma-separated substrings to select files")
    args = ap.parse_args(argv)
    folder = Path(args.path)
    files = sorted([*folder.glob("*.json"), *folder.glob("*.json.gz")]) if folder.is_dir() else []
    if args.files:
        keys = [k for k in args.files.split(",") if k]
        files = [f for f in files if any(k in f.name for k in keys)]
    if not files:
        print(f"The tuning-caches dataset is absent ({folder} has no .json/.json.gz files); "
              "nothing to benchmark.")
        return 0
    searchers = [s for s in args.searchers.split(",") if s]
    t0 = time.perf_counter()
    score_rows, trial_rows = [], []
    for f in files:
        rec = load_kernel_tuner(f)
        m = rec.measurer()
        budget = methodology_budget(rec.truth.column(rec.objective))
        capped = args.max_budget is not None and budget > args.max_budget
        if capped:
            budget = args.max_budget
        res = compare(rec.space, m, searchers, budget=budget, seeds=args.seeds,
                      n_jobs=args.n_jobs, progress=False)
        name = f.name.replace(".json.gz", "").replace(".json", "")
        size = f"{rec.meta['n_configs']} ({rec.meta['n_valid']} valid)"
        b = f"{budget}{' (capped)' if capped else ''}"
        score_rows.append([name, size, b, *[f"{res.score(s):.3f}" for s in searchers],
                           f"{res.meta['total_wall_time_s']:.0f}"])
        cells = []
        for s in searchers:
            row = next(r for r in res.summary() if r["searcher"] == s)
            t, miss = row["trials_to_opt"], row["missed_opt"]
            cells.append((f">{budget}" if math.isinf(t) else f"{t:.0f}")
                         + (f" ({miss})" if miss else ""))
        cells.append(f"{res.expected_random_trials(0):.0f}")
        trial_rows.append([name, b, *cells])
        print(f"... {name}: {res.meta['total_wall_time_s']:.0f} s", flush=True)
    print(f"\n## Mean P(t) over the methodology budget ({args.seeds} seeds)\n")
    head = ["file", "configs", "budget", *searchers, "time (s)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in score_rows:
        print("| " + " | ".join(r) + " |")
    print("\n## Median trials to the optimum ((n) = seeds that never reached it)\n")
    head = ["file", "budget", *searchers, "random (expected)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in trial_rows:
        print("| " + " | ".join(r) + " |")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
