"""Transfer to the 246,960-schedule GEMM table from another problem size or cache.

Issue #17's "transfer across problems" on the GEMM schedule space: the default
searcher (``"bandit"``) tunes ``gemm_space(64)`` on the shipped table (8 KB 4-way
cache, misses, replayed) with and without a :class:`~autotile.search.Prior` built
from an exhaustive table of another problem:

* ``n32``: ``gemm_space(32)`` (155,520 schedules) under the same 8 KB 4-way
  cache; knob values of n = 32 map to n = 64 by value (nearest in log scale);
* ``16KB``: ``gemm_space(64)`` under a 16 KB 4-way cache.

Neither source's table is the target's, and nothing in the searcher or the prior
was tuned on this space. The source tables are swept once (exact cache simulation,
``autotile.measure.sweep`` over 2 workers, a few minutes each) and kept in
``--cache-dir``. Per variant and seed it prints the trials to the optimum (1,536
misses; ``-`` if never within the budget), the median, the maximum and the mean
CPU per trial (the issue's target on this table: median <= 25, no seed above 100).

Usage::

    python benchmarks/gemm/bench_transfer.py [--seeds 20] [--budget 200] [--n-jobs 2]
        [--sources n32,16KB] [--cache-dir ~/.cache/autotile-bench] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

TABLE = Path(__file__).resolve().parents[2] / "autotile" / "data" / "gemm64_truth.npz"
OPTIMUM = 1536.0
#: name -> (problem size n, cache bytes, ways) of each source table
SOURCES = {"n32": (32, 8192, 4), "16KB": (64, 16384, 4)}


def source_table(name: str, cache_dir: Path) -> tuple[Any, np.ndarray]:
    """(space, misses per config) of a source, swept once and kept in ``cache_dir``."""
    from autotile.measure import CacheConfig, ScheduleMeasurer, sweep
    from autotile.space import gemm_canonical_key, gemm_space

    n, size, ways = SOURCES[name]
    space = gemm_space(n)
    m = ScheduleMeasurer(space, objective="misses",
                         cache=CacheConfig(size_bytes=size, ways=ways))
    cache_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    truth = sweep(space, m, cache_dir / f"gemm{n}_{size}B_{ways}way_misses.npz",
                  key=gemm_canonical_key, n_jobs=2, chunk_size=2000, progress=False)
    print(f"# source {name}: gemm_space({n}), {size} B {ways}-way, {len(space)} configs "
          f"({time.perf_counter() - t0:.0f} s, swept or loaded)", flush=True)
    return space, truth.column("misses")


_SOURCES: dict[str, tuple[Any, np.ndarray]] = {}


def _run(task: tuple[str, int, int]) -> tuple[str, int, np.ndarray, float]:
    import optuna

    from autotile.measure import GroundTruth, ReplayMeasurer
    from autotile.search import Prior, create_study, make_searcher
    from autotile.space import gemm_space

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    variant, seed, budget = task
    space = gemm_space(64)
    m = ReplayMeasurer(space, GroundTruth.load(TABLE), "misses")
    c0 = time.process_time()
    kwargs: dict[str, Any] = {}
    if variant != "none":
        kwargs["prior"] = Prior(space, [_SOURCES[s] for s in variant.split("+")])
    searcher = make_searcher("bandit", space, seed=seed, **kwargs)
    study = create_study(space, m, searcher=searcher, seed=seed, storage=":memory:")
    study.optimize(budget, progress=False)
    return variant, seed, np.asarray(study.best_so_far()), time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--sources", default="n32,16KB",
                    help=f"comma-separated, of {sorted(SOURCES)}; each alone and all together")
    ap.add_argument("--cache-dir", type=Path,
                    default=Path.home() / ".cache" / "autotile-bench")
    ap.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = ap.parse_args(argv)
    names = [s for s in args.sources.split(",") if s]
    for s in names:
        if s not in SOURCES:
            ap.error(f"--sources: unknown source {s!r}; known: {sorted(SOURCES)}")
        _SOURCES[s] = source_table(s, args.cache_dir)
    variants = ["none", *names] + (["+".join(names)] if len(names) > 1 else [])
    tasks = [(v, s, args.budget) for v in variants for s in range(args.seeds)]
    t0 = time.perf_counter()
    with mp.get_context("fork").Pool(args.n_jobs) as pool:  # workers inherit _SOURCES
        out = list(pool.imap_unordered(_run, tasks))
    wall = time.perf_counter() - t0
    lines = [f"# Transfer to the 246,960-schedule GEMM table ({platform.node()}, "
             f"{args.n_jobs} workers, {wall:.0f} s wall)", "",
             f"`python benchmarks/gemm/bench_transfer.py --seeds {args.seeds} --budget "
             f"{args.budget} --sources {args.sources}`; the shipped table (8 KB 4-way, misses, "
             f"optimum {OPTIMUM:.0f}), the default searcher (`bandit`), seeds 0-"
             f"{args.seeds - 1}, budget {args.budget}.", "",
             "| prior | trials to the optimum, per seed | median | max | never | "
             "CPU ms/trial |", "|---|---|---:|---:|---:|---:|"]
    for v in variants:
        rs = sorted((r for r in out if r[0] == v), key=lambda r: r[1])
        t = [float(np.flatnonzero(r[2] <= OPTIMUM)[0] + 1) if (r[2] <= OPTIMUM).any()
             else np.inf for r in rs]
        cells = ", ".join("-" if np.isinf(x) else f"{x:.0f}" for x in t)
        cpu = 1e3 * np.mean([r[3] for r in rs]) / args.budget
        never = int(sum(np.isinf(t)))
        mx = "-" if never else f"{max(t):.0f}"
        lines.append(f"| {v} | {cells} | {np.median(t):.0f} | {mx} | {never} | {cpu:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
