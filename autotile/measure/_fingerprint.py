"""Canonical JSON of a measurer's settings, their fingerprint and their differences.

Shared by :meth:`Measurer.fingerprint <autotile.measure.Measurer.fingerprint>`
(studies refuse to resume with another measurer), :func:`autotile.measure.sweep`
(tables refuse to resume with other settings) and the ``@autotune`` disk cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import numpy as np

__all__ = ["jsonable", "canonical", "digest_of", "differences"]


def jsonable(value: Any) -> Any:
    """``value`` as JSON data if it is plain data (or has ``to_json``/is a dataclass), else None."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        items = [jsonable(v) for v in value]
        return None if any(i is None and v is not None for i, v in zip(items, value)) else items
    if isinstance(value, dict):
        out = {str(k): jsonable(v) for k, v in value.items()}
        return None if any(out[str(k)] is None and v is not None
                           for k, v in value.items()) else out
    if hasattr(value, "to_json"):
        d = value.to_json()
        return json.loads(d) if isinstance(d, str) else jsonable(d)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    return None


def canonical(obj: Any) -> str:
    """Canonical JSON text of ``obj`` (sorted keys, no spaces)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def digest_of(obj: Any) -> str:
    """First 16 hex digits of the SHA-256 of :func:`canonical` ``(obj)``."""
    return hashlib.sha256(canonical(obj).encode()).hexdigest()[:16]


def _short(obj: Any, limit: int = 120) -> str:
    text = canonical(obj)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """``"path: old (then) vs new (now)"`` for each leaf where two JSON values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for k in sorted(set(old) | set(new), key=str):
            name = f"{prefix}.{k}" if prefix else str(k)
            if k not in old:
                out.append(f"{name}: missing (then) vs {_short(new[k])} (now)")
            elif k not in new:
                out.append(f"{name}: {_short(old[k])} (then) vs missing (now)")
            else:
                out.extend(differences(old[k], new[k], name))
        return out
    if (isinstance(old, list) and isinstance(new, list) and len(old) == len(new)
            and canonical(old) != canonical(new)):
        return [d for i, (o, n) in enumerate(zip(old, new))
                for d in differences(o, n, f"{prefix}[{i}]")]
    if canonical(old) == canonical(new):
        return []
    return [f"{prefix}: {_short(old)} (then) vs {_short(new)} (now)"]
