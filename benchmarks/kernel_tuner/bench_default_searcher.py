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

``kt:<strategy>`` rows are Kernel Tuner 1.5's own strategies run in its
simulation mode (``pip install autotile[kt]``; ``_kt_sim.py``) on a Kernel
Tuner cache written from the same table, same budget (``max_fevals``) and
seeds; their P(t) comes from the same code as autotile's rows. Kernel Tuner
counts distinct configs only, so for them all three P(t) columns coincide.
A strategy that stops on its own before the budget (its ``maxiter``) keeps
its last best for the remaining trials, as any run short of the budget does.

Before a run's first valid (finite) value its best-so-far is undefined:
those trials are left out of the mean P(t) (NaN), for every searcher alike.

A second table compares, per space, the default searcher with TPE and the
best Kernel Tuner strategy on mean P(t) exact.

Usage::

    python benchmarks/kernel_tuner/bench_default_searcher.py [--path DIR] [--seeds 10]
        [--first-seed 0] [--searchers bandit,bandit+transfer,tpe,random]
        [--kt genetic_algorithm,pso,...] [--files convolution,...] [--n-jobs 2] [--no-gemm]
        [--out FILE]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _kt_sim  # noqa: E402  (benchmark-only helper next to this script)

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


KT_DEFAULT = ("genetic_algorithm,pso,dual_annealing,simulated_annealing,random_sample,"
              "firefly_algorithm,diff_evo,greedy_ils")


def _run(task: tuple[str, str, str, int, int, str]) -> tuple[str, str, int, Any, Any, float]:
    key, folder, label, seed, budget, kt_cache = task
    if label.startswith("kt:"):
        keys, vals, cpu = _kt_sim.run_strategy(kt_cache, label[3:], seed, budget)
        return key, label, seed, np.asarray(vals, dtype=np.float64), keys, cpu
    import optuna

    from autotile.search import create_study, make_searcher

    optuna.logging.set_verbosity(optuna.logging.WARNING)
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


def best_so_far(h: Any, budget: int) -> np.ndarray:
    """Running minimum of a run's values over ``budget`` trials.

    Failed trials (non-finite) never improve it; before the first valid value
    it is NaN (undefined); a run shorter than ``budget`` keeps its last value.
    """
    v = np.asarray(h, dtype=np.float64)[:budget]
    v = np.where(np.isfinite(v), v, np.nan)
    out = np.full(budget, np.nan)
    if v.shape[0]:
        out[:v.shape[0]] = np.fmin.accumulate(v)
        out[v.shape[0]:] = out[v.shape[0] - 1]
    return out


