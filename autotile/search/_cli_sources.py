"""What ``autotile compare`` replays: the shipped GEMM table, ``sweep`` tables, Kernel Tuner files.

Each source becomes a :class:`Source`: a space, a replay measurer, the
objective, a default budget and the labels its report carries (a short name,
the objective's unit, the file, the device).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Source", "UsageError", "gemm64", "gemm1024", "sweep_table", "kernel_tuner",
           "SHIPPED_GEMM", "DEFAULT_GEMM_BUDGET", "DEFAULT_LIVE_BUDGET"]

#: Trials per run on a GEMM schedule table when ``--budget`` is not given.
DEFAULT_GEMM_BUDGET = 500
#: Trials per run on the live n = 1024 GEMM space when ``--budget`` is not given.
DEFAULT_LIVE_BUDGET = 200
#: The shipped table of the 246,960-schedule GEMM space.
SHIPPED_GEMM = Path(__file__).resolve().parents[1] / "data" / "gemm64_truth.npz"
# units of the GEMM schedule tables' metrics (the other metrics are counts: their name)
_GEMM_UNITS = {"est_cycles": "cycles"}


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit code 2."""


@dataclass
class Source:
    """One table to compare searchers on.

    Attributes
    ----------
    name : str
        Short label (``gemm64``, a file's stem): names the report's folder,
        the stored studies and the summary's row.
    space, measurer : Space, ReplayMeasurer
        The space and the table's replay.
    objective : str
        The metric compared.
    budget : int or None
        Default trials per run (None: the methodology's budget).
    meta : dict
        ``space`` (``name``), ``unit``, ``source`` (the file), ``device``.
    sample : autotile.measure.SampledTruth or None
        For a space measured live: the sampled table whose best known value
        scores the curves (``None``: the measurer replays a complete table).
    """

    name: str
    space: Any
    measurer: Any
    objective: str
    budget: int | None
    meta: dict[str, Any] = field(default_factory=dict)
    sample: Any = None


def _check_objective(objective: str, metrics: tuple[str, ...], where: str) -> None:
    if objective not in metrics:
        raise UsageError(f"unknown objective {objective!r} for {where}; choose from "
                         f"{', '.join(metrics)}")


def _gemm(truth: Any, space: Any, objective: str | None, name: str, source: str) -> Source:
    from autotile.measure import ReplayMeasurer

    objective = objective or "misses"
    _check_objective(objective, tuple(truth.metrics), name)
    return Source(name, space, ReplayMeasurer(space, truth, objective), objective,
                  DEFAULT_GEMM_BUDGET,
                  {"space": name, "unit": _GEMM_UNITS.get(objective), "source": source,
                   "device": "cache simulator (8 KB, 4-way, 64 B lines)"
                   if truth.meta.get("measurer") == "ScheduleMeasurer" else None})


def gemm64(objective: str | None) -> Source:
    """The 246,960-schedule GEMM space, replayed from its shipped table."""
    from autotile.measure import GroundTruth
    from autotile.space import gemm_space

    if not SHIPPED_GEMM.is_file():
        raise UsageError(f"the GEMM ground-truth table {SHIPPED_GEMM} is missing; reinstall "
                         "autotile or pass --kernel-tuner PATH")
    truth = GroundTruth.load(SHIPPED_GEMM)
    return _gemm(truth, gemm_space(64), objective, "gemm64",
                 "the shipped table autotile/data/gemm64_truth.npz")


def gemm1024(objective: str | None) -> Source:
    """The 958,320-schedule GEMM space at n = 1024, measured live.

    Each trial runs :class:`~autotile.measure.ScheduleMeasurer` (the exact fast
    path); the curves are scored against the shipped sampled table's best known
    value, not a proven optimum.
    """
    from autotile.measure import SCHEDULE_METRICS, ScheduleMeasurer, gemm_sampled_truth
    from autotile.space import gemm_space

    objective = objective or "misses"
    _check_objective(objective, SCHEDULE_METRICS, "gemm1024")
    space = gemm_space(1024)
    measurer = ScheduleMeasurer(space, objective=objective)
    return Source("gemm1024", space, measurer, objective, DEFAULT_LIVE_BUDGET,
                  {"space": "gemm1024", "unit": _GEMM_UNITS.get(objective),
                   "source": "measured live, scored against autotile/data/gemm1024_sample.npz",
                   "live": True,  # the source is said as is, not "replayed from ..."
                   "device": _cache_text(measurer.settings())},
                  sample=gemm_sampled_truth(1024))


