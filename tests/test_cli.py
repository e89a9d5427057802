"""The command line and the schedule walk-through."""

from __future__ import annotations

import subprocess
import sys

import pytest

from autotile.__main__ import main
from autotile._walkthrough import run_walkthrough


def test_walkthrough_numbers():
    lines: list[str] = []
    out = run_walkthrough(print_fn=lines.append, show_ir=True)
    assert [m.total for m in out] == [266_760, 16_896, 3_820, 3_508, 2_324, 17_814]
    assert [m.conflict for m in out] == [249_864, 0, 1_516, 1_204, 20, 0]
    text = "\n".join(lines)
    assert "for k_i in range(4):" in text and "max rel. err" in text


def test_cli_dispatch(capsys):
    assert main([]) == 0
    assert "autotile compare" in capsys.readouterr().out
    assert main(["nope"]) == 2
    assert "unknown command 'nope'" in capsys.readouterr().err
    assert main(["sweep", "--n", "0"]) == 2
    assert "n=0" in capsys.readouterr().err


def test_cli_sweep_small(tmp_path):
    out = tmp_path / "t.npz"
    r = subprocess.run([sys.executable, "-m", "autotile", "sweep", "--n", "4", "--limit", "500",
                        "--n-jobs", "1", "--out", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "500 configs" in r.stdout and out.exists()


@pytest.mark.parametrize("argv, message", [
    (["--limit", "-1"], "--limit must be >= 1, got -1"),
    (["--limit", "0"], "--limit must be >= 1, got 0"),
    (["--n-jobs", "0"], "--n-jobs must be a non-zero int (-1: all cores), got 0"),
])
def test_cli_sweep_bad_flags_exit_2(argv, message, capsys, tmp_path):
    assert main(["sweep", "--n", "4", "--out", str(tmp_path / "x.npz"), *argv]) == 2
    err = capsys.readouterr().err
    assert err == f"autotile sweep: error: {message}\n"
    assert not list(tmp_path.iterdir())


def test_cli_sweep_reports_the_written_path(tmp_path, capsys):
    out = tmp_path / "s3"  # no suffix: .npz is appended, and the message says so
    assert main(["sweep", "--n", "4", "--limit", "50", "--n-jobs", "1", "--out", str(out)]) == 0
    assert f"wrote {out}.npz: 50 configs" in capsys.readouterr().out
    assert (tmp_path / "s3.npz").is_file()


def test_cli_sweep_refuses_another_suffix(tmp_path, capsys):
    # numpy used to write o.txt.npz for --out o.txt, silently
    out = tmp_path / "o.txt"
    assert main(["sweep", "--n", "4", "--limit", "5", "--n-jobs", "1", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"autotile sweep: error: --out must name an .npz file, got {str(out)!r} (suffix "
        f"'.txt'); the table is a NumPy .npz archive: pass e.g. "
        f"{str(tmp_path / 'o.npz')!r}\n")
    assert not list(tmp_path.iterdir())


def test_cli_help_has_a_usage_line(capsys):
    assert main(["--help"]) == 0
    assert "usage: autotile {compare,schedule,sweep,tune,worker}" in capsys.readouterr().out


def test_cli_version(capsys):
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"autotile {version('autotile')}\n"
    r = subprocess.run([sys.executable, "-m", "autotile", "--version"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("autotile ") and r.stderr == ""


def test_cli_version_falls_back_to_dunder_version(monkeypatch, capsys):
    import importlib.metadata

    import autotile

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"autotile {autotile.__version__}\n"


@pytest.mark.parametrize("argv", [["--help"], ["schedule", "--help"], ["sweep", "--help"]])
def test_cli_help_is_plain_and_self_contained(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse exits after --help
        code = exc.code
    assert code == 0
    text = capsys.readouterr().out
    for markup in ("``", "§", "lecture notes", ":func:", ":data:"):
        assert markup not in text, f"{markup!r} in the help of {argv}"
    assert text.strip()


def test_cli_help_lists_the_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "autotile --version" in out
    for line in ("  autotile compare   compare searchers on a space",
                 "  autotile schedule  step through the TVM CPU matrix-multiplication",
                 "  autotile sweep     measure every config of the GEMM schedule space"):
        assert line in out


def test_cli_resume_with_another_n_is_an_error(tmp_path, capsys):
    # the bug: the n=32 run reused the n=16 chunks (12288 accesses per config, not 98304)
    from autotile.measure import GroundTruth

    out = tmp_path / "a.npz"
    assert main(["sweep", "--n", "16", "--limit", "50", "--n-jobs", "1",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["sweep", "--n", "32", "--limit", "50", "--n-jobs", "1",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"autotile sweep: error: {out} holds a table of a different sweep: "
                          "measurer_settings.n: 16 (then) vs 32 (now); ")
    assert err.endswith("delete it or pass --no-resume\n")
    assert (GroundTruth.load(out).column("accesses") == 3 * 16**3).all()
    assert main(["sweep", "--n", "32", "--limit", "50", "--n-jobs", "1", "--no-resume",
                 "--out", str(out)]) == 0
    assert (GroundTruth.load(out).column("accesses") == 3 * 32**3).all()
    assert main(["sweep", "--n", "32", "--limit", "50", "--n-jobs", "1",
                 "--out", str(out)]) == 0
    assert capsys.readouterr().out.endswith(
        f"{out} already holds this sweep: 50 configs (2 distinct traces); nothing measured\n")


def test_cli_sweep_out_with_a_missing_folder_exits_2(tmp_path, capsys):
    out = tmp_path / "typo" / "t.npz"
    assert main(["sweep", "--n", "4", "--limit", "50", "--n-jobs", "1", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"autotile sweep: error: --out {str(out)!r} cannot be created: its folder "
        f"{str(tmp_path / 'typo')!r} does not exist; create it first or choose another --out\n")
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize("argv, flag", [
    (["compare", "--seed", "7"], "--seed 7"),  # was read as --seeds 7: seven seeds 0..6
    (["tune", "--stor", "x.db"], "--stor x.db"),  # was read as --storage
    (["worker", "--storage", "x.db", "--study", "s"], "--study s"),
    (["schedule", "--n", "0"], "--n 0"),  # was read as --no-ir, then "unrecognized: 0"
    (["sweep", "--li", "5"], "--li 5"),  # was read as --limit
])
def test_cli_flags_are_not_abbreviated(argv, flag, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's own exit in schedule and sweep
        rc = exc.code
    assert rc == 2
    assert f"unrecognized arguments: {flag}" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
