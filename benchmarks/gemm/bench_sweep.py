"""Exhaustive sweep of the 246,960-schedule 64x64 GEMM space (issue 2).

Measures every schedule's set-associative (8 KB, 4-way, 64 B) and fully
associative misses, writes the ground-truth table, and reports wall time,
schedules per second, and the speed of the fast path against the plain-Python
reference simulator, measured in the same run.

    python benchmarks/gemm/bench_sweep.py [--out autotile/data/gemm64_truth.npz] [--n-jobs 2]
                                          [--fresh]
    python benchmarks/gemm/bench_sweep.py --sample 2000 [--seed 0] [--n-jobs 2]

``--sample K`` times a fair subset instead of sweeping: ``K`` distinct traces
drawn uniformly at random (seeded) from the 59,376 (``--limit`` takes the
first configs in order, and the first 5,000 hold only 96 distinct traces). Each
is measured by the fast path and by plain simulation (``extrapolate=False``)
in the same run, with ``--n-jobs`` processes (CPU seconds of the workers,
``time.process_time``, and wall time); the full sweep's CPU time is
extrapolated from the fast path's.

``--fresh`` re-measures from scratch (earlier chunks deleted, no resume). The
shipped table predates sweep fingerprints, so re-sweeping onto its path needs
``--fresh``; without it :func:`sweep` refuses to resume from a table it cannot
check.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotile import te  # noqa: E402
from autotile.measure import (  # noqa: E402
    CacheConfig,
    ScheduleMeasurer,
    simulate_cache_reference,
    simulate_nest,
    sweep,
)
from autotile.space import gemm_canonical_key, gemm_schedule, gemm_space  # noqa: E402


def reference_ratio(space, n_samples: int, seed: int = 0) -> tuple[float, float]:
    """Seconds per schedule: plain-Python reference (SA + FA) vs the fast path."""
    rng = np.random.default_rng(seed)
    t_ref = t_fast = 0.0
    for cfg in space.sample(rng, n_samples):
        sched, _ = gemm_schedule(cfg, n=64)
        t0 = time.perf_counter()
        nest = te.lower(sched)
        mb = simulate_nest(nest)
        t_fast += time.perf_counter() - t0
        t0 = time.perf_counter()
        nest = te.lower(sched)
        trace = nest.byte_trace()
        sa = simulate_cache_reference(trace)
        fa = simulate_cache_reference(trace, CacheConfig().as_fully_associative())
        t_ref += time.perf_counter() - t0
        assert (sa.n_misses, fa.n_misses) == (mb.set_assoc.n_misses, mb.fully_assoc.n_misses)
    return t_ref / n_samples, t_fast / n_samples


def _time_subset(args: tuple[list[int], bool]) -> float:
    """CPU seconds (this worker) to lower and simulate the configs ``idx``."""
    idx, extrapolate = args
    space = gemm_space(64)
    m = ScheduleMeasurer(space)
    simulate_nest(m.nest(space.config_at(0)).simplified(), extrapolate=extrapolate)  # compile
    t0 = time.process_time()
    for i in idx:
        simulate_nest(m.nest(space.config_at(i)).simplified(), extrapolate=extrapolate)
    return time.process_time() - t0


def fair_subset(space, k: int, seed: int, n_jobs: int) -> None:
    """Time ``k`` random distinct traces, fast path and plain simulation (same run)."""
    from concurrent.futures import ProcessPoolExecutor

    reps: dict[object, int] = {}
    for i in range(len(space)):
        reps.setdefault(gemm_canonical_key(space.config_at(i), 64), i)
    rng = np.random.default_rng(seed)
    pick = sorted(rng.choice(np.array(list(reps.values())), size=k, replace=False).tolist())
    chunks = [pick[j::n_jobs] for j in range(n_jobs)]
    walls, cpus = {}, {}
    with ProcessPoolExecutor(n_jobs) as ex:
        for extrapolate in (True, False):
            t0 = time.perf_counter()
            cpus[extrapolate] = sum(ex.map(_time_subset, [(c, extrapolate) for c in chunks]))
            walls[extrapolate] = time.perf_counter() - t0
    u = len(reps)
    print(f"fair subset: {k} of {u} distinct traces (seed {seed}), n_jobs={n_jobs}, "
          f"load average {os.getloadavg()[0]:.2f} after")
    for extrapolate, name in ((True, "fast path"), (False, "plain simulation")):
        w, c = walls[extrapolate], cpus[extrapolate]
        print(f"  {name}: {c:.1f} s CPU ({c / k * 1e3:.2f} ms/trace), {w:.1f} s wall; full "
              f"sweep of {u} traces extrapolates to {c / k * u:.0f} s CPU")
    print(f"  speed-up (same run, CPU): {cpus[False] / cpus[True]:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="autotile/data/gemm64_truth.npz")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--ref-samples", type=int, default=3)
    ap.add_argument("--fresh", action="store_true",
                    help="delete earlier chunks first and do not resume")
    ap.add_argument("--sample", type=int, default=None,
                    help="time this many random distinct traces instead of sweeping")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    space = gemm_space(64)
    if args.sample:
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
              f"load average {os.getloadavg()[0]:.2f}")
        fair_subset(space, args.sample, args.seed, args.n_jobs)
        return
    out = Path(args.out)
    parts = out.with_name(out.name + ".parts")
    if args.fresh and parts.exists():
        shutil.rmtree(parts)
    measurer = ScheduleMeasurer(space)
    measurer.measure(space.config_at(0))  # load the numba cache before timing
    t0 = time.perf_counter()
    truth = sweep(space, measurer, out, key=lambda c: gemm_canonical_key(c, 64),
                  n_jobs=args.n_jobs, limit=args.limit, resume=not args.fresh)
    wall = time.perf_counter() - t0
    shutil.rmtree(parts, ignore_errors=True)
    n, u = truth.meta["n_configs"], truth.meta["n_unique"]
    t_ref, t_fast = reference_ratio(space, args.ref_samples)
    misses = truth.column("misses")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}")
    print(f"schedules: {n} ({u} distinct traces), n_jobs={args.n_jobs}")
    print(f"sweep wall time: {wall:.1f} s  ({n / wall:.0f} schedules/s, "
          f"{u / wall:.0f} distinct/s)")
    print(f"plain-Python reference: {t_ref:.2f} s/schedule; "
          f"fast path: {t_fast * 1e3:.1f} ms/schedule;"
          f" ratio {t_ref / t_fast:.0f}x (same run, {args.ref_samples} random schedules)")
    print(f"misses: min {misses.min():.0f} (x{int((misses == misses.min()).sum())}), "
          f"median {np.median(misses):.0f}, max {misses.max():.0f}")
    cyc = truth.column("est_cycles")
    print(f"est_cycles: min {cyc.min():.0f} (x{int((cyc == cyc.min()).sum())}), "
          f"max {cyc.max():.0f}")
    print(f"table: {out} ({out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
