"""Convergence comparison of searchers: runs, best-so-far statistics and the methodology score."""

from __future__ import annotations

import copy
import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "ComparisonResult",
    "compare",
    "expected_best_random",
    "expected_trials_to_hit",
    "random_trials_quantile",
    "methodology_budget",
    "methodology_score",
    "trials_to_target",
    "DEFAULT_SEARCHERS",
    "TOLERANCES_PCT",
]

#: The searchers :func:`compare` runs by default.
DEFAULT_SEARCHERS = ("grid", "random", "model", "evolutionary", "tpe")
#: Targets of the trials-to-target columns: the optimum, and within 1 %, 5 % and 10 % of it.
TOLERANCES_PCT = (0.0, 1.0, 5.0, 10.0)
_KNOWN_SEARCHERS = ("grid", "random", "model", "evolutionary", "tpe", "cmaes", "gp", "nsga2",
                    "qmc")

#: A custom searcher: ``fn(space, measurer, budget, seed) -> objective value per trial``.
SearcherFn = Callable[[Any, Any, int, int], Sequence[float]]

FloatArray = npt.NDArray[np.float64]
_NEGLIGIBLE = 1e-18  # dropped survival tail: absolute error < 1e-18 * (max - min)


# -- the math ----------------------------------------------------------------------------
def _finite(values: npt.ArrayLike) -> FloatArray:
    v = np.asarray(values, dtype=np.float64).ravel()
    return v[np.isfinite(v)]


def expected_best_random(values: npt.ArrayLike, budget: int | None = None) -> FloatArray:
    """Expected best-so-far of uniform random sampling without replacement.

    For the sorted values ``v_(1) <= ... <= v_(N)`` of the valid configs,
    the best of ``t`` distinct uniform draws is ``v_(i)`` with probability
    ``C(N-i, t-1) / C(N, t)``. The sum is evaluated in its survival form,
    ``E[min_t] = v_(1) + sum_{i>=2} (v_(i) - v_(i-1)) * S_i(t)`` with
    ``S_i(t) = P(min_t >= v_(i)) = C(N-i+1, t) / C(N, t)``, over the distinct
    values only. ``S_i`` is updated by the ratio
    ``S_i(t+1) / S_i(t) = (N-i+1-t) / (N-t)``: products of factors in
    [0, 1], so nothing overflows and ties cost nothing.

    Parameters
    ----------
    values : array-like of shape (n_configs,)
        Objective values (minimised). NaN and infinite entries (failed
        configs) are dropped: like the methodology's calculated baseline
        (``include_nan=False``), random search is taken to draw among the
        valid configs only.
    budget : int, optional
        Number of draws ``t = 1 .. budget``; default ``N`` (all valid configs).
        Draws past ``N`` repeat the optimum.

    Returns
    -------
    ndarray of shape (budget,), float64
        Element ``t - 1`` is ``E[min of t draws]``; element 0 is the mean and
        element ``N - 1`` the minimum.

    Raises
    ------
    ValueError
        If there is no finite value, or ``budget < 1``.

    References
    ----------
    Willemsen, van Nieuwpoort & van Werkhoven, "A methodology for comparing
    optimization algorithms for auto-tuning", FGCS 159 (2024), Sec. 4.2
    (the calculated random-search baseline); repository
    AutoTuningAssociation/autotuning_methodology,
    ``baseline.RandomSearchCalculatedBaseline``, which uses the value at the
    expected rank ``round(t (N+1) / (t+1))`` instead of the expected value
    computed here.
    """
    v = np.sort(_finite(values))
    n = v.shape[0]
    if n == 0:
        raise ValueError("expected_best_random needs at least one finite value, got none")
    budget = n if budget is None else int(budget)
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got budget={budget}")
    uniq, first = np.unique(v, return_index=True)
    if uniq.shape[0] == 1:
        return np.full(budget, uniq[0])
    steps = np.diff(uniq)                        # u_j - u_{j-1}, j = 2..K
    above = (n - first[1:]).astype(np.float64)   # a_j = #values >= u_j
    surv = np.ones_like(above)                   # S_j(0) = 1
    out = np.empty(budget)
    for t in range(min(budget, n)):
        surv *= np.maximum(above - t, 0.0) / (n - t)
        # S_j falls with j (fewer values lie above larger ones) and with t: drop the tail
        # once it is negligible, which also keeps subnormal floats (slow) out of the loop.
        k = int(np.searchsorted(-surv, -_NEGLIGIBLE))
        if k < surv.shape[0]:
            surv, steps, above = surv[:k], steps[:k], above[:k]
        out[t] = uniq[0] + float(np.vdot(steps, surv))
    out[n:] = uniq[0]
    return out


