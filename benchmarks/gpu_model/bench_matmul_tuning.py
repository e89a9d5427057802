"""Tune the matmul kernel space on the H100 model with every searcher (issue 5).

1. Score every config of ``matmul_space(8192, 8192, 8192)`` (fp16) with
   :class:`KernelModelMeasurer` (the H100 traffic and time model), in parallel,
   into a ground-truth table (``benchmarks/gpu_model/data/matmul8192_h100_truth.npz``).
2. Compare the searchers on that space by replaying the table.
3. Show where the model puts the best configs, and why (compute versus memory bound).

    python benchmarks/gpu_model/bench_matmul_tuning.py [--seeds 10] [--budget 300] [--n-jobs 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotile.measure import (  # noqa: E402
    GroundTruth,
    KernelModelMeasurer,
    ReplayMeasurer,
    matmul_space,
    sweep,
)
from autotile.search import compare  # noqa: E402

SHAPE = {"M": 8192, "N": 8192, "K": 8192}
OUT = Path(__file__).parent / "data" / "matmul8192_h100_truth.npz"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--resweep", action="store_true", help="re-score even if the table exists")
    args = ap.parse_args()
    space = matmul_space(8192, 8192, 8192, "float16")
    measurer = KernelModelMeasurer("matmul", SHAPE)
    t0 = time.perf_counter()
    if OUT.exists() and not args.resweep:
        truth = GroundTruth.load(OUT)
        print(f"loaded {OUT} ({len(truth)} configs)")
    else:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        truth = sweep(space, measurer, OUT, n_jobs=args.n_jobs, chunk_size=100)
        import shutil

        shutil.rmtree(OUT.with_name(OUT.name + ".parts"), ignore_errors=True)
        print(f"scored {len(truth)} configs in {time.perf_counter() - t0:.0f} s")
    ok = truth.status == 0
    t = truth.column("time_s")
    print(f"\n## matmul 8192^3 fp16 on the H100 model: {len(space)} configs, "
          f"{int(ok.sum())} feasible, {int((~ok).sum())} infeasible\n")

    # 2. searchers
    replay = ReplayMeasurer(space, truth, objective="time_s")
    res = compare(space, replay, searchers=("grid", "random", "model", "evolutionary", "tpe"),
                  budget=args.budget, seeds=args.seeds, n_jobs=args.n_jobs, progress=False)
    print(res.table())

    # 3. where the best configs sit
    order = np.argsort(np.where(ok, t, np.inf))
    n_ok = int(ok.sum())
    bound = truth.column("bound")
    print("\n| rank | config | TFLOP/s | compute ms | memory ms | HBM GB | L2 hit | bound |")
    print("|---:|---|---:|---:|---:|---:|---:|---|")
    picks = [*range(10), n_ok // 100, n_ok // 10, n_ok // 2, n_ok - 1]
    for r in picks:
        i = int(order[r])
        m = {k: truth.column(k)[i] for k in ("tflops", "compute_s", "memory_s", "hbm_bytes",
                                               "l2_hit_rate")}
        print(f"| {r + 1} | {space.config_at(i)} | {m['tflops']:.0f} | {m['compute_s'] * 1e3:.2f} "
              f"| {m['memory_s'] * 1e3:.2f} | {m['hbm_bytes'] / 1e9:.2f} | {m['l2_hit_rate']:.3f} "
              f"| {'memory' if bound[i] else 'compute'} |")
    for frac in (0.01, 0.1, 0.5, 1.0):
        top = order[: max(1, int(frac * n_ok))]
        print(f"top {frac:.0%}: {bound[top].mean():.0%} memory-bound, median HBM "
              f"{np.median(truth.column('hbm_bytes')[top]) / 1e9:.2f} GB, median "
              f"{np.median(truth.column('tflops')[top]):.0f} TFLOP/s")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
