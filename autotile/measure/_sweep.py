"""Exhaustive, resumable, parallel sweep of a space into a ground-truth table."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import MeasureError
from autotile.measure._result import Measurer, MeasureResult

__all__ = ["GroundTruth", "sweep"]

_STATUS_CODE = {"ok": 0, "failed": 1, "infeasible": 2}
_CODE_STATUS = {v: k for k, v in _STATUS_CODE.items()}


class GroundTruth:
    """Metrics of every config of a space, indexed by the space's bijection.

    Attributes
    ----------
    metrics : tuple of str
        Metric names (columns).
    values : dict of str to ndarray of shape (n_configs,), float64
        ``values[m][i]`` is metric ``m`` of ``space.config_at(i)``; NaN where the
        config is not ``"ok"``.
    status : ndarray of shape (n_configs,), int8
        0 ok, 1 failed, 2 infeasible.
    meta : dict
        Provenance: space size, measurer settings, unique count, wall time.
    """

    def __init__(self, values: dict[str, npt.NDArray[np.float64]],
                 status: npt.NDArray[np.int8], meta: dict[str, Any]) -> None:
        self.values = values
        self.status = status
        self.meta = meta
        self.metrics = tuple(values)

    def __len__(self) -> int:
        return int(self.status.shape[0])

    def column(self, metric: str) -> npt.NDArray[np.float64]:
        """The values of one metric, shape (n_configs,).

        Raises
        ------
        KeyError
            If the table has no such metric.
        """
        if metric not in self.values:
            raise KeyError(f"unknown metric {metric!r}; the table has {list(self.metrics)}")
        return self.values[metric]

    def optimum(self, metric: str) -> float:
        """Minimum of ``metric`` over the ``"ok"`` configs."""
        return float(np.nanmin(self.column(metric)))

    def result(self, index: int, config_text: str = "") -> MeasureResult:
        """The stored measurement of config ``index`` as a :class:`MeasureResult`."""
        st = _CODE_STATUS[int(self.status[index])]
        metrics = {m: float(v[index]) for m, v in self.values.items()} if st == "ok" else {}
        return MeasureResult(config_text, st, metrics, 0.0,  # type: ignore[arg-type]
                             None if st == "ok" else "recorded as " + st)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the table as a compressed ``.npz`` (metrics, status, JSON meta)."""
        arrays: dict[str, Any] = {f"m_{k}": v for k, v in self.values.items()}
        np.savez_compressed(path, status=self.status,
                            meta=np.array(json.dumps(self.meta)), **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> GroundTruth:
        """Read a table written by :meth:`save` or :func:`sweep`.

        Raises
        ------
        FileNotFoundError
            If ``path`` does not exist.
        """
        with np.load(path, allow_pickle=False) as z:
            values = {k[2:]: z[k].astype(np.float64) for k in z.files if k.startswith("m_")}
            return cls(values, z["status"].astype(np.int8), json.loads(str(z["meta"])))


def _measure_chunk(measurer: Measurer, space: Any, indices: Sequence[int],
                   metrics: tuple[str, ...], out: Path) -> int:
    vals = np.full((len(indices), len(metrics)), np.nan)
    status = np.zeros(len(indices), np.int8)
    for r, idx in enumerate(indices):
        res = measurer.measure(space.config_at(int(idx)))
        status[r] = _STATUS_CODE[res.status]
        if res.ok:
            vals[r] = [res.metrics[m] for m in metrics]
    tmp = out.with_name(out.stem + ".tmp.npz")
    np.savez(tmp, values=vals, status=status)
    os.replace(tmp, out)
    return len(indices)


def sweep(space: Any, measurer: Measurer, path: str | os.PathLike[str], *,
          key: Callable[[Any], Hashable] | None = None, n_jobs: int = 2,
          chunk_size: int = 500, resume: bool = True, progress: bool = True,
          limit: int | None = None) -> GroundTruth:
    """Measure every config of a space and write the ground-truth table.

    Configs whose ``key`` is equal are measured once (for a GEMM schedule
    space, :func:`autotile.space.gemm_canonical_key` proves their traces equal:
    loops of extent 1 are dropped and an outer loop directly followed by its
    own inner loop is the unsplit loop). Work is split into chunks of
    representatives, measured in parallel with joblib, and each finished chunk
    is saved next to ``path`` in ``<path>.parts/``, so a killed sweep resumes
    where it stopped.

    Parameters
    ----------
    space : autotile.space.Space
        The space; row ``i`` of the table is ``space.config_at(i)``.
    measurer : Measurer
        Scores one config; its ``metrics`` are the table's columns.
    path : path-like
        Output ``.npz`` (``.npz`` is appended if missing; see
        :meth:`GroundTruth.load`).
    key : callable, optional
        Canonical key of a config; default: every config is distinct.
    n_jobs : int, default=2
        joblib workers.
    chunk_size : int, default=500
        Representatives per chunk (the unit of resumption).
    resume : bool, default=True
        Reuse finished chunks of an earlier run with the same space and keys.
    progress : bool, default=True
        Show a tqdm progress bar (configs measured).
    limit : int, optional
        Only sweep the first ``limit`` configs (for benchmarks and tests).

    Returns
    -------
    GroundTruth

    Raises
    ------
    MeasureError
        If ``<path>.parts`` holds chunks of a different sweep and ``resume``
        is true.
    """
    from joblib import Parallel, delayed
    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    n = len(space) if limit is None else min(int(limit), len(space))
    metrics = tuple(measurer.metrics)
    # Canonical keys -> representatives.
    if key is None:
        reps = np.arange(n, dtype=np.int64)
        inverse = reps
    else:
        first: dict[Hashable, int] = {}
        inverse = np.empty(n, np.int64)
        rep_list: list[int] = []
        for i in range(n):
            k = key(space.config_at(i))
            r = first.get(k)
            if r is None:
                r = first[k] = len(rep_list)
                rep_list.append(i)
            inverse[i] = r
        reps = np.asarray(rep_list, np.int64)
    digest = hashlib.sha256(reps.tobytes() + repr((n, metrics)).encode()).hexdigest()[:16]
    parts = path.with_name(path.name + ".parts")
    manifest = parts / "manifest.json"
    parts.mkdir(parents=True, exist_ok=True)
    if manifest.exists() and resume:
        old = json.loads(manifest.read_text())
        if old.get("digest") != digest or old.get("chunk_size") != chunk_size:
            raise MeasureError(
                f"{parts} holds chunks of a different sweep (digest {old.get('digest')} vs "
                f"{digest}); delete it or pass resume=False")
    else:
        for f in parts.glob("chunk_*.npz"):
            f.unlink()
    manifest.write_text(json.dumps({"digest": digest, "chunk_size": chunk_size, "n": n}))
    chunks = [reps[s:s + chunk_size] for s in range(0, len(reps), chunk_size)]
    files = [parts / f"chunk_{c:05d}.npz" for c in range(len(chunks))]
    todo = [c for c, f in enumerate(files) if not f.exists()]
    done_before = sum(len(chunks[c]) for c in range(len(chunks)) if c not in set(todo))
    bar = tqdm(total=len(reps), initial=done_before, unit="config", disable=not progress,
               desc=f"sweep ({len(reps)} unique of {n})")
    jobs = (delayed(_measure_chunk)(measurer, space, chunks[c], metrics, files[c]) for c in todo)
    for k in Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs):
        bar.update(k)
    bar.close()
    rep_vals = np.zeros((0, len(metrics)))
    rep_status = np.zeros(0, np.int8)
    if files:
        rep_vals = np.concatenate([np.load(f)["values"] for f in files])
        rep_status = np.concatenate([np.load(f)["status"] for f in files])
    values = {m: rep_vals[inverse, j] for j, m in enumerate(metrics)}
    status = rep_status[inverse].astype(np.int8)
    meta = {
        "n_configs": n, "n_unique": int(len(reps)), "metrics": list(metrics),
        "measurer": type(measurer).__name__,
        "measurer_settings": _settings(measurer),
        "wall_time_s": time.perf_counter() - t0, "n_jobs": n_jobs,
    }
    truth = GroundTruth(values, status, meta)
    truth.save(path)
    return truth


def _settings(measurer: Measurer) -> dict[str, Any]:
    out: dict[str, Any] = {"objective": measurer.objective}
    for name in ("cache", "cost"):
        obj = getattr(measurer, name, None)
        if obj is not None and hasattr(obj, "to_json"):
            out[name] = obj.to_json()
    return out
