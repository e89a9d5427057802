"""Trace-driven LRU cache simulation: set-associative, fully associative, miss classes.

Two paths compute the same numbers:

* :func:`simulate_cache_reference` is plain Python, short enough to read in a
  minute, and is the definition the fast path is tested against;
* :func:`simulate_cache` runs the same algorithm compiled with numba.

References
----------
Hennessy & Patterson, *Computer Architecture: A Quantitative Approach*, 6th ed.,
Appendix B.1-B.3 (set-associative placement, LRU replacement, the "three Cs"
miss classification: compulsory, capacity, conflict).
Hill & Smith, "Evaluating Associativity in CPU Caches", IEEE Trans. Computers
38(12), 1989 (conflict misses = misses of the set-associative cache minus misses
of a fully associative LRU cache of the same capacity).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from autotile.errors import MeasureError

__all__ = [
    "CacheConfig",
    "CacheStats",
    "MissBreakdown",
    "simulate_cache",
    "simulate_cache_reference",
    "classify_misses",
]


def _is_pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


@dataclass(frozen=True)
class CacheConfig:
    """Geometry of an LRU cache.

    Parameters
    ----------
    size_bytes : int, default=8192
        Capacity in bytes.
    ways : int, default=4
        Associativity (lines per set). ``ways == size_bytes // line_bytes``
        is a fully associative cache.
    line_bytes : int, default=64
        Line (block) size in bytes; a power of two.

    Raises
    ------
    ValueError
        If a field is not a positive int, ``line_bytes`` is not a power of two,
        or ``size_bytes`` is not a multiple of ``line_bytes * ways``.

    Notes
    -----
    The defaults are the lecture notes' model (8 KB, 4-way, 64-byte lines:
    32 sets). Set index = ``line % n_sets`` (Hennessy & Patterson, App. B.1).
    """

    size_bytes: int = 8192
    ways: int = 4
    line_bytes: int = 64

    def __post_init__(self) -> None:
        for name in ("size_bytes", "ways", "line_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
                raise ValueError(f"{name} must be a positive int, got {name}={v!r}")
        if not _is_pow2(int(self.line_bytes)):
            raise ValueError(
                f"line_bytes must be a power of two, got line_bytes={self.line_bytes}"
            )
        if self.size_bytes % (self.line_bytes * self.ways):
            raise ValueError(
                "size_bytes must be a multiple of line_bytes * ways, got "
                f"size_bytes={self.size_bytes}, line_bytes={self.line_bytes}, ways={self.ways}"
            )

    @property
    def n_lines(self) -> int:
        """Number of lines the cache holds."""
        return self.size_bytes // self.line_bytes

    @property
    def n_sets(self) -> int:
        """Number of sets (1 for a fully associative cache)."""
        return self.n_lines // self.ways

    @property
    def fully_associative(self) -> bool:
        """Whether the cache has a single set."""
        return self.n_sets == 1

    def as_fully_associative(self) -> CacheConfig:
        """Return the fully associative cache of the same capacity and line size."""
        return CacheConfig(self.size_bytes, self.n_lines, self.line_bytes)

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-able dict (inverse of ``CacheConfig(**d)``)."""
        return asdict(self)


@dataclass(frozen=True)
class CacheStats:
    """Counts from replaying one trace through one cache.

    Attributes
    ----------
    n_accesses : int
        Accesses replayed.
    n_hits, n_misses : int
        ``n_hits + n_misses == n_accesses``.
    n_compulsory : int
        First-touch misses; equals ``n_lines_touched``.
    n_lines_touched : int
        Distinct lines in the trace.
    line_bytes : int
        Line size used, bytes.
    """

    n_accesses: int
    n_hits: int
    n_misses: int
    n_compulsory: int
    n_lines_touched: int
    line_bytes: int

    @property
    def traffic_bytes(self) -> int:
        """Bytes moved from the next level: ``n_misses * line_bytes``."""
        return self.n_misses * self.line_bytes

    @property
    def miss_rate(self) -> float:
        """``n_misses / n_accesses`` (0.0 for an empty trace)."""
        return self.n_misses / self.n_accesses if self.n_accesses else 0.0


