"""autotile.measure.gpu: score kernel configs for a GPU, modelled or timed.

Hardware profiles (H100 SXM, H200), the tile/line-granularity L2 LRU
simulator driven by the interpreter's own records, the documented time model
(docs/gpu_model.md), its calibration routine and the one parameter set fitted
on an H200 (:data:`H200_FITTED_PARAMS` with :data:`H200_MEASURED_L2`),
:class:`KernelModelMeasurer` (the model) and :class:`TritonMeasurer` (real
timings; Triton and PyTorch are imported only when one is constructed).
"""

from __future__ import annotations

from typing import Any

from autotile.kernels import flash_attention_objectives, flash_attention_pareto
from autotile.measure.gpu._calibrate import (
    DEFAULT_FIT,
    CalibrationReport,
    MatmulObservations,
    calibrate_matmul,
    fit_gpu_model,
    matmul_observations_from_csv,
    predict_matmul_time,
    rank_accuracy,
)
from autotile.measure.gpu._fitted import H200_FITTED_PARAMS, H200_MEASURED_L2
from autotile.measure.gpu._hardware import H100_SXM, H200, HARDWARE, HardwareProfile
from autotile.measure.gpu._l2sim import (
    DRIFT,
    DRIFT_WARM,
    LOCKSTEP,
    BufferTiling,
    L2Model,
    L2Stats,
    TileSchedule,
    lockstep_stream_from_trace,
    schedule_from_trace,
    simulate_l2,
    simulate_l2_stream,
)
from autotile.measure.gpu._model_measurer import (
    KERNEL_MODEL_METRICS,
    KernelModelMeasurer,
    clear_schedule_cache,
    matmul_tile_schedule,
)
from autotile.measure.gpu._time_model import (
    GpuEstimate,
    GpuModelParams,
    Occupancy,
    estimate_time,
    matmul_efficiency,
    matmul_regs_per_thread,
    matmul_scalar_regs_per_thread,
    matmul_smem_bytes,
    occupancy,
)
from autotile.measure.gpu._triton_measurer import (
    TRITON_KERNELS,
    TRITON_METRICS,
    TritonMeasurer,
    classify_error,
    classify_error_text,
    port_to_triton,
    triton_source,
)

__all__ = [
    "HardwareProfile",
    "H100_SXM",
    "H200",
    "HARDWARE",
    "H200_MEASURED_L2",
    "H200_FITTED_PARAMS",
    "BufferTiling",
    "TileSchedule",
    "L2Stats",
    "L2Model",
    "LOCKSTEP",
    "DRIFT",
    "DRIFT_WARM",
    "schedule_from_trace",
    "lockstep_stream_from_trace",
    "simulate_l2",
    "simulate_l2_stream",
    "GpuModelParams",
    "GpuEstimate",
    "Occupancy",
    "estimate_time",
    "occupancy",
    "matmul_smem_bytes",
    "matmul_regs_per_thread",
    "matmul_scalar_regs_per_thread",
    "matmul_efficiency",
    "KernelModelMeasurer",
    "KERNEL_MODEL_METRICS",
    "matmul_tile_schedule",
    "clear_schedule_cache",
    "flash_attention_objectives",
    "flash_attention_pareto",
    "TritonMeasurer",
    "TRITON_METRICS",
    "TRITON_KERNELS",
    "triton_source",
    "port_to_triton",
    "classify_error",
    "classify_error_text",
    "MatmulObservations",
    "CalibrationReport",
    "DEFAULT_FIT",
    "predict_matmul_time",
    "fit_gpu_model",
    "rank_accuracy",
    "calibrate_matmul",
    "matmul_observations_from_csv",
]


def __getattr__(name: str) -> Any:
    """Import moved names lazily.

    ``flash_attention_study`` moved to :mod:`autotile.search`; it stays importable
    here for one release.
    """
    if name == "flash_attention_study":
        from autotile.search._flash_study import flash_attention_study

        return flash_attention_study
    raise AttributeError(f"module 'autotile.measure.gpu' has no attribute {name!r}")
