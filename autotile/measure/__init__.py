"""autotile.measure: score configs.

The core holds what every measurer shares: :class:`Measurer` and
:class:`MeasureResult`, ground-truth tables and the resumable exhaustive
:func:`sweep` that writes them, :class:`ReplayMeasurer` and recorded Kernel
Tuner spaces, and :func:`parallel_map` (joblib processes or a Dask cluster).
Two subpackages measure on a kind of hardware:

* :mod:`autotile.measure.cpu`: cache simulators, the loop-nest walker, the CPU
  cost model and :class:`ScheduleMeasurer`;
* :mod:`autotile.measure.gpu`: hardware profiles, the L2 simulator, the time
  model and its calibration, :class:`KernelModelMeasurer` and
  :class:`TritonMeasurer`.

Their public names are re-exported here. The kernel spaces
(``matmul_space``, ...) now live with their kernels in :mod:`autotile.kernels`
and stay importable from here for one release.
"""

from __future__ import annotations

from typing import Any

from autotile.kernels._spaces import (
    DTYPE_ITEMSIZE,
    flash_attention_space,
    matmul_space,
    persistent_matmul_space,
    softmax_space,
    space_from_knobs,
)
from autotile.measure._ground_truth import GroundTruth, sweep
from autotile.measure._kernel_tuner import RecordedSpace, load_kernel_tuner
from autotile.measure._parallel import parallel_map
from autotile.measure._replay import SHIPPED_TABLES, ReplayMeasurer, gemm_ground_truth
from autotile.measure._result import STATUSES, Measurer, MeasureResult
from autotile.measure._sampled_truth import SHIPPED_SAMPLES, SampledTruth, gemm_sampled_truth
from autotile.measure.cpu import *  # noqa: F403 - names listed in cpu.__all__
from autotile.measure.cpu import __all__ as _cpu_all
from autotile.measure.gpu import *  # noqa: F403 - names listed in gpu.__all__
from autotile.measure.gpu import __all__ as _gpu_all

__all__ = [
    "MeasureResult",
    "Measurer",
    "STATUSES",
    "GroundTruth",
    "sweep",
    "ReplayMeasurer",
    "gemm_ground_truth",
    "SHIPPED_TABLES",
    "SampledTruth",
    "gemm_sampled_truth",
    "SHIPPED_SAMPLES",
    "RecordedSpace",
    "load_kernel_tuner",
    "parallel_map",
    # kernel spaces: moved to autotile.kernels, importable here for one release
    "matmul_space",
    "persistent_matmul_space",
    "softmax_space",
    "flash_attention_space",
    "space_from_knobs",
    "DTYPE_ITEMSIZE",
    *_cpu_all,
    *_gpu_all,
]


def __getattr__(name: str) -> Any:
    """Names moved out of :mod:`autotile.measure` resolve through :mod:`autotile.measure.gpu`."""
    from autotile.measure import gpu

    if name in ("flash_attention_study",):
        return getattr(gpu, name)
    raise AttributeError(f"module 'autotile.measure' has no attribute {name!r}")
