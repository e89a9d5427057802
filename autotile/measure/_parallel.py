"""``parallel_map``: embarrassingly parallel work on joblib's processes or a Dask cluster.

The exhaustive :func:`~autotile.measure.sweep`, :func:`~autotile.search.compare`
runs and ``@autotune`` candidate scoring call ``fn(*shared, item)`` for many
independent items. By default joblib's process pool runs them on this
machine. Given a Dask ``distributed`` scheduler they run on its workers, on
any number of machines, through Dask futures: the shared arguments (a
measurer, a space, a table) are sent to each worker once
(``Client.scatter``) and every item is one task. ``scheduler="local"``
starts a :class:`distributed.LocalCluster` of ``n_jobs`` single-threaded
worker processes for the call, so the same Dask code runs on one machine.
Dask is an optional dependency (``pip install "autotile[dask]"``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

__all__ = ["parallel_map", "check_scheduler"]


def check_scheduler(scheduler: Any) -> None:
    """Raise unless ``scheduler`` is None, ``"local"``, an address or a Dask client.

    Raises
    ------
    ValueError
        If it is a string that is neither ``"local"`` nor a scheduler address
        (``"tcp://host:8786"``, ``"host:8786"``, ``"tls://..."``, ``"inproc://..."``).
    TypeError
        If it is of another type.
    ImportError
        If it is not None and Dask's ``distributed`` is not installed.
    """
    if scheduler is None:
        return
    if isinstance(scheduler, str):
        if scheduler != "local" and "://" not in scheduler and ":" not in scheduler:
            raise ValueError(
                f"scheduler must be 'local' (a LocalCluster on this machine), a Dask scheduler "
                f"address such as 'tcp://host:8786', a distributed.Client or None (joblib), "
                f"got scheduler={scheduler!r}")
    elif type(scheduler).__name__ != "Client":
        raise TypeError(f"scheduler must be None, 'local', an address or a distributed.Client, "
                        f"got {type(scheduler).__name__}")
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ImportError(
            f"scheduler={scheduler!r} needs Dask's distributed package: "
            f"`pip install \"autotile[dask]\"` (or `pip install distributed`)") from None


def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    return fn(item)


def _distributed() -> Any:
    import importlib

    return importlib.import_module("distributed")  # untyped: used through Any


@contextlib.contextmanager
def _client(scheduler: Any, n_jobs: int) -> Iterator[Any]:
    dd = _distributed()
    Client, LocalCluster = dd.Client, dd.LocalCluster

    if type(scheduler).__name__ == "Client":
        yield scheduler
        return
    if scheduler == "local":
        import os

        n = n_jobs if n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + n_jobs)
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            yield client
        return
    try:
        client = Client(scheduler)
    except OSError as exc:  # Dask's "Timed out trying to connect to ..." after its timeout
        from autotile.errors import SchedulerConnectionError

        raise SchedulerConnectionError(
            f"could not connect to the Dask scheduler at {scheduler!r}: {exc}; check that "
            f"`dask scheduler` runs there and that this machine reaches it "
            f"(or drop the scheduler to run on this machine)") from exc
    with client:
        yield client


def parallel_map(fn: Callable[..., Any], items: Sequence[Any] | Iterable[Any], *,
                 shared: tuple[Any, ...] = (), n_jobs: int = 1, scheduler: Any = None,
                 unordered: bool = False) -> Iterator[Any]:
    """Yield ``fn(*shared, item)`` for every item, in parallel.

    Parameters
    ----------
    fn : callable
        A module-level function (pickled to the workers).
    items : iterable
        One task each.
    shared : tuple, default=()
        Leading arguments common to every call (sent to each Dask worker once).
    n_jobs : int, default=1
        joblib processes (``-1``: all cores), or the workers of a
        ``"local"`` cluster. Ignored with a remote scheduler (it has its own
        workers).
    scheduler : None, "local", str or distributed.Client, default=None
        None: joblib on this machine (``n_jobs == 1``: in this process).
        ``"local"``: a :class:`distributed.LocalCluster` with ``n_jobs``
        workers. An address (``"tcp://host:8786"``) or a client: that Dask
        cluster.
    unordered : bool, default=False
        Yield results as they finish instead of in the order of ``items``.

    Yields
    ------
    object
        The results.

    Raises
    ------
    ValueError, TypeError, ImportError
        See :func:`check_scheduler`.
    autotile.errors.SchedulerConnectionError
        If no scheduler answers at the address (after Dask's connect
        timeout, ``distributed.comm.timeouts.connect``, 30 s by default).
    """
    check_scheduler(scheduler)
    items = list(items)
    bound = functools.partial(fn, *shared) if shared else fn
    if scheduler is None:
        if n_jobs == 1 or len(items) <= 1:
            for item in items:
                yield bound(item)
            return
        from joblib import Parallel, delayed

        yield from Parallel(n_jobs=n_jobs, return_as="generator_unordered" if unordered
                            else "generator")(delayed(fn)(*shared, item) for item in items)
        return
    as_completed = _distributed().as_completed
    with _client(scheduler, n_jobs) as client:
        remote_fn = client.scatter(bound, broadcast=True, hash=False)
        futures = client.map(_call, [remote_fn] * len(items), items, pure=False)
        try:
            if unordered:
                for fut in as_completed(futures):
                    yield fut.result()
            else:
                for fut in futures:
                    yield fut.result()
        finally:
            client.cancel(futures)
