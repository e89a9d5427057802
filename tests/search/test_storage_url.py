"""Storage URLs with a scheme SQLAlchemy cannot load are refused up front; ``~`` is expanded."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotile.measure import ScheduleMeasurer
from autotile.search import create_study
from autotile.search._study_args import resolve_storage
from autotile.space import gemm_space

_RULE = r"storage URL must start with one of the SQLAlchemy dialects sqlite://, postgresql://"


@pytest.mark.parametrize(("url", "shown", "hint"), [
    ("bogus://x", "'bogus://x'", None),
    ("http://example.com/studies", "'http://example.com/studies'", None),
    ("postgres://user:secret@db.example/studies", "'postgres://user:***@db.example/studies'",
     "SQLAlchemy (1.4 and later) does not accept 'postgres://', write "
     "'postgresql://user:***@db.example/studies'"),
    ("postgres+psycopg2://u@h/db", "'postgres+psycopg2://u@h/db'",
     "write 'postgresql+psycopg2://u@h/db'"),
    ("file:///tmp/x.db", "'file:///tmp/x.db'", "write 'sqlite:////tmp/x.db'"),
])
def test_bad_scheme_is_refused_with_the_accepted_forms(url: str, shown: str,
                                                        hint: str | None) -> None:
    space = gemm_space(8)
    with pytest.raises(ValueError, match=_RULE) as info:
        create_study(space, ScheduleMeasurer(space), storage=url)
    msg = str(info.value)
    assert f"got storage={shown} with scheme '{url.partition('://')[0]}://'" in msg
    assert "secret" not in msg
    for form in ("'sqlite:///path/file.db'", "'postgresql://user:password@host/db'",
                 "'mysql://user:password@host/db'", "optuna.storages.BaseStorage",
                 "ending in .db/.sqlite/.sqlite3"):
        assert form in msg
    if hint is not None:
        assert hint in msg


@pytest.mark.parametrize("url", ["sqlite:///a.db", "postgresql+psycopg://u@h/db",
                                 "postgresql+psycopg2://u@h/db", "mysql+pymysql://u@h/db",
                                 "MySQL://u@h/db", "mariadb://u@h/db"])
def test_known_dialects_pass(url: str) -> None:
    assert resolve_storage(url) == url


@pytest.mark.parametrize("installed, expected", [
    ({"psycopg2"}, "postgresql+psycopg2://u:pw@h/db"),   # autotile[postgres] alone
    ({"psycopg", "psycopg2"}, "postgresql://u:pw@h/db"),  # SQLAlchemy's default is there
    ({"psycopg"}, "postgresql://u:pw@h/db"),
    (set(), "postgresql://u:pw@h/db"),  # the driver error then names what to install
])
def test_plain_postgresql_uses_psycopg2_when_psycopg_is_missing(
        installed: set[str], expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        if name in ("psycopg", "psycopg2"):
            return object() if name in installed else None
        return real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert resolve_storage("postgresql://u:pw@h/db") == expected
    # a URL that names its driver is kept as written
    assert resolve_storage("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"


def test_home_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_storage("~/runs.db") == f"sqlite:///{tmp_path}/runs.db"
    assert resolve_storage(Path("~/runs.db")) == f"sqlite:///{tmp_path}/runs.db"
    assert resolve_storage("sqlite:///~/other.db") == f"sqlite:///{tmp_path}/other.db"
    space = gemm_space(8)
    study = create_study(space, ScheduleMeasurer(space), storage="~/runs.db", seed=0)
    study.optimize(2, progress=False)
    assert (tmp_path / "runs.db").is_file()
    assert not Path("~").exists()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs a directory no one can write")
def test_an_sqlite_file_that_cannot_be_created_is_a_clear_error():
    # the directory exists (so the path check passes) but no file can be made there
    with pytest.raises(ValueError, match=r"'/proc/autotile_x.db' cannot be opened or created"):
        create_study(gemm_space(64), ScheduleMeasurer(gemm_space(64)),
                     storage="/proc/autotile_x.db", study_name="s")
    from autotile.search._compare_store import open_storage

    with pytest.raises(ValueError, match="cannot be opened or created"):
        open_storage("/proc/autotile_x.db")


@pytest.mark.parametrize("form", ["{d}", "sqlite:///{d}", "journal://{d}"])
@pytest.mark.parametrize("name", ["runs.db", "runs.log"])
def test_a_storage_path_that_is_a_directory_is_refused_naming_it(
        tmp_path: Path, form: str, name: str) -> None:
    # session 13: a directory named runs.db reached the corrupt-file check, which raised a
    # bare IsADirectoryError while reading its first bytes
    d = tmp_path / name
    d.mkdir()
    given = form.format(d=d)
    with pytest.raises(ValueError) as exc:
        create_study(gemm_space(8), ScheduleMeasurer(gemm_space(8)), storage=given, seed=0)
    assert str(exc.value) == (
        f"storage must be a file, but {str(d)!r} is a directory, got storage={given!r}; "
        f"name a file inside it, e.g. {str(d / 'studies.db')!r}")
    assert d.is_dir() and not any(d.iterdir())