def _cache_text(settings: dict[str, Any]) -> str | None:
    cache = settings.get("cache") or {}
    try:
        return (f"cache simulator ({int(cache['size_bytes']) // 1024} KB, {cache['ways']}-way, "
                f"{cache['line_bytes']} B lines)")
    except (KeyError, TypeError, ValueError):
        return None


def sweep_table(path: str, objective: str | None) -> Source:
    """A table written by ``autotile sweep`` (a GEMM schedule space of any ``--n``)."""
    from autotile.measure import GroundTruth
    from autotile.space import gemm_space

    p = Path(path)
    if not p.is_file():
        raise UsageError(f"no such file: {path}")
    try:
        truth = GroundTruth.load(p)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is one usage error
        try:
            with open(p, "rb") as f:
                head = f.read(2)
        except OSError:  # unreadable: the message above says why, no hint
            head = b""
        kt = (head[:1] in (b"{", b"[") or head == b"\x1f\x8b") and not path.endswith(".npz")
        raise UsageError(f"{path} is not a table written by `autotile sweep` "
                         f"({type(exc).__name__}: {exc})"
                         + ("; a Kernel Tuner cache or T4 file (JSON, or gzip) goes to "
                            "--kernel-tuner" if kt else "")) from None
    settings = truth.meta.get("measurer_settings") or {}
    n = settings.get("n")
    if truth.meta.get("measurer") != "ScheduleMeasurer" or not isinstance(n, int):
        raise UsageError(
            f"--table replays tables written by `autotile sweep` (GEMM schedule spaces); "
            f"{path} records measurer {truth.meta.get('measurer')!r} and no GEMM size n")
    space = gemm_space(n)
    if len(truth) != len(space):
        raise UsageError(
            f"{path} holds {len(truth):,} rows but gemm_space({n}) has {len(space):,} configs "
            f"(a sweep with --limit?); compare needs a complete table")
    recorded = (truth.meta.get("fingerprint") or {}).get("space") or {}
    knobs = [k.get("name") for k in recorded.get("knobs") or []]
    if knobs and knobs != list(space.names):
        raise UsageError(f"{path} was swept over knobs {knobs}, gemm_space({n}) has "
                         f"{list(space.names)}; sweep it again with this autotile")
    src = _gemm(truth, space, objective, p.name.removesuffix(".npz"), str(path))
    src.meta["device"] = _cache_text(settings)
    return src


def _kt_unit(metric: str, meta: dict[str, Any]) -> str | None:
    """The unit of a Kernel Tuner metric: times in ``time_unit`` (ms); rates are their name."""
    if metric == "time" or metric.endswith("_time"):
        return str(meta.get("time_unit") or "ms")
    return None


def _device(meta: dict[str, Any], path: Path) -> str:
    if meta.get("device_name"):
        return str(meta["device_name"])
    parts = [p for p in path.name.split(".")[0].split("__")[1:] if p != "T4"]
    if parts:  # the tuning-caches convention: <kernel>__<device>[__T4]
        return f"{' '.join(parts)} (from the file name; the file records no device)"
    return "not recorded in the file"


def kernel_tuner(path: str, objective: str | None) -> Source:
    """A Kernel Tuner cache or T4 file (``.json`` or ``.json.gz``)."""
    from autotile.errors import MeasureError
    from autotile.measure._kernel_tuner import load_kernel_tuner

    try:
        rec = load_kernel_tuner(path)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except MeasureError as exc:
        raise UsageError(str(exc)) from None
    objective = objective or rec.objective
    _check_objective(objective, tuple(rec.truth.metrics), path)
    p = Path(path)
    name = re.sub(r"\.json(\.gz)?$", "", p.name)
    meta = {"space": name, "unit": _kt_unit(objective, rec.meta), "source": str(path),
            "device": _device(rec.meta, p), "kernel": rec.meta.get("kernel_name")}
    if rec.meta.get("kernel_name"):
        meta["space"] = f"{name} ({rec.meta['kernel_name']})"
    return Source(name, rec.space, rec.measurer(objective), objective, None, meta)
