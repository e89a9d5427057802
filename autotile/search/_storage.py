"""``open_storage``: an Optuna storage that several workers can share, with heartbeats.

Every storage this module builds detects abandoned trials with Optuna's
heartbeat: each worker records a heartbeat for the trials it runs, and a
RUNNING trial whose heartbeat stops for ``grace_period`` seconds is failed
by :func:`optuna.storages.fail_stale_trials` and queued again as a WAITING
trial by :class:`RetryStaleTrial` (Optuna's ``RetryFailedTrialCallback``).

* SQLite (``sqlite:///file.db`` or a ``.db`` path) and other databases
  (``postgresql://``, ``mysql://``): :class:`optuna.storages.RDBStorage`
  with its own heartbeat table. On SQLite every transaction starts with
  ``BEGIN IMMEDIATE``, so that a read-check-write such as "pop a WAITING
  trial" or "tell a RUNNING trial" is atomic (SQLite has no ``SELECT ...
  FOR UPDATE``). A new file created by several workers at once is retried.
* A journal file (``journal:///path`` or a ``.log``/``.journal`` path): a
  :class:`optuna.storages.JournalStorage` over a
  :class:`~optuna.storages.journal.JournalFileBackend` whose writes are
  serialised by :class:`ProcessFileLock`, an OS file lock (``flock``) that
  dies with the process holding it. Optuna's own lock files outlive a
  killed worker and are broken after a grace period, which can hand one
  lock to two live workers. Optuna's journal storage has no
  heartbeat; :class:`HeartbeatJournalStorage` adds one as a trial system
  attribute, judged stale by the observer's own clock (no clock skew
  between hosts).

A corrupt or truncated SQLite file or journal file raises
:class:`~autotile.errors.CorruptFileError` naming the file, before anything
is written to it.
"""

from __future__ import annotations

import inspect
import math
import os
import sqlite3
import time
import warnings
from collections.abc import Callable
from typing import Any, cast

import filelock
import optuna
from optuna.storages import BaseStorage, InMemoryStorage, JournalStorage, RDBStorage
from optuna.storages._heartbeat import BaseHeartbeat
from optuna.trial import FrozenTrial, TrialState

from autotile.errors import CorruptFileError
from autotile.search._study_args import _hide_password, resolve_storage, storage_driver_error

__all__ = ["open_storage", "HeartbeatJournalStorage", "ProcessFileLock", "RetryStaleTrial",
           "DEFAULT_HEARTBEAT_INTERVAL", "DEFAULT_GRACE_PERIOD", "storage_path",
           "retried_numbers", "RetriedScan"]

#: Seconds between two heartbeats of a running trial.
DEFAULT_HEARTBEAT_INTERVAL = 5
#: Seconds without a heartbeat after which a running trial is abandoned.
DEFAULT_GRACE_PERIOD = 20
#: Trial system attribute holding the journal storage's heartbeat.
HEARTBEAT_ATTR = "autotile:heartbeat"
#: SQLite's busy timeout (seconds a connection waits for another's write lock).
_SQLITE_TIMEOUT_S = 60.0
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Tables of an Optuna RDB storage; an SQLite file with other tables only is refused.
_OPTUNA_TABLES = {"studies", "trials", "version_info", "alembic_version"}

try:  # Optuna >= 4.9 renamed the callback
    from optuna.storages import RetryHeartbeatStaleTrialCallback as _RetryBase
except ImportError:  # pragma: no cover - older Optuna
    from optuna.storages import RetryFailedTrialCallback as _RetryBase


def retried_numbers(trials: list[FrozenTrial]) -> set[int]:
    """Numbers of the trials that were abandoned and queued again.

    A trial failed by the heartbeat and queued again by
    ``RetryFailedTrialCallback`` appears in the ``"retry_history"`` system
    attribute of its retry; it is not one of the study's trials for the
    budget, the history or the searchers.

    Parameters
    ----------
    trials : list of optuna.trial.FrozenTrial
        The study's trials.

    Returns
    -------
    set of int
        Trial numbers.
    """
    out: set[int] = set()
    for t in trials:
        out.update(int(n) for n in t.system_attrs.get("retry_history", ()) or ())
    return out


