"""A database storage URL whose SQLAlchemy driver is not installed: a clear ImportError."""

from __future__ import annotations

import sys

import pytest

from autotile.measure import ScheduleMeasurer
from autotile.search import create_study, tune
from autotile.search._study_args import storage_driver_error
from autotile.space import gemm_space


@pytest.mark.parametrize(("url", "module", "pip_name"), [
    ("postgresql+psycopg2://user:secret@db.example/studies", "psycopg2", "psycopg2-binary"),
    ("mysql+pymysql://user@db.example/studies", "pymysql", "PyMySQL"),
])
def test_missing_driver_names_module_and_pip_package(url, module, pip_name, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # `import module` fails as if not installed
    space = gemm_space(8)
    with pytest.raises(ImportError) as info:
        create_study(space, ScheduleMeasurer(space), storage=url)
    msg = str(info.value)
    scheme = url.partition("://")[0]
    assert f"needs the database driver module {module!r} (SQLAlchemy's driver for {scheme}://)" \
        in msg
    assert f"`pip install {pip_name}`" in msg
    assert "secret" not in msg
    assert f"storage {url.replace('secret', '***')!r}" in msg  # the password is hidden
    cause = info.value.__cause__  # Optuna's generic error, itself caused by the import
    assert isinstance(cause, ImportError) and "Failed to import DB access module" in str(cause)
    assert isinstance(cause.__cause__, ModuleNotFoundError) and cause.__cause__.name == module


def test_tune_reports_the_missing_driver_too(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg2", None)
    space = gemm_space(8)
    with pytest.raises(ImportError, match=r"'psycopg2'.*`pip install psycopg2-binary`"):
        tune(space, ScheduleMeasurer(space), storage="postgresql+psycopg2://u@h/db",
             budget=1, progress=False)


def test_only_missing_modules_of_url_storages_are_rewritten():
    missing = ModuleNotFoundError("No module named 'psycopg'", name="psycopg")
    wrapped = ImportError("Failed to import DB access module")
    wrapped.__cause__ = missing
    err = storage_driver_error("postgresql://u@h/db", wrapped)
    assert err is not None and '`pip install "psycopg[binary]"`' in str(err)
    assert "(postgresql+DRIVER://...)" in str(err)
    assert storage_driver_error("postgresql://u@h/db", ImportError("other")) is None
    assert storage_driver_error(object(), wrapped) is None
    assert storage_driver_error("postgresql://u@h/db", ValueError("x")) is None
