"""Measure library-kernel configs on a real GPU: the same source under ``triton.jit``.

:class:`TritonMeasurer` is the hardware counterpart of
:class:`~autotile.measure.KernelModelMeasurer`: same kernels, same spaces,
same metric names where they overlap (``time_s``, ``tflops``). The kernel's
function is cut out of its ``autotile/kernels`` module with :mod:`ast` and
re-imported, byte for byte, under ``import triton.language as tl; from triton
import jit`` (:func:`triton_source`, :func:`port_to_triton`), so what runs on
the GPU is exactly what the interpreter and the simulator see.

Triton and PyTorch are imported lazily, inside the methods that need them:
``import autotile.measure`` works on a machine without either, and
constructing a :class:`TritonMeasurer` there raises :class:`MeasureError`.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import math
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from autotile.errors import InvalidConfigError, MeasureError
from autotile.kernels import KERNELS, KernelSpec, get_kernel_spec, relative_l2_error
from autotile.kernels._spaces import (
    check_shape_mapping,
)
from autotile.kernels._spec import default_rtol
from autotile.measure._result import Measurer, MeasureResult

__all__ = [
    "TritonMeasurer",
    "TRITON_METRICS",
    "TRITON_KERNELS",
    "triton_source",
    "port_to_triton",
    "classify_error",
    "classify_error_text",
    "relative_error",
    "kernel_flops",
    "default_rtol",
]

#: Metrics of an ``"ok"`` :class:`TritonMeasurer` result.
TRITON_METRICS = ("time_s", "tflops", "time_p20_s", "time_p80_s", "rel_error",
                  "first_call_s")

#: Kernels :class:`TritonMeasurer` runs: every registered spec
#: (:data:`autotile.kernels.KERNELS`), by name.
TRITON_KERNELS: Mapping[str, KernelSpec] = KERNELS

#: Header of a ported module: Triton's names where autotile's were.
TRITON_HEADER = "import triton\nimport triton.language as tl\nfrom triton import jit\n\n\n"

# Exception type names and message fragments that mean "this config cannot run here"
# (Triton scores such configs inf in @autotune; we call them infeasible).
_INFEASIBLE_TYPES = ("OutOfResources", "OutOfResourcesError", "PTXASError")
_INFEASIBLE_TEXT = ("out of resource", "outofresources", "too much shared data",
                    "uses too much shared", "exceeds the maximum", "too many resources",
                    "insufficient shared memory")


# --------------------------------------------------------------------------------------
# pure-Python helpers (no triton, no torch)
def triton_source(kernels: Sequence[Any]) -> str:
    """Source of a module that defines ``kernels`` under ``triton.jit``.

    Each kernel's function is cut out of its own file with :mod:`ast`,
    unchanged, with its ``jit`` decorator (other decorators, such as an
    ``@autotune(...)`` above it, are left out); the module header imports ``triton``,
    ``triton.language as tl`` and ``jit`` from ``triton`` instead of
    ``autotile.lang``.

    Parameters
    ----------
    kernels : sequence of autotile.lang.JITFunction or function
        ``@jit`` kernels of :mod:`autotile.kernels` (or plain functions),
        each defined at the top level of its module.

    Returns
    -------
    str
        Python source: :data:`TRITON_HEADER` then the functions, in order.

    Raises
    ------
    MeasureError
        If a kernel's source file cannot be found or the function is not a
        top-level definition there.

    Examples
    --------
    >>> from autotile.kernels import add_kernel
    >>> src = triton_source([add_kernel])
    >>> src.splitlines()[1], "def add_kernel(" in src
    ('import triton.language as tl', True)
    """
    chunks: list[str] = []
    for k in kernels:
        fn = getattr(k, "fn", k)
        name = getattr(fn, "__name__", repr(fn))
        try:
            path = inspect.getsourcefile(fn)
        except TypeError:
            path = None
        if path is None:
            raise MeasureError(f"cannot find the source file of kernel {name!r}")
        src = Path(path).read_text()
        lines = src.splitlines()
        found = None
        for node in ast.parse(src).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                decorators = ["@" + (ast.get_source_segment(src, d) or "jit")
                              for d in node.decorator_list if _is_jit_decorator(d)]
                found = "\n".join(decorators + lines[node.lineno - 1:node.end_lineno])
        if found is None:
            raise MeasureError(f"kernel {name!r} is not a top-level function of {path}")
        chunks.append(found)
    return TRITON_HEADER + "\n\n\n".join(chunks) + "\n"


def _is_jit_decorator(node: ast.expr) -> bool:
    """Whether a decorator is ``jit``/``tl.jit``/``triton.jit`` (called or not).

    Other decorators (an ``@autotune(...)`` above the kernel) are not part of
    the ported kernel: the GPU tuner wraps the ported function itself.
    """
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id == "jit"
    return isinstance(node, ast.Attribute) and node.attr == "jit"


def classify_error(exc: BaseException) -> Literal["infeasible", "failed"]:
    """Status of a config whose compile or launch raised ``exc``.

    ``"infeasible"`` when Triton refused the config for lack of resources
    (``triton.runtime.errors.OutOfResources``, a ptxas "too much shared
    data" error, ...), anywhere in the exception's cause/context chain;
    ``"failed"`` for anything else.

    Parameters
    ----------
    exc : BaseException

    Returns
    -------
    {"infeasible", "failed"}

    Examples
    --------
    >>> class OutOfResources(Exception): ...
    >>> classify_error(OutOfResources("out of resource: shared memory")), classify_error(
    ...     ValueError("bad"))
    ('infeasible', 'failed')
    """
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if classify_error_text([t.__name__ for t in type(e).__mro__], str(e)) == "infeasible":
            return "infeasible"
        e = e.__cause__ or e.__context__
    return "failed"


def classify_error_text(type_names: Iterable[str], message: str
                        ) -> Literal["infeasible", "failed"]:
    """:func:`classify_error` from an exception's class names and text.

    For an error that crossed a process boundary as text (a compile
    worker's), where the exception object is gone.

    Parameters
    ----------
    type_names : iterable of str
        Class names of the exception, its bases and its causes.
    message : str
        Its message.

    Returns
    -------
    {"infeasible", "failed"}

    Examples
    --------
    >>> classify_error_text(["OutOfResources", "Exception"], "out of resource: shared memory")
    'infeasible'
    """
    if set(type_names) & set(_INFEASIBLE_TYPES):
        return "infeasible"
    text = message.lower()
    return "infeasible" if any(s in text for s in _INFEASIBLE_TEXT) else "failed"


def relative_error(out: Any, ref: Any) -> float:
    """``||out - ref||_2 / ||ref||_2`` in float64; NaN if ``out`` has a NaN.

    :func:`autotile.kernels.relative_l2_error` with this layer's error type.

    Parameters
    ----------
    out, ref : array-like of one shape
        NumPy arrays (or anything ``np.asarray`` takes).

    Returns
    -------
    float

    Raises
    ------
    MeasureError
        If the shapes differ.
    """
    try:
        return relative_l2_error(out, ref)
    except InvalidConfigError as exc:
        raise MeasureError(str(exc)) from None


def kernel_flops(kernel: str | KernelSpec, shape: Mapping[str, int]) -> float:
    """Useful FLOPs of one launch: the spec's ``flops(shape)``.

    ``2 M N K`` (matmul), ``5 M N`` (fused softmax), ``4 N^2 d heads``
    (flash attention, not causal), ...

    Raises
    ------
    MeasureError
        For a name that is not registered.
    """
    try:
        spec = get_kernel_spec(kernel, "kernel_flops: kernel")
    except InvalidConfigError as exc:
        raise MeasureError(str(exc)) from None
    return float(spec.flops(shape))


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# --------------------------------------------------------------------------------------
# triton side
def port_to_triton(kernels: Sequence[Any]) -> Any:
    """Import ``kernels`` under ``triton.jit`` from :func:`triton_source`.

    The module is written to a fresh temporary directory (Triton's ``jit``
    reads the function's source with :mod:`inspect`, so it must be a file)
    and registered in ``sys.modules``.

    Returns
    -------
    module
        With one ``triton.JITFunction`` attribute per kernel name.

    Raises
    ------
    ImportError
        If Triton is not installed.
    """
    src = triton_source(kernels)
    tmp = Path(tempfile.mkdtemp(prefix="autotile_triton_"))
    names = "_".join(getattr(getattr(k, "fn", k), "__name__", "k") for k in kernels)
    path = tmp / f"autotile_triton_{names}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def bench_ms_problem(name: str, value: Any, *, positive: bool) -> str | None:
    """Why ``value`` is not a ``do_bench`` time budget in milliseconds, or None.

    Parameters
    ----------
    name : str
        The argument's name in the message (``"warmup"``, ``"rep_ms"``...).
    value : object
        The budget: a finite real number ``>= 0`` (``warmup``) or ``> 0``
        (``rep``: at least one timed run).
    positive : bool
        Require ``> 0`` instead of ``>= 0``.

    Returns
    -------
    str or None
        The message to raise with, naming the rule and the value.
    """
    rule = "> 0" if positive else ">= 0"
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        return (f"{name} must be a real number of milliseconds {rule}, got "
                f"{name}={value!r} ({type(value).__name__})")
    if not math.isfinite(value) or (value <= 0 if positive else value < 0):
        return f"{name} must be a finite number of milliseconds {rule}, got {name}={value!r}"
    return None


def _require_triton() -> tuple[Any, Any]:
    """Import and return ``(triton, torch)``, or raise the measurer's clear error."""
    try:
        import torch
        import triton
        import triton.testing  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means "not here"
        raise MeasureError(f"TritonMeasurer needs triton and a CUDA device: cannot import "
                           f"triton/torch ({type(exc).__name__}: {exc})") from None
    if not torch.cuda.is_available():
        raise MeasureError("TritonMeasurer needs triton and a CUDA device: "
                           "torch.cuda.is_available() is False")
    return triton, torch


class TritonMeasurer(Measurer):
    """Times library-kernel configs on a CUDA GPU through ``triton.jit``.

    The kernel runs from its own ``autotile/kernels`` source (see
    :func:`port_to_triton`) with a config's constexpr knobs and Triton's
    launch options ``num_warps`` / ``num_stages``. Each measurement:

    1. rejects a config that breaks a space constraint (``"infeasible"``);
    2. compiles and launches once on the measurer's inputs, the output first
       filled with NaN (``first_call_s`` is this wall time, compile
       included); a resource refusal by Triton (``OutOfResources``, ptxas
       shared-memory errors) is ``"infeasible"``, any other exception
       ``"failed"`` (:func:`classify_error`);
    3. checks the output against a PyTorch reference on the GPU
       (``rel_error = ||out - ref|| / ||ref||``, float32 reference); above
       ``rtol`` (or NaN: an unwritten element) the result is ``"failed"``;
    4. times it with ``triton.testing.do_bench`` (CUDA events; the L2 is
       flushed before every run by writing a 256 MB buffer) and reports the
       median.

    Parameters
    ----------
    kernel : str or KernelSpec
        A spec or the name of a registered one (every library kernel, and any
        kernel added with :func:`autotile.kernels.register_kernel`).
    shape : mapping of str to int
        The spec's problem sizes (``{"M", "N", "K"}`` for matmul, ...).
    dtype : str, optional
        Operand dtype; default the spec's ``default_dtype``.
    warmup_ms, rep_ms : float, default=25.0, 100.0
        ``do_bench``'s warm-up and timed budgets, milliseconds; finite,
        ``warmup_ms >= 0`` and ``rep_ms > 0``.
    check : bool, default=True
        Run the correctness check.
    rtol : float, optional
        Threshold of the check; default :func:`default_rtol`.
    seed : int, default=0
        Seed of the random inputs (drawn once per measurer, on the GPU).
    device : str, default="cuda"

    Attributes
    ----------
    space : Space
        The kernel's space for ``shape`` (same as the simulator's).

    Raises
    ------
    TypeError
        If ``shape`` is not a mapping (e.g. a tuple).
    MeasureError
        If Triton or PyTorch cannot be imported, no CUDA device is visible,
        the kernel name or shape is wrong, or ``warmup_ms``/``rep_ms`` is
        negative, not finite or (``rep_ms``) zero.

    Notes
    -----
    Metrics (:data:`TRITON_METRICS`): ``time_s`` (median), ``tflops``
    (:func:`kernel_flops` / ``time_s`` / 1e12), ``time_p20_s`` and
    ``time_p80_s`` (quantiles of the timed runs), ``rel_error``,
    ``first_call_s``. Objective ``time_s``. Softmax configs with
    ``ROWS_PER_PROGRAM != 1`` are infeasible: the library kernel handles
    one row per program (the knob exists in the model only).

    Examples
    --------
    On a machine with a GPU::

        from autotile.search import tune
        m = TritonMeasurer("matmul", {"M": 4096, "N": 4096, "K": 4096})
        study = tune(m.space, m, searcher="random", budget=30, seed=0,
                     storage=":memory:")
    """

    metrics = TRITON_METRICS
    objective = "time_s"

    def __init__(self, kernel: str | KernelSpec, shape: Mapping[str, int], *,
                 dtype: str | None = None, warmup_ms: float = 25.0, rep_ms: float = 100.0,
                 check: bool = True, rtol: float | None = None, seed: int = 0,
                 device: str = "cuda") -> None:
        try:
            self.spec = get_kernel_spec(kernel, "TritonMeasurer: kernel")
        except InvalidConfigError as exc:
            raise MeasureError(str(exc)) from None
        self.kernel_name = self.spec.name
        for name, value, positive in (("warmup_ms", warmup_ms, False), ("rep_ms", rep_ms, True)):
            why = bench_ms_problem(name, value, positive=positive)
            if why is not None:
                raise MeasureError(f"TritonMeasurer: {why}")
        check_shape_mapping("TritonMeasurer", shape)
        self.shape = self.spec.check_shape(shape, "TritonMeasurer", MeasureError)
        self.dtype = dtype
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms
        self.check = check
        self.rtol = rtol
        self.seed = seed
        self.device = device
        try:
            self._dtype = self.spec.check_dtype(dtype)
        except InvalidConfigError as exc:
            raise MeasureError(str(exc)) from None
        self.space = self.spec.space(self.shape, self._dtype)
        self._rtol = self.spec.tolerance(self._dtype) if rtol is None else float(rtol)
        self._flops = float(self.spec.flops(self.shape))
        self._triton, self._torch = _require_triton()
        self._ported: dict[int, Any] = {}
        self._np_args: dict[str, Any] | None = None
        self._data: dict[str, Any] | None = None
        self._ref: dict[str, Any] | None = None

    def settings(self) -> dict[str, Any]:
        """Everything besides the space that changes the numbers, JSON-able.

        Returns
        -------
        dict
            ``kernel_name``, ``shape``, ``dtype``, ``warmup_ms``, ``rep_ms``,
            ``check``, ``rtol``, ``seed`` and ``device`` as passed.
        """
        return {"check": self.check, "device": self.device, "dtype": self.dtype,
                "kernel_name": self.kernel_name, "rep_ms": self.rep_ms, "rtol": self.rtol,
                "seed": self.seed, "shape": self.shape, "warmup_ms": self.warmup_ms}

    # -- data and launch ---------------------------------------------------------------
    def _port(self, kernel: Any) -> Any:
        """The ``triton.jit`` twin of an autotile ``@jit`` kernel (ported once)."""
        got = self._ported.get(id(kernel))
        if got is None:
            name = getattr(getattr(kernel, "fn", kernel), "__name__", "kernel")
            got = getattr(port_to_triton([kernel]), name)
            self._ported[id(kernel)] = got
        return got

    def _to_torch(self, value: Any) -> Any:
        """A NumPy (or bfloat16 interpreter) array as a GPU tensor; scalars unchanged."""
        torch = self._torch
        from autotile.lang import BFloat16Array, bf16_to_float32

        if isinstance(value, BFloat16Array):
            return torch.from_numpy(bf16_to_float32(value)).to(self.device).to(torch.bfloat16)
        if isinstance(value, np.ndarray):
            return torch.from_numpy(np.ascontiguousarray(value)).to(self.device)
        return value

    def host_args(self) -> dict[str, Any]:
        """The spec's NumPy arguments at ``shape`` (seeded by ``seed``; made once)."""
        if self._np_args is None:
            self._np_args = self.spec.args(self.shape, self._dtype, seed=self.seed)
        return self._np_args

    def data(self) -> dict[str, Any]:
        """The measurer's GPU tensors by argument name (made on first use)."""
        if self._data is None:
            self._data = {k: self._to_torch(v) for k, v in self.host_args().items()}
        return self._data

    def _launches(self, config: Mapping[str, Any], data: Mapping[str, Any]) -> list[Any]:
        return self.spec.launches(self.shape, self._dtype, dict(config), data)

    def launcher(self, config: Mapping[str, Any]) -> Any:
        """A no-argument callable that runs ``config``'s launches once on :meth:`data`."""
        calls = []
        for la in self._launches(config, self.data()):
            kern = self._port(la.kernel)
            calls.append((kern, la.grid, la.positional(), dict(la.meta), la.num_warps,
                          la.num_stages))

        def fn() -> None:
            for kern, grid, args, meta, nw, ns in calls:
                kern[grid](*args, **meta, num_warps=nw, num_stages=ns)

        return fn

    def compile(self, config: Mapping[str, Any]) -> None:
        """Compile ``config`` without launching it (fills Triton's on-disk cache)."""
        for la in self._launches(config, self.data()):
            self._port(la.kernel).warmup(*la.positional(), grid=la.grid, **dict(la.meta),
                                         num_warps=la.num_warps, num_stages=la.num_stages)

    def _outputs(self) -> tuple[str, ...]:
        return tuple(self._reference())

    def _reference(self) -> dict[str, Any]:
        """The spec's NumPy reference on the host arguments (computed once)."""
        if self._ref is None:
            self._ref = {k: np.asarray(v, np.float64)
                         for k, v in self.spec.reference(self.host_args()).items()}
        return self._ref

    def _rel_error(self, out: Any, ref: Any) -> float:
        o = out.float().cpu().numpy()
        return relative_error(o, ref) if not np.isnan(o).any() else math.nan

    # -- measuring -------------------------------------------------------------------
    def _fail(self, config: Any, exc: BaseException) -> MeasureResult:
        status = classify_error(exc)
        msg = f"{type(exc).__name__}: {exc}"
        return MeasureResult(self.config_text(config), status, {}, 0.0,
                             msg if len(msg) < 2000 else msg[:2000] + " ...")

    def _measure(self, config: Any) -> MeasureResult:
        text = self.config_text(config)
        # checked as the equivalent config the space holds (matmul GROUP_M >= the tile
        # rows); launched as written, which runs the same program order
        bad = self.space.violations(self.spec.canonical_config(config, self.shape))
        if bad:
            return MeasureResult(text, "infeasible", {}, 0.0, "; ".join(bad))
        cfg = dict(config)
        try:
            self.spec.split_config(cfg)
        except InvalidConfigError as exc:
            return MeasureResult(text, "infeasible", {}, 0.0, str(exc))
        torch, triton = self._torch, self._triton
        data = self.data()
        outs = self._outputs() if self.check else ()
        try:
            fn = self.launcher(cfg)
            for name in outs:
                data[name].fill_(math.nan)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001 - classified into a result
            return self._fail(config, exc)
        err = math.nan
        if self.check:
            ref = self._reference()
            err = max(self._rel_error(data[name], ref[name]) for name in outs)
            if not err <= self._rtol:
                return MeasureResult(text, "failed", {}, 0.0,
                                     f"wrong result: relative error {err:.3g} > rtol="
                                     f"{self._rtol:g} (NaN: output not written)")
        try:
            q = triton.testing.do_bench(fn, warmup=self.warmup_ms, rep=self.rep_ms,
                                        quantiles=[0.5, 0.2, 0.8])
        except Exception as exc:  # noqa: BLE001
            return self._fail(config, exc)
        med, p20, p80 = (float(v) * 1e-3 for v in q)
        return MeasureResult(text, "ok", {
            "time_s": med, "tflops": self._flops / med / 1e12, "time_p20_s": p20,
            "time_p80_s": p80, "rel_error": err, "first_call_s": first})

    def precompile(self, configs: Iterable[Mapping[str, Any]], n_jobs: int = 8
                   ) -> list[str | None]:
        """Compile configs in ``n_jobs`` worker processes to fill Triton's disk cache.

        Later measurements of these configs then load the binaries instead of
        compiling. Configs that break a space constraint are skipped.

        Parameters
        ----------
        configs : iterable of Config or mapping
        n_jobs : int, default=8
            Worker processes (``spawn``; each creates a CUDA context).

        Returns
        -------
        list of str or None
            Per config: ``None`` if it compiled (or was skipped), else the error.
        """
        import concurrent.futures as cf
        import multiprocessing as mp

        cfgs = [dict(c) for c in configs]
        todo = [i for i, c in enumerate(cfgs)
                if self.space.is_valid(self.spec.canonical_config(c, self.shape))]
        out: list[str | None] = [None] * len(cfgs)
        if not todo:
            return out
        registered = KERNELS.get(self.spec.name) is self.spec
        init = (self.spec.name if registered else self.spec, self.shape, self._dtype)
        with cf.ProcessPoolExecutor(max_workers=max(1, int(n_jobs)),
                                    mp_context=mp.get_context("spawn")) as ex:
            futs = {ex.submit(_compile_one, init, cfgs[i]): i for i in todo}
            for f in cf.as_completed(futs):
                try:
                    out[futs[f]] = f.result()
                except Exception as exc:  # noqa: BLE001 - a broken worker is one error
                    out[futs[f]] = f"{type(exc).__name__}: {exc}"
        return out


_WORKERS: dict[tuple[Any, ...], TritonMeasurer] = {}


def _compile_one(init: tuple[str | KernelSpec, dict[str, int], str], cfg: dict[str, Any]
                 ) -> str | None:
    """Worker of :meth:`TritonMeasurer.precompile`: compile one config."""
    try:
        spec = get_kernel_spec(init[0])
        key = (spec.name, tuple(sorted(init[1].items())), init[2])
        m = _WORKERS.get(key)
        if m is None:
            m = _WORKERS[key] = TritonMeasurer(spec, dict(init[1]), dtype=init[2],
                                               check=False)
        m.compile(cfg)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        return f"{type(exc).__name__}: {exc}"[:500]
    return None
