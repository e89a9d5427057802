"""Which loops of an affine nest the periodic fast path watches, and its compulsory misses.

The static half of :mod:`autotile.measure.cpu._periodic`: from the loop
extents and each access's byte steps, :func:`loop_periods` picks the loops
whose cache states can be compared (periodic loops and in-line loops, as the
proof in that module's docstring defines them) and the line shift of each
buffer; :func:`footprint_lines` counts the distinct lines (compulsory
misses), which extrapolation does not give.
"""

from __future__ import annotations

from math import gcd

import numba
import numpy as np
import numpy.typing as npt

_I64 = npt.NDArray[np.int64]

__all__ = ["loop_periods", "footprint_lines", "MIN_BODY_ACCESSES", "MIN_IN_LINE",
           "MIN_WINDOW_ACCESSES"]

#: A loop is compared after each of its first iterations only if one iteration
#: makes at least this many accesses: a snapshot costs about a hundred accesses.
MIN_BODY_ACCESSES = 48
#: Fewest consecutive iterations in one line for a loop to be watched in-line.
MIN_IN_LINE = 4
#: An in-line loop whose iterations make fewer than ``MIN_BODY_ACCESSES`` accesses is
#: watched if one line window makes at least this many (a ``j`` loop of 1,024
#: iterations over an ``i`` loop of 8 at n = 1024: 16 iterations of 24 accesses). A
#: choice set on seed 0's schedules (in-sample): 384 accesses a window gained (50.5 ->
#: 31.9 ms), 192 (an 8-iteration ``ji`` over ``ii`` of 8) lost (100 -> 113 ms);
#: docs/results/cache_fastpath.md, session 12.
MIN_WINDOW_ACCESSES = 256


def _in_line_window(s: int, inner_step: _I64, inner_ext: _I64, line_bytes: int
                    ) -> tuple[int, int, int, int] | None:
    """How an access that moves ``s`` bytes per iteration stays in its lines.

    The inner loops move the access by ``inner_step`` bytes (``inner_ext``
    iterations each). Split them into those whose steps are multiples of a
    block size ``G`` (a divisor of ``line_bytes``) and the others, whose
    offsets span a window ``[w_lo, w_hi]`` of bytes. Every address of one
    iteration is then ``x + w + k * G`` with ``x`` the iteration's start
    address, ``w_lo <= w <= w_hi`` and ``k`` an integer, so if
    ``u = (x + w_lo) mod G`` has ``u + (w_hi - w_lo) + h * s < G`` (for
    ``s > 0``; ``u - h * |s| >= 0`` and ``u + (w_hi - w_lo) < G`` for ``s < 0``)
    every address of the iterations ``0 .. h`` ahead lies in one ``G``-aligned
    block, and so in one line: the access touches the same lines in each.
    Every split is tried (the inner loops are few).

    Returns
    -------
    tuple of int or None
        ``(n, G, w_lo, w_hi)`` with ``n`` the most consecutive iterations in
        one block that the split allows, for the split with the largest ``n``;
        None if ``s == 0`` or ``|s| >= line_bytes``.
    """
    if s == 0 or abs(s) >= line_bytes:
        return None
    moving = [(int(t), int(e)) for t, e in zip(inner_step, inner_ext) if int(t) % line_bytes]
    best: tuple[int, int, int, int] | None = None
    for mask in range(1 << len(moving)):
        g, w_lo, w_hi = line_bytes, 0, 0
        for i, (t, e) in enumerate(moving):
            if mask >> i & 1:
                g = gcd(g, t)
            else:
                w_lo += min(0, t * (e - 1))
                w_hi += max(0, t * (e - 1))
        room = g - 1 - (w_hi - w_lo)
        n = room // abs(s) + 1 if room >= 0 else 0
        if best is None or n > best[0]:
            best = (n, g, w_lo, w_hi)
    return best