def methodology_score(best: npt.ArrayLike, random_curve: npt.ArrayLike,
                      optimum: float) -> FloatArray:
    """Kernel Tuner's methodology score ``P(t)`` of best-so-far curves.

    ``P(t) = (f_random(t) - f(t)) / (f_random(t) - f_opt)``, the issue's
    ``(f(t) - f_random(t)) / (f_opt - f_random(t))``: 0 is as good as random
    search in expectation, 1 is optimal, negative is worse than random.

    Parameters
    ----------
    best : array-like of shape (..., budget)
        Best-so-far values ``f(t)`` (minimised); a row per run is fine.
    random_curve : array-like of shape (budget,)
        ``f_random(t)``, e.g. :func:`expected_best_random`.
    optimum : float
        ``f_opt``.

    Returns
    -------
    ndarray of the shape of ``best``
        NaN where ``f_random(t) == f_opt`` (random search is optimal there and
        the score is undefined).

    References
    ----------
    Willemsen, van Nieuwpoort & van Werkhoven, FGCS 159 (2024), Eq. 3;
    ``Baseline.get_standardised_curves`` in autotuning_methodology computes
    ``(curve - random) / (optimum - random)``, the same number.
    """
    f = np.asarray(best, dtype=np.float64)
    r = np.asarray(random_curve, dtype=np.float64)
    den = r - float(optimum)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (r - f) / den
    return np.where(den > 0, p, np.nan)


def methodology_budget(values: npt.ArrayLike, cutoff: float = 0.95, margin: float = 0.1,
                       n_configs: int | None = None) -> int:
    """Budget (trials) that the comparison methodology sets for a space.

    The target is ``f_opt + (median - f_opt) * (1 - cutoff)`` over the valid
    values. With the values sorted worst first, ``i`` is the position of the
    first value at or below the target (the number of worse values), and
    random search is expected to reach it after ``ceil(i / (N + 1 - i))``
    draws (inverting the expected rank ``t (N+1) / (t+1)`` of the best of
    ``t`` draws). The budget adds ``margin`` on top, at most the space size.

    Parameters
    ----------
    values : array-like of shape (n_configs,)
        Objective values (minimised); NaN/inf entries are failed configs.
    cutoff : float, default=0.95
        The methodology's ``cutoff_percentile`` (its default is 0.95).
    margin : float, default=0.1
        The methodology's ``cutoff_margin`` (+10 % by default).
    n_configs : int, optional
        Cap; default ``len(values)`` (failed configs included).

    Returns
    -------
    int
        ``min(ceil(fevals * (1 + margin)), n_configs)``, at least 1.

    Raises
    ------
    ValueError
        If ``cutoff`` is outside (0, 1] or there is no finite value.

    References
    ----------
    autotuning_methodology: ``SearchspaceStatistics.cutoff_point`` and
    ``objective_performance_at_cutoff_point``, and
    ``experiments.calculate_budget`` for the margin.
    """
    if not 0.0 < cutoff <= 1.0:
        raise ValueError(f"cutoff must satisfy 0 < cutoff <= 1, got cutoff={cutoff}")
    raw = np.asarray(values, dtype=np.float64).ravel()
    v = np.sort(_finite(raw))
    if v.shape[0] == 0:
        raise ValueError("methodology_budget needs at least one finite value, got none")
    n = v.shape[0]
    opt, median = float(v[0]), float(np.median(v))
    target = opt + (median - opt) * (1.0 - cutoff)
    i = int(np.count_nonzero(v[::-1] > target))  # first index (worst first) with v <= target
    fevals = math.ceil(i / (n + 1 - i))
    cap = int(raw.shape[0]) if n_configs is None else int(n_configs)
    return int(max(1, min(math.ceil(fevals * (1.0 + margin)), cap)))


