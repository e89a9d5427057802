"""Corrupt or truncated study files: one clear error naming the file, the file unchanged."""

from __future__ import annotations

import gc
import hashlib
import sqlite3

import pytest

from autotile.errors import CorruptFileError
from autotile.search import open_storage, tune

from .conftest import ToyMeasurer, _small_constrained


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def _pristine_db(tmp_path_factory):
    """A real study file with a few trials (several pages), made once."""
    path = tmp_path_factory.mktemp("pristine") / "studies.db"
    space = _small_constrained()
    tune(space, ToyMeasurer(space), "random", budget=30, seed=0, storage=str(path),
         progress=False, study_name="s")
    gc.collect()  # close the pooled connections, then fold the write-ahead log into the file
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("PRAGMA journal_mode=DELETE")
    con.close()
    assert not path.with_name("studies.db-wal").exists()
    return path.read_bytes()


@pytest.fixture
def study_db(tmp_path, _pristine_db):
    path = tmp_path / "studies.db"
    path.write_bytes(_pristine_db)
    return path


def _damage_sqlite(path, how: str) -> None:
    data = path.read_bytes()
    if how == "random_bytes":
        path.write_bytes(b"\x13\x37" * 2048)
    elif how == "truncated_half":
        path.write_bytes(data[: len(data) // 2])
    elif how == "header_only":
        path.write_bytes(data[:100])
    elif how == "short_header":
        path.write_bytes(data[:40])
    elif how == "page_garbage":  # the schema page overwritten: the header is intact
        path.write_bytes(data[:100] + b"\xff" * 3000 + data[3100:])
    elif how == "other_app":
        path.unlink()
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        con.commit()
        con.close()


@pytest.mark.parametrize(("how", "says"), [
    ("random_bytes", "is not an SQLite database"),
    ("truncated_half", "is truncated"),
    ("header_only", "is truncated"),
    ("short_header", "is truncated"),
    ("page_garbage", "is a corrupt SQLite database"),
    ("other_app", "is an SQLite database but not an Optuna study storage"),
])
def test_corrupt_sqlite_file(study_db, how, says):
    _damage_sqlite(study_db, how)
    before = _sha(study_db)
    with pytest.raises(CorruptFileError, match=f"study storage '{study_db}' {says}"):
        open_storage(str(study_db))
    space = _small_constrained()
    with pytest.raises(CorruptFileError, match=f"'{study_db}'"):
        tune(space, ToyMeasurer(space), budget=3, storage=f"sqlite:///{study_db}",
             progress=False)
    assert _sha(study_db) == before


@pytest.fixture
def study_log(tmp_path):
    path = tmp_path / "studies.log"
    space = _small_constrained()
    tune(space, ToyMeasurer(space), "random", budget=5, seed=0, storage=str(path),
         progress=False, study_name="s")
    return path


@pytest.mark.parametrize(("how", "says"), [
    ("garbage_line", r"line 3 is not a JSON operation"),
    ("not_an_operation", r"line 2 is not an Optuna journal operation"),
])
def test_corrupt_journal_file(study_log, how, says):
    lines = study_log.read_bytes().splitlines(keepends=True)
    if how == "garbage_line":
        lines[2] = b"\x00\x01garbage\n"
    else:
        lines[1] = b'{"hello": 1}\n'
    study_log.write_bytes(b"".join(lines))
    before = _sha(study_log)
    with pytest.raises(CorruptFileError, match=f"study journal '{study_log}' is corrupt: {says}"):
        open_storage(str(study_log))
    assert _sha(study_log) == before


def test_journal_with_a_half_written_last_line_still_opens(study_log):
    """A line cut short by a killed writer is skipped, as Optuna's reader does."""
    with open(study_log, "ab") as f:
        f.write(b'{"op_code": 5, "wor')
    space = _small_constrained()
    study = tune(space, ToyMeasurer(space), "random", budget=5, seed=0, storage=str(study_log),
                 progress=False, study_name="s")
    assert len(study) == 5
