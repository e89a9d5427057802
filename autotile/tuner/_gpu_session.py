"""One GPU tuning (one key): compile, check, time and re-time candidates on the device.

:class:`GpuSession` holds what one tuning needs (the call's arguments, the
ported kernel, the compile pool, the result checker) and turns each step of
the protocol into :class:`TuningRecord` bookkeeping; which candidates to
compile and measure, and when to stop, is decided by
:class:`~autotile.tuner._gpu_tuner.GpuAutotuner`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from autotile.measure.gpu import classify_error, classify_error_text
from autotile.tuner._compile_ahead import CompilePool, SharedJobs
from autotile.tuner._config import LaunchConfig
from autotile.tuner._gpu_backend import GpuBackend
from autotile.tuner._gpu_check import GpuChecker
from autotile.tuner._gpu_protocol import FIRST_PASS_SHARE, interleaved_retime, median
from autotile.tuner._record import TuningRecord

__all__ = ["GpuSession", "IN_PROCESS_PROBE_S", "POOL_START_AFTER_S", "PHASES",
           "TAKE_OVER_AFTER_S"]

#: The phases of one tuning's wall time (:attr:`GpuSession.phase_s`):
#: ``"model"`` (the prior's ranking), ``"pool"`` (starting and stopping the
#: compile workers), ``"compile"`` (compiles here or waits on the pool, and waits
#: for a compile left past its limit), ``"check"`` (result checks, the baseline's
#: included), ``"first_pass"`` and ``"retime"`` (``bench`` calls, challengers'
#: rounds included) and ``"other"`` (the rest of the tuning's wall time).
PHASES = ("model", "pool", "compile", "check", "first_pass", "retime", "other")

_MAX_REASON = 1000

#: Longest first compile (seconds) after which the rest of a tuning still compiles
#: in this process only; after a slower one, it is shared with the pool's workers
#: (:meth:`GpuSession._share`: this process goes on compiling in order, a worker takes
#: a config from the end once it is ready). On the H200 (Triton 3.6,
#: ``benchmarks/h200/diag_records.py --part compile``) a worker takes 3.3-3.5 s to
#: start (importing PyTorch and Triton) and compiled tutorial 02's softmax configs in
#: 0.8-1.4 s each, while this process compiled the first in 1.1 s (Triton's own
#: start-up included) and the next five in 0.06-0.16 s each: for a kernel that
#: compiles that fast, starting workers costs more than it saves. A choice, not fitted.
IN_PROCESS_PROBE_S = 2.0

#: How long the first compile (in this process) runs before the compile pool's workers
#: are started, seconds; 0: they start before the model ranks, as up to session 10.
#: On the H200 (v3 and v4 runs, the pool started before the model ranked), in the
#: four softmax tunings after the first in their process, all compiled "here", the
#: first compile took 0.3-0.5 s longer than the configs with twice or half its warps
#: compiled after it (1024-element block, 2 warps: 0.40 s against 0.06-0.13 s;
#: 2048, 2 warps: 0.46 against 0.11-0.18 s; 8192, 8 warps: 0.49 and 0.59 s against
#: 0.10-0.26 s), while five workers were starting (Python, PyTorch and Triton
#: imports, a CUDA context each); with no workers, a first compile in a thread took
#: 0.19-0.20 s and the later ones 0.07-0.14 s (softmax 2048, ``diag_compile_cost.py``).
#: (Layer norm's first compile, 1 warp, is its slowest anyway: no evidence either
#: way.) Those lists never used the workers. Where they did (the
#: first compile past ``IN_PROCESS_PROBE_S``: 6.3 and 28.7 s), starting them 0.5 s
#: later changes nothing, as that compile ran longer than the workers' start-up and
#: their jobs together (3.3-3.5 s and at most 7.9 s). Chosen on those runs (in-sample):
#: that the start-up slowed the first compile was an attribution, and the measurement
#: made since does not confirm it (``diag_compile_cost.py``, ``warmup_thread_pool``
#: mode, H200, session 11: six softmax compiles took 0.81 and 0.68 s with five workers
#: starting, 0.61-0.87 s without; layer norm 2.66 and 2.67 s against 2.41-2.90 s).
#: Since the shared rule (session 11), a worker only gets a config once it is ready, so an
#: early start costs the tuning only its CPU contention.
POOL_START_AFTER_S = 0.5

#: How long this process waits for the workers' running compiles, once it has nothing
#: left to take in a shared batch, before it compiles them itself (seconds). Without
#: it, a worker's compile due to end a moment later would be redone in full here; with
#: it, a shared batch ends at most this much later than compiling it all here would.
#: About the shortest compile of a slow-compiling list's later configs in this process
#: (layer norm on the H200: 0.2-0.6 s, ``diag_compile_cost.py``). A choice, not fitted.
TAKE_OVER_AFTER_S = 0.25


def _short(text: str) -> str:
    return text if len(text) <= _MAX_REASON else text[:_MAX_REASON] + " ..."


def _err(exc: BaseException) -> str:
    return _short(f"{type(exc).__name__}: {exc}")


class GpuSession:
    """The device side of one tuning.

    Parameters
    ----------
    backend : GpuBackend
    kernel : object
        The launchable kernel (:meth:`GpuBackend.kernel`).
    grid : tuple or callable
        The call's grid (a callable gets every argument and meta-parameter
        by name, as in Triton).
    args, kwargs : tuple, dict
        The call's positional and keyword arguments (meta-parameters of a
        config are added to ``kwargs`` at each launch).
    named : dict
        Every kernel argument by name.
    pre_hook, post_hook : callable
        The tuner's hooks, ``pre_hook(full)`` and ``post_hook(full,
        exception)``.
    checker : GpuChecker or None
        The result check (None: ``check=False``).
    warmup_ms, rep_ms : float
        ``bench``'s warm-up and timing budgets, milliseconds, before
        :attr:`first_pass_share` or :attr:`bench_share` scales them.

    Attributes
    ----------
    bench_share : float
        Fraction of ``warmup_ms`` and ``rep_ms`` a re-timed candidate gets over its
        rounds (1.0 unless the tuner sets it;
        :func:`~autotile.tuner._gpu_protocol.bench_share`).
    first_pass_share : float
        Fraction of ``warmup_ms`` and ``rep_ms`` each first-pass timing gets
        (:data:`~autotile.tuner._gpu_protocol.FIRST_PASS_SHARE`).
    phase_s : dict of str to float
        Wall seconds spent in each phase of :data:`PHASES` so far (the tuner
        adds ``"model"``, ``"pool"`` and ``"other"``).
    n_bench : int
        ``bench`` calls made (first pass and re-time rounds).
    bench_ms : float
        The ``warmup_ms + rep_ms`` budgets of every ``bench`` call made, summed
        (milliseconds): the device time the timings were allowed.
    compile_s : dict of LaunchConfig to float
        Compile seconds of each config compiled (ahead or here).
    n_compiled, n_timed : int
        Configs compiled and first-pass timings made.
    retime_orders : list of list of LaunchConfig
        The order of each re-timing round.
    winner : LaunchConfig or None
        The winner of the last re-timing rounds (set by the tuner; None when
        fewer than two candidates were measured).
    """

    def __init__(self, backend: GpuBackend, kernel: Any, grid: Any, args: tuple[Any, ...],
                 kwargs: Mapping[str, Any], named: Mapping[str, Any],
                 pre_hook: Callable[..., Any], post_hook: Callable[..., Any],
                 checker: GpuChecker | None, warmup_ms: float, rep_ms: float) -> None:
        self.backend, self.kernel, self.grid = backend, kernel, grid
        self.args, self.kwargs, self.named = tuple(args), dict(kwargs), dict(named)
        self.pre_hook, self.post_hook = pre_hook, post_hook
        self.checker = checker
        self.warmup_ms, self.rep_ms = warmup_ms, rep_ms
        self.compile_s: dict[LaunchConfig, float] = {}
        #: where each config compiled: "here" (this process) or "pool" (a worker)
        self.compiled_by: dict[LaunchConfig, str] = {}
        self.n_compiled = 0
        self.n_timed = 0
        self.retime_orders: list[list[LaunchConfig]] = []
        self.winner: LaunchConfig | None = None
        self.bench_share = 1.0
        self.first_pass_share = FIRST_PASS_SHARE
        #: workers the pool starts with (when the tuner has not started it)
        self.pool_workers = 1
        self.phase_s: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        #: wall seconds of the phases nested in each open phase (:meth:`phase`)
        self._nested_s: list[float] = []
        self.n_bench = 0
        self.bench_ms = 0.0
        #: "probe": the next compile runs here and decides; "here": compile in this
        #: process (each under the pool's time limit); "shared": the probe was slow, a
        #: batch compiles here in order while ready workers take configs from its end
        #: (:meth:`_share`); "pool": in the pool's workers (after a compile here ran
        #: past the time limit)
        self.compile_mode = "probe"
        #: compile threads left running past the time limit, and how long a timing
        #: may wait for them (:meth:`_wait_for_compiles`)
        self._running: list[threading.Thread] = []
        self._wait_s = 0.0

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Add the wall time of the ``with`` block to ``phase_s[name]``.

        A phase opened inside another (the pool's start during the first
        compile) counts for itself only: its time is taken off the enclosing
        phase, so that the phases never sum to more than the wall time.
        """
        t0 = time.perf_counter()
        self._nested_s.append(0.0)
        try:
            yield
        finally:
            dt = time.perf_counter() - t0
            inner = self._nested_s.pop()
            self.phase_s[name] = self.phase_s.get(name, 0.0) + dt - inner
            if self._nested_s:
                self._nested_s[-1] += dt

    def _bench(self, call: Callable[[], Any], warmup_ms: float, rep_ms: float) -> float:
        self.n_bench += 1
        self.bench_ms += warmup_ms + rep_ms
        return float(self.backend.bench(call, warmup_ms, rep_ms))

    # -- launches ---------------------------------------------------------------------
    def full(self, config: LaunchConfig) -> dict[str, Any]:
        """Every argument and meta-parameter by name (what hooks and a grid callable get)."""
        return {**self.named, **config.all_kwargs()}

    def grid_of(self, config: LaunchConfig) -> tuple[int, ...]:
        """The launch grid of ``config`` as a tuple of ints."""
        g = self.grid(self.full(config)) if callable(self.grid) else self.grid
        g = g if isinstance(g, (tuple, list)) else (g,)
        return tuple(int(x) for x in g)

    def _launch(self, config: LaunchConfig) -> None:
        self.backend.launch(self.kernel, self.grid, self.args,
                            {**self.kwargs, **config.all_kwargs()})

    def kernel_call(self, config: LaunchConfig) -> Callable[[], None]:
        """Triton's timed call: ``config.pre_hook``, ``pre_hook``, launch, ``post_hook``."""
        full = self.full(config)

        def call() -> None:
            if config.pre_hook is not None:
                config.pre_hook(full)
            self.pre_hook(full)
            try:
                self._launch(config)
            except Exception as exc:
                try:
                    self.post_hook(full, exception=exc)
                finally:
                    raise
            self.post_hook(full, exception=None)

        return call

    def check_parts(self, config: LaunchConfig) -> tuple[Any, ...]:
        """``(pre, launch, post, full)`` of one check run of ``config`` (``GpuChecker.check``)."""
        full = self.full(config)

        def pre() -> None:
            if config.pre_hook is not None:
                config.pre_hook(full)
            self.pre_hook(full)

        return (pre, lambda: self._launch(config),
                lambda e: self.post_hook(full, exception=e), full)

    # -- compile ----------------------------------------------------------------------
    def compile_ahead(self, configs: Sequence[LaunchConfig], pool: CompilePool | None
                      ) -> dict[LaunchConfig, TuningRecord]:
        """Compile ``configs`` (in the pool's workers, else here); return the failures' records.

        A compile error that means "too many resources" (``OutOfResources``,
        a ptxas shared-memory error) is ``"infeasible"``; any other error, a
        compile past the time limit or a crashed worker is ``"failed"``, with
        the reason.
        """
        with self.phase("compile"):
            return self._compile_ahead(configs, pool)

    def _compile_ahead(self, configs: Sequence[LaunchConfig], pool: CompilePool | None
                       ) -> dict[LaunchConfig, TuningRecord]:
        failed: dict[LaunchConfig, TuningRecord] = {}
        jobs, job_configs = [], []
        # what _serve_rest started, once the probe turned out slow (at most one entry)
        early: list[tuple[list[LaunchConfig], SharedJobs, threading.Thread, dict[str, Any]]] = []
        for i, c in enumerate(configs):
            grid = self._grid_or_fail(c, failed)
            if grid is None:
                continue
            if pool is None or self.compile_mode != "pool":
                rest = list(configs[i + 1:])

                def hand_off(rest: list[LaunchConfig] = rest) -> None:
                    assert pool is not None  # only called by the probe of a pool
                    early.append(self._serve_rest(pool, rest, failed))

                if pool is not None and rest and self.compile_mode == "shared":
                    hand_off()  # a later batch of a slow-compiling tuning: shared at once
                rec = self._compile_here(c, pool, hand_off if pool is not None and rest
                                         and not early else None)
                if rec is not None:
                    failed[c] = rec
                if early:
                    break
                continue
            jobs.append(self.backend.compile_job(self.kernel, self.args, self.kwargs, grid, c))
            job_configs.append(c)
        if early:
            assert pool is not None  # early is only filled by hand_off, with a pool
            cs, shared, serving, box = early[0]
            self._share(pool, cs, shared, serving, box, failed)
        if pool is not None and jobs:
            self._pool_outcomes(job_configs, pool.run(jobs), failed)
        return failed

    def _grid_or_fail(self, config: LaunchConfig, failed: dict[LaunchConfig, TuningRecord]
                      ) -> tuple[int, ...] | None:
        """:meth:`grid_of` ``config``; None, with ``config`` booked ``"failed"``, if it raises."""
        try:
            return self.grid_of(config)
        except Exception as exc:  # noqa: BLE001 - a config whose grid raises is data
            failed[config] = TuningRecord(config, "failed",
                                          reason=f"the grid raised {_err(exc)}")
            return None

    def _serve_rest(self, pool: CompilePool, rest: Sequence[LaunchConfig],
                    failed: dict[LaunchConfig, TuningRecord]
                    ) -> tuple[list[LaunchConfig], SharedJobs, threading.Thread, dict[str, Any]]:
        """Start ``pool.serve`` of ``rest`` in a helper thread (the probe turned out slow).

        The rest of the batch is then shared between this process (in order,
        once the probe ends: :meth:`_share`) and the workers (from the end,
        each once it is ready). A config whose grid raises is added to
        ``failed`` and left out. Returns the configs served, their
        :class:`SharedJobs`, the thread and the box where the thread leaves
        an exception of ``serve`` (``box["exc"]``, re-raised by :meth:`_share`).
        """
        cs, js = [], []
        for r in rest:
            g = self._grid_or_fail(r, failed)
            if g is None:
                continue
            js.append(self.backend.compile_job(self.kernel, self.args, self.kwargs, g, r))
            cs.append(r)
        shared = SharedJobs(len(js))
        box: dict[str, Any] = {}

        def serve() -> None:
            try:
                pool.serve(js, shared, len(js))
            except BaseException as exc:  # noqa: BLE001 - re-raised on join
                box["exc"] = exc

        th = threading.Thread(target=serve, name="autotile-pool-serve", daemon=True)
        th.start()
        return cs, shared, th, box

    def _share(self, pool: CompilePool, configs: Sequence[LaunchConfig], shared: SharedJobs,
               serving: threading.Thread, box: dict[str, Any],
               failed: dict[LaunchConfig, TuningRecord]) -> None:
        """Compile ``configs`` here in order while the pool's ready workers take them from the end.

        This process waits on the workers only once, at most
        :data:`TAKE_OVER_AFTER_S`, when no config is left to take; then it
        compiles (again) each config a worker still runs, so the batch ends at
        most that much later than compiling all of it here would (less the
        configs the workers finished first), CPU contention aside. A config
        whose worker died compiles here too. After a compile here past the
        time limit (``compile_mode`` ``"pool"``), the workers compile every
        config left.
        """
        here: set[int] = set()
        waited = False
        try:
            if self.compile_mode != "pool":
                self.compile_mode = "shared"
                while self.compile_mode != "pool":
                    i = shared.take_front()
                    if i is None and not waited:
                        # nothing left to take: give the workers' running compiles a moment
                        waited = True
                        deadline = time.perf_counter() + TAKE_OVER_AFTER_S
                        while shared.n_left() and time.perf_counter() < deadline:
                            time.sleep(0.005)
                    if i is None:
                        i = shared.take_over()
                        if i is not None and i in shared.outcomes:
                            continue  # the worker finished it meanwhile
                    if i is None:
                        # a config whose worker died (not a compile error) compiles here
                        i = next((j for j, out in sorted(shared.outcomes.items())
                                  if out.status == "crashed" and j not in here), None)
                    if i is None:
                        break
                    here.add(i)
                    rec = self._compile_here(configs[i], pool)
                    if rec is not None:
                        failed[configs[i]] = rec
        except BaseException:
            # e.g. an interrupt: the serve thread would otherwise run on after the pool's
            # close, and replace a worker nobody stops
            shared.stop.set()
            serving.join()
            raise
        if self.compile_mode == "pool":
            shared.drain.set()  # no second compile here: the workers do the rest
        else:
            shared.stop.set()
        serving.join()
        if "exc" in box:
            raise box["exc"]
        # a config compiled here keeps this process's record, even if a worker also did it
        by_pool = [i for i in shared.by_pool if i not in here and i in shared.outcomes]
        self._pool_outcomes([configs[i] for i in by_pool],
                            [shared.outcomes[i] for i in by_pool], failed)

    def _pool_outcomes(self, configs: Sequence[LaunchConfig], outcomes: Sequence[Any],
                       failed: dict[LaunchConfig, TuningRecord]) -> None:
        """Book the pool's compile outcomes of ``configs``; add the failures to ``failed``."""
        for c, out in zip(configs, outcomes):
            self.n_compiled += 1
            self.compile_s[c] = out.compile_s
            self.compiled_by[c] = "pool"
            metrics = {"compile_s": out.compile_s}
            if out.status == "ok":
                continue
            if out.status == "timeout":
                failed[c] = TuningRecord(c, "failed", reason=f"compile timeout: {out.error}",
                                         metrics=metrics)
            elif out.status == "error":
                status = classify_error_text(out.error_types, out.error or "")
                failed[c] = TuningRecord(c, status, reason=_short(f"compile: {out.error}"),
                                         metrics=metrics)
            else:
                failed[c] = TuningRecord(c, "failed", reason=f"compile worker: {out.error}",
                                         metrics=metrics)

    def _compile_here(self, config: LaunchConfig, pool: CompilePool | None = None,
                      hand_off: Callable[[], None] | None = None) -> TuningRecord | None:
        """Compile ``config`` in this process, in a thread, waiting at most ``pool.timeout_s``.

        Without a pool (``compile_ahead=False``) there is no limit. With one, the
        first such compile (``compile_mode == "probe"``) decides the rest of
        the tuning: done within :data:`IN_PROCESS_PROBE_S`, later configs compile
        here too and the pool's workers, if any were started, are stopped;
        slower, later batches are shared (``"shared"``: :meth:`_share`); past the
        limit, they go to the pool. Once the probe has run
        :data:`POOL_START_AFTER_S`, the pool is started (if the tuner has not
        started it yet, with :attr:`pool_workers` workers); once it has run
        :data:`IN_PROCESS_PROBE_S`, ``hand_off()`` is called: the ready workers
        may take configs from the end of the batch while the probe finishes.
        A compile past the
        time limit cannot be interrupted: its thread is left to finish in the
        background, the config is ``"failed"`` (compile timeout) and every later
        config compiles in the pool, so no two compiles run in this process;
        timings wait for it (:meth:`_wait_for_compiles`).
        """
        box: dict[str, BaseException] = {}
        grid = self.grid_of(config)

        def work() -> None:
            try:
                self.backend.compile(self.kernel, self.args, self.kwargs, grid, config)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box["exc"] = exc

        t0 = time.perf_counter()
        th = threading.Thread(target=work, name="autotile-compile", daemon=True)
        th.start()
        if pool is not None and self.compile_mode == "probe":
            # the workers start once the probe has run POOL_START_AFTER_S (unless the
            # tuner started them already); once it turns out slow, the rest compiles in
            # the workers meanwhile
            limit = pool.timeout_s
            probe_s = IN_PROCESS_PROBE_S if limit is None else min(limit, IN_PROCESS_PROBE_S)
            th.join(min(POOL_START_AFTER_S, probe_s))
            if th.is_alive():
                with self.phase("pool"):
                    pool.start(self.pool_workers)
                th.join(max(0.0, probe_s - (time.perf_counter() - t0)))
            if th.is_alive():
                if hand_off is not None:
                    hand_off()
                th.join(None if limit is None else max(0.0, limit - (time.perf_counter() - t0)))
        else:
            th.join(None if pool is None else pool.timeout_s)
        dt = time.perf_counter() - t0
        self.n_compiled += 1
        self.compile_s[config] = dt
        self.compiled_by[config] = "here"
        metrics = {"compile_s": dt}
        if pool is None:
            exc = box.get("exc")
            return None if exc is None else TuningRecord(
                config, classify_error(exc), reason=f"compile: {_err(exc)}")
        if th.is_alive():
            self.compile_mode = "pool"
            self._running.append(th)
            self._wait_s = pool.timeout_s or 0.0
            return TuningRecord(config, "failed", metrics=metrics, reason=(
                f"compile timeout: compile took longer than {pool.timeout_s:g} s "
                f"(compile_timeout_s); left to finish in a background thread"))
        if self.compile_mode == "probe":
            self.compile_mode = "here" if dt <= IN_PROCESS_PROBE_S else "shared"
            if self.compile_mode == "here":
                with self.phase("pool"):
                    pool.close()  # its workers are not needed: free their CPU now
        exc = box.get("exc")
        if exc is not None:
            return TuningRecord(config, classify_error(exc), reason=f"compile: {_err(exc)}",
                                metrics=metrics)
        return None

    # -- measure ----------------------------------------------------------------------
    def _wait_for_compiles(self) -> bool:
        """Wait for compile threads left running here; return whether one still runs.

        A compile thread competes with the timed launches for the GIL, and a
        launch-bound kernel's timing then measures the host, not the kernel:
        no timing starts while one runs. The wait is bounded: in all, one
        more compile time limit (``compile_timeout_s``) per tuning; a timing
        made while a compile still runs gets the metric ``compile_running``.
        """
        t0 = time.perf_counter()
        for th in self._running:
            th.join(max(0.0, self._wait_s))
        self._wait_s = max(0.0, self._wait_s - (time.perf_counter() - t0))
        self._running = [th for th in self._running if th.is_alive()]
        return bool(self._running)

    def measure(self, config: LaunchConfig, model_time_s: float | None) -> TuningRecord:
        """Check ``config``'s result, then time it once with ``bench``.

        The timing gets :attr:`first_pass_share` of ``warmup_ms`` and ``rep_ms``.

        Returns
        -------
        TuningRecord
            ``"ok"`` with ``time_s`` (seconds) and metrics ``first_time_s``,
            ``compile_s`` and ``model_time_s`` (when known); ``"wrong"`` when
            its outputs differ from the expected ones; ``"infeasible"`` or
            ``"failed"`` when a launch raised (:func:`classify_error`).
        """
        metrics: dict[str, float] = {}
        if config in self.compile_s:
            metrics["compile_s"] = self.compile_s[config]
        if model_time_s is not None:
            metrics["model_time_s"] = float(model_time_s)
        if self.checker is not None:
            with self.phase("check"):
                reason, exc = self.checker.check(*self.check_parts(config))
            if exc is not None:
                return TuningRecord(config, classify_error(exc),
                                    reason=f"launch raised {_err(exc)}", metrics=metrics)
            if reason is not None:
                return TuningRecord(config, "wrong", reason=reason, metrics=metrics)
        with self.phase("compile"):
            if self._wait_for_compiles():
                metrics["compile_running"] = 1.0
        try:
            self.n_timed += 1
            with self.phase("first_pass"):
                t = self._bench(self.kernel_call(config),
                                self.warmup_ms * self.first_pass_share,
                                self.rep_ms * self.first_pass_share)
        except Exception as exc:  # noqa: BLE001 - classified into the record
            return TuningRecord(config, classify_error(exc), reason=f"timing raised {_err(exc)}",
                                metrics=metrics)
        if not (math.isfinite(t) and t >= 0):
            return TuningRecord(config, "failed", reason=f"the timing gave time_s={t}",
                                metrics=metrics)
        metrics["first_time_s"] = float(t)
        return TuningRecord(config, "ok", float(t), None, metrics)

    def retime(self, records: Sequence[TuningRecord], n_rounds: int,
               rng: np.random.Generator) -> list[TuningRecord]:
        """Re-time ``records``' configs in ``n_rounds`` interleaved rounds; time = the median.

        Each round's ``bench`` gets ``bench_share * warmup_ms / n_rounds`` and
        ``bench_share * rep_ms / n_rounds``, so the whole re-timing of a
        candidate costs ``bench_share * (warmup_ms + rep_ms)``.

        Returns
        -------
        list of TuningRecord
            The same candidates, in the same order, with ``time_s`` the median
            of these rounds and metrics ``retime_median_s`` (that median),
            ``retime_min_s`` (their fastest), ``n_rounds`` (these rounds),
            ``n_retimes`` (the re-timings the
            candidate took part in, this one included) and
            ``retime_round_<j>_s`` (every round's time in seconds, numbered
            across its re-timings, ``inf`` for a failed one); a candidate
            whose re-timing raised keeps its time and gets the metric
            ``retime_failed`` = 1.
        """
        with self.phase("compile"):
            busy = self._wait_for_compiles()
        with self.phase("retime"):
            return self._retime(records, n_rounds, rng, busy)

    def _retime(self, records: Sequence[TuningRecord], n_rounds: int,
                rng: np.random.Generator, busy: bool) -> list[TuningRecord]:
        calls: dict[LaunchConfig, Callable[[], float]] = {}
        # each round gets 1/n_rounds of the shared budgets: re-timing a candidate costs
        # bench_share * (warmup + rep) in all (the candidates are compiled, loaded and
        # warm by now; the rounds are there to spread the device's drifts, not for more
        # samples per round)
        warmup_ms = self.warmup_ms * self.bench_share / n_rounds
        rep_ms = self.rep_ms * self.bench_share / n_rounds
        for r in records:
            call = self.kernel_call(r.config)

            def timed(call: Callable[[], None] = call) -> float:
                try:
                    return self._bench(call, warmup_ms, rep_ms)
                except Exception:  # noqa: BLE001 - a failed re-time keeps the first time
                    return math.inf

            calls[r.config] = timed
        times, orders = interleaved_retime(calls, n_rounds, rng)
        self.retime_orders.extend(orders)
        out = []
        for r in records:
            ts = [t for t in times[r.config] if math.isfinite(t)]
            metrics = dict(r.metrics)
            n_before = sum(1 for k in metrics if k.startswith("retime_round_"))
            for j, t in enumerate(times[r.config]):
                metrics[f"retime_round_{n_before + j}_s"] = float(t)
            metrics["n_retimes"] = metrics.get("n_retimes", 0.0) + 1.0
            if busy:
                metrics["compile_running"] = 1.0
            if not ts:
                metrics["retime_failed"] = 1.0
                out.append(TuningRecord(r.config, "ok", r.time_s, None, metrics))
                continue
            med = median(ts)
            metrics.update(retime_median_s=med, retime_min_s=min(ts), n_rounds=float(len(ts)))
            out.append(TuningRecord(r.config, "ok", med, None, metrics))
        return out
