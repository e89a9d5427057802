"""The space form of a GPU tuning: a searcher proposes, the GPU measures.

:func:`search_space` runs :func:`autotile.search.tune` (Optuna) with a
measurer that does, per trial, what the config-list form does per candidate:
reuse a cached record, ask the model (a config it finds infeasible, or
predicts slower than ``prune_factor`` times the best prediction so far, is
pruned and not compiled), compile in the pool under the time limit, check
and time. The leaders are then re-timed in interleaved rounds.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from autotile.measure import Measurer, MeasureResult
from autotile.tuner._config import LaunchConfig
from autotile.tuner._gpu_cache import record_from_json
from autotile.tuner._gpu_protocol import Prediction
from autotile.tuner._gpu_session import GpuSession
from autotile.tuner._record import TuningRecord

__all__ = ["search_space", "GpuSpaceMeasurer"]


class GpuSpaceMeasurer(Measurer):
    """A :class:`Measurer` of space configs on the GPU, for :func:`autotile.search.tune`.

    Parameters
    ----------
    session : GpuSession
    known : mapping of str to dict
        Cached records by config text (:func:`search_space` turns them back
        into records).
    model : callable or None
        ``model(config) -> Prediction``.
    prune_factor : float or None
    pool : CompilePool or None
    from_cache : callable
        ``from_cache(config, entry) -> TuningRecord``.

    Attributes
    ----------
    records : dict of str to TuningRecord
        Each measured (or reused, or pruned) config's record, by its text,
        in trial order.
    """

    metrics = ("time_s",)
    objective = "time_s"

    def __init__(self, session: GpuSession, known: Mapping[str, Any],
                 model: Callable[[LaunchConfig], Prediction] | None,
                 prune_factor: float | None, pool: Any,
                 from_cache: Callable[[LaunchConfig, Mapping[str, Any]], TuningRecord]) -> None:
        self.session, self.known, self.model = session, known, model
        self.prune_factor, self.pool, self.from_cache = prune_factor, pool, from_cache
        self.best_pred: float | None = None
        self.records: dict[str, TuningRecord] = {}

    def record(self, c: LaunchConfig) -> TuningRecord:
        """The record of one config (cached, pruned, failed or measured)."""
        if str(c) in self.known:
            return self.from_cache(c, self.known[str(c)])
        pred = self.model(c) if self.model is not None else Prediction(None)
        if pred.infeasible is not None:
            return TuningRecord(c, "pruned", reason=f"the GPU model says it cannot launch: "
                                                    f"{pred.infeasible}")
        t = pred.time_s
        if t is not None:
            if self.prune_factor is not None and self.best_pred is not None \
                    and t > self.prune_factor * self.best_pred:
                return TuningRecord(c, "pruned", reason=(
                    f"the GPU model predicts {t:.4g} s, {t / self.best_pred:.2f}x its best "
                    f"prediction so far ({self.best_pred:.4g} s) > "
                    f"prune_factor={self.prune_factor:g}"), metrics={"model_time_s": t})
            self.best_pred = t if self.best_pred is None else min(self.best_pred, t)
        failed = self.session.compile_ahead([c], self.pool)
        return failed[c] if c in failed else self.session.measure(c, t)

    def _measure(self, config: Any) -> MeasureResult:
        c = LaunchConfig.from_knobs(config)
        rec = self.record(c)
        self.records[str(config)] = rec
        if rec.status == "ok":
            return MeasureResult(str(config), "ok", {"time_s": rec.time_s})
        if rec.status in ("infeasible", "pruned"):
            return MeasureResult(str(config), "infeasible", {}, 0.0, rec.reason)
        return MeasureResult(str(config), "failed", {}, 0.0, f"{rec.status}: {rec.reason}")


def search_space(tuner: Any, known: Mapping[str, Any], named: dict[str, Any], grid: Any,
                 session: GpuSession) -> list[TuningRecord]:
    """Run the searcher over ``tuner``'s space with GPU measurements; return the history.

    Needs Optuna (:func:`autotile.search.tune`); the config-list form does not.
    """
    from autotile.search import tune
    space = tuner._space_for(named)
    pool = tuner._pool()
    measurer = GpuSpaceMeasurer(session, known, tuner.model(named, grid), tuner.prune_factor,
                                pool, record_from_json)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", r"study .*: all \d+ trials of this run failed",
                                    RuntimeWarning)
            tuner.study = tune(space, measurer, searcher=tuner.searcher, budget=tuner.budget,
                               seed=tuner.seed, searcher_kwargs=tuner.searcher_kwargs,
                               storage=":memory:", progress=False,
                               study_name=f"autotune-gpu-{tuner.__name__}")
    finally:
        if pool is not None:
            pool.close()
    records = {r.config: r for r in measurer.records.values()}
    fresh_ok = [r for r in records.values()
                if r.status == "ok" and not r.metrics.get("from_cache")]
    tuner._retime(session, fresh_ok, records)
    return list(records.values())
