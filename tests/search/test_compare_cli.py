from __future__ import annotations

from pathlib import Path

import pytest

import autotile.search
from autotile.search._cli import compare_main

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize("argv, message", [
    (["--searchers", "grid,bogus"], "unknown searcher 'bogus'"),
    (["--kernel-tuner", str(DATA / "kt_tiny.json"), "--objective", "watts"],
     "unknown objective 'watts'"),
    (["--kernel-tuner", "/nonexistent/cache.json"], "no such file"),
    (["--space", "gemm32"], "invalid choice"),
    (["--seeds", "0"], "--seeds must be >= 1"),
    (["--budget", "-3"], "--budget must be >= 1"),
    (["--budget", "many"], "invalid int value"),
    (["--space", "gemm64", "--kernel-tuner", "x.json"], "not allowed with"),
])
def test_bad_input_exits_2_with_one_line(argv: list[str], message: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("autotile compare: error: ")
    assert message in err


def test_bad_kernel_tuner_file_exits_2(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert compare_main(["--kernel-tuner", str(bad)]) == 2
    assert "neither a Kernel Tuner cache" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(autotile.search, "create_study"),
                    reason="autotile.search.create_study has not landed yet")
def test_runs_on_a_kernel_tuner_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    rc = compare_main(["--kernel-tuner", str(DATA / "kt_tiny.json"), "--searchers",
                       "random,grid", "--budget", "6", "--seeds", "2", "--out", str(out),
                       "--n-jobs", "1", "--no-progress"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "report: " in printed and "random (expected)" in printed
    assert (out / "report.html").is_file() and (out / "result.json").is_file()


GEMM_TABLE = Path(autotile.search.__file__).resolve().parents[1] / "data" / "gemm64_truth.npz"


@pytest.mark.skipif(not (hasattr(autotile.search, "create_study") and GEMM_TABLE.is_file()),
                    reason="needs autotile.search.create_study and the shipped GEMM table")
def test_runs_on_gemm64_in_parallel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = compare_main(["--objective", "est_cycles", "--searchers", "random,tpe", "--budget",
                       "15", "--seeds", "2", "--out", str(tmp_path), "--n-jobs", "2",
                       "--no-progress"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "gemm64 (246960 configs, 246960 valid)" in printed
    assert "objective: est_cycles in cycles (minimised)" in printed
    assert (tmp_path / "report.html").is_file()
