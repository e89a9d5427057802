"""autotile.measure: score configs.

Trace-driven cache simulation (set-associative and fully associative LRU, the
three Cs of misses), a fast walker for affine loop nests, a simple CPU cost
model, measurers that turn a config into a :class:`MeasureResult`, and the
exhaustive, resumable sweep that writes a space's ground-truth table.

GPU side: hardware profiles (H100 SXM, H200), a tile/line-granularity L2 LRU
simulator driven by the interpreter's own records, a documented time model
(docs/gpu_model.md), kernel knob spaces and :class:`KernelModelMeasurer`.
Recorded spaces: Kernel Tuner cache and T4 files replay as spaces. Real
hardware: :class:`TritonMeasurer` (imported lazily: needs Triton and a CUDA
device only when constructed), the time model's calibration, and the
parameters fitted on an H200 (:data:`H200_FITTED_PARAMS` with
:data:`H200_MEASURED_L2`).
"""

from __future__ import annotations

from autotile.measure._cache import (
    CacheConfig,
    CacheStats,
    MissBreakdown,
    classify_misses,
    simulate_cache,
    simulate_cache_reference,
)
from autotile.measure._calibrate import (
    DEFAULT_FIT,
    CalibrationReport,
    MatmulObservations,
    calibrate_matmul,
    fit_gpu_model,
    matmul_observations_from_csv,
    predict_matmul_time,
    rank_accuracy,
)
from autotile.measure._cpu import CpuCostModel
from autotile.measure._fitted import H200_FITTED_PARAMS, H200_MEASURED_L2
from autotile.measure._gpu_model import (
    GpuEstimate,
    GpuModelParams,
    Occupancy,
    estimate_time,
    matmul_efficiency,
    matmul_regs_per_thread,
    matmul_smem_bytes,
    occupancy,
)
from autotile.measure._hardware import H100_SXM, H200, HARDWARE, HardwareProfile
from autotile.measure._kernel_measurer import (
    KERNEL_MODEL_METRICS,
    KernelModelMeasurer,
    clear_schedule_cache,
    flash_attention_objectives,
    flash_attention_pareto,
    flash_attention_study,
    matmul_tile_schedule,
)
from autotile.measure._kernel_spaces import (
    DTYPE_ITEMSIZE,
    flash_attention_space,
    matmul_space,
    persistent_matmul_space,
    softmax_space,
    space_from_knobs,
)
from autotile.measure._kernel_tuner import RecordedSpace, load_kernel_tuner
from autotile.measure._l2sim import (
    DRIFT,
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
from autotile.measure._nestsim import AffineAccess, AffineNest, simulate_nest
from autotile.measure._replay import SHIPPED_TABLES, ReplayMeasurer, gemm_ground_truth
from autotile.measure._result import STATUSES, Measurer, MeasureResult
from autotile.measure._schedule_measurer import SCHEDULE_METRICS, ScheduleMeasurer
from autotile.measure._sweep import GroundTruth, sweep
from autotile.measure._triton_measurer import (
    TRITON_KERNELS,
    TRITON_METRICS,
    TritonMeasurer,
    classify_error,
    port_to_triton,
    triton_source,
)

__all__ = [
    "CacheConfig",
    "CacheStats",
    "MissBreakdown",
    "simulate_cache",
    "simulate_cache_reference",
    "classify_misses",
    "CpuCostModel",
    "AffineAccess",
    "AffineNest",
    "simulate_nest",
    "MeasureResult",
    "Measurer",
    "STATUSES",
    "ScheduleMeasurer",
    "SCHEDULE_METRICS",
    "GroundTruth",
    "ReplayMeasurer",
    "gemm_ground_truth",
    "SHIPPED_TABLES",
    "sweep",
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
    "matmul_efficiency",
    "matmul_space",
    "persistent_matmul_space",
    "softmax_space",
    "flash_attention_space",
    "space_from_knobs",
    "DTYPE_ITEMSIZE",
    "KernelModelMeasurer",
    "KERNEL_MODEL_METRICS",
    "matmul_tile_schedule",
    "clear_schedule_cache",
    "flash_attention_objectives",
    "flash_attention_pareto",
    "flash_attention_study",
    "RecordedSpace",
    "load_kernel_tuner",
    "TritonMeasurer",
    "TRITON_METRICS",
    "TRITON_KERNELS",
    "triton_source",
    "port_to_triton",
    "classify_error",
    "MatmulObservations",
    "CalibrationReport",
    "DEFAULT_FIT",
    "predict_matmul_time",
    "fit_gpu_model",
    "rank_accuracy",
    "calibrate_matmul",
    "matmul_observations_from_csv",
]
