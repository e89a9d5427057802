"""``compare``: run searchers for a budget x several seeds and collect their convergence.

:func:`plan_comparison` checks the arguments and works out the optimum, the
budget and the expected time; :func:`run_comparison` runs the plan, one
in-memory study per (searcher, seed) (:mod:`autotile.search._compare_run`),
in parallel with joblib and with a per-trial progress bar, keeps each finished
run in an Optuna storage when given one (:mod:`autotile.search._compare_store`,
so an interrupted comparison resumes) and returns a
:class:`~autotile.search.ComparisonResult` (:mod:`autotile.search._comparison`),
scored with the methodology's maths (:mod:`autotile.search._methodology`,
re-exported here). :func:`compare` is the two in one call.
"""

from __future__ import annotations

import gc
import math
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from optuna.storages import BaseStorage

from autotile.measure._parallel import check_scheduler
from autotile.search._compare_plan import (
    DEFAULT_SEARCHERS,
    P_MEANING,
    ComparisonPlan,
    machine_load,
    objective_direction,
    plan_comparison,
)
from autotile.search._compare_run import Negated, ProgressFn, SearcherFn, run_one
from autotile.search._compare_store import (
    RunResult,
    open_storage,
    read_run,
    run_study_name,
    write_run,
)
from autotile.search._comparison import DIRECTIONS, TOLERANCES_PCT, ComparisonResult
from autotile.search._methodology import (
    expected_best_random,
    expected_trials_to_hit,
    methodology_budget,
    methodology_score,
    random_trials_quantile,
    trials_to_target,
)
from autotile.search._study_args import check_n_jobs

__all__ = [
    "ComparisonResult",
    "ComparisonPlan",
    "compare",
    "plan_comparison",
    "run_comparison",
    "objective_direction",
    "expected_best_random",
    "expected_trials_to_hit",
    "random_trials_quantile",
    "methodology_budget",
    "methodology_score",
    "trials_to_target",
    "DEFAULT_SEARCHERS",
    "TOLERANCES_PCT",
    "DIRECTIONS",
    "P_MEANING",
]

# kept importable from here (tests and older code import it from _compare)
_Negated = Negated


def _workers(n_jobs: int, n_tasks: int) -> int:
    import os

    cores = os.cpu_count() or 1
    n = n_jobs if n_jobs > 0 else max(1, cores + 1 + n_jobs)
    return max(1, min(n, n_tasks))


class _Bar:
    """The per-trial bar: trials done over all runs, and each searcher's best so far."""

    def __init__(self, plan: ComparisonPlan, enabled: bool) -> None:
        from tqdm.auto import tqdm

        self.plan = plan
        self.done: dict[tuple[str, int], int] = {}
        self.best: dict[str, float] = {}
        self.lock = threading.Lock()
        self.sign = -1.0 if plan.direction == "maximize" else 1.0
        self.bar = tqdm(total=plan.budget * plan.n_runs, unit="trial", desc="compare",
                        disable=not enabled, dynamic_ncols=True, smoothing=0.05)

    def __call__(self, label: str, seed: int, n_done: int, best: float) -> None:
        with self.lock:
            old = self.done.get((label, seed), 0)
            self.done[(label, seed)] = max(old, n_done)
            if math.isfinite(best) and (label not in self.best
                                        or self.sign * best < self.sign * self.best[label]):
                self.best[label] = best
            parts = [f"{k} {v:.6g}" for k, v in self.best.items()]
            self.bar.set_postfix_str(f"best {self.plan.objective}: " + ", ".join(parts),
                                     refresh=False)
            self.bar.update(max(0, n_done - old))

    def close(self) -> None:
        self.bar.close()


def _drain(queue: Any, report: ProgressFn) -> None:
    while True:
        item = queue.get()
        if item is None:
            return
        report(*item)


# The plan, progress queue and keep_trials flag of a forked worker process, set by its
# initializer (inherited through fork, not pickled: the plan holds the whole table).
_WORKER: tuple[ComparisonPlan, Any, bool] | None = None
_WORKER_GC_THRESHOLD = 10_000


def _init_worker(plan: ComparisonPlan, queue: Any, keep_trials: bool) -> None:
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _die_with_parent()
    _WORKER = (plan, queue, keep_trials)
    # a run allocates millions of short-lived objects and few cycles: collect the
    # youngest generation every 10,000 allocations instead of 700 (same trials, less CPU)
    gc.set_threshold(_WORKER_GC_THRESHOLD, 10, 10)


