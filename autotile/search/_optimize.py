"""The optimize loop of a :class:`~autotile.search.Study`: batches, measurement and resume.

:func:`optimize` runs a study until it holds ``n_trials`` finished trials.
Trials are asked in batches of ``n_jobs``: each config is suggested and
checked against the space's constraints, a config already measured in the
study reuses that measurement, and the rest are measured in parallel and
told. Every trial records its owner (``host:pid``); a trial left RUNNING by
a process that died is finished by measuring the config it holds, so a
killed study resumes without losing or repeating a trial. As in Optuna's
``study/_optimize.py`` the loop is a set of functions of the study, whose
state (the measurement cache, trials in flight, the best value, this run's
outcomes) lives on the :class:`~autotile.search.Study`.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import time
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import optuna
from optuna.trial import FrozenTrial, Trial, TrialState

from autotile.errors import MeasureError
from autotile.measure import MeasureResult
from autotile.search._base import SpaceSearcher
from autotile.search._params import suggest_config, trial_config_text
from autotile.search._study_args import short_repr
from autotile.space import Config

if TYPE_CHECKING:
    from autotile.search._study import Study

__all__ = ["optimize", "quiet_optuna", "FINISHED"]

_OWNER_ATTR = "autotile:owner"
#: Trial states that count towards ``n_trials``.
FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
#: Distinct errors quoted when every trial of a run failed.
_N_ERRORS_SHOWN = 3


@contextlib.contextmanager
def quiet_optuna() -> Iterator[None]:
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


class _Pending(NamedTuple):
    trial: Trial
    config: Config


def optimize(study: Study, n_trials: int, n_jobs: int, progress: bool,
             timeout: float | None) -> Study:
    """Run ``study`` until it holds ``n_trials`` finished trials (:meth:`Study.optimize`).

    The arguments are checked by the caller; ``n_jobs`` may be negative (joblib's
    convention) but not 0. Returns ``study``.
    """
    from tqdm.auto import tqdm

    if len(study.space) == 0:
        raise MeasureError(
            f"no trial can be run: space {study.space.name or 'space'!r} has no valid config "
            f"(its constraints reject all {study.space.product_size} combinations of "
            f"knobs {list(study.space.names)})")
    batch = n_jobs if n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    t0 = time.perf_counter()
    st = study.optuna_study
    study._run_outcomes = []
    timed_out = False
    with quiet_optuna():
        _load_cache(study)
        stale, others = _running(study)
        done = _n_finished(study)
        study._best = study.best_value
        bar = tqdm(total=n_trials, initial=min(done, n_trials), unit="trial",
                   desc=str(study.searcher), disable=not progress, dynamic_ncols=True)
        try:
            for s in range(0, len(stale), batch):
                chunk = stale[s:s + batch]
                prepared = [_prepare(study, Trial(st, t._trial_id), bar) for t in chunk]
                _run_batch(study, [p for p in prepared if p is not None], n_jobs, bar)
            while True:
                remaining = n_trials - _n_finished(study) - others
                if remaining <= 0 or (n_trials >= len(study.space) and _exhausted(study)):
                    break
                if timeout is not None and time.perf_counter() - t0 >= timeout:
                    timed_out = True
                    break
                pending: list[_Pending] = []
                for _ in range(min(batch, remaining)):
                    p = _prepare(study, st.ask(), bar)
                    if p is not None:
                        pending.append(p)
                _run_batch(study, pending, n_jobs, bar)
        finally:
            bar.close()
    _report_run(study, n_trials, timed_out)
    return study


def _report_run(study: Study, n_trials: int, timed_out: bool) -> None:
    """Raise or warn when this run measured nothing."""
    outcomes = study._run_outcomes
    if not outcomes:
        if _n_finished(study) == 0 and not timed_out:
            raise MeasureError(
                f"no trial could be run: the searcher {study.searcher} proposed no config "
                f"of space {study.space.name or 'space'!r} (n_trials={n_trials})")
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
        f"study {study.study_name!r}: all {len(outcomes)} trials of this run failed or were "
        f"infeasible, so nothing was measured; distinct errors: {shown}{more}. Check that "
        f"the measurer was built for this space and reports the objective "
        f"{study.objective!r}", RuntimeWarning, stacklevel=4)


def _load_cache(study: Study) -> None:
    if study._cache is not None:
        return
    study._cache = {}
    for t in study.optuna_study.get_trials(deepcopy=False, states=FINISHED):
        res = _stored_result(t)
        if res is not None and res.config not in study._cache:
            study._cache[res.config] = (t.number, res)


def _stored_result(t: FrozenTrial) -> MeasureResult | None:
    ua = t.user_attrs
    if "config" not in ua or ua.get("status") not in ("ok", "failed", "infeasible"):
        return None
    if "cached_from" in ua:
        return None
    return MeasureResult(str(ua["config"]), ua["status"], dict(ua.get("metrics") or {}),
                         float(ua.get("wall_time_s", 0.0)), ua.get("error"))


def _running(study: Study) -> tuple[list[FrozenTrial], int]:
    """RUNNING trials: those of dead processes (to finish), and a count of live ones."""
    host = socket.gethostname()
    stale, others = [], 0
    for t in study.optuna_study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        owner = str(t.system_attrs.get(_OWNER_ATTR, ""))
        h, _, p = owner.rpartition(":")
        if not owner:
            dead = True
        elif h != host or not p.isdigit():
            dead = False
        elif int(p) == os.getpid():
            dead = t._trial_id not in study._in_flight
        else:
            dead = not _pid_alive(int(p))
        if dead:
            stale.append(t)
        else:
            others += 1
    return stale, others


def _n_finished(study: Study) -> int:
    return len(study.optuna_study.get_trials(deepcopy=False, states=FINISHED))


def _exhausted(study: Study) -> bool:
    sampler = study.searcher
    if not (isinstance(sampler, SpaceSearcher) and sampler.unique):
        return False
    seen = set()
    for t in study.optuna_study.get_trials(deepcopy=False):
        text = trial_config_text(t)
        if text is not None:
            seen.add(text)
    return len(seen) >= len(study.space)


def _prepare(study: Study, trial: Trial, bar: Any) -> _Pending | None:
    """Suggest the trial's config; tell it at once if infeasible or already measured."""
    st = study.optuna_study
    st._storage.set_trial_system_attr(trial._trial_id, _OWNER_ATTR, _owner())
    study._in_flight.add(trial._trial_id)
    try:
        raw = suggest_config(trial, study.space, study.encoding, validate=False)
    except Exception as exc:  # noqa: BLE001 - a bad proposal is a failed trial
        res = MeasureResult("", "infeasible", {}, 0.0, f"{type(exc).__name__}: {exc}")
        _tell(study, trial, res, bar)
        return None
    problems = study.space.violations(raw)
    if problems:
        text = ", ".join(f"{k}={study.space[k].format_value(v)}" for k, v in raw.items())
        _tell(study, trial, MeasureResult(text, "infeasible", {}, 0.0, "; ".join(problems)), bar)
        return None
    cfg = study.space.validate(raw)
    trial.set_user_attr("config", str(cfg))
    assert study._cache is not None
    hit = study._cache.get(str(cfg))
    if hit is not None:
        _tell(study, trial, hit[1], bar, cached_from=hit[0])
        return None
    return _Pending(trial, cfg)


