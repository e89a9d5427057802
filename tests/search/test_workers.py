"""Several workers on one study: exact budget, no repeats, nothing lost (issue 14).

The short version of ``benchmarks/workers/bench_workers.py``: three worker processes
share a study on SQLite, a journal file and PostgreSQL; one is SIGKILLed
mid-run; the others finish the study (the killed worker's trial is failed by
the heartbeat and retried), and a resume from another hostname finds it done.
"""

from __future__ import annotations

import threading
import time

import optuna
import pytest
from optuna.trial import TrialState

from autotile.search import open_storage, tune

from .conftest import ToyMeasurer, _load_benchmark, _small_constrained

bench = _load_benchmark("bench_workers")


@pytest.mark.parametrize(("kind", "searcher"), [
    ("sqlite", "model"), ("journal", "tpe"), ("postgresql", "evolutionary")])
def test_three_workers_one_killed_then_resumed_from_another_host(kind, searcher, tmp_path,
                                                                 request):
    pg = request.getfixturevalue("postgres_url") if kind == "postgresql" else None
    url = bench.storage_url(kind, tmp_path, pg)
    row = bench.one_run(url, tmp_path, run=1, n_workers=3, budget=24, kill=True,
                        searcher=searcher, sleep_s=0.02, grace_s=10)
    assert row["killed"]
    assert row["crashes"] == 0, row.get("errors")
    assert row["repeats"] == 0, row
    assert row["config_in_two_trials"] == 0, row
    assert row["lost"] == 0, row
    assert row["n_counted"] == 24 and row["budget_exact"]
    # only the killed worker's trials were abandoned (a live one never is)
    assert row["abandoned_by"] in ([], [row["victim_pid"]])
    assert row["n_trials"] == 24 + row["n_abandoned"]
    assert row["remeasured_after_kill"] <= row["n_abandoned"]
    assert row["resumed_measured"] == 0  # the survivors finished the study


def test_a_live_trial_of_another_handle_is_never_taken_over(tmp_path):
    """The issue's reproduction: ask() on one handle, tune() on another, then tell the first."""
    space = _small_constrained()
    url = f"sqlite:///{tmp_path / 's.db'}"
    first = optuna.create_study(study_name="shared", storage=open_storage(url))
    mine = first.ask()
    done = threading.Event()
    holder = {}

    def run() -> None:
        holder["study"] = tune(space, ToyMeasurer(space), "random", budget=5, seed=0,
                               storage=url, study_name="shared", progress=False, timeout=30)
        done.set()

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.time() + 30
    while time.time() < deadline:
        states = [t.state for t in first.get_trials(deepcopy=False)]
        if states.count(TrialState.COMPLETE) == 4:
            break
        time.sleep(0.05)
    assert not done.is_set()  # tune waits for the live trial it does not own
    mine.set_user_attr("by", "first handle")  # raised UpdateFinishedTrialError before
    first.tell(mine, 123.0)
    worker.join(30)
    assert done.is_set()
    trials = first.get_trials()
    assert len(trials) == 5
    assert trials[0].value == 123.0 and trials[0].user_attrs == {"by": "first handle"}
    assert len(holder["study"]) == 5


def test_a_config_whose_measuring_trial_was_abandoned_is_measured_once(tmp_path):
    """Two workers' trials wait for a trial measuring the same config; its worker dies.

    The first worker to claim after the abandonment measures the config in
    its waiting trial; the other worker's waiting trial, and the dead
    trial's retry, now wait for that one (before, each waiting trial measured
    the config: a repeat across live workers, seen in the journal-tpe run).
    """
    from autotile.search import create_study
    from autotile.search._optimize import (
        WAITS_FOR_ATTR,
        _claim,
        _Heartbeat,
        _pop,
        _prepare,
        _Waiting,
    )

    class Bar:
        def update(self, n): pass
        def set_postfix(self, **kw): pass

    space = _small_constrained()
    storage = open_storage(f"sqlite:///{tmp_path / 's.db'}", heartbeat_interval=1,
                           grace_period=2)
    handles = [create_study(space, ToyMeasurer(space), searcher="tpe", storage=storage,
                            study_name="s", seed=0) for _ in range(3)]
    ost = handles[0].optuna_study
    hbs = [_Heartbeat(storage) for _ in handles]  # no thread: beats are recorded by hand

    def new_trial(i, like=None):
        template = optuna.trial.create_trial(
            state=TrialState.WAITING, params=like.params if like else None,
            distributions=like.distributions if like else None)
        tid = storage.create_new_trial(ost._study_id, template_trial=template)
        assert _pop(handles[i], tid, hbs[i])
        handles[i]._cache = handles[i]._cache or {}
        return optuna.trial.Trial(handles[i].optuna_study, tid)

    got = _prepare(handles[0], new_trial(0), Bar(), hbs[0], {})  # the worker that dies
    holder = storage.get_trial(got.trial._trial_id)
    waiting: list[list[_Waiting]] = [[], [], []]
    for i in (1, 2):
        w = _prepare(handles[i], new_trial(i, holder), Bar(), hbs[i],
                     {str(got.config): holder.number})
        assert isinstance(w, _Waiting) and w.holder == holder.number
        waiting[i].append(w)
    time.sleep(3.5)  # worker 0 died: no heartbeat for the grace period
    for i in (1, 2):
        storage.record_heartbeat(waiting[i][0].pending.trial._trial_id)
    pending, more = _claim(handles[1], 3, 1, Bar(), hbs[1], waiting[1])
    assert storage.get_trial(holder._trial_id).state == TrialState.FAIL
    assert [p.trial.number for p in pending] == [waiting_number := pending[0].trial.number]
    assert storage.get_trial(pending[0].trial._trial_id).system_attrs[WAITS_FOR_ATTR] is None
    pending, more = _claim(handles[2], 3, 1, Bar(), hbs[2], waiting[2])
    assert pending == [] and more
    # the other worker's waiting trial and the dead trial's retry wait for the one measuring
    assert len(waiting[2]) == 2
    assert {w.holder for w in waiting[2]} == {waiting_number}
    assert all(storage.get_trial(w.pending.trial._trial_id).system_attrs[WAITS_FOR_ATTR]
               == waiting_number for w in waiting[2])
