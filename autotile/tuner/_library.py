"""The default scorers of ``@autotune`` and the small check instances of registered kernels.

A kernel with a registered :class:`~autotile.kernels.KernelSpec` is scored by
the GPU model its spec names (:class:`KernelModelScorer`); any other ``@jit``
kernel by the records model on the call's own arguments and grid
(:class:`RecordsScorer`). Nothing here branches on a kernel's name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

import autotile.lang as tl
from autotile.errors import InvalidConfigError
from autotile.kernels import (
    KERNELS,
    KernelLaunch,
    KernelSpec,
    canonical_group_m,
    get_kernel_spec,
    spec_for_kernel,
)
from autotile.kernels._spaces import PADDING_CONSTRAINTS
from autotile.kernels._spec import dtype_name, kernel_arg_names
from autotile.measure import H100_SXM, HardwareProfile, KernelModelMeasurer, MeasureResult
from autotile.measure._fingerprint import canonical, jsonable
from autotile.space import Space
from autotile.space._knob import format_value
from autotile.tuner._config import LaunchConfig

__all__ = ["KernelModelScorer", "RecordsScorer", "default_scorer", "library_kernel_name",
           "library_small_args", "MODEL_KERNELS", "ANALYTIC_COST_HINT_S",
           "RECORDS_COST_HINT_S"]

#: Seconds per prediction of a spec's analytic model (:class:`KernelModelScorer`),
#: a low estimate. The GPU tuner skips its model prior, before any prediction, when
#: ``n_candidates * cost_hint_s`` exceeds the prior's cap
#: (:func:`~autotile.tuner._gpu_protocol.prior_cost_cap_s`); a low hint never skips
#: a prior that could pay (the ranking's own stop rule still bounds a slower one).
#: On the H200 host (benchmarks/h200/data/autotune_kernels_v4, ``prior_note``) six
#: softmax predictions took 1.1-2.3 ms in all, 0.2-0.4 ms each; on the shared
#: 2-core VM (load 2.8-4) 0.05-0.13 s of CPU each after the first.
ANALYTIC_COST_HINT_S = 1e-3

#: Seconds per prediction of the records model (:class:`RecordsScorer`), a low
#: estimate (see :data:`ANALYTIC_COST_HINT_S` for its use). Measured: on the H200
#: host the first prediction of layer norm took 1.16-2.79 s (the three v4 cases,
#: benchmarks/h200/data/autotune_kernels_v4, ``prior_note``) and two predictions of
#: layer norm 16384 x 2560 about 3 s (the v3 run); on the shared 2-core VM (load
#: 2.8-4.3), after the first, 1.1-1.5 s of CPU a prediction of layer norm
#: 22528 x 3072 and 0.64-0.99 s of vector add at n = 2**24 (a reduced
#: interpreter run costs about a second whatever the kernel). Half a second is
#: below all of these: with ``warmup=25, rep=100`` (0.125 s of timing a config)
#: the records prior is skipped on any list, and used when a config's timing
#: budget exceeds it (a large ``rep``) and ``model_budget_s`` allows.
RECORDS_COST_HINT_S = 0.5


#: Kernel names :class:`KernelModelScorer` understands: every registered kernel at
#: import time (each has a GPU model; use :data:`autotile.kernels.KERNELS` for later
#: registrations).
MODEL_KERNELS: tuple[str, ...] = tuple(KERNELS)


def library_kernel_name(kernel: Any) -> str | None:
    """Return the registered spec name of a ``@jit`` kernel, or None."""
    spec = spec_for_kernel(kernel)
    return None if spec is None else spec.name


def _dtype_name(a: Any) -> str:
    return dtype_name(a)


def _int(v: Any) -> int:
    return int(v.value if isinstance(v, tl.constexpr) else v)


def _knob_text(space: Space, knobs: Mapping[str, Any]) -> str:
    """``"BLOCK_M=32, ..."`` in the space's knob order, as its violation messages print it."""
    return ", ".join(f"{n}={format_value(knobs[n])}" for n in space.names if n in knobs)


