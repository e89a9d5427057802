"""``Study``: a tuning study of one space, measurer and searcher over an Optuna study."""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import socket
import time
import warnings
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import optuna
from optuna.samplers import BaseSampler
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, Trial, TrialState

from autotile.errors import InvalidConfigError, MeasureError
from autotile.measure import Measurer, MeasureResult
from autotile.search._base import SpaceSearcher
from autotile.search._factory import encoding_for, make_searcher
from autotile.search._params import Encoding, suggest_config, trial_config_text
from autotile.space import Config, Space

__all__ = ["Study", "TrialRecord", "create_study", "tune", "DEFAULT_STORAGE"]

#: Storage used when none is given: an SQLite file in the current directory.
DEFAULT_STORAGE = "sqlite:///autotile_studies.db"
_OWNER_ATTR = "autotile:owner"
_FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
#: File suffixes a storage string without ``://`` may have: it names an SQLite file.
_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
#: Distinct errors quoted when every trial of a run failed.
_N_ERRORS_SHOWN = 3


@contextlib.contextmanager
def _quiet_optuna() -> Iterator[None]:
    """Silence Optuna's per-trial INFO logging for the duration of the block."""
    old = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(max(old, optuna.logging.WARNING))
    try:
        yield
    finally:
        optuna.logging.set_verbosity(old)


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class TrialRecord(NamedTuple):
    """One trial of a :class:`Study`.

    Attributes
    ----------
    number : int
        Trial number (0, 1, ... in creation order).
    config : Config or None
        The config (``None`` if the trial has none of this space).
    status : str
        ``"ok"``, ``"failed"`` or ``"infeasible"`` (the measurement), or
        ``"running"``, ``"pruned"``, ``"waiting"`` (the Optuna state).
    metrics : dict of str to float
        Every metric of the measurement (empty unless ``"ok"``).
    """

    number: int
    config: Config | None
    status: str
    metrics: dict[str, float]


class _Pending(NamedTuple):
    trial: Trial
    config: Config


