from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
from optuna.trial import TrialState

SCRIPT = r'''
import sys, time
from autotile.measure import Measurer, MeasureResult
from autotile.space import Divisors, Permutation, Space
from autotile.search import open_storage, tune

space = Space([Divisors("a", 16), Divisors("b", 16), Permutation("order", ("x", "y", "z"))],
              constraints=[lambda c: c["a"] * c["b"] <= 32], name="toy")

class Slow(Measurer):
    metrics = ("cost",)
    objective = "cost"
    def _measure(self, config):
        with open("measured.log", "a") as f:
            f.write(str(config) + "\n")
        time.sleep(0.05)
        return MeasureResult(str(config), "ok", {"cost": float(space.index_of(config) % 17)})

storage = open_storage("autotile_studies.db", heartbeat_interval=1, grace_period=2)
tune(space, Slow(), sys.argv[1], budget=int(sys.argv[2]), seed=0, progress=False,
     n_jobs=int(sys.argv[3]), study_name="killed", storage=storage)
'''

BUDGET = 30


def _trials(tmp_path: Path):
    storage = f"sqlite:///{tmp_path / 'autotile_studies.db'}"
    return optuna.load_study(study_name="killed", storage=storage).get_trials()


def _run_killed_then_resume(tmp_path: Path, searcher: str, n_jobs: int, unique: bool = True):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    cmd = [sys.executable, str(script), searcher, str(BUDGET), str(n_jobs)]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env)
    log = tmp_path / "measured.log"
    deadline = time.time() + 60
    while time.time() < deadline:
        if log.exists() and len(log.read_text().splitlines()) >= 10:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _trials(tmp_path)
    assert 0 < len(before) < BUDGET
    running = {t.number: t.system_attrs.get("autotile:config") or t.user_attrs.get("config")
               for t in before if t.state == TrialState.RUNNING}
    subprocess.run(cmd, cwd=tmp_path, env=env, check=True, timeout=120)
    every = _trials(tmp_path)
    # The killed run's RUNNING trials went stale (no heartbeat for 2 s), were failed and
    # queued again with the same config (Optuna's RetryFailedTrialCallback).
    retries = {t.system_attrs["retry_history"][-1]: t for t in every
               if t.system_attrs.get("retry_history")}
    assert set(retries) == set(running)
    for number, retry in retries.items():
        assert every[number].state == TrialState.FAIL
        if running[number] is not None:
            assert retry.user_attrs["config"] == running[number]
    after = [t for t in every if t.number not in retries]
    assert len(after) == BUDGET
    assert all(t.state in (TrialState.COMPLETE, TrialState.FAIL) for t in after)
    configs = [t.user_attrs["config"] for t in after]
    if unique:
        assert len(set(configs)) == BUDGET
    for t in before:
        if t.state == TrialState.COMPLETE:
            assert every[t.number].value == t.value
    measured = log.read_text().splitlines()
    # Only the measurements cut short by the kill are repeated; a config
    # proposed twice by Optuna reuses the first measurement.
    assert len(measured) - len(set(measured)) <= len(running)
    assert set(measured) == {t.user_attrs["config"] for t in after
                             if t.user_attrs["status"] != "infeasible"}
    return running


def test_sigkill_mid_run_resumes_without_lost_or_duplicated_trials(tmp_path):
    running = _run_killed_then_resume(tmp_path, "random", n_jobs=1)
    assert len(running) == 1


def test_sigkill_resume_with_parallel_batches_and_tpe(tmp_path):
    running = _run_killed_then_resume(tmp_path, "tpe", n_jobs=2, unique=False)
    assert 1 <= len(running) <= 2
    after = _trials(tmp_path)
    for t in after:
        if "cached_from" in t.user_attrs:
            src = next(s for s in after if s.number == t.user_attrs["cached_from"])
            assert src.user_attrs["config"] == t.user_attrs["config"]
            assert src.user_attrs["metrics"] == t.user_attrs["metrics"]
