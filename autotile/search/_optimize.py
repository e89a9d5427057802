"""The optimize loop of a :class:`~autotile.search.Study`: workers, batches, measurement.

:func:`optimize` runs a study until it holds ``n_trials`` finished trials.
Any number of workers (processes, on one machine or many) may run it on the
same storage at once. Each step that decides what a worker does next is
taken under the study's :class:`~autotile.search._lock.StudyLock`:

1. trials whose heartbeat stopped for the storage's grace period are failed
   and queued again as WAITING trials with the same config
   (:func:`optuna.storages.fail_stale_trials` and
   :class:`~autotile.search._storage.RetryStaleTrial`);
2. the worker takes a WAITING trial (an abandoned or interrupted one) or,
   while the study holds fewer than ``n_trials`` trials, creates one; it
   records the trial's heartbeat and moves it to RUNNING (Optuna's atomic
   WAITING -> RUNNING step), so every trial has exactly one owner and the
   budget is exact;
3. the searcher chooses the config while every other worker's running
   trials are visible to it (searchers skip configs already taken); a
   config another trial already measured reuses that measurement, and one
   another worker is measuring waits for that result (the waiting trial
   records which trial it waits for in the system attribute
   ``"autotile:waits_for"``). When the trial measuring a config is
   abandoned, exactly one of the trials waiting for it measures the config
   (one of the first worker's to claim after the abandonment); the others
   then wait for that one.

Measurement then runs outside the lock, in parallel with joblib, while a
thread records the heartbeat of every trial in flight. A worker that is
interrupted (``KeyboardInterrupt``) hands its trials in flight back as
WAITING, so the study resumes without waiting for the grace period. As in
Optuna's ``study/_optimize.py`` the loop is a set of functions of the
study, whose state (the measurement cache, trials in flight, the best value,
this run's outcomes) lives on the :class:`~autotile.search.Study`.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import fail_stale_trials
from optuna.storages._heartbeat import is_heartbeat_enabled

try:  # Study.tell without its deep copy of the result (see _finish)
    from optuna.study._tell import _tell_with_warning as _optuna_tell
except ImportError:  # pragma: no cover - a future Optuna without it
    _optuna_tell = None  # type: ignore[assignment]
from optuna.trial import FrozenTrial, Trial, TrialState

from autotile.errors import MeasureError
from autotile.measure import MeasureResult
from autotile.search._base import SpaceSearcher
from autotile.search._params import suggest_config, trial_config_text
from autotile.search._storage import RetriedScan, RetryStaleTrial, retried_numbers
from autotile.search._study_args import short_repr
from autotile.space import Config

if TYPE_CHECKING:
    from autotile.search._study import Study

__all__ = ["optimize", "quiet_optuna", "FINISHED", "counted_trials", "WORKER_ATTR"]

#: Trial states that count towards ``n_trials``.
FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
#: Distinct errors quoted when every trial of a run failed.
_N_ERRORS_SHOWN = 3
#: System attribute naming the worker (``host:pid``) that runs a trial.
WORKER_ATTR = "autotile:worker"
#: System attribute of a trial waiting for another trial's measurement of its config: the
#: number of the trial it waits for (None once the trial measures its config itself).
WAITS_FOR_ATTR = "autotile:waits_for"
#: System attribute of trials run by autotile before heartbeats (``host:pid``).
_LEGACY_OWNER = "autotile:owner"
#: Longest pause (seconds) while waiting for other workers' trials.
_MAX_POLL_S = 1.0


@contextlib.contextmanager
def quiet_optuna() -> Iterator[None]:
    """Silence Optuna's per-trial INFO logging and experimental warnings in the block."""
    old = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(max(old, optuna.logging.WARNING))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            yield
    finally:
        optuna.logging.set_verbosity(old)


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def counted_trials(trials: list[FrozenTrial]) -> list[FrozenTrial]:
    """The trials that count: all but those abandoned and queued again (see ``retry_history``)."""
    retried = retried_numbers(trials)
    return [t for t in trials if t.number not in retried]


class _Pending(NamedTuple):
    trial: Trial
    config: Config