def _die_with_parent() -> None:
    """Linux: end this worker when the comparison is killed (``kill -9`` leaves no orphans)."""
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _run_task(task: tuple[str, str | SearcherFn, int]) -> RunResult:
    from autotile.search._compare_run import _QueueReport

    assert _WORKER is not None
    plan, queue, keep_trials = _WORKER
    label, fn, seed = task
    return run_one(plan.space, plan.measurer, label, fn, seed, plan.budget, plan.direction,
                   _QueueReport(queue), keep_trials)


def _run_dask_task(space: Any, measurer: Any, budget: int, direction: str, keep_trials: bool,
                   task: tuple[str, str | SearcherFn, int]) -> RunResult:
    label, fn, seed = task
    return run_one(space, measurer, label, fn, seed, budget, direction, None, keep_trials)


def _execute(plan: ComparisonPlan, tasks: list[tuple[str, str | SearcherFn, int]],
             n_jobs: int, report: ProgressFn, keep_trials: bool,
             scheduler: Any = None) -> Iterator[RunResult]:
    """Run ``tasks``, yielding each run when it ends (in the order they end).

    Workers are forked where the platform can (they start at once, with
    everything imported and the table shared); elsewhere joblib's loky
    processes run them. Either way a queue carries each chunk's progress to
    ``report``. With a Dask ``scheduler`` each run is one task of
    :func:`~autotile.measure.parallel_map` and progress comes as runs end.
    """
    import multiprocessing as mp

    args = (plan.space, plan.measurer)
    n_jobs = _workers(n_jobs, len(tasks))  # at most one worker per run
    if scheduler is not None:  # Dask: each run is a task; the bar moves as runs end
        from autotile.measure._parallel import parallel_map

        yield from parallel_map(_run_dask_task, tasks,
                                shared=(plan.space, plan.measurer, plan.budget, plan.direction,
                                        keep_trials),
                                n_jobs=n_jobs, scheduler=scheduler, unordered=True)
        return
    if n_jobs == 1 or len(tasks) <= 1:
        for label, fn, seed in tasks:
            yield run_one(*args, label, fn, seed, plan.budget, plan.direction, report,
                          keep_trials)
        return
    n_workers = _workers(n_jobs, len(tasks))
    if "fork" in mp.get_all_start_methods():
        ctx = mp.get_context("fork")
        queue = ctx.Queue()
        # the parent's objects (the plan, the table, the modules) as they are at the fork:
        # the workers' collector never scans them, nor copies their pages by counting them
        gc.freeze()
        try:
            pool = ctx.Pool(n_workers, _init_worker, (plan, queue, keep_trials))
        finally:
            gc.unfreeze()
        with pool:
            drain = threading.Thread(target=_drain, args=(queue, report), daemon=True)
            drain.start()
            try:
                yield from pool.imap_unordered(_run_task, tasks)
            finally:
                queue.put(None)
                drain.join(timeout=5)
        return
    yield from _execute_loky(plan, tasks, n_jobs, report, keep_trials)


def _execute_loky(plan: ComparisonPlan, tasks: list[tuple[str, str | SearcherFn, int]],
                  n_jobs: int, report: ProgressFn, keep_trials: bool) -> Iterator[RunResult]:
    """:func:`_execute` without fork: joblib's processes, progress through a manager queue."""
    from multiprocessing.managers import SyncManager

    from joblib import Parallel, delayed

    from autotile.search._compare_run import _QueueReport

    args = (plan.space, plan.measurer)
    manager = SyncManager()
    # Ctrl-C reaches the whole process group; the queue's server must outlive the workers
    manager.start(signal.signal, (signal.SIGINT, signal.SIG_IGN))
    try:
        queue = manager.Queue()
        drain = threading.Thread(target=_drain, args=(queue, report), daemon=True)
        drain.start()
        try:
            jobs = (delayed(run_one)(*args, label, fn, seed, plan.budget, plan.direction,
                                     _QueueReport(queue), keep_trials)
                    for label, fn, seed in tasks)
            yield from Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs)
        finally:
            queue.put(None)
            drain.join(timeout=5)
    finally:
        manager.shutdown()


