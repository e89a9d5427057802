"""Exact extrapolation of periodic cache behaviour in affine loop nests.

A GEMM schedule at ``n = 1024`` makes 3.2e9 accesses, but its cache behaviour
repeats: one iteration of an outer loop touches the same pattern of lines as
the previous one, shifted by the loop's stride. This module walks the nest
like :func:`~autotile.measure.cpu._nestsim._walk` and, at the end of each
iteration of a large enough loop, proves that the rest of the loop repeats;
it then adds the repeating hit counts instead of replaying them. The counts
are exactly those of full simulation (tested on every 64x64 schedule).

The proof
---------
Fix a loop ``l`` (every outer loop fixed) and let ``S_v`` be the state of both
caches (each set's lines in LRU order, and the fully associative LRU stack)
after its iteration ``v``, and ``B_v`` the trace of iterations ``v+1 .. v+P``.
Access ``a`` moves by ``step[l, a]`` bytes per iteration of ``l``. The period
``P`` is the smallest count with ``P * step[l, a]`` a multiple of
``line_bytes * n_sets`` for every access, so after ``P`` iterations access
``a`` touches the same lines shifted by ``P * step[l, a] / line_bytes`` lines,
a multiple of ``n_sets``: each line stays in its set. Let ``phi`` shift a line
of buffer ``b`` by the shift of ``b``'s accesses (all accesses of one buffer
must move together, else the loop is not extrapolated). Then
``B_{w+P} = phi(B_w)``.

LRU replacement only compares lines for equality, and ``phi`` keeps every
line in its set, so renaming the lines of a state and a trace by ``phi``
renames the resulting state and leaves every hit and miss where it was,
provided ``phi`` is one-to-one on the lines involved (Lemma; the same
argument as HayStack's and PolyCache's symbolic treatment of LRU stacks).
``phi`` is one-to-one on lines that it keeps inside their own buffer, so the
walker checks that for the lines of the state; trace lines satisfy it
because their images are real accesses of the same buffer. Hence, if
``S_{v} = phi(S_{v-P})``, by induction ``S_{v+kP} = phi^k(S_v)`` and each
later block of ``P`` iterations has the hits of iterations ``v-P+1 .. v``
(iteration by iteration) for as long as the loop runs. The walker adds
``q`` such blocks and a partial block of ``r`` iterations, sets the state to
``phi^(q+1)(S_{v-P+r})`` and goes on after the loop's last iteration. Where
equality does not hold, nothing is extrapolated and the loop is simulated.

Compulsory misses (distinct lines) do not repeat like this; they are counted
exactly by :func:`footprint_lines`, which walks each access only over the
loops that move it.

References
----------
Gysi, Grosser, Brandner, Hoefler, "A Fast Analytical Model of Fully
Associative Caches", PLDI 2019 (HayStack: LRU stack distances of affine
programs without simulating every access).
Bao, Krishnamoorthy, Pouchet, Sadayappan, "Analytical Modeling of Cache
Behavior for Affine Programs", POPL 2018 (PolyCache: set-associative LRU
caches of affine programs, one set at a time).
"""

from __future__ import annotations

from math import gcd

import numba
import numpy as np
import numpy.typing as npt

from autotile.measure.cpu._cachesim import sa_touch

_I64 = npt.NDArray[np.int64]

__all__ = ["loop_periods", "footprint_lines", "walk_periodic"]

#: A loop is compared after each of its first iterations only if one iteration
#: makes at least this many accesses: a snapshot costs about a hundred accesses.
MIN_BODY_ACCESSES = 48
#: Iterations compared one by one per run of a densely watched loop.
GIVE_UP = 16
#: First iteration of a sparse comparison; later ones double it.
FIRST_SPARSE = 32