class Study:
    """A tuning study: a space, a measurer, a searcher and an Optuna study.

    A thin facade over :class:`optuna.Study` (:attr:`optuna_study`). Build
    it with :func:`create_study`. Each trial stores, as user attributes,
    ``"config"`` (the config's stable text), ``"status"``, ``"metrics"``
    (every metric), ``"error"`` and ``"wall_time_s"``; a trial that reused
    an earlier measurement of the same config also has ``"cached_from"``
    (that trial's number). A trial whose measurement is ``"ok"`` is
    COMPLETE with the objective metric as its value; a failed or infeasible
    one is FAIL with the reason in ``"error"``.

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
        self._in_flight: set[int] = set()
        self._best = math.inf
        self._run_outcomes: list[tuple[str, str | None]] = []

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
        return len(self.optuna_study.get_trials(deepcopy=False))

    def __repr__(self) -> str:
        return (
            f"Study({self.study_name!r}, searcher={self.searcher}, objective={self.objective!r}, "
            f"n_trials={len(self)}, best_value={self.best_value})"
        )

    # -- running ----------------------------------------------------------------------
    def optimize(
        self,
        n_trials: int,
        n_jobs: int = 1,
        progress: bool = True,
        timeout: float | None = None,
    ) -> Study:
        """Run trials until the study holds ``n_trials`` finished trials.

        ``n_trials`` is the *total* budget: a resumed study only runs the
        trials still missing. First, trials left RUNNING by a process that
        died (same host, dead pid, or no owner recorded) are finished by
        measuring exactly the config they hold, so a killed study loses no
        trial and measures none twice. Then trials are asked in batches of
        ``n_jobs``: each config is suggested (:func:`suggest_config`), a
        config that violates the space's constraints is told FAIL with the
        violations as ``"error"`` (no measurement), a config already
        measured in this study reuses that measurement, and the rest are
        measured in parallel with joblib (``Measurer.measure_batch``) and
        told. Searchers without repeats stop early once every config of the
        space is in the study.

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
            different histories for model-based searchers).
        progress : bool, default=True
            Show a tqdm bar: trials, best so far, elapsed time.
        timeout : float, optional
            Seconds after which no new batch is started, ``> 0``.

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
        """
        n_trials = _check_count("n_trials", n_trials)
        if not _is_int(n_jobs) or n_jobs == 0:
            raise ValueError(f"n_jobs must be a non-zero int, got n_jobs={n_jobs!r}")
        _check_timeout(timeout)
        return self._optimize(n_trials, int(n_jobs), progress, timeout)

    def _optimize(self, n_trials: int, n_jobs: int, progress: bool,
                  timeout: float | None) -> Study:
        from tqdm.auto import tqdm

        if len(self.space) == 0:
            raise MeasureError(
                f"no trial can be run: space {self.space.name or 'space'!r} has no valid config "
                f"(its constraints reject all {self.space.product_size} combinations of "
                f"knobs {list(self.space.names)})")
        batch = n_jobs if n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + n_jobs)
        t0 = time.perf_counter()
        st = self.optuna_study
        self._run_outcomes = []
        timed_out = False
        with _quiet_optuna():
            self._load_cache()
            stale, others = self._running()
            done = self._n_finished()
            self._best = self.best_value
            bar = tqdm(total=n_trials, initial=min(done, n_trials), unit="trial",
                       desc=str(self.searcher), disable=not progress, dynamic_ncols=True)
            try:
                for s in range(0, len(stale), batch):
                    chunk = stale[s:s + batch]
                    prepared = [self._prepare(Trial(st, t._trial_id), bar) for t in chunk]
                    self._run_batch([p for p in prepared if p is not None], n_jobs, bar)
                while True:
                    remaining = n_trials - self._n_finished() - others
                    if remaining <= 0 or (n_trials >= len(self.space) and self._exhausted()):
                        break
                    if timeout is not None and time.perf_counter() - t0 >= timeout:
                        timed_out = True
                        break
                    pending: list[_Pending] = []
                    for _ in range(min(batch, remaining)):
                        p = self._prepare(st.ask(), bar)
                        if p is not None:
                            pending.append(p)
                    self._run_batch(pending, n_jobs, bar)
            finally:
                bar.close()
        self._report_run(n_trials, timed_out)
        return self

    def _report_run(self, n_trials: int, timed_out: bool) -> None:
        """Raise or warn when this run measured nothing."""
        outcomes = self._run_outcomes
        if not outcomes:
            if self._n_finished() == 0 and not timed_out:
                raise MeasureError(
                    f"no trial could be run: the searcher {self.searcher} proposed no config "
                    f"of space {self.space.name or 'space'!r} (n_trials={n_trials})")
            return
        if any(status == "ok" for status, _ in outcomes):
            return
        errors: list[str] = []
        for _, err in outcomes:
            text = str(err) if err else "no error recorded"
            if text not in errors:
                errors.append(text)
        shown = "; ".join(repr(e) for e in errors[:_N_ERRORS_SHOWN])
        more = f" (and {len(errors) - _N_ERRORS_SHOWN} more)" if len(errors) > _N_ERRORS_SHOWN \
            else ""
        warnings.warn(
            f"study {self.study_name!r}: all {len(outcomes)} trials of this run failed or were "
            f"infeasible, so nothing was measured; distinct errors: {shown}{more}. Check that "
            f"the measurer was built for this space and reports the objective "
            f"{self.objective!r}", RuntimeWarning, stacklevel=4)

    def _load_cache(self) -> None:
        if self._cache is not None:
            return
        self._cache = {}
        for t in self.optuna_study.get_trials(deepcopy=False, states=_FINISHED):
            res = self._stored_result(t)
            if res is not None and res.config not in self._cache:
                self._cache[res.config] = (t.number, res)

    @staticmethod
    def _stored_result(t: FrozenTrial) -> MeasureResult | None:
        ua = t.user_attrs
        if "config" not in ua or ua.get("status") not in ("ok", "failed", "infeasible"):
            return None
        if "cached_from" in ua:
            return None
        return MeasureResult(str(ua["config"]), ua["status"], dict(ua.get("metrics") or {}),
                             float(ua.get("wall_time_s", 0.0)), ua.get("error"))

    def _running(self) -> tuple[list[FrozenTrial], int]:
        """RUNNING trials: those of dead processes (to finish), and a count of live ones."""
        host = socket.gethostname()
        stale, others = [], 0
        for t in self.optuna_study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            owner = str(t.system_attrs.get(_OWNER_ATTR, ""))
            h, _, p = owner.rpartition(":")
            if not owner:
                dead = True
            elif h != host or not p.isdigit():
                dead = False
            elif int(p) == os.getpid():
                dead = t._trial_id not in self._in_flight
            else:
                dead = not _pid_alive(int(p))
            if dead:
                stale.append(t)
            else:
                others += 1
        return stale, others

    def _n_finished(self) -> int:
        return len(self.optuna_study.get_trials(deepcopy=False, states=_FINISHED))

    def _exhausted(self) -> bool:
        sampler = self.searcher
        if not (isinstance(sampler, SpaceSearcher) and sampler.unique):
            return False
        seen = set()
        for t in self.optuna_study.get_trials(deepcopy=False):
            text = trial_config_text(t)
            if text is not None:
                seen.add(text)
        return len(seen) >= len(self.space)

    def _prepare(self, trial: Trial, bar: Any) -> _Pending | None:
        """Suggest the trial's config; tell it at once if infeasible or already measured."""
        st = self.optuna_study
        st._storage.set_trial_system_attr(trial._trial_id, _OWNER_ATTR, _owner())
        self._in_flight.add(trial._trial_id)
        try:
            raw = suggest_config(trial, self.space, self.encoding, validate=False)
        except Exception as exc:  # noqa: BLE001 - a bad proposal is a failed trial
            res = MeasureResult("", "infeasible", {}, 0.0, f"{type(exc).__name__}: {exc}")
            self._tell(trial, res, bar)
            return None
        problems = self.space.violations(raw)
        if problems:
            text = ", ".join(f"{k}={self.space[k].format_value(v)}" for k, v in raw.items())
            self._tell(trial, MeasureResult(text, "infeasible", {}, 0.0, "; ".join(problems)),
                       bar)
            return None
        cfg = self.space.validate(raw)
        trial.set_user_attr("config", str(cfg))
        assert self._cache is not None
        hit = self._cache.get(str(cfg))
        if hit is not None:
            self._tell(trial, hit[1], bar, cached_from=hit[0])
            return None
        return _Pending(trial, cfg)

    def _run_batch(self, pending: list[_Pending], n_jobs: int, bar: Any) -> None:
        if not pending:
            return
        first: dict[str, int] = {}
        for p in pending:
            first.setdefault(str(p.config), p.trial.number)
        unique = {str(p.config): p.config for p in pending}
        results = dict(zip(unique, self.measurer.measure_batch(list(unique.values()), n_jobs)))
        assert self._cache is not None
        for p in pending:
            text = str(p.config)
            res = results[text]
            if first[text] == p.trial.number:
                self._tell(p.trial, res, bar)
                self._cache.setdefault(text, (p.trial.number, res))
            else:
                self._tell(p.trial, res, bar, cached_from=first[text])

    def _tell(self, trial: Trial, res: MeasureResult, bar: Any,
              cached_from: int | None = None) -> None:
        metrics: dict[str, float] = {}
        bad: list[str] = []
        for k, v in res.metrics.items():
            try:
                metrics[str(k)] = float(v)
            except (TypeError, ValueError):
                bad.append(f"{k}={_short(v)} ({type(v).__name__})")
        attrs: dict[str, Any] = {
            "config": res.config, "status": res.status, "metrics": metrics,
            "error": res.error, "wall_time_s": 0.0 if cached_from is not None else float(
                res.wall_time_s),
        }
        if bad and res.ok:
            attrs["status"] = "failed"
            attrs["error"] = f"metrics must be real numbers, got {', '.join(bad)}"
        if cached_from is not None:
            attrs["cached_from"] = int(cached_from)
        value = math.inf
        if attrs["status"] == "ok":
            if self.objective in metrics and not math.isnan(metrics[self.objective]):
                value = metrics[self.objective]
            else:
                attrs["status"] = "failed"
                attrs["error"] = (
                    f"the objective {self.objective!r} is NaN" if self.objective in metrics
                    else f"the measurement has no value of the objective "
                         f"{self.objective!r}; metrics: {sorted(metrics)}")
        for k, v in attrs.items():
            trial.set_user_attr(k, v)
        if attrs["status"] == "ok":
            self.optuna_study.tell(trial, value)
        else:
            self.optuna_study.tell(trial, state=TrialState.FAIL)
        self._in_flight.discard(trial._trial_id)
        self._run_outcomes.append((str(attrs["status"]), attrs["error"]))
        if attrs["status"] == "ok" and value < self._best:
            self._best = value
            bar.set_postfix(best=f"{value:.6g}", refresh=False)
        bar.update(1)

    # -- results ----------------------------------------------------------------------
    def _frozen(self) -> list[FrozenTrial]:
        return sorted(self.optuna_study.get_trials(deepcopy=False), key=lambda t: t.number)

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
        """Every trial as ``(number, config, status, metrics)``, in trial-number order."""
        return [
            TrialRecord(t.number, self._config_of(t), self._status(t),
                        dict(t.user_attrs.get("metrics") or {}))
            for t in self._frozen()
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
            if t.state not in _FINISHED:
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
            if t.state in _FINISHED and self._status(t) == "ok":
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


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_count(name: str, value: Any) -> int:
    """Return ``value`` as an int >= 1, else raise ValueError naming ``name``."""
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {name}={value!r}")
    return int(value)


def _check_timeout(timeout: Any) -> None:
    if timeout is None:
        return
    if (not isinstance(timeout, numbers.Real) or isinstance(timeout, bool)
            or not float(timeout) > 0):
        raise ValueError(f"timeout must be a number of seconds > 0 or None, "
                         f"got timeout={timeout!r}")


def _check_seed(seed: Any) -> None:
    if seed is not None and (not _is_int(seed) or seed < 0):
        raise ValueError(f"seed must be None or an int >= 0, got seed={seed!r}")


def _storage_arg(storage: Any) -> str | BaseStorage:
    """Validate ``storage`` and turn a plain SQLite file path into a URL."""
    if storage is None:
        return DEFAULT_STORAGE
    if isinstance(storage, BaseStorage):
        return storage
    if isinstance(storage, os.PathLike):
        storage = os.fspath(storage)
    if not isinstance(storage, str):
        raise TypeError(
            f"storage must be a storage URL (str), an SQLite file path or an "
            f"optuna.storages.BaseStorage, got {type(storage).__name__} {_short(storage)}")
    if storage == ":memory:":
        return optuna.storages.InMemoryStorage()
    if "://" not in storage:
        if storage.lower().endswith(_SQLITE_SUFFIXES):
            storage = f"sqlite:///{storage}"
        else:
            raise ValueError(
                f"storage must be an Optuna storage URL (with '://'), an SQLite file path "
                f"ending in {'/'.join(_SQLITE_SUFFIXES)} or ':memory:', got storage={storage!r}; "
                f"e.g. storage='sqlite:///file.db'")
    url: str = storage
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):].partition("?")[0]
        parent = os.path.dirname(path)
        if path and path != ":memory:" and parent and not os.path.isdir(parent):
            raise ValueError(
                f"storage must be an SQLite file in an existing directory, got "
                f"storage={url!r} (directory {parent!r} does not exist)")
    return url


