"""``compare``: run searchers for a budget x several seeds and collect their convergence.

Each (searcher, seed) pair is one in-memory study; the histories go into a
:class:`~autotile.search.ComparisonResult` (:mod:`autotile.search._comparison`),
scored with the methodology's maths (:mod:`autotile.search._methodology`),
which are re-exported here.
"""

from __future__ import annotations

import copy
import math
import numbers
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autotile.measure import Measurer, MeasureResult
from autotile.measure._parallel import check_scheduler, parallel_map
from autotile.search._comparison import DIRECTIONS, TOLERANCES_PCT, ComparisonResult
from autotile.search._methodology import (
    FloatArray,
    expected_best_random,
    expected_trials_to_hit,
    methodology_budget,
    methodology_score,
    random_trials_quantile,
    trials_to_target,
)
from autotile.search._study_args import (
    check_count,
    check_measurer_space,
    check_n_jobs,
    check_seeds,
    short_repr,
)

__all__ = [
    "ComparisonResult",
    "compare",
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
]

#: The searchers :func:`compare` runs by default.
DEFAULT_SEARCHERS = ("grid", "random", "model", "evolutionary", "tpe")
_KNOWN_SEARCHERS = ("grid", "random", "model", "evolutionary", "tpe", "cmaes", "gp", "nsga2",
                    "qmc")

#: A custom searcher: ``fn(space, measurer, budget, seed) -> objective value per trial``.
SearcherFn = Callable[[Any, Any, int, int], Sequence[float]]

#: Metric names that are throughputs (larger is better): ``GFLOP/s``, ``GB/s``,
#: ``TFLOPS``, ``bytes_per_s``, ``throughput``, ``bandwidth``...
_THROUGHPUT = re.compile(
    r"(/\s*(s|sec|second)$)|([_ ]per[_ ](s|sec|second)$)"
    r"|((^|[^a-z])[kmgtpe]?(flops|iops|bps)$)"
    r"|((^|[_ ])(throughput|bandwidth|speedup|occupancy|efficiency|hit_rate|hits)($|[_ ]))",
    re.IGNORECASE)


def objective_direction(metric: str) -> str:
    """The direction in which ``metric`` improves, from its name.

    Throughputs are maximised: names ending in a per-second unit (``GFLOP/s``,
    ``TFLOP/s``, ``GB/s``, ``items/sec``, ``bytes_per_s``), the units
    ``FLOPS``, ``IOPS`` or ``bps`` with an optional SI prefix (``GFLOPS``,
    ``Gbps``), and names with the word ``throughput``, ``bandwidth``,
    ``speedup``, ``occupancy``, ``efficiency``, ``hit_rate`` or ``hits``.
    Everything else (``time``, ``misses``, ``est_cycles``, ``energy``...) is
    minimised. A leading ``-`` (a negated metric) flips the direction. Pass
    ``direction=`` to :func:`compare` where the name misleads.

    Parameters
    ----------
    metric : str
        The objective's name.

    Returns
    -------
    {"minimize", "maximize"}

    Examples
    --------
    >>> objective_direction("GFLOP/s"), objective_direction("time")
    ('maximize', 'minimize')
    """
    name = str(metric).strip()
    if name.startswith("-"):
        return "minimize" if objective_direction(name[1:]) == "maximize" else "maximize"
    return "maximize" if _THROUGHPUT.search(name) else "minimize"


class _Negated(Measurer):
    """``measurer`` with the extra metric ``-<objective>``, minimised instead of ``objective``.

    Studies always minimise; a maximised objective is searched as its negation.
    """

    def __init__(self, measurer: Any) -> None:
        self.inner = measurer
        self.source = str(measurer.objective)
        self.objective = f"-{self.source}"
        self.metrics = (*tuple(getattr(measurer, "metrics", ()) or ()), self.objective)
        if hasattr(measurer, "space"):
            self.space = measurer.space

    def config_text(self, config: Any) -> str:
        return str(self.inner.config_text(config))

    def _measure(self, config: Any) -> MeasureResult:
        res: MeasureResult = self.inner.measure(config)
        if res.status != "ok" or self.source not in res.metrics:
            return res
        metrics = {**res.metrics, self.objective: -float(res.metrics[self.source])}
        return MeasureResult(res.config, res.status, metrics, res.wall_time_s, res.error)