def trials_to_target(best: npt.ArrayLike, target: float) -> FloatArray:
    """Number of trials each run needed for its best-so-far to reach ``target``.

    Parameters
    ----------
    best : array-like of shape (n_runs, budget) or (budget,)
        Best-so-far (or raw) objective values per trial, minimised.
    target : float
        Reached at the first trial ``t`` (1-based) with value ``<= target``.

    Returns
    -------
    ndarray of shape (n_runs,) (or a 0-d array), float64
        ``t``, or ``inf`` for a run that never reached it within its budget.
    """
    b = np.asarray(best, dtype=np.float64)
    hit = b <= target
    t = np.argmax(hit, axis=-1).astype(np.float64) + 1.0
    return np.where(hit.any(axis=-1), t, np.inf)


def expected_trials_to_hit(n_configs: int, n_hits: int) -> float:
    """Expected draws of random sampling without replacement until the first hit.

    Parameters
    ----------
    n_configs : int
        ``N``, configs in the space.
    n_hits : int
        ``k >= 1``, configs that count as a hit (e.g. the optimal ones).

    Returns
    -------
    float
        ``(N + 1) / (k + 1)``.

    Raises
    ------
    ValueError
        If ``not 1 <= k <= N``.
    """
    if not 1 <= n_hits <= n_configs:
        raise ValueError(f"need 1 <= n_hits <= n_configs, got n_hits={n_hits}, "
                         f"n_configs={n_configs}")
    return (n_configs + 1) / (n_hits + 1)