class _Heartbeat:
    """Records the heartbeat of every trial in flight, every ``interval`` seconds."""

    def __init__(self, storage: Any) -> None:
        self.storage = storage
        self.enabled = is_heartbeat_enabled(storage)
        self.interval = float(storage.get_heartbeat_interval()) if self.enabled else 0.0
        self._ids: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Heartbeat:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="autotile-heartbeat",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def beat(self, trial_id: int) -> None:
        if self.enabled:
            self.storage.record_heartbeat(trial_id)

    def add(self, trial_id: int) -> None:
        with self._lock:
            self._ids.add(trial_id)

    def discard(self, trial_id: int) -> None:
        with self._lock:
            self._ids.discard(trial_id)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                ids = sorted(self._ids)
            for tid in ids:
                with contextlib.suppress(Exception):  # a missed beat is retried next time
                    self.storage.record_heartbeat(tid)


class _Waiting(NamedTuple):
    """A trial whose config another trial (``holder``) is measuring: it waits for that result."""

    pending: _Pending
    holder: int


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
    if batch > n_trials:  # no batch can hold more than the budget: start no idle workers
        batch = n_jobs = n_trials
    t0 = time.perf_counter()
    st = study.optuna_study
    study._run_outcomes = []
    timed_out = False
    waiting: list[_Waiting] = []
    with quiet_optuna(), _Heartbeat(st._storage) as hb:
        done = _n_finished(study)
        if done >= n_trials:
            warnings.warn(
                f"study {study.study_name!r} already holds {done} finished trials >= "
                f"n_trials={n_trials}: nothing to run (n_trials is the study's total budget, "
                f"not trials to add; pass n_trials > {done} to run more)", UserWarning,
                stacklevel=3)
        study._best = study.best_value
        bar = tqdm(total=n_trials, initial=min(done, n_trials), unit="trial",
                   desc=str(study.searcher), disable=not progress, dynamic_ncols=True)
        poll = 0.05
        try:
            while True:
                if timeout is not None and time.perf_counter() - t0 >= timeout:
                    timed_out = True
                    break
                deadline = None if timeout is None else t0 + timeout
                pending, more = _claim(study, n_trials, batch, bar, hb, waiting, deadline)
                if pending:
                    _run_batch(study, pending, n_jobs, bar, hb)
                    poll = 0.05
                elif not more:
                    break
                else:  # other workers' trials are running: wait for them (or their heartbeat)
                    time.sleep(poll)
                    poll = min(2 * poll, _MAX_POLL_S, max(hb.interval / 2, 0.05))
        except BaseException:
            _hand_back(study, hb)
            raise
        finally:
            bar.close()
        if waiting:  # timed out while waiting for another worker's result
            _hand_back(study, hb)
        if timeout is not None and time.perf_counter() - t0 >= timeout \
                and _n_finished(study) < n_trials:
            timed_out = True
    _report_run(study, n_trials, timed_out)
    study._stop_reason = _stop_reason(study, n_trials, timed_out)
    return study


def _stop_reason(study: Study, n_trials: int, timed_out: bool) -> str:
    """Why the run ended: ``"budget"``, ``"exhausted"``, ``"timeout"`` or ``"stopped"``.

    See :attr:`Study.stop_reason`.

    Warns when a searcher that may repeat configs (an Optuna sampler) stopped
    before the budget because every config of the space was measured.
    """
    done = _n_finished(study)
    if done >= n_trials:
        return "budget"
    if timed_out:
        return "timeout"
    st = study.optuna_study
    if not _exhausted(study, st._storage.get_all_trials(st._study_id, deepcopy=False)):
        return "stopped"
    if not (isinstance(study.searcher, SpaceSearcher) and study.searcher.unique):
        warnings.warn(
            f"study {study.study_name!r}: stopped after {done} of n_trials={n_trials} trials: "
            f"every one of the {len(study.space)} configs of space "
            f"{study.space.name or 'space'!r} is measured, so further trials of "
            f"{study.searcher} could only reuse stored measurements", RuntimeWarning,
            stacklevel=4)
    return "exhausted"


