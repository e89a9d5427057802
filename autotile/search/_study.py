"""``Study``: a tuning study of one space, measurer and searcher over an Optuna study.

:class:`Study` is the facade: it checks the arguments of
:meth:`Study.optimize` and reads results back from the Optuna trials; the
loop itself is :func:`autotile.search._optimize.optimize`, and
:func:`~autotile.search.create_study` builds studies.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import optuna
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from autotile.errors import InvalidConfigError
from autotile.measure import Measurer, MeasureResult
from autotile.search import _optimize
from autotile.search._lock import StudyLock
from autotile.search._optimize import FINISHED, counted_trials
from autotile.search._params import Encoding, trial_config_text
from autotile.search._study_args import check_count, check_n_jobs, check_timeout
from autotile.space import Config, Space

__all__ = ["Study", "TrialRecord"]


class TrialRecord(NamedTuple):
    """One trial of a :class:`Study`.

    Attributes
    ----------
    number : int
        Trial number (0, 1, ... in creation order).
    config : Config or None
        The config (``None`` if the trial has none of this space).
    status : str
        ``"ok"``, ``"failed"`` or ``"infeasible"`` (the measurement),
        ``"running"``, ``"pruned"``, ``"waiting"`` (the Optuna state), or
        ``"abandoned"``: its worker died (no heartbeat for the storage's grace
        period) and the trial was queued again as a later trial with the
        same config; it does not count.
    metrics : dict of str to float
        Every metric of the measurement (empty unless ``"ok"``).
    """

    number: int
    config: Config | None
    status: str
    metrics: dict[str, float]


class Study:
    """A tuning study: a space, a measurer, a searcher and an Optuna study.

    A thin facade over :class:`optuna.Study` (:attr:`optuna_study`). Build
    it with :func:`create_study`. Each trial stores, as user attributes,
    ``"config"`` (the config's stable text), ``"status"``, ``"metrics"``
    (every metric), ``"error"`` and ``"wall_time_s"``; a trial that reused
    an earlier measurement of the same config also has ``"cached_from"``
    (that trial's number). A trial whose measurement is ``"ok"`` is
    COMPLETE with the objective metric as its value; a failed or infeasible
    one is FAIL with the reason in ``"error"``. A trial abandoned by a dead
    worker is FAIL and named in the ``"retry_history"`` system attribute of
    the trial that replaced it (Optuna's ``RetryFailedTrialCallback``); it is
    left out of :meth:`history`, the budget and ``len(study)``.

    Parameters
    ----------
    optuna_study : optuna.Study
        The underlying study (its sampler is the searcher).
    space : Space
        The space.
    measurer : Measurer
        Scores configs.
    objective : str
        The metric minimised.
    encoding : {"categorical", "index"}
        How knobs are suggested (see :func:`autotile.search.suggest_config`).
    """

    def __init__(
        self,
        optuna_study: optuna.Study,
        space: Space,
        measurer: Measurer,
        objective: str,
        encoding: Encoding = "categorical",
    ) -> None:
        self.optuna_study = optuna_study
        self.space = space
        self.measurer = measurer
        self.objective = objective
        self.encoding: Encoding = encoding
        self._cache: dict[str, tuple[int, MeasureResult]] | None = None
        self._scan: Any = None  # _optimize._Scan, with the cache
        self._in_flight: set[int] = set()
        self._best = math.inf
        self._run_outcomes: list[tuple[str, str | None]] = []
        self._stop_reason: str | None = None
        self._lock_obj: StudyLock | None = None

    @property
    def _lock(self) -> StudyLock:
        """The lock shared by every worker of this study (created on first use)."""
        if self._lock_obj is None:
            self._lock_obj = StudyLock(self.optuna_study._storage, self.study_name)
        return self._lock_obj

    # -- basic properties -------------------------------------------------------------
    @property
    def searcher(self) -> BaseSampler:
        """The Optuna sampler proposing configs."""
        return self.optuna_study.sampler

    @property
    def study_name(self) -> str:
        """Name of the Optuna study."""
        return self.optuna_study.study_name

    def __len__(self) -> int:
        return len(self._frozen())

    def __repr__(self) -> str:
        return (
            f"Study({self.study_name!r}, searcher={self.searcher}, objective={self.objective!r}, "
            f"n_trials={len(self)}, best_value={self.best_value})"
        )

    @property
    def stop_reason(self) -> str | None:
        """Why the last :meth:`optimize` call of this handle returned; None before one.

        ``"budget"``: the study holds ``n_trials`` finished trials;
        ``"exhausted"``: every config of the (finite) space is in the study
        (measured, for searchers that may repeat configs), so further trials
        could only reuse stored measurements; ``"timeout"``: ``timeout``
        passed first; ``"stopped"``: the searcher proposed nothing more.
        """
        return self._stop_reason

    # -- running ----------------------------------------------------------------------
    def optimize(
        self,
        n_trials: int,
        n_jobs: int = 1,
        progress: bool = True,
        timeout: float | None = None,
    ) -> Study:
        """Run trials until the study holds ``n_trials`` finished trials.

        ``n_trials`` is the *total* budget of the study, over every worker
        running it: a resumed study only runs the trials still missing, and
        several processes or machines calling this on the same storage and
        study share the budget exactly (see :mod:`autotile.search._optimize`).
        Under the study's lock, a worker first fails trials whose heartbeat
        stopped (their worker died) and queues them again with the same
        config (Optuna's ``RetryFailedTrialCallback``); then it takes a WAITING
        trial, or creates one while the study holds fewer than ``n_trials``,
        and suggests its config (:func:`suggest_config`) while every running
        trial is visible to the searcher. A config that violates the space's
        constraints is told FAIL with the violations as ``"error"`` (no
        measurement), a config already measured in this study reuses that
        measurement, one that another trial is measuring waits for its
        result, and the rest are measured in parallel with joblib
        (``Measurer.measure_batch``) and told. The call returns when the
        study holds ``n_trials`` finished trials (it waits for other
        workers' running trials, or for their heartbeat to stop), or at
        ``timeout``. On ``KeyboardInterrupt`` this worker's unfinished trials
        go back to WAITING. Searchers without repeats stop early once every
        config of the space is in the study; searchers that may repeat
        configs (Optuna's samplers) once every config of the space is
        measured, with a ``RuntimeWarning`` (:attr:`stop_reason` says which
        of these ended the call). ``timeout`` also ends a run whose searcher
        keeps proposing configs already measured.

        When every trial this call finished failed or was infeasible (so
        nothing was measured), a ``RuntimeWarning`` quotes the first few
        distinct errors: a measurer built for another space, or one whose
        results lack the objective metric, shows up here.

        Parameters
        ----------
        n_trials : int
            Total number of finished trials wanted, ``>= 1``.
        n_jobs : int, default=1
            Trials measured in parallel (joblib's ``n_jobs``; ``-1``: all
            cores). With an autotile searcher the proposed configs do not
            depend on ``n_jobs`` timing: a batch is asked in order before it
            is measured, so seeded runs repeat exactly for a fixed
            ``n_jobs`` (different ``n_jobs`` give different batches, hence
            different histories for model-based searchers). Capped at
            ``n_trials`` (a batch never holds more trials than the budget, so
            no idle worker processes are started).
        progress : bool, default=True
            Show a tqdm bar: trials, best so far, elapsed time.
        timeout : float, optional
            Seconds after which this worker takes no new trial and stops
            waiting for other workers, ``> 0``; the study stays resumable.

        Returns
        -------
        Study
            ``self``.

        Raises
        ------
        ValueError
            If ``n_trials < 1``, ``n_jobs == 0`` or ``timeout <= 0``.
        MeasureError
            If no trial could be attempted at all (the space has no valid
            config) and the study holds none.

        Warns
        -----
        RuntimeWarning
            If every trial finished by this call failed or was infeasible.
        UserWarning
            If the study already holds ``n_trials`` or more finished trials,
            so there is nothing to run (e.g. a resumed study with a smaller
            budget than it already ran).
        """
        n_trials = check_count("n_trials", n_trials)
        n_jobs = check_n_jobs(n_jobs)
        check_timeout(timeout)
        return _optimize.optimize(self, n_trials, n_jobs, progress, timeout)

    # -- results ----------------------------------------------------------------------
    def _frozen(self, abandoned: bool = False) -> list[FrozenTrial]:
        """The study's trials in number order; abandoned ones only if ``abandoned``."""
        trials = self.optuna_study.get_trials(deepcopy=False)
        if not abandoned:
            trials = counted_trials(trials)
        return sorted(trials, key=lambda t: t.number)

    def _config_of(self, t: FrozenTrial) -> Config | None:
        text = trial_config_text(t)
        if text is None:
            return None
        try:
            return self.space.parse(text)
        except InvalidConfigError:
            return None

    @staticmethod
    def _status(t: FrozenTrial) -> str:
        if t.state in (TrialState.COMPLETE, TrialState.FAIL) and "status" in t.user_attrs:
            return str(t.user_attrs["status"])
        return {TrialState.COMPLETE: "ok", TrialState.FAIL: "failed",
                TrialState.RUNNING: "running", TrialState.PRUNED: "pruned",
                TrialState.WAITING: "waiting"}[t.state]

    @property
    def trials(self) -> list[TrialRecord]:
        """Every trial as ``(number, config, status, metrics)``, in trial-number order.

        Abandoned trials are listed too, with status ``"abandoned"``.
        """
        counted = {t.number for t in self._frozen()}
        return [
            TrialRecord(t.number, self._config_of(t),
                        self._status(t) if t.number in counted else "abandoned",
                        dict(t.user_attrs.get("metrics") or {}) if t.number in counted else {})
            for t in self._frozen(abandoned=True)
        ]

    def history(self, metric: str | None = None) -> npt.NDArray[np.float64]:
        """Return the metric of each finished trial, in trial-number order.

        Parameters
        ----------
        metric : str, optional
            Default: the study's objective.

        Returns
        -------
        ndarray of shape (n_finished,), dtype float64
            ``inf`` for failed, infeasible and pruned trials. Running
            trials are left out.
        """
        metric = metric or self.objective
        out = []
        for t in self._frozen():
            if t.state not in FINISHED:
                continue
            m = t.user_attrs.get("metrics") or {}
            ok = self._status(t) == "ok"
            out.append(float(m.get(metric, math.inf)) if ok else math.inf)
        return np.asarray(out, dtype=np.float64)

    def best_so_far(self, metric: str | None = None) -> npt.NDArray[np.float64]:
        """Return the running minimum of :meth:`history`.

        Parameters
        ----------
        metric : str, optional
            Default: the study's objective.

        Returns
        -------
        ndarray of shape (n_finished,), dtype float64
            ``out[t]`` is the best value among the first ``t + 1`` finished
            trials (``inf`` until the first ``"ok"`` one).
        """
        h = self.history(metric)
        return np.minimum.accumulate(h) if h.size else h

    @property
    def best_value(self) -> float:
        """The best objective value so far (``inf`` if no trial is ``"ok"``)."""
        h = self.history()
        return float(h.min()) if h.size else math.inf

    @property
    def best_config(self) -> Config | None:
        """The config of the first trial reaching :attr:`best_value` (``None`` if none)."""
        best, out = math.inf, None
        for t in self._frozen():
            if t.state in FINISHED and self._status(t) == "ok":
                v = float((t.user_attrs.get("metrics") or {}).get(self.objective, math.inf))
                if v < best:
                    best, out = v, self._config_of(t)
        return out

    def to_records(self) -> list[dict[str, Any]]:
        """Return one flat dict per trial.

        Returns
        -------
        list of dict
            Keys ``number``, ``config``, ``status``, ``value`` (objective,
            ``inf`` unless ``"ok"``), ``error``, ``wall_time_s``,
            ``cached_from`` and one key per metric.
        """
        out = []
        for t in self._frozen():
            ua = t.user_attrs
            metrics = dict(ua.get("metrics") or {})
            status = self._status(t)
            out.append({
                "number": t.number, "config": trial_config_text(t), "status": status,
                "value": float(metrics.get(self.objective, math.inf)) if status == "ok"
                else math.inf,
                "error": ua.get("error"), "wall_time_s": ua.get("wall_time_s"),
                "cached_from": ua.get("cached_from"), **metrics,
            })
        return out

    def to_dataframe(self) -> Any:
        """Return :meth:`to_records` as a ``pandas.DataFrame``.

        Returns
        -------
        pandas.DataFrame
            One row per trial.

        Raises
        ------
        ImportError
            If pandas is not installed (use :meth:`to_records` instead).
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "Study.to_dataframe needs pandas (pip install pandas); "
                "Study.to_records returns the same rows as dicts"
            ) from None
        return pd.DataFrame(self.to_records())