class RetriedScan:
    """:func:`retried_numbers` of a growing trial list, read incrementally.

    A trial's ``"retry_history"`` is written when the trial is created (the
    retry callback adds it as a new trial) and never changes, and a study's
    trials only grow, in number order; so each :meth:`update` reads only the
    trials it has not seen. A list shorter than the one seen last starts
    over.
    """

    def __init__(self) -> None:
        self._n_seen = 0
        self.numbers: set[int] = set()

    def update(self, trials: list[FrozenTrial]) -> set[int]:
        """Return the numbers of the retried trials of ``trials`` (the study's, in order)."""
        if len(trials) < self._n_seen:
            self._n_seen, self.numbers = 0, set()
        for t in trials[self._n_seen:]:
            self.numbers.update(int(n) for n in t.system_attrs.get("retry_history", ()) or ())
        self._n_seen = len(trials)
        return self.numbers


class RetryStaleTrial(_RetryBase):
    """Optuna's ``RetryFailedTrialCallback``, queueing each abandoned trial at most once.

    A heartbeat-stale trial is queued again as a WAITING trial with the same
    parameters and attributes (so the same config, see
    :class:`autotile.search.SpaceSearcher`). Several workers may fail the
    same trial; only the first call queues it (workers call
    :func:`optuna.storages.fail_stale_trials` under the study lock).

    Parameters
    ----------
    max_retry : int, default=3
        A trial abandoned this many times (its worker died each time, e.g. a
        config that crashes the process) stays FAIL.
    """

    def __init__(self, max_retry: int = 3) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # experimental / renamed-class warnings
            super().__init__(max_retry=max_retry)

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Queue ``trial`` again unless a retry of it exists."""
        if trial.number in retried_numbers(study._storage.get_all_trials(
                study._study_id, deepcopy=False)):
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            super().__call__(study, trial)


class ProcessFileLock:
    """The journal file's write lock: an OS file lock released when its holder dies.

    Optuna's ``JournalFileOpenLock`` and ``JournalFileSymlinkLock`` mark the
    lock by creating a file. A worker killed while it holds one leaves the
    file behind; every other worker then waits out a grace period (30 s) and
    deletes it. When two workers wait, both may delete, and the second
    deletes the lock that the first has just taken: two live workers then
    write at once, and one of them fails with ``RuntimeError: Error: did not
    possess lock`` on release. This lock is an advisory ``flock`` (through
    the :mod:`filelock` library) on ``<journal>.flock``; the kernel drops it
    the moment its holder exits, however it exits, so no grace period or
    forced release exists.

    It has the two methods of Optuna's ``BaseJournalFileLock`` that
    :class:`~optuna.storages.journal.JournalFileBackend` calls.

    Parameters
    ----------
    path : str
        The journal file's path; the lock file is ``path + ".flock"``.

    Notes
    -----
    Optuna's own tools (``optuna`` CLI, dashboard) writing to the same journal
    take Optuna's lock, not this one: write to a shared journal only through
    autotile while its workers run. On NFS, Linux maps ``flock`` to NFS
    byte-range locks (NFSv3 with ``lockd``, or NFSv4).
    """

    def __init__(self, path: str) -> None:
        self._lock = filelock.FileLock(path + ".flock", thread_local=False)

    def acquire(self) -> bool:
        """Block until this process holds the lock; returns True."""
        self._lock.acquire()
        return True

    def release(self) -> None:
        """Release the lock (raises ``RuntimeError`` if it was not held)."""
        if not self._lock.is_locked:
            raise RuntimeError("Error: did not possess lock")
        self._lock.release()


class HeartbeatJournalStorage(JournalStorage, BaseHeartbeat):
    """A :class:`optuna.storages.JournalStorage` with Optuna's heartbeat.

    A heartbeat is the trial system attribute ``"autotile:heartbeat"`` (the
    writer's time, for people reading the log). A RUNNING trial is stale
    when this process has seen its heartbeat unchanged for more than
    ``grace_period`` seconds of its own monotonic clock, so hosts whose
    clocks differ agree; a process that has just started waits
    ``grace_period`` before it fails anything. Time during which the log
    took no writes does not count: a process that waited longer than
    ``heartbeat_interval`` to append (the journal's lock held by a writer
    that died, until the lock's own grace period breaks it) restarts its
    clocks, and a process that saw nothing appended for two intervals
    appends a ``"autotile:ping"`` study attribute first.

    Parameters
    ----------
    log_storage : optuna.storages.journal.BaseJournalBackend
        The log (a ``JournalFileBackend``).
    heartbeat_interval : int
        Seconds between heartbeats, ``>= 1``.
    grace_period : int, optional
        Seconds without a heartbeat before a trial is stale; default
        ``4 * heartbeat_interval``.
    heartbeat_stale_trial_callback : callable, optional
        Called as ``callback(study, trial)`` for each trial failed as stale.
    """

    def __init__(self, log_storage: Any, heartbeat_interval: int,
                 grace_period: int | None = None,
                 heartbeat_stale_trial_callback: Callable[[optuna.Study, FrozenTrial], None]
                 | None = None) -> None:
        super().__init__(log_storage)
        self.heartbeat_interval = int(heartbeat_interval)
        self.grace_period = grace_period
        self.heartbeat_stale_trial_callback = heartbeat_stale_trial_callback
        self._seen: dict[int, tuple[Any, float]] = {}
        self._stall_end = -math.inf  # when this process last waited long to append
        self._last_n = -1
        self._last_growth = time.monotonic()

    def _write_log(self, op_code: int, extra_fields: dict[str, Any]) -> None:
        t0 = time.monotonic()
        super()._write_log(op_code, extra_fields)
        if time.monotonic() - t0 > self.heartbeat_interval:
            # the log could not be appended to for a while (e.g. a writer died holding its
            # lock, which is broken after 30 s): nobody's heartbeat got through either
            self._stall_end = time.monotonic()

    def record_heartbeat(self, trial_id: int) -> None:
        """Write the trial's heartbeat (a finished trial is left alone)."""
        try:
            self.set_trial_system_attr(trial_id, HEARTBEAT_ATTR, round(time.time(), 3))
        except (optuna.exceptions.UpdateFinishedTrialError, KeyError):
            pass

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        grace = self.grace_period or 4 * self.heartbeat_interval
        running = self.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,))
        now = time.monotonic()
        n_read = self._replay_result.log_number_read
        if n_read != self._last_n:
            self._last_n, self._last_growth = n_read, now
        elif running and now - self._last_growth > 2 * self.heartbeat_interval:
            # nothing appended lately: check that the log takes writes before judging
            self.set_study_system_attr(study_id, "autotile:ping", round(time.time(), 3))
            now = self._last_growth = time.monotonic()
        stale = []
        for t in running:
            beat = t.system_attrs.get(HEARTBEAT_ATTR)
            seen = self._seen.get(t._trial_id)
            if seen is None or seen[0] != beat:
                self._seen[t._trial_id] = (beat, now)
            elif now - max(seen[1], self._stall_end) > grace:
                stale.append(t._trial_id)
        return stale

    def get_heartbeat_interval(self) -> int | None:
        """Seconds between heartbeats."""
        return self.heartbeat_interval

    def get_heartbeat_stale_trial_callback(
            self) -> Callable[[optuna.Study, FrozenTrial], None] | None:
        """The callback run on each trial failed as stale."""
        return self.heartbeat_stale_trial_callback

    def get_failed_trial_callback(self) -> Callable[[optuna.Study, FrozenTrial], None] | None:
        """The same callback (Optuna before 4.9 calls it by this name)."""
        return self.heartbeat_stale_trial_callback


