"""autotile.measure.cpu: score schedules on a CPU cache model.

Trace-driven cache simulation (set-associative and fully associative LRU, the
three Cs of misses), the fast walker for affine loop nests (with its exact
extrapolation of periodic loops, which makes ``n = 1024`` schedules
searchable), the simple CPU
cost model and :class:`ScheduleMeasurer`, which lowers a GEMM schedule config
and scores it with them.
"""

from __future__ import annotations

from autotile.measure.cpu._cachesim import (
    CacheConfig,
    CacheStats,
    MissBreakdown,
    classify_misses,
    simulate_cache,
    simulate_cache_reference,
)
from autotile.measure.cpu._cost_model import CpuCostModel
from autotile.measure.cpu._nestsim import AffineAccess, AffineNest, simulate_nest
from autotile.measure.cpu._schedule_measurer import SCHEDULE_METRICS, ScheduleMeasurer

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
    "ScheduleMeasurer",
    "SCHEDULE_METRICS",
]
