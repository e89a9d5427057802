"""A simulated GPU for the GPU path of ``@autotune``: NumPy arrays as tensors, scripted times.

``FakeBackend`` runs kernels in autotile's interpreter (an autotile ``@jit``
kernel) or as plain Python (``FakeTritonKernel``, duck-typed like a
``triton.jit`` function), and answers ``bench`` with a time computed from the
meta-parameters of the last launch. It simulates compile errors, compile
times (in the worker processes of the compile pool), ``OutOfResources`` at
launch, and logs every compile, launch and timing.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from autotile.tuner import GpuBackend, LaunchConfig
from autotile.tuner._check import compare_outputs, poison
from autotile.tuner._gpu_backend import loosest_tolerance


class OutOfResources(Exception):
    """Named like ``triton.runtime.errors.OutOfResources``."""


def meta_key(meta: Mapping[str, Any]) -> tuple[Any, ...]:
    """The tuned part of a launch's keyword arguments, as a sortable key."""
    return tuple(sorted((k, v) for k, v in meta.items() if k.isupper() or k in (
        "num_warps", "num_stages")))


def compile_job_worker(job: Mapping[str, Any]) -> None:
    """Worker of the compile pool: sleep the config's compile time, raise its error."""
    time.sleep(job["sleep_s"])
    if job["error"] == "OutOfResources":
        raise OutOfResources("out of resource: shared memory, Required: 300000")
    if job["error"]:
        raise RuntimeError(job["error"])


def slow_exit_init() -> None:
    """Worker init: make the worker's own exit take 10 s (as a Triton + torch one can)."""
    import atexit

    atexit.register(time.sleep, 10.0)


def start_in(seconds: float) -> Callable[[], None]:
    """Worker init that takes ``seconds`` to start (picklable: a ``partial`` of ``time.sleep``)."""
    return functools.partial(time.sleep, seconds)


def slow_start_init() -> None:
    """Worker init: take 5 s to start (a Triton worker imports PyTorch and creates a CUDA
    context: 3.3-3.5 s on the H200)."""
    time.sleep(5.0)


class FakeTritonKernel:
    """Duck-typed ``triton.jit`` function: ``fn``, ``arg_names``, ``constexprs``, ``run``...

    ``body(**named)`` does the work on NumPy arrays.
    """

    def __init__(self, fn: Callable[..., Any], body: Callable[..., Any]) -> None:
        self.fn = fn
        self.body = body
        self.__name__ = fn.__name__
        params = list(inspect.signature(fn).parameters.values())
        self.arg_names = [p.name for p in params]
        self.constexprs = [i for i, p in enumerate(params) if "constexpr" in str(p.annotation)]
        self.launches: list[dict[str, Any]] = []

    def warmup(self, *args: Any, grid: Any, **kwargs: Any) -> None:
        return None

    def run(self, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> None:
        named = dict(zip(self.arg_names, args))
        named.update(kwargs)
        self.launches.append(dict(named))
        self.body(**{k: v for k, v in named.items() if k in self.arg_names})

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)


