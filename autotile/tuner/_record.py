"""``TuningRecord``: what happened to one candidate during a tuning."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autotile.errors import InvalidConfigError
from autotile.tuner._config import LaunchConfig

__all__ = ["TuningRecord", "RECORD_STATUSES"]

#: ``"ok"``: correct and scored; ``"infeasible"``: the scorer says it cannot
#: launch; ``"failed"``: the scorer or the interpreter raised; ``"wrong"``:
#: ran but its output differs from the expected one; ``"pruned"``: dropped by
#: ``prune_configs_by`` before scoring.
RECORD_STATUSES = ("ok", "infeasible", "failed", "wrong", "pruned")


@dataclass(frozen=True)
class TuningRecord:
    """One candidate of one tuning.

    Attributes
    ----------
    config : LaunchConfig
        The candidate.
    status : {"ok", "infeasible", "failed", "wrong", "pruned"}
        See :data:`RECORD_STATUSES`.
    time_s : float
        Scored kernel time at the real shape in seconds; ``inf`` unless
        ``status == "ok"``.
    reason : str or None
        Why the candidate was skipped (None when ``"ok"``).
    metrics : mapping of str to float
        Every metric the scorer returned.
    """

    config: LaunchConfig
    status: str
    time_s: float = math.inf
    reason: str | None = None
    metrics: Mapping[str, float] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.status not in RECORD_STATUSES:
            raise InvalidConfigError(
                f"status must be one of {RECORD_STATUSES}, got status={self.status!r}")
        if self.status != "ok":
            object.__setattr__(self, "time_s", math.inf)
        object.__setattr__(self, "metrics", dict(self.metrics))

    def __hash__(self) -> int:
        return hash((self.config, self.status, self.time_s, self.reason))

    def describe(self) -> str:
        """Return one line: the config, then its time or why it was skipped."""
        if self.status == "ok":
            return f"{self.config} -> ok, time_s={self.time_s:.4g}"
        return f"{self.config} -> {self.status}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-able dict (``time_s`` is None when infinite)."""
        return {"config": str(self.config), "status": self.status,
                "time_s": None if math.isinf(self.time_s) else self.time_s,
                "reason": self.reason}