def run_comparison(
    plan: ComparisonPlan,
    n_jobs: int = 1,
    progress: bool = True,
    storage: str | BaseStorage | None = None,
    study_prefix: str | None = None,
    scheduler: Any = None,
) -> ComparisonResult:
    """Run a :class:`ComparisonPlan`: every (searcher, seed) study, then the statistics.

    Parameters
    ----------
    plan : ComparisonPlan
        From :func:`plan_comparison`.
    n_jobs : int, default=1
        joblib workers over runs (``-1``: all cores); capped at the number
        of runs.
    progress : bool, default=True
        Show a bar over trials, with each searcher's best value so far.
    storage : str, path-like or optuna.storages.BaseStorage, optional
        Keep each finished run as an Optuna study here (see :func:`compare`).
    study_prefix : str, optional
        Prefix of the stored studies' names; default
        ``"compare:<space>:<objective>:<direction>:budget<budget>"``.
    scheduler : None, "local", str or distributed.Client, default=None
        Run on a Dask cluster instead (see :func:`compare`).

    Returns
    -------
    ComparisonResult
        The runs, in the plan's order.

    Raises
    ------
    ValueError
        If ``n_jobs`` is 0, or the storage holds a run of the same name made
        with other settings.
    KeyboardInterrupt
        Passed on after the runs that ended were stored.
    """
    n_jobs = check_n_jobs(n_jobs)
    check_scheduler(scheduler)
    t0 = time.perf_counter()
    budget = plan.budget
    fingerprint = None
    if hasattr(plan.measurer, "fingerprint"):
        try:
            fingerprint = plan.measurer.fingerprint()
        except TypeError:
            fingerprint = None
    settings = {"space": str(plan.meta.get("space")), "space_size": int(len(plan.space)),
                "objective": plan.objective, "direction": plan.direction, "budget": budget,
                "measurer": type(plan.measurer).__name__, "fingerprint": fingerprint}
    prefix = study_prefix or (f"compare:{settings['space']}:{plan.objective}:"
                              f"{plan.direction}:budget{budget}")
    store = None if storage is None else open_storage(storage)
    row_of = {s: r for r, s in enumerate(plan.seeds)}
    worst = -math.inf if plan.direction == "maximize" else math.inf
    hist = {label: np.full((len(plan.seeds), budget), worst) for label in plan.labels}
    times = {label: np.full(len(plan.seeds), math.nan) for label in plan.labels}
    configs: dict[str, list[str | None]] = {label: [None] * len(plan.seeds)
                                            for label in plan.labels}
    bar = _Bar(plan, progress)

    def keep(r: RunResult) -> None:
        hist[r.label][row_of[r.seed]] = r.history
        times[r.label][row_of[r.seed]] = r.run_time_s
        configs[r.label][row_of[r.seed]] = r.best_config

    tasks = []
    n_stored = 0
    for label, fn in plan.items:
        for seed in plan.seeds:
            old = None
            if store is not None and isinstance(fn, str):
                old = read_run(store, run_study_name(prefix, label, seed), settings, budget,
                               plan.direction)
            if old is None:
                tasks.append((label, fn, seed))
                continue
            keep(old._replace(label=label, seed=seed))
            n_stored += 1
            finite = old.history[np.isfinite(old.history)]
            best = (float(finite.max() if plan.direction == "maximize" else finite.min())
                    if finite.shape[0] else worst)
            bar(label, seed, budget, best)
    # the longest runs first: fewer idle workers at the end
    tasks.sort(key=lambda t: -(plan.run_seconds(t[0]) if not math.isnan(
        plan.run_seconds(t[0])) else 0.0))
    n_workers = _workers(n_jobs, len(tasks))
    n_left = len(tasks)
    warm: threading.Thread | None = None
    try:
        for r in _execute(plan, tasks, n_jobs if n_workers > 1 or scheduler else 1, bar,
                          store is not None, scheduler):
            n_left -= 1
            if warm is None and 0 < n_left < n_workers and scheduler is None:
                # a worker has no run left and its core is idle until the last run ends:
                # import the plot's modules there, not after the runs (about 0.3 s)
                warm = threading.Thread(target=_import_plot_modules, daemon=True)
                warm.start()
            if store is not None and r.trials is not None:
                write_run(store, run_study_name(prefix, r.label, r.seed), r, plan.objective,
                          plan.direction, settings)
            bar(r.label, r.seed, budget, float(r.history.max() if plan.direction == "maximize"
                                               else r.history.min()))
            keep(r._replace(trials=None))
    finally:
        bar.close()
        if warm is not None:
            warm.join()
    if plan.values is None:
        _check_given_optimum(plan, hist, configs, store is not None)
    meta = dict(plan.meta)
    meta.update(n_jobs=n_jobs, n_workers=n_workers, n_stored=n_stored,
                wall_time_s=time.perf_counter() - t0,
                storage=None if storage is None else _storage_text(storage))
    meta["total_wall_time_s"] = meta["wall_time_s"]
    return ComparisonResult(hist, plan.seeds, budget, plan.objective, plan.optimum,
                            plan.values, times, meta, plan.direction, configs)