def random_trials_quantile(n_configs: int, n_hits: int, q: float = 0.5) -> int:
    """Quantile of the draws random sampling without replacement needs for a first hit.

    ``P(T > t) = C(N-k, t) / C(N, t) = prod_{s<t} (N-k-s) / (N-s)``; the
    ``q``-quantile is the smallest ``t`` with ``P(T <= t) >= q``. The median
    (``q = 0.5``) is what the median trials-to-target of a searcher compares
    with; it is about ``ln 2`` times the mean :func:`expected_trials_to_hit`.

    Parameters
    ----------
    n_configs : int
        ``N``, configs in the space.
    n_hits : int
        ``k >= 1``, configs that count as a hit.
    q : float, default=0.5
        Probability level in (0, 1].

    Returns
    -------
    int
        ``t`` in ``1 .. N - k + 1``.

    Raises
    ------
    ValueError
        If ``not 1 <= k <= N`` or ``q`` is outside (0, 1].
    """
    if not 1 <= n_hits <= n_configs:
        raise ValueError(f"need 1 <= n_hits <= n_configs, got n_hits={n_hits}, "
                         f"n_configs={n_configs}")
    if not 0.0 < q <= 1.0:
        raise ValueError(f"q must satisfy 0 < q <= 1, got q={q}")
    s = np.arange(n_configs - n_hits + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_surv = np.cumsum(np.log((n_configs - n_hits - s) / (n_configs - s)))
    # log_surv[t-1] = log P(T > t); the first t with P(T > t) <= 1 - q (the last entry,
    # t = N - k + 1, is log 0 = -inf, so there always is one)
    level = math.log1p(-q) + 1e-12 if q < 1.0 else -math.inf
    return int(np.argmax(log_surv <= level)) + 1


def _target(optimum: float, pct: float) -> float:
    """``opt * (1 + pct/100)`` for a positive optimum (``opt + |opt| pct/100`` in general)."""
    return optimum + abs(optimum) * pct / 100.0


# -- the result ---------------------------------------------------------------------------
@dataclass
class ComparisonResult:
    """Best-so-far histories of several searchers over seeds, and their statistics.

    Attributes
    ----------
    histories : dict of str to ndarray of shape (n_seeds, budget)
        Objective value of every trial, in order (``inf``: failed,
        infeasible, or not run).
    seeds : tuple of int
        The seeds, one row each.
    budget : int
        Trials per run.
    objective : str
        The minimised metric.
    optimum : float
        ``f_opt``, the best value of the space.
    values : ndarray of shape (n_valid,), optional
        The objective of every valid config (the replay table), sorted; needed
        for the random expectation and the score.
    wall_time_s : dict of str to float
        Seconds spent per searcher, summed over seeds.
    meta : dict
        Space, measurer and run settings, for the report.
    """

    histories: dict[str, FloatArray]
    seeds: tuple[int, ...]
    budget: int
    objective: str
    optimum: float
    values: FloatArray | None = None
    wall_time_s: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    _random: FloatArray | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def searchers(self) -> tuple[str, ...]:
        """Searcher labels, in run order."""
        return tuple(self.histories)

    @property
    def worst(self) -> float:
        """The worst valid value, which stands in for "nothing valid found yet"."""
        if self.values is not None and self.values.shape[0]:
            return float(self.values[-1])
        finite = [float(h[np.isfinite(h)].max()) for h in self.histories.values()
                  if np.isfinite(h).any()]
        return max(finite) if finite else math.inf

    def random_curve(self) -> FloatArray | None:
        """``f_random(t)``, t = 1..budget (:func:`expected_best_random`), or ``None``."""
        if self.values is None or self.values.shape[0] == 0:
            return None
        if self._random is None:
            self._random = expected_best_random(self.values, self.budget)
        return self._random

    def best_so_far(self, name: str) -> FloatArray:
        """Best-so-far per seed, shape (n_seeds, budget); ``inf`` until a valid trial."""
        return np.minimum.accumulate(self.histories[name], axis=1)

    def _filled(self, name: str) -> FloatArray:
        b = self.best_so_far(name)
        return np.where(np.isfinite(b), b, self.worst)

    def curve(self, name: str) -> dict[str, FloatArray]:
        """Median and inter-quartile band of the best-so-far over seeds.

        Returns
        -------
        dict
            ``"median"``, ``"q25"``, ``"q75"``, each of shape (budget,). Before a
            run's first valid trial its value counts as the worst valid value.
        """
        q25, med, q75 = np.percentile(self._filled(name), [25, 50, 75], axis=0)
        return {"median": med, "q25": q25, "q75": q75}

    def trials_to(self, name: str, pct: float = 0.0) -> FloatArray:
        """Trials each seed needed to come within ``pct`` % of the optimum (``inf``: never).

        Within ``p`` % means ``value <= opt * (1 + p/100)`` (for a positive
        optimum; ``opt + |opt| p/100`` in general).
        """
        return trials_to_target(self.best_so_far(name), _target(self.optimum, pct))

    def score_curve(self, name: str) -> FloatArray | None:
        """``P(t)``, mean over seeds of each run's :func:`methodology_score`, shape (budget,).

        The mean over seeds of the per-run scores equals the score of the
        mean best-so-far curve (P is affine in ``f``), which is how the
        methodology aggregates repeated runs. ``None`` without ``values``.
        """
        rc = self.random_curve()
        if rc is None:
            return None
        p = methodology_score(self._filled(name), rc, self.optimum)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
            return np.asarray(np.nanmean(p, axis=0))

    def score(self, name: str, t_max: int | None = None) -> float:
        """Mean of :meth:`score_curve` over t = 1..``t_max`` (default the budget).

        NaN entries (undefined P) are skipped; NaN without a table.
        """
        p = self.score_curve(name)
        if p is not None and t_max is not None:
            p = p[: max(1, int(t_max))]
        if p is None or not np.isfinite(p).any():
            return math.nan
        return float(np.nanmean(p))

    @property
    def methodology_budget(self) -> int | None:
        """The methodology's budget for this table (:func:`methodology_budget`), or ``None``.

        P(t) is meaningful up to about this many trials: past it, random search
        is expected to be within 5 % of the way from the optimum to the median,
        so ``f_random(t) - f_opt`` is small and one run that has not found the
        optimum moves the mean of ``P`` by a lot.
        """
        if self.values is None or self.values.shape[0] == 0:
            return None
        n = self.meta.get("n_configs") or int(self.values.shape[0])
        return methodology_budget(self.values, n_configs=int(n))

    def n_within(self, pct: float) -> int:
        """Valid configs within ``pct`` % of the optimum (needs ``values``)."""
        if self.values is None:
            return 0
        return int(np.count_nonzero(self.values <= _target(self.optimum, pct)))

    def expected_random_trials(self, pct: float = 0.0, median: bool = False) -> float:
        """Random search's trials to come within ``pct`` % (NaN if unknown).

        The mean ``(N + 1) / (k + 1)`` (:func:`expected_trials_to_hit`) for the
        ``k`` valid configs within ``pct`` % among ``N``, or with ``median``
        the median (:func:`random_trials_quantile`).
        """
        k = self.n_within(pct)
        if self.values is None or k == 0:
            return math.nan
        n = int(self.values.shape[0])
        return float(random_trials_quantile(n, k)) if median else expected_trials_to_hit(n, k)

    def summary(self) -> list[dict[str, Any]]:
        """One row per searcher, plus the calculated random expectation.

        Returns
        -------
        list of dict
            ``searcher``, ``n_seeds``, ``budget``, ``final_best_median``,
            ``trials_to_opt`` / ``trials_to_1pct`` / ``trials_to_5pct`` /
            ``trials_to_10pct`` (median over seeds, ``inf`` when more than half
            of the seeds never got there: misses count as ``+inf``),
            ``mean_trials_to_opt`` / ... (mean over seeds, ``inf`` if any seed
            missed), ``missed_opt`` / ``missed_1pct`` / ... (seeds that never
            got there), ``mean_score`` (mean ``P(t)`` over t = 1..budget),
            ``mean_score_mbudget`` (over t = 1..:attr:`methodology_budget`,
            the range the methodology scores) and ``wall_time_s``. The
            last row, ``"random (expected)"``, is calculated for uniform random
            sampling without replacement: the median trials
            (:func:`random_trials_quantile`), the mean ``(N+1)/(k+1)`` and
            score 0.
        """
        rows: list[dict[str, Any]] = []
        for name in self.searchers:
            row: dict[str, Any] = {"searcher": name, "n_seeds": len(self.seeds),
                                   "budget": self.budget}
            row["final_best_median"] = float(np.median(self.best_so_far(name)[:, -1]))
            for pct in TOLERANCES_PCT:
                t = self.trials_to(name, pct)
                key = _pct_key(pct)
                row[f"trials_to_{key}"] = float(np.median(t))
                row[f"mean_trials_to_{key}"] = float(np.mean(t))
                row[f"missed_{key}"] = int(np.count_nonzero(~np.isfinite(t)))
            row["mean_score"] = self.score(name)
            mb = self.methodology_budget
            row["mean_score_mbudget"] = math.nan if mb is None else self.score(name, mb)
            row["wall_time_s"] = float(self.wall_time_s.get(name, math.nan))
            rows.append(row)
        rc = self.random_curve()
        if rc is not None:
            row = {"searcher": "random (expected)", "n_seeds": None, "budget": self.budget,
                   "final_best_median": float(rc[-1])}
            for pct in TOLERANCES_PCT:
                key = _pct_key(pct)
                row[f"trials_to_{key}"] = self.expected_random_trials(pct, median=True)
                row[f"mean_trials_to_{key}"] = self.expected_random_trials(pct)
                row[f"missed_{key}"] = None
            row["mean_score"] = 0.0
            row["mean_score_mbudget"] = 0.0
            row["wall_time_s"] = None
            rows.append(row)
        return rows

    # -- output (see autotile.search._report) -------------------------------------------
    def table(self) -> str:
        """The summary as a plain-text table for the terminal."""
        from autotile.search._report import format_table

        return format_table(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict: settings, summary rows and the curves (``inf`` as ``None``)."""
        from autotile.search._report import result_to_dict

        return result_to_dict(self)

    def write(self, outdir: str | os.PathLike[str]) -> dict[str, str]:
        """Write the table, CSV, JSON, PNG plot and self-contained HTML page.

        Parameters
        ----------
        outdir : path-like
            Created if missing.

        Returns
        -------
        dict of str to str
            ``"txt"``, ``"csv"``, ``"curves_csv"``, ``"json"``, ``"png"`` and
            ``"html"`` paths.
        """
        from autotile.search._report import write_report

        return write_report(self, outdir)


def _pct_key(pct: float) -> str:
    return "opt" if pct == 0 else f"{pct:g}pct"


# -- running ------------------------------------------------------------------------------
def _known_searchers() -> tuple[str, ...]:
    import autotile.search as search

    for attr in ("SEARCHERS", "SEARCHER_NAMES"):
        names = getattr(search, attr, None)
        if names:
            return tuple(names)
    return _KNOWN_SEARCHERS


def _run_one(space: Any, measurer: Any, label: str, searcher: str | SearcherFn, seed: int,
             budget: int) -> tuple[str, int, FloatArray, float]:
    """Run one searcher for one seed; return its objective per trial, padded with ``inf``."""
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

            study = create_study(space, measurer, searcher=searcher, seed=seed,
                                 objective=measurer.objective, storage=":memory:")
            study.optimize(budget, progress=False)
            values = study.history()
    finally:
        optuna_logger.setLevel(level)
    h = np.full(budget, np.inf)
    v = np.asarray(values, dtype=np.float64)[:budget]
    h[: v.shape[0]] = np.where(np.isnan(v), np.inf, v)
    return label, seed, h, time.perf_counter() - t0


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
    searchers : sequence of str or (label, callable), default=DEFAULT_SEARCHERS
        Names for :func:`autotile.search.create_study` (``"grid"``,
        ``"random"``, ``"model"``, ``"evolutionary"``, ``"tpe"``, ``"cmaes"``,
        ``"gp"``, ``"nsga2"``, ``"qmc"``), or ``(label, fn)`` pairs with
        ``fn(space, measurer, budget, seed) -> objective value per trial``
        (``inf`` for a failed trial; picklable when ``n_jobs != 1``).
    budget : int, optional
        Trials per run; default :func:`methodology_budget` of the table.
    seeds : int or sequence of int, default=10
        ``k`` means seeds ``0 .. k-1``.
    objective : str, optional
        Metric to minimise; default ``measurer.objective``.
    optimum : float, optional
        ``f_opt``; default the table's optimum of ``objective``.
    n_jobs : int, default=1
        joblib workers over (searcher, seed) pairs (``-1``: all cores).
    progress : bool, default=True
        Show a tqdm bar over runs.

    Returns
    -------
    ComparisonResult
        Histories, statistics and report writers.

    Raises
    ------
    ValueError
        If a searcher name is unknown, the objective is not a metric of the
        measurer, no seeds are given, or ``budget``/``optimum`` are missing and
        cannot be taken from a table.

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
    from joblib import Parallel, delayed
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    # searchers
    known = _known_searchers()
    items: list[tuple[str, str | SearcherFn]] = []
    for s in searchers:
        if isinstance(s, str):
            if s not in known:
                raise ValueError(f"unknown searcher {s!r}; choose from {', '.join(known)}")
            items.append((s, s))
        else:
            label, fn = s
            if not callable(fn):
                raise ValueError(f"searcher {label!r} must be a name or (label, callable), "
                                 f"got {fn!r}")
            items.append((str(label), fn))
    labels = [label for label, _ in items]
    if len(set(labels)) != len(labels):
        raise ValueError(f"searcher labels must be distinct, got {labels}")
    if not items:
        raise ValueError("compare needs at least one searcher")
    seed_list = tuple(range(int(seeds))) if isinstance(seeds, (int, np.integer)) else tuple(
        int(s) for s in seeds)
    if not seed_list:
        raise ValueError(f"compare needs at least one seed, got seeds={seeds!r}")
    # objective and table
    metrics = tuple(getattr(measurer, "metrics", ()) or ())
    objective = objective or getattr(measurer, "objective", None)
    if not objective:
        raise ValueError("pass objective=: the measurer has no default objective")
    if metrics and objective not in metrics:
        raise ValueError(f"objective must be one of {list(metrics)}, got objective={objective!r}")
    if objective != getattr(measurer, "objective", None):
        measurer = copy.copy(measurer)
        measurer.objective = objective
    truth = getattr(measurer, "truth", None)
    values: FloatArray | None = None
    n_configs = None
    if truth is not None:
        col = np.asarray(truth.column(objective), dtype=np.float64)
        ok = (np.asarray(truth.status) == 0) & np.isfinite(col)
        values = np.sort(col[ok])
        n_configs = int(col.shape[0])
    if optimum is None:
        if values is None or values.shape[0] == 0:
            raise ValueError("pass optimum=: the measurer has no ground-truth table")
        optimum = float(values[0])
    if budget is None:
        if values is None:
            raise ValueError("pass budget=: the measurer has no ground-truth table")
        budget = methodology_budget(values, n_configs=n_configs)
    budget = int(budget)
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got budget={budget}")
    # run
    tasks = [(label, fn, seed) for label, fn in items for seed in seed_list]
    hist = {label: np.full((len(seed_list), budget), np.inf) for label in labels}
    wall = {label: 0.0 for label in labels}
    row_of = {s: r for r, s in enumerate(seed_list)}
    bar = tqdm(total=len(tasks), unit="run", desc="compare", disable=not progress)
    jobs = (delayed(_run_one)(space, measurer, label, fn, seed, budget)
            for label, fn, seed in tasks)
    if n_jobs == 1:
        results: Any = (_run_one(space, measurer, label, fn, seed, budget)
                        for label, fn, seed in tasks)
    else:
        results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs)
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
                            meta)