@dataclass(frozen=True)
class MissBreakdown:
    """The three Cs of a set-associative cache (Hennessy & Patterson, App. B.3).

    Attributes
    ----------
    set_assoc : CacheStats
        The cache as configured.
    fully_assoc : CacheStats
        A fully associative LRU cache of the same capacity and line size.
    """

    set_assoc: CacheStats
    fully_assoc: CacheStats

    @property
    def compulsory(self) -> int:
        """First-touch misses (distinct lines)."""
        return self.set_assoc.n_compulsory

    @property
    def capacity(self) -> int:
        """Fully associative misses minus compulsory misses."""
        return self.fully_assoc.n_misses - self.fully_assoc.n_compulsory

    @property
    def conflict(self) -> int:
        """Set-associative minus fully associative misses (may be < 0: LRU is not optimal)."""
        return self.set_assoc.n_misses - self.fully_assoc.n_misses

    @property
    def total(self) -> int:
        """All set-associative misses."""
        return self.set_assoc.n_misses


def _as_trace(trace: npt.ArrayLike) -> npt.NDArray[np.int64]:
    arr = np.asarray(trace)
    if arr.ndim != 1:
        raise MeasureError(f"trace must be 1-D byte addresses, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise MeasureError(f"trace must hold integer byte addresses, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and int(arr.min()) < 0:
        raise MeasureError(f"trace holds a negative byte address: {int(arr.min())}")
    return arr


def simulate_cache_reference(trace: npt.ArrayLike, cache: CacheConfig | None = None) -> CacheStats:
    """Replay a byte-address trace through an LRU cache, in plain Python.

    This is the readable definition; :func:`simulate_cache` must agree with it
    exactly.

    Parameters
    ----------
    trace : array-like of shape (n_accesses,), integer
        Byte addresses in program order.
    cache : CacheConfig, optional
        Geometry; default 8 KB, 4-way, 64-byte lines.

    Returns
    -------
    CacheStats

    Raises
    ------
    MeasureError
        If ``trace`` is not a 1-D array of non-negative integers.
    """
    cache = cache or CacheConfig()
    addrs = _as_trace(trace)
    sets: list[list[int]] = [[] for _ in range(cache.n_sets)]  # each: LRU first, MRU last
    seen: set[int] = set()
    hits = 0
    for a in addrs.tolist():
        line = a // cache.line_bytes
        s = sets[line % cache.n_sets]
        if line in s:
            hits += 1
            s.remove(line)
        elif len(s) == cache.ways:
            s.pop(0)
        s.append(line)
        seen.add(line)
    n = len(addrs)
    return CacheStats(n, hits, n - hits, len(seen), len(seen), cache.line_bytes)


# --- LRU state updates shared by every numba path (this module and _nestsim) ---------
# Set-associative state: ``tags`` and ``stamp`` of shape (n_sets, ways); a way with
# stamp 0 is empty. Fully associative state: a doubly linked list over dense line
# ids (``prev``, ``nxt``), ``resident`` flags, and ``ends = [head (MRU), tail (LRU),
# size]``; O(1) per access.


@numba.njit(cache=True, nogil=True, inline="always")
def sa_touch(tags, stamp, s, line, clock):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Access ``line`` in set ``s`` at time ``clock`` (> 0); return whether it hit."""
    victim = 0
    oldest = stamp[s, 0]
    for w in range(tags.shape[1]):
        if tags[s, w] == line:
            stamp[s, w] = clock
            return True
        if stamp[s, w] < oldest:
            oldest = stamp[s, w]
            victim = w
    tags[s, victim] = line
    stamp[s, victim] = clock
    return False


@numba.njit(cache=True, nogil=True, inline="always")
def fa_touch(prev, nxt, resident, ends, capacity, x):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Access dense line id ``x`` in the fully associative LRU; return whether it hit."""
    head = ends[0]
    if resident[x]:
        if x == head:
            return True
        p = prev[x]
        q = nxt[x]
        nxt[p] = q
        if q >= 0:
            prev[q] = p
        else:
            ends[1] = p
        hit = True
    else:
        if ends[2] == capacity:
            v = ends[1]
            ends[1] = prev[v]
            if ends[1] >= 0:
                nxt[ends[1]] = -1
            else:
                head = -1
            resident[v] = False
            ends[2] -= 1
        resident[x] = True
        ends[2] += 1
        hit = False
    prev[x] = -1
    nxt[x] = head
    if head >= 0:
        prev[head] = x
    ends[0] = x
    if ends[1] < 0:
        ends[1] = x
    return hit


@numba.njit(cache=True, nogil=True)
def _sim_set_assoc(lines, n_sets, ways, n_ids):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Set-associative hits and distinct lines (all ``lines < n_ids``).

    Distinct lines are counted in the same loop (a ``seen`` flag per line),
    not with ``np.unique`` afterwards: that sort took 60% of the time. With
    ``n_ids == 0`` they are not counted (0 is returned).
    """
    tags = np.full((n_sets, ways), -1, np.int64)
    stamp = np.zeros((n_sets, ways), np.int64)
    seen = np.zeros(n_ids, np.bool_)
    hits = 0
    touched = 0
    for t in range(lines.shape[0]):
        x = lines[t]
        if n_ids and not seen[x]:
            seen[x] = True
            touched += 1
        if sa_touch(tags, stamp, x % n_sets, x, t + 1):
            hits += 1
    return hits, touched


@numba.njit(cache=True, nogil=True)
def _sim_fully_assoc(lines: npt.NDArray[np.int64], n_lines: int, capacity: int):  # type: ignore[no-untyped-def]  # pragma: no cover
    prev = np.full(n_lines, -1, np.int64)
    nxt = np.full(n_lines, -1, np.int64)
    resident = np.zeros(n_lines, np.bool_)
    seen = np.zeros(n_lines, np.bool_)
    ends = np.array([-1, -1, 0], np.int64)
    hits = 0
    touched = 0
    for t in range(lines.shape[0]):
        x = lines[t]
        if not seen[x]:
            seen[x] = True
            touched += 1
        if fa_touch(prev, nxt, resident, ends, capacity, x):
            hits += 1
    return hits, touched


def _dense_lines(
    addrs: npt.NDArray[np.int64], line_bytes: int
) -> tuple[npt.NDArray[np.int64], int]:
    lines = addrs // line_bytes
    if lines.size == 0:
        return lines, 0
    hi = int(lines.max()) + 1
    if hi <= 4 * lines.size + 1024:
        return lines, hi
    uniq, dense = np.unique(lines, return_inverse=True)
    return dense.astype(np.int64), int(uniq.size)


def simulate_cache(trace: npt.ArrayLike, cache: CacheConfig | None = None) -> CacheStats:
    """Replay a byte-address trace through an LRU cache (numba fast path).

    Parameters
    ----------
    trace : array-like of shape (n_accesses,), integer
        Byte addresses in program order.
    cache : CacheConfig, optional
        Geometry; default 8 KB, 4-way, 64-byte lines. A single-set geometry
        runs the O(1)-per-access fully associative algorithm.

    Returns
    -------
    CacheStats
        Exactly the counts of :func:`simulate_cache_reference`.

    Raises
    ------
    MeasureError
        If ``trace`` is not a 1-D array of non-negative integers.
    """
    cache = cache or CacheConfig()
    addrs = _as_trace(trace)
    n = int(addrs.size)
    if cache.fully_associative:
        lines, n_ids = _dense_lines(addrs, cache.line_bytes)
        if n == 0:
            return CacheStats(0, 0, 0, 0, 0, cache.line_bytes)
        hits, touched = _sim_fully_assoc(lines, n_ids, cache.n_lines)
        hits, touched = int(hits), int(touched)
    else:
        lines = addrs // cache.line_bytes
        if n == 0:
            return CacheStats(0, 0, 0, 0, 0, cache.line_bytes)
        hi = int(lines.max()) + 1
        dense = hi <= 4 * n + 1024  # a flag per line fits; else (sparse) sort once
        hits, touched = _sim_set_assoc(lines, cache.n_sets, cache.ways, hi if dense else 0)
        hits = int(hits)
        touched = int(touched) if dense else int(np.unique(lines).size)
    return CacheStats(n, hits, n - hits, touched, touched, cache.line_bytes)


def classify_misses(trace: npt.ArrayLike, cache: CacheConfig | None = None) -> MissBreakdown:
    """Split the misses of a set-associative cache into compulsory, capacity, conflict.

    Parameters
    ----------
    trace : array-like of shape (n_accesses,), integer
        Byte addresses in program order.
    cache : CacheConfig, optional
        The set-associative geometry; default 8 KB, 4-way, 64-byte lines.

    Returns
    -------
    MissBreakdown
        Compulsory = distinct lines; capacity = fully associative misses minus
        compulsory; conflict = set-associative minus fully associative misses
        (Hill & Smith 1989).

    Raises
    ------
    MeasureError
        If ``trace`` is not a 1-D array of non-negative integers.
    """
    cache = cache or CacheConfig()
    addrs = _as_trace(trace)
    return MissBreakdown(
        simulate_cache(addrs, cache), simulate_cache(addrs, cache.as_fully_associative())
    )
