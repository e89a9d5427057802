"""``ComparisonResult``: best-so-far histories of searchers over seeds, and their statistics.

Statistics per searcher: median and inter-quartile best-so-far curves,
trials to come within 0, 1, 5 and 10 % of the optimum (:data:`TOLERANCES_PCT`),
the methodology score ``P(t)`` against the calculated random-search
expectation, and the :meth:`ComparisonResult.summary` rows the reports in
:mod:`autotile.search._report` are built from.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autotile.search._methodology import (
    FloatArray,
    expected_best_random,
    expected_trials_to_hit,
    methodology_budget,
    methodology_score,
    random_trials_quantile,
    trials_to_target,
)

__all__ = ["ComparisonResult", "TOLERANCES_PCT", "DIRECTIONS"]

#: Targets of the trials-to-target columns: the optimum, and within 1 %, 5 % and 10 % of it.
TOLERANCES_PCT = (0.0, 1.0, 5.0, 10.0)
#: The optimisation directions of a comparison.
DIRECTIONS = ("minimize", "maximize")


def _target(optimum: float, pct: float, sign: float = 1.0) -> float:
    """The value ``pct`` % worse than the optimum.

    ``opt * (1 + pct/100)`` when minimising (``sign = 1``) and
    ``opt * (1 - pct/100)`` when maximising (``sign = -1``), for a positive
    optimum; ``opt + sign |opt| pct/100`` in general.
    """
    return optimum + sign * abs(optimum) * pct / 100.0


@dataclass
class ComparisonResult:
    """Best-so-far histories of several searchers over seeds, and their statistics.

    Attributes
    ----------
    histories : dict of str to ndarray of shape (n_seeds, budget)
        Objective value of every trial, in order (the worst infinity,
        ``inf`` when minimising and ``-inf`` when maximising: failed,
        infeasible, or not run).
    seeds : tuple of int
        The seeds, one row each.
    budget : int
        Trials per run.
    objective : str
        The metric compared, minimised or maximised (``direction``).
    optimum : float
        ``f_opt``, the best value of the space (the smallest when
        minimising, the largest when maximising).
    values : ndarray of shape (n_valid,), optional
        The objective of every valid config (the replay table), sorted best
        first (ascending when minimising, descending when maximising); needed
        for the random expectation and the score.
    run_time_s : dict of str to ndarray of shape (n_seeds,)
        Seconds each run took in its worker (runs of one comparison run in
        parallel, so these add up to more than the comparison's wall time,
        ``meta["wall_time_s"]``).
    meta : dict
        Space, measurer and run settings, for the report: ``space`` (a
        label), ``space_size``, ``unit`` (of the objective, e.g. ``"ms"``),
        ``source`` and ``device`` (of a recorded table), ``wall_time_s``
        (the whole comparison, measured), ``n_workers``, ``n_stored`` (runs
        loaded from the storage instead of run) and ``storage``.
    direction : {"minimize", "maximize"}, default="minimize"
        Whether smaller (times, misses) or larger (throughputs such as
        ``GFLOP/s``) objective values are better. Every statistic is computed
        on ``sign * value`` (``sign = -1`` when maximising), which turns a
        maximisation into the minimisation the methodology is written for,
        and reported back in the objective's own units.
    best_configs : dict of str to list of (str or None)
        Per searcher and seed, the config of the run's best trial (its stable
        text); ``None`` where no trial was valid or the searcher is a custom
        function.
    """

    histories: dict[str, FloatArray]
    seeds: tuple[int, ...]
    budget: int
    objective: str
    optimum: float
    values: FloatArray | None = None
    run_time_s: dict[str, FloatArray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    direction: str = "minimize"
    best_configs: dict[str, list[str | None]] = field(default_factory=dict)
    _random: FloatArray | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got "
                             f"direction={self.direction!r}")

    @property
    def sign(self) -> float:
        """``1.0`` when minimising, ``-1.0`` when maximising: ``sign * value`` is minimised."""
        return -1.0 if self.direction == "maximize" else 1.0

    @property
    def searchers(self) -> tuple[str, ...]:
        """Searcher labels, in run order."""
        return tuple(self.histories)

    @property
    def worst(self) -> float:
        """The worst valid value, which stands in for "nothing valid found yet"."""
        if self.values is not None and self.values.shape[0]:
            return self.sign * float(np.max(self.sign * self.values))
        s = self.sign  # the worst is the largest of sign * value
        finite = [float((s * h[np.isfinite(h)]).max()) for h in self.histories.values()
                  if np.isfinite(h).any()]
        return s * max(finite) if finite else s * math.inf

    def random_curve(self) -> FloatArray | None:
        """``f_random(t)``, t = 1..budget (:func:`expected_best_random`), or ``None``."""
        if self.values is None or self.values.shape[0] == 0:
            return None
        if self._random is None:
            s = self.sign
            self._random = s * expected_best_random(s * self.values, self.budget)
        return self._random

    def best_so_far(self, name: str) -> FloatArray:
        """Best-so-far per seed, shape (n_seeds, budget); ``inf`` (``-inf``) until a valid trial."""
        acc = np.maximum if self.direction == "maximize" else np.minimum
        return np.asarray(acc.accumulate(self.histories[name], axis=1))

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

        Within ``p`` % means ``value <= opt * (1 + p/100)`` when minimising
        and ``value >= opt * (1 - p/100)`` when maximising (for a positive
        optimum; ``opt + |opt| p/100`` and ``opt - |opt| p/100`` in general).
        """
        s = self.sign
        return trials_to_target(s * self.best_so_far(name), s * _target(self.optimum, pct, s))

    def score_curve(self, name: str) -> FloatArray | None:
        """``P(t)``, mean over seeds of each run's :func:`methodology_score`, shape (budget,).

        The mean over seeds of the per-run scores equals the score of the
        mean best-so-far curve (P is affine in ``f``), which is how the
        methodology aggregates repeated runs. ``None`` without ``values``.
        When maximising, the score is that of the negated values,
        ``(f(t) - f_random(t)) / (f_opt - f_random(t))`` in the objective's
        units: 1 is still optimal and 0 as good as random search.
        """
        p = self.score_runs(name)
        if p is None:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
            return np.asarray(np.nanmean(p, axis=0))

    def score_runs(self, name: str) -> FloatArray | None:
        """``P(t)`` of each seed's run, shape (n_seeds, budget); ``None`` without ``values``.

        NaN where P is undefined (random search is optimal there).
        """
        rc = self.random_curve()
        if rc is None:
            return None
        s = self.sign
        return methodology_score(s * self._filled(name), s * rc, s * self.optimum)

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
        return methodology_budget(self.sign * self.values, n_configs=int(n))

    def n_within(self, pct: float) -> int:
        """Valid configs within ``pct`` % of the optimum (needs ``values``)."""
        if self.values is None:
            return 0
        s = self.sign
        return int(np.count_nonzero(s * self.values <= s * _target(self.optimum, pct, s)))

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

    def best(self, name: str) -> tuple[float, str | None, int]:
        """The best value a searcher found over its seeds, its config and how many seeds found it.

        Returns
        -------
        value : float
            The best objective value over all runs (the worst infinity if none
            was valid).
        config : str or None
            The config of that value (of the first seed that found it); None
            if unknown.
        n_seeds : int
            Runs whose best equals ``value``.
        """
        finals = self.best_so_far(name)[:, -1]
        s = self.sign
        i = int(np.argmin(s * finals))
        value = float(finals[i])
        configs = self.best_configs.get(name) or [None] * len(self.seeds)
        n = int(np.count_nonzero(finals == value)) if math.isfinite(value) else 0
        return value, configs[i] if i < len(configs) else None, n

    def threshold_groups(self) -> list[tuple[float, ...]]:
        """The tolerances of :data:`TOLERANCES_PCT` grouped where their targets are equal.

        Two tolerances whose targets hold the same configs (``n_within`` is
        equal, e.g. within 0 % and 1 % of 1,536 misses) give every run the
        same trial counts by construction; the reports show them as one
        column. Without a table every tolerance is its own group.

        Returns
        -------
        list of tuple of float
            Consecutive tolerances, e.g. ``[(0.0, 1.0), (5.0, 10.0)]``.
        """
        groups: list[list[float]] = []
        last = None
        for pct in TOLERANCES_PCT:
            n = self.n_within(pct) if self.values is not None else None
            if groups and n is not None and n == last:
                groups[-1].append(pct)
            else:
                groups.append([pct])
            last = n
        return [tuple(g) for g in groups]

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
            the range the methodology scores), ``best_value``,
            ``best_config`` and ``n_seeds_best`` (:meth:`best`) and
            ``run_time_s`` (median seconds per run). The last row,
            ``"random (expected)"``, is calculated for uniform random
            sampling without replacement: the median trials
            (:func:`random_trials_quantile`), the mean ``(N+1)/(k+1)`` and
            score 0.
        """
        rows: list[dict[str, Any]] = []
        mb = self.methodology_budget
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
            row["mean_score_mbudget"] = math.nan if mb is None else self.score(name, mb)
            value, config, n_best = self.best(name)
            row["best_value"] = value
            row["best_config"] = config
            row["n_seeds_best"] = n_best
            times = self.run_time_s.get(name)
            row["run_time_s"] = (float(np.median(times)) if times is not None
                                 and len(times) else math.nan)
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
            row.update(best_value=None, best_config=None, n_seeds_best=None, run_time_s=None)
            rows.append(row)
        return rows

    # -- output (see autotile.search._report) -------------------------------------------
    def table(self, settings: bool = True) -> str:
        """The summary as a plain-text table for the terminal (see :func:`format_table`).

        ``settings=False`` leaves out the space, device, objective and budget
        lines (already printed before the run).
        """
        from autotile.search._report import format_table

        return format_table(self, settings)

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
