"""The library matmul's L2 program order, from a probe launch of the real kernel.

:func:`matmul_tile_schedule` derives the tile schedule that the L2 simulator
replays (:mod:`._l2sim`) from a probe launch of :func:`~autotile.kernels.matmul_kernel`
(or the persistent kernel): same program grid, 1-element tiles, one K step,
programs run in batches by the interpreter; probes and schedules are cached
(:func:`clear_schedule_cache` empties the caches). It is the analytic input of
the ``"tile_matmul"`` GPU model (:mod:`._analytic`).
"""

from __future__ import annotations

import functools

import numpy as np

import autotile.lang as tl
from autotile.kernels import matmul_kernel, matmul_persistent_kernel
from autotile.measure.gpu._l2sim import BufferTiling, TileSchedule, schedule_from_trace

__all__ = ["matmul_tile_schedule", "clear_schedule_cache"]

#: Probe tile edge in elements along M and N. The schedule only needs which
#: tile each op touches, so 1 x 1 output tiles give the same schedule as real
#: ones at a fraction of the interpreter's work.
_PROBE_BLOCK = 1
#: The probe's K edge: ``tl.dot`` needs ``K >= 16`` (Triton's NVIDIA
#: ``min_dot_size``; the interpreter refuses less), ``M`` and ``N`` may be 1.
_DOT_MIN_K = 16


def _probe_k(block: int) -> int:
    """K edge of a probe whose M and N edges are ``block``."""
    return max(block, _DOT_MIN_K)
#: Programs per interpreter batch of a probe (``batch_programs``).
_PROBE_BATCH = 1 << 16
def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@functools.lru_cache(maxsize=64)
def _matmul_probe(npm: int, npn: int, group_m: int, persistent: int, n_run: int,
                  block: int = _PROBE_BLOCK, batch: int | bool = _PROBE_BATCH
                  ) -> tl.AccessTrace:
    """Tile trace of the real matmul kernel on an ``npm x npn`` tile grid, one K step.

    ``persistent == 0``: :func:`matmul_kernel` on its first ``n_run`` programs;
    otherwise :func:`matmul_persistent_kernel` with ``NUM_SMS = persistent``.
    ``block`` is the tile edge in elements along M and N (along K it is
    :func:`_probe_k`, at least 16 as ``tl.dot`` requires) and ``batch`` the
    launch's ``batch_programs`` (``False`` runs one program at a time; the
    trace is the same). The persistent kernel loops from its program id, so
    its programs always run one at a time.
    """
    b, bk = block, _probe_k(block)
    m, n = npm * b, npn * b
    a_ = np.zeros((m, bk), np.float16)
    b_ = np.zeros((bk, n), np.float16)
    c_ = np.zeros((m, n), np.float16)
    args = (a_, b_, c_, m, n, bk, bk, 1, n, 1, n, 1)
    meta = dict(BLOCK_M=b, BLOCK_N=b, BLOCK_K=bk, GROUP_M=group_m)
    with tl.recording(trace="tile") as rec:
        if persistent:
            matmul_persistent_kernel[(min(persistent, npm * npn),)](
                *args, **meta, NUM_SMS=min(persistent, npm * npn))
        else:
            matmul_kernel[(n_run,)](*args, **meta, PID_ORDER="grouped", batch_programs=batch)
    tr = rec.last.trace
    assert tr is not None
    return tr


def _probe_schedule(tr: tl.AccessTrace, block: int, npm: int, npn: int, nk: int,
                    a_tile_bytes: int, b_tile_bytes: int, c_tile_bytes: int,
                    k_merge: int) -> TileSchedule:
    """Full-size schedule from a probe trace with ``block``-element M and N tile edges."""
    b, bk = block, _probe_k(block)
    tilings = [
        BufferTiling("a_ptr", bk, (b, bk), (npm, nk), a_tile_bytes, 2, loop_axis=1),
        BufferTiling("b_ptr", npn * b, (bk, b), (nk, npn), b_tile_bytes, 2, loop_axis=0),
        BufferTiling("c_ptr", npn * b, (b, b), (npm, npn), c_tile_bytes, 2),
    ]
    return schedule_from_trace(tr, tilings, k_merge=k_merge)


@functools.lru_cache(maxsize=256)
def _matmul_schedule(npm: int, npn: int, nk: int, group_m: int, persistent: int, n_run: int,
                     a_tile_bytes: int, b_tile_bytes: int, c_tile_bytes: int,
                     k_merge: int) -> TileSchedule:
    tr = _matmul_probe(npm, npn, group_m, persistent, n_run)
    return _probe_schedule(tr, _PROBE_BLOCK, npm, npn, nk, a_tile_bytes, b_tile_bytes,
                           c_tile_bytes, k_merge)


def matmul_tile_schedule(M: int, N: int, K: int, BLOCK_M: int, BLOCK_N: int, BLOCK_K: int,
                         GROUP_M: int, *, itemsize: int = 2, out_itemsize: int | None = None,
                         NUM_SMS: int | None = None, k_merge: int = 1,
                         max_probe_programs: int | None = None) -> tuple[TileSchedule, int]:
    """Tile schedule of the library matmul, derived from a probe launch (cached).

    The probe launches the real kernel with the program grid of the full
    problem (``cdiv(M, BLOCK_M) x cdiv(N, BLOCK_N)`` tiles, the same
    ``GROUP_M``) but 1 x 1 x 1 tiles and a single K step, records a
    ``"tile"`` trace and extends it to ``cdiv(K, BLOCK_K)`` steps
    (:func:`schedule_from_trace`). The interpreter runs the probe's programs
    in batches (``batch_programs``), which records the same trace as one
    program at a time. Probes are cached per (tile grid, ``GROUP_M``,
    ``NUM_SMS``) and schedules per geometry.

    Parameters
    ----------
    M, N, K : int
        Problem shape.
    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M : int
        Kernel meta-parameters.
    itemsize : int, default=2
        Bytes per A/B element.
    out_itemsize : int, optional
        Bytes per C element (default ``itemsize``).
    NUM_SMS : int, optional
        Programs of the persistent kernel; None for :func:`matmul_kernel`.
    k_merge : int, default=1
        Loop steps fused per simulated step (see :func:`schedule_from_trace`).
    max_probe_programs : int, optional
        Probe only the first this-many programs of the non-persistent kernel
        (the launch grid is cut, the kernel's mapping is unchanged).

    Returns
    -------
    schedule : TileSchedule
    n_programs : int
        Programs of the real launch (the schedule may hold a prefix).
    """
    npm, npn, nk = _cdiv(M, BLOCK_M), _cdiv(N, BLOCK_N), _cdiv(K, BLOCK_K)
    n_prog = npm * npn
    persistent = 0 if NUM_SMS is None else int(NUM_SMS)
    n_run = n_prog if (persistent or max_probe_programs is None) else min(
        n_prog, int(max_probe_programs))
    osz = itemsize if out_itemsize is None else out_itemsize
    sched = _matmul_schedule(npm, npn, nk, int(GROUP_M), persistent, n_run,
                             BLOCK_M * BLOCK_K * itemsize, BLOCK_K * BLOCK_N * itemsize,
                             BLOCK_M * BLOCK_N * osz, int(k_merge))
    return sched, (min(persistent, n_prog) if persistent else n_prog)


def clear_schedule_cache() -> None:
    """Empty the probe and schedule caches of :func:`matmul_tile_schedule`."""
    _matmul_probe.cache_clear()
    _matmul_schedule.cache_clear()


