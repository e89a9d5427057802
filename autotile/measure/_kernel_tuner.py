"""Import Kernel Tuner cache files (and T4 result files) as replayable recorded spaces."""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import InvalidConfigError, MeasureError
from autotile.measure._ground_truth import GroundTruth, _space_signature
from autotile.measure._replay import ReplayMeasurer

__all__ = ["RecordedSpace", "load_kernel_tuner", "FAILED_TIME_MS"]

#: Kernel Tuner's old failure marker: a ``time`` at or above this is a failed config.
FAILED_TIME_MS = 1e20

_GZIP_MAGIC = b"\x1f\x8b"
# T4 ``times`` fields -> the Kernel Tuner record fields holding the same overheads (ms).
_T4_TIME_FIELDS = {
    "compilation": "compile_time",
    "compilation_time": "compile_time",
    "framework": "framework_time",
    "search_algorithm": "strategy_time",
    "validation": "verification_time",
    "benchmark": "benchmark_time",
}
# Kernel Tuner record fields that are neither knobs nor per-config metrics.
_SKIP_FIELDS = {"times", "timestamp"}


@dataclass(frozen=True)
class RecordedSpace:
    """A brute-forced space recorded by another tuner, ready to replay.

    Attributes
    ----------
    space : autotile.space.Space
        An explicit space (:meth:`Space.from_configs`): one :class:`Choice`
        knob per tuning parameter, in the file's knob order (parameters with
        a single value are kept, so that :meth:`key` can rebuild the file's
        config keys); the valid configs are exactly the configs in the file.
    truth : GroundTruth
        Row ``i`` is ``space.config_at(i)``. Metric ``"time"`` is the mean
        kernel run time in ms; the other columns are the file's other
        numeric per-config fields (``"GFLOP/s"``, ``"GB/s"``,
        ``"compile_time"`` in ms, ...). Failed configs (compile or launch
        failure) have status 1 (``"failed"``) and NaN metrics.
    meta : dict
        ``format`` (``"kernel_tuner"`` or ``"t4"``), ``source`` (the path),
        ``device_name``, ``kernel_name``, ``problem_size`` (``None`` when the
        file does not say), ``objective``, ``time_unit`` (``"ms"``),
        ``tune_params_keys``, ``tune_params``, ``n_configs``, ``n_valid``,
        ``n_failed`` and ``failures`` (count per failure reason).
    """

    space: Any
    truth: GroundTruth
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.space) != len(self.truth):
            raise MeasureError(
                f"RecordedSpace needs one table row per config of its space: the space has "
                f"{len(self.space)} configs, the table {len(self.truth)} rows")

    @property
    def objective(self) -> str:
        """The metric minimised by default (the file's ``objective``, usually ``"time"``)."""
        return str(self.meta.get("objective", "time"))

    @property
    def name(self) -> str:
        """A label: ``"<kernel_name> on <device_name>"``, or the file name."""
        kernel, device = self.meta.get("kernel_name"), self.meta.get("device_name")
        if kernel and device:
            return f"{kernel} on {device}"
        return Path(str(self.meta.get("source", "recorded"))).name

    def __len__(self) -> int:
        return len(self.truth)

    def measurer(self, objective: str | None = None) -> ReplayMeasurer:
        """Return a replay measurer over the recorded table.

        Parameters
        ----------
        objective : str, optional
            Metric to minimise; default :attr:`objective`.

        Returns
        -------
        ReplayMeasurer
            Looks configs up instead of running the kernel (Kernel Tuner's
            simulation mode).

        Raises
        ------
        ValueError
            If ``objective`` is not a metric of the table.
        """
        return ReplayMeasurer(self.space, self.truth, objective or self.objective)

    def key(self, config: Mapping[str, Any]) -> str:
        """Return the Kernel Tuner cache key of a config.

        Parameters
        ----------
        config : Mapping
            A config of :attr:`space`.

        Returns
        -------
        str
            The values in knob order, each formatted with ``str()``, joined by
            commas without spaces, e.g. ``"32,4,1,3,1,0,1,1,15,15"``.
        """
        cfg = self.space.validate(config)
        return ",".join(str(cfg[n]) for n in self.space.names)