def _known_searchers() -> tuple[str, ...]:
    import autotile.search as search

    for attr in ("SEARCHERS", "SEARCHER_NAMES"):
        names = getattr(search, attr, None)
        if names:
            return tuple(names)
    return _KNOWN_SEARCHERS


def _run_one(space: Any, measurer: Any, label: str, searcher: str | SearcherFn, seed: int,
             budget: int, direction: str = "minimize") -> tuple[str, int, FloatArray, float]:
    """Run one searcher for one seed; return its objective per trial.

    Failed trials (NaN) and missing ones are the worst infinity: ``inf`` when
    minimising, ``-inf`` when maximising.
    """
    import logging

    t0 = time.perf_counter()
    optuna_logger = logging.getLogger("optuna")
    level = optuna_logger.level
    optuna_logger.setLevel(logging.WARNING)
    values: Sequence[float] | FloatArray
    try:
        if callable(searcher):
            values = searcher(space, measurer, budget, seed)
        else:
            from autotile.search import create_study

            maximize = direction == "maximize"
            run = _Negated(measurer) if maximize else measurer
            study = create_study(space, run, searcher=searcher, seed=seed,
                                 objective=run.objective, storage=":memory:")
            study.optimize(budget, progress=False)
            values = -study.history() if maximize else study.history()
    finally:
        optuna_logger.setLevel(level)
    worst = -np.inf if direction == "maximize" else np.inf
    h = np.full(budget, worst)
    v = np.asarray(values, dtype=np.float64)[:budget]
    h[: v.shape[0]] = np.where(np.isnan(v), worst, v)
    return label, seed, h, time.perf_counter() - t0


