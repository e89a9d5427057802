"""``compare`` on a space too large to sweep: live trials, scored against a sampled table.

:func:`compare_sampled` runs every trial live (e.g. with
:class:`~autotile.measure.ScheduleMeasurer` on ``gemm_space(1024)``) and scores the
curves against a :class:`~autotile.measure.SampledTruth`: the reference value is
the best *known* one (the best over the sample and every trial of the
comparison), and the random-search expectation is that of uniform sampling from
the sample, an unbiased stand-in for the whole space. Reports name the
reference ``best known (sampled, N configs), not a proven optimum``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from optuna.storages import BaseStorage

from autotile.search._compare import plan_comparison, run_comparison
from autotile.search._compare_plan import ComparisonPlan, objective_direction
from autotile.search._compare_run import SearcherFn
from autotile.search._comparison import ComparisonResult

__all__ = ["compare_sampled", "plan_sampled", "score_against_sample"]

_LIVE_SEARCHERS = ("model", "evolutionary", "tpe", "random")


def score_against_sample(result: ComparisonResult, sample: Any) -> ComparisonResult:
    """Re-score a comparison against the best known value of a sampled table.

    Parameters
    ----------
    result : ComparisonResult
        A comparison of live trials on the sampled space.
    sample : autotile.measure.SampledTruth
        Exact values of a uniform random sample of the space.

    Returns
    -------
    ComparisonResult
        ``optimum`` is the best known value (:meth:`SampledTruth.best_known`
        over the table and every trial of ``result``); ``values`` are the
        valid values of the table's uniform random rows, best first (they
        give the random-search expectation; rows added because a searcher
        visited them would bias it); ``meta["optimum_label"]`` is
        :meth:`SampledTruth.label`, ``meta["sample_best"]`` the table's own
        best and ``meta["n_sampled"]`` its number of random rows.
    """
    visited = np.concatenate([h.ravel() for h in result.histories.values()]) \
        if result.histories else np.zeros(0)
    best, values, info = _reference(sample, result.objective, result.direction, visited)
    meta = dict(result.meta)
    meta.update(info, sample_best=sample.best_known(result.objective, (), result.direction),
                sample_seed=sample.meta.get("seed"))
    return dataclasses.replace(result, optimum=best, values=values, meta=meta)


def _reference(sample: Any, objective: str, direction: str, visited: Any = ()
               ) -> tuple[float, Any, dict[str, Any]]:
    """Return the sample's reference for a comparison.

    ``(best known value with visited, random-row values best first, meta fields
    saying the reference is a sample)``.
    """
    s = -1.0 if direction == "maximize" else 1.0
    best = sample.best_known(objective, visited, direction)
    values = s * np.sort(s * sample.random_values(objective))
    return best, values, {"optimum_label": sample.label(), "n_sampled": sample.n_random}


def plan_sampled(
    space: Any,
    measurer: Any,
    sample: Any,
    searchers: Sequence[str | tuple[str, SearcherFn]] = _LIVE_SEARCHERS,
    budget: int = 200,
    seeds: int | Sequence[int] = 5,
    objective: str | None = None,
    direction: str | None = None,
    meta: dict[str, Any] | None = None,
) -> ComparisonPlan:
    """Plan a comparison of live trials whose reference is a sampled table.

    The parameters are those of :func:`compare_sampled` (``direction``: as for
    :func:`~autotile.search.compare`). Run the plan with
    :func:`~autotile.search._compare.run_comparison`, then score the result
    with :func:`score_against_sample`.

    Raises
    ------
    ValueError
        As :func:`compare_sampled`.
    """
    objective = objective or getattr(measurer, "objective", None)
    if not objective:
        raise ValueError("pass objective=: the measurer has no default objective")
    direction = direction or objective_direction(objective)
    ref, values, info = _reference(sample, objective, direction)
    if not np.isfinite(ref):
        raise ValueError(f"the sample has no valid {objective!r} value to score against")
    info.update(meta or {})
    plan = plan_comparison(space, measurer, searchers, budget, seeds, objective, ref,
                           direction, info)
    plan.values = values
    return plan


def compare_sampled(
    space: Any,
    measurer: Any,
    sample: Any,
    searchers: Sequence[str | tuple[str, SearcherFn]] = _LIVE_SEARCHERS,
    budget: int = 200,
    seeds: int | Sequence[int] = 5,
    objective: str | None = None,
    n_jobs: int = 1,
    progress: bool = True,
    storage: str | BaseStorage | None = None,
    meta: dict[str, Any] | None = None,
) -> ComparisonResult:
    """Compare searchers with live trials, scored against a sampled table's best known value.

    Parameters
    ----------
    space : autotile.space.Space
        The space searched (e.g. ``gemm_space(1024)``).
    measurer : Measurer
        Measures each trial live (e.g. ``ScheduleMeasurer(space)``).
    sample : autotile.measure.SampledTruth
        Exact values of a uniform random sample of ``space``, measured with
        the same settings as ``measurer``.
    searchers, seeds, objective, n_jobs, progress, storage, meta
        As for :func:`~autotile.search.compare`.
    budget : int, default=200
        Trials per run.

    Returns
    -------
    ComparisonResult
        Scored by :func:`score_against_sample`.

    Raises
    ------
    ValueError
        As :func:`~autotile.search.compare`, or if the sample has no valid
        value of the objective.
    """
    plan = plan_sampled(space, measurer, sample, searchers, budget, seeds, objective,
                        meta=meta)
    return score_against_sample(run_comparison(plan, n_jobs, progress, storage), sample)
