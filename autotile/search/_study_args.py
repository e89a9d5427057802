"""Checks of the arguments of ``create_study``, ``tune``, ``Study.optimize`` and ``compare``.

Validated at the public boundary: each error names the rule and the value
(``n_trials must be an int >= 1, got n_trials=0``). :func:`resolve_storage`
also turns the storage argument into what ``optuna.create_study`` takes
(:data:`DEFAULT_STORAGE` when none is given, an SQLite URL for a file path).
"""

from __future__ import annotations

import numbers
import os
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import optuna
from optuna.storages import BaseStorage

from autotile.measure import Measurer
from autotile.space import MAX_LISTED_VALUES, IntRange, Space

__all__ = ["DEFAULT_STORAGE", "SEED_LIMIT", "short_repr", "is_int", "check_count",
           "check_n_jobs", "check_timeout", "check_seed", "check_seeds", "resolve_storage",
           "check_measurer", "check_measurer_space", "space_mismatch", "storage_driver_error"]

#: Storage used when none is given: an SQLite file in the current directory.
DEFAULT_STORAGE = "sqlite:///autotile_studies.db"
#: File suffixes a storage string without ``://`` may have: it names an SQLite file.
_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
#: File suffixes a storage string without ``://`` may have: it names an Optuna journal file.
_JOURNAL_SUFFIXES = (".log", ".journal")
#: SQLAlchemy dialects a storage URL may name (``dialect://`` or ``dialect+driver://``).
_DIALECTS = ("sqlite", "postgresql", "mysql", "mariadb", "oracle", "mssql")
#: Schemes people write for a dialect, and the one to write instead.
_SCHEME_FIXES = {"postgres": "postgresql", "pgsql": "postgresql", "psql": "postgresql",
                 "sqlite3": "sqlite", "file": "sqlite"}
#: Seeds must be below this: NumPy's legacy ``RandomState`` (used by Optuna's samplers) takes
#: 32-bit seeds only.
SEED_LIMIT = 2**32


