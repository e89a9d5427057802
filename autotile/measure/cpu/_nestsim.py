"""Fast cache simulation of an affine loop nest, without materialising its trace.

A lowered schedule whose root axes are linear in the loop variables (every
schedule made of ``split``/``tile``/``reorder``) is walked in numba; each
iteration's byte addresses are computed from the buffers' layouts and fed,
in program order, to a set-associative and a fully associative LRU cache at
once. The result equals replaying :meth:`autotile.te.LoopNest.byte_trace`
through :func:`~autotile.measure.simulate_cache` (tested).

One exact shortcut is taken: an iteration whose cache lines are the same, in
the same order, as the previous iteration's lines only re-touches the lines
just used. Each of its accesses is a hit and the LRU stacks end in the same
state, provided every set can hold all the lines of one iteration
(``ways >= n_accesses``). Such iterations are counted as hits without being
replayed. When ``ways < n_accesses`` the shortcut is off.

A second, larger exact shortcut lives in :mod:`autotile.measure.cpu._periodic`
and is on by default (``simulate_nest(..., extrapolate=True)``): where the
cache states after iterations of a loop provably repeat, translated by the
loop's stride, the rest of the loop's hits are added instead of replayed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numba
import numpy as np
import numpy.typing as npt

from autotile.errors import MeasureError
from autotile.measure.cpu._cachesim import CacheConfig, CacheStats, MissBreakdown, sa_touch

if TYPE_CHECKING:
    from autotile.te import LoopNest, PackedLayout

_I64 = npt.NDArray[np.int64]

__all__ = ["AffineAccess", "AffineNest", "simulate_nest"]

_AFFINE, _PACKED = 0, 1


@dataclass(frozen=True)
class AffineAccess:
    """Where one access of the loop body goes, as a function of the root axes.

    Attributes
    ----------
    base_bytes : int
        Byte address of the buffer's element 0.
    itemsize : int
        Bytes per element.
    linear : tuple of int, length n_axes
        For affine layouts (row-major, padded rows): element offset
        ``= linear @ axes + offset``.
    offset : int
        Constant element offset (affine layouts).
    packed : tuple or None
        For a packed layout ``X[r, c] -> Xp[c // T][r][c % T]``:
        ``(row_coef, row_off, col_coef, col_off, T, n_rows)`` with
        ``r = row_coef @ axes + row_off`` and likewise ``c``.
    """

    base_bytes: int
    itemsize: int
    linear: tuple[int, ...] = ()
    offset: int = 0
    packed: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class AffineNest:
    """A loop nest in the form the numba walker takes.

    Attributes
    ----------
    extents : tuple of int, length n_loops
        Loop extents, outer to inner.
    coefficients : tuple of tuple of int, shape (n_loops, n_axes)
        Root axis ``a`` equals ``sum_l coefficients[l][a] * v_l``.
    accesses : tuple of AffineAccess
        The body's accesses, in program order.
    total_bytes : int
        Bytes spanned by all buffers (addresses lie in ``[0, total_bytes)``).
    """

    extents: tuple[int, ...]
    coefficients: tuple[tuple[int, ...], ...]
    accesses: tuple[AffineAccess, ...]
    total_bytes: int

    @property
    def n_iters(self) -> int:
        """Iterations of the innermost body."""
        return int(np.prod(self.extents, dtype=np.int64)) if self.extents else 1

    @classmethod
    def from_loop_nest(cls, nest: LoopNest) -> AffineNest:
        """Convert a lowered :class:`autotile.te.LoopNest`.

        Raises
        ------
        MeasureError
            If the nest is not affine (it has fused loops) or a buffer has a
            layout this walker does not know.
        """
        coefs = nest.affine_coefficients()
        if coefs is None:
            raise MeasureError("loop nest is not affine (fused loops): use byte_trace() instead")
        bufs = {b.name: b for b in nest.buffers}
        accs = []
        for acc in nest.accesses:
            buf = bufs[acc.buffer]
            ic = np.asarray(acc.index_coefficients, np.int64)
            io = np.asarray(acc.index_offsets, np.int64)
            layout = buf.layout
            kind = type(layout).__name__
            if kind == "PackedLayout":
                if len(buf.shape) != 2:
                    raise MeasureError(
                        f"packed layout needs a 2-D buffer, got {buf.name}{buf.shape}")
                tile = cast("PackedLayout", layout).tile  # kind == "PackedLayout" above
                accs.append(AffineAccess(
                    buf.base_bytes, buf.itemsize,
                    packed=(tuple(int(x) for x in ic[0]), int(io[0]),
                            tuple(int(x) for x in ic[1]), int(io[1]),
                            int(tile), int(buf.shape[0])),
                ))
            else:
                # Affine layouts: the element offset of a unit step along each dim.
                nd = len(buf.shape)
                eye = np.eye(nd, dtype=np.int64)
                zero = int(layout.element_offset(*[np.zeros(1, np.int64)] * nd)[0])
                strides = np.array(
                    [int(layout.element_offset(*[e[d:d + 1] for d in range(nd)])[0]) - zero
                     for e in eye], np.int64)
                lin = strides @ ic
                off = int(strides @ io) + zero
                accs.append(AffineAccess(buf.base_bytes, buf.itemsize,
                                         tuple(int(x) for x in lin), off))
        total = max(b.base_bytes + b.size_bytes for b in nest.buffers)
        return cls(tuple(int(lp.extent) for lp in nest.loops),
                   tuple(tuple(int(x) for x in row) for row in coefs),
                   tuple(accs), int(total))

    def simplified(self) -> AffineNest:
        """The same iteration order with fewer loops.

        Loops of extent 1 are dropped, and an outer loop directly followed by
        an inner loop with ``coef_outer == extent_inner * coef_inner`` (the two
        halves of a split, adjacent) is merged into one loop of extent
        ``extent_outer * extent_inner``. The sequence of root-axis values, and
        so the trace, is unchanged: ``v_o * coef_o + v_i * coef_i ==
        (v_o * extent_i + v_i) * coef_i`` and the merged counter runs in order.
        """
        ext: list[int] = []
        coef: list[tuple[int, ...]] = []
        for e, c in zip(self.extents, self.coefficients):
            if e == 1:
                continue
            if coef and coef[-1] == tuple(x * e for x in c):
                ext[-1] *= e
                coef[-1] = c
                continue
            ext.append(e)
            coef.append(c)
        return AffineNest(tuple(ext), tuple(coef), self.accesses, self.total_bytes)

    def _arrays(self) -> tuple[_I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64]:
        """``(ext, coef, kind, base, item, lin, off, rc, cc, misc)``: the arguments of ``_walk``."""
        n_axes = len(self.coefficients[0]) if self.coefficients else 0
        p = len(self.accesses)
        kind = np.zeros(p, np.int64)
        base = np.zeros(p, np.int64)
        item = np.zeros(p, np.int64)
        lin = np.zeros((p, n_axes), np.int64)
        off = np.zeros(p, np.int64)
        rc = np.zeros((p, n_axes), np.int64)
        cc = np.zeros((p, n_axes), np.int64)
        misc = np.zeros((p, 4), np.int64)  # row_off, col_off, T, n_rows
        for a, acc in enumerate(self.accesses):
            base[a], item[a] = acc.base_bytes, acc.itemsize
            if acc.packed is None:
                kind[a] = _AFFINE
                lin[a] = acc.linear
                off[a] = acc.offset
            else:
                kind[a] = _PACKED
                r, ro, c, co, t, nr = acc.packed
                rc[a], cc[a] = r, c
                misc[a] = (ro, co, t, nr)
        ext = np.asarray(self.extents, np.int64)
        coef = np.asarray(self.coefficients, np.int64).reshape(len(ext), n_axes)
        return ext, coef, kind, base, item, lin, off, rc, cc, misc


@numba.njit(cache=True, nogil=True)
def _walk(ext, coef, kind, base, item, lin, off, rc, cc, misc,  # type: ignore[no-untyped-def]
          line_bytes, n_sets, ways, fa_cap, n_ids, shortcut):  # pragma: no cover
    n_loops = ext.shape[0]
    n_axes = coef.shape[1]
    p = kind.shape[0]
    # set-associative state
    tags = np.full((n_sets, ways), -1, np.int64)
    stamp = np.zeros((n_sets, ways), np.int64)
    # fully associative state (doubly linked list, MRU at head)
    prev = np.full(n_ids, -1, np.int64)
    nxt = np.full(n_ids, -1, np.int64)
    resident = np.zeros(n_ids, np.bool_)
    seen = np.zeros(n_ids, np.bool_)
    ends = np.array([-1, -1, 0], np.int64)
    sa_hits = 0
    fa_hits = 0
    touched = 0
    clock = 0
    cur = np.zeros(n_axes, np.int64)
    cnt = np.zeros(n_loops, np.int64)
    lines = np.zeros(p, np.int64)
    last = np.full(p, -1, np.int64)
    # Affine accesses: keep byte addresses up to date incrementally.
    addr = np.zeros(p, np.int64)
    step = np.zeros((n_loops, p), np.int64)
    for a in range(p):
        if kind[a] == 0:
            addr[a] = base[a] + off[a] * item[a]
            for l in range(n_loops):
                s_ = 0
                for x in range(n_axes):
                    s_ += lin[a, x] * coef[l, x]
                step[l, a] = s_ * item[a]
    any_packed = False
    for a in range(p):
        if kind[a] != 0:
            any_packed = True
    pow2_sets = (n_sets & (n_sets - 1)) == 0
    n_iters = 1
    for l in range(n_loops):
        n_iters *= ext[l]
    for it in range(n_iters):
        # addresses of this iteration
        same = shortcut
        for a in range(p):
            if kind[a] == 0:
                ln = addr[a] // line_bytes
            else:
                r = misc[a, 0]
                c = misc[a, 1]
                for x in range(n_axes):
                    r += rc[a, x] * cur[x]
                    c += cc[a, x] * cur[x]
                t = misc[a, 2]
                e = (c // t) * (misc[a, 3] * t) + r * t + c % t
                ln = (base[a] + e * item[a]) // line_bytes
            lines[a] = ln
            if ln != last[a]:
                same = False
        if same:
            sa_hits += p
            fa_hits += p
            clock += p
        else:
            for a in range(p):
                ln = lines[a]
                last[a] = ln
                clock += 1
                s = (ln & (n_sets - 1)) if pow2_sets else ln % n_sets
                if sa_touch(tags, stamp, s, ln, clock):
                    sa_hits += 1
                if not seen[ln]:
                    seen[ln] = True
                    touched += 1
                # fully associative LRU (the body of _cachesim.fa_touch, inlined by hand:
                # a call costs ~70% of the walk's time here)
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
        # advance the mixed-radix loop counter
        l = n_loops - 1
        while l >= 0:
            cnt[l] += 1
            for a in range(p):
                addr[a] += step[l, a]
            if any_packed:
                for x in range(n_axes):
                    cur[x] += coef[l, x]
            if cnt[l] < ext[l]:
                break
            for a in range(p):
                addr[a] -= step[l, a] * ext[l]
            if any_packed:
                for x in range(n_axes):
                    cur[x] -= coef[l, x] * ext[l]
            cnt[l] = 0
            l -= 1
    return sa_hits, fa_hits, touched


#: Smallest nest (in accesses) that :func:`simulate_nest` extrapolates by
#: default. Below it the comparisons cost more than they save: on 300 random
#: GEMM schedules each (CPU time, same run) extrapolating took 0.28x the speed of
#: plain simulation at n = 8 (1,536 accesses), 0.83x at n = 16 (12,288), 1.9x at
#: n = 32 (98,304) and 4.0x at n = 64 (786,432).
EXTRAPOLATE_MIN_ACCESSES = 50_000


def _affine_steps(nest: AffineNest) -> tuple[_I64, _I64, _I64, _I64]:
    """Return ``(ext, step, addr0, base)`` of an affine nest.

    Extents; bytes each access moves per iteration of each loop, of shape
    (n_loops, n_accesses); start addresses; buffer bases.
    """
    ext, coef, _, base, item, lin, off, _, _, _ = nest._arrays()
    step = (coef @ lin.T) * item[None, :]
    addr0 = base + off * item
    return ext, np.ascontiguousarray(step, np.int64), addr0.astype(np.int64), base


def simulate_nest(
    nest: AffineNest | LoopNest, cache: CacheConfig | None = None, *, shortcut: bool = True,
    extrapolate: bool | None = None,
) -> MissBreakdown:
    """Simulate an affine loop nest through a set-associative and a fully associative cache.

    Parameters
    ----------
    nest : AffineNest or autotile.te.LoopNest
        The loop nest; a ``LoopNest`` is converted with
        :meth:`AffineNest.from_loop_nest`.
    cache : CacheConfig, optional
        Set-associative geometry (default 8 KB, 4-way, 64-byte lines); the
        fully associative cache has the same capacity and line size.
    shortcut : bool, default=True
        Count an iteration that repeats the previous iteration's lines as hits
        without replaying it (exact when ``ways >= n_accesses``; ignored
        otherwise).
    extrapolate : bool, optional
        Where a loop's cache states provably repeat, add the repeating counts
        instead of replaying the rest of the loop (exact; see
        :mod:`autotile.measure.cpu._periodic`). Default: only for nests of at
        least ``EXTRAPOLATE_MIN_ACCESSES`` (5e4) accesses, where it pays for
        its comparisons. Nests with a packed layout are always simulated in
        full.

    Returns
    -------
    MissBreakdown
        Both caches' :class:`CacheStats`; equal to replaying the nest's byte
        trace with :func:`~autotile.measure.classify_misses`.

    Raises
    ------
    MeasureError
        If the nest is not affine or uses an unknown layout.
    """
    cache = cache or CacheConfig()
    if not isinstance(nest, AffineNest):
        nest = AffineNest.from_loop_nest(nest)
    n_ids = nest.total_bytes // cache.line_bytes + 1
    use_shortcut = bool(shortcut and cache.ways >= len(nest.accesses))
    n = nest.n_iters * len(nest.accesses)
    packed = any(acc.packed is not None for acc in nest.accesses)
    if extrapolate is None:
        extrapolate = n >= EXTRAPOLATE_MIN_ACCESSES
    if extrapolate and not packed and nest.accesses:
        from autotile.measure.cpu._periodic import periodic_hits
        from autotile.measure.cpu._periodic_loops import footprint_lines

        ext, step, addr0, base = _affine_steps(nest)
        sa_hits, fa_hits, _ = periodic_hits(ext, step, addr0, base, nest.total_bytes,
                                            cache.line_bytes, cache.n_sets, cache.ways,
                                            use_shortcut)
        touched = footprint_lines(ext, step, addr0, cache.line_bytes, n_ids)
    else:
        sa_hits, fa_hits, touched = _walk(
            *nest._arrays(), cache.line_bytes, cache.n_sets, cache.ways, cache.n_lines, n_ids,
            use_shortcut)
    sa = CacheStats(n, int(sa_hits), n - int(sa_hits), int(touched), int(touched), cache.line_bytes)
    fa = CacheStats(n, int(fa_hits), n - int(fa_hits), int(touched), int(touched), cache.line_bytes)
    return MissBreakdown(sa, fa)