def _import_plot_modules() -> None:
    """Import what :func:`~autotile.search.plot_curves` imports, if it is installed."""
    try:
        import matplotlib.figure  # noqa: F401
    except ImportError:  # the report says so when it is written
        pass


def _check_given_optimum(plan: ComparisonPlan, hist: dict[str, Any],
                         configs: dict[str, list[str | None]], stored: bool) -> None:
    """Raise if a run beat the ``optimum=`` given without a table.

    Without a table nothing proves the given value optimal before the runs;
    a trial better than it shows it is not, and every score against it
    (trials to optimum, within p %) would be wrong.
    """
    s = -1.0 if plan.direction == "maximize" else 1.0
    best: tuple[float, str, int] | None = None  # (sign * value, searcher, seed)
    for label, h in hist.items():
        for row, seed in enumerate(plan.seeds):
            v = s * np.asarray(h[row], dtype=np.float64)
            v = v[np.isfinite(v)]
            if v.shape[0] and (best is None or float(v.min()) < best[0]):
                best = (float(v.min()), label, seed)
    if best is None or best[0] >= s * plan.optimum:
        return
    value, label, seed = s * best[0], best[1], best[2]
    rel = "<" if s > 0 else ">"
    config = configs[label][plan.seeds.index(seed)]
    raise ValueError(
        f"optimum={plan.optimum!r} is not the optimum of {plan.objective} "
        f"({plan.direction}d): searcher {label!r} (seed {seed}) found {plan.objective}="
        f"{value!r} {rel} {plan.optimum!r}" + (f" with {config}" if config else "")
        + "; every score against it (trials to optimum, within p%, P(t)) would be wrong. "
        "Pass the true optimum, or a bound no config can beat"
        + (" (the finished runs are kept in the storage: the same call loads them)"
           if stored else ""))


def _storage_text(storage: Any) -> str:
    if isinstance(storage, str):
        return storage
    url = getattr(storage, "url", None) or getattr(getattr(storage, "_backend", None), "url",
                                                   None)
    return str(url) if url else type(storage).__name__


