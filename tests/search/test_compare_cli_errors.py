"""``autotile compare``: flags that must end in a one-line usage error (exit 2), not a traceback."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from autotile.search._cli import compare_main

DATA = Path(__file__).resolve().parents[1] / "data"
KT = ["--kernel-tuner", str(DATA / "kt_tiny.json"), "--no-progress"]


def _one_line_error(capsys: pytest.CaptureFixture[str], message: str) -> None:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("autotile compare: error: "), err
    assert message in err, err


@pytest.mark.parametrize("argv, message", [
    ([*KT, "--n-jobs", "0"], "--n-jobs must be a non-zero int (-1: all cores), got 0"),
    ([*KT, "--searchers", "random,random"],
     "--searchers must name each searcher once, got 'random' 2 times in random,random"),
    ([*KT, "--searchers", "grid,tpe,grid,tpe"], "got 'grid' 2 times"),
    ([*KT, "--budget", "0"], "--budget must be >= 1, got 0"),
    ([*KT, "--seeds", "-1"], "--seeds must be >= 1, got -1"),
    ([*KT, "--budget", "999999999999", "--seeds", "1", "--searchers", "random"],
     "budget=999,999,999,999 is too large: the histories of 1 runs"),
])
def test_bad_flags_exit_2_with_one_line(argv: list[str], message: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_main(argv) == 2
    _one_line_error(capsys, message)


def test_out_that_is_a_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "report.txt"
    f.write_text("keep me")
    assert compare_main([*KT, "--out", str(f)]) == 2
    _one_line_error(capsys, f"--out must be a folder, got {str(f)!r}, which is an existing file")
    assert f.read_text() == "keep me"
    assert compare_main([*KT, "--out", str(f / "sub")]) == 2
    _one_line_error(capsys, "is not a writable folder")


def test_searcher_with_a_missing_dependency_exits_2(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object, **kwargs: object) -> object:
        return None if name.split(".")[0] == "torch" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert compare_main([*KT, "--searchers", "random,gp", "--n-jobs", "2"]) == 2
    _one_line_error(capsys, "searcher 'gp' needs the package(s) torch, which cannot be "
                            "imported; install with `pip install torch`")


def test_no_traceback_from_the_command_line(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("")
    r = subprocess.run([sys.executable, "-m", "autotile", "compare", *KT, "--out", str(f)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("autotile compare: error: --out must be a folder")


def test_out_with_a_missing_parent_exits_2_and_creates_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "typo" / "report"
    assert compare_main([*KT, "--out", str(out)]) == 2
    _one_line_error(capsys, f"--out {str(out)!r} cannot be created: its parent folder "
                            f"{str(tmp_path / 'typo')!r} does not exist")
    assert not (tmp_path / "typo").exists()


def test_out_itself_and_the_default_out_are_created(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = [*KT, "--searchers", "random", "--budget", "3", "--seeds", "1", "--n-jobs", "1"]
    assert compare_main([*run, "--out", str(tmp_path / "new")]) == 0
    assert (tmp_path / "new" / "report.html").is_file()
    monkeypatch.chdir(tmp_path)  # the default autotile-results/compare gets its parent too
    assert compare_main(run) == 0
    # without --out each run gets its own folder; latest points to the newest
    latest = tmp_path / "autotile-results" / "compare" / "latest"
    assert (latest / "report.html").is_file()
    first = latest.resolve()
    assert compare_main(run) == 0  # a second run keeps the first report
    assert latest.resolve() != first and (first / "report.html").is_file()
    assert len(list((tmp_path / "autotile-results" / "compare").glob("2*/report.html"))) == 2
