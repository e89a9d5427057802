"""Exact lockstep L2 counts of a loop-tiled schedule in NumPy, without replaying every load.

:func:`~autotile.measure.gpu._l2sim.simulate_l2` replays a :class:`TileSchedule`
load by load through a byte-capacity LRU (numba). For the schedules of a tiled
matmul the same counts follow from the structure of the stream, and
:func:`lockstep_counts` computes them in NumPy: no JIT compilation, and work
proportional to the programs' loads of *one* step rather than of all steps.

Why it is exact. In a byte-capacity LRU (evict the least recently used tiles
while the bytes held exceed the capacity), a load of tile ``x`` hits if and only
if ``D + bytes(x) <= capacity``, ``D`` the bytes of the distinct tiles loaded
since the previous load of ``x`` (Mattson et al.'s stack property; with tiles of
unequal size the held tiles are always the longest most-recent prefix of the
recency stack whose bytes fit). In the schedules handled here every program has
one segment of ``T`` steps and every read op is a loop op ``tile = base + stride
* t`` over all ``T`` steps, no two ops and steps share a tile, and the tiles of
an op have one size. Then tile ``x`` of op key ``k`` is only ever loaded at one
step ``t``, and in lockstep waves (every resident program does step ``t`` before
any does ``t + 1``) its previous load is at the same step: in the same wave, or
in the last earlier wave ``w'`` holding key ``k``. For the second case

``D(t) = (T - 1 - t) * B(w'..w-1) + t * B(w'+1..w) + P``,

``B(a..b)`` the bytes of the distinct keys of waves ``a..b`` (one tile of each
per step) and ``P`` those loaded at step ``t`` between the two loads: the keys
after ``k`` in wave ``w'``, all keys of waves ``w'+1..w-1`` and the keys before
``k`` in wave ``w`` (the same for every ``t``). ``P`` is only computed where
its bounds ``B(w'+1..w-1) <= P <= B(w'+1..w-1) + B(w'..w') + B(w..w)`` leave the
hit undecided. A repeated key inside a wave hits when one wave's keys fit next
to it, which the function checks.

References
----------
R. L. Mattson, J. Gecsei, D. R. Slutz, I. L. Traiger, "Evaluation techniques for
storage hierarchies", IBM Systems Journal 9(2), 1970 (the LRU stack property).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["lockstep_counts"]

I64 = npt.NDArray[np.int64]


def _read_keys(s: Any, p_hi: int, n_steps: int) -> tuple[I64, I64, I64] | None:
    """Bases, strides and programs of the read ops of programs ``0 .. p_hi - 1``, or None."""
    seg = s.prog_seg_ptr[:p_hi]
    lo_op, hi_op = s.seg_op_ptr[seg], s.seg_op_ptr[seg + 1]
    n_ops = hi_op - lo_op
    prog = np.repeat(np.arange(p_hi, dtype=np.int64), n_ops)
    ops = np.arange(int(n_ops.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(n_ops) - n_ops, n_ops) + np.repeat(lo_op, n_ops)
    read = ~s.op_write[ops]
    ops, prog = ops[read], prog[read]
    if np.any(s.op_lo[ops] != 0) or np.any(s.op_hi[ops] != n_steps):
        return None  # prologue or epilogue loads: not a pure loop schedule
    return s.op_base[ops], s.op_stride[ops], prog


def _keys_are_disjoint(base: I64, stride: I64, n_steps: int, tb: I64) -> bool:
    """Whether no two (key, step) share a tile and each key's tiles have one size."""
    hulls = []
    for st in np.unique(stride):
        b = np.unique(base[stride == st])
        if st == 0:
            if n_steps > 1:
                return False
        elif st == 1:
            if b.size > 1 and np.min(np.diff(b)) < n_steps:
                return False
        elif n_steps > 1 and b[-1] - b[0] >= st:
            return False
        lo, hi = int(b[0]), int(b[-1] + st * (n_steps - 1))
        if hi >= tb.size or lo < 0:
            return False
        if tb[lo:hi + 1].min() != tb[lo:hi + 1].max():
            return False
        hulls.append((lo, hi))
    hulls.sort()
    return all(h1[0] > h0[1] for h0, h1 in zip(hulls, hulls[1:]))


def _write_bytes(s: Any, p_hi: int) -> int:
    seg = s.prog_seg_ptr[:p_hi]
    total = 0
    lo_op, hi_op = int(s.seg_op_ptr[seg[0]]), int(s.seg_op_ptr[seg[-1] + 1])
    w = np.flatnonzero(s.op_write[lo_op:hi_op]) + lo_op
    if w.size == 0:
        return 0
    lo, hi, b, st = s.op_lo[w], s.op_hi[w], s.op_base[w], s.op_stride[w]
    flat = st == 0
    total += int(((hi - lo) * s.tile_bytes[b])[flat].sum())
    for o in np.flatnonzero(~flat):
        t = np.arange(lo[o], hi[o], dtype=np.int64)
        total += int(s.tile_bytes[b[o] + st[o] * t].sum())
    return total


