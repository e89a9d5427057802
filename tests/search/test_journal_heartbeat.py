"""The journal storage's heartbeat: abandoned trials are stale, a stalled log is not (issue 14)."""

from __future__ import annotations

import time

import optuna
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock
from optuna.trial import TrialState

from autotile.search._storage import HeartbeatJournalStorage


def _storage(path, grace=2):
    backend = JournalFileBackend(str(path), lock_obj=JournalFileOpenLock(str(path),
                                                                         grace_period=3))
    return HeartbeatJournalStorage(backend, heartbeat_interval=1, grace_period=grace)


def _running_trial(storage):
    study = optuna.create_study(storage=storage, study_name="s")
    trial = study.ask()
    storage.record_heartbeat(trial._trial_id)
    return study._study_id, trial._trial_id


def test_a_silent_trial_is_stale_after_the_grace_period(tmp_path):
    worker = _storage(tmp_path / "j.log")
    study_id, tid = _running_trial(worker)
    observer = _storage(tmp_path / "j.log")
    assert observer._get_stale_trial_ids(study_id) == []  # first seen now
    time.sleep(1.2)
    worker.record_heartbeat(tid)  # alive: its heartbeat changes
    assert observer._get_stale_trial_ids(study_id) == []
    time.sleep(2.5)  # the worker died: no heartbeat for more than 2 s
    assert observer._get_stale_trial_ids(study_id) == [tid]
    assert observer.get_trial(tid).state == TrialState.RUNNING  # judging changes nothing


def test_time_when_the_log_takes_no_writes_does_not_count(tmp_path):
    path = tmp_path / "j.log"
    worker = _storage(path)
    study_id, tid = _running_trial(worker)
    observer = _storage(path)
    assert observer._get_stale_trial_ids(study_id) == []
    # a writer died holding the journal's lock: nobody can append (the worker's heartbeats
    # included) until the lock's grace period (3 s here) breaks it
    (tmp_path / "j.log.lock").write_text("")
    time.sleep(2.5)
    t0 = time.monotonic()
    assert observer._get_stale_trial_ids(study_id) == []  # its ping waited for the lock
    assert time.monotonic() - t0 > 1.0
    assert not (tmp_path / "j.log.lock").exists()


def test_retried_scan_reads_each_trial_once_and_matches_retried_numbers():
    from optuna.trial import TrialState, create_trial

    from autotile.search._storage import RetriedScan, retried_numbers

    def trial(number, history=None):
        t = create_trial(state=TrialState.WAITING,
                         system_attrs={"retry_history": history} if history else {})
        t.number = number
        return t

    trials = [trial(0), trial(1), trial(2, [0]), trial(3)]
    scan = RetriedScan()
    assert scan.update(trials) == {0} == retried_numbers(trials)
    trials[0].system_attrs["retry_history"] = [3]     # never happens: not read again
    trials += [trial(4, [0, 2]), trial(5)]
    assert scan.update(trials) == {0, 2}
    assert retried_numbers(trials) == {0, 2, 3}
    assert scan.update(trials[:2]) == {3}             # a shorter list: read from the start