def _run_batch(study: Study, pending: list[_Pending], n_jobs: int, bar: Any) -> None:
    if not pending:
        return
    first: dict[str, int] = {}
    for p in pending:
        first.setdefault(str(p.config), p.trial.number)
    unique = {str(p.config): p.config for p in pending}
    results = dict(zip(unique, study.measurer.measure_batch(list(unique.values()), n_jobs)))
    assert study._cache is not None
    for p in pending:
        text = str(p.config)
        res = results[text]
        if first[text] == p.trial.number:
            _tell(study, p.trial, res, bar)
            study._cache.setdefault(text, (p.trial.number, res))
        else:
            _tell(study, p.trial, res, bar, cached_from=first[text])


def _tell(study: Study, trial: Trial, res: MeasureResult, bar: Any,
          cached_from: int | None = None) -> None:
    metrics: dict[str, float] = {}
    bad: list[str] = []
    for k, v in res.metrics.items():
        try:
            metrics[str(k)] = float(v)
        except (TypeError, ValueError):
            bad.append(f"{k}={short_repr(v)} ({type(v).__name__})")
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
        # NaN and +-inf are refused alike: an "ok" objective is a finite number (a config
        # that timed out or cannot run is a "failed"/"infeasible" result, not inf)
        if study.objective in metrics and math.isfinite(metrics[study.objective]):
            value = metrics[study.objective]
        else:
            got = metrics.get(study.objective)
            attrs["status"] = "failed"
            attrs["error"] = (
                f"the objective {study.objective!r} is {'NaN' if got != got else got}"
                if study.objective in metrics
                else f"the measurement has no value of the objective "
                     f"{study.objective!r}; metrics: {sorted(metrics)}")
    for k, v in attrs.items():
        trial.set_user_attr(k, v)
    if attrs["status"] == "ok":
        study.optuna_study.tell(trial, value)
    else:
        study.optuna_study.tell(trial, state=TrialState.FAIL)
    study._in_flight.discard(trial._trial_id)
    study._run_outcomes.append((str(attrs["status"]), attrs["error"]))
    if attrs["status"] == "ok" and value < study._best:
        study._best = value
        bar.set_postfix(best=f"{value:.6g}", refresh=False)
    bar.update(1)
