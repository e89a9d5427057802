"""autotile.measure: score configs.

Trace-driven cache simulation (set-associative and fully associative LRU, the
three Cs of misses), a fast walker for affine loop nests, a simple CPU cost
model, measurers that turn a config into a :class:`MeasureResult`, and the
exhaustive, resumable sweep that writes a space's ground-truth table.
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
from autotile.measure._cpu import CpuCostModel
from autotile.measure._nestsim import AffineAccess, AffineNest, simulate_nest
from autotile.measure._replay import ReplayMeasurer
from autotile.measure._result import STATUSES, Measurer, MeasureResult
from autotile.measure._schedule_measurer import SCHEDULE_METRICS, ScheduleMeasurer
from autotile.measure._sweep import GroundTruth, sweep

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
    "sweep",
]