def loop_periods(ext: _I64, step: _I64, base: _I64, total_bytes: int, line_bytes: int,
                 n_sets: int, min_body: int = MIN_BODY_ACCESSES
                 ) -> tuple[_I64, npt.NDArray[np.bool_], _I64, _I64, _I64, _I64]:
    """Which loops to watch, their periods and the line shift of each buffer.

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
        Smallest number of accesses per iteration of a densely watched loop.

    Returns
    -------
    period : ndarray of shape (n_loops,), int64
        ``P`` of each loop; 0 where the loop is not watched (it runs fewer
        than ``2 * P + 1`` iterations, or its buffers do not move together).
    dense : ndarray of shape (n_loops,), bool
        Whether one iteration makes at least ``min_body`` accesses: such a
        loop is compared after each of its first iterations, the others only
        at a few iterations spaced by powers of two.
    shift : ndarray of shape (n_loops, n_regions), int64
        Lines buffer ``r`` moves per ``P`` iterations of loop ``l``.
    region_lo, region_hi : ndarray of shape (n_regions,), int64
        Line range ``[lo, hi)`` of each buffer (a buffer reaches up to the next
        buffer's base).
    region_of : ndarray of shape (n_accesses,), int64
        Buffer of each access.
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
    shift = np.zeros((n_loops, n_reg), np.int64)
    modulus = line_bytes * n_sets
    for l in range(n_loops):
        per = 1
        for a in range(p):
            g = gcd(abs(int(step[l, a])), modulus)
            per = per * (modulus // g) // gcd(per, modulus // g)
        if int(ext[l]) < 2 * per + 1:
            continue
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
        period[l] = per
        dense[l] = p * int(np.prod(ext[l + 1:], dtype=np.int64)) >= min_body
        for r, s in reg_step.items():
            shift[l, r] = per * s // line_bytes
    return period, dense, shift, region_lo, region_hi, region_of


@numba.njit(cache=True, nogil=True)
def footprint_lines(ext, step, addr0, line_bytes, n_ids):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Count the distinct lines of an affine nest's trace.

    Each access is walked only over the loops that move it (``step != 0``);
    the other loops repeat its addresses. ``addr0[a]`` is access ``a``'s
    byte address at iteration 0.
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


@numba.njit(cache=True, nogil=True, inline="always")
def _region(x, lo, hi):  # type: ignore[no-untyped-def]  # pragma: no cover
    for r in range(lo.shape[0]):
        if lo[r] <= x < hi[r]:
            return r
    return -1


@numba.njit(cache=True, nogil=True)
def _snapshot(tags, stamp, nxt, ends, out_sa, out_fa):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Write both caches' states in canonical form (MRU first, -1 padded)."""
    n_sets, ways = tags.shape
    for s in range(n_sets):
        # selection sort of the set's ways by stamp, newest first (ways is small)
        taken = 0
        for k in range(ways):
            best = -1
            best_stamp = 0
            for w in range(ways):
                if (taken >> w) & 1 == 0 and stamp[s, w] > best_stamp:
                    best = w
                    best_stamp = stamp[s, w]
            if best < 0:
                out_sa[s * ways + k] = -1
            else:
                taken |= 1 << best
                out_sa[s * ways + k] = tags[s, best]
    x = ends[0]
    k = 0
    while x >= 0:
        out_fa[k] = x
        k += 1
        x = nxt[x]
    for j in range(k, out_fa.shape[0]):
        out_fa[j] = -1
    return k


