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