def storage_path(storage: Any) -> tuple[str, str] | None:
    """``(kind, path)`` of a file-backed storage (``"sqlite"`` or ``"journal"``), else None."""
    inner = getattr(storage, "_backend", None) if type(storage).__name__ == "_CachedStorage" \
        else storage
    if isinstance(inner, RDBStorage):
        url = inner.engine.url
        if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
            return "sqlite", os.path.abspath(str(url.database))
        return None
    if isinstance(inner, JournalStorage):
        path = getattr(getattr(inner, "_backend", None), "_file_path", None)
        return ("journal", os.path.abspath(path)) if path else None
    return None


def _check_sqlite_file(path: str) -> None:
    """Raise CorruptFileError unless ``path`` is missing, empty or a sound Optuna SQLite file.

    Read-only: the file is opened with ``mode=ro`` and never written.
    """
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        return
    if size == 0:
        return  # SQLite's own convention: an empty file is an empty database
    with open(path, "rb") as f:
        head = f.read(100)
    hint = "move it away (or pass another storage) to start a new study file"
    if not head.startswith(_SQLITE_MAGIC):
        raise CorruptFileError(
            f"study storage {path!r} is not an SQLite database (its first bytes are "
            f"{head[:16]!r}, not {_SQLITE_MAGIC!r}; {size} bytes); {hint}")
    page = int.from_bytes(head[16:18], "big") if len(head) >= 18 else 0
    page = 65536 if page == 1 else page
    n_pages = int.from_bytes(head[28:32], "big") if len(head) >= 32 else 0
    if len(head) < 100 or (page and n_pages and size < page * n_pages):
        raise CorruptFileError(
            f"study storage {path!r} is truncated: its header declares "
            f"{n_pages} pages of {page} bytes ({n_pages * page} bytes) but the file has "
            f"{size} bytes; {hint}")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=_SQLITE_TIMEOUT_S)
        try:
            check = [r[0] for r in con.execute("PRAGMA quick_check").fetchall()]
            tables = {r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table'").fetchall()}
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise CorruptFileError(
            f"study storage {path!r} is a corrupt SQLite database ({exc}); {hint}") from None
    if check != ["ok"]:
        raise CorruptFileError(
            f"study storage {path!r} is a corrupt SQLite database (integrity check: "
            f"{'; '.join(map(str, check[:3]))}); {hint}")
    if tables and not tables & _OPTUNA_TABLES:
        raise CorruptFileError(
            f"study storage {path!r} is an SQLite database but not an Optuna study storage "
            f"(its tables are {sorted(tables)[:5]}); pass another storage")


def _check_journal_file(path: str) -> None:
    """Raise CorruptFileError unless each complete line of the journal is a JSON operation."""
    import json

    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return
    with f:
        for number, line in enumerate(f, start=1):
            if not line.endswith(b"\n"):
                return  # a line being written (Optuna skips it too)
            try:
                op = json.loads(line)
            except ValueError as exc:
                raise CorruptFileError(
                    f"study journal {path!r} is corrupt: line {number} is not a JSON "
                    f"operation ({exc}: {line[:40]!r}); move the file away (or pass another "
                    f"storage) to start a new one") from None
            if not isinstance(op, dict) or "op_code" not in op:
                raise CorruptFileError(
                    f"study journal {path!r} is corrupt: line {number} is not an Optuna journal "
                    f"operation (no 'op_code': {line[:40]!r}); pass another storage")


def _immediate_transactions(engine: Any) -> None:
    """Make every SQLite transaction of ``engine`` start with ``BEGIN IMMEDIATE``."""
    from sqlalchemy import event

    engine.dispose()  # connections made while the tables were created keep pysqlite's BEGIN

    @event.listens_for(engine, "connect")
    def _no_implicit_begin(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.isolation_level = None
        # write-ahead log: a commit appends to one file instead of syncing a rollback journal
        # and the database (a crash of the process loses nothing; of the machine, at most
        # the last transactions)
        dbapi_connection.execute("PRAGMA journal_mode=WAL")
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")

    @event.listens_for(engine, "begin")
    def _begin_immediate(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _callback_kwarg() -> str:
    params = inspect.signature(RDBStorage.__init__).parameters
    return ("heartbeat_stale_trial_callback" if "heartbeat_stale_trial_callback" in params
            else "failed_trial_callback")


def _check_heartbeat(heartbeat_interval: Any, grace_period: Any) -> None:
    from autotile.search._study_args import is_int

    if heartbeat_interval is not None and (not is_int(heartbeat_interval)
                                           or heartbeat_interval < 1):
        raise ValueError(f"heartbeat_interval must be an int >= 1 (seconds) or None, got "
                         f"heartbeat_interval={heartbeat_interval!r}")
    if grace_period is not None and (not is_int(grace_period) or grace_period < 1):
        raise ValueError(f"grace_period must be an int >= 1 (seconds) or None, got "
                         f"grace_period={grace_period!r}")
    if heartbeat_interval is not None and grace_period is not None and (
            grace_period <= heartbeat_interval):
        raise ValueError(f"grace_period must be longer than heartbeat_interval, got "
                         f"grace_period={grace_period} <= heartbeat_interval="
                         f"{heartbeat_interval}: live trials would be failed as abandoned")


def open_storage(
    storage: Any = None,
    *,
    heartbeat_interval: int | None = DEFAULT_HEARTBEAT_INTERVAL,
    grace_period: int | None = DEFAULT_GRACE_PERIOD,
    max_retry: int = 3,
) -> BaseStorage:
    """Open a study storage that several workers (processes or machines) can share.

    Parameters
    ----------
    storage : str, path-like or optuna.storages.BaseStorage, optional
        Default: the SQLite file ``autotile_studies.db``. An SQLite file
        (``"runs.db"``, ``"sqlite:///runs.db"``), a database URL
        (``"postgresql://user:password@host/db"``, ``"mysql://..."``), a
        journal file (``"runs.log"``, ``"runs.journal"`` or
        ``"journal:///path/runs.log"``; for NFS), ``":memory:"`` (one
        process, no heartbeat) or a storage object (returned as is).
    heartbeat_interval : int or None, default=5
        Seconds between two heartbeats of a running trial, ``>= 1``; None
        turns heartbeats off (abandoned trials are then never detected).
    grace_period : int or None, default=20
        Seconds without a heartbeat after which a running trial is
        abandoned: failed and queued again (the same config) as a WAITING
        trial; longer than ``heartbeat_interval``. None: Optuna's default
        (twice the interval; four times for journal files).
    max_retry : int, default=3
        Times one trial may be abandoned and queued again.

    Returns
    -------
    optuna.storages.BaseStorage
        The storage; pass it as ``storage=`` to :func:`~autotile.search.tune`.

    Raises
    ------
    ValueError
        If the storage string is not a known URL or file kind, or the
        heartbeat settings are not ints ``>= 1`` with ``grace_period >
        heartbeat_interval``.
    CorruptFileError
        If an SQLite or journal file exists but is not a sound storage (not
        SQLite, truncated, failing SQLite's integrity check, another
        application's database, or a journal line that is not an Optuna
        operation). The file is not modified.
    ImportError
        If a database URL's driver is not installed (the message names the
        ``pip install`` command).
    ValueError
        If a database server cannot be reached or refuses the login: "cannot
        connect to storage <URL, password hidden>: <the driver's reason>".

    Examples
    --------
    >>> storage = open_storage("postgresql://tuner:secret@db-host/studies")  # doctest: +SKIP
    >>> autotile.tune(space, measurer, storage=storage, study_name="gemm")  # doctest: +SKIP
    """
    _check_heartbeat(heartbeat_interval, grace_period)
    resolved = resolve_storage(storage)
    if isinstance(resolved, BaseStorage):
        return resolved
    url = resolved
    callback = RetryStaleTrial(max_retry) if heartbeat_interval is not None else None
    if url.startswith("journal://"):
        from optuna.storages.journal import JournalFileBackend

        path = os.path.abspath(url[len("journal://"):])
        _check_journal_file(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            # duck-typed as optuna.storages.journal._file.BaseJournalFileLock (not exported)
            try:
                backend = JournalFileBackend(path, lock_obj=cast(Any, ProcessFileLock(path)))
            except OSError as exc:
                raise ValueError(
                    f"study journal {path!r} cannot be opened or created ({exc.strerror or exc})"
                    f": its directory must be writable by this process") from None
            try:
                if heartbeat_interval is None:
                    return JournalStorage(backend)
                return HeartbeatJournalStorage(backend, heartbeat_interval, grace_period,
                                               callback)
            except (ValueError, KeyError, TypeError) as exc:
                raise CorruptFileError(
                    f"study journal {path!r} cannot be replayed ({type(exc).__name__}: {exc}); "
                    f"pass another storage") from None
    kwargs: dict[str, Any] = {"heartbeat_interval": heartbeat_interval,
                              "grace_period": grace_period, _callback_kwarg(): callback}
    sqlite_path = None
    if url.startswith("sqlite:///"):
        sqlite_path = url[len("sqlite:///"):].partition("?")[0]
        if sqlite_path in ("", ":memory:"):
            sqlite_path = None
        else:
            _check_sqlite_file(sqlite_path)
            kwargs["engine_kwargs"] = {"connect_args": {"timeout": _SQLITE_TIMEOUT_S}}
    return _rdb_storage(url, kwargs, sqlite_path)


def unopenable_sqlite(where: str) -> ValueError:
    """The error for an SQLite file that cannot be opened or created (``where``: its path)."""
    return ValueError(f"study storage {where} cannot be opened or created (SQLite: unable "
                      f"to open database file): its directory must be writable by this "
                      f"process")


def unreachable_storage(url: str, exc: BaseException) -> ValueError:
    """The error for a database URL whose server cannot be reached (password hidden)."""
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return ValueError(f"cannot connect to storage {_hide_password(url)}: "
                      f"{reason[0] if reason else type(exc).__name__}")


def _rdb_storage(url: str, kwargs: dict[str, Any], sqlite_path: str | None) -> RDBStorage:
    """Build the RDBStorage, retrying when another worker is creating the same tables."""
    from sqlalchemy import exc as sa_exc

    deadline = time.monotonic() + 60.0
    delay = 0.05
    while True:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                st = RDBStorage(url, **kwargs)
            break
        except ImportError as exc:
            better = storage_driver_error(url, exc)
            if better is None:
                raise
            raise better from exc
        except (sa_exc.OperationalError, sa_exc.IntegrityError, sa_exc.ProgrammingError) as exc:
            # two workers creating a new database at once: "table ... already exists",
            # a duplicate key of the version row, or SQLite's "database is locked"
            text = str(exc).lower()
            transient = ("already exists" in text or "locked" in text or "unique" in text
                         or "duplicate" in text)
            if sqlite_path is not None and "not a database" in text:
                raise CorruptFileError(
                    f"study storage {sqlite_path!r} is not an SQLite database ({exc.orig}); "
                    f"move it away to start a new study file") from None
            if sqlite_path is not None and "unable to open database file" in text:
                raise unopenable_sqlite(repr(sqlite_path)) from None
            if sqlite_path is None and not transient and isinstance(exc, sa_exc.OperationalError):
                raise unreachable_storage(url, exc) from None
            if not transient or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(2 * delay, 1.0)
    if sqlite_path is not None:
        _immediate_transactions(st.engine)
    return st


def is_memory(storage: Any) -> bool:
    """Whether ``storage`` is an in-memory storage (one process)."""
    return isinstance(storage, InMemoryStorage)