def distinct_curve(h: Any, configs: Any, budget: int) -> tuple[np.ndarray, int]:
    """:func:`best_so_far` counted Kernel Tuner's way (the t-th distinct config) and its length."""
    seen: set[Any] = set()
    vals = []
    for c, v in zip(configs, h):
        if c not in seen:
            seen.add(c)
            vals.append(v)
    return best_so_far(vals, budget), len(seen)


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
    ap.add_argument("--first-seed", type=int, default=0,
                    help="seeds first-seed .. first-seed + seeds - 1 (development runs use 100+)")
    ap.add_argument("--searchers", default="bandit,bandit+transfer,tpe,random")
    ap.add_argument("--kt", default=KT_DEFAULT,
                    help="Kernel Tuner strategies run in simulation mode ('' for none)")
    ap.add_argument("--files", default="", help="comma-separated substrings to select files")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--no-gemm", action="store_true", help="skip the GEMM table's objectives")
    ap.add_argument("--out", default="", help="also write the tables to this Markdown file")
    args = ap.parse_args(argv)
    folder = Path(args.path)
    keys = sorted(f.name for f in folder.glob("*.json.gz")) if folder.is_dir() else []
    if args.files:
        keys = [k for k in keys if any(s in k for s in args.files.split(","))]
    if not args.no_gemm and GEMM.is_file():
        keys += ["gemm64:misses", "gemm64:est_cycles"]
    labels = [s for s in args.searchers.split(",") if s]
    labels += [f"kt:{s}" for s in args.kt.split(",") if s]
    tmp = tempfile.TemporaryDirectory(prefix="autotile_kt_")
    tasks, budgets, kt_paths = [], {}, {}
    for key in keys:
        space, _, values, sources = _load(key, str(folder))
        budgets[key] = methodology_budget(values)
        if any(lb.startswith("kt:") for lb in labels):
            doc = _kt_sim.space_document(space, values, kernel_name=key.split("__")[0])
            kt_paths[key] = str(_kt_sim.write_cache(
                doc, Path(tmp.name) / (key.replace(":", "_").replace(".json.gz", "") + ".json")))
        for label in labels:
            if label == "bandit+transfer" and not sources:
                continue
            tasks += [(key, str(folder), label, s, budgets[key], kt_paths.get(key, ""))
                      for s in range(args.first_seed, args.first_seed + args.seeds)]
    t0, c0 = time.perf_counter(), time.process_time()
    runs: dict[tuple[str, str], list[Any]] = {}
    with mp.get_context("fork").Pool(args.n_jobs) as pool:
        for key, label, seed, h, configs, cpu in pool.imap_unordered(_run, tasks):
            runs.setdefault((key, label), []).append((seed, h, configs, cpu))
    tmp.cleanup()
    lines: list[str] = []

    def out(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    seeds = f"seeds {args.first_seed}-{args.first_seed + args.seeds - 1}"
    out(f"# Default searcher per space ({args.seeds} seeds, {seeds}, methodology budgets)\n")
    load = os.getloadavg()
    out(f"{platform.machine()}, {mp.cpu_count()} cores, {args.n_jobs} workers, "
        f"{time.perf_counter() - t0:.0f} s wall, load average at the end "
        f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} (1/5/15 min)\n")
    out("| space | budget | searcher | P(t) exact | P(t) expected rank | P(t) distinct "
        "configs | distinct configs | reached optimum | CPU ms/trial |")
    out("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    scores: dict[tuple[str, str], float] = {}
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
            best = np.array([best_so_far(h, b) for _, h, _, _ in rs])
            p_exact = np.nanmean(methodology_score(best, exact, opt))
            p_rank = np.nanmean(methodology_score(best, ranked, opt))
            # Kernel Tuner's count: the t-th distinct config
            dist = [distinct_curve(h, configs, b) for _, h, configs, _ in rs]
            p_dist = np.nanmean(methodology_score(np.array([d for d, _ in dist]), exact, opt))
            hit = sum(bool((bb <= opt).any()) for bb in best)
            cpu = 1e3 * np.mean([c for *_, c in rs]) / b
            scores[key, label] = float(p_exact)
            out(f"| {_short(key)} | {b} | {label} | {p_exact:.3f} | "
                f"{p_rank:.3f} | {p_dist:.3f} | {np.mean([n for _, n in dist]):.0f} | "
                f"{hit}/{len(rs)} | {cpu:.1f} |")
    kt_labels = [lb for lb in labels if lb.startswith("kt:")]
    if "bandit" in labels:
        out("\n## The default searcher against its anchors (mean P(t) exact)\n")
        out("| space | budget | bandit | bandit+transfer | TPE | best Kernel Tuner strategy | "
            "bandit - best anchor |")
        out("|---|---:|---:|---:|---:|---|---:|")
        for key in keys:
            anchors = {lb: scores[key, lb] for lb in ["tpe", *kt_labels] if (key, lb) in scores}
            kt = {lb: v for lb, v in anchors.items() if lb.startswith("kt:")}
            top_kt = max(kt, key=lambda lb: kt[lb]) if kt else None
            own = scores.get((key, "bandit"), np.nan)
            tr = scores.get((key, "bandit+transfer"))
            best_anchor = max(anchors.values()) if anchors else np.nan
            out(f"| {_short(key)} | {budgets[key]} | {own:.3f} | "
                f"{'-' if tr is None else f'{tr:.3f}'} | "
                f"{scores.get((key, 'tpe'), np.nan):.3f} | "
                f"{'-' if top_kt is None else f'{top_kt[3:]} {kt[top_kt]:.3f}'} | "
                f"{own - best_anchor:+.3f} |")
    out(f"\nharness CPU (this process, not the workers) {time.process_time() - c0:.1f} s")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


def _short(key: str) -> str:
    return key.replace(".json.gz", "")


if __name__ == "__main__":
    raise SystemExit(main())