@numba.njit(cache=True, nogil=True)
def _translated_equal(old_sa, old_fa, new_sa, new_fa, shift_l, lo, hi, active, ways):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Whether ``new == phi(old)`` with every line kept inside its buffer.

    Only the sets in ``active`` (those the loop touches) are compared.
    """
    for i in range(old_sa.shape[0]):
        if not active[i // ways]:
            continue
        x = old_sa[i]
        if x < 0:
            if new_sa[i] >= 0:
                return False
            continue
        r = _region(x, lo, hi)
        y = x + shift_l[r]
        if y != new_sa[i] or not (lo[r] <= y < hi[r]):
            return False
    for i in range(old_fa.shape[0]):
        x = old_fa[i]
        if x < 0:
            if new_fa[i] >= 0:
                return False
            break
        r = _region(x, lo, hi)
        y = x + shift_l[r]
        if y != new_fa[i] or not (lo[r] <= y < hi[r]):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _shifted_ok(sa, fa, shift_l, times, lo, hi, active, ways):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Whether ``phi^times`` keeps every line of a snapshot inside its buffer."""
    for i in range(sa.shape[0]):
        x = sa[i]
        if x >= 0 and active[i // ways]:
            r = _region(x, lo, hi)
            y = x + shift_l[r] * times
            if not (lo[r] <= y < hi[r]):
                return False
    for i in range(fa.shape[0]):
        x = fa[i]
        if x < 0:
            break
        r = _region(x, lo, hi)
        y = x + shift_l[r] * times
        if not (lo[r] <= y < hi[r]):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _restore(tags, stamp, prev, nxt, resident, ends, sa, fa, shift_l, times, lo, hi, clock,  # type: ignore[no-untyped-def]
             active):  # pragma: no cover
    """Set both caches to ``phi^times`` of a snapshot (stamps end at ``clock``).

    Sets not in ``active`` keep their lines, with their LRU order.
    """
    n_sets, ways = tags.shape
    for s in range(n_sets):
        if not active[s]:
            continue
        for w in range(ways):
            x = sa[s * ways + w]
            if x < 0:
                tags[s, w] = -1
                stamp[s, w] = 0
            else:
                tags[s, w] = x + shift_l[_region(x, lo, hi)] * times
                stamp[s, w] = clock - w
    x = ends[0]
    while x >= 0:
        resident[x] = False
        x = nxt[x]
    k = 0
    last = -1
    for i in range(fa.shape[0]):
        x = fa[i]
        if x < 0:
            break
        y = x + shift_l[_region(x, lo, hi)] * times
        resident[y] = True
        prev[y] = last
        nxt[y] = -1
        if last >= 0:
            nxt[last] = y
        else:
            ends[0] = y
        last = y
        k += 1
    if k == 0:
        ends[0] = -1
    ends[1] = last
    ends[2] = k


@numba.njit(cache=True, nogil=True)
def _take(tags, stamp, nxt, ends, snap_sa, snap_fa, snap_hits, snap_clock, slot,  # type: ignore[no-untyped-def]
          sa_hits, fa_hits, clock):  # pragma: no cover
    _snapshot(tags, stamp, nxt, ends, snap_sa[slot], snap_fa[slot])
    snap_hits[slot, 0] = sa_hits
    snap_hits[slot, 1] = fa_hits
    snap_clock[slot] = clock


@numba.njit(cache=True, nogil=True)
def walk_periodic(ext, step, addr0, line_bytes, n_sets, ways, fa_cap,  # type: ignore[no-untyped-def]
                  n_ids, period, dense, shift, lo, hi, shortcut, give_up,
                  first_sparse):  # pragma: no cover
    """Set-associative and fully associative hits of an affine nest, extrapolating.

    A watched loop ``l`` (``period[l] > 0``) is compared at the end of its
    iterations ``period[l] .. period[l] + give_up`` if ``dense[l]``, and at
    iterations near ``first_sparse * 2**m``; where no comparison matches, that
    run of the loop is simulated. Returns ``(sa_hits, fa_hits, n_simulated)``;
    ``n_simulated`` is the number of accesses replayed.
    """
    n_loops, p = step.shape
    tags = np.full((n_sets, ways), -1, np.int64)
    stamp = np.zeros((n_sets, ways), np.int64)
    prev = np.full(n_ids, -1, np.int64)
    nxt = np.full(n_ids, -1, np.int64)
    resident = np.zeros(n_ids, np.bool_)
    ends = np.array([-1, -1, 0], np.int64)
    last_touch = np.zeros(n_sets, np.int64)
    active = np.zeros(n_sets, np.bool_)
    n_sa = n_sets * ways
    # snapshot slots: level l owns a ring [off[l], off[l] + period[l] + 1) for the
    # dense comparisons, then two slots (before, after) for the sparse ones
    off = np.zeros(n_loops + 1, np.int64)
    for l in range(n_loops):
        off[l + 1] = off[l] + (period[l] + 3 if period[l] > 0 else 0)
    n_slots = max(off[n_loops], 1)
    snap_sa = np.empty((n_slots, n_sa), np.int64)
    snap_fa = np.empty((n_slots, fa_cap), np.int64)
    snap_hits = np.zeros((n_slots, 2), np.int64)
    snap_clock = np.zeros(n_slots, np.int64)
    next_sparse = np.zeros(n_loops, np.int64)
    sa_hits = 0
    fa_hits = 0
    simulated = 0
    clock = 0
    cnt = np.zeros(n_loops, np.int64)
    lines = np.zeros(p, np.int64)
    last = np.full(p, -1, np.int64)
    addr = addr0.copy()
    pow2_sets = (n_sets & (n_sets - 1)) == 0
    done = n_loops == 0
    while True:
        # ---- one iteration of the body
        same = shortcut
        for a in range(p):
            ln = addr[a] // line_bytes
            lines[a] = ln
            if ln != last[a]:
                same = False
        clock += p
        if same:
            sa_hits += p
            fa_hits += p
            for a in range(p):
                ln = lines[a]
                last_touch[(ln & (n_sets - 1)) if pow2_sets else ln % n_sets] = clock
        else:
            simulated += p
            c0 = clock - p
            for a in range(p):
                ln = lines[a]
                last[a] = ln
                c0 += 1
                s = (ln & (n_sets - 1)) if pow2_sets else ln % n_sets
                last_touch[s] = c0
                if sa_touch(tags, stamp, s, ln, c0):
                    sa_hits += 1
                head = ends[0]
                if resident[ln]:
                    fa_hits += 1
                    if ln == head:
                        continue
                    pp = prev[ln]
                    qq = nxt[ln]
                    nxt[pp] = qq
                    if qq >= 0:
                        prev[qq] = pp
                    else:
                        ends[1] = pp
                else:
                    if ends[2] == fa_cap:
                        v = ends[1]
                        ends[1] = prev[v]
                        if ends[1] >= 0:
                            nxt[ends[1]] = -1
                        else:
                            head = -1
                        resident[v] = False
                        ends[2] -= 1
                    resident[ln] = True
                    ends[2] += 1
                prev[ln] = -1
                nxt[ln] = head
                if head >= 0:
                    prev[head] = ln
                ends[0] = ln
                if ends[1] < 0:
                    ends[1] = ln
        if done:
            break
        # ---- advance the mixed-radix counter; watch the loops whose iteration ends
        l = n_loops - 1
        while l >= 0:
            per = period[l]
            c = cnt[l]
            e = ext[l]
            if per > 0 and c + per <= e - 1:
                old = -1
                new = -1
                part = -1
                if c == 0:
                    # first sparse comparison of this run: the first iteration at or
                    # after first_sparse (and after the dense ones) with the partial
                    # block empty
                    x = max(first_sparse, per + give_up + 1)
                    next_sparse[l] = x + (e - 1 - x) % per
                if dense[l] and c <= per + give_up:
                    new = off[l] + c % (per + 1)
                    _take(tags, stamp, nxt, ends, snap_sa, snap_fa, snap_hits, snap_clock,
                          new, sa_hits, fa_hits, clock)
                    if c >= per:
                        old = off[l] + (c - per) % (per + 1)
                        part = off[l] + (c - per + (e - 1 - c) % per) % (per + 1)
                nsp = next_sparse[l]
                if c == nsp - per:
                    _take(tags, stamp, nxt, ends, snap_sa, snap_fa, snap_hits, snap_clock,
                          off[l] + per + 1, sa_hits, fa_hits, clock)
                elif c == nsp and old < 0:
                    new = off[l] + per + 2
                    _take(tags, stamp, nxt, ends, snap_sa, snap_fa, snap_hits, snap_clock,
                          new, sa_hits, fa_hits, clock)
                    old = off[l] + per + 1
                    part = old
                if c == nsp:
                    x = 2 * nsp
                    next_sparse[l] = x + (e - 1 - x) % per
                if old >= 0:
                    for s in range(n_sets):
                        active[s] = last_touch[s] > snap_clock[old]
                    rem = e - 1 - c
                    q = rem // per
                    if _translated_equal(snap_sa[old], snap_fa[old], snap_sa[new], snap_fa[new],
                                         shift[l], lo, hi, active, ways) and \
                            _shifted_ok(snap_sa[part], snap_fa[part], shift[l], q + 1, lo, hi,
                                        active, ways):
                        sa_hits += q * (sa_hits - snap_hits[old, 0]) \
                            + snap_hits[part, 0] - snap_hits[old, 0]
                        fa_hits += q * (fa_hits - snap_hits[old, 1]) \
                            + snap_hits[part, 1] - snap_hits[old, 1]
                        clock += n_sa + 1
                        _restore(tags, stamp, prev, nxt, resident, ends, snap_sa[part],
                                 snap_fa[part], shift[l], q + 1, lo, hi, clock, active)
                        for s in range(n_sets):
                            if active[s]:
                                last_touch[s] = clock
                        for a in range(p):
                            last[a] = -1
                            addr[a] += step[l, a] * rem
                        cnt[l] += rem
            cnt[l] += 1
            for a in range(p):
                addr[a] += step[l, a]
            if cnt[l] < e:
                break
            for a in range(p):
                addr[a] -= step[l, a] * e
            cnt[l] = 0
            l -= 1
        if l < 0:
            break
    return sa_hits, fa_hits, simulated
