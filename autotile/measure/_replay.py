"""Replay measurement: look configs up in a ground-truth table (Kernel Tuner's simulation mode)."""

from __future__ import annotations

import functools
import hashlib
import os
import warnings
from importlib import resources
from typing import Any

import numpy as np

from autotile.errors import InvalidConfigError
from autotile.measure._ground_truth import GroundTruth, space_difference
from autotile.measure._result import Measurer, MeasureResult
from autotile.measure._table import MetricTable

__all__ = ["ReplayMeasurer", "gemm_ground_truth", "SHIPPED_TABLES"]

#: Ground-truth tables shipped in ``autotile/data`` (GEMM size -> file name).
SHIPPED_TABLES = {64: "gemm64_truth.npz"}


class ReplayMeasurer(Measurer):
    """Score configs by looking them up in a :class:`GroundTruth` table.

    Like Kernel Tuner's simulation mode, a replay costs microseconds, so
    searcher comparisons over a brute-forced space run in seconds and every
    curve can be scored against the true optimum.

    Parameters
    ----------
    space : autotile.space.Space
        The space the table was swept over; row ``i`` is ``space.config_at(i)``.
    truth : GroundTruth
        The table (``len(truth) == len(space)``).
    objective : str, optional
        Default metric to minimise; default the table's first metric.

    Raises
    ------
    TypeError
        If ``truth`` is not a table (e.g. a file path: load it with
        :meth:`GroundTruth.load`) or ``space`` is not a space (the message
        says when the two are swapped).
    ValueError
        If the table records the space it was swept over (``meta["space"]``,
        written by :func:`sweep`) and ``space`` differs from it (knob order,
        names, values, constraints or size: the message names the first
        difference), the table's length differs from the space's size, or
        ``objective`` is not one of its metrics.

    Warns
    -----
    UserWarning
        If the table was loaded from a file that records no space (made
        before tables recorded theirs): only its length can be checked.

    Notes
    -----
    A config outside the space is an ``"infeasible"`` result naming the
    violated rule; a config recorded as failed replays as ``"failed"``.
    """

    def __init__(self, space: Any, truth: GroundTruth, objective: str | None = None) -> None:
        if not isinstance(truth, MetricTable):
            swapped = " (the arguments are (space, truth): swapped?)" if isinstance(
                space, MetricTable) else ""
            hint = (f"; load a file with GroundTruth.load({truth!r})"
                    if isinstance(truth, (str, os.PathLike)) else "")
            raise TypeError(
                f"ReplayMeasurer: truth must be a GroundTruth table, got "
                f"{type(truth).__name__}{swapped}{hint}")
        if not (hasattr(space, "config_at") and hasattr(space, "__len__")):
            raise TypeError(f"ReplayMeasurer: space must be an autotile.space.Space, got "
                            f"{type(space).__name__}")
        where = f"table {truth.path!r}" if truth.path else "the table"
        recorded = truth.meta.get("space") if isinstance(truth.meta, dict) else None
        if isinstance(recorded, dict) and "knobs" in recorded:
            why = space_difference(recorded, space)
            if why is not None:
                raise ValueError(
                    f"{where} was made for another space: {why}; replay it on the space it "
                    f"was swept over, or sweep this space (autotile sweep)")
        elif truth.path is not None:  # a table file made before tables recorded their space
            warnings.warn(
                f"{where} records no space (made before tables recorded theirs), so replay "
                f"cannot check that row i is config i of {getattr(space, 'name', None) or space!r}"
                f"; re-create it with autotile sweep to record it", UserWarning, stacklevel=2)
        if len(truth) != len(space):
            raise ValueError(
                f"ground truth has {len(truth)} rows but the space has {len(space)} configs")
        objective = objective or truth.metrics[0]
        if objective not in truth.metrics:
            raise ValueError(f"objective must be one of {truth.metrics}, got {objective!r}")
        self.space = space
        self.truth = truth
        self.objective = objective
        self.metrics = tuple(truth.metrics)
        self._truth_digest: str | None = None

    def settings(self) -> dict[str, Any]:
        """The table replayed, as a digest of its contents.

        Returns
        -------
        dict
            ``truth``: the table's ``n_rows``, ``metrics`` and ``sha256``
            (of every metric column and the status column; computed once).
        """
        if self._truth_digest is None:
            h = hashlib.sha256()
            for m in self.truth.metrics:
                h.update(m.encode())
                h.update(np.ascontiguousarray(self.truth.values[m], np.float64).tobytes())
            h.update(np.ascontiguousarray(self.truth.status, np.int8).tobytes())
            self._truth_digest = h.hexdigest()[:16]
        return {"truth": {"n_rows": len(self.truth), "metrics": list(self.truth.metrics),
                          "sha256": self._truth_digest}}

    def _measure(self, config: Any) -> MeasureResult:
        try:
            cfg = self.space.validate(config)
        except InvalidConfigError as exc:
            return MeasureResult(str(config), "infeasible", {}, 0.0, str(exc))
        return self.truth.result(self.space.index_of(cfg), str(cfg))

    def optimum(self, metric: str | None = None) -> float:
        """The best (minimum) value of ``metric`` (default: the objective) in the table."""
        return self.truth.optimum(metric or self.objective)


@functools.lru_cache(maxsize=4)
def gemm_ground_truth(n: int = 64) -> GroundTruth:
    """The shipped ground-truth table of ``autotile.space.gemm_space(n)``.

    Made by ``benchmarks/gemm/bench_sweep.py`` (see ``autotile/data/README.md``):
    every schedule's :data:`~autotile.measure.SCHEDULE_METRICS` for an 8 KB,
    4-way, 64-byte-line cache and the default :class:`CpuCostModel`.

    Parameters
    ----------
    n : int, default=64
        GEMM size; only the sizes in :data:`SHIPPED_TABLES` ship.

    Returns
    -------
    GroundTruth
        Row ``i`` is ``gemm_space(n).config_at(i)``. Cached; don't mutate.

    Raises
    ------
    ValueError
        If no table ships for ``n`` (run ``autotile sweep --n N`` to make one).
    """
    if n not in SHIPPED_TABLES:
        raise ValueError(
            f"no ground-truth table ships for n={n} (shipped: {sorted(SHIPPED_TABLES)}); "
            f"make one with `autotile sweep --n {n}`")
    ref = resources.files("autotile") / "data" / SHIPPED_TABLES[n]
    with resources.as_file(ref) as path:
        return GroundTruth.load(path)