def _read_json(path: Path) -> Any:
    """Read JSON text from ``path``, gunzipping it if it starts with the gzip magic bytes.

    Raises
    ------
    MeasureError
        If the gzip stream is truncated or corrupt, or the text is not UTF-8
        JSON; the message names the file.
    """
    with open(path, "rb") as fh:
        head = fh.read(2)
    if head == _GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as fh:
                raw = fh.read()
        except (EOFError, OSError, zlib.error) as exc:
            raise MeasureError(f"{path} is not gzip/JSON: the gzip stream is truncated or "
                               f"corrupt ({type(exc).__name__}: {exc})") from None
    else:
        raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MeasureError(f"{path} is not gzip/JSON: not UTF-8 text ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise MeasureError(f"{path} is not valid JSON: {exc}") from None


def _as_number(value: Any) -> float | None:
    """Return ``value`` as a float if it is a real number (not a bool), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _is_valid_time(value: Any) -> bool:
    """Whether a recorded objective is usable: finite, positive and below the 1e20 marker."""
    x = _as_number(value)
    return x is not None and math.isfinite(x) and 0 < x < FAILED_TIME_MS


def _failure_reason(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "InvalidTime"
    x = _as_number(value)
    if x is not None and x <= 0:
        return "non-positive time"
    return f"time={value!r}"


def _short(value: Any, n_chars: int = 80) -> str:
    """``repr(value)``, cut to ``n_chars`` characters."""
    text = repr(value)
    return text if len(text) <= n_chars else text[: n_chars - 3] + "..."


def _sort_key(value: Any) -> tuple[int, Any]:
    """Order numbers numerically, then everything else by its text."""
    x = _as_number(value)
    return (0, x) if x is not None else (1, str(value))


def _match_value(name: str, value: Any, domain: Sequence[Any]) -> Any:
    """Return the member of ``domain`` equal to ``value`` (same type first, then same text)."""
    for v in domain:
        if type(v) is type(value) and v == value:
            return v
    for v in domain:
        if str(v) == str(value):
            return v
    raise MeasureError(f"value {name}={value!r} is not one of tune_params[{name!r}]={list(domain)}")


def _build(
    names: Sequence[str],
    domains: Mapping[str, Sequence[Any]],
    configs: list[dict[str, Any]],
    valid: list[bool],
    metrics: list[dict[str, float]],
    meta: dict[str, Any],
    objective: str | None,
) -> RecordedSpace:
    from autotile.space import Choice, Space

    try:
        knobs = [Choice(n, tuple(domains[n])) for n in names]
    except InvalidConfigError as exc:
        raise MeasureError(f"{meta.get('source', 'the file')}: its parameter values do not form "
                           f"a space: {exc}") from None
    space = Space.from_configs(knobs, configs, name=meta.get("kernel_name") or None)
    n = len(space)
    if n != len(configs):
        raise MeasureError(f"the file lists {len(configs) - n} configs more than once")
    rows = np.fromiter((space.index_of(c) for c in configs), dtype=np.int64, count=n)
    status = np.ones(n, dtype=np.int8)
    status[rows[np.asarray(valid, dtype=bool)]] = 0
    columns: list[str] = []
    for m in metrics:
        for k in m:
            if k not in columns:
                columns.append(k)
    first = str(meta.get("objective") or "time")
    order = list(columns)
    columns = sorted(order, key=lambda k: (k != first, order.index(k)))
    values: dict[str, npt.NDArray[np.float64]] = {}
    for col in columns:
        arr = np.full(n, np.nan)
        for r, ok, m in zip(rows.tolist(), valid, metrics):
            if ok and col in m:
                arr[r] = m[col]
        values[col] = arr
    objective = objective or str(meta.get("objective") or "time")
    source = meta.get("source", "the file")
    n_valid = int(np.count_nonzero(status == 0))
    if n == 0:
        raise MeasureError(f"no configs in {source}: the file records no measurements")
    if n_valid == 0:
        failures = meta.get("failures") or {}
        raise MeasureError(
            f"no valid (finite) objective values in {source}: all {n} configs failed "
            f"(failure reasons: {failures})")
    if objective not in values:
        raise ValueError(f"objective must be one of the file's metrics {columns}, "
                         f"got objective={objective!r} for {source}")
    if not np.isfinite(values[objective]).any():
        raise MeasureError(
            f"no valid (finite) objective values in {source}: none of the {n_valid} valid "
            f"configs records objective={objective!r}")
    meta["objective"] = objective
    meta["n_configs"] = n
    meta["n_valid"] = int(np.count_nonzero(status == 0))
    meta["n_failed"] = n - meta["n_valid"]
    meta["metrics"] = columns
    meta["space"] = {"name": space.name, **_space_signature(space)}
    return RecordedSpace(space, GroundTruth(values, status, meta), meta)


def _load_kt(data: Mapping[str, Any], meta: dict[str, Any],
             objective: str | None) -> RecordedSpace:
    src = meta["source"]
    tune_params = data["tune_params"]
    if not isinstance(tune_params, Mapping) or not all(
            isinstance(v, list) for v in tune_params.values()):
        raise MeasureError(f"{src}: a Kernel Tuner cache's 'tune_params' must map each "
                           f"parameter to a list of values, got {_short(tune_params)}")
    cache = data["cache"]
    if not isinstance(cache, Mapping):
        raise MeasureError(f"{src}: a Kernel Tuner cache's 'cache' must be an object "
                           f"(config key -> record), got a {type(cache).__name__}")
    names = list(data.get("tune_params_keys") or tune_params)
    missing = [n for n in names if n not in tune_params]
    if missing:
        raise MeasureError(f"tune_params_keys names {missing} that tune_params lacks")
    domains = {n: list(tune_params[n]) for n in names}
    file_objective = str(data.get("objective") or "time")
    meta.update(format="kernel_tuner", device_name=data.get("device_name"),
                kernel_name=data.get("kernel_name"), problem_size=data.get("problem_size"),
                objective=file_objective, schema_version=data.get("schema_version"),
                tune_params_keys=names, tune_params=domains)
    configs: list[dict[str, Any]] = []
    valid: list[bool] = []
    metrics: list[dict[str, float]] = []
    failures: dict[str, int] = {}
    for key, rec in cache.items():
        if not isinstance(rec, Mapping):
            raise MeasureError(f"{src}: cache record {key!r} must be an object, "
                               f"got {_short(rec)}")
        if all(n in rec for n in names):
            raw = [rec[n] for n in names]
        else:
            raw = str(key).split(",")
            if len(raw) != len(names):
                raise MeasureError(f"cache key {key!r} has {len(raw)} values, expected "
                                   f"{len(names)} ({','.join(names)})")
        configs.append({n: _match_value(n, v, domains[n]) for n, v in zip(names, raw)})
        t = rec.get(file_objective)
        ok = _is_valid_time(t)
        valid.append(ok)
        if not ok:
            reason = _failure_reason(t)
            failures[reason] = failures.get(reason, 0) + 1
        m: dict[str, float] = {}
        for k, v in rec.items():
            if k in names or k in _SKIP_FIELDS:
                continue
            x = _as_number(v)
            if x is not None and math.isfinite(x):
                m[k] = x
        metrics.append(m)
    if cache and not any(file_objective in rec for rec in cache.values()):
        fields = sorted({k for rec in cache.values() for k in rec
                         if k not in names and k not in _SKIP_FIELDS})
        raise MeasureError(f"{src}: the file's objective {file_objective!r} is not a field of "
                           f"any cache record (fields: {fields})")
    meta["failures"] = failures
    return _build(names, domains, configs, valid, metrics, meta, objective)


def _load_t4(data: Mapping[str, Any], meta: dict[str, Any],
             objective: str | None) -> RecordedSpace:
    results = data["results"]
    if not results:
        raise MeasureError("the T4 file has no results")
    names = list(results[0]["configuration"])
    domains_raw: dict[str, list[Any]] = {n: [] for n in names}
    configs: list[dict[str, Any]] = []
    valid: list[bool] = []
    metrics: list[dict[str, float]] = []
    failures: dict[str, int] = {}
    objectives: list[str] = []
    for res in results:
        conf = res["configuration"]
        if list(conf) != names and set(conf) != set(names):
            raise MeasureError(f"T4 configurations name different knobs: {sorted(conf)} "
                               f"vs {sorted(names)}")
        for n in names:
            v = conf[n]
            if not any(type(v) is type(u) and v == u for u in domains_raw[n]):
                domains_raw[n].append(v)
        configs.append(dict(conf))
        if not objectives:
            objectives = list(res.get("objectives") or ["time"])
        m: dict[str, float] = {}
        raw_meas: dict[str, Any] = {}
        for entry in res.get("measurements", []):
            raw_meas[str(entry["name"])] = entry.get("value")
            x = _as_number(entry.get("value"))
            if x is not None and math.isfinite(x):
                m[str(entry["name"])] = x
        for k, v in (res.get("times") or {}).items():
            x = _as_number(v)
            if k in _T4_TIME_FIELDS and x is not None and math.isfinite(x):
                m[_T4_TIME_FIELDS[k]] = x
        obj = objectives[0]
        invalidity = res.get("invalidity", "correct")
        ok = invalidity == "correct" and _is_valid_time(raw_meas.get(obj))
        valid.append(ok)
        if not ok:
            reason = str(invalidity) if invalidity != "correct" else _failure_reason(
                raw_meas.get(obj))
            failures[reason] = failures.get(reason, 0) + 1
        metrics.append(m)
    domains = {n: sorted(vs, key=_sort_key) for n, vs in domains_raw.items()}
    md = data.get("metadata") or {}
    meta.update(format="t4", device_name=md.get("device_name") or md.get("device"),
                kernel_name=md.get("kernel_name") or md.get("kernel"),
                problem_size=md.get("problem_size"),
                objective=objectives[0] if objectives else "time",
                schema_version=data.get("schema_version"), time_unit_in_file=md.get("timeunit"),
                tune_params_keys=names, tune_params=domains, failures=failures)
    configs = [{n: _match_value(n, c[n], domains[n]) for n in names} for c in configs]
    return _build(names, domains, configs, valid, metrics, meta, objective)


def load_kernel_tuner(path: str | os.PathLike[str], objective: str | None = None) -> RecordedSpace:
    """Load a Kernel Tuner cache file or a T4 results file as a recorded space.

    Both formats may be gzip-compressed or plain JSON; the gzip magic bytes
    decide. A Kernel Tuner cache is an object with ``tune_params_keys``,
    ``tune_params`` and ``cache`` (config key -> record); the knobs are
    ``tune_params`` in ``tune_params_keys`` order. A T4 file is an object
    with a ``results`` list; the knobs and their value domains (sorted) come
    from the ``configuration`` objects. In both, the valid configs of the
    space are exactly the configs present in the file: a config the file
    lacks violated the tuner's constraints and was never run.

    A config is failed when its objective is not a number (Kernel Tuner's
    ``"CompilationFailedConfig"``, ``"RuntimeFailedConfig"``,
    ``"InvalidConfig"``), is not finite, is zero or negative (failure reason
    ``"non-positive time"``), or is at least ``1e20`` (the old failure
    marker), or when a T4 ``invalidity`` is not ``"correct"``.

    Parameters
    ----------
    path : path-like
        The ``.json`` or ``.json.gz`` file.
    objective : str, optional
        Metric to minimise by default; default the file's ``objective``
        (``"time"``, in ms).

    Returns
    -------
    RecordedSpace
        ``space``, ``truth`` (metrics in the file's units: ms for times),
        ``meta``, and :meth:`RecordedSpace.measurer` for replay.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    MeasureError
        If the file is a truncated or corrupt gzip, is not UTF-8 JSON, is
        neither format or malformed (e.g. ``cache`` not an object), records
        no configs, has no config with a valid (finite, positive) objective,
        names an ``objective`` that no cache record has, lists a parameter
        value twice in ``tune_params``, or a record names a value outside its
        parameter's ``tune_params``. The message names the file.
    ValueError
        If ``objective`` is not one of the file's numeric fields.

    References
    ----------
    van Werkhoven, "Kernel Tuner: A search-optimizing GPU code
    auto-tuner", FGCS 90 (2019), cache files in its simulation mode.
    Tørring et al., "FAIR Sharing of Data in Autotuning Research" (the T4
    format), ICPE 2024 companion, doi:10.1145/3629527.3651429.

    Examples
    --------
    >>> rec = load_kernel_tuner("tests/data/pnpoly__RTX_3090.json.gz")  # doctest: +SKIP
    >>> len(rec.space), rec.meta["n_valid"], round(rec.truth.optimum("time"), 4)
    (4092, 3774, 8.7142)
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no such Kernel Tuner cache file: {p}")
    data = _read_json(p)
    meta: dict[str, Any] = {"source": str(p), "time_unit": "ms"}
    loader = None
    if isinstance(data, Mapping) and "cache" in data and "tune_params" in data:
        loader, fmt = _load_kt, "Kernel Tuner cache"
    elif isinstance(data, Mapping) and isinstance(data.get("results"), list):
        loader, fmt = _load_t4, "T4 results file"
    if loader is not None:
        try:
            return loader(data, meta, objective)
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            raise MeasureError(f"{p} is not a well-formed {fmt}: {type(exc).__name__}: "
                               f"{exc}") from None
        except MeasureError as exc:
            if str(p) in str(exc):
                raise
            raise MeasureError(f"{p}: {exc}") from None
    got = (f"a JSON object with keys {sorted(data)[:12]}" if isinstance(data, Mapping)
           else f"a JSON {type(data).__name__}")
    raise MeasureError(
        f"{p} is neither a Kernel Tuner cache (needs 'tune_params' and 'cache') nor a T4 "
        f"file (needs a 'results' list); got {got}")
