"""autotile.tuner: ``@autotune`` for tile kernels, timed on a GPU or scored by the GPU model.

Triton's ``triton.autotune`` (:func:`autotune`, :class:`LaunchConfig`,
:class:`Autotuner`) on top of the interpreter and the GPU model: each
candidate is scored at the real shape by a scorer (:class:`KernelModelScorer`
for the library kernels), checked for correctness in the interpreter on a
small instance, and the fastest valid one is cached per key in memory and
on disk (:class:`DiskCache`). Beyond Triton, ``space=`` + ``searcher=`` +
``budget=`` search an autotile :class:`~autotile.space.Space` through
:func:`autotile.search.tune`. Every candidate's fate is a
:class:`TuningRecord`. Where Triton, PyTorch and a CUDA device are present,
``@autotune`` times the candidates on the GPU instead (:class:`GpuAutotuner`
over a :class:`GpuBackend`, :class:`TritonBackend` by default): the model
ranks and prunes, the survivors compile ahead in a :class:`CompilePool`, and
the leaders are re-timed in interleaved rounds.
"""

from __future__ import annotations

from autotile.tuner._autotuner import PRINT_ENV, Autotuner
from autotile.tuner._compile_ahead import CompileOutcome, CompilePool
from autotile.tuner._config import LAUNCH_KNOBS, Config, LaunchConfig
from autotile.tuner._decorator import autotune
from autotile.tuner._disk_cache import CACHE_DIR_ENV, DiskCache, default_cache_dir
from autotile.tuner._gpu_backend import BACKENDS, GpuBackend, TritonBackend, resolve_backend
from autotile.tuner._gpu_tuner import GpuAutotuner
from autotile.tuner._library import (
    MODEL_KERNELS,
    KernelModelScorer,
    RecordsScorer,
    default_scorer,
    library_small_args,
)
from autotile.tuner._perf_model import PerfModel, perf_model
from autotile.tuner._record import RECORD_STATUSES, TuningRecord

__all__ = [
    "autotune",
    "Autotuner",
    "GpuAutotuner",
    "GpuBackend",
    "TritonBackend",
    "resolve_backend",
    "BACKENDS",
    "CompilePool",
    "CompileOutcome",
    "LaunchConfig",
    "Config",
    "LAUNCH_KNOBS",
    "TuningRecord",
    "RECORD_STATUSES",
    "KernelModelScorer",
    "RecordsScorer",
    "perf_model",
    "PerfModel",
    "default_scorer",
    "MODEL_KERNELS",
    "library_small_args",
    "DiskCache",
    "default_cache_dir",
    "CACHE_DIR_ENV",
    "PRINT_ENV",
]