class _LaunchModelMeasurer(KernelModelMeasurer):
    """The GPU model of a library kernel that also scores padded (oversize) blocks.

    Checks a config against its space without the :data:`PADDING_CONSTRAINTS`
    and models such a block as what it is: one masked tile that does the
    full ``BLOCK_M x BLOCK_N`` work. Every other constraint and every
    resource limit still makes the config ``"infeasible"``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.launch_space = Space(
            self.space.knobs,
            [c for c in self.space.constraints if c.name not in PADDING_CONSTRAINTS],
            name=self.space.name)

    def _feasibility_space(self) -> Space:
        return self.launch_space


def _canonical_group_m(knobs: dict[str, Any], M: int) -> None:
    """Map a ``GROUP_M >= cdiv(M, BLOCK_M)`` onto the space's one, in place.

    :func:`~autotile.kernels.canonical_group_m` on ``knobs``.
    """
    knobs.update(canonical_group_m(knobs, {"M": M}))


class KernelModelScorer:
    """Score a config of a library kernel at the real shape with the GPU model.

    Wraps :class:`~autotile.measure.KernelModelMeasurer`: reads the problem
    shape and operand dtype from the call's arguments, keeps one measurer per
    (shape, dtype) and maps the config's meta-parameters plus ``num_warps``
    and ``num_stages`` onto the measurer's knobs. Meta-parameters the model
    has no knob for (``PID_ORDER``, ``BLOCK_SIZE``, ...) are ignored; a model
    knob the config lacks takes its default (``ROWS_PER_PROGRAM=1``) or makes
    the config ``"infeasible"``. A matmul ``GROUP_M`` at least
    ``cdiv(M, BLOCK_M)`` (e.g. Triton's usual ``GROUP_M=8`` on a small
    ``M``) is scored as the equivalent config the space holds: the kernel
    clamps the group to the tile rows, so the launch order is the same; a
    reason given for such a config shows ``GROUP_M`` as written and says
    which value was scored.

    A block larger than the padded problem (``BLOCK_M > max(16,
    next_power_of_2(M))``, e.g. ``BLOCK_M=64`` at ``M=1``; see
    :data:`~autotile.kernels._spaces.PADDING_CONSTRAINTS`) is scored,
    not skipped: as in Triton, the kernel masks the rows and columns past
    the problem, so the config launches and computes the right result. The
    model charges it the whole padded tile (its flops and its bytes). The
    search spaces (:func:`~autotile.measure.matmul_space`) still leave such
    blocks out.

    Parameters
    ----------
    kernel_name : {"matmul", "matmul_persistent", "softmax_fused", "flash_attention"}
        Which kernel's model. Shapes are read as: matmul ``M``, ``N``, ``K``
        and ``a_ptr``'s dtype; softmax ``input_ptr.shape[0]`` rows,
        ``n_cols``; attention ``N_CTX``, ``HEAD_DIM`` and ``Q.shape[0]``
        heads.
    hardware : HardwareProfile, default=H100_SXM
        The GPU modelled.
    **measurer_kwargs
        Passed to :class:`KernelModelMeasurer` (``params``,
        ``max_probe_programs``, ...).

    Raises
    ------
    InvalidConfigError
        For an unknown ``kernel_name``.
    TypeError
        If ``hardware`` is not a :class:`HardwareProfile`.
    """

    def __init__(self, kernel_name: str | KernelSpec, hardware: HardwareProfile = H100_SXM,
                 **measurer_kwargs: Any) -> None:
        self.spec = get_kernel_spec(kernel_name, "KernelModelScorer: kernel_name")
        kernel_name = self.spec.name
        if not isinstance(hardware, HardwareProfile):
            raise TypeError(
                "KernelModelScorer: hardware must be a HardwareProfile (e.g. "
                f"autotile.measure.H100_SXM), got {type(hardware).__name__} "
                f"hardware={hardware!r}")
        self.kernel_name = kernel_name
        self.hardware = hardware
        self.measurer_kwargs = dict(measurer_kwargs)
        self._measurers: dict[tuple[Any, ...], KernelModelMeasurer] = {}

    @property
    def cost_hint_s(self) -> float:
        """Seconds per prediction, a low estimate.

        :data:`ANALYTIC_COST_HINT_S`, or :data:`RECORDS_COST_HINT_S` for a spec
        whose model is ``"records"``.
        """
        return RECORDS_COST_HINT_S if self.spec.model == "records" else ANALYTIC_COST_HINT_S

    def __repr__(self) -> str:
        return f"KernelModelScorer({self.kernel_name!r}, hardware={self.hardware.name!r})"

    @property
    def cache_tag(self) -> str:
        """Identity of this scorer in the autotune disk-cache key."""
        kwargs = {k: jsonable(v) if jsonable(v) is not None or v is None else repr(v)
                  for k, v in self.measurer_kwargs.items()}
        return (f"KernelModelScorer:{self.kernel_name}:{canonical(kwargs)}:"
                f"{canonical(jsonable(self.hardware))}")

    def clear(self) -> None:
        """Forget the measurers built so far (an explicit cache)."""
        self._measurers.clear()

    def shape_of(self, args: Mapping[str, Any]) -> tuple[dict[str, int], str]:
        """Return the model's problem shape and the operand dtype name for a call.

        Raises
        ------
        KeyError
            If an argument the shape is read from is missing.
        """
        return self.spec.shape_of(args)

    def measurer(self, args: Mapping[str, Any]) -> KernelModelMeasurer:
        """Return the (cached) measurer for the call's shape and dtype."""
        shape, dtype = self.shape_of(args)
        k = (tuple(sorted(shape.items())), dtype)
        m = self._measurers.get(k)
        if m is None:
            m = _LaunchModelMeasurer(self.spec, shape, self.hardware, dtype=dtype,
                                     **self.measurer_kwargs)
            self._measurers[k] = m
        return m

    def __call__(self, config: LaunchConfig, args: Mapping[str, Any]) -> MeasureResult:
        """Score ``config`` for the call with arguments ``args`` (by name).

        Returns
        -------
        MeasureResult
            ``"ok"`` with ``time_s`` and the other model metrics, or
            ``"infeasible"`` with the reason (resource limits, space
            constraints, a model knob missing from the config).
        """
        m = self.measurer(args)
        values = config.all_kwargs()
        knobs: dict[str, Any] = {}
        for name in m.space.names:
            if name in values:
                knobs[name] = values[name]
            elif name in self.spec.model_knobs:
                knobs[name] = self.spec.model_knobs[name]
            else:
                return MeasureResult(str(config), "infeasible", {}, 0.0,
                                     f"the {self.kernel_name} model needs knob {name}, "
                                     f"which the config does not set")
        written = dict(knobs)
        if "GROUP_M" in knobs and "M" in args:
            _canonical_group_m(knobs, _int(args["M"]))
        res = m.measure(knobs)
        if res.ok or knobs == written or res.error is None:
            return res
        scored, shown = _knob_text(m.space, knobs), _knob_text(m.space, written)
        if scored not in res.error:
            return res
        M, bm = _int(args["M"]), written["BLOCK_M"]
        note = (f" (GROUP_M={format_value(written['GROUP_M'])} was scored as the equivalent "
                f"GROUP_M={format_value(knobs['GROUP_M'])}: every GROUP_M >= cdiv(M, BLOCK_M)="
                f"{-(-M // bm)} launches the tiles in the same order)")
        return MeasureResult(m.config_text(written), res.status, dict(res.metrics), res.wall_time_s,
                             res.error.replace(scored, shown) + note)


