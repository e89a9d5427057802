"""``autotile.perf_model``: the GPU model as ``perf_model`` of Triton's own autotuner.

::

    @triton.jit
    def matmul_kernel(...): ...

    matmul = triton.autotune(configs=configs, key=["M", "N", "K"], prune_configs_by={
        "perf_model": autotile.perf_model(matmul_kernel, grid=grid), "top_k": 4})(matmul_kernel)

(the kernel must exist when ``perf_model`` is built, so ``triton.autotune`` is
applied after the definition rather than as a decorator above it).

Triton calls ``perf_model(**kernel_args, **call_kwargs, **config.all_kwargs())``
for every candidate and benchmarks only the ``top_k`` with the lowest
estimates. autotile answers from its GPU model, without touching the GPU: the
kernel's source runs in autotile's interpreter (:func:`autotile.lang.from_triton`)
on zero-filled NumPy stand-ins of the call's tensors (same shapes and dtypes),
scored by the spec's model for a registered kernel, else the records model.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from autotile.errors import InvalidConfigError, LangError
from autotile.lang import BFloat16Array, from_triton
from autotile.lang._jit import JITFunction
from autotile.measure import H100_SXM, HardwareProfile, MeasureResult
from autotile.tuner._config import LAUNCH_KNOBS, LaunchConfig
from autotile.tuner._library import RecordsScorer, default_scorer

__all__ = ["perf_model", "PerfModel", "host_stand_in"]


def host_stand_in(value: Any) -> Any:
    """A zero-filled NumPy array shaped like a tensor argument; anything else unchanged.

    A PyTorch tensor (anything with ``shape``, ``dtype`` and ``data_ptr``) becomes
    ``np.zeros`` of its shape and dtype (bfloat16: a
    :class:`~autotile.lang.BFloat16Array`); a NumPy array becomes zeros like it.
    """
    if isinstance(value, np.ndarray):
        return np.zeros_like(value)
    if hasattr(value, "data_ptr") and hasattr(value, "shape") and hasattr(value, "dtype"):
        shape = tuple(int(s) for s in value.shape)
        name = str(value.dtype).replace("torch.", "")
        if name == "bfloat16":
            return np.zeros(shape, np.uint16).view(BFloat16Array)
        try:
            return np.zeros(shape, np.dtype(name))
        except TypeError:
            raise InvalidConfigError(f"perf_model: tensor dtype {value.dtype} has no NumPy "
                                     "counterpart in autotile's interpreter") from None
    return value


class PerfModel:
    """Estimated run time (milliseconds) of a Triton config, for ``prune_configs_by``.

    Built by :func:`perf_model`, which documents the parameters. Calling it
    returns the GPU model's ``time_s`` in milliseconds (Triton's ``do_bench``
    unit), or ``inf`` for a config the model finds infeasible (its reason is
    kept in :attr:`last_reasons`).
    """

    def __init__(self, kernel: Any, hardware: HardwareProfile, grid: Any) -> None:
        if not isinstance(kernel, JITFunction) and not isinstance(
                getattr(kernel, "fn", kernel), types.FunctionType):
            hint = (" (a kernel's name is not enough: pass the function itself)"
                    if isinstance(kernel, str) else "")
            raise InvalidConfigError(
                f"perf_model: kernel must be a triton.jit function, an autotile.lang.jit "
                f"kernel or a Python function, got {type(kernel).__name__} {kernel!r}{hint}")
        self.kernel = from_triton(kernel)
        self.hardware = hardware
        if grid is not None and not callable(grid):
            from autotile.lang._semantic import check_grid

            try:
                check_grid(grid, None)
            except LangError as exc:  # else every config would score inf, silently
                raise InvalidConfigError(f"perf_model({self.kernel.__name__!r}): {exc}") from None
        self.grid = grid
        self.scorer = default_scorer(self.kernel, hardware)
        if isinstance(self.scorer, RecordsScorer) and grid is None:
            raise InvalidConfigError(
                f"perf_model({self.kernel.__name__!r}): a kernel outside autotile's registry "
                "needs grid= (the grid you launch it with: a tuple or a callable of the "
                "meta-parameters, as in Triton)")
        self.last_reasons: dict[str, str] = {}
        self._stand_ins: dict[tuple[Any, ...], Any] = {}

    @property
    def cost_hint_s(self) -> float | None:
        """Seconds per prediction, a low estimate known before any; None when unknown.

        The scorer's ``cost_hint_s``:
        :data:`~autotile.tuner._library.ANALYTIC_COST_HINT_S` for a spec's
        analytic model, :data:`~autotile.tuner._library.RECORDS_COST_HINT_S`
        for the records model.
        """
        hint = getattr(self.scorer, "cost_hint_s", None)
        return None if hint is None else float(hint)

    def __repr__(self) -> str:
        return f"PerfModel({self.kernel.__name__!r}, hardware={self.hardware.name!r})"

    def _stand_in(self, value: Any) -> Any:
        """:func:`host_stand_in`, made once per (shape, dtype) for the device tensors.

        Triton calls the model once per config with the same tensors; the
        zero-filled stand-ins are read only (the records model copies them),
        so one per shape and dtype serves every call (:meth:`clear` drops them).
        """
        if isinstance(value, np.ndarray) or not hasattr(value, "data_ptr"):
            return host_stand_in(value)
        key = (tuple(int(d) for d in value.shape), str(value.dtype))
        out = self._stand_ins.get(key)
        if out is None:
            out = self._stand_ins[key] = host_stand_in(value)
        return out

    def clear(self) -> None:
        """Forget the cached stand-ins."""
        self._stand_ins.clear()

    def estimate(self, **kwargs: Any) -> MeasureResult:
        """The model's :class:`MeasureResult` for one call (Triton's keyword arguments)."""
        names = set(self.kernel.arg_names)
        meta = {k: v for k, v in kwargs.items() if k in names and k in self._constexpr_names()}
        opts = {k: v for k, v in kwargs.items() if k in LAUNCH_KNOBS and v is not None}
        args = {k: self._stand_in(v) for k, v in kwargs.items()
                if k in names and k not in meta}
        # unconverted: LaunchConfig refuses 2.5 or NaN naming the value (int() truncated 2.5)
        cfg = LaunchConfig(meta, num_warps=opts.get("num_warps", 4),
                           num_stages=opts.get("num_stages", 3))
        result: MeasureResult
        if getattr(self.scorer, "wants_grid", False):
            result = self.scorer(cfg, args, grid=self.grid)
        else:
            result = self.scorer(cfg, args)
        return result

    def _check_arguments(self, kwargs: Mapping[str, Any]) -> None:
        """Raise when a kernel parameter without a default is missing from the call.

        A missing or misspelled argument is the caller's mistake for every
        config alike, not a config that cannot run: it must not become ``inf``
        for all of them (Triton would then keep an arbitrary ``top_k``).
        """
        import inspect

        params = inspect.signature(self.kernel.fn).parameters
        missing = [n for n, p in params.items()
                   if n not in kwargs and p.default is inspect.Parameter.empty
                   and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        if missing:
            extra = sorted(k for k in kwargs if k not in params and k not in LAUNCH_KNOBS)
            raise InvalidConfigError(
                f"perf_model({self.kernel.__name__!r}) needs every kernel argument by name "
                f"(Triton passes them all): missing {missing}"
                + (f"; unknown names given: {extra}" if extra else ""))

    def _constexpr_names(self) -> set[str]:
        k: JITFunction = self.kernel
        return {k.arg_names[i] for i in k.constexprs}

    def __call__(self, **kwargs: Any) -> float:
        """Estimated time in milliseconds.

        ``inf`` when the config cannot launch, or when running its programs in
        the interpreter raises (an out-of-bounds access, say): Triton's pruning
        then drops it instead of aborting the whole autotune. The reason is kept
        in :attr:`last_reasons`, keyed by the config's text.

        Raises
        ------
        InvalidConfigError
            If a kernel argument without a default is missing (a misspelled
            name, say), naming it.
        """
        self._check_arguments(kwargs)
        try:
            res = self.estimate(**kwargs)
        except Exception as exc:  # noqa: BLE001 - a config that cannot run is inf
            key = ", ".join(f"{k}={v}" for k, v in kwargs.items()
                            if k in self._constexpr_names() or k in LAUNCH_KNOBS)
            self.last_reasons[key] = f"{type(exc).__name__}: {exc}"
            return float("inf")
        if not res.ok:
            self.last_reasons[res.config] = res.error or res.status
            return float("inf")
        return float(res.metrics["time_s"]) * 1e3


def perf_model(kernel: Any, *, hardware: HardwareProfile = H100_SXM, grid: Any = None
               ) -> Callable[..., float]:
    """A ``perf_model`` for ``triton.autotune(prune_configs_by={...})``.

    Parameters
    ----------
    kernel : triton.jit function or autotile kernel
        The kernel being tuned. Its source runs in autotile's interpreter
        (:func:`autotile.lang.from_triton`); the GPU is not used.
    hardware : HardwareProfile, default=H100_SXM
        The GPU modelled (e.g. :data:`autotile.measure.H200_MEASURED_L2`).
    grid : tuple or callable, optional
        The launch grid, as given to ``kernel[grid]``; a callable receives
        the call's arguments and the config's meta-parameters by name. Needed
        unless the kernel is registered in :data:`autotile.kernels.KERNELS`
        (whose spec knows its grid).

    Returns
    -------
    PerfModel
        ``perf_model(**kwargs) -> float``: estimated milliseconds.

    Raises
    ------
    InvalidConfigError
        If ``kernel`` is not a kernel function (e.g. its name as a str), or
        ``grid`` is missing for a kernel outside the registry, or is
        neither a callable nor 1 to 3 non-negative ints.
    TypeError
        If ``hardware`` is not a :class:`HardwareProfile`.
    """
    if not isinstance(hardware, HardwareProfile):
        raise TypeError(f"perf_model: hardware must be a HardwareProfile (e.g. "
                        f"autotile.measure.H200), got {type(hardware).__name__}")
    return PerfModel(kernel, hardware, grid)
