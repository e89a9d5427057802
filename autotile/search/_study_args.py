"""Checks and normalisation of the arguments of ``create_study``, ``tune`` and ``Study.optimize``.

Validated at the public boundary: each error names the rule and the value
(``n_trials must be an int >= 1, got n_trials=0``). :func:`resolve_storage`
also turns the storage argument into what ``optuna.create_study`` takes
(:data:`DEFAULT_STORAGE` when none is given, an SQLite URL for a file path).
"""

from __future__ import annotations

import numbers
import os
from typing import Any

import optuna
from optuna.storages import BaseStorage

from autotile.measure import Measurer
from autotile.space import Space

__all__ = ["DEFAULT_STORAGE", "short_repr", "is_int", "check_count", "check_timeout",
           "check_seed", "resolve_storage", "check_measurer"]

#: Storage used when none is given: an SQLite file in the current directory.
DEFAULT_STORAGE = "sqlite:///autotile_studies.db"
#: File suffixes a storage string without ``://`` may have: it names an SQLite file.
_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


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


def check_timeout(timeout: Any) -> None:
    if timeout is None:
        return
    if (not isinstance(timeout, numbers.Real) or isinstance(timeout, bool)
            or not float(timeout) > 0):
        raise ValueError(f"timeout must be a number of seconds > 0 or None, "
                         f"got timeout={timeout!r}")


def check_seed(seed: Any) -> None:
    if seed is not None and (not is_int(seed) or seed < 0):
        raise ValueError(f"seed must be None or an int >= 0, got seed={seed!r}")


def resolve_storage(storage: Any) -> str | BaseStorage:
    """Validate ``storage`` and turn a plain SQLite file path into a URL."""
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
    if "://" not in storage:
        if storage.lower().endswith(_SQLITE_SUFFIXES):
            storage = f"sqlite:///{storage}"
        else:
            raise ValueError(
                f"storage must be an Optuna storage URL (with '://'), an SQLite file path "
                f"ending in {'/'.join(_SQLITE_SUFFIXES)} or ':memory:', got storage={storage!r}; "
                f"e.g. storage='sqlite:///file.db'")
    url: str = storage
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):].partition("?")[0]
        parent = os.path.dirname(path)
        if path and path != ":memory:" and parent and not os.path.isdir(parent):
            raise ValueError(
                f"storage must be an SQLite file in an existing directory, got "
                f"storage={url!r} (directory {parent!r} does not exist)")
    return url


def check_measurer(space: Space, measurer: Any) -> None:
    if not isinstance(space, Space):
        raise TypeError(f"space must be an autotile.space.Space, got "
                        f"{type(space).__name__} {short_repr(space)}")
    if not isinstance(measurer, Measurer):
        raise TypeError(
            f"measurer must be an autotile.measure.Measurer, got {type(measurer).__name__} "
            f"{short_repr(measurer)}; subclass Measurer and implement _measure(config) -> "
            f"MeasureResult")
    other = getattr(measurer, "space", None)
    if isinstance(other, Space) and other is not space and set(other.names) != set(space.names):
        raise ValueError(
            f"the measurer must be built for the study's space: the study's space "
            f"{space.name or 'space'!r} has knobs {list(space.names)}, the measurer's space "
            f"{other.name or 'space'!r} has knobs {list(other.names)}")
