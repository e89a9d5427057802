"""Score any kernel's configs with the GPU model instead of a GPU.

:class:`KernelModelMeasurer` turns a config of a kernel's space into a
:class:`MeasureResult` with the GPU model that the kernel's
:class:`~autotile.kernels.KernelSpec` names (:data:`GPU_MODELS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autotile.errors import MeasureError
from autotile.kernels import KernelSpec, get_kernel_spec
from autotile.kernels._spaces import DTYPE_ITEMSIZE, check_shape_mapping
from autotile.measure._result import Measurer, MeasureResult
from autotile.measure.gpu._hardware import H100_SXM, HardwareProfile
from autotile.measure.gpu._l2sim import L2Model
from autotile.measure.gpu._matmul_schedule import clear_schedule_cache, matmul_tile_schedule
from autotile.measure.gpu._models import GPU_MODELS
from autotile.measure.gpu._time_model import GpuModelParams
from autotile.space import Space

__all__ = [
    "KernelModelMeasurer",
    "KERNEL_MODEL_METRICS",
    "matmul_tile_schedule",
    "clear_schedule_cache",
]

#: Metrics of every ``"ok"`` result of :class:`KernelModelMeasurer`.
KERNEL_MODEL_METRICS = ("time_s", "tflops", "hbm_bytes", "hbm_read_bytes", "l2_hit_rate",
                        "compute_s", "memory_s", "occupancy", "bound", "blocks_per_sm",
                        "n_waves", "k_merge")


def _short(obj: Any, limit: int = 80) -> str:
    text = repr(obj)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class KernelModelMeasurer(Measurer):
    """Scores configs of any kernel with the GPU model, no GPU needed.

    The kernel's :class:`~autotile.kernels.KernelSpec` names its model
    (:data:`GPU_MODELS`): ``"records"`` (any kernel, from a reduced
    interpreter run at the real shape) or an analytic one (the library's
    matmul, softmax and flash attention). The measurer never branches on a
    kernel's name.

    Parameters
    ----------
    kernel : str or KernelSpec
        A spec, or the name of a registered one (:data:`autotile.kernels.KERNELS`).
    shape : mapping of str to int
        The spec's problem sizes: ``{"M", "N", "K"}`` for the matmuls,
        ``{"M", "N"}`` for softmax, ``{"N", "d"}`` (optionally ``"heads"``)
        for flash attention, ...
    hardware : HardwareProfile, default=H100_SXM
    params : GpuModelParams, optional
        Model parameters (default ``GpuModelParams()``).
    dtype : str, optional
        Operand dtype (default: the spec's ``default_dtype``).
    max_simulated_loads : int, default=2_000_000
        Tile loads one L2 simulation may issue; above it ``k_merge`` loop
        steps are fused (reported as the ``k_merge`` metric).
    max_probe_programs : int, default=4096
        Programs of a matmul launch that are probed and simulated; larger grids are
        simulated on the prefix and extrapolated.
    l2_model : L2Model, optional
        Program progress and L2 partitions of the matmul traffic simulation
        (default :data:`~autotile.measure.gpu._l2sim.LOCKSTEP`, the seed model;
        :data:`~autotile.measure.gpu._l2sim.DRIFT` is fitted to H200 ncu bytes).

    Attributes
    ----------
    space : Space
        The kernel's space for ``shape``.

    Raises
    ------
    TypeError
        If ``shape`` is not a mapping, ``hardware`` is not a
        :class:`HardwareProfile`, ``params`` is not a :class:`GpuModelParams`
        (or None) or ``l2_model`` is not an :class:`L2Model` (or None).
    InvalidConfigError
        If ``kernel`` is not registered, or ``shape`` lacks a size of the
        kernel or has one it does not take (matmul: ``M, N, K``; softmax:
        ``M, N``; flash attention: ``N, d``), or the dtype is not the kernel's.

    Notes
    -----
    Metrics (``KERNEL_MODEL_METRICS``): ``time_s``, ``tflops`` (useful
    FLOP/s / 1e12), ``hbm_bytes`` (reads + writes when
    ``params.count_writes``), ``hbm_read_bytes``, ``l2_hit_rate``,
    ``compute_s``, ``memory_s``, ``occupancy`` (resident warps / max),
    ``bound`` (0 compute, 1 memory), ``blocks_per_sm``, ``n_waves``,
    ``k_merge``. Objective: ``time_s``. A config that cannot launch is
    ``"infeasible"`` with the reason.
    """

    metrics = KERNEL_MODEL_METRICS
    objective = "time_s"

    def __init__(self, kernel: str | KernelSpec, shape: Mapping[str, int],
                 hardware: HardwareProfile = H100_SXM, params: GpuModelParams | None = None,
                 *, dtype: str | None = None, max_simulated_loads: int = 2_000_000,
                 max_probe_programs: int = 4096, l2_model: L2Model | None = None) -> None:
        if not isinstance(hardware, HardwareProfile):
            raise TypeError(
                "KernelModelMeasurer: hardware must be a HardwareProfile (e.g. "
                "autotile.measure.H100_SXM), got "
                f"{type(hardware).__name__} hardware={_short(hardware)}")
        if params is not None and not isinstance(params, GpuModelParams):
            raise TypeError(
                "KernelModelMeasurer: params must be a GpuModelParams or None, got "
                f"{type(params).__name__} params={_short(params)}")
        if l2_model is not None and not isinstance(l2_model, L2Model):
            raise TypeError(
                "KernelModelMeasurer: l2_model must be an L2Model or None, got "
                f"{type(l2_model).__name__} l2_model={_short(l2_model)}")
        self._spec = get_kernel_spec(kernel, "KernelModelMeasurer: kernel")
        self.kernel_name = self._spec.name
        check_shape_mapping("KernelModelMeasurer", shape)
        self.shape = self.spec.check_shape(shape, "KernelModelMeasurer", MeasureError)
        self.hardware = hardware
        self.params = GpuModelParams() if params is None else params
        self.dtype = self.spec.check_dtype(dtype)
        self.max_simulated_loads = int(max_simulated_loads)
        self.max_probe_programs = int(max_probe_programs)
        self.l2_model = l2_model
        self.space: Space = self.spec.space(self.shape, self.dtype, hardware)
        self._model = GPU_MODELS[self.spec.model]
        self._itemsize = DTYPE_ITEMSIZE[self.dtype]
        self._model_args: dict[str, Any] | None = None

    @property
    def spec(self) -> KernelSpec:
        """The kernel's :class:`~autotile.kernels.KernelSpec`."""
        return self._spec

    def model_args(self) -> dict[str, Any]:
        """Real-size, zero-filled arguments of the kernel (made once; zero pages are cheap)."""
        if self._model_args is None:
            self._model_args = self.spec.args(self.shape, self.dtype, seed=None)
        return self._model_args

    def settings(self) -> dict[str, Any]:
        """Everything besides the space that changes the numbers, JSON-able.

        Returns
        -------
        dict
            ``kernel_name``, ``shape``, ``dtype``, ``hardware`` (every field
            of the profile, not just its name), ``params`` (every
            :class:`GpuModelParams` field), ``l2_model`` (None for the
            default), ``max_simulated_loads`` and ``max_probe_programs``.
        """
        return {"dtype": self.dtype, "hardware": self.hardware, "kernel_name": self.kernel_name,
                "l2_model": self.l2_model, "max_probe_programs": self.max_probe_programs,
                "max_simulated_loads": self.max_simulated_loads, "params": self.params,
                "shape": self.shape}

    # -- helpers ---------------------------------------------------------------------
    def _infeasible(self, cfg: Any, reason: str) -> MeasureResult:
        return MeasureResult(self.config_text(cfg), "infeasible", {}, 0.0, reason)

    def _ok(self, cfg: Any, m: dict[str, float]) -> MeasureResult:
        return MeasureResult(self.config_text(cfg), "ok", m)

    def _feasibility_space(self) -> Any:
        """The space whose constraints a config must meet to be scored (``self.space``)."""
        return self.space

    def _measure(self, config: Any) -> MeasureResult:
        # a config the space leaves out only because an equivalent one stands for it
        # (matmul GROUP_M >= the tile rows) is scored as that one, under its own name
        cfg = self.spec.canonical_config(config, self.shape)
        bad = self._feasibility_space().violations(cfg)
        if bad:
            return self._infeasible(config, "; ".join(bad))
        return self._model(self, config, cfg)
