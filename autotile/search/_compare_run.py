"""One run of :func:`~autotile.search.compare`: a searcher, a seed, a budget, and its progress.

:func:`run_one` runs a study in memory in chunks of trials and reports the
trials done and the best value after each chunk, so that the comparison's
bar moves per trial even when runs are in other processes. Chunking does not
change a run: ``Study.optimize(n)`` runs up to ``n`` trials in total, and the
searchers depend only on the trials, not on how the calls were cut.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autotile.measure import Measurer, MeasureResult
from autotile.search._compare_store import RunResult
from autotile.search._methodology import FloatArray

__all__ = ["run_one", "Negated", "SearcherFn", "ProgressFn"]

#: A custom searcher: ``fn(space, measurer, budget, seed) -> objective value per trial``.
SearcherFn = Callable[[Any, Any, int, int], Sequence[float]]
#: ``fn(label, seed, n_done, best)``: called after each chunk of a run (``best`` in the
#: objective's units; the worst infinity before the first valid trial).
ProgressFn = Callable[[str, int, int, float], None]

_CHUNK_S = 0.25  # aim for a progress report about this often
_MAX_CHUNK = 200


class Negated(Measurer):
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


class _QueueReport:
    """A picklable progress function that puts ``(label, seed, n_done, best)`` on a queue."""

    def __init__(self, queue: Any) -> None:
        self.queue = queue

    def __call__(self, label: str, seed: int, n_done: int, best: float) -> None:
        try:
            self.queue.put((label, seed, n_done, best))
        except Exception:  # noqa: BLE001 - progress must never stop a run (e.g. manager gone)
            pass


def _best(values: FloatArray, maximize: bool) -> float:
    ok = values[np.isfinite(values)]
    if ok.shape[0] == 0:
        return -math.inf if maximize else math.inf
    return float(ok.max() if maximize else ok.min())


def _chunks(study: Any, budget: int, label: str, seed: int, maximize: bool,
            report: ProgressFn | None) -> None:
    """Run ``study`` to ``budget`` trials in chunks of about :data:`_CHUNK_S` seconds."""
    done, chunk = 0, 4
    while done < budget:
        t_chunk = time.perf_counter()
        study.optimize(min(budget, done + chunk), progress=False)
        n = len(study.history())
        if n == done:
            break  # the searcher has nothing left to propose (exhausted space)
        done = n
        if report is not None:
            h = study.history()
            report(label, seed, done, _best(-h if maximize else h, maximize))
        dt = max(time.perf_counter() - t_chunk, 1e-4)
        chunk = int(min(_MAX_CHUNK, max(1, chunk * _CHUNK_S / dt)))


def run_one(space: Any, measurer: Any, label: str, searcher: str | SearcherFn, seed: int,
            budget: int, direction: str = "minimize", report: ProgressFn | None = None,
            keep_trials: bool = False) -> RunResult:
    """Run one searcher for one seed in memory; return its objective per trial.

    Failed trials (NaN) and missing ones are the worst infinity: ``inf`` when
    minimising, ``-inf`` when maximising. ``report`` is called after every
    chunk of trials (chunks of about a quarter of a second). With
    ``keep_trials`` the result holds the study's trials, to be stored.
    """
    t0 = time.perf_counter()
    optuna_logger = logging.getLogger("optuna")
    level = optuna_logger.level
    optuna_logger.setLevel(logging.WARNING)
    maximize = direction == "maximize"
    worst = -math.inf if maximize else math.inf
    best_config = None
    trials = None
    values: Sequence[float] | FloatArray
    try:
        if callable(searcher):
            values = searcher(space, measurer, budget, seed)
        else:
            from autotile.search import create_study
            from autotile.search._optimize import nothing_measured_message

            run = Negated(measurer) if maximize else measurer
            study = create_study(space, run, searcher=searcher, seed=seed,
                                 objective=run.objective, storage=":memory:")
            with warnings.catch_warnings(record=True) as recorded:
                warnings.simplefilter("always")
                _chunks(study, budget, label, seed, maximize, report)
            nothing = not np.isfinite(study.history()).any()
            runtime = [w for w in recorded if issubclass(w.category, RuntimeWarning)]
            # a chunk whose trials all failed warns; the run warns once, if it measured
            # nothing, counting the whole run's trials (not the last chunk's)
            for w in [w for w in recorded if w not in runtime]:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            if nothing:
                outcomes = [(r["status"], r["error"]) for r in study.to_records()]
                warnings.warn(nothing_measured_message(study, outcomes), RuntimeWarning,
                              stacklevel=2)
            values = -study.history() if maximize else study.history()
            cfg = study.best_config
            best_config = None if cfg is None else str(cfg)
            if keep_trials:
                trials = study.optuna_study.get_trials(deepcopy=False)
    finally:
        optuna_logger.setLevel(level)
    h = np.full(budget, worst)
    v = np.asarray(values, dtype=np.float64)[:budget]
    h[: v.shape[0]] = np.where(np.isnan(v), worst, v)
    if report is not None and callable(searcher):
        report(label, seed, budget, _best(h, maximize))
    return RunResult(label, seed, h, best_config, time.perf_counter() - t0, trials)
