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
    out = tmp_path / "s3.txt"
    assert main(["sweep", "--n", "4", "--limit", "50", "--n-jobs", "1", "--out", str(out)]) == 0
    assert f"wrote {out}.npz: 50 configs" in capsys.readouterr().out
    assert (tmp_path / "s3.txt.npz").is_file()


def test_cli_help_has_a_usage_line(capsys):
    assert main(["--help"]) == 0
    assert "usage: autotile {compare,schedule,sweep}" in capsys.readouterr().out
