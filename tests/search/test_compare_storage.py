"""``compare`` keeps its runs in storage: resumable after Ctrl-C, readable by Optuna's tools."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import optuna
import pytest

from autotile.measure import GroundTruth, ReplayMeasurer
from autotile.search import compare
from autotile.space import Choice, Space

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def _cmd(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "autotile", "compare", "--budget", "40", "--seeds", "2",
            "--searchers", "model,evolutionary", "--n-jobs", "2", "--out", str(out),
            *extra]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT))


def _summary(folder: Path) -> tuple[list[dict[str, object]], dict[str, object]]:
    data = json.loads((folder / "result.json").read_text())
    rows = [{k: v for k, v in r.items() if k != "run_time_s"} for r in data["summary"]]
    return rows, {"histories": data["histories"], "best": data["best_configs"]}


def _stored_runs(db: Path) -> int:
    """Complete runs in the SQLite file, read-only (no second writer while compare runs)."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            rows = con.execute("SELECT value_json FROM study_user_attributes WHERE key = "
                               "'autotile:compare'").fetchall()
    except sqlite3.Error:
        return 0
    return sum(1 for (v,) in rows if json.loads(v).get("complete"))


def test_ctrl_c_then_the_same_command_resumes_to_the_uninterrupted_report(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    db = a / "studies.db"
    proc = subprocess.Popen(_cmd(a), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and _stored_runs(db) < 1:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole process group, workers too
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    kept = _stored_runs(db)
    assert 1 <= kept < 4, "the interrupt came after every run had finished"
    assert "Run the same command again to resume" in err and "Traceback" not in err
    assert json.loads((a / "run.json").read_text())["status"] == "running"
    assert not (a / "report.html").exists()

    again = subprocess.run(_cmd(a, "--no-progress"), env=_env(), capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert (f"(resuming an interrupted run: {kept} finished run"
            f"{'s are' if kept != 1 else ' is'} stored and will be loaded, the rest run)"
            in again.stdout)
    assert f"({kept} runs loaded from the storage)" in again.stdout
    whole = subprocess.run(_cmd(b, "--no-progress"), env=_env(), capture_output=True,
                           text=True, timeout=300)
    assert whole.returncode == 0, whole.stderr
    assert _summary(a) == _summary(b)
    assert json.loads((a / "run.json").read_text())["status"] == "done"
    # a third run into a finished folder is refused: the report is kept
    third = subprocess.run(_cmd(a, "--no-progress"), env=_env(), capture_output=True,
                           text=True, timeout=120)
    assert third.returncode == 2 and "holds a finished report" in third.stderr
    assert "pass --force" in third.stderr


def test_first_progress_counts_trials_not_runs(tmp_path: Path) -> None:
    # the README's first command: the plan first, then a bar that counts trials, so the
    # first count shown comes before the first 500-trial run ends (how soon it comes is
    # a speed target, not a unit test's business)
    proc = subprocess.Popen([sys.executable, "-m", "autotile", "compare", "--out",
                             str(tmp_path / "r")], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    first: list[int] = []

    def read() -> None:
        assert proc.stderr is not None
        while chunk := proc.stderr.read1(4096):  # type: ignore[attr-defined]
            m = re.search(rb" ([1-9]\d*)/12500 ", chunk)
            if m:
                first.append(int(m.group(1)))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=120)
    os.killpg(proc.pid, signal.SIGKILL)  # with its worker processes, which hold the pipes
    out = proc.communicate(timeout=60)[0].decode()
    assert "budget: 500 trials per run x 5 seeds (seeds 0..4) x 5 searchers" in out
    assert "expected time: about" in out
    assert first and first[0] < 500, first


def test_stored_runs_open_in_optuna_with_named_objective_and_configs(tmp_path: Path) -> None:
    space = Space([Choice("a", tuple(range(6))), Choice("b", tuple(range(5)))], name="tiny")
    rate = np.arange(len(space), dtype=np.float64) + 1.0
    m = ReplayMeasurer(space, GroundTruth({"GFLOP/s": rate}, np.zeros(len(space), np.int8),
                                          {}), "GFLOP/s")
    url = f"sqlite:///{tmp_path / 's.db'}"
    res = compare(space, m, ["random", "evolutionary"], budget=8, seeds=2, progress=False,
                  storage=url)
    names = sorted(s.study_name for s in optuna.get_all_study_summaries(url))
    assert names == [f"compare:tiny:GFLOP/s:maximize:budget8:{s}:seed{k}"
                     for s in ("evolutionary", "random") for k in (0, 1)]
    st = optuna.load_study(study_name=names[-1], storage=url)
    assert st.metric_names == ["GFLOP/s"] and st.direction.name == "MAXIMIZE"
    assert len(st.trials) == 8
    best = st.best_trial  # in the objective's own units and direction
    assert best.value == res.histories["random"][1].max()
    assert best.user_attrs["config"] == res.best_configs["random"][1]
    assert "-GFLOP/s" not in best.user_attrs["metrics"]
    # the same call again loads every run instead of running it
    again = compare(space, m, ["random", "evolutionary"], budget=8, seeds=2, progress=False,
                    storage=url)
    assert again.meta["n_stored"] == 4
    for k in res.histories:
        assert np.array_equal(again.histories[k], res.histories[k])
    assert again.best_configs == res.best_configs


def test_a_stored_run_of_another_table_is_refused(tmp_path: Path) -> None:
    space = Space([Choice("a", tuple(range(6)))], name="tiny")
    url = f"sqlite:///{tmp_path / 's.db'}"

    def table(offset: float) -> ReplayMeasurer:
        cost = np.arange(6, dtype=np.float64) + offset
        return ReplayMeasurer(space, GroundTruth({"cost": cost}, np.zeros(6, np.int8), {}))

    compare(space, table(1.0), ["random"], budget=3, seeds=1, progress=False, storage=url)
    with pytest.raises(ValueError, match="made with other settings: fingerprint="):
        compare(space, table(2.0), ["random"], budget=3, seeds=1, progress=False,
                storage=url)


def test_sqlite_rows_equal_those_sqlalchemy_core_writes(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from autotile.search import _compare_store as cs
    from autotile.search._compare_run import run_one

    space = Space([Choice("a", tuple(range(6))), Choice("b", tuple(range(5)))], name="tiny")
    m = ReplayMeasurer(space, GroundTruth({"t": np.arange(len(space), dtype=np.float64)},
                                          np.zeros(len(space), np.int8), {}), "t")
    run = run_one(space, m, "random", "random", 3, 12, keep_trials=True)

    def rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
        cs.write_run(cs.open_storage(str(db)), "x:random:seed3", run, "t", "minimize",
                     {"budget": 12})
        with sqlite3.connect(db) as conn:
            return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
                    for t in ("trials", "trial_params", "trial_values",
                              "trial_user_attributes")}

    fast = rows(tmp_path / "fast.db")
    monkeypatch.setattr(cs, "_insert_rows",
                        lambda conn, table, data: conn.execute(table.insert(), data))
    core = rows(tmp_path / "core.db")
    assert [len(fast[t]) for t in fast] == [12, 24, 12, 60]
    assert fast == core
