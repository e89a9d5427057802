"""Compile candidates ahead, in worker processes, each under a time limit.

A GPU tuning compiles every candidate before it times any: :class:`CompilePool`
hands the compile jobs to ``n_jobs`` worker processes (``spawn``: each may
create its own CUDA context), so they compile in parallel into Triton's
on-disk cache, and the tuner's own first launch of a config only loads the
binary. A job that runs longer than ``timeout_s`` is stopped by terminating
its worker (a compiler cannot be interrupted otherwise); a fresh worker
takes the remaining jobs. The pool knows nothing of Triton: a job is any
picklable value and ``worker_fn(job)`` any module-level function that
compiles it (returns on success, raises on error).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from autotile.errors import InvalidConfigError

__all__ = ["CompilePool", "CompileOutcome", "COMPILE_STATUSES", "SharedJobs"]

#: ``"ok"``: compiled; ``"error"``: ``worker_fn`` raised (``error`` is the
#: exception's text and ``error_type`` its class names); ``"timeout"``: stopped
#: after ``timeout_s``; ``"crashed"``: the worker process died.
COMPILE_STATUSES = ("ok", "error", "timeout", "crashed")


@dataclass(frozen=True)
class CompileOutcome:
    """What happened to one compile job.

    Attributes
    ----------
    status : {"ok", "error", "timeout", "crashed"}
        See :data:`COMPILE_STATUSES`.
    compile_s : float
        Seconds from the job's start in its worker to its end (or to the
        time limit).
    error : str or None
        ``"TypeName: message"`` of the exception, or why the job stopped.
    error_types : tuple of str
        Class names of the exception and of its bases and causes (e.g.
        ``("OutOfResources", ...)``), so the parent can classify it without
        unpickling the exception.
    """

    status: str
    compile_s: float
    error: str | None = None
    error_types: tuple[str, ...] = ()


class SharedJobs:
    """Jobs shared by the caller, who takes them from the front, and a pool, from the back.

    :meth:`CompilePool.serve` hands a job to a worker only once that worker is
    ready (its start-up done), taking the last job not yet taken; the caller
    takes the first with :meth:`take_front` and compiles it itself. No job is
    taken twice, except that the caller may :meth:`take_over` a job a worker
    still runs (it then compiles it too; the worker's outcome is still kept).
    Thread-safe.

    Parameters
    ----------
    n_jobs : int
        Number of jobs, indexed ``0 .. n_jobs - 1`` in the caller's order.

    Attributes
    ----------
    outcomes : dict of int to CompileOutcome
        Outcomes of the jobs the workers finished.
    by_pool : list of int
        Jobs in the order workers took them.
    """

    def __init__(self, n_jobs: int) -> None:
        self._lock = threading.Lock()
        self._todo: deque[int] = deque(range(n_jobs))
        self._running: set[int] = set()
        self.outcomes: dict[int, CompileOutcome] = {}
        self.by_pool: list[int] = []
        #: set by the caller: the pool stops (its running jobs are abandoned)
        self.stop = threading.Event()
        #: set by the caller: it takes no more jobs; the pool runs every job left
        self.drain = threading.Event()

    def take_front(self) -> int | None:
        """The first job nobody has taken (now the caller's), or None."""
        with self._lock:
            return self._todo.popleft() if self._todo else None

    def take_back(self) -> int | None:
        """The last job nobody has taken (now a worker's), or None."""
        with self._lock:
            if not self._todo:
                return None
            i = self._todo.pop()
            self._running.add(i)
            self.by_pool.append(i)
            return i

    def finish(self, i: int, outcome: CompileOutcome) -> None:
        """Book a worker's outcome of job ``i``."""
        with self._lock:
            self._running.discard(i)
            self.outcomes[i] = outcome

    def take_over(self) -> int | None:
        """The first job a worker still runs, no longer counted as running, or None."""
        with self._lock:
            if not self._running:
                return None
            i = min(self._running)
            self._running.discard(i)
            return i

    def n_left(self) -> int:
        """Jobs not taken plus jobs running in a worker."""
        with self._lock:
            return len(self._todo) + len(self._running)


def _error_types(exc: BaseException) -> tuple[str, ...]:
    names: list[str] = []
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        names += [t.__name__ for t in type(e).__mro__]
        e = e.__cause__ or e.__context__
    return tuple(dict.fromkeys(names))


def _warn_not_started(kind: str, why: str) -> None:
    """Warn that a compile worker could not start (``kind`` ``"init_error"`` or ``"no_start"``).

    The tuning goes on (this process compiles what the workers cannot), but
    slower than it would with them; a worker that died later (``"lost"``)
    is not warned about: its job's outcome says it.
    """
    if kind in ("init_error", "no_start"):
        warnings.warn(f"autotile: {why}; the configs it would have compiled compile in this "
                      f"process", RuntimeWarning, stacklevel=3)


def _worker_main(conn: Connection, worker_fn: Callable[[Any], Any],
                 init_fn: Callable[[], Any] | None, env: dict[str, str] | None = None) -> None:
    """Loop of one worker: init once, then ``(i, job)`` in, ``("start"|"done", i, ...)`` out.

    ``env``: the parent's environment when it started the worker, taken before
    ``init_fn`` (a ``"forkserver"`` worker is a fork of the server, whose
    environment is the parent's when the server started).
    """
    if env is not None and dict(os.environ) != env:
        os.environ.clear()
        os.environ.update(env)
    if init_fn is not None:
        try:
            init_fn()
        except BaseException as exc:  # noqa: BLE001 - reported, then the worker ends
            conn.send(("init_error", -1, f"{type(exc).__name__}: {exc}"[:2000],
                       _error_types(exc)))
            return
    conn.send(("ready", -1, None, ()))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        i, job = msg
        conn.send(("start", i, None, ()))
        try:
            worker_fn(job)
        except BaseException as exc:  # noqa: BLE001 - a failed compile is data
            conn.send(("done", i, f"{type(exc).__name__}: {exc}"[:2000], _error_types(exc)))
        else:
            conn.send(("done", i, None, ()))


class _Worker:
    def __init__(self, ctx: Any, worker_fn: Callable[[Any], Any],
                 init_fn: Callable[[], Any] | None) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main,
                                args=(child, worker_fn, init_fn, dict(os.environ)), daemon=True)
        self.proc.start()
        child.close()
        self.born = time.monotonic()
        self.ready = False
        self.job: int | None = None
        self.started_at: float | None = None

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(2.0)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join(2.0)
        self.conn.close()


class CompilePool:
    """Worker processes that compile jobs in parallel, each under a time limit.

    Use as a context manager (the workers stay up across :meth:`run` calls,
    so each pays its start-up, e.g. importing Triton, once)::

        with CompilePool(compile_one, n_jobs=8, timeout_s=30.0) as pool:
            outcomes = pool.run(jobs)

    Parameters
    ----------
    worker_fn : callable
        ``worker_fn(job)``, a module-level (picklable) function run in a
        worker; it returns on success and raises on a failed compile.
    n_jobs : int, default=8
        Worker processes, ``>= 1`` (fewer are started for fewer jobs).
    timeout_s : float or None, default=60.0
        Longest time one job may take, in seconds, counted from its start in
        the worker (worker start-up and ``init_fn`` excluded); None: no limit.
    init_fn : callable, optional
        Run once in each worker before its first job (module-level).
    start_timeout_s : float, default=300.0
        Longest time a worker may take to start (imports and ``init_fn``);
        its job is then ``"crashed"``.
    mp_context : str, default="spawn"
        :mod:`multiprocessing` start method; ``"spawn"`` and ``"forkserver"``
        are the ones that are safe once the parent holds a CUDA context (the
        fork server is started by a process that has none, on its first use).
    preload : sequence of str, default=()
        Modules the ``"forkserver"`` server imports once, when it starts
        (:meth:`multiprocessing.context.ForkServerContext.set_forkserver_preload`;
        ignored by the other start methods, and by a server already started):
        each worker is then a fork of a process that has them imported, and
        does not import them again. Whatever the start method, a worker runs
        with the parent's environment (``os.environ``) as it was when the
        worker started; what a preloaded module read from the environment at
        its import is the server's, i.e. the parent's when the server started.

    Raises
    ------
    InvalidConfigError
        If ``n_jobs < 1``, ``timeout_s`` is not positive or ``preload`` is not
        a sequence of module names.
    """

    def __init__(self, worker_fn: Callable[[Any], Any], n_jobs: int = 8,
                 timeout_s: float | None = 60.0, init_fn: Callable[[], Any] | None = None,
                 start_timeout_s: float = 300.0, mp_context: str = "spawn",
                 preload: Sequence[str] = ()) -> None:
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
            raise InvalidConfigError(f"n_jobs must be an int >= 1, got n_jobs={n_jobs!r}")
        if timeout_s is not None and not timeout_s > 0:
            raise InvalidConfigError(f"timeout_s must be > 0 seconds or None, got "
                                     f"timeout_s={timeout_s!r}")
        self.worker_fn = worker_fn
        self.n_jobs = n_jobs
        self.timeout_s = None if timeout_s is None else float(timeout_s)
        self.init_fn = init_fn
        self.start_timeout_s = float(start_timeout_s)
        if isinstance(preload, str) or not all(isinstance(m, str) for m in preload):
            raise InvalidConfigError(f"preload must be a sequence of module names, got "
                                     f"preload={preload!r}")
        self.preload = tuple(preload)
        self._ctx = mp.get_context(mp_context)
        self._workers: list[_Worker] = []
        #: one start at a time; close() bumps the generation, so that a worker whose
        #: start ends after a close is stopped instead of joining the pool
        self._start_lock = threading.Lock()
        self._lock = threading.Lock()
        self._generation = 0
        self._starters: list[threading.Thread] = []

    def __enter__(self) -> CompilePool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker at once and wait until each process is gone.

        Each worker is terminated without being asked to exit first: a worker
        that imported Triton and PyTorch can take seconds to exit on its own,
        which the first H200 run paid one by one (3.5 s of a 12.7 s tuning), and
        one still starting up (importing PyTorch, creating its CUDA context)
        cannot read a request to exit before its start-up ends. The earlier
        close asked idle workers to exit and waited 0.2 s for them before
        terminating: on the H200 (v4 run) every tuning whose first compile was
        fast, which closes the pool while its workers are still starting, paid
        that 0.2 s in full (the compile phase exceeded the configs' compile
        times by 0.21-0.24 s in all five such tunings). A worker still alive
        2 s after its termination is killed.
        """
        with self._lock:
            self._generation += 1
            workers, self._workers = self._workers, []
        for w in workers:
            if w.proc.is_alive():
                w.proc.terminate()
        deadline = time.monotonic() + 2.0
        for w in workers:
            w.proc.join(max(0.0, deadline - time.monotonic()))
            if w.proc.is_alive():
                w.proc.kill()
                w.proc.join(1.0)
            w.conn.close()

    def start(self, n_workers: int) -> None:
        """Start up to ``n_workers`` workers now (at most ``n_jobs``), without waiting for them.

        Their start-up (imports, ``init_fn``) then overlaps with what the
        caller does before :meth:`run`. Starting a process returns at once
        with ``"spawn"`` and ``"fork"``; with ``"forkserver"`` the first start
        of the process returns only once the server has imported its
        ``preload`` (PyTorch and Triton: seconds), so the workers are started
        from a helper thread: :meth:`run` and :meth:`serve` wait for that
        start, and a :meth:`close` meanwhile stops each worker as its start
        ends.

        Parameters
        ----------
        n_workers : int
            Workers the pool should hold; those already up count.
        """
        if self._ctx.get_start_method() == "forkserver":
            # the generation of this call, not of the thread's first step: a close() before
            # the thread runs must stop it from starting workers for a closed pool
            with self._lock:
                generation = self._generation
            starter = threading.Thread(target=self._start_now, args=(n_workers, generation),
                                       name="autotile-pool-start", daemon=True)
            self._starters.append(starter)
            starter.start()
        else:
            self._start_now(n_workers)

    def _join_starters(self) -> None:
        """Wait for the threads of earlier :meth:`start` calls.

        Such a thread may not yet hold the start lock when :meth:`run` or
        :meth:`serve` asks for it.
        """
        while True:
            try:
                starter = self._starters.pop(0)
            except IndexError:
                return
            starter.join()

    def _start_now(self, n_workers: int, generation: int | None = None) -> None:
        """:meth:`start`, waiting for each process's start (after any other start).

        ``generation``: the pool's generation when the start was asked for
        (None: now); if the pool was closed since, nothing starts.
        """
        with self._start_lock:
            if generation is None:
                generation = self._generation
            if self.preload and self._ctx.get_start_method() == "forkserver":
                # the server reads it when it starts (the first worker of the process)
                self._ctx.set_forkserver_preload(list(self.preload))
            while True:
                with self._lock:
                    if (generation != self._generation
                            or len(self._workers) >= min(self.n_jobs, n_workers)):
                        return  # closed before this worker's start, or enough workers
                w = _Worker(self._ctx, self.worker_fn, self.init_fn)
                with self._lock:
                    closed = generation != self._generation
                    if not closed:
                        self._workers.append(w)
                if closed:  # the pool was closed while this worker started
                    w.stop()
                    return

    def run(self, jobs: Sequence[Any]) -> list[CompileOutcome]:
        """Compile ``jobs`` and return one :class:`CompileOutcome` each, in order.

        Jobs start in the given order as workers free up.
        """
        out: list[CompileOutcome | None] = [None] * len(jobs)
        todo = deque(range(len(jobs)))
        self._join_starters()
        self._start_now(len(jobs))
        while any(o is None for o in out):
            for w in list(self._workers):  # hand out work
                if w.ready and w.job is None and todo:
                    i = todo.popleft()
                    w.job, w.started_at = i, None
                    w.conn.send((i, jobs[i]))
            if not self._workers:
                break
            for w, kind, i, what in self._events():
                if kind == "done" or kind == "timeout":
                    out[i] = what
                    w.job, w.started_at = None, None
                    if kind == "timeout":
                        self._replace(w, bool(todo))
                else:  # lost, init_error or no_start; a worker that could not start is
                    # not replaced
                    _warn_not_started(kind, what)
                    self._lost(w, out, todo, what, restart=kind == "lost")
            if not self._workers and todo:  # every worker is gone: the rest cannot compile
                while todo:
                    out[todo.popleft()] = CompileOutcome(
                        "crashed", 0.0, "no compile worker could be started")
        return [o if o is not None else CompileOutcome("crashed", 0.0, "not run") for o in out]

    def serve(self, jobs: Sequence[Any], shared: SharedJobs, n_workers: int) -> None:
        """Compile jobs of ``shared`` from its back in up to ``n_workers`` workers.

        Runs until ``shared.stop`` is set, or until ``shared.drain`` is set and
        no job is left. A worker gets a job only once it is ready. Each
        outcome is booked with :meth:`SharedJobs.finish`. On ``stop``, the
        workers still running a job are stopped (the caller compiles those
        jobs itself). A worker that cannot start is not replaced: without
        workers the caller compiles every job, unless ``drain`` is set, where
        the jobs left are ``"crashed"``.
        """
        self._join_starters()
        self._start_now(n_workers)
        try:
            self._serve(jobs, shared)
        finally:
            for w in list(self._workers):  # a job still running is the caller's now
                if w.job is not None:
                    w.stop()
                    self._workers.remove(w)

    def _serve(self, jobs: Sequence[Any], shared: SharedJobs) -> None:
        while not shared.stop.is_set():
            for w in self._workers:  # hand out work to ready, idle workers
                if w.ready and w.job is None:
                    i = shared.take_back()
                    if i is None:
                        break
                    w.job, w.started_at = i, None
                    w.conn.send((i, jobs[i]))
            if shared.drain.is_set() and shared.n_left() == 0:
                return
            if not self._workers:
                if shared.drain.is_set():
                    while (i := shared.take_back()) is not None:
                        shared.finish(i, CompileOutcome("crashed", 0.0,
                                                        "no compile worker could be started"))
                    return
                shared.stop.wait(0.05)
                continue
            for w, kind, i, what in self._events():
                if kind == "done" or kind == "timeout":
                    shared.finish(i, what)
                    w.job, w.started_at = None, None
                    if kind == "timeout":
                        self._replace(w, shared.n_left() > 0)
                else:  # lost, init_error or no_start: not replaced
                    _warn_not_started(kind, what)
                    if w.job is not None:
                        shared.finish(w.job, CompileOutcome("crashed", 0.0, what))
                    w.job = None
                    w.stop()
                    self._workers.remove(w)

    def _events(self) -> Iterator[tuple[_Worker, str, int, Any]]:
        """Wait up to 0.05 s for the workers, then yield what happened to each.

        ``"ready"`` and ``"start"`` messages are booked on the worker here;
        each other event is yielded as ``(worker, kind, i, what)``:

        * ``"done"``: job ``i`` ended, ``what`` is its :class:`CompileOutcome`
          (``"ok"`` or ``"error"``, timed from the worker's ``"start"``);
        * ``"timeout"``: job ``i`` ran past ``timeout_s``; ``what`` is its outcome;
        * ``"lost"``: the worker's pipe broke or its process died;
        * ``"init_error"``: ``init_fn`` raised in the worker;
        * ``"no_start"``: the worker did not start within ``start_timeout_s``.

        For the last three, ``i`` is -1 and ``what`` the reason (a str). The
        caller may remove workers from ``self._workers`` between events.
        """
        ready = wait([w.conn for w in self._workers], timeout=0.05)
        now = time.monotonic()
        for w in list(self._workers):
            if w.conn in ready:
                try:
                    kind, i, err, types = w.conn.recv()
                except (EOFError, OSError):
                    yield w, "lost", -1, "the compile worker process died"
                    continue
                if kind == "ready":
                    w.ready = True
                elif kind == "start":
                    w.started_at = now
                elif kind == "init_error":
                    yield w, kind, -1, f"the compile worker failed to start: {err}"
                else:
                    yield w, "done", i, CompileOutcome(
                        "ok" if err is None else "error", now - (w.started_at or now), err,
                        tuple(types))
            elif not w.proc.is_alive():
                yield w, "lost", -1, (f"the compile worker process died (exit code "
                                      f"{w.proc.exitcode})")
            elif (w.job is not None and w.started_at is not None
                  and self.timeout_s is not None and now - w.started_at > self.timeout_s):
                yield w, "timeout", w.job, CompileOutcome(
                    "timeout", now - w.started_at,
                    f"compile took longer than {self.timeout_s:g} s (compile_timeout_s); "
                    f"stopped")
            elif not w.ready and now - w.born > self.start_timeout_s:
                yield w, "no_start", -1, (f"the compile worker did not start within "
                                          f"{self.start_timeout_s:g} s")

    def _replace(self, w: _Worker, more: bool) -> None:
        """Stop a worker whose job ran out of time; start another one if work is left."""
        w.stop()
        self._workers.remove(w)
        if more:
            self._workers.append(_Worker(self._ctx, self.worker_fn, self.init_fn))

    def _lost(self, w: _Worker, out: list[CompileOutcome | None], todo: deque[int], why: str,
              restart: bool = True) -> None:
        """A worker died: its job is ``"crashed"``; start another one while work is left."""
        if w.job is not None:
            out[w.job] = CompileOutcome("crashed", 0.0, why)
        elif not restart:
            # a worker that cannot start: give its share of the queue the same reason
            if len(self._workers) == 1:
                while todo:
                    out[todo.popleft()] = CompileOutcome("crashed", 0.0, why)
        w.job = None
        w.stop()
        self._workers.remove(w)
        if restart and todo:
            self._workers.append(_Worker(self._ctx, self.worker_fn, self.init_fn))
