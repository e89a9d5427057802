"""``StudyLock``: a lock on one study, shared by every worker of the study.

Workers hold it for the few milliseconds in which they count the study's
trials, take a WAITING trial or create a new one, and choose its config.
Those steps are then atomic across workers, which makes the budget exact
and lets every searcher see every other worker's running trials.

The lock is the storage's own, and the operating system or the database
server releases it when its holder dies, so a killed worker never leaves
it held:

* PostgreSQL: ``pg_advisory_lock`` on one connection (a 64-bit key from
  the study name); MySQL/MariaDB: ``GET_LOCK``;
* SQLite and journal files: ``flock`` on a lock file next to the storage
  file (``<file>.autotile.lock``);
* other storages (in memory, other databases): a lock of this process only
  (one worker per study).

The lock is re-entrant within one :class:`StudyLock` object.
"""

from __future__ import annotations

import hashlib
import os
import threading
from types import TracebackType
from typing import Any

from optuna.storages import RDBStorage

from autotile.search._storage import storage_path

__all__ = ["StudyLock"]

#: Suffix of the lock file next to an SQLite or journal file.
LOCK_SUFFIX = ".autotile.lock"


class StudyLock:
    """A re-entrant lock on study ``study_name`` of ``storage``, shared by all its workers.

    Parameters
    ----------
    storage : optuna.storages.BaseStorage
        The study's storage.
    study_name : str
        The study.

    Attributes
    ----------
    kind : str
        ``"postgresql"``, ``"mysql"``, ``"file"`` or ``"process"`` (see the
        module docstring).
    """

    def __init__(self, storage: Any, study_name: str) -> None:
        self.study_name = study_name
        self._local = threading.RLock()
        self._depth = 0
        self._handle: Any = None
        self._engine: Any = None
        self._path: str | None = None
        digest = hashlib.sha256(study_name.encode()).digest()
        self._key = int.from_bytes(digest[:8], "big", signed=True)
        file = storage_path(storage)
        inner = getattr(storage, "_backend", storage) if type(
            storage).__name__ == "_CachedStorage" else storage
        if file is not None:
            self.kind = "file"
            self._path = file[1] + LOCK_SUFFIX
        elif isinstance(inner, RDBStorage) and inner.engine.url.get_backend_name() in (
                "postgresql", "mysql", "mariadb"):
            backend = inner.engine.url.get_backend_name()
            self.kind = "postgresql" if backend == "postgresql" else "mysql"
            self._engine = inner.engine
        else:
            self.kind = "process"

    def __repr__(self) -> str:
        return f"StudyLock({self.study_name!r}, kind={self.kind!r})"

    def __enter__(self) -> StudyLock:
        self._local.acquire()
        try:
            if self._depth == 0:
                self._acquire()
            self._depth += 1
        except BaseException:
            self._local.release()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self._depth -= 1
            if self._depth == 0:
                self._release()
        finally:
            self._local.release()

    # -- per kind --------------------------------------------------------------------
    def _acquire(self) -> None:
        from sqlalchemy import text

        if self.kind == "file":
            import fcntl

            assert self._path is not None
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            self._handle = fd
        elif self.kind == "postgresql":
            conn = self._engine.connect()
            try:
                conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": self._key})
                conn.commit()
            except BaseException:
                conn.close()
                raise
            self._handle = conn
        elif self.kind == "mysql":
            conn = self._engine.connect()
            try:
                name = f"autotile:{self._key:x}"
                conn.execute(text("SELECT GET_LOCK(:n, -1)"), {"n": name})
                conn.commit()
            except BaseException:
                conn.close()
                raise
            self._handle = conn

    def _release(self) -> None:
        from sqlalchemy import text

        handle, self._handle = self._handle, None
        if handle is None:
            return
        if self.kind == "file":
            import fcntl

            try:
                fcntl.flock(handle, fcntl.LOCK_UN)
            finally:
                os.close(handle)
        else:
            try:
                if self.kind == "postgresql":
                    handle.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self._key})
                else:
                    handle.execute(text("SELECT RELEASE_LOCK(:n)"),
                                   {"n": f"autotile:{self._key:x}"})
                handle.commit()
            finally:
                handle.close()