def _check_measurer(space: Space, measurer: Any) -> None:
    if not isinstance(space, Space):
        raise TypeError(f"space must be an autotile.space.Space, got "
                        f"{type(space).__name__} {_short(space)}")
    if not isinstance(measurer, Measurer):
        raise TypeError(
            f"measurer must be an autotile.measure.Measurer, got {type(measurer).__name__} "
            f"{_short(measurer)}; subclass Measurer and implement _measure(config) -> "
            f"MeasureResult")
    other = getattr(measurer, "space", None)
    if isinstance(other, Space) and other is not space and set(other.names) != set(space.names):
        raise ValueError(
            f"the measurer must be built for the study's space: the study's space "
            f"{space.name or 'space'!r} has knobs {list(space.names)}, the measurer's space "
            f"{other.name or 'space'!r} has knobs {list(other.names)}")


def create_study(
    space: Space,
    measurer: Measurer,
    *,
    searcher: str | BaseSampler = "random",
    objective: str | None = None,
    storage: str | BaseStorage | None = None,
    study_name: str | None = None,
    seed: int | None = None,
    load_if_exists: bool = True,
    searcher_kwargs: dict[str, Any] | None = None,
) -> Study:
    """Create (or load) a tuning study of ``space`` scored by ``measurer``.

    Parameters
    ----------
    space : Space
        The space.
    measurer : Measurer
        Scores configs.
    searcher : str or optuna.samplers.BaseSampler, default="random"
        A name for :func:`make_searcher` (``"grid"``, ``"random"``,
        ``"model"``, ``"evolutionary"``, ``"tpe"``, ``"cmaes"``, ``"gp"``,
        ``"nsga2"``, ``"qmc"``) or any Optuna sampler.
    objective : str, optional
        Metric to minimise; default ``measurer.objective``.
    storage : str, path-like or optuna.storages.BaseStorage, optional
        Where trials are kept. Default: the SQLite file
        ``autotile_studies.db`` in the current directory
        (:data:`DEFAULT_STORAGE`). Any Optuna storage URL (``"sqlite:///"
        "file.db"``, ``"postgresql://..."``) or storage object is accepted;
        a path without ``://`` ending in ``.db``, ``.sqlite`` or
        ``.sqlite3`` names an SQLite file (``"runs.db"`` means
        ``"sqlite:///runs.db"``); ``":memory:"`` keeps the study in memory.
    study_name : str, optional
        Default ``"<space name>-<searcher>-<objective>-seed<seed>"``, so
        running the same call again resumes the same study.
    seed : int, optional
        Seed of the searcher, ``>= 0``.
    load_if_exists : bool, default=True
        Load the study if one with this name exists (resume); otherwise
        Optuna raises ``DuplicatedStudyError``.
    searcher_kwargs : dict, optional
        Extra arguments for :func:`make_searcher`.

    Returns
    -------
    Study
        The study; call :meth:`Study.optimize`.

    Raises
    ------
    TypeError
        If ``space`` is not a ``Space``, ``measurer`` is not a ``Measurer``
        (e.g. a plain function) or ``storage`` has an unsupported type.
    ValueError
        If ``objective`` is not one of ``measurer.metrics`` (or there is no
        objective at all), the measurer's ``space`` has other knobs than
        ``space``, ``seed`` is not None or an int ``>= 0``, ``storage`` is a
        string that is neither a URL nor an SQLite file path, or a loaded
        study was created for another objective or space.

    Examples
    --------
    >>> from autotile.space import gemm_space
    >>> from autotile.measure import ScheduleMeasurer
    >>> space = gemm_space(8)
    >>> study = create_study(space, ScheduleMeasurer(space), storage=":memory:", seed=0)
    """
    _check_measurer(space, measurer)
    _check_seed(seed)
    storage_arg = _storage_arg(storage)
    objective = objective or measurer.objective
    if not objective:
        raise ValueError(
            f"objective must name a metric, got objective={objective!r}: pass objective= or "
            f"set {type(measurer).__name__}.objective")
    if measurer.metrics and objective not in measurer.metrics:
        raise ValueError(
            f"objective must be one of the measurer's metrics {tuple(measurer.metrics)}, "
            f"got objective={objective!r}"
        )
    if isinstance(searcher, BaseSampler):
        sampler, label = searcher, type(searcher).__name__
    else:
        sampler, label = make_searcher(searcher, space, seed, **(searcher_kwargs or {})), searcher
    if study_name is None:
        study_name = f"{space.name or 'space'}-{label}-{objective}-seed{seed}"
    with _quiet_optuna():
        ost = optuna.create_study(storage=storage_arg, sampler=sampler,
                                  study_name=study_name, direction="minimize",
                                  load_if_exists=load_if_exists)
    meta = {"autotile:objective": objective, "autotile:knobs": list(space.names),
            "autotile:space_size": len(space)}
    old = ost.user_attrs
    if "autotile:objective" in old:
        if old["autotile:objective"] != objective:
            raise ValueError(
                f"study {study_name!r} minimises {old['autotile:objective']!r}, "
                f"got objective={objective!r}; pass another study_name"
            )
        if old.get("autotile:knobs") != list(space.names) or old.get(
                "autotile:space_size") != len(space):
            raise ValueError(
                f"study {study_name!r} was created for knobs {old.get('autotile:knobs')} "
                f"(size {old.get('autotile:space_size')}), got knobs {list(space.names)} "
                f"(size {len(space)}); pass another study_name"
            )
    else:
        for k, v in {**meta, "autotile:searcher": str(label), "autotile:seed": seed}.items():
            ost.set_user_attr(k, v)
    return Study(ost, space, measurer, objective, encoding_for(sampler))


