"""The default searcher against TPE and random search, with and without transfer, per file.

For every Kernel Tuner / T4 file of the tuning-caches dataset (default
``../shared/datasets/tuning-caches/``) and both objectives of the shipped
246,960-schedule GEMM table, runs each searcher for the methodology budget
x ``--seeds`` seeds and prints one Markdown row per (space, searcher):

* mean P(t) over t = 1..budget against both random baselines: autotile's
  exact expected best-so-far (:func:`expected_best_random`) and the value
  at the expected rank ``round(t (N+1) / (t+1))`` that autotuning_methodology's
  ``RandomSearchCalculatedBaseline`` uses;
* the same score counted Kernel Tuner's way: trial ``t`` is the ``t``-th
  *distinct* config (a repeated proposal costs nothing), and the mean number
  of distinct configs among the budget's trials;
* the searcher's CPU time per trial (``time.process_time`` of the whole run
  over the budget: searcher plus the replayed measurement and the study).

``bandit+transfer`` is the default searcher warm-started leave-one-GPU-out:
on a convolution or dedispersion file, the other GPUs' files of the same
kernel are its :class:`~autotile.search.Prior`.

Usage::

    python benchmarks/kernel_tuner/bench_default_searcher.py [--path DIR] [--seeds 10]
        [--searchers bandit,bandit+transfer,tpe,random] [--files convolution,...] [--n-jobs 2]
        [--no-gemm]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "tuning-caches"
GEMM = Path(__file__).resolve().parents[2] / "autotile" / "data" / "gemm64_truth.npz"
_SPACES: dict[str, Any] = {}


def _load(key: str, folder: str) -> tuple[Any, Any, Any, list[Any]]:
    """(space, measurer, valid values, prior sources) of a file or a GEMM objective."""
    if key in _SPACES:
        return _SPACES[key]  # type: ignore[no-any-return]
    if key.startswith("gemm64:"):
        from autotile.measure import GroundTruth, ReplayMeasurer
        from autotile.space import gemm_space

        space, obj = gemm_space(64), key.split(":")[1]
        truth = GroundTruth.load(GEMM)
        m = ReplayMeasurer(space, truth, obj)
        out = (space, m, truth.column(obj), [])
    else:
        from autotile.measure._kernel_tuner import load_kernel_tuner

        files = sorted(Path(folder).glob("*.json.gz"))
        rec = load_kernel_tuner(Path(folder) / key)
        kernel = key.split("__")[0]
        sources = []
        for f in files:
            if f.name != key and f.name.split("__")[0] == kernel:
                r = load_kernel_tuner(f)
                sources.append((r.space, r.truth.column(r.objective)))
        out = (rec.space, rec.measurer(), rec.truth.column(rec.objective), sources)
    _SPACES[key] = out
    return out


def _run(task: tuple[str, str, str, int, int]) -> tuple[str, str, int, Any, Any, float]:
    import optuna

    from autotile.search import create_study, make_searcher

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    key, folder, label, seed, budget = task
    space, m, _, sources = _load(key, folder)
    kwargs: dict[str, Any] = {}
    name = label
    if label == "bandit+transfer":
        name, kwargs = "bandit", {"prior": sources}
    c0 = time.process_time()
    searcher = make_searcher(name, space, seed=seed, **kwargs)
    study = create_study(space, m, searcher=searcher, seed=seed, storage=":memory:")
    study.optimize(budget, progress=False)
    cpu = time.process_time() - c0
    h = study.history()
    configs = [t.user_attrs.get("config") for t in study.optuna_study.get_trials(deepcopy=False)]
    return key, label, seed, h, configs, cpu


def _rank_baseline(values: np.ndarray, budget: int) -> np.ndarray:
    v = np.sort(values[np.isfinite(values)])
    n = v.shape[0]
    t = np.arange(1, budget + 1)
    rank = np.clip(np.round(t * (n + 1) / (t + 1)).astype(np.int64), 1, n)
    return v[n - rank]  # best of t draws sits at rank N+1-(N+1)t/(t+1) from the top


def main(argv: list[str] | None = None) -> int:
    from autotile.search import expected_best_random, methodology_budget, methodology_score

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default=str(DEFAULT))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--searchers", default="bandit,bandit+transfer,tpe,random")
    ap.add_argument("--files", default="", help="comma-separated substrings to select files")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--no-gemm", action="store_true", help="skip the GEMM table's objectives")
    args = ap.parse_args(argv)
    folder = Path(args.path)
    keys = sorted(f.name for f in folder.glob("*.json.gz")) if folder.is_dir() else []
    if args.files:
        keys = [k for k in keys if any(s in k for s in args.files.split(","))]
    if not args.no_gemm and GEMM.is_file():
        keys += ["gemm64:misses", "gemm64:est_cycles"]
    labels = [s for s in args.searchers.split(",") if s]
    tasks, budgets = [], {}
    for key in keys:
        _, _, values, sources = _load(key, str(folder))
        budgets[key] = methodology_budget(values)
        for label in labels:
            if label == "bandit+transfer" and not sources:
                continue
            tasks += [(key, str(folder), label, s, budgets[key]) for s in range(args.seeds)]
    t0 = time.perf_counter()
    runs: dict[tuple[str, str], list[Any]] = {}
    with mp.get_context("fork").Pool(args.n_jobs) as pool:
        for key, label, seed, h, configs, cpu in pool.imap_unordered(_run, tasks):
            runs.setdefault((key, label), []).append((seed, h, configs, cpu))
    print(f"# Default searcher per space ({args.seeds} seeds, methodology budgets)\n")
    print(f"{platform.machine()}, {mp.cpu_count()} cores, {args.n_jobs} workers, "
          f"{time.perf_counter() - t0:.0f} s wall\n")
    print("| space | budget | searcher | P(t) exact | P(t) expected rank | P(t) distinct "
          "configs | distinct configs | reached optimum | CPU ms/trial |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for key in keys:
        _, _, values, _ = _load(key, str(folder))
        b = budgets[key]
        opt = float(np.nanmin(values))
        exact = expected_best_random(values, b)
        ranked = _rank_baseline(np.asarray(values, dtype=np.float64), b)
        for label in labels:
            rs = sorted(runs.get((key, label), []), key=lambda r: r[0])
            if not rs:
                continue
            best = np.array([np.minimum.accumulate(np.where(np.isfinite(h), h, np.inf))
                             for _, h, _, _ in rs])
            p_exact = np.nanmean(methodology_score(best, exact, opt))
            p_rank = np.nanmean(methodology_score(best, ranked, opt))
            # Kernel Tuner's count: the t-th distinct config; runs short of the budget keep
            # their last best
            dist_best, n_dist = [], []
            for _, h, configs, _ in rs:
                seen, curve, cur = set(), [], np.inf
                for c, v in zip(configs, h):
                    if c in seen:
                        continue
                    seen.add(c)
                    cur = min(cur, v if np.isfinite(v) else np.inf)
                    curve.append(cur)
                n_dist.append(len(seen))
                curve = (curve + [cur] * b)[:b]
                dist_best.append(curve)
            p_dist = np.nanmean(methodology_score(np.array(dist_best), exact, opt))
            hit = sum(bool((bb <= opt).any()) for bb in best)
            cpu = 1e3 * np.mean([c for *_, c in rs]) / b
            print(f"| {key.replace('.json.gz', '')} | {b} | {label} | {p_exact:.3f} | "
                  f"{p_rank:.3f} | {p_dist:.3f} | {np.mean(n_dist):.0f} | {hit}/{len(rs)} | "
                  f"{cpu:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