# -- small check instances ------------------------------------------------------------
def library_small_args(kernel: Any) -> Callable[[Mapping[str, Any]], dict[str, Any]] | None:
    """Return a ``small_args`` builder for a registered kernel, or None.

    The builder reads the call's shape and dtype (``spec.shape_of``) and
    returns the spec's random arguments at ``spec.small_shape(shape)``:
    ``matmul_kernel`` gets ``M, N, K = min(M, 72), min(N, 40), min(K, 56)``
    (edge tiles and the masked K tail are exercised), the row kernels 3-4
    rows. Kernels without a spec: None (pass ``small_args=``).
    """
    spec = spec_for_kernel(kernel)
    if spec is None:
        return None

    def small(args: Mapping[str, Any]) -> dict[str, Any]:
        shape, dtype = spec.shape_of(args)
        out = spec.small_args(shape, dtype if dtype in spec.dtypes else None)
        names = set(kernel_arg_names(spec.kernel))
        return {k: v for k, v in out.items() if k in names}

    return small


# -- the records model on a call's own arguments -------------------------------------
class RecordsScorer:
    """Score a config of any ``@jit`` kernel with the records GPU model, no GPU needed.

    The model (:func:`autotile.measure.gpu.estimate_launch`) runs a window of
    the launch's programs in the interpreter at the real shape, on zero-filled
    copies of the call's array arguments (the call's own buffers are never
    written), and turns the records into traffic and time
    (docs/gpu_model.md, "The records model"). A config whose shared memory or
    registers cannot launch is ``"infeasible"`` with the reason, as
    ``triton.autotune`` scores it ``inf``.

    Parameters
    ----------
    kernel : JITFunction
        The kernel.
    hardware : HardwareProfile, default=H100_SXM
    params : GpuModelParams, optional
        Model parameters (default ``GpuModelParams()``).

    Notes
    -----
    ``@autotune`` calls it with the call's grid and the interpreter launch
    options of the call (``launch_options=``): a call with
    ``sanitize_overflow=False`` (a kernel that wraps signed integers on
    purpose) is modelled with wrapping too, instead of failing with
    :class:`~autotile.errors.IntegerOverflowError`.
    """

    wants_grid = True
    wants_launch_options = True
    #: Seconds per prediction, a low estimate (:data:`RECORDS_COST_HINT_S`).
    cost_hint_s = RECORDS_COST_HINT_S

    def __init__(self, kernel: Any, hardware: HardwareProfile = H100_SXM,
                 params: Any = None) -> None:
        from autotile.measure import GpuModelParams

        if not isinstance(hardware, HardwareProfile):
            raise TypeError(
                "RecordsScorer: hardware must be a HardwareProfile (e.g. "
                f"autotile.measure.H100_SXM), got {type(hardware).__name__} "
                f"hardware={hardware!r}")
        self.kernel = kernel
        self.hardware = hardware
        self.params = GpuModelParams() if params is None else params

    def __repr__(self) -> str:
        return f"RecordsScorer({getattr(self.kernel, '__name__', self.kernel)!r}, " \
               f"hardware={self.hardware.name!r})"

    @property
    def cache_tag(self) -> str:
        """Identity of this scorer in the autotune disk-cache key."""
        return (f"RecordsScorer:{canonical(jsonable(self.params))}:"
                f"{canonical(jsonable(self.hardware))}")

    def __call__(self, config: LaunchConfig, args: Mapping[str, Any], grid: Any = None,
                 launch_options: Mapping[str, Any] | None = None) -> MeasureResult:
        """Model ``config`` on the call ``args`` (by name) launched on ``grid``.

        ``launch_options`` are the call's interpreter launch options; their
        ``sanitize_overflow`` (default True) applies to the model's launches
        (the model picks its own ``programs`` and ``batch_programs``).
        """
        from autotile.measure.gpu._records_model import estimate_launch

        if grid is None:
            raise InvalidConfigError("RecordsScorer needs the launch grid (grid=)")
        meta = dict(config.kwargs)
        named = {**args, **meta}
        g = grid(named) if callable(grid) else grid
        g = tuple(int(x) for x in (g if isinstance(g, (tuple, list)) else (g,)))
        if math.prod(g) < 1:
            return MeasureResult(str(config), "infeasible", {}, 0.0,
                                 f"empty grid {g}: nothing to model")
        params = set(kernel_arg_names(self.kernel))
        copies = {k: (np.zeros_like(v) if isinstance(v, np.ndarray) else v)
                  for k, v in args.items() if k in params and k not in meta}
        floats = [v for v in copies.values() if isinstance(v, np.ndarray)
                  and (v.dtype.kind == "f" or isinstance(v, tl.BFloat16Array))]
        dtype = dtype_name(floats[0]) if floats else "float32"
        if dtype not in ("float16", "bfloat16", "float32"):
            dtype = "float32"
        launch = KernelLaunch(self.kernel, g, copies, {k: v for k, v in meta.items()
                                                       if k in params},
                              int(config.num_warps), int(config.num_stages))
        sanitize = (launch_options or {}).get("sanitize_overflow", True)
        reason, m = estimate_launch(launch, self.hardware, self.params, dtype,
                                    sanitize_overflow=sanitize)
        if reason is not None:
            return MeasureResult(str(config), "infeasible", {}, 0.0, reason)
        return MeasureResult(str(config), "ok", {k: float(v) for k, v in m.items()})


def default_scorer(kernel: Any, hardware: HardwareProfile = H100_SXM) -> Any:
    """The scorer ``@autotune`` uses when none is given: the spec's model, else records."""
    spec = spec_for_kernel(kernel)
    if spec is not None and spec.model != "records":
        return KernelModelScorer(spec, hardware)
    return RecordsScorer(kernel, hardware)