def _hand_back(study: Study, hb: _Heartbeat) -> None:
    """Put this worker's trials in flight back to WAITING, for another worker or a resume."""
    storage = study.optuna_study._storage
    for tid in sorted(study._in_flight):
        hb.discard(tid)
        with contextlib.suppress(Exception):
            storage.set_trial_state_values(tid, TrialState.WAITING)
    study._in_flight.clear()


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
    warnings.warn(nothing_measured_message(study, outcomes), RuntimeWarning, stacklevel=4)


def nothing_measured_message(study: Study, outcomes: list[tuple[str, Any]]) -> str:
    """The warning for a run whose trials all failed or were infeasible.

    Parameters
    ----------
    study : Study
        The study the run belongs to.
    outcomes : list of (status, error)
        Every trial of the run (``compare`` passes its whole run, not the last
        chunk, so the count is the run's).

    Returns
    -------
    str
        The count, the distinct errors (the first few) and what to check.
    """
    errors: list[str] = []
    for _, err in outcomes:
        text = str(err) if err else "no error recorded"
        if text not in errors:
            errors.append(text)
    shown = "; ".join(repr(e) for e in errors[:_N_ERRORS_SHOWN])
    more = f" (and {len(errors) - _N_ERRORS_SHOWN} more)" if len(errors) > _N_ERRORS_SHOWN \
        else ""
    return (
        f"study {study.study_name!r}: all {len(outcomes)} trials of this run failed or were "
        f"infeasible, so nothing was measured; distinct errors: {shown}{more}. Check that "
        f"the measurer was built for this space and reports the objective "
        f"{study.objective!r}")




def _stored_result(t: FrozenTrial) -> MeasureResult | None:
    ua = t.user_attrs
    if "config" not in ua or ua.get("status") not in ("ok", "failed", "infeasible"):
        return None
    if "cached_from" in ua:
        return None
    return MeasureResult(str(ua["config"]), ua["status"], dict(ua.get("metrics") or {}),
                         float(ua.get("wall_time_s", 0.0)), ua.get("error"))


class _Scan:
    """What the claim loop knows of a study's trial list, kept between claims.

    ``settled``: the trials before it are finished (finished trials never
    change) and their measurements are in the study's cache; ``retried``:
    :class:`RetriedScan` of the list. A claim then reads only the trials
    from ``settled`` on (with one worker: the last one or two), not the
    whole study.
    """

    def __init__(self) -> None:
        self.settled = 0
        self.retried = RetriedScan()
        #: whether each config text of the cache is a valid config (see _all_measured)
        self.valid: dict[str, bool] = {}


def _sync_cache(study: Study, trials: list[FrozenTrial]) -> tuple[set[int], int]:
    """Add every finished measurement of the study (any worker's) to the cache.

    Returns the numbers of the retried trials and ``k``: ``trials[:k]`` are
    finished, counted or retried alike (see :class:`_Scan`).
    """
    if study._cache is None or study._scan is None:
        study._cache, study._scan = {}, _Scan()
    cache, scan = study._cache, study._scan
    retried = scan.retried.update(trials)
    k = scan.settled
    if k > len(trials) or (k and trials[k - 1].number != k - 1):
        k = 0  # not the list seen before (trial numbers are list positions): read it all
    for t in trials[k:]:
        if t.state in FINISHED and str(t.user_attrs.get("config")) not in cache:
            res = _stored_result(t)
            if res is not None:
                cache[res.config] = (t.number, res)
    while k < len(trials) and trials[k].state in FINISHED:
        k += 1
    scan.settled = k
    return retried, k


def _n_finished(study: Study) -> int:
    trials = study.optuna_study.get_trials(deepcopy=False)
    return sum(t.state in FINISHED for t in counted_trials(trials))


