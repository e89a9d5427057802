"""What ground-truth tables share: metric columns, a status column, JSON provenance."""

from __future__ import annotations

import json
import math
import os
import zipfile
import zlib
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import CorruptFileError

__all__ = ["MetricTable", "read_table"]


class MetricTable:
    """Base of :class:`~autotile.measure.GroundTruth` and :class:`~autotile.measure.SampledTruth`.

    Subclasses set ``values`` (metric name to column), ``status`` (0 ok,
    1 failed, 2 infeasible), ``meta`` and ``metrics`` (the column names, in
    order), all of one length, and add what a row means.
    """

    values: dict[str, npt.NDArray[np.float64]]
    status: npt.NDArray[np.int8]
    meta: dict[str, Any]
    metrics: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.status.shape[0])

    def column(self, metric: str) -> npt.NDArray[np.float64]:
        """The values of one metric, one per row.

        Raises
        ------
        KeyError
            If the table has no such metric.
        """
        if metric not in self.values:
            raise KeyError(f"unknown metric {metric!r}; the table has {list(self.metrics)}")
        return self.values[metric]

    def ok_values(self, metric: str) -> npt.NDArray[np.float64]:
        """The finite values of ``metric`` over the ``"ok"`` rows, in row order.

        Raises
        ------
        KeyError
            If the table has no such metric.
        """
        return self._ok(metric, None)

    def _ok(self, metric: str, rows: npt.NDArray[np.bool_] | None) -> npt.NDArray[np.float64]:
        """:meth:`ok_values` over the rows where ``rows`` is true (all rows if None)."""
        col = self.column(metric)
        keep = (self.status == 0) & np.isfinite(col)
        return np.asarray(col[keep if rows is None else keep & rows], np.float64)

    def _best(self, metric: str, extra: npt.NDArray[np.float64], maximize: bool) -> float:
        """Best of the ``"ok"`` values and the finite ``extra`` ones (NaN if none)."""
        allv = np.concatenate([self.ok_values(metric), extra[np.isfinite(extra)]])
        if not allv.size:
            return math.nan
        return float(allv.max() if maximize else allv.min())

    def _write(self, path: str | os.PathLike[str], **arrays: Any) -> None:
        """Save the columns, status, JSON meta and ``arrays`` as a compressed ``.npz``."""
        cols: dict[str, Any] = {f"m_{k}": v for k, v in self.values.items()}
        np.savez_compressed(path, **arrays, status=self.status,
                            meta=np.array(json.dumps(self.meta)), **cols)


def write_problem(folder: str | os.PathLike[str]) -> str | None:
    """Why files cannot be created in the existing folder ``folder``, or None if they can.

    Creates and removes a probe folder: permission bits say nothing about
    read-only mounts or pseudo file systems (``/proc``), nor about root.

    Parameters
    ----------
    folder : str or path-like
        An existing folder.

    Returns
    -------
    str or None
        The operating system's reason (e.g. ``"Read-only file system"``).
    """
    import shutil
    import tempfile

    try:
        probe = tempfile.mkdtemp(prefix=".autotile-probe-", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    shutil.rmtree(probe, ignore_errors=True)
    return None


def read_table(path: str | os.PathLike[str], what: str, hint: str = "",
               required: tuple[str, ...] = (), optional: tuple[str, ...] = ()) -> tuple[
        dict[str, npt.NDArray[np.float64]], npt.NDArray[np.int8], dict[str, Any],
        dict[str, npt.NDArray[Any]]]:
    """Read the columns, status, meta and other arrays of a table ``.npz``.

    Returns ``(values, status, meta, extra)``; ``extra`` holds the arrays named
    in ``required`` and those of ``optional`` that the file has.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    CorruptFileError
        "``path`` is not a readable ``what`` (reason)``hint``" if the file is
        empty, not an ``.npz`` archive, truncated or pickled, or lacks
        ``status``, ``meta`` or an array of ``required`` (the reason names
        the arrays it holds).
    """
    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        # np.load would take it for a pickle and blame allow_pickle
        with open(path, "rb") as f:
            head = f.read(16)
        size = os.path.getsize(path)
        if head.startswith(b"PK\x03\x04"):
            why = (f"a truncated or damaged .npz archive: it starts as a zip file but has no "
                   f"end-of-archive record ({size:,} bytes)")
        elif size == 0:
            why = "an empty file (0 bytes), not a NumPy .npz archive"
        else:
            why = f"not a NumPy .npz archive: it starts with {head!r}"
        raise CorruptFileError(f"{os.fspath(path)!r} is not a readable {what} ({why}){hint}")
    try:
        with np.load(path, allow_pickle=False) as z:
            values = {k[2:]: z[k].astype(np.float64) for k in z.files if k.startswith("m_")}
            lacking = [k for k in ("status", "meta", *required) if k not in z.files]
            if lacking:
                raise CorruptFileError(
                    f"{os.fspath(path)!r} is not a readable {what} (it lacks the array(s) "
                    f"{lacking}; it holds {sorted(z.files)[:12]}){hint}")
            status, meta = z["status"].astype(np.int8), json.loads(str(z["meta"]))
            extra = {k: z[k] for k in (*required, *(k for k in optional if k in z.files))}
    except (FileNotFoundError, CorruptFileError):
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise CorruptFileError(
            f"{os.fspath(path)!r} is not a readable {what} "
            f"({type(exc).__name__}: {str(exc)[:160]}){hint}") from None
    return values, status, meta, extra
