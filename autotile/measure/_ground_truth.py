"""Exhaustive, resumable, parallel sweep of a space into a ground-truth table."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import MeasureError
from autotile.measure._fingerprint import canonical as _canonical
from autotile.measure._fingerprint import differences as _differences
from autotile.measure._fingerprint import jsonable as _jsonable
from autotile.measure._parallel import check_scheduler, parallel_map
from autotile.measure._result import Measurer, MeasureResult
from autotile.measure._table import MetricTable, read_table, write_problem

__all__ = ["GroundTruth", "sweep", "space_difference"]

_STATUS_CODE = {"ok": 0, "failed": 1, "infeasible": 2}
_CODE_STATUS = {v: k for k, v in _STATUS_CODE.items()}


class GroundTruth(MetricTable):
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
        Provenance: space size, measurer settings, unique count, wall time;
        tables written by :func:`sweep` since the resume check also hold
        ``space`` (knobs and size) and ``fingerprint`` (older tables lack
        them and still load).

    Raises
    ------
    MeasureError
        If ``status`` is not 1-D or a column is not 1-D of the same length
        (naming the column and the lengths).
    """

    def __init__(self, values: dict[str, npt.NDArray[np.float64]],
                 status: npt.NDArray[np.int8], meta: dict[str, Any]) -> None:
        status = np.asarray(status)
        if status.ndim != 1:
            raise MeasureError(f"a ground-truth table needs a 1-D status column, got shape "
                               f"{status.shape}")
        n = status.shape[0]
        for m, col in values.items():
            shape = np.shape(col)
            if shape != (n,):
                got = f"with {shape[0]}" if len(shape) == 1 else f"of shape {shape}"
                raise MeasureError(f"a ground-truth table needs one value per config in every "
                                   f"column (status has {n} rows), got column {m!r} {got}")
        self.values = values
        self.status = status
        self.meta = meta
        self.metrics = tuple(values)
        #: The file it was loaded from (None if made in memory).
        self.path: str | None = None

    def optimum(self, metric: str) -> float:
        """Minimum of ``metric`` over the ``"ok"`` configs with a finite value (NaN if none)."""
        return self._best(metric, np.zeros(0), maximize=False)

    def result(self, index: int, config_text: str = "") -> MeasureResult:
        """The stored measurement of config ``index`` as a :class:`MeasureResult`."""
        st = _CODE_STATUS[int(self.status[index])]
        metrics = {m: float(v[index]) for m, v in self.values.items()} if st == "ok" else {}
        return MeasureResult(config_text, st, metrics, 0.0,  # type: ignore[arg-type]
                             None if st == "ok" else "recorded as " + st)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the table as a compressed ``.npz`` (metrics, status, JSON meta)."""
        self._write(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> GroundTruth:
        """Read a table written by :meth:`save` or :func:`sweep`.

        Raises
        ------
        FileNotFoundError
            If ``path`` does not exist.
        CorruptFileError
            If the file is not a table (not an ``.npz`` archive, truncated,
            pickled, or missing ``status``/``meta``); the message names the
            file, which is left unchanged.
        MeasureError
            If its columns differ in length (the message names the file).
        """
        values, status, meta, _ = read_table(
            path, "ground-truth table", "; re-create it with autotile sweep")
        try:
            truth = cls(values, status, meta)
        except MeasureError as exc:
            raise MeasureError(f"{path}: {exc}") from None
        truth.path = os.fspath(path)
        return truth


def _measure_chunk(measurer: Measurer, space: Any, metrics: tuple[str, ...],
                   job: tuple[int, Sequence[int]]
                   ) -> tuple[int, npt.NDArray[np.float64], npt.NDArray[np.int8]]:
    """Measure one chunk (on any worker); return its number, values and status."""
    c, indices = job
    vals = np.full((len(indices), len(metrics)), np.nan)
    status = np.zeros(len(indices), np.int8)
    objective = getattr(measurer, "objective", "")
    for r, idx in enumerate(indices):
        res = measurer.measure(space.config_at(int(idx)))
        status[r] = _STATUS_CODE[res.status]
        if res.ok and objective in res.metrics and not math.isfinite(res.metrics[objective]):
            status[r] = _STATUS_CODE["failed"]  # as a study: NaN/+-inf is never a value
        elif res.ok:
            vals[r] = [res.metrics[m] for m in metrics]
    return c, vals, status


def _save_chunk(out: Path, vals: npt.NDArray[np.float64], status: npt.NDArray[np.int8],
                **extra: Any) -> None:
    """Write one chunk's ``values``, ``status`` and ``extra`` arrays to ``out`` atomically.

    The archive is written to ``<stem>.tmp.npz`` next to ``out`` and moved onto
    ``out`` with :func:`os.replace`, so a killed writer never leaves a truncated
    ``out`` that a resumed run would take for a finished chunk.
    """
    tmp = out.with_name(out.stem + ".tmp.npz")
    try:
        np.savez(tmp, values=vals, status=status, **extra)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def sweep(space: Any, measurer: Measurer, path: str | os.PathLike[str], *,
          key: Callable[[Any], Hashable] | None = None, n_jobs: int = 2,
          chunk_size: int = 500, resume: bool = True, progress: bool = True,
          limit: int | None = None, scheduler: Any = None) -> GroundTruth:
    """Measure every config of a space and write the ground-truth table.

    Configs whose ``key`` is equal are measured once (for a GEMM schedule
    space, :func:`autotile.space.gemm_canonical_key` proves their traces equal:
    loops of extent 1 are dropped and an outer loop directly followed by its
    own inner loop is the unsplit loop). Work is split into chunks of
    representatives, measured in parallel with joblib or on a Dask cluster
    (``scheduler``), and each finished chunk
    is saved next to ``path`` in ``<path>.parts/``, so a killed sweep resumes
    where it stopped. Once the table is written the ``.parts`` folder is
    removed.

    A sweep is identified by its fingerprint: the space (knob names and
    values, constraint names, size), the measurer's class and settings (for
    :class:`ScheduleMeasurer`: ``n``, element size, cache and cost model), the
    metrics, the number of configs and the representatives chosen by ``key``.
    It is stored in the ``.parts`` manifest and in the table's
    ``meta["fingerprint"]``; resuming checks it.

    Parameters
    ----------
    space : autotile.space.Space
        The space; row ``i`` of the table is ``space.config_at(i)``.
    measurer : Measurer
        Scores one config; its ``metrics`` are the table's columns. If it has
        a ``settings()`` method, its JSON-able result must list every setting
        that changes the numbers (otherwise the public attributes that are
        numbers, strings or have ``to_json`` are used).
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
        Reuse the finished chunks of an earlier run of the same sweep, or
        return the table at ``path`` unchanged if the same sweep already
        finished. ``False`` discards both and measures everything again.
    progress : bool, default=True
        Show a tqdm progress bar (configs measured).
    limit : int, optional
        Only sweep the first ``limit`` configs (for benchmarks and tests).
    scheduler : None, "local", str or distributed.Client, default=None
        None: joblib processes on this machine. ``"local"``: a Dask
        ``LocalCluster`` of ``n_jobs`` workers; an address
        (``"tcp://host:8786"``) or a client: that Dask cluster, whose workers
        may be other machines (each chunk comes back to this process, which
        writes the ``.parts`` files and the table). See
        :func:`~autotile.measure.parallel_map`.

    Returns
    -------
    GroundTruth
        An ``"ok"`` result whose objective (``measurer.objective``) is NaN or
        ``+-inf`` is recorded as failed (NaN metrics), as a study records it.
        ``meta`` holds ``n_configs``, ``n_unique``, ``metrics``, ``measurer``,
        ``measurer_settings``, ``space`` (the space's signature),
        ``fingerprint``, ``wall_time_s`` and ``n_jobs``.

    Raises
    ------
    ValueError
        If ``limit`` is neither None nor an int ``>= 1``, ``chunk_size`` is
        not an int ``>= 1`` or ``n_jobs`` is not a non-zero int (checked
        before any file is read or written).
    MeasureError
        If no file can be created in ``path``'s folder (checked before any
        measurement; the message names the folder and the reason), or
        ``resume`` is true and ``<path>.parts`` holds chunks of a different
        sweep (other space, measurer settings, metrics, configs or chunk
        size), or ``path`` holds a table of a different sweep or one written
        without a fingerprint; the message names what differs.
    """
    from tqdm.auto import tqdm

    check_scheduler(scheduler)
    for name, value, low, rule in (("limit", limit, 1, "None or an int >= 1"),
                                   ("chunk_size", chunk_size, 1, "an int >= 1"),
                                   ("n_jobs", n_jobs, None, "a non-zero int (-1: all cores)")):
        if value is None and name == "limit":
            continue
        v = value.item() if isinstance(value, np.integer) else value
        if isinstance(v, bool) or not isinstance(v, int) or (v < low if low else v == 0):
            raise ValueError(f"sweep(): {name} must be {rule}, got {name}={value!r}")
    t0 = time.perf_counter()
    path = Path(path)
    folder = next(p for p in path.absolute().parents if p.exists())  # created if missing
    why = write_problem(folder) if folder.is_dir() else "not a folder"
    if why is not None:
        raise MeasureError(f"cannot write the table {str(path)!r}: no file can be created in "
                           f"{str(folder)!r} ({why}); pass another path")
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    n = len(space) if limit is None else min(int(limit), len(space))
    metrics = tuple(measurer.metrics)
    fingerprint: dict[str, Any] = {
        "space": _space_signature(space),
        "measurer": type(measurer).__name__,
        "measurer_settings": _numbers_settings(measurer),
        "metrics": list(metrics),
        "n_configs": n,
    }
    # A finished table of the same sweep is the result (checked before keys are computed).
    if resume and path.exists():
        old_fp = _read_fingerprint(path)
        _check_fingerprint(old_fp, fingerprint, f"{path} holds a table of", skip=("reps",))
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
    fingerprint["reps"] = {"n_unique": int(len(reps)),
                           "sha256": hashlib.sha256(reps.tobytes()).hexdigest()[:16]}
    if resume and path.exists():
        _check_fingerprint(old_fp, fingerprint, f"{path} holds a table of")
        truth = GroundTruth.load(path)
        if len(truth) == n and set(truth.metrics) == set(metrics):
            return truth
        raise MeasureError(  # a matching fingerprint on a damaged table
            f"{path} records this sweep's fingerprint but holds {len(truth)} rows and metrics "
            f"{list(truth.metrics)} (expected {n} and {list(metrics)}); delete it or pass "
            "resume=False")
    digest = hashlib.sha256(_canonical(fingerprint).encode()).hexdigest()[:16]
    parts = path.with_name(path.name + ".parts")
    manifest = parts / "manifest.json"
    parts.mkdir(parents=True, exist_ok=True)
    if manifest.exists() and resume:
        old = json.loads(manifest.read_text())
        where = f"{parts} holds chunks of"
        _check_fingerprint(old.get("fingerprint"), fingerprint, where)
        if old.get("chunk_size") != chunk_size:
            raise MeasureError(
                f"{where} a different sweep: chunk_size {old.get('chunk_size')!r} (then) vs "
                f"{chunk_size!r} (now); delete {parts} or pass resume=False")
    else:
        for f in parts.glob("chunk_*.npz"):
            f.unlink()
    manifest.write_text(json.dumps({"digest": digest, "chunk_size": chunk_size, "n": n,
                                    "fingerprint": fingerprint}))
    chunks = [reps[s:s + chunk_size] for s in range(0, len(reps), chunk_size)]
    files = [parts / f"chunk_{c:05d}.npz" for c in range(len(chunks))]
    todo = [c for c, f in enumerate(files) if not f.exists()]
    done_before = sum(len(chunks[c]) for c in range(len(chunks)) if c not in set(todo))
    bar = tqdm(total=len(reps), initial=done_before, unit="config", disable=not progress,
               desc=f"sweep ({len(reps)} unique of {n})")
    results = parallel_map(_measure_chunk, [(c, chunks[c]) for c in todo],
                           shared=(measurer, space, metrics), n_jobs=n_jobs,
                           scheduler=scheduler, unordered=True)
    for c, vals, status in results:  # chunks are written here, whichever machine measured them
        _save_chunk(files[c], vals, status)
        bar.update(len(chunks[c]))
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
        "space": {"name": getattr(space, "name", None), **fingerprint["space"]},
        "fingerprint": fingerprint,
        "wall_time_s": time.perf_counter() - t0, "n_jobs": n_jobs,
    }
    truth = GroundTruth(values, status, meta)
    tmp = path.with_name(path.stem + ".tmp.npz")
    try:
        truth.save(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    shutil.rmtree(parts)  # only reached once the table is in place
    return truth


def _space_signature(space: Any) -> dict[str, Any]:
    """Knob names and values, constraint names and size of a space, JSON-able.

    The space's ``name`` is a label and is left out (a renamed space is the
    same sweep); ``n`` of a GEMM space is in its knobs (divisors of ``n``).
    """
    sig: dict[str, Any] = {"type": type(space).__name__, "size": int(len(space))}
    knobs = getattr(space, "knobs", None)
    if knobs is None:
        return sig
    sig["knobs"] = [k.to_dict() if hasattr(k, "to_dict") else {"name": k.name} for k in knobs]
    values = repr([(k.name, tuple(k.values)) for k in knobs])
    sig["knob_values_sha256"] = hashlib.sha256(values.encode()).hexdigest()[:16]
    sig["constraints"] = [getattr(c, "name", repr(c)) for c in getattr(space, "constraints", ())]
    if getattr(space, "is_explicit", False):
        sig["members_sha256"] = hashlib.sha256(
            _canonical(space.to_dict()["members"]).encode()).hexdigest()[:16]
    return sig


def _numbers_settings(measurer: Measurer) -> dict[str, Any]:
    """The measurer's settings that change its numbers (the resume fingerprint's part)."""
    fn = getattr(measurer, "settings", None)
    # Measurer.settings() itself lists nothing; a sweep then falls back on the public
    # attributes (a sweep's measurer is not reused after it, so counters cannot drift).
    inherited = getattr(type(measurer), "settings", None) is Measurer.settings
    if callable(fn) and not inherited:
        out = _jsonable(fn())
        if not isinstance(out, dict):
            raise MeasureError(
                f"{type(measurer).__name__}.settings() must return a JSON-able dict, "
                f"got {type(fn()).__name__}")
        return out
    out = {}
    for name, value in sorted(vars(measurer).items()):
        if name.startswith("_") or name in ("space", "objective", "metrics"):
            continue
        v = _jsonable(value)
        out[name] = v if v is not None or value is None else f"<{type(value).__name__}>"
    return out


def _read_fingerprint(path: Path) -> dict[str, Any] | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported the same way
        raise MeasureError(
            f"{path} exists but is not a readable sweep table ({type(exc).__name__}: {exc}); "
            "delete it or pass resume=False") from None
    fp = meta.get("fingerprint") if isinstance(meta, dict) else None
    return fp if isinstance(fp, dict) else None


def _check_fingerprint(old: dict[str, Any] | None, new: dict[str, Any], where: str,
                       skip: tuple[str, ...] = ()) -> None:
    """Raise MeasureError naming the differences between two sweep fingerprints."""
    hint = "delete it or pass resume=False"
    if old is None:
        raise MeasureError(
            f"{where} a sweep that recorded no fingerprint (written by an older autotile), so "
            f"it may be a different sweep and cannot be checked against this one; {hint}")
    diffs = _differences({k: v for k, v in old.items() if k not in skip},
                         {k: v for k, v in new.items() if k not in skip})
    if diffs:
        raise MeasureError(f"{where} a different sweep: {'; '.join(diffs)}; {hint}")


def _settings(measurer: Measurer) -> dict[str, Any]:
    out: dict[str, Any] = {"objective": measurer.objective}
    for name in ("cache", "cost"):
        obj = getattr(measurer, name, None)
        if obj is not None and hasattr(obj, "to_json"):
            out[name] = obj.to_json()
    out.update(_numbers_settings(measurer))
    return out


def space_difference(recorded: Any, space: Any) -> str | None:
    """How ``space`` differs from the space a table recorded (``meta["space"]``), or None.

    Compares what fixes row ``i`` of a table: the space's type and size, the
    knob names in order, each knob's kind and values, the constraint names
    and (explicit spaces) the members. The space's ``name`` is a label and
    is not compared.

    Parameters
    ----------
    recorded : dict
        ``meta["space"]`` of a table written by :func:`sweep`.
    space : autotile.space.Space
        The space to replay it on.

    Returns
    -------
    str or None
        The first difference, in words; None if they match.
    """
    now = _space_signature(space)
    then = {k: v for k, v in dict(recorded).items() if k != "name"}
    names_then = [k.get("name") for k in then.get("knobs", [])]
    names_now = [k.get("name") for k in now.get("knobs", [])]
    if names_then != names_now:
        if sorted(map(str, names_then)) == sorted(map(str, names_now)):
            return (f"the knobs are in another order: the table's space has {names_then}, "
                    f"this space {names_now} (row i would be another config)")
        return f"the table's space has knobs {names_then}, this space {names_now}"
    for a, b in zip(then.get("knobs", []), now.get("knobs", [])):
        if a != b:
            return f"knob {a.get('name')!r} is {a} in the table's space but {b} in this space"
    if then.get("knob_values_sha256") != now.get("knob_values_sha256"):
        return ("the knobs have other values (digest "
                f"{then.get('knob_values_sha256')} vs {now.get('knob_values_sha256')})")
    for key in ("type", "constraints", "size", "members_sha256"):
        if then.get(key) != now.get(key):
            return f"{key} is {then.get(key)!r} in the table's space but {now.get(key)!r} here"
    return None