def _fail_stale(study: Study, trials: list[FrozenTrial]) -> bool:
    """Fail abandoned trials and queue them again; True if anything changed.

    Also queues trials failed as stale by a worker that died before its
    retry callback ran (FAIL, never told by autotile, not yet queued again).
    """
    st = study.optuna_study
    storage = st._storage
    if not is_heartbeat_enabled(storage):
        return False
    if not any(t.state == TrialState.RUNNING for t in trials) and not any(
            t.state == TrialState.FAIL and "status" not in t.user_attrs for t in trials):
        return False
    before = len(trials)
    fail_stale_trials(st)
    callback = storage.get_heartbeat_stale_trial_callback() if hasattr(
        storage, "get_heartbeat_stale_trial_callback") else None
    for t in trials:  # left RUNNING by autotile before heartbeats: nothing will finish them
        if t.state == TrialState.RUNNING and _LEGACY_OWNER in t.system_attrs:
            with contextlib.suppress(UpdateFinishedTrialError):
                storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
    if isinstance(callback, RetryStaleTrial):
        now = storage.get_all_trials(st._study_id, deepcopy=False)
        retried = retried_numbers(now)
        for t in now:
            if t.state == TrialState.FAIL and "status" not in t.user_attrs \
                    and t.number not in retried:
                callback(st, t)
    return len(storage.get_all_trials(st._study_id, deepcopy=False)) != before


def _exhausted(study: Study, trials: list[FrozenTrial]) -> bool:
    """Whether every config of the space is in the study, so no trial can bring news.

    For a searcher without repeats (``SpaceSearcher.unique``) a config in any
    trial (running ones included) counts; for any other searcher (Optuna's
    samplers), only the configs already measured (the study's cache), so the
    study stops once further trials could only reuse stored measurements.
    """
    sampler = study.searcher
    if not (isinstance(sampler, SpaceSearcher) and sampler.unique):
        return _all_measured(study)
    seen = set()
    for t in trials:
        text = trial_config_text(t)
        if text is not None:
            seen.add(text)
    return len(seen) >= len(study.space)


def _all_measured(study: Study) -> bool:
    """Whether the study's cache holds a measurement of every config of the space.

    The cache may also hold proposals that violate the constraints (told
    infeasible), so its texts are checked once each (``_Scan.valid``).
    """
    cache, scan = study._cache, study._scan
    n = len(study.space)
    if cache is None or scan is None or len(cache) < n:
        return False
    valid = scan.valid
    for text in cache:
        if text not in valid:
            try:
                study.space.parse(text)
                valid[text] = True
            except Exception:  # noqa: BLE001 - not a config of the space
                valid[text] = False
    return bool(sum(valid[text] for text in cache) >= n)


def _pop(study: Study, trial_id: int, hb: _Heartbeat) -> bool:
    """Take WAITING trial ``trial_id`` (heartbeat first, then WAITING -> RUNNING); True if won."""
    storage = study.optuna_study._storage
    hb.beat(trial_id)
    study._in_flight.add(trial_id)  # first, so that an interrupt right after hands it back
    try:
        # who runs it, for people reading the study (abandonment is the heartbeat's call);
        # written before the trial is RUNNING, so that a worker killed right after the
        # WAITING -> RUNNING step never leaves an abandoned trial without its owner. No
        # other autotile worker can take the trial meanwhile (the study lock is held).
        storage.set_trial_system_attr(trial_id, WORKER_ATTR, _worker_id())
        won = storage.set_trial_state_values(trial_id, TrialState.RUNNING)
    except UpdateFinishedTrialError:
        won = False
    if won:
        hb.add(trial_id)
    else:
        study._in_flight.discard(trial_id)
        # taken by a plain Optuna ask() of another handle, which records no owner
        with contextlib.suppress(Exception):
            storage.set_trial_system_attr(trial_id, WORKER_ATTR, None)
    return bool(won)