def short_repr(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_int(value: Any) -> bool:
    """Whether ``value`` is an integer (``bool`` excluded)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_count(name: str, value: Any) -> int:
    """Return ``value`` as an int >= 1, else raise ValueError naming ``name``."""
    if not is_int(value) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {name}={value!r}")
    return int(value)


def check_n_jobs(n_jobs: Any) -> int:
    """Return ``n_jobs`` as an int, else raise ValueError (0 and non-ints are refused)."""
    if not is_int(n_jobs) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero int (-1: all cores), got n_jobs={n_jobs!r}")
    return int(n_jobs)


def check_timeout(timeout: Any) -> None:
    """Raise ValueError unless ``timeout`` is None or a real number of seconds > 0."""
    if timeout is None:
        return
    if (not isinstance(timeout, numbers.Real) or isinstance(timeout, bool)
            or not float(timeout) > 0):
        raise ValueError(f"timeout must be a number of seconds > 0 or None, "
                         f"got timeout={timeout!r}")


def check_seed(seed: Any) -> None:
    """Raise ValueError unless ``seed`` is None or an int with ``0 <= seed < 2**32``.

    The upper bound is NumPy's (and so Optuna's samplers') seed range; it holds for every
    searcher so that a seed means the same thing whichever searcher gets it.
    """
    if seed is not None and (not is_int(seed) or not 0 <= seed < SEED_LIMIT):
        raise ValueError(f"seed must be None or an int with 0 <= seed < 2**32, "
                         f"got seed={short_repr(seed)}")


def check_seeds(seeds: Any) -> tuple[int, ...]:
    """Return the seeds of ``compare``: ``k`` means ``0 .. k-1``, else distinct valid seeds.

    Raises
    ------
    ValueError
        If ``seeds`` is neither an int ``>= 1`` nor a non-empty sequence of distinct ints
        with ``0 <= seed < 2**32`` (a string is not a sequence of seeds).
    """
    if is_int(seeds):
        return tuple(range(check_count("seeds", seeds)))
    rule = ("seeds must be an int >= 1 (seeds 0 .. k-1) or a non-empty sequence of distinct "
            "ints with 0 <= seed < 2**32")
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise ValueError(f"{rule}, got seeds={short_repr(seeds)}")
    out = tuple(seeds)
    if not out:
        raise ValueError(f"{rule}, got seeds={short_repr(seeds)} (no seed)")
    for s in out:
        if not is_int(s) or not 0 <= s < SEED_LIMIT:
            raise ValueError(f"{rule}, got seed {short_repr(s)} in seeds={short_repr(seeds)}")
    dup = [s for s, n in Counter(out).items() if n > 1]
    if dup:
        raise ValueError(f"{rule}, got seed {dup[0]!r} {out.count(dup[0])} times in "
                         f"seeds={short_repr(seeds)}; each seed is one run, so a repeated "
                         f"seed would run twice into the same row")
    return tuple(int(s) for s in out)


def resolve_storage(storage: Any) -> str | BaseStorage:
    """Validate ``storage`` and turn a plain SQLite file path into a URL.

    A path (``"runs.db"``, ``"~/runs.db"``: ``~`` is expanded) becomes
    ``"sqlite:///<path>"``; a URL must name an SQLAlchemy dialect of
    :data:`_DIALECTS` (``"postgres://"``, ``"file://"`` or ``"http://"`` are
    refused with the URL to write instead, the password hidden). A plain
    ``postgresql://`` becomes ``postgresql+psycopg2://`` when psycopg2 (the
    ``autotile[postgres]`` extra) is installed and psycopg 3 (SQLAlchemy
    2.1's default driver) is not.

    Parameters
    ----------
    storage : str, os.PathLike, optuna.storages.BaseStorage or None
        A storage URL, an SQLite or journal file path, ``":memory:"`` or a
        storage object; None means :data:`DEFAULT_STORAGE`.

    Returns
    -------
    str or optuna.storages.BaseStorage
        The URL to open, or the storage object (an ``InMemoryStorage`` for
        ``":memory:"``).

    Raises
    ------
    TypeError
        If ``storage`` is not a str, a path or a ``BaseStorage``.
    ValueError
        If it is neither a URL nor a ``.db``/``.sqlite``/``.sqlite3``/``.log``/
        ``.journal`` path, a URL lacks ``://`` after its scheme
        (``'sqlite:/runs.db'``), its scheme is not a dialect of
        :data:`_DIALECTS`, or an SQLite file's directory (the message names
        ``storage`` as given) or a journal file's directory does not exist, or
        the file's path is a directory.
    """
    if storage is None:
        return DEFAULT_STORAGE
    if isinstance(storage, BaseStorage):
        return storage
    if isinstance(storage, os.PathLike):
        storage = os.fspath(storage)
    if not isinstance(storage, str):
        raise TypeError(
            f"storage must be a storage URL (str), an SQLite file path or an "
            f"optuna.storages.BaseStorage, got {type(storage).__name__} {short_repr(storage)}")
    if storage == ":memory:":
        return optuna.storages.InMemoryStorage()
    given = storage
    scheme = storage.partition(":")[0]
    if "://" not in storage and ":" in storage and scheme.partition("+")[0].lower() in (
            *_DIALECTS, "journal", "postgres", "file"):
        shown = re.sub(r":[^:@/]*@", ":***@", storage)  # hide a password
        raise ValueError(
            f"storage {shown!r} is a URL without '://' after its scheme {scheme!r}: write "
            f"e.g. 'sqlite:///runs.db' (three slashes, then the path; four for an absolute "
            f"path: 'sqlite:////tmp/runs.db'), 'journal:///path/runs.log' or "
            f"'postgresql://user:password@host/db'")
    if "://" not in storage:
        if storage.lower().endswith(_SQLITE_SUFFIXES):
            storage = f"sqlite:///{os.path.expanduser(storage)}"
        elif storage.lower().endswith(_JOURNAL_SUFFIXES):
            storage = f"journal://{os.path.expanduser(storage)}"
        else:
            raise ValueError(
                f"storage must be an Optuna storage URL (with '://'), an SQLite file path "
                f"ending in {'/'.join(_SQLITE_SUFFIXES)}, a journal file path ending in "
                f"{'/'.join(_JOURNAL_SUFFIXES)} or ':memory:', got storage={storage!r}; "
                f"e.g. storage='sqlite:///file.db'")
    if storage.startswith("journal://"):
        path = os.path.expanduser(storage[len("journal://"):])
        parent = os.path.dirname(os.path.abspath(path)) if path else ""
        if not path or not os.path.isdir(parent):
            raise ValueError(
                f"storage must be a journal file in an existing directory, got "
                f"storage={storage!r}" + (f" (directory {parent!r} does not exist)" if path
                                         else " (no path): write 'journal:///abs/path.log'"))
        _refuse_directory(given, path)
        return f"journal://{path}"
    url: str = _postgres_driver(_check_scheme(storage))
    if url.startswith("sqlite:///~"):
        url = "sqlite:///" + os.path.expanduser(url[len("sqlite:///"):])
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):].partition("?")[0]
        parent = os.path.dirname(path)
        if path and path != ":memory:" and parent and not os.path.isdir(parent):
            raise ValueError(
                f"storage must be an SQLite file in an existing directory, got "
                f"storage={given!r} (directory {parent!r} does not exist)")
        if path and path != ":memory:":
            _refuse_directory(given, path)
    return url


def _refuse_directory(given: str, path: str) -> None:
    """Raise ValueError when a storage file's path is a directory.

    Without this, reading the file's first bytes (the corrupt-file check)
    raised a bare ``IsADirectoryError``.
    """
    if os.path.isdir(path):
        raise ValueError(
            f"storage must be a file, but {path!r} is a directory, got storage={given!r}; "
            f"name a file inside it, e.g. {os.path.join(path, 'studies.db')!r}")


def _check_scheme(url: str) -> str:
    """Return ``url`` if its scheme is an SQLAlchemy dialect of :data:`_DIALECTS`, else raise.

    Without this check a bad scheme (``"postgres://"``, ``"file://"``,
    ``"http://"``) surfaces as SQLAlchemy's ``NoSuchModuleError: Can't load
    plugin``, deep in Optuna.
    """
    scheme = url.partition("://")[0]
    dialect = scheme.partition("+")[0].lower()
    if dialect in _DIALECTS:
        return url
    accepted = ("a path to an SQLite file ending in " + "/".join(_SQLITE_SUFFIXES)
                + " ('runs.db', '~/runs.db'), 'sqlite:///path/file.db', a journal file "
                  "('runs.log', 'journal:///path/runs.log'), "
                  "'postgresql://user:password@host/db', 'mysql://user:password@host/db', "
                  "':memory:' or an optuna.storages.BaseStorage")
    hint = ""
    fix = _SCHEME_FIXES.get(dialect)
    rest = url.partition("://")[2]
    if dialect == "file":
        hint = (f"; for an SQLite file write 'sqlite:///{rest}' ('sqlite:///' followed by "
                f"the path, so an absolute path gives four slashes)")
    elif fix is not None:
        driver = scheme.partition("+")[2]
        better = f"{fix}{'+' + driver if driver else ''}://{rest}"
        hint = (f"; SQLAlchemy (1.4 and later) does not accept {scheme + '://'!r}, write "
                f"{_hide_password(better)!r}")
    raise ValueError(
        f"storage URL must start with one of the SQLAlchemy dialects "
        f"{', '.join(d + '://' for d in _DIALECTS)} (optionally dialect+driver://), got "
        f"storage={_hide_password(url)!r} with scheme {scheme + '://'!r}{hint}; accepted: "
        f"{accepted}")


#: Database driver module -> the package ``pip install`` takes.
_DRIVER_PACKAGES = {
    "psycopg": "psycopg[binary]", "psycopg2": "psycopg2-binary", "asyncpg": "asyncpg",
    "pg8000": "pg8000", "MySQLdb": "mysqlclient", "pymysql": "PyMySQL",
    "mysql": "mysql-connector-python", "mariadb": "mariadb", "aiomysql": "aiomysql",
    "pyodbc": "pyodbc", "pymssql": "pymssql", "oracledb": "oracledb", "cx_Oracle": "cx_Oracle",
}


def _postgres_driver(url: str) -> str:
    """``postgresql://...`` as ``postgresql+psycopg2://...`` when only psycopg2 is installed.

    SQLAlchemy 2.1 maps a plain ``postgresql://`` to psycopg (version 3), but
    ``pip install "autotile[postgres]"`` installs psycopg2; a URL naming its
    driver (``postgresql+DRIVER://``) is kept as written.
    """
    if not url.startswith("postgresql://"):
        return url
    import importlib.util

    if (importlib.util.find_spec("psycopg") is None
            and importlib.util.find_spec("psycopg2") is not None):
        return "postgresql+psycopg2://" + url[len("postgresql://"):]
    return url


def _hide_password(url: str, mask: str = "***") -> str:
    """``url`` with its password (``scheme://user:PASSWORD@host``) replaced by ``mask``.

    ``mask="<password>"`` for a command line the user will copy and complete.
    """
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in creds:
        return url
    return f"{scheme}://{creds.partition(':')[0]}:{mask}@{host}"


def storage_driver_error(storage: Any, exc: BaseException) -> ImportError | None:
    """The error to raise when Optuna cannot import the database driver of a storage URL.

    Parameters
    ----------
    storage : str or BaseStorage
        What was passed to ``optuna.create_study``.
    exc : BaseException
        What it raised: Optuna's generic "Failed to import DB access module"
        ``ImportError``, whose cause is the driver's ``ModuleNotFoundError``.

    Returns
    -------
    ImportError or None
        One that names the URL (password hidden), the missing module and
        the ``pip install`` command; None when ``exc`` is not a missing
        module of a URL storage. Raise it ``from exc``.
    """
    if not isinstance(storage, str) or not isinstance(exc, ImportError):
        return None
    missing = None
    cur: BaseException | None = exc
    while cur is not None and missing is None:
        if isinstance(cur, ModuleNotFoundError) and cur.name:
            missing = cur.name
        cur = cur.__cause__ or cur.__context__
    if missing is None:
        return None
    top = missing.split(".")[0]
    package = _DRIVER_PACKAGES.get(top, top)
    scheme = storage.partition("://")[0]
    if "[" in package:
        package = f'"{package}"'
    return ImportError(
        f"storage {_hide_password(storage)!r} needs the database driver module {top!r} "
        f"(SQLAlchemy's driver for {scheme}://), which is not installed; install it with "
        f"`pip install {package}`, or name an installed driver in the URL "
        f"({scheme.partition('+')[0]}+DRIVER://...)")


def check_measurer(space: Space, measurer: Any) -> None:
    """Check a study's space and measurer.

    Raises
    ------
    TypeError
        If ``space`` is not a :class:`Space` or ``measurer`` not a
        :class:`~autotile.measure.Measurer`.
    ValueError
        If the measurer was built for another space (:func:`space_mismatch`).
    """
    if not isinstance(space, Space):
        raise TypeError(f"space must be an autotile.space.Space, got "
                        f"{type(space).__name__} {short_repr(space)}")
    if not isinstance(measurer, Measurer):
        raise TypeError(
            f"measurer must be an autotile.measure.Measurer, got {type(measurer).__name__} "
            f"{short_repr(measurer)}; subclass Measurer and implement _measure(config) -> "
            f"MeasureResult")
    check_measurer_space(space, measurer)


def _label(space: Space) -> str:
    return repr(space.name) if space.name else repr(space)


def _knob_key(knob: Any) -> tuple[str, Any]:
    """A knob's kind and its values (a ``range`` for an IntRange: never listed)."""
    kind = str(getattr(type(knob), "kind", type(knob).__name__))
    if isinstance(knob, IntRange):
        return kind, range(knob.low, knob.high + 1, knob.step)
    if len(knob) > MAX_LISTED_VALUES:
        return kind, knob.to_json()
    return kind, tuple(knob.values)


def space_mismatch(space: Space, other: Space) -> str | None:
    """Say how ``other`` differs from ``space``, or return None if they hold the same configs.

    Two spaces match when they have the same knobs (names, kinds and values; declaration
    order may differ), the same constraint names and the same number of valid configs
    (and, for explicit spaces, the same valid configs). Names alone do not suffice:
    ``gemm_space(32)`` and ``gemm_space(64)`` have the same knob names.
    """
    if other is space:
        return None
    a, b = {k.name: k for k in space.knobs}, {k.name: k for k in other.knobs}
    if set(a) != set(b):
        return (f"the study's space {_label(space)} has knobs {list(space.names)}, the "
                f"measurer's space {_label(other)} has knobs {list(other.names)}")
    for name in space.names:
        ka, kb = _knob_key(a[name]), _knob_key(b[name])
        if ka != kb:
            return (f"knob {name!r} is {ka[0]} with values {short_repr(ka[1], 60)} in the "
                    f"study's space {_label(space)} but {kb[0]} with values "
                    f"{short_repr(kb[1], 60)} in the measurer's space {_label(other)}")
    ca = sorted(c.name for c in space.constraints)
    cb = sorted(c.name for c in other.constraints)
    if ca != cb:
        return (f"the study's space {_label(space)} has constraints {ca}, the measurer's "
                f"space {_label(other)} has constraints {cb}")
    if space.is_explicit != other.is_explicit or len(space) != len(other):
        return (f"the study's space {_label(space)} has {len(space)} valid configs, the "
                f"measurer's space {_label(other)} has {len(other)}")
    if space.is_explicit and set(space) != set(other):
        return (f"the study's space {_label(space)} and the measurer's space "
                f"{_label(other)} list different valid configs")
    return None


def check_measurer_space(space: Any, measurer: Any) -> None:
    """Raise ValueError if ``measurer.space`` (when it has one) is not the same space as ``space``.

    A measurer without a ``space`` attribute (e.g. one wrapping a plain function) is
    accepted as is.
    """
    other = getattr(measurer, "space", None)
    if not isinstance(space, Space) or not isinstance(other, Space):
        return
    why = space_mismatch(space, other)
    if why is not None:
        raise ValueError(f"the measurer must be built for the study's space: {why}")