def tune(
    space: Space,
    measurer: Measurer,
    searcher: str | BaseSampler = "random",
    budget: int = 100,
    seed: int | None = None,
    storage: str | BaseStorage | None = None,
    n_jobs: int = 1,
    progress: bool = True,
    *,
    objective: str | None = None,
    study_name: str | None = None,
    searcher_kwargs: dict[str, Any] | None = None,
    timeout: float | None = None,
    load_if_exists: bool = True,
) -> Study:
    """Create (or resume) a study and run it to ``budget`` finished trials.

    ``create_study(...)`` followed by ``Study.optimize(budget, ...)``; see
    both for the parameters.

    Parameters
    ----------
    space : Space
        The space.
    measurer : Measurer
        Scores configs.
    searcher : str or optuna.samplers.BaseSampler, default="random"
        See :func:`create_study`.
    budget : int, default=100
        Total number of trials, ``>= 1``.
    seed : int, optional
        Seed of the searcher, ``>= 0``.
    storage : str, path-like or optuna.storages.BaseStorage, optional
        See :func:`create_study` (default: ``autotile_studies.db``; a
        plain ``"file.db"`` path is an SQLite file).
    n_jobs : int, default=1
        Parallel measurements.
    progress : bool, default=True
        Show the progress bar.
    objective, study_name, searcher_kwargs, load_if_exists
        See :func:`create_study`.
    timeout : float, optional
        See :meth:`Study.optimize`.

    Returns
    -------
    Study
        The finished study.

    Raises
    ------
    TypeError, ValueError
        See :func:`create_study`; also if ``budget < 1`` or ``timeout <= 0``.
    MeasureError
        If no trial could be attempted (the space has no valid config).

    Warns
    -----
    RuntimeWarning
        If every trial of this run failed or was infeasible (the warning
        quotes the first few distinct errors).
    """
    budget = _check_count("budget", budget)
    if not _is_int(n_jobs) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero int, got n_jobs={n_jobs!r}")
    _check_timeout(timeout)
    study = create_study(space, measurer, searcher=searcher, objective=objective,
                         storage=storage, study_name=study_name, seed=seed,
                         load_if_exists=load_if_exists, searcher_kwargs=searcher_kwargs)
    return study._optimize(budget, int(n_jobs), progress, timeout)