class FakeBackend(GpuBackend):
    """A simulated GPU.

    Parameters
    ----------
    time_of : callable
        ``time_of(meta) -> seconds`` of a launch's keyword arguments; called
        once per ``bench``. A list of times per meta key can be scripted with
        ``sequences`` instead.
    sequences : dict, optional
        ``meta_key(meta) -> [t0, t1, ...]``: successive ``bench`` results.
    compile_errors : dict, optional
        ``BLOCK value -> "OutOfResources" | message`` raised when compiling.
    compile_sleep_s : dict, optional
        ``BLOCK value -> seconds`` a compile of it sleeps (in a worker or here).
    launch_errors : dict, optional
        ``BLOCK value -> exception`` raised by a launch.
    ahead : bool
        Whether the compile pool is used (``worker_fn``).
    """

    mp_context = "fork"

    def __init__(self, time_of: Callable[[Mapping[str, Any]], float] | None = None,
                 sequences: dict[tuple[Any, ...], list[float]] | None = None,
                 device: str = "Fake H200", version: str = "3.4.0",
                 compile_errors: dict[Any, str] | None = None,
                 compile_sleep_s: dict[Any, float] | None = None,
                 launch_errors: dict[Any, BaseException] | None = None, ahead: bool = False,
                 knob: str = "BLOCK") -> None:
        self.time_of = time_of or (lambda meta: 1e-3)
        self.sequences = {k: list(v) for k, v in (sequences or {}).items()}
        self.device, self.ver = device, version
        self.compile_errors = compile_errors or {}
        self.compile_sleep_s = compile_sleep_s or {}
        self.launch_errors = launch_errors or {}
        self.knob = knob
        self.worker_fn = compile_job_worker if ahead else None
        self.compiled: list[Any] = []
        self.jobs: list[Any] = []
        self.launched: list[Any] = []
        self.benched: list[Any] = []
        #: ``(warmup_ms, rep_ms)`` of each ``bench`` call
        self.budgets: list[tuple[float, float]] = []
        self.n_clones = 0
        self._last: Mapping[str, Any] = {}

    def device_name(self) -> str:
        return self.device

    def version(self) -> str:
        return self.ver

    def kernel(self, fn: Any) -> Any:
        return fn

    def compile_job(self, kernel: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                    grid: tuple[int, ...], config: LaunchConfig) -> Any:
        v = config.kwargs.get(self.knob)
        self.jobs.append(v)
        return {"sleep_s": self.compile_sleep_s.get(v, 0.0),
                "error": self.compile_errors.get(v)}

    def compile(self, kernel: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                grid: Any, config: LaunchConfig) -> None:
        v = config.kwargs.get(self.knob)
        self.compiled.append(v)
        time.sleep(self.compile_sleep_s.get(v, 0.0))
        err = self.compile_errors.get(v)
        if err == "OutOfResources":
            raise OutOfResources("out of resource: shared memory, Required: 300000")
        if err:
            raise RuntimeError(err)

    def launch(self, kernel: Any, grid: Any, args: tuple[Any, ...],
               kwargs: Mapping[str, Any]) -> None:
        v = kwargs.get(self.knob)
        self.launched.append(v)
        self._last = dict(kwargs)
        if v in self.launch_errors:
            raise self.launch_errors[v]
        kernel[grid](*args, **kwargs)

    def bench(self, call: Callable[[], Any], warmup_ms: float, rep_ms: float) -> float:
        call()
        meta = self._last
        self.benched.append(meta.get(self.knob))
        self.budgets.append((warmup_ms, rep_ms))
        seq = self.sequences.get(meta_key(meta))
        if seq:
            return seq.pop(0)
        return float(self.time_of(meta))

    def is_tensor(self, value: Any) -> bool:
        return isinstance(value, np.ndarray)

    def zero_(self, t: Any) -> None:
        t[...] = 0

    def clone(self, t: Any) -> Any:
        self.n_clones += 1
        return t.copy()

    def copy_(self, dst: Any, src: Any) -> None:
        np.copyto(dst, src)

    def poison_(self, t: Any) -> None:
        poison(t)

    def equal(self, a: Any, b: Any) -> bool:
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))

    def mismatch(self, name: str, got: Any, want: Any, rtol: float | None,
                 atol: float | None) -> str | None:
        r0, a0 = loosest_tolerance(str(got.dtype), str(np.asarray(want).dtype))
        return compare_outputs({name: got}, {name: np.asarray(want)},
                               r0 if rtol is None else rtol, a0 if atol is None else atol)


#: the v2 H200 run's attention case, 96 heads x N 512 x d 64 (benchmarks/h200/data/
#: autotune_kernels_v2/call2): each block's steady time in seconds
SLOW_SPELL_BLOCKS = (16, 32, 64, 128, 256)
SLOW_SPELL_STEADY_S = {16: 30.1e-6, 32: 31.3e-6, 64: 33.2e-6, 128: 38.2e-6, 256: 44.0e-6}


def slow_spell_case(rounds_64_us: list[float]) -> tuple[list[LaunchConfig], FakeBackend]:
    """The configs and backend of the v2 run's slow spell during the re-time.

    Five configs (``BLOCK`` in ``SLOW_SPELL_BLOCKS``, 4 warps) whose first pass
    reads their steady time; the re-time rounds of 16 and 32 read slow (about
    40 us), those of 128 steady, and 16's later rounds fast again.

    Parameters
    ----------
    rounds_64_us : list of float
        The times in microseconds that ``BLOCK=64`` reads after its first
        pass (33.2 us), one per re-time round; the replays differ only there.

    Returns
    -------
    configs : list of LaunchConfig
        The five configs, in ``SLOW_SPELL_BLOCKS`` order.
    backend : FakeBackend
        Answers each timing from the scripted sequence, then the steady time.
    """
    us = 1e-6
    configs = [LaunchConfig({"BLOCK": b}, num_warps=4) for b in SLOW_SPELL_BLOCKS]
    key = {b: meta_key({"BLOCK": b, "num_warps": 4, "num_stages": 3}) for b in SLOW_SPELL_BLOCKS}
    seqs = {key[16]: [30.1 * us, 40 * us, 41 * us, 39 * us, 30.0 * us, 30.2 * us, 29.9 * us],
            key[32]: [31.3 * us, 42 * us, 43 * us, 41 * us],
            key[64]: [33.2 * us] + [t * us for t in rounds_64_us],
            key[128]: [38.2 * us, 38.1 * us, 38.3 * us, 38.0 * us]}
    backend = FakeBackend(lambda meta: SLOW_SPELL_STEADY_S[meta["BLOCK"]], sequences=seqs)
    return configs, backend


def env_probe_worker(job: Mapping[str, Any]) -> None:
    """Compile-pool worker: fail with the value of ``job["var"]`` in the environment and
    whether ``job["module"]`` was imported before the job (the worker's view)."""
    import os
    import sys

    raise RuntimeError(f"{os.environ.get(job['var'])}|{job['module'] in sys.modules}")


def failing_init() -> None:
    """Worker init that fails (as one whose CUDA initialisation fails)."""
    raise RuntimeError("CUDA driver initialization failed")
