from __future__ import annotations

import json
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
    # the plan's header, once (the table after the run used to print its own copy)
    assert printed.count("space: gemm64 (246,960 configs, 246,960 valid)") == 1
    assert printed.count("objective: est_cycles in cycles (minimised)") == 1
    assert printed.count("budget: ") == 1 and printed.count("device: ") == 1
    assert ("budget: 15 trials per run x 2 seeds (seeds 0..1) x 2 searchers (random, tpe) = "
            "60 trials") in printed
    assert ("on 2 workers if the cores are free (the runs, storing them and the report)"
            in printed)
    assert "random search needs (N+1)/(k+1) = " in printed  # what the run adds stays
    heads = next(ln for ln in printed.splitlines() if ln.startswith("searcher"))
    assert heads.split()[:3] == ["searcher", "optimum", "within"]
    assert (tmp_path / "report.html").is_file()
    # the report file keeps every line
    assert (tmp_path / "summary.txt").read_text().startswith(
        "space: gemm64 (246960 configs, 246960 valid)")


def test_table_replays_a_sweep_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from autotile.__main__ import main

    table = tmp_path / "gemm4.npz"
    assert main(["sweep", "--n", "4", "--out", str(table), "--n-jobs", "1"]) == 0
    out = tmp_path / "r"
    rc = compare_main(["--table", str(table), "--objective", "est_cycles", "--searchers",
                       "random,evolutionary", "--budget", "20", "--seeds", "2", "--n-jobs",
                       "1", "--no-progress", "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert f"space: gemm4 (19,440 configs, 19,440 valid), replayed from {table}" in printed
    assert "device: cache simulator (8 KB, 4-way, 64 B lines)" in printed
    assert "objective: est_cycles in cycles (minimised)" in printed
    assert "best config found by each searcher (over its 2 seeds):" in printed
    assert (out / "report.html").is_file()
    # a table that is not a sweep of a GEMM space is refused in one line
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"not a table")
    assert compare_main(["--table", str(bad), "--out", str(tmp_path / "s")]) == 2
    assert "is not a table written by `autotile sweep`" in capsys.readouterr().err


def test_two_kernel_tuner_files_one_report_each_and_a_summary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kt"
    rc = compare_main(["--kernel-tuner", str(DATA / "kt_tiny.json"),
                       str(DATA / "t4_tiny.json.gz"), "--searchers", "random,grid",
                       "--seeds", "2", "--n-jobs", "1", "--no-progress", "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "space: kt_tiny (tiny_kernel) (14 configs, 11 valid)" in printed
    assert "device: Test GPU" in printed and "device: not recorded in the file" in printed
    assert "objective: time in ms (minimised)" in printed
    for name in ("kt_tiny", "t4_tiny"):
        assert (out / name / "report.html").is_file()
        settings = json.loads((out / name / "result.json").read_text())["settings"]
        assert settings["unit"] == "ms" and settings["source"].endswith(
            "kt_tiny.json" if name == "kt_tiny" else "t4_tiny.json.gz")
    summary = (out / "summary.txt").read_text()
    assert summary.startswith("Mean P(t) over the methodology budget (2 seeds)")
    assert "kt_tiny" in summary and "t4_tiny" in summary
    assert 'href="kt_tiny/report.html"' in (out / "index.html").read_text()
    assert (out / "summary.md").read_text().count("| kt_tiny |") == 2