def _claim(study: Study, n_trials: int, want: int, bar: Any, hb: _Heartbeat,
           waiting: list[_Waiting], deadline: float | None = None
           ) -> tuple[list[_Pending], bool]:
    """Under the study lock, take up to ``want`` trials to measure.

    Returns the trials to measure now, and whether this worker has more to do
    (trials of other workers still running, or trials waiting for a result).
    Past ``deadline`` (a ``time.perf_counter()`` value) no new trial is taken:
    a searcher repeating measured configs (told at once, from the cache) can
    otherwise keep this loop busy for the whole budget.
    """
    st = study.optuna_study
    storage = st._storage
    with study._lock:
        trials = storage.get_all_trials(st._study_id, deepcopy=False)
        if _fail_stale(study, trials):
            trials = storage.get_all_trials(st._study_id, deepcopy=False)
        retried, k = _sync_cache(study, trials)
        # the trials after the settled (finished) prefix that count; the prefix's count
        counted = [t for t in trials[k:] if t.number not in retried]
        n_settled = k - sum(1 for r in retried if r < k)
        pending: list[_Pending] = []
        # the trial measuring each config in flight (any worker's): a RUNNING trial that
        # does not itself wait for another one
        running: dict[str, int] = {}
        for t in counted:
            if t.state == TrialState.RUNNING and t.system_attrs.get(WAITS_FOR_ATTR) is None:
                text = trial_config_text(t)
                if text is not None:
                    running.setdefault(text, t.number)
        # trials waiting for another trial's result
        still: list[_Waiting] = []
        for w in sorted(waiting, key=lambda w: w.pending.trial.number):
            text = str(w.pending.config)
            hit = study._cache.get(text) if study._cache else None
            if hit is not None:
                _tell(study, w.pending.trial, hit[1], bar, hb, cached_from=hit[0])
                continue
            holder = running.get(text)
            if holder is not None and holder != w.pending.trial.number:
                still.append(w if holder == w.holder else _Waiting(w.pending, holder))
                if holder != w.holder:
                    storage.set_trial_system_attr(w.pending.trial._trial_id, WAITS_FOR_ATTR,
                                                  holder)
                continue
            # nobody measures the config any more (its trial was abandoned, or failed to
            # record): measure it here, and say so under the lock, so that the other trials
            # waiting for it (this worker's or another's) now wait for this one instead of
            # measuring it too
            storage.set_trial_system_attr(w.pending.trial._trial_id, WAITS_FOR_ATTR, None)
            running[text] = w.pending.trial.number
            pending.append(w.pending)
        waiting[:] = still
        queue = [t._trial_id for t in counted if t.state == TrialState.WAITING]
        n_alloc = n_settled + len(counted)
        full = n_alloc >= n_trials or (n_trials >= len(study.space) and _exhausted(study, trials))
        while len(pending) < want:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            tid = None
            while queue and tid is None:
                cand = queue.pop(0)
                tid = cand if _pop(study, cand, hb) else None
            if tid is None:
                if full:
                    break
                template = optuna.trial.create_trial(state=TrialState.WAITING)
                tid = storage.create_new_trial(st._study_id, template_trial=template)
                n_alloc += 1
                full = n_alloc >= n_trials
                if not _pop(study, tid, hb):
                    continue
            st._thread_local.cached_all_trials = None
            got = _prepare(study, Trial(st, tid), bar, hb, running)
            if isinstance(got, _Waiting):
                waiting.append(got)
            elif got is not None:
                pending.append(got)
                running.setdefault(str(got.config), got.trial.number)
            if not full and n_trials >= len(study.space):
                full = _exhausted(study, storage.get_all_trials(st._study_id, deepcopy=False))
        if pending or waiting:
            return pending, True
        others = [t for t in counted if t.state == TrialState.RUNNING
                  and t._trial_id not in study._in_flight]
        left = bool(queue) or bool(others and hb.enabled)
        return pending, left


def _prepare(study: Study, trial: Trial, bar: Any, hb: _Heartbeat,
             running: dict[str, int]) -> _Pending | _Waiting | None:
    """Suggest the trial's config; tell it at once if infeasible or already measured.

    Returns the trial to measure, a :class:`_Waiting` when another running
    trial holds the same config, or None when the trial was told here.
    """
    try:
        raw = suggest_config(trial, study.space, study.encoding, validate=False)
    except Exception as exc:  # noqa: BLE001 - a bad proposal is a failed trial
        res = MeasureResult("", "infeasible", {}, 0.0, f"{type(exc).__name__}: {exc}")
        _tell(study, trial, res, bar, hb)
        return None
    problems = study.space.violations(raw)
    if problems:
        text = ", ".join(f"{k}={study.space[k].format_value(v)}" for k, v in raw.items())
        _tell(study, trial, MeasureResult(text, "infeasible", {}, 0.0, "; ".join(problems)),
              bar, hb)
        return None
    cfg = study.space.validate(raw)
    trial.set_user_attr("config", str(cfg))
    assert study._cache is not None
    hit = study._cache.get(str(cfg))
    if hit is not None:
        _tell(study, trial, hit[1], bar, hb, cached_from=hit[0])
        return None
    holder = running.get(str(cfg))
    if holder is not None and holder != trial.number:
        # recorded under the lock: other workers must not take this trial for the one that
        # measures the config (see _claim)
        trial.storage.set_trial_system_attr(trial._trial_id, WAITS_FOR_ATTR, holder)
        return _Waiting(_Pending(trial, cfg), holder)
    if trial._cached_frozen_trial.system_attrs.get(WAITS_FOR_ATTR) is not None:
        # a retry of (or a trial handed back while) waiting: it measures its config now
        trial.storage.set_trial_system_attr(trial._trial_id, WAITS_FOR_ATTR, None)
    return _Pending(trial, cfg)