def _run_task(space: Any, measurer: Any, budget: int, direction: str,
              task: tuple[str, str | SearcherFn, int]) -> tuple[str, int, FloatArray, float]:
    label, fn, seed = task
    return _run_one(space, measurer, label, fn, seed, budget, direction)


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
    scheduler: Any = None,
) -> ComparisonResult:
    """Run each searcher for ``budget`` trials and several seeds, and collect the curves.

    Every (searcher, seed) pair is one study with in-memory storage; pairs
    run in parallel with joblib. Against a replay measurer (a ground-truth
    table: autotile's GEMM space, or a Kernel Tuner cache) each trial is a
    lookup, so comparisons take seconds and each curve is scored against the
    true optimum and the calculated random-search expectation.

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
        when minimising, above it when maximising).
    n_jobs : int, default=1
        joblib workers over (searcher, seed) pairs, a non-zero int (``-1``:
        all cores).
    progress : bool, default=True
        Show a tqdm bar over runs.
    direction : {"minimize", "maximize"}, optional
        Whether smaller or larger values of ``objective`` are better; default
        :func:`objective_direction` of its name (throughputs such as
        ``GFLOP/s`` or ``GB/s`` are maximised, times and counts minimised).
        A maximised objective is searched as its negation (studies
        minimise), and the result reports it in its own units.
    scheduler : None, "local", str or distributed.Client, default=None
        None: runs in joblib processes (``n_jobs``). ``"local"``: a Dask
        ``LocalCluster`` of ``n_jobs`` workers; an address
        (``"tcp://host:8786"``) or a client: that Dask cluster. Each
        (searcher, seed) run is one task; the results are the same (see
        :func:`~autotile.measure.parallel_map`).

    Returns
    -------
    ComparisonResult
        Histories, statistics and report writers.

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
        or ``budget``/``optimum`` are missing and cannot be taken from a
        table.

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
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    check_scheduler(scheduler)
    # arguments: the same rules (and helpers) as tune()
    if budget is not None:
        budget = check_count("budget", budget)
    seed_list = check_seeds(seeds)
    n_jobs = check_n_jobs(n_jobs)
    if optimum is not None and (not isinstance(optimum, numbers.Real) or isinstance(
            optimum, bool) or not math.isfinite(optimum)):
        raise ValueError(f"optimum must be a finite number or None, got "
                         f"optimum={short_repr(optimum)}")
    check_measurer_space(space, measurer)
    # searchers
    known = _known_searchers()
    if isinstance(searchers, str) or (
            isinstance(searchers, tuple) and len(searchers) == 2
            and isinstance(searchers[0], str) and callable(searchers[1])):
        searchers = [searchers]  # one name, or one (label, fn) pair
    items: list[tuple[str, str | SearcherFn]] = []
    for s in searchers:
        if isinstance(s, str):
            if s not in known:
                raise ValueError(f"unknown searcher {s!r}; choose from {', '.join(known)}")
            items.append((s, s))
        elif isinstance(s, tuple) and len(s) == 2:
            label, fn = s
            if not callable(fn):
                raise ValueError(f"searcher {label!r} must be a name or (label, callable), "
                                 f"got {fn!r}")
            items.append((str(label), fn))
        else:
            raise ValueError(f"each searcher must be a name or a (label, callable) pair, got "
                             f"{short_repr(s)}")
    labels = [label for label, _ in items]
    if len(set(labels)) != len(labels):
        raise ValueError(f"searcher labels must be distinct, got {labels}")
    if not items:
        raise ValueError("compare needs at least one searcher")
    # objective and table
    metrics = tuple(getattr(measurer, "metrics", ()) or ())
    objective = objective or getattr(measurer, "objective", None)
    if not objective:
        raise ValueError("pass objective=: the measurer has no default objective")
    if metrics and objective not in metrics:
        raise ValueError(f"objective must be one of {list(metrics)}, got objective={objective!r}")
    if direction is None:
        direction = objective_direction(objective)
    elif direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS} (or None: from the "
                         f"objective's name), got direction={short_repr(direction)}")
    sign = -1.0 if direction == "maximize" else 1.0
    if objective != getattr(measurer, "objective", None):
        measurer = copy.copy(measurer)
        measurer.objective = objective
    truth = getattr(measurer, "truth", None)
    values: FloatArray | None = None
    n_configs = None
    if truth is not None:
        col = np.asarray(truth.column(objective), dtype=np.float64)
        ok = (np.asarray(truth.status) == 0) & np.isfinite(col)
        values = sign * np.sort(sign * col[ok])  # best first
        n_configs = int(col.shape[0])
    if optimum is None:
        if values is None or values.shape[0] == 0:
            raise ValueError("pass optimum=: the measurer has no ground-truth table")
        optimum = float(values[0])
    elif values is not None and values.shape[0] and sign * float(optimum) < sign * values[0]:
        side, rel = ("above", ">") if direction == "maximize" else ("below", "<")
        raise ValueError(
            f"optimum must not be {side} the table's best {objective} ({direction}d; no "
            f"config reaches it, so every score would be meaningless), got "
            f"optimum={optimum!r} {rel} {float(values[0])!r}")
    if budget is None:
        if values is None:
            raise ValueError("pass budget=: the measurer has no ground-truth table")
        budget = check_count("budget",
                             methodology_budget(sign * values, n_configs=n_configs))
    # run
    tasks = [(label, fn, seed) for label, fn in items for seed in seed_list]
    hist = {label: np.full((len(seed_list), budget), sign * np.inf) for label in labels}
    wall = {label: 0.0 for label in labels}
    row_of = {s: r for r, s in enumerate(seed_list)}
    bar = tqdm(total=len(tasks), unit="run", desc="compare", disable=not progress)
    results = parallel_map(_run_task, tasks, shared=(space, measurer, budget, direction),
                           n_jobs=n_jobs, scheduler=scheduler, unordered=True)
    for label, seed, h, dt in results:
        hist[label][row_of[seed]] = h
        wall[label] += dt
        bar.update(1)
        bar.set_postfix_str(label)
    bar.close()
    meta: dict[str, Any] = {
        "space": getattr(space, "name", None) or repr(space),
        "space_size": len(space),
        "n_configs": n_configs,
        "measurer": type(measurer).__name__,
        "n_jobs": n_jobs,
        "total_wall_time_s": time.perf_counter() - t_start,
    }
    return ComparisonResult(hist, seed_list, budget, objective, float(optimum), values, wall,
                            meta, direction)