def lockstep_counts(schedule: Any, n_concurrent: int, cap: int, p_hi: int
                    ) -> npt.NDArray[np.int64] | None:
    """The lockstep LRU counts of ``_sim_schedule``, or None for a schedule it does not cover.

    Parameters
    ----------
    schedule : TileSchedule
    n_concurrent : int
        Programs per wave.
    cap : int
        L2 bytes (-1: infinite).
    p_hi : int
        Programs ``0 .. p_hi - 1`` are simulated.

    Returns
    -------
    ndarray of int64, shape (6,) or None
        ``[reads, read hits, read-miss bytes, write bytes, compulsory bytes, waves]``,
        equal to the numba replay's; None when a program has more than one
        segment or unequal steps, a read op does not span every step, two ops
        share a tile, or a wave's tiles of one step do not fit in ``cap`` next to
        a tile (the caller then replays the loads).
    """
    s = schedule
    out = np.zeros(6, np.int64)
    if p_hi <= 0:
        return out
    if np.any(np.diff(s.prog_seg_ptr[:p_hi + 1]) != 1):
        return None
    steps = s.seg_n_steps[s.prog_seg_ptr[:p_hi]]
    n_steps = int(steps[0])
    if np.any(steps != n_steps) or n_steps < 1:
        return None
    keyed = _read_keys(s, p_hi, n_steps)
    if keyed is None:
        return None
    base, stride, prog = keyed
    tb = s.tile_bytes
    if base.size and not _keys_are_disjoint(base, stride, n_steps, tb):
        return None
    n_waves = -(-p_hi // n_concurrent)
    out[3] = _write_bytes(s, p_hi)
    out[5] = n_waves
    n = base.size
    if n == 0:
        return out
    keys, kz = np.unique(base, return_inverse=True)
    beta = tb[keys].astype(np.int64)
    wz = prog // n_concurrent
    n_keys = keys.size
    # previous and next occurrence of each key in the one-step stream Z
    order = np.lexsort((np.arange(n), kz))
    same = kz[order[1:]] == kz[order[:-1]]
    prev = np.full(n, -1, np.int64)
    nxt = np.full(n, n, np.int64)
    prev[order[1:][same]] = order[:-1][same]
    nxt[order[:-1][same]] = order[1:][same]
    # keys per wave: presence and the next wave >= a holding each key
    pres = np.zeros((n_keys, n_waves + 1), bool)
    pres[kz, wz] = True
    next_wave = np.where(pres, np.arange(n_waves + 1)[None, :], n_waves + 1)
    next_wave = np.minimum.accumulate(next_wave[:, ::-1], axis=1)[:, ::-1]
    wave_bytes = beta @ pres[:, :n_waves]
    out[0] = n * n_steps
    out[4] = int(beta.sum()) * n_steps
    first = prev < 0
    cross = ~first & (wz[np.maximum(prev, 0)] != wz)
    within = ~first & ~cross
    unlimited = cap < 0
    if within.any() and not unlimited and int(wave_bytes.max()) + int(beta.max()) > cap:
        return None
    misses = np.zeros(n, np.int64)
    misses[first] = n_steps
    q = np.flatnonzero(cross)
    if q.size and not unlimited:
        w1, w = wz[prev[q]], wz[q]
        pairs, pinv = np.unique(np.stack([w1, w]), axis=1, return_inverse=True)
        pinv = pinv.reshape(-1)
        a, b = pairs[0], pairs[1]

        def union_bytes(lo: I64, hi: I64) -> npt.NDArray[np.int64]:
            """Bytes of the distinct keys of waves ``lo .. hi`` (0 where ``hi < lo``)."""
            inside = next_wave[:, lo] <= hi[None, :]
            return np.where(hi >= lo, beta @ inside, 0).astype(np.int64)

        b1 = union_bytes(a, b - 1)[pinv]
        b2 = union_bytes(a + 1, b)[pinv]
        mid = union_bytes(a + 1, b - 1)[pinv]
        p_lo = mid
        p_hi_b = mid + wave_bytes[w1] + wave_bytes[w]
        t = np.arange(n_steps, dtype=np.int64)
        d0 = (n_steps - 1 - t)[None, :] * b1[:, None] + t[None, :] * b2[:, None]
        bx = beta[kz[q]][:, None]
        sure_miss = d0 + p_lo[:, None] + bx > cap
        sure_hit = d0 + p_hi_b[:, None] + bx <= cap
        m = sure_miss.sum(axis=1)
        open_ = np.flatnonzero(~(sure_miss | sure_hit).all(axis=1))
        bz = beta[kz]
        for r in open_:
            j, i = int(prev[q[r]]), int(q[r])
            part = int(bz[j + 1:i][nxt[j + 1:i] >= i].sum())
            m[r] = int((d0[r] + part + bx[r, 0] > cap).sum())
        misses[q] = m
    out[1] = out[0] - int(misses.sum())
    out[2] = int((misses * beta[kz]).sum())
    return out
