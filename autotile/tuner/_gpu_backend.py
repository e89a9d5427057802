"""The GPU behind ``@autotune(backend="gpu")``: a small interface and its Triton implementation.

:class:`GpuBackend` is everything the GPU tuner asks of a device: which
kernel to launch, how to compile a config (in this process or as a job for
a :class:`~autotile.tuner.CompilePool` worker), how to launch and time it,
and the few tensor operations of Triton's hooks and of the result check.
:class:`TritonBackend` implements it with ``triton`` and ``torch`` (imported
when it is built); the tests implement it with NumPy arrays and simulated
times. :func:`resolve_backend` turns ``backend="auto" | "gpu" | "model"``
(or a :class:`GpuBackend`) into a backend or None (the GPU-model path).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import multiprocessing as mp
import sys
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from autotile.errors import InvalidConfigError, MeasureError
from autotile.tuner._config import LaunchConfig

__all__ = ["GpuBackend", "TritonBackend", "resolve_backend", "gpu_unavailable_reason",
           "is_triton_jit", "BACKENDS", "KernelRef", "gpu_tolerance", "loosest_tolerance"]

#: Values of ``@autotune(backend=...)``: ``"auto"`` (the GPU when Triton, PyTorch
#: and a CUDA device are present, else the model), ``"gpu"`` and ``"model"``.
BACKENDS = ("auto", "gpu", "model")


def is_triton_jit(obj: Any) -> bool:
    """True for a ``triton.jit`` function, by duck typing.

    A Triton ``JITFunction`` has a Python function ``fn``, ``arg_names``,
    ``warmup`` and ``run`` (and is not an autotile kernel); the test fakes
    have the same attributes.
    """
    from autotile.lang import JITFunction

    if isinstance(obj, JITFunction):
        return False
    return (isinstance(getattr(obj, "fn", None), types.FunctionType)
            and callable(getattr(obj, "warmup", None)) and callable(getattr(obj, "run", None))
            and isinstance(getattr(obj, "arg_names", None), list))


def gpu_tolerance(dtype_name: str) -> tuple[float, float]:
    """Return ``(rtol, atol)`` of the GPU result check for an output dtype.

    Candidates differ in block shapes, hence in summation order, and round
    the float32 accumulator to the output type: float16 ``(1e-2, 1e-2)``,
    bfloat16 ``(2e-2, 2e-2)`` (8 mantissa bits), float8 types ``(1e-1,
    1e-1)``, float32 ``(1e-3, 1e-4)`` (``tl.dot`` rounds float32 inputs to
    tf32 by default), float64 ``(1e-10, 1e-12)``; integers and bools exact.

    Parameters
    ----------
    dtype_name : str
        ``"float16"``, ``"torch.bfloat16"``, ... (a ``torch.`` prefix is dropped).
    """
    name = dtype_name.replace("torch.", "")
    if name in ("float16", "half"):
        return 1e-2, 1e-2
    if name == "bfloat16":
        return 2e-2, 2e-2
    if name.startswith("float8"):
        return 1e-1, 1e-1
    if name in ("float32", "float", "complex64"):
        return 1e-3, 1e-4
    if name in ("float64", "double", "complex128"):
        return 1e-10, 1e-12
    return 0.0, 0.0


def loosest_tolerance(*dtype_names: str) -> tuple[float, float]:
    """The largest :func:`gpu_tolerance` of several dtypes (an output and its reference).

    A float16 output compared with a float32 reference is held to float16's
    tolerance: the candidate cannot be more exact than its output type.
    """
    tols = [gpu_tolerance(d) for d in dtype_names]
    return max(t[0] for t in tols), max(t[1] for t in tols)


class KernelRef:
    """Where a worker process finds a ``triton.jit`` function: module, file and name.

    Picklable. :meth:`load` imports the module by name when it is importable
    (``__main__`` is the worker's ``__mp_main__``), else from its file, and
    returns the attribute, unwrapped down to the object with ``warmup``
    (an ``@autotune`` wrapper's ``fn``).
    """

    def __init__(self, module: str, path: str | None, qualname: str) -> None:
        self.module, self.path, self.qualname = module, path, qualname

    def __repr__(self) -> str:
        return f"KernelRef({self.module!r}, {self.path!r}, {self.qualname!r})"

    @classmethod
    def of(cls, kernel: Any) -> KernelRef:
        """The reference of a ``triton.jit`` function (its ``fn``'s module, file, name)."""
        fn = kernel.fn
        try:
            path = inspect.getsourcefile(fn)
        except TypeError:
            path = None
        return cls(fn.__module__, path, fn.__qualname__)

    def load(self) -> Any:
        """Import and return the kernel in this process.

        Raises
        ------
        ImportError
            If the module can be neither imported nor loaded from its file.
        """
        head = self.qualname.split(".")[0]
        if self.module == "__main__":  # a worker re-imports the parent's script as __mp_main__
            mod = sys.modules.get("__mp_main__")
            if mod is not None and not hasattr(mod, head):
                mod = None
        else:
            mod = sys.modules.get(self.module)
        if mod is None and self.module != "__main__":
            try:
                mod = importlib.import_module(self.module)
            except ImportError:
                mod = None
        if mod is None:
            if self.path is None:
                raise ImportError(f"cannot import kernel {self.qualname!r}: module "
                                  f"{self.module!r} is not importable and has no file")
            spec = importlib.util.spec_from_file_location(
                self.module if self.module != "__main__" else Path(self.path).stem, self.path)
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
        obj: Any = mod
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        while not callable(getattr(obj, "warmup", None)) and hasattr(obj, "fn"):
            obj = obj.fn
        return obj


class GpuBackend:
    """What the GPU tuner needs from a device (the contract; subclass it).

    The tuner calls, for one tuning: :meth:`kernel` once; :meth:`compile_job`
    for each candidate to compile ahead (then ``worker_fn(job)`` runs in a
    :class:`~autotile.tuner.CompilePool` worker, or :meth:`compile` here when
    ahead compiling is off); :meth:`launch` for the check runs and inside the
    timed callable it gives :meth:`bench`. The tensor operations act on the
    call's arguments (``is_tensor`` says which ones); :meth:`mismatch` compares
    one output with the expected one where the data lives.

    Attributes
    ----------
    worker_fn : callable or None
        Module-level function that compiles a :meth:`compile_job` job in a
        worker process (raises on failure); None: no ahead compile.
    worker_init : callable or None
        Module-level function run once in each worker.
    mp_context : str
        Start method of the compile workers.
    worker_preload : tuple of str
        Modules a ``"forkserver"`` server imports once for all the workers
        (:class:`~autotile.tuner.CompilePool`'s ``preload``).
    """

    worker_fn: Callable[[Any], Any] | None = None
    worker_init: Callable[[], Any] | None = None
    mp_context = "spawn"
    worker_preload: tuple[str, ...] = ()

    # -- identity (part of the disk-cache key) ----------------------------------------
    def device_name(self) -> str:
        """Name of the GPU, e.g. ``"NVIDIA H200"``."""
        raise NotImplementedError

    def version(self) -> str:
        """Version of the compiler stack, e.g. Triton's ``"3.4.0"``."""
        raise NotImplementedError

    # -- kernels ----------------------------------------------------------------------
    def kernel(self, fn: Any) -> Any:
        """The launchable kernel for ``fn`` (an autotile ``@jit`` kernel is ported)."""
        raise NotImplementedError

    def compile_job(self, kernel: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                    grid: tuple[int, ...], config: LaunchConfig) -> Any:
        """A picklable job for :attr:`worker_fn` that compiles ``config`` for this call."""
        raise NotImplementedError

    def compile(self, kernel: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                grid: Any, config: LaunchConfig) -> None:
        """Compile ``config`` in this process without launching it (raises on failure)."""
        raise NotImplementedError

    def launch(self, kernel: Any, grid: Any, args: tuple[Any, ...],
               kwargs: Mapping[str, Any]) -> None:
        """``kernel[grid](*args, **kwargs)`` (``kwargs`` include the meta-parameters)."""
        raise NotImplementedError

    def bench(self, call: Callable[[], Any], warmup_ms: float, rep_ms: float) -> float:
        """Median time of ``call`` in seconds (the L2 flushed before each run)."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Wait for the device to finish."""

    # -- tensors ----------------------------------------------------------------------
    def is_tensor(self, value: Any) -> bool:
        """Whether an argument is a device tensor (a pointer argument)."""
        raise NotImplementedError

    def dtype_name(self, t: Any) -> str:
        """``"float16"``, ``"bfloat16"``, ... of a tensor."""
        return str(t.dtype).replace("torch.", "")

    def zero_(self, t: Any) -> None:
        """Set every element of ``t`` to 0."""
        t.zero_()

    def clone(self, t: Any) -> Any:
        """A copy of ``t``."""
        return t.clone()

    def copy_(self, dst: Any, src: Any) -> None:
        """Copy ``src`` into ``dst`` in place."""
        dst.copy_(src)

    def poison_(self, t: Any) -> None:
        """Fill an output with what no correct kernel leaves there (NaN, the int minimum)."""
        raise NotImplementedError

    def equal(self, a: Any, b: Any) -> bool:
        """Bitwise equality of two tensors, NaN equal to NaN."""
        raise NotImplementedError

    def mismatch(self, name: str, got: Any, want: Any, rtol: float | None,
                 atol: float | None) -> str | None:
        """None when ``got`` matches ``want``, else why not.

        The default tolerances are :func:`loosest_tolerance` of both dtypes.
        """
        raise NotImplementedError


# --------------------------------------------------------------------------------------
def gpu_unavailable_reason() -> str | None:
    """Why the GPU backend cannot run here, or None when it can.

    Returns
    -------
    str or None
        E.g. ``"cannot import triton (ModuleNotFoundError: No module named
        'triton')"`` or ``"torch.cuda.is_available() is False"``.
    """
    for name in ("triton", "torch"):
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure means "not here"
            return f"cannot import {name} ({type(exc).__name__}: {exc})"
    import torch

    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False (no CUDA device visible)"
    return None


def resolve_backend(backend: Any) -> GpuBackend | None:
    """The GPU backend that ``@autotune(backend=...)`` uses, or None for the model path.

    Parameters
    ----------
    backend : {"auto", "gpu", "model"} or GpuBackend
        ``"auto"``: :class:`TritonBackend` when ``import triton, torch``
        succeed and ``torch.cuda.is_available()``, else None; ``"gpu"``: it
        or an error; ``"model"``: None; a :class:`GpuBackend`: itself.

    Returns
    -------
    GpuBackend or None

    Raises
    ------
    MeasureError
        For ``"gpu"`` when Triton, PyTorch or a CUDA device is missing (the
        message names which).
    InvalidConfigError
        For any other value.
    """
    if isinstance(backend, GpuBackend):
        return backend
    if backend not in BACKENDS:
        raise InvalidConfigError(f"backend must be one of {BACKENDS} or a GpuBackend, got "
                                 f"backend={backend!r}")
    if backend == "model":
        return None
    why = gpu_unavailable_reason()
    if why is None:
        return TritonBackend()
    if backend == "gpu":
        raise MeasureError(f"@autotune(backend='gpu') needs Triton, PyTorch and a CUDA "
                           f"device: {why}; use backend='model' (or 'auto') to tune with the "
                           f"GPU model in the interpreter")
    return None


# --------------------------------------------------------------------------------------
def _worker_init() -> None:
    """Import Triton and create the CUDA context once per compile worker."""
    import torch
    import triton  # noqa: F401

    torch.cuda.init()


def _compile_in_worker(job: dict[str, Any]) -> None:
    """Compile one config in a worker: ``warmup`` on tiny tensors of the call's dtypes.

    Triton specialises a launch on each pointer's dtype and 16-byte alignment
    and on each integer's value (``== 1``, divisible by 16), not on tensor
    sizes, so one-element tensors of the same dtypes compile the binary the
    real launch looks up in Triton's cache.
    """
    import torch

    kernel = job["ref"].load()

    def value(spec: tuple[str, Any]) -> Any:
        kind, v = spec
        return torch.empty(16, dtype=getattr(torch, v), device="cuda") if kind == "tensor" \
            else v

    args = [value(s) for s in job["args"]]
    kwargs = {k: value(s) for k, s in job["kwargs"].items()}
    compiled = kernel.warmup(*args, grid=tuple(job["grid"]), **kwargs, **job["meta"])
    _load_binary(compiled)


def _load_binary(compiled: Any) -> None:
    """Load a compiled kernel's binary (raises ``OutOfResources`` for too much shared memory)."""
    init = getattr(compiled, "_init_handles", None)
    if callable(init):
        init()


class TritonBackend(GpuBackend):
    """:class:`GpuBackend` on a CUDA device through ``triton`` and ``torch``.

    * an autotile ``@jit`` kernel is ported once with
      :func:`~autotile.measure.gpu.port_to_triton` (the same source under
      ``triton.jit``); a ``triton.jit`` function is used as it is;
    * compile: ``JITFunction.warmup(*args, grid=..., **meta)`` (in a worker,
      on one-element tensors of the call's dtypes), then the binary is loaded
      so that a shared-memory refusal (``OutOfResources``) shows at compile
      time;
    * time: ``triton.testing.do_bench`` (CUDA events; it zeroes a 256 MB
      buffer before each run, flushing the L2), median.

    Raises
    ------
    MeasureError
        If Triton, PyTorch or a CUDA device is missing.
    """

    worker_fn = staticmethod(_compile_in_worker)
    worker_init = staticmethod(_worker_init)
    #: The compile workers are forks of a fork server that imported PyTorch, Triton and
    #: this module once (no CUDA context: the server never touches the device), so a
    #: tuning's workers do not each import them again ("spawn" where there is no fork
    #: server, as on Windows). On the H200, five spawned workers started together were
    #: ready 5.1-7.4 s after their start (benchmarks/h200/data/autotune_kernels_v5 and
    #: _v6, layer norm, inferred from when their first jobs ended), against 3.3-3.5 s for
    #: one started alone (``diag_records.py --part compile``): in the v6 run they took
    #: nothing from a 3.9 s first compile and two configs from an 8.4 s one. The server
    #: is started once per process, by the first tuning that starts workers, and lives
    #: as long as the process (one process, no GPU memory).
    mp_context = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    worker_preload = ("torch", "triton", __name__)

    def __init__(self) -> None:
        why = gpu_unavailable_reason()
        if why is not None:
            raise MeasureError(f"TritonBackend needs Triton, PyTorch and a CUDA device: {why}")
        import torch
        import triton
        import triton.testing

        self._torch, self._triton = torch, triton
        self._ported: dict[int, tuple[Any, Any]] = {}

    def __repr__(self) -> str:
        return f"TritonBackend({self.device_name()!r}, triton {self.version()})"

    def device_name(self) -> str:
        """``torch.cuda.get_device_name()`` of the current device."""
        return str(self._torch.cuda.get_device_name())

    def version(self) -> str:
        """``triton.__version__``."""
        return str(self._triton.__version__)

    def kernel(self, fn: Any) -> Any:
        """``fn`` when it is a ``triton.jit`` function, else its port (cached per kernel)."""
        if is_triton_jit(fn):
            return fn
        from autotile.measure.gpu import port_to_triton

        got = self._ported.get(id(fn))
        if got is None or got[0] is not fn:
            name = getattr(getattr(fn, "fn", fn), "__name__", "kernel")
            got = (fn, getattr(port_to_triton([fn]), name))
            self._ported[id(fn)] = got
        return got[1]

    def _spec(self, v: Any) -> tuple[str, Any]:
        if self.is_tensor(v):
            return ("tensor", self.dtype_name(v))
        return ("value", v)

    def compile_job(self, kernel: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                    grid: tuple[int, ...], config: LaunchConfig) -> Any:
        """``{"ref", "args", "kwargs", "grid", "meta"}`` with tensors as their dtype names."""
        return {"ref": KernelRef.of(kernel), "args": [self._spec(a) for a in args],
                "kwargs": {k: self._spec(v) for k, v in kwargs.items()},
                "grid": tuple(grid), "meta": config.all_kwargs()}

    def compile(self, kernel: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                grid: Any, config: LaunchConfig) -> None:
        """``kernel.warmup(*args, grid=grid, **kwargs, **meta)``, then load the binary."""
        _load_binary(kernel.warmup(*args, grid=grid, **kwargs, **config.all_kwargs()))

    def launch(self, kernel: Any, grid: Any, args: tuple[Any, ...],
               kwargs: Mapping[str, Any]) -> None:
        """``kernel[grid](*args, **kwargs)``."""
        kernel[grid](*args, **kwargs)

    def bench(self, call: Callable[[], Any], warmup_ms: float, rep_ms: float) -> float:
        """``triton.testing.do_bench(call, warmup, rep)`` median, in seconds."""
        q = self._triton.testing.do_bench(call, warmup=warmup_ms, rep=rep_ms,
                                          quantiles=[0.5, 0.2, 0.8])
        med = q[0] if isinstance(q, (list, tuple)) else q
        return float(med) * 1e-3

    def synchronize(self) -> None:
        """``torch.cuda.synchronize()``."""
        self._torch.cuda.synchronize()

    def is_tensor(self, value: Any) -> bool:
        """``isinstance(value, torch.Tensor)``."""
        return isinstance(value, self._torch.Tensor)

    def poison_(self, t: Any) -> None:
        """NaN for floating tensors, the dtype's minimum for integers; bools untouched."""
        torch = self._torch
        if t.dtype.is_floating_point or t.dtype.is_complex:
            t.fill_(math.nan)
        elif t.dtype != torch.bool:
            t.fill_(torch.iinfo(t.dtype).min)

    def equal(self, a: Any, b: Any) -> bool:
        """Same shape and elements (NaN equal to NaN)."""
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.is_floating_point:
            return bool(self._torch.equal(a.isnan(), b.isnan())) and bool(
                self._torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0)))
        return bool(self._torch.equal(a, b))

    def mismatch(self, name: str, got: Any, want: Any, rtol: float | None,
                 atol: float | None) -> str | None:
        """Compare on the device with ``torch.isclose`` (float64 for float64, else float32)."""
        torch = self._torch
        want = want if self.is_tensor(want) else torch.as_tensor(want, device=got.device)
        if tuple(got.shape) != tuple(want.shape):
            return f"{name} has shape {tuple(got.shape)}, the expected output has shape " \
                   f"{tuple(want.shape)}"
        r0, a0 = loosest_tolerance(self.dtype_name(got), self.dtype_name(want))
        r = r0 if rtol is None else rtol
        a = a0 if atol is None else atol
        if got.dtype == torch.bool or want.dtype == torch.bool:
            bad = got != want.to(got.dtype)
        else:
            ft = torch.float64 if torch.float64 in (got.dtype, want.dtype) else torch.float32
            g, w = got.to(ft), want.to(ft)
            bad = ~torch.isclose(g, w, rtol=r, atol=a, equal_nan=True)
        n_bad = int(bad.sum().item())
        if n_bad == 0:
            return None
        diff = (got.to(torch.float64) - want.to(torch.float64)).abs().nan_to_num(math.inf)
        worst = int(torch.where(bad, diff, torch.full_like(diff, -1.0)).argmax().item())
        return (f"{name} differs from the expected output in {n_bad} of {bad.numel()} "
                f"elements (max abs error {float(diff.flatten()[worst]):.4g} at flat index "
                f"{worst}, rtol={r:g}, atol={a:g})")
