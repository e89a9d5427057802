"""A database server that cannot be reached: one clear error, the password hidden, no traceback."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from autotile.search import open_storage
from autotile.search._cli import compare_main
from autotile.search._cli_tune import tune_main

DATA = Path(__file__).resolve().parents[1] / "data"
# port 1 on the loopback: nothing listens there, so the connection is refused at once
URL = "postgresql+psycopg2://u:secret@127.0.0.1:1/db"
MASKED = "postgresql+psycopg2://u:***@127.0.0.1:1/db"

needs_psycopg2 = pytest.mark.skipif(importlib.util.find_spec("psycopg2") is None,
                                    reason="psycopg2 (the test extra) is not installed")


@needs_psycopg2
def test_open_storage_names_the_masked_url_and_the_reason() -> None:
    with pytest.raises(ValueError) as info:
        open_storage(URL)
    msg = str(info.value)
    assert msg.startswith(f"cannot connect to storage {MASKED}: "), msg
    assert "Connection refused" in msg or "connection" in msg.lower(), msg
    assert "secret" not in msg and "\n" not in msg, msg


@needs_psycopg2
def test_tune_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert tune_main(["--budget", "5", "--storage", URL]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"autotile tune: error: cannot connect to storage {MASKED}: "), err
    assert err.count("\n") == 1 and "secret" not in err, err


@needs_psycopg2
def test_compare_exits_2_with_one_line(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--kernel-tuner", str(DATA / "kt_tiny.json"), "--no-progress",
            "--out", str(tmp_path / "out"), "--storage", URL]
    assert compare_main(argv) == 2
    out, err = capsys.readouterr()
    # refused before the run folder is made (the storage is opened first)
    assert err.startswith(f"autotile compare: error: --storage: cannot connect to storage "
                          f"{MASKED}: "), err
    assert err.count("\n") == 1 and "secret" not in err, err
    assert not (tmp_path / "out").exists()


def test_compare_header_hides_the_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    # the header is printed before any study is opened: stop right after it (Ctrl-C)
    from autotile.search import _compare

    def interrupt(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_compare, "run_comparison", interrupt)
    monkeypatch.setattr("autotile.search._cli._count_stored", lambda storage, prefixes=(): 0)
    # let the unreachable URL past the up-front check, to reach the header
    monkeypatch.setattr("autotile.search._storage.open_storage", lambda *a, **k: None)
    argv = ["--kernel-tuner", str(DATA / "kt_tiny.json"), "--no-progress",
            "--out", str(tmp_path / "out"), "--storage", URL]
    assert compare_main(argv) == 130
    out, err = capsys.readouterr()
    assert (f"storage: {MASKED}  (inspect with: optuna-dashboard "
            f"postgresql+psycopg2://u:<password>@127.0.0.1:1/db)") in out, out
    assert f"kept in {MASKED}." in err, err
    assert "secret" not in out + err, out + err


def test_hide_password_for_messages_and_for_commands() -> None:
    from autotile.search._study_args import _hide_password

    assert _hide_password(URL) == MASKED
    assert _hide_password(URL, "<password>") == "postgresql+psycopg2://u:<password>@127.0.0.1:1/db"
    assert _hide_password("postgresql://u@h/db") == "postgresql://u@h/db"  # no password
    assert _hide_password("sqlite:///runs.db") == "sqlite:///runs.db"
