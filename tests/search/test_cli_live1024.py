"""``autotile tune`` and ``autotile compare`` live on the 958,320-schedule n = 1024 space."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotile.__main__ import main
from autotile.search._cli import compare_main


def test_compare_live_gemm1024_scores_against_the_sample(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = compare_main(["--space", "gemm1024", "--searchers", "random,tpe", "--budget", "3",
                       "--seeds", "1", "--n-jobs", "1", "--no-progress",
                       "--out", str(tmp_path / "c")])
    assert rc == 0
    out = capsys.readouterr().out
    assert ("space: gemm1024 (958,320 configs, 20,000 valid), measured live, scored against "
            "autotile/data/gemm1024_sample.npz\n") in out  # was "replayed from measured live"
    assert ("(the runs, storing them and the report, not counting the measurer's own time per "
            "trial)") in out
    assert "best known (sampled, " in out and "not a proven optimum" in out
    res = json.loads((tmp_path / "c" / "result.json").read_text())
    assert res["settings"]["optimum_label"].endswith("configs), not a proven optimum")
    assert res["settings"]["n_sampled"] >= 20_000     # the uniform random rows
    assert res["settings"]["measurer"] == "ScheduleMeasurer"
    for row in res["summary"]:                         # every run measured its trials
        assert row["budget"] == 3 and 0 < row["final_best_median"] < 1e12


def test_tune_live_gemm1024(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.db"
    assert main(["tune", "--n", "1024", "--searcher", "random", "--budget", "3",
                 "--storage", str(db)]) == 0
    import optuna

    study = optuna.load_study(study_name=optuna.get_all_study_names(str(f"sqlite:///{db}"))[0],
                              storage=f"sqlite:///{db}")
    trials = study.get_trials()
    assert len(trials) == 3 and all(t.user_attrs["status"] == "ok" for t in trials)
    assert all(t.value is not None and t.value > 0 for t in trials)
