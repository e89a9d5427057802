"""``autotile tune`` and ``autotile worker`` (issue 14)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
from optuna.trial import TrialState

from autotile.__main__ import main
from autotile.search import open_storage, tune

from .conftest import ToyMeasurer, _small_constrained

REPO = Path(__file__).resolve().parents[2]


def _trials(storage: str, name: str):
    return optuna.load_study(study_name=name, storage=open_storage(storage)).get_trials()


def test_tune_then_worker_joins_the_finished_study(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["tune", "--n", "8", "--measurer", "live", "--searcher", "random",
                 "--budget", "12", "--no-progress", "--storage", "runs.db"]) == 0
    out = capsys.readouterr().out
    name = "gemm_n8-random-misses-seed0"
    assert f"study {name!r} in runs.db (" in out
    assert f"autotile worker --storage runs.db --study-name {name}" in out
    assert "12 of 12 trials finished" in out
    study = optuna.load_study(study_name=name, storage=open_storage("runs.db"))
    assert study.metric_names == ["misses"]
    assert study.user_attrs["autotile:cli"] == {
        "space": "gemm", "n": 8, "measurer": "live", "objective": None, "searcher": "random",
        "seed": 0, "budget": 12}
    # a worker rebuilds the space, measurer and searcher from the study; nothing is left
    assert main(["worker", "--storage", "runs.db", "--no-progress"]) == 0
    assert ("  the study already holds 12 finished trials >= its budget 12: nothing to run\n"
            in capsys.readouterr().out)
    assert len(_trials("runs.db", name)) == 12


def test_worker_refuses_a_study_not_started_by_tune(tmp_path, capsys):
    space = _small_constrained()
    db = str(tmp_path / "s.db")
    tune(space, ToyMeasurer(space), budget=2, storage=db, study_name="plain", progress=False)
    tune(space, ToyMeasurer(space), budget=2, storage=db, study_name="other", progress=False)
    assert main(["worker", "--storage", db]) == 2
    assert "pass --study-name: " in capsys.readouterr().err
    assert main(["worker", "--storage", db, "--study-name", "plain"]) == 2
    assert "study 'plain' was not started by `autotile tune`" in capsys.readouterr().err
    assert main(["worker", "--storage", db, "--study-name", "nope"]) == 2
    assert "no study 'nope'" in capsys.readouterr().err


def test_timeout_and_ctrl_c_leave_the_study_resumable(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    log = str(tmp_path / "runs.log")  # a journal file
    name = "big"
    cmd = [sys.executable, "-m", "autotile", "tune", "--n", "64", "--measurer", "live",
           "--searcher", "random", "--budget", "100000", "--storage", log, "--study-name",
           name, "--no-progress", "--n-jobs", "2"]
    r = subprocess.run([*cmd, "--timeout", "1"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "resume with:  autotile worker --storage" in r.stdout
    after_timeout = _trials(log, name)
    assert after_timeout and not [t for t in after_timeout if t.state == TrialState.RUNNING]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 60
    while time.time() < deadline and len(_trials(log, name)) < len(after_timeout) + 4:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted after" in err and "went back to the study. Resume with:" in err
    trials = _trials(log, name)
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    waiting = [t for t in trials if t.state == TrialState.WAITING]
    assert len(waiting) <= 2  # at most one batch handed back (with its config, if chosen)
    held = {t.number: t.system_attrs.get("autotile:config") for t in waiting}
    # a resumed worker takes the handed-back trials first; under load one 1-second run may
    # end (its timeout) before it reaches the second, so resume until none waits
    for _ in range(10):
        r = subprocess.run([sys.executable, "-m", "autotile", "worker", "--storage", log,
                            "--timeout", "1", "--no-progress"], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        final = _trials(log, name)
        if not [t for t in final if t.state == TrialState.WAITING]:
            break
    assert not [t for t in final if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert {t.number for t in waiting} <= {t.number for t in final if t.state.is_finished()}
    for t in final:
        if held.get(t.number):
            assert t.user_attrs["config"] == held[t.number]  # measured as it was handed back


def test_tune_refuses_n_with_a_file_and_defaults_n_to_64(tmp_path, capsys, monkeypatch):
    # --n was silently ignored with --table / --kernel-tuner (the file fixes the space)
    monkeypatch.chdir(tmp_path)
    kt = str(REPO / "tests" / "data" / "pnpoly__RTX_3090.json.gz")
    assert main(["tune", "--table", "gemm128_truth.npz", "--n", "128", "--budget", "2",
                 "--storage", "runs.db"]) == 2
    assert capsys.readouterr().err == (
        "autotile tune: error: --n sets the size of --space gemm; --table gemm128_truth.npz "
        "replays the space recorded in its file, so --n cannot be used with it, got --n 128 "
        "(drop --n)\n")
    assert main(["tune", "--kernel-tuner", kt, "--n", "64", "--budget", "2",
                 "--storage", "runs.db"]) == 2
    assert capsys.readouterr().err == (
        f"autotile tune: error: --n sets the size of --space gemm; --kernel-tuner {kt} "
        "replays the space recorded in its file, so --n cannot be used with it, got --n 64 "
        "(drop --n)\n")
    assert not (tmp_path / "runs.db").exists()
    assert main(["tune", "--searcher", "random", "--budget", "2", "--no-progress",
                 "--storage", "runs.db"]) == 0
    study = optuna.load_study(study_name="gemm_n64-random-misses-seed0",
                              storage=open_storage("runs.db"))
    assert study.user_attrs["autotile:cli"]["n"] == 64 and len(study.trials) == 2


def test_tune_with_a_budget_past_the_space_says_it_stopped_when_exhausted(tmp_path, capsys,
                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    kt = str(REPO / "tests" / "data" / "kt_tiny.json")
    assert main(["tune", "--kernel-tuner", kt, "--budget", "100000", "--searcher", "grid",
                 "--no-progress", "--storage", "runs.db"]) == 0
    out = capsys.readouterr().out
    assert "(14 configs, budget 100000" in out
    assert "14 of 100000 trials finished (" in out
    assert "stopped: every config of the space is measured" in out
    assert "resume with" not in out
