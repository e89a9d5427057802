"""CPU per trial of bandit variants, interleaved in one process.

Runs ``BanditSearcher(space, seed=s, **kwargs)`` for the default portfolio
(model-guided, Parzen, random), the descent portfolio (descent, Parzen,
random; tried on 2026-12-02, not the default), and the default portfolio with
the Parzen arm's estimator set (``parzen="multivariate"`` or
``"independent"``); ``--variants`` picks some. Spaces: the 246,960-schedule GEMM table
(misses, budget 200) and on the RTX 3090 gemm file of the tuning-caches dataset (its methodology
budget, 1411), seed by seed alternately, after a short warm-up run of each,
and prints the mean ``time.process_time`` per trial (searcher, study and
replayed measurement). On a shared machine the ratio of the two is what to
read; ``bench_searcher_cpu.py`` gives the absolute figures with the anchors.

Usage::

    python benchmarks/kernel_tuner/bench_bandit_arms_cpu.py [--seeds 5] [--file-seeds 3]
        [--variants default,descent,multivariate,independent]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT.parent / "shared" / "datasets" / "tuning-caches"
VARIANTS = {
    "default": ("default (model, parzen, random)", {}),
    "descent": ("descent (descent, parzen, random)", {"arms": ("descent", "parzen", "random")}),
    "multivariate": ("multivariate Parzen (model, parzen, random)", {"parzen": "multivariate"}),
    "independent": ("per-knob Parzen (model, parzen, random)", {"parzen": "independent"}),
}


def main(argv: list[str] | None = None) -> int:
    import optuna

    from autotile.measure import GroundTruth, ReplayMeasurer
    from autotile.measure._kernel_tuner import load_kernel_tuner
    from autotile.search import BanditSearcher, create_study, methodology_budget
    from autotile.space import gemm_space

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5, help="seeds on the GEMM table")
    ap.add_argument("--file-seeds", type=int, default=3, help="seeds on the gemm file")
    ap.add_argument("--path", type=Path, default=DATASET, help="tuning-caches folder")
    ap.add_argument("--variants", default="default,descent",
                    help=f"comma-separated, of {', '.join(VARIANTS)}")
    args = ap.parse_args(argv)
    picked = [v for v in args.variants.split(",") if v]
    unknown = [v for v in picked if v not in VARIANTS]
    if unknown or not picked:
        ap.error(f"--variants must name some of {', '.join(VARIANTS)}, got {args.variants!r}")
    portfolios = dict(VARIANTS[v] for v in picked)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = gemm_space(64)
    truth = GroundTruth.load(ROOT / "autotile" / "data" / "gemm64_truth.npz")
    rec = load_kernel_tuner(args.path / "gemm__RTX_3090.json.gz")
    spaces = [("gemm64", space, ReplayMeasurer(space, truth, "misses"), 200, args.seeds),
              ("gemm_file", rec.space, rec.measurer(),
               methodology_budget(rec.truth.column(rec.objective)), args.file_seeds)]
    print(f"load average at the start {os.getloadavg()[0]:.1f}")
    for name, sp, m, budget, n in spaces:
        for kw in portfolios.values():  # warm-up: imports and shared tables
            create_study(sp, m, searcher=BanditSearcher(sp, seed=99, **kw),
                         storage=":memory:").optimize(20, progress=False)
        per: dict[str, list[float]] = {k: [] for k in portfolios}
        for seed in range(n):
            for label, kw in portfolios.items():
                c0 = time.process_time()
                study = create_study(sp, m, searcher=BanditSearcher(sp, seed=seed, **kw),
                                     seed=seed, storage=":memory:")
                study.optimize(budget, progress=False)
                per[label].append(1e3 * (time.process_time() - c0) / budget)
        for label, v in per.items():
            print(f"{name}, budget {budget}, seeds 0-{n - 1}, {label}: {np.mean(v):.2f} ms/trial "
                  f"({', '.join(f'{x:.1f}' for x in v)})")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