def compare(
    space: Any,
    measurer: Any,
    searchers: Sequence[str | tuple[str, SearcherFn]] = DEFAULT_SEARCHERS,
    budget: int | None = None,
    seeds: int | Sequence[int] = 10,
    objective: str | None = None,
    optimum: float | None = None,
    n_jobs: int = 1,
    progress: bool = True,
    direction: str | None = None,
    storage: str | BaseStorage | None = None,
    meta: dict[str, Any] | None = None,
    scheduler: Any = None,
) -> ComparisonResult:
    """Run each searcher for ``budget`` trials and several seeds, and collect the curves.

    Every (searcher, seed) pair is one study, run in memory; pairs run in
    parallel with joblib. Against a replay measurer (a ground-truth table:
    autotile's GEMM space, a ``sweep`` table, or a Kernel Tuner cache) each
    trial is a lookup, so comparisons take seconds to minutes and each curve
    is scored against the true optimum and the calculated random-search
    expectation. With ``progress``, the space, objective, optimum, budget,
    seeds and expected time are printed to stderr before the first trial,
    then a bar counts trials and shows each searcher's best so far.

    Parameters
    ----------
    space : autotile.space.Space
        The space searched.
    measurer : Measurer
        Scores configs; a :class:`~autotile.measure.ReplayMeasurer` (anything
        with a ``truth`` table) also gives the optimum, the random
        expectation and the methodology score.
    searchers : str, (label, callable) or sequence of them, default=DEFAULT_SEARCHERS
        Names for :func:`autotile.search.create_study` (``"grid"``,
        ``"random"``, ``"model"``, ``"evolutionary"``, ``"tpe"``, ``"cmaes"``,
        ``"gp"``, ``"nsga2"``, ``"qmc"``), or ``(label, fn)`` pairs with
        ``fn(space, measurer, budget, seed) -> objective value per trial``
        (in the objective's units; NaN, or ``inf`` when minimising and
        ``-inf`` when maximising, for a failed trial; picklable when
        ``n_jobs != 1``). A single name or pair means a list of that one
        searcher.
    budget : int, optional
        Trials per run, an int ``>= 1``; default :func:`methodology_budget`
        of the table.
    seeds : int or sequence of int, default=10
        ``k >= 1`` means seeds ``0 .. k-1``; a sequence lists distinct
        seeds, each an int with ``0 <= seed < 2**32``.
    objective : str, optional
        Metric to compare on; default ``measurer.objective``.
    optimum : float, optional
        ``f_opt``, finite; default the table's optimum of ``objective``. With
        a table it must not be better than the table's best value (below it
        when minimising, above it when maximising). Without a table it is
        taken as given (the report labels it "optimum (given, no table)"),
        and a run that finds a better value raises after the runs.
    n_jobs : int, default=1
        joblib workers over (searcher, seed) pairs, a non-zero int (``-1``:
        all cores); capped at the number of pairs (no idle workers).
    progress : bool, default=True
        Print the plan and show a bar over trials (stderr).
    direction : {"minimize", "maximize"}, optional
        Whether smaller or larger values of ``objective`` are better; default
        :func:`objective_direction` of its name (throughputs such as
        ``GFLOP/s`` or ``GB/s`` are maximised, times and counts minimised).
        A maximised objective is searched as its negation (studies
        minimise), and the result reports it in its own units.
    storage : str, path-like or optuna.storages.BaseStorage, optional
        Keep every finished run of a named searcher as an Optuna study, named
        ``compare:<space>:<objective>:<direction>:budget<budget>:<searcher>:seed<seed>``,
        with the objective in its own direction, units and name (so
        optuna-dashboard shows it), every trial's config, status and metrics
        as user attributes, and the run's settings in the study's
        ``"autotile:compare"`` attribute. Runs already stored with the same
        settings are loaded instead of run again: an interrupted comparison
        resumes where it stopped, and its result is the one an uninterrupted
        comparison gives (runs are seeded). A URL, an SQLite file path or a
        storage object, as for :func:`~autotile.search.create_study`;
        default: in memory only.
    meta : dict, optional
        Labels for the report: ``space`` (default the space's name),
        ``unit`` of the objective, ``source`` and ``device`` of a recorded
        table (``live=True``: ``source`` says how trials are measured and is
        printed as is, not as "replayed from ``source``").
    scheduler : None, "local", str or distributed.Client, default=None
        None: runs in forked processes (``n_jobs``; joblib's where fork is
        not available). ``"local"``: a Dask ``LocalCluster`` of ``n_jobs``
        workers; an address (``"tcp://host:8786"``) or a client: that Dask
        cluster. Each (searcher, seed) run is one task; the results are the
        same (see :func:`~autotile.measure.parallel_map`); the bar then
        moves as runs end.

    Returns
    -------
    ComparisonResult
        Histories, best configs, statistics and report writers.

    Raises
    ------
    ValueError
        If a searcher name is unknown, the objective is not a metric of the
        measurer, the measurer's ``space`` is not the same space as
        ``space`` (see :func:`~autotile.search.create_study`), ``budget`` is
        not an int ``>= 1``, ``seeds`` is not an int ``>= 1`` or a non-empty
        sequence of distinct seeds in ``[0, 2**32)``, ``n_jobs`` is 0 or not
        an int, ``optimum`` is not finite or is better than the table's
        best value, ``direction`` is not ``"minimize"`` or ``"maximize"``,
        ``budget``/``optimum`` are missing and cannot be taken from a
        table, a run found a value better than an ``optimum`` given without
        a table (the message names it, the searcher and the seed),
        ``storage`` holds a run of the same name made with other settings,
        or the histories of ``budget`` trials x every run (about ``runs x
        budget x 24`` bytes) would take more than half of the machine's
        memory.

    References
    ----------
    Willemsen, van Nieuwpoort & van Werkhoven, "A methodology for comparing
    optimization algorithms for auto-tuning", FGCS 159 (2024).

    Examples
    --------
    >>> from autotile.measure import load_kernel_tuner  # doctest: +SKIP
    >>> rec = load_kernel_tuner("tests/data/pnpoly__RTX_3090.json.gz")
    >>> res = compare(rec.space, rec.measurer(), ["random", "tpe"], seeds=5)
    >>> print(res.table())
    """
    n_jobs = check_n_jobs(n_jobs)
    check_scheduler(scheduler)
    plan = plan_comparison(space, measurer, searchers, budget, seeds, objective, optimum,
                           direction, meta)
    if progress:
        n_workers = _workers(n_jobs, plan.n_runs)
        print("\n".join(plan.header(n_workers, stored=storage is not None,
                                    load=machine_load())), file=sys.stderr, flush=True)
    return run_comparison(plan, n_jobs, progress, storage, scheduler=scheduler)
