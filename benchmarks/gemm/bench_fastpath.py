"""Exactness and speed of the periodic fast path of the nest simulator (issue 16).

Two modes, both comparing ``simulate_nest(nest, extrapolate=True)`` (the fast path, which
extrapolates provably periodic loops) against ``simulate_nest(nest,
extrapolate=False)`` (plain simulation of every access):

    python benchmarks/gemm/bench_fastpath.py --n 256 --samples 500 [--seed 0]
    python benchmarks/gemm/bench_fastpath.py --exhaustive [--n-jobs 2]

The sampled mode draws random schedules of ``gemm_space(n)``, times both paths
on each (CPU seconds of this process, same run) and asserts equal set
associative, fully associative and compulsory misses (so equal compulsory,
capacity and conflict counts). It prints the median and 90th percentile of
each path's CPU time per schedule and the speed-up. ``--no-full`` times the
fast path alone.

The exhaustive mode measures every one of the 246,960 schedules of
``gemm_space(64)`` with the fast path and compares each with the shipped
ground-truth table (``autotile/data/gemm64_truth.npz``, made by plain
simulation), counting schedules with a negative conflict count.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotile.measure import ScheduleMeasurer, gemm_ground_truth, simulate_nest  # noqa: E402
from autotile.space import gemm_canonical_key, gemm_space  # noqa: E402


def _counts(mb) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    return mb.set_assoc.n_misses, mb.fully_assoc.n_misses, mb.compulsory


def _chunk(indices: list[int]) -> tuple[np.ndarray, float]:
    """Counts of the configs ``indices`` and this worker's CPU seconds for them."""
    space = gemm_space(64)
    m = ScheduleMeasurer(space)
    out = np.zeros((len(indices), 3), np.int64)
    t0 = time.process_time()
    for j, i in enumerate(indices):
        out[j] = _counts(simulate_nest(m.nest(space.config_at(i)).simplified(),
                                       extrapolate=True))
    return out, time.process_time() - t0


def exhaustive(n_jobs: int, distinct: bool = False) -> None:
    space = gemm_space(64)
    truth = gemm_ground_truth(64)
    _chunk([0])  # compile once before timing
    t0 = time.perf_counter()
    if distinct:  # one schedule per distinct trace (gemm_canonical_key), as the sweep
        rep: dict[object, int] = {}
        owner = np.empty(len(space), np.int64)
        for i in range(len(space)):
            owner[i] = rep.setdefault(gemm_canonical_key(space.config_at(i), 64), i)
        todo = sorted(set(rep.values()))
    else:
        todo = list(range(len(space)))
    step = 2048
    chunks = [todo[lo:lo + step] for lo in range(0, len(todo), step)]
    with ProcessPoolExecutor(n_jobs) as ex:
        parts = list(ex.map(_chunk, chunks))
    done = np.concatenate([d for d, _ in parts])
    cpu = sum(c for _, c in parts)
    if distinct:
        row = {i: r for r, i in enumerate(todo)}
        got = done[[row[int(o)] for o in owner]]
    else:
        got = done
    wall = time.perf_counter() - t0
    want = np.stack([truth.column("misses"), truth.column("fa_misses"),
                     truth.column("compulsory_misses")], axis=1).astype(np.int64)
    bad = np.flatnonzero((got != want).any(axis=1))
    conflict = got[:, 0] - got[:, 1]
    print(f"exhaustive 64x64: {len(space)} schedules, {len(bad)} differ from the table "
          f"(plain simulation); {int((conflict < 0).sum())} have negative conflict counts "
          f"(table: {int((want[:, 0] - want[:, 1] < 0).sum())}); "
          f"fast path on {len(todo)} schedules"
          f"{' (one per distinct trace)' if distinct else ' (no dedup)'}, n_jobs={n_jobs}: "
          f"{wall:.1f} s wall, {cpu:.1f} s CPU in the workers (lowering included); "
          f"load average {os.getloadavg()[0]:.2f} after")
    for i in bad[:10]:
        print("  differs:", dict(space.config_at(int(i))), got[i], want[i])
    if len(bad):
        raise SystemExit(1)


def sampled(n: int, samples: int, seed: int, full: bool, verbose: bool = False) -> None:
    space = gemm_space(n)
    m = ScheduleMeasurer(space)
    simulate_nest(m.nest(space.config_at(0)).simplified(), extrapolate=True)  # compile
    simulate_nest(m.nest(space.config_at(0)).simplified(), extrapolate=False)
    rng = np.random.default_rng(seed)
    t_fast, t_full, n_neg, bad = [], [], 0, 0
    for cfg in space.sample(rng, samples):
        nest = m.nest(cfg).simplified()
        t0 = time.process_time()
        fast = _counts(simulate_nest(nest, extrapolate=True))
        t_fast.append(time.process_time() - t0)
        n_neg += fast[0] < fast[1]
        if full:
            t0 = time.process_time()
            plain = _counts(simulate_nest(nest, extrapolate=False))
            t_full.append(time.process_time() - t0)
            if plain != fast:
                bad += 1
                print("  differs:", dict(cfg), fast, plain)
        if verbose:
            print(f"  {dict(cfg)}: fast {t_fast[-1]:.3f} s"
                  + (f", plain {t_full[-1]:.3f} s, equal {plain == fast}" if full else ""),
                  flush=True)
    print(f"n={n}: {samples} random schedules (seed {seed}), {n_neg} with negative conflict")
    f = np.array(t_fast)
    print(f"  fast path CPU/schedule: median {np.median(f):.4f} s, p90 "
          f"{np.percentile(f, 90):.4f} s, mean {f.mean():.4f} s, max {f.max():.3f} s")
    if full:
        g = np.array(t_full)
        print(f"  plain simulation CPU/schedule: median {np.median(g):.4f} s, p90 "
              f"{np.percentile(g, 90):.4f} s, mean {g.mean():.4f} s")
        print(f"  speed-up (same run): total {g.sum() / f.sum():.1f}x, median of per-schedule "
              f"ratios {np.median(g / np.maximum(f, 1e-9)):.1f}x")
        print(f"  identical counts: {samples - bad}/{samples}")
        if bad:
            raise SystemExit(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-full", action="store_true", help="time the fast path only")
    ap.add_argument("--exhaustive", action="store_true", help="every 64x64 schedule")
    ap.add_argument("--distinct", action="store_true",
                    help="with --exhaustive: simulate one schedule per distinct trace")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--verbose", action="store_true", help="print each schedule's times")
    args = ap.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}")
    if args.exhaustive:
        exhaustive(args.n_jobs, args.distinct)
    else:
        sampled(args.n, args.samples, args.seed, not args.no_full, args.verbose)


if __name__ == "__main__":
    main()
