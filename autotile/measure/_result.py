"""The record a measurement returns, and the measurer contract."""

from __future__ import annotations

import abc
import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from autotile.measure._fingerprint import digest_of, jsonable

__all__ = ["MeasureResult", "Measurer", "STATUSES"]

STATUSES = ("ok", "failed", "infeasible")
Status = Literal["ok", "failed", "infeasible"]


@dataclass(frozen=True)
class MeasureResult:
    """One measured config.

    Attributes
    ----------
    config : str
        The config's stable text form (``str(Config)``).
    status : {"ok", "failed", "infeasible"}
        ``"ok"``: metrics are valid. ``"infeasible"``: the config cannot run
        (violates a constraint or a resource limit); ``error`` says why.
        ``"failed"``: measuring raised; ``error`` holds the message.
    metrics : mapping of str to float
        Named metrics (units in the names or in the measurer's docs). Empty
        unless ``status == "ok"``.
    wall_time_s : float
        Wall-clock seconds the measurement took.
    error : str or None
        Why the config is not ``"ok"``.
    """

    config: str
    status: Status
    metrics: Mapping[str, float] = field(default_factory=dict)
    wall_time_s: float = 0.0
    error: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got status={self.status!r}")
        object.__setattr__(self, "metrics", dict(self.metrics))

    def __hash__(self) -> int:
        return hash((self.config, self.status, tuple(sorted(self.metrics.items())), self.error))

    @property
    def ok(self) -> bool:
        """Whether the metrics are valid."""
        return self.status == "ok"

    def value(self, metric: str) -> float:
        """Return ``metrics[metric]``, or ``inf`` when the config is not ``"ok"``.

        Raises
        ------
        KeyError
            If an ``"ok"`` result has no such metric.
        """
        if not self.ok:
            return math.inf
        if metric not in self.metrics:
            raise KeyError(f"unknown metric {metric!r}; this result has {sorted(self.metrics)}")
        return self.metrics[metric]

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-able dict; ``MeasureResult.from_json`` inverts it."""
        return {"config": self.config, "status": self.status, "metrics": dict(self.metrics),
                "wall_time_s": self.wall_time_s, "error": self.error}

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | str) -> MeasureResult:
        """Rebuild a result from :meth:`to_json` output (a dict or its JSON text)."""
        if isinstance(d, str):
            d = json.loads(d)
        assert isinstance(d, Mapping)
        return cls(str(d["config"]), d["status"], dict(d.get("metrics", {})),
                   float(d.get("wall_time_s", 0.0)), d.get("error"))


def _short_repr(obj: Any, limit: int = 60) -> str:
    text = repr(obj)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class Measurer(abc.ABC):
    """Scores configs of one space.

    Subclasses set :attr:`metrics` (names of the metrics every ``"ok"`` result
    carries), :attr:`objective` (the default metric to minimise) and implement
    :meth:`_measure`. :meth:`measure` wraps it: it times the call and turns any
    exception into a ``"failed"`` result, so a bad config never stops a study.
    """

    #: Names of the metrics an ``"ok"`` result carries.
    metrics: tuple[str, ...] = ()
    #: The metric minimised by default.
    objective: str = ""

    @abc.abstractmethod
    def _measure(self, config: Any) -> MeasureResult:
        """Measure one config; may raise."""

    def settings(self) -> dict[str, Any]:
        """Everything besides the space that changes the numbers this measurer returns.

        A study records it (with :meth:`fingerprint`) when it is created and
        refuses to resume with a measurer whose settings differ, and
        :func:`autotile.measure.sweep` refuses to resume a table made with
        other settings. Subclasses whose results depend on constructor
        arguments (a hardware profile, a cache, model parameters, a problem
        shape, a table) override it; list only values fixed at construction,
        never counters or caches that change while measuring.

        Returns
        -------
        dict
            JSON-able settings (numbers, strings, lists, dicts; values with
            ``to_json`` or dataclasses are converted). The default lists
            none, so only the measurer's class is checked.
        """
        return {}

    def fingerprint(self) -> str:
        """Stable digest of the measurer's class and :meth:`settings`.

        Returns
        -------
        str
            16 hex digits of the SHA-256 of the canonical JSON of
            ``{"measurer": class name, "settings": settings()}``; equal for two
            measurers that return the same numbers for every config.

        Raises
        ------
        TypeError
            If :meth:`settings` does not return a JSON-able dict.
        """
        return digest_of(self.identity())

    def identity(self) -> dict[str, Any]:
        """``{"measurer": class name, "settings": settings()}`` as JSON data.

        Raises
        ------
        TypeError
            If :meth:`settings` does not return a JSON-able dict.
        """
        raw = self.settings()
        out = jsonable(raw)
        if not isinstance(raw, Mapping) or not isinstance(out, dict):
            raise TypeError(
                f"{type(self).__name__}.settings() must return a JSON-able dict, got "
                f"{type(raw).__name__} {_short_repr(raw)}")
        return {"measurer": type(self).__name__, "settings": out}

    def config_text(self, config: Any) -> str:
        """Stable text form of a config (``str(config)``)."""
        return str(config)

    def measure(self, config: Any) -> MeasureResult:
        """Measure one config and never raise.

        Parameters
        ----------
        config : Config or mapping
            A config of this measurer's space.

        Returns
        -------
        MeasureResult
            ``"failed"`` with the error message if measuring raised or
            ``_measure`` returned something that is not a ``MeasureResult``.
        """
        t0 = time.perf_counter()
        try:
            res = self._measure(config)
        except Exception as exc:  # noqa: BLE001 - a failed config is data, not a crash
            return MeasureResult(self.config_text(config), "failed", {},
                                 time.perf_counter() - t0, f"{type(exc).__name__}: {exc}")
        if not isinstance(res, MeasureResult):
            return MeasureResult(
                self.config_text(config), "failed", {}, time.perf_counter() - t0,
                f"{type(self).__name__}._measure must return a MeasureResult, "
                f"got {type(res).__name__} {_short_repr(res)}")
        if res.wall_time_s == 0.0:
            object.__setattr__(res, "wall_time_s", time.perf_counter() - t0)
        return res

    def measure_batch(self, configs: Iterable[Any], n_jobs: int = 1) -> list[MeasureResult]:
        """Measure several configs, in parallel with joblib when ``n_jobs != 1``.

        Parameters
        ----------
        configs : iterable of Config
        n_jobs : int, default=1
            joblib's ``n_jobs`` (``-1``: all cores); a positive value is
            capped at ``len(configs)`` (no idle worker processes are started).

        Returns
        -------
        list of MeasureResult
            In the order of ``configs``.
        """
        configs = list(configs)
        if n_jobs > len(configs):
            n_jobs = len(configs)
        if n_jobs == 1 or len(configs) <= 1:
            return [self.measure(c) for c in configs]
        from joblib import Parallel, delayed

        out: Sequence[MeasureResult] = Parallel(n_jobs=n_jobs)(
            delayed(self.measure)(c) for c in configs)
        return list(out)
