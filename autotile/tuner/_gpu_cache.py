"""The GPU tuner's disk cache: one record per measured config, per kernel, key, GPU and Triton.

Unlike the model path's cache (one winner per candidate list), an entry here
is keyed without the candidates: it maps each config's text to its record
(status, time, reason, metrics), so a later tuning with more configs reuses
every one measured before and measures only the new ones. One more entry per
kernel, GPU and Triton version (no tuning key) keeps the model prior's measured
seconds per prediction (:meth:`ConfigRecordCache.load_prior_cost`). The file
layout is that of :class:`~autotile.tuner.DiskCache`.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autotile.tuner._config import LaunchConfig
from autotile.tuner._disk_cache import DiskCache, default_cache_dir, digest
from autotile.tuner._record import TuningRecord

__all__ = ["ConfigRecordCache", "record_to_json", "record_from_json"]


def record_to_json(r: TuningRecord) -> dict[str, Any]:
    """A record as JSON: config, status, ``time_s`` (None when infinite), reason, metrics."""
    return {"config": json.loads(r.config.to_json()), "status": r.status,
            "time_s": None if math.isinf(r.time_s) else r.time_s, "reason": r.reason,
            "metrics": {k: float(v) for k, v in r.metrics.items()}}


def record_from_json(config: LaunchConfig, d: Mapping[str, Any]) -> TuningRecord:
    """The record of ``config`` from :func:`record_to_json`'s dict, marked ``from_cache=1``."""
    t = d.get("time_s")
    metrics = {**dict(d.get("metrics") or {}), "from_cache": 1.0}
    return TuningRecord(config, str(d["status"]), math.inf if t is None else float(t),
                        d.get("reason"), metrics)


class ConfigRecordCache:
    """Per-config records of one kernel on one GPU and Triton version, per tuning key.

    Parameters
    ----------
    kernel_name : str
        Names the files.
    source_hash : str
        SHA-256 of the kernel source.
    device_name, version : str
        The GPU and the Triton version (part of the key).
    settings : str
        Everything else that changes a record (the check's settings).
    directory : str or path or None
        Cache directory; default :func:`~autotile.tuner.default_cache_dir`.
    enabled : bool, default=True
        False: :meth:`load` finds nothing and :meth:`store` writes nothing.
    """

    def __init__(self, kernel_name: str, source_hash: str, device_name: str, version: str,
                 settings: str, directory: Any = None, enabled: bool = True) -> None:
        self.kernel_name = kernel_name
        self.parts = (source_hash, f"device:{device_name}", f"triton:{version}", settings)
        self.device_name, self.version = device_name, version
        self.disk = (DiskCache(Path(directory) if directory is not None else default_cache_dir())
                     if enabled else None)

    def digest(self, key: tuple[Any, ...]) -> str:
        """The file digest of a tuning key."""
        return digest("gpu-per-config-v1", self.parts[0], repr(key), *self.parts[1:])

    def load(self, key: tuple[Any, ...]) -> dict[str, dict[str, Any]]:
        """Config text -> :func:`record_to_json` dict of every config stored for ``key``."""
        if self.disk is None:
            return {}
        entry = self.disk.load(self.kernel_name, self.digest(key))
        configs = (entry or {}).get("configs")
        return dict(configs) if isinstance(configs, dict) else {}

    def store(self, key: tuple[Any, ...], records: Sequence[TuningRecord]) -> None:
        """Add the measured records (not pruned, not reused, no ``pre_hook``) to ``key``'s file.

        A file that cannot be written gives a ``RuntimeWarning`` naming it.
        """
        if self.disk is None:
            return
        fresh = {str(r.config): record_to_json(r) for r in records
                 if r.status != "pruned" and r.config.pre_hook is None
                 and not r.metrics.get("from_cache")}
        if not fresh:
            return
        dig = self.digest(key)
        entry = {"kernel": self.kernel_name, "key": [repr(k) for k in key],
                 "device": self.device_name, "triton": self.version,
                 "configs": {**self.load(key), **fresh}}
        try:
            self.disk.store(self.kernel_name, dig, entry)
        except OSError as exc:
            warnings.warn(f"autotune of {self.kernel_name!r}: could not write the disk cache "
                          f"file {str(self.disk.path(self.kernel_name, dig))!r}: {exc}; the "
                          f"tuning is kept in memory only", RuntimeWarning, stacklevel=4)

    def prior_digest(self, model_tag: str) -> str:
        """The file digest of the prior's cost: kernel source, model, GPU and Triton."""
        return digest("gpu-prior-cost-v1", self.parts[0], model_tag, *self.parts[1:3])

    def load_prior_cost(self, model_tag: str) -> float | None:
        """Seconds per prediction of the model ``model_tag`` measured by an earlier tuning.

        Parameters
        ----------
        model_tag : str
            Which prior (the default model, or a user's scorer by name).

        Returns
        -------
        float or None
            None when the cache is off, or holds no finite value >= 0.
        """
        if self.disk is None:
            return None
        entry = self.disk.load(self.kernel_name, self.prior_digest(model_tag))
        v = (entry or {}).get("s_per_prediction")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                math.isfinite(v) and v >= 0):
            return None
        return float(v)

    def store_prior_cost(self, model_tag: str, s_per_prediction: float) -> None:
        """Keep the prior's measured seconds per prediction for later processes.

        Read back by :meth:`load_prior_cost`; nothing is kept when the cache is off.

        Parameters
        ----------
        model_tag : str
            Which prior (the default model, or a user's scorer by name).
        s_per_prediction : float
            Wall seconds one prediction took (the latest of a ranking).

        Warns
        -----
        RuntimeWarning
            If the cache file cannot be written (it names the file).
        """
        if self.disk is None:
            return
        dig = self.prior_digest(model_tag)
        entry = {"kernel": self.kernel_name, "model": model_tag, "device": self.device_name,
                 "triton": self.version, "s_per_prediction": float(s_per_prediction)}
        try:
            self.disk.store(self.kernel_name, dig, entry)
        except OSError as exc:
            warnings.warn(f"autotune of {self.kernel_name!r}: could not write the disk cache "
                          f"file {str(self.disk.path(self.kernel_name, dig))!r}: {exc}",
                          RuntimeWarning, stacklevel=4)
