"""A sampled ground truth: exact metrics of a random subset of a space too large to sweep."""

from __future__ import annotations

import os
from collections.abc import Iterable
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import CorruptFileError, MeasureError
from autotile.measure._table import MetricTable, read_table

__all__ = ["SampledTruth", "gemm_sampled_truth", "SHIPPED_SAMPLES"]

#: Sampled tables shipped in ``autotile/data``, by GEMM size n.
SHIPPED_SAMPLES = {1024: "gemm1024_sample.npz"}


class SampledTruth(MetricTable):
    """Metrics of a uniform random sample of a space's configs, and of visited ones.

    Unlike :class:`~autotile.measure.GroundTruth`, which holds every config, the
    minimum over a sample is only the best *known* value, not a proven optimum
    (:meth:`best_known`). Rows with ``source`` 0 are the uniform random sample
    (:meth:`random_values`: the random-search expectation); rows with
    ``source`` 1 were added because a searcher visited them (:meth:`with_visited`);
    they count for the best known value but would bias the expectation.

    Attributes
    ----------
    index : ndarray of shape (n_rows,), int64
        ``index[r]`` is the ``space.config_at`` index of row ``r``.
    values : dict of str to ndarray of shape (n_rows,), float64
        ``values[m][r]``: metric ``m`` of row ``r``; NaN where not ``"ok"``.
    status : ndarray of shape (n_rows,), int8
        0 ok, 1 failed, 2 infeasible.
    source : ndarray of shape (n_rows,), int8
        0 uniform random sample, 1 visited by a searcher; all 0 if not given.
    meta : dict
        Provenance: ``n``, ``n_configs`` (of the space), ``seed``,
        ``sampling``, ``measurer_settings``, ``cpu_s``...

    Raises
    ------
    MeasureError
        If ``index``, ``status``, ``source`` and the columns differ in length.
    """

    def __init__(self, index: npt.NDArray[np.int64], values: dict[str, npt.NDArray[np.float64]],
                 status: npt.NDArray[np.int8], meta: dict[str, Any],
                 source: npt.NDArray[np.int8] | None = None) -> None:
        index, status = np.asarray(index, np.int64), np.asarray(status, np.int8)
        n = index.shape[0] if index.ndim == 1 else -1
        source = np.zeros(max(n, 0), np.int8) if source is None else np.asarray(source, np.int8)
        cols: dict[str, npt.NDArray[Any]] = {"status": status, "source": source, **values}
        bad = {k: np.shape(v) for k, v in cols.items() if np.shape(v) != (n,)}
        if n < 0 or bad:
            raise MeasureError(f"a sampled table needs one value per row in every column "
                               f"(index has shape {index.shape}), got {bad}")
        self.index, self.values, self.status, self.meta = index, values, status, meta
        self.source = source
        self.metrics = tuple(values)

    @property
    def n_random(self) -> int:
        """The number of rows of the uniform random sample (``source`` 0)."""
        return int((self.source == 0).sum())

    def random_values(self, metric: str) -> npt.NDArray[np.float64]:
        """:meth:`ok_values` of the uniform random rows only (``source`` 0).

        Raises
        ------
        KeyError
            If the table has no such metric.
        """
        return self._ok(metric, self.source == 0)

    def best_known(self, metric: str, visited: Iterable[float] = (),
                   direction: str = "minimize") -> float:
        """The best value of ``metric`` over every row and the ``visited`` values.

        This is the best *known* value, an upper bound on the optimum when
        minimising (a lower bound when maximising), not a proven optimum.

        Parameters
        ----------
        metric : str
            Column of the table.
        visited : iterable of float, default=()
            Values measured elsewhere (e.g. every trial of a comparison);
            non-finite ones are ignored.
        direction : {"minimize", "maximize"}, default="minimize"

        Returns
        -------
        float
            NaN if neither holds a finite value.
        """
        if direction not in ("minimize", "maximize"):
            raise ValueError(f"direction must be 'minimize' or 'maximize', got {direction!r}")
        more = np.asarray([float(v) for v in visited], np.float64)
        return self._best(metric, more, direction == "maximize")

    def label(self) -> str:
        """How reports name the reference value: ``best known (sampled, N configs), ...``."""
        return f"best known (sampled, {len(self):,} configs), not a proven optimum"

    def with_visited(self, index: Iterable[int], values: dict[str, npt.NDArray[np.float64]],
                     status: npt.NDArray[np.int8]) -> SampledTruth:
        """A copy with the visited configs not yet in the table appended (``source`` 1).

        Parameters
        ----------
        index : iterable of int
            ``space.config_at`` indices of the visited configs (repeats allowed;
            the first row of each new index is kept, in the order visited).
        values : dict of str to ndarray of shape (n_visited,), float64
            Their metrics, the table's columns; NaN where not ``"ok"``.
        status : ndarray of shape (n_visited,), int8
            0 ok, 1 failed, 2 infeasible.

        Returns
        -------
        SampledTruth
            Same ``meta`` with ``n_random`` and ``n_visited`` (rows of each source).

        Raises
        ------
        MeasureError
            If ``values`` lacks one of the table's columns or lengths differ.
        """
        idx = np.asarray(list(index), np.int64)
        status = np.asarray(status, np.int8)
        missing = [m for m in self.metrics if m not in values]
        if missing or status.shape != idx.shape:
            raise MeasureError(f"visited rows need the columns {list(self.metrics)} and one "
                               f"status per index, got columns {list(values)} (missing "
                               f"{missing}), {idx.shape[0]} indices, {status.shape} status")
        _, first = np.unique(idx, return_index=True)
        new = np.sort(first[~np.isin(idx[first], self.index)])
        cols = {m: np.concatenate([self.values[m], np.asarray(values[m], np.float64)[new]])
                for m in self.metrics}
        source = np.concatenate([self.source, np.ones(new.shape[0], np.int8)])
        meta = {**self.meta, "n_random": int((source == 0).sum()),
                "n_visited": int((source == 1).sum())}
        return SampledTruth(np.concatenate([self.index, idx[new]]), cols,
                            np.concatenate([self.status, status[new]]), meta, source)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the table as a compressed ``.npz`` (index, source, metrics, status, JSON meta)."""
        self._write(path, index=self.index, source=self.source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SampledTruth:
        """Read a table written by :meth:`save` or ``benchmarks/gemm/sample_truth.py``.

        Raises
        ------
        FileNotFoundError
            If ``path`` does not exist.
        CorruptFileError
            If the file is not a sampled table: not an ``.npz`` archive,
            truncated, pickled, missing ``index``/``status``/``meta``, a
            ``meta`` that is not a JSON object, or an ``index`` or ``source``
            that is not integers (the message names the file, which is left
            unchanged).
        MeasureError
            If its columns differ in length (the message names the file).
        """
        where = os.fspath(path)
        values, status, meta, extra = read_table(path, "sampled table", required=("index",),
                                                 optional=("source",))
        if not isinstance(meta, dict):
            raise CorruptFileError(f"{where!r} is not a readable sampled table (its 'meta' must "
                                   f"be a JSON object, got {type(meta).__name__})")
        for name, col in extra.items():
            if col.dtype.kind not in "iu":
                raise CorruptFileError(f"{where!r} is not a readable sampled table (its {name!r} "
                                       f"column must hold integers, got dtype {col.dtype})")
        try:
            return cls(extra["index"].astype(np.int64), values, status, meta, extra.get("source"))
        except MeasureError as exc:
            raise MeasureError(f"{where}: {exc}") from None


def gemm_sampled_truth(n: int = 1024) -> SampledTruth:
    """The shipped sampled table of ``autotile.space.gemm_space(n)``.

    Made by ``benchmarks/gemm/sample_truth.py`` (the uniform random rows) and
    ``benchmarks/gemm/bench_compare1024.py --write-sample`` (the schedules the
    searchers visited in the shipped comparison), see ``autotile/data/README.md``,
    with :class:`~autotile.measure.ScheduleMeasurer`'s defaults.

    Raises
    ------
    ValueError
        If no sampled table ships for ``n``.
    """
    if n not in SHIPPED_SAMPLES:
        raise ValueError(f"no sampled table ships for n={n} (shipped: {sorted(SHIPPED_SAMPLES)})")
    ref = resources.files("autotile") / "data" / SHIPPED_SAMPLES[n]
    with resources.as_file(ref) as path:
        return SampledTruth.load(path)