def loop_periods(ext: _I64, step: _I64, base: _I64, total_bytes: int, line_bytes: int,
                 n_sets: int, min_body: int = MIN_BODY_ACCESSES, min_in_line: int = MIN_IN_LINE,
                 min_window: int = MIN_WINDOW_ACCESSES
                 ) -> tuple[_I64, npt.NDArray[np.bool_], npt.NDArray[np.bool_], _I64, _I64,
                            _I64, _I64, _I64, _I64, _I64, _I64, _I64]:
    """Which loops to watch, how, and the line shift of each buffer.

    A loop is watched in one of two ways:

    * *periodic*: ``P * step[l, a]`` is a multiple of ``line_bytes * n_sets``
      for every access (``P`` the smallest such count) and the loop runs at
      least ``2 * P + 1`` iterations. The translation holds for the whole loop.
    * *in-line* (``P = 1``; only where the periodic way does not apply, and one
      iteration makes at least ``min_body`` accesses or one line window, the
      most consecutive iterations in one line, at least ``min_window``): every
      access either moves
      by a multiple of ``line_bytes * n_sets`` bytes per iteration, or by less
      than a line and stays in its lines for at least ``min_in_line``
      consecutive iterations (see :func:`_in_line_window`). The second kind
      does not move at the level of lines until it crosses into the next one,
      so the translation holds only up to that crossing (the walker computes
      that horizon at run time).

    Parameters
    ----------
    ext : ndarray of shape (n_loops,), int64
        Loop extents, outer to inner.
    step : ndarray of shape (n_loops, n_accesses), int64
        Bytes access ``a`` moves per iteration of loop ``l``.
    base : ndarray of shape (n_accesses,), int64
        Base address of each access's buffer, bytes; equal bases mean one buffer.
    total_bytes : int
        End of the last buffer, bytes.
    line_bytes, n_sets : int
        Cache geometry.
    min_body : int, default=MIN_BODY_ACCESSES
        Smallest number of accesses per iteration of a densely watched loop
        (and of an in-line one).
    min_in_line : int, default=MIN_IN_LINE
        Smallest number of consecutive iterations in one line for an in-line loop.
    min_window : int, default=MIN_WINDOW_ACCESSES
        Smallest number of accesses per line window of an in-line loop whose
        iterations make fewer than ``min_body`` accesses (the window's
        iterations: at most the extent, and at most the first count of
        :func:`_in_line_window` of each access that moves within a line).

    Returns
    -------
    period : ndarray of shape (n_loops,), int64
        ``P`` of each loop (1 for in-line loops); 0 where the loop is not watched.
    dense : ndarray of shape (n_loops,), bool
        Whether one iteration makes at least ``min_body`` accesses: such a
        loop is compared after each of its first iterations, the others only
        at a few iterations spaced by powers of two.
    local : ndarray of shape (n_loops,), bool
        Whether the loop is watched in-line.
    shift : ndarray of shape (n_loops, n_regions), int64
        Lines buffer ``r`` moves per ``P`` iterations of loop ``l`` (0 for a
        buffer that moves within a line).
    block, win_lo, win_hi : ndarray of shape (n_loops, n_accesses), int64
        For an access that moves within a line at an in-line loop, the block
        size ``G`` (bytes, a divisor of ``line_bytes``) and the window
        ``[win_lo, win_hi]`` (bytes, relative to its address at the start of an
        iteration) of :func:`_in_line_window`; ``block == 0`` for the others.
    region_lo, region_hi : ndarray of shape (n_regions,), int64
        Line range ``[lo, hi)`` of each buffer (a buffer reaches up to the next
        buffer's base).
    region_of : ndarray of shape (n_accesses,), int64
        Buffer of each access.
    half_period : ndarray of shape (n_loops,), int64
        For an in-line loop of exactly two periods (``ext == 2 * P`` with ``P``
        as for a periodic loop, ``P >= 2``), ``P``; else 0. Such a loop is also
        compared at iteration ``P`` with its first iteration.
    half_shift : ndarray of shape (n_loops, n_regions), int64
        Lines buffer ``r`` moves per ``half_period[l]`` iterations of loop ``l``.
    """
    n_loops, p = step.shape
    bases = sorted({int(b) for b in base})
    n_reg = len(bases)
    ends = bases[1:] + [int(total_bytes)]
    region_lo = np.array([b // line_bytes for b in bases], np.int64)
    region_hi = np.array([-(-e // line_bytes) for e in ends], np.int64)
    region_of = np.array([bases.index(int(b)) for b in base], np.int64)
    period = np.zeros(n_loops, np.int64)
    dense = np.zeros(n_loops, np.bool_)
    local = np.zeros(n_loops, np.bool_)
    shift = np.zeros((n_loops, n_reg), np.int64)
    block = np.zeros((n_loops, p), np.int64)
    win_lo = np.zeros((n_loops, p), np.int64)
    win_hi = np.zeros((n_loops, p), np.int64)
    half_p = np.zeros(n_loops, np.int64)
    half_shift = np.zeros((n_loops, n_reg), np.int64)
    modulus = line_bytes * n_sets
    for l in range(n_loops):
        reg_step: dict[int, int] = {}
        ok = True
        for a in range(p):
            r, s = int(region_of[a]), int(step[l, a])
            if reg_step.setdefault(r, s) != s:
                ok = False  # two accesses of one buffer move differently
        # a line shared by two buffers must move the same way for both
        for r in range(n_reg - 1):
            if region_hi[r] > region_lo[r + 1] and reg_step.get(r, 0) != reg_step.get(r + 1, 0):
                ok = False
        if not ok:
            continue
        body = p * int(np.prod(ext[l + 1:], dtype=np.int64))
        per = 1
        for a in range(p):
            g = gcd(abs(int(step[l, a])), modulus)
            per = per * (modulus // g) // gcd(per, modulus // g)
        if int(ext[l]) >= 2 * per + 1:
            period[l] = per
            dense[l] = body >= min_body
            for r, s in reg_step.items():
                shift[l, r] = per * s // line_bytes
            continue
        if int(ext[l]) < 3:
            continue
        # a loop of exactly two periods (common at n = 1024: a row is two set cycles)
        # is extrapolated over its second period less one iteration, unless the
        # in-line way below, which simulates at most half of the loop too, applies
        half = per >= 2 and int(ext[l]) == 2 * per and body >= min_body
        n_win = int(ext[l])  # iterations per line window, at most
        for a in range(p):
            s = int(step[l, a])
            if s % modulus == 0:
                continue
            best = _in_line_window(s, step[l + 1:, a], ext[l + 1:], line_bytes)
            if best is None or best[0] < min_in_line:
                ok = False
                break
            n_win = min(n_win, best[0])
            _, block[l, a], win_lo[l, a], win_hi[l, a] = best
        # an iteration of fewer than min_body accesses: watched in-line only if a line
        # window makes enough accesses to pay for its comparisons and snapshots
        if not ok or not block[l].any() or (body < min_body and n_win * body < min_window):
            block[l] = 0
            win_lo[l] = 0
            win_hi[l] = 0
            if half:
                period[l] = per
                dense[l] = True
                for r, s in reg_step.items():
                    shift[l, r] = per * s // line_bytes
            continue
        period[l] = 1
        dense[l] = True
        local[l] = True
        for r, s in reg_step.items():
            if s % modulus == 0:
                shift[l, r] = s // line_bytes
        if half:
            # two periods: the in-line loop is also compared at iteration P with
            # its first iteration, as a loop of two periods (see walk_periodic)
            half_p[l] = per
            for r, s in reg_step.items():
                half_shift[l, r] = per * s // line_bytes
    return (period, dense, local, shift, block, win_lo, win_hi, region_lo, region_hi,
            region_of, half_p, half_shift)


@numba.njit(cache=True, nogil=True)
def footprint_lines(ext, step, addr0, line_bytes, n_ids):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Count the distinct lines of an affine nest's trace.

    Each access is walked only over the loops that move it (``step != 0``);
    the other loops repeat its addresses. ``addr0[a]`` is access ``a``'s
    byte address at iteration 0. Where those loops, sorted by ``|step|``,
    form a mixed radix (each step is the previous step times its loop's
    extent) with the smallest step at most ``line_bytes``, the access touches
    every ``|step_0|``-th byte of one interval, so every line of that interval:
    the lines are marked without walking the iterations.
    """
    n_loops, p = step.shape
    seen = np.zeros(n_ids, np.bool_)
    touched = 0
    idx = np.zeros(n_loops, np.int64)
    cnt = np.zeros(n_loops, np.int64)
    for a in range(p):
        m = 0
        for l in range(n_loops):
            if step[l, a] != 0:
                idx[m] = l
                m += 1
        # insertion sort of the moving loops by |step|
        for i in range(1, m):
            x = idx[i]
            j = i - 1
            while j >= 0 and abs(step[idx[j], a]) > abs(step[x, a]):
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = x
        radix = m == 0 or abs(step[idx[0], a]) <= line_bytes
        lo = addr0[a]
        hi = addr0[a]
        for i in range(m):
            s = step[idx[i], a]
            e = ext[idx[i]]
            if i + 1 < m and abs(step[idx[i + 1], a]) != abs(s) * e:
                radix = False
            if s < 0:
                lo += s * (e - 1)
            else:
                hi += s * (e - 1)
        if radix:
            for ln in range(lo // line_bytes, hi // line_bytes + 1):
                if not seen[ln]:
                    seen[ln] = True
                    touched += 1
            continue
        # walk the moving loops (in nest order)
        m = 0
        for l in range(n_loops):
            if step[l, a] != 0:
                idx[m] = l
                m += 1
        addr = addr0[a]
        for l in range(m):
            cnt[l] = 0
        while True:
            ln = addr // line_bytes
            if not seen[ln]:
                seen[ln] = True
                touched += 1
            j = m - 1
            while j >= 0:
                lj = idx[j]
                cnt[j] += 1
                addr += step[lj, a]
                if cnt[j] < ext[lj]:
                    break
                addr -= step[lj, a] * ext[lj]
                cnt[j] = 0
                j -= 1
            if j < 0:
                break
    return touched
