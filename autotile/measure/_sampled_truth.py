"""A sampled ground truth: exact metrics of a random subset of a space too large to sweep."""

from __future__ import annotations

import json
import math
import os
import zipfile
import zlib
from collections.abc import Iterable
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import CorruptFileError, MeasureError

__all__ = ["SampledTruth", "gemm_sampled_truth", "SHIPPED_SAMPLES"]

#: Sampled tables shipped in ``autotile/data``, by GEMM size n.
SHIPPED_SAMPLES = {1024: "gemm1024_sample.npz"}


class SampledTruth:
    """Metrics of a uniform random sample of a space's configs.

    Unlike :class:`~autotile.measure.GroundTruth`, which holds every config, the
    minimum over a sample is only the best *known* value, not a proven optimum
    (:meth:`best_known`).

    Attributes
    ----------
    index : ndarray of shape (n_samples,), int64
        ``index[r]`` is the ``space.config_at`` index of row ``r``.
    values : dict of str to ndarray of shape (n_samples,), float64
        ``values[m][r]``: metric ``m`` of row ``r``; NaN where not ``"ok"``.
    status : ndarray of shape (n_samples,), int8
        0 ok, 1 failed, 2 infeasible.
    meta : dict
        Provenance: ``n``, ``n_configs`` (of the space), ``seed``,
        ``sampling``, ``measurer_settings``, ``cpu_s``...

    Raises
    ------
    MeasureError
        If ``index``, ``status`` and the columns differ in length.
    """

    def __init__(self, index: npt.NDArray[np.int64], values: dict[str, npt.NDArray[np.float64]],
                 status: npt.NDArray[np.int8], meta: dict[str, Any]) -> None:
        index, status = np.asarray(index, np.int64), np.asarray(status, np.int8)
        n = index.shape[0] if index.ndim == 1 else -1
        cols: dict[str, npt.NDArray[Any]] = {"status": status, **values}
        bad = {k: np.shape(v) for k, v in cols.items() if np.shape(v) != (n,)}
        if n < 0 or bad:
            raise MeasureError(f"a sampled table needs one value per row in every column "
                               f"(index has shape {index.shape}), got {bad}")
        self.index, self.values, self.status, self.meta = index, values, status, meta
        self.metrics = tuple(values)

    def __len__(self) -> int:
        return int(self.index.shape[0])

    def ok_values(self, metric: str) -> npt.NDArray[np.float64]:
        """The finite values of ``metric`` over the ``"ok"`` rows, in row order.

        Raises
        ------
        KeyError
            If the table has no such metric.
        """
        if metric not in self.values:
            raise KeyError(f"unknown metric {metric!r}; the table has {list(self.metrics)}")
        col = self.values[metric]
        return np.asarray(col[(self.status == 0) & np.isfinite(col)], np.float64)

    def best_known(self, metric: str, visited: Iterable[float] = (),
                   direction: str = "minimize") -> float:
        """The best value of ``metric`` over the sample and the ``visited`` values.

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
        allv = np.concatenate([self.ok_values(metric), more[np.isfinite(more)]])
        if not allv.size:
            return math.nan
        return float(allv.max() if direction == "maximize" else allv.min())

    def label(self) -> str:
        """How reports name the reference value: ``best known (sampled, N configs), ...``."""
        return f"best known (sampled, {len(self):,} configs), not a proven optimum"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the table as a compressed ``.npz`` (index, metrics, status, JSON meta)."""
        arrays: dict[str, Any] = {f"m_{k}": v for k, v in self.values.items()}
        np.savez_compressed(path, index=self.index, status=self.status,
                            meta=np.array(json.dumps(self.meta)), **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SampledTruth:
        """Read a table written by :meth:`save` or ``benchmarks/gemm/sample_truth.py``.

        Raises
        ------
        FileNotFoundError
            If ``path`` does not exist.
        CorruptFileError
            If the file is not a sampled table (the message names it).
        """
        try:
            with np.load(path, allow_pickle=False) as z:
                values = {k[2:]: z[k].astype(np.float64) for k in z.files if k.startswith("m_")}
                index, status = z["index"].astype(np.int64), z["status"].astype(np.int8)
                meta = json.loads(str(z["meta"]))
        except FileNotFoundError:
            raise
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise CorruptFileError(
                f"{os.fspath(path)!r} is not a readable sampled table "
                f"({type(exc).__name__}: {str(exc)[:160]})") from None
        return cls(index, values, status, meta)


def gemm_sampled_truth(n: int = 1024) -> SampledTruth:
    """The shipped sampled table of ``autotile.space.gemm_space(n)``.

    Made by ``benchmarks/gemm/sample_truth.py`` (see ``autotile/data/README.md``)
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