def _run_batch(study: Study, pending: list[_Pending], n_jobs: int, bar: Any,
               hb: _Heartbeat) -> None:
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
            if _tell(study, p.trial, res, bar, hb):
                study._cache.setdefault(text, (p.trial.number, res))
        else:
            _tell(study, p.trial, res, bar, hb, cached_from=first[text])


def _finish(ostudy: optuna.Study, trial: Trial, value: float | None,
            state: TrialState | None) -> None:
    """``ostudy.tell(trial, value, state)`` without the deep copy of the trial it returns.

    Optuna's ``Study.tell`` is its ``_tell_with_warning`` followed by a deep copy of
    the finished trial, which the optimize loop never reads (a sixth of a replayed
    trial's cost); Optuna versions without that function get ``Study.tell``.
    """
    if _optuna_tell is None:
        ostudy.tell(trial, value, state=state)
    else:
        _optuna_tell(study=ostudy, trial=trial, value_or_values=value, state=state)


def _tell(study: Study, trial: Trial, res: MeasureResult, bar: Any, hb: _Heartbeat,
          cached_from: int | None = None) -> bool:
    """Record ``res`` on ``trial`` and finish it; False if another worker had failed it.

    A trial is failed by another worker only when its heartbeat stopped for
    the grace period (this worker stalled); its measurement then goes to the
    trial's retry if that is still WAITING.
    """
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
    try:
        for k, v in attrs.items():
            trial.set_user_attr(k, v)
        if attrs["status"] == "ok":
            _finish(study.optuna_study, trial, value, None)
        else:
            _finish(study.optuna_study, trial, None, TrialState.FAIL)
    except (UpdateFinishedTrialError, ValueError) as exc:
        if isinstance(exc, ValueError) and "Cannot tell" not in str(exc):
            raise
        hb.discard(trial._trial_id)
        study._in_flight.discard(trial._trial_id)
        return _adopt_retry(study, trial.number, res, bar, hb, cached_from)
    hb.discard(trial._trial_id)  # only now: an interrupt during the tell hands it back
    study._in_flight.discard(trial._trial_id)
    study._run_outcomes.append((str(attrs["status"]), attrs["error"]))
    if attrs["status"] == "ok" and value < study._best:
        study._best = value
        bar.set_postfix(best=f"{value:.6g}", refresh=False)
    bar.update(1)
    return True


def _adopt_retry(study: Study, number: int, res: MeasureResult, bar: Any, hb: _Heartbeat,
                 cached_from: int | None) -> bool:
    """Tell ``res`` to the WAITING retry of abandoned trial ``number``, if this worker wins it."""
    st = study.optuna_study
    with study._lock:
        for t in st._storage.get_all_trials(st._study_id, deepcopy=False,
                                            states=(TrialState.WAITING,)):
            if number in (t.system_attrs.get("retry_history") or ()) and _pop(
                    study, t._trial_id, hb):
                st._thread_local.cached_all_trials = None
                trial = Trial(st, t._trial_id)
                suggest_config(trial, study.space, study.encoding, validate=False)
                return _tell(study, trial, res, bar, hb, cached_from)
    warnings.warn(
        f"study {study.study_name!r}: trial {number} was failed as abandoned while this worker "
        f"measured it (no heartbeat for the storage's grace period); another worker measures "
        f"its retry", RuntimeWarning, stacklevel=2)
    return False
