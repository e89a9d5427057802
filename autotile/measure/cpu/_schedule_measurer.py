"""Measure TVM-style schedule configs by exact cache simulation."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from autotile.errors import InvalidConfigError
from autotile.measure._result import Measurer, MeasureResult
from autotile.measure.cpu._cachesim import CacheConfig, MissBreakdown
from autotile.measure.cpu._cost_model import CpuCostModel
from autotile.measure.cpu._nestsim import AffineNest, simulate_nest

__all__ = ["ScheduleMeasurer", "SCHEDULE_METRICS"]


def _short(obj: Any, limit: int = 60) -> str:
    text = repr(obj)
    return text if len(text) <= limit else text[:limit - 3] + "..."

#: Metrics of a schedule measurement (counts of accesses or cache lines; cycles).
SCHEDULE_METRICS = (
    "misses",             # set-associative misses
    "fa_misses",          # fully associative misses, same capacity
    "compulsory_misses",  # distinct lines touched
    "capacity_misses",    # fa_misses - compulsory_misses
    "conflict_misses",    # misses - fa_misses
    "hits",               # set-associative hits
    "accesses",           # byte accesses replayed
    "lines",              # distinct cache lines touched
    "est_cycles",         # CpuCostModel estimate
)


def breakdown_metrics(mb: MissBreakdown, extents: tuple[int, ...],
                      cost: CpuCostModel) -> dict[str, float]:
    """Flatten a :class:`MissBreakdown` into :data:`SCHEDULE_METRICS`."""
    sa = mb.set_assoc
    return {
        "misses": sa.n_misses,
        "fa_misses": mb.fully_assoc.n_misses,
        "compulsory_misses": mb.compulsory,
        "capacity_misses": mb.capacity,
        "conflict_misses": mb.conflict,
        "hits": sa.n_hits,
        "accesses": sa.n_accesses,
        "lines": sa.n_lines_touched,
        "est_cycles": cost.cycles(extents, sa.n_misses, mb.compulsory),
    }


def simulator_state_bytes(n: int, settings: dict[str, Any] | None = None) -> int:
    """Bytes of cache-simulator state one GEMM schedule of size ``n`` needs (one worker).

    The fully associative simulator keeps 18 bytes (two links and two flags) per
    cache line of the three ``n x n`` matrices: ``18 * (3 n^2 itemsize / line + 1)``,
    about 3.4 ``n**2`` bytes for float32 and 64-byte lines. ``settings`` is
    :meth:`ScheduleMeasurer.settings` (``itemsize_bytes``, ``cache.line_bytes``).
    """
    st = settings or {}
    itemsize = int(st.get("itemsize_bytes", 4))
    line = int(st.get("cache", {}).get("line_bytes", 64))
    return 18 * (3 * n * n * itemsize // line + 1)


def memory_problem(n: int, settings: dict[str, Any] | None, n_workers: int,
                   available: int | None) -> str | None:
    """Why ``n_workers`` simulators of size ``n`` would not fit in ``available`` bytes, or None.

    Parameters
    ----------
    n : int
        GEMM size (``gemm_space(n)``).
    settings : dict or None
        :meth:`ScheduleMeasurer.settings` (itemsize and cache line).
    n_workers : int
        Processes that each hold one simulator state
        (:func:`simulator_state_bytes`).
    available : int or None
        Memory in bytes (:func:`memory_bytes`); None: unknown, no problem.

    Returns
    -------
    str or None
        ``"--n N needs about X GiB of cache-simulator state per worker ..."``.
    """
    per_worker = simulator_state_bytes(n, settings)
    if available is None or per_worker * n_workers <= available:
        return None
    return (f"--n {n} needs about {per_worker / 2**30:.1f} GiB of cache-simulator state per "
            f"worker ({n_workers} worker{'s' if n_workers > 1 else ''}: "
            f"{per_worker * n_workers / 2**30:.1f} GiB), more than the "
            f"{available / 2**30:.1f} GiB of memory available; workers would be killed. "
            f"Choose a smaller --n (the simulator needs about 3.4 n^2 bytes per worker)")


def memory_bytes() -> int | None:
    """Physical memory, or the address-space limit (``ulimit -v``) when lower; None if unknown."""
    import os
    import resource

    sizes = []
    try:
        sizes.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        pass
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY and soft > 0:
        sizes.append(int(soft))
    return min(sizes) if sizes else None


class ScheduleMeasurer(Measurer):
    """Score GEMM schedule configs by simulating their exact cache behaviour.

    A config of :func:`autotile.space.gemm_space` is turned into a schedule
    (:func:`autotile.space.gemm_schedule`), lowered, and its trace (A, B, C
    laid out contiguously from address 0; each iteration reads A[i, k], B[k, j]
    and updates C[i, j], in that order) is replayed through a set-associative
    and a fully associative LRU cache.

    Parameters
    ----------
    space : autotile.space.Space
        A GEMM schedule space (from :func:`autotile.space.gemm_space`); its
        problem size ``n`` is read from the ``i_factor`` knob (divisors of ``n``).
    cache : CacheConfig, optional
        Default 8 KB, 4-way, 64-byte lines (the lecture notes' model).
    cost : CpuCostModel, optional
        Turns counts into ``est_cycles``.
    objective : str, default="misses"
        The metric minimised by default; one of :data:`SCHEDULE_METRICS`.

    Raises
    ------
    TypeError
        If ``space`` is not an :class:`autotile.space.Space`, ``cache`` is
        neither None nor a :class:`CacheConfig` (e.g. a size in bytes) or
        ``cost`` neither None nor a :class:`CpuCostModel`.
    ValueError
        If ``objective`` is not a known metric, or ``space`` has no
        ``i_factor`` :class:`~autotile.space.Divisors` knob (it is not a GEMM
        schedule space).

    Notes
    -----
    ``est_cycles`` charges loop steps of the simplified nest
    (:meth:`AffineNest.simplified`: extent-1 loops removed, adjacent halves of
    a split merged), as a compiler's loop simplification would emit it; so
    every metric depends only on the trace and
    :func:`autotile.space.gemm_canonical_key` groups configs exactly.

    ``MeasureResult.metrics`` holds every name in :data:`SCHEDULE_METRICS`:
    counts of accesses, misses and lines, and ``est_cycles`` in cycles. A
    config that is not valid in the space (unknown or missing knob, bad
    factor, non-permutation order) is an ``"infeasible"`` result naming the
    problem, as for the other measurers; ``"failed"`` is kept for errors
    raised while measuring a valid config.

    :meth:`settings` lists everything that changes the numbers (``n``, the
    element size, the cache and the cost model); :func:`autotile.measure.sweep`
    records it and refuses to resume a sweep made with other settings.
    """

    #: Element type of A, B and C in the simulated GEMM (see ``gemm_schedule``).
    dtype = "float32"
    #: Bytes per element of :attr:`dtype`.
    itemsize_bytes = 4

    metrics = SCHEDULE_METRICS

    def __init__(self, space: Any, cache: CacheConfig | None = None,
                 cost: CpuCostModel | None = None, objective: str = "misses") -> None:
        from autotile.space import Divisors, Space

        if not isinstance(space, Space):
            raise TypeError(
                "space must be an autotile.space.Space (e.g. gemm_space(64)), got "
                f"{type(space).__name__} {_short(space)}")
        if "i_factor" not in space.names or not isinstance(space["i_factor"], Divisors):
            raise ValueError(
                "space must be a GEMM schedule space (from autotile.space.gemm_space) with an "
                f"'i_factor' Divisors knob, got knobs {list(space.names)}")
        if objective not in SCHEDULE_METRICS:
            raise ValueError(f"objective must be one of {SCHEDULE_METRICS}, got {objective!r}")
        if cache is not None and not isinstance(cache, CacheConfig):
            raise TypeError(
                f"cache must be a CacheConfig (e.g. CacheConfig(size_bytes=8192, ways=4, "
                f"line_bytes=64)) or None, got {type(cache).__name__} {_short(cache)}")
        if cost is not None and not isinstance(cost, CpuCostModel):
            raise TypeError(f"cost must be a CpuCostModel or None, got {type(cost).__name__} "
                            f"{_short(cost)}")
        self.space = space
        self.cache = cache or CacheConfig()
        self.cost = cost or CpuCostModel()
        self.objective = objective
        self.n = int(space["i_factor"].n)

    def nest(self, config: Any) -> AffineNest:
        """The affine loop nest of a config (validated against the space).

        Raises
        ------
        autotile.errors.InvalidConfigError
            If the config is not in the space.
        """
        from autotile import te
        from autotile.space import gemm_schedule

        cfg = self.space.validate(config)
        sched, _ = gemm_schedule(cfg, n=self.n)
        return AffineNest.from_loop_nest(te.lower(sched))

    def settings(self) -> dict[str, Any]:
        """Everything that changes the numbers this measurer returns, JSON-able.

        Returns
        -------
        dict
            ``n`` (matrix size), ``dtype`` and ``itemsize_bytes`` (elements of
            A, B and C), ``cache`` (:meth:`CacheConfig.to_json`) and ``cost``
            (the :class:`CpuCostModel` constants). The objective is not
            included: it picks a metric but changes none.
        """
        return {"n": self.n, "dtype": self.dtype, "itemsize_bytes": self.itemsize_bytes,
                "cache": self.cache.to_json(), "cost": asdict(self.cost)}

    def _measure(self, config: Any) -> MeasureResult:
        t0 = time.perf_counter()
        try:
            cfg = self.space.validate(config)
        except InvalidConfigError as exc:
            return MeasureResult(self.config_text(config), "infeasible", {},
                                 time.perf_counter() - t0, str(exc))
        nest = self.nest(cfg).simplified()
        mb = simulate_nest(nest, self.cache)
        return MeasureResult(str(cfg), "ok", breakdown_metrics(mb, nest.extents, self.cost),
                             time.perf_counter() - t0)
