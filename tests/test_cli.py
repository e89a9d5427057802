"""The command line and the schedule walk-through."""

from __future__ import annotations

import subprocess
import sys

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
