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

Loops that move along a row
---------------------------
At ``n = 1024`` a ``j`` or ``k`` loop moves some buffer by a few bytes per
iteration: its period is half the loop or more, so the argument above never
applies to it, and only the ``i`` loops inside it (period 1) were extrapolated,
once per run, a million runs per schedule. But while such an access stays in
the same lines it does not move at the level of lines. The same argument
therefore holds with ``P = 1`` and ``phi`` shifting those buffers by 0 lines,
the others (which must move by a multiple of ``line_bytes * n_sets`` bytes)
by their stride, for as long as the access keeps its lines: if
``S_v = phi(S_{v-1})`` and ``B_{w+1} = phi(B_w)`` for ``w = v .. v+h-1``,
the ``h`` iterations after ``v`` each have the hits of iteration ``v`` and
``S_{v+h} = phi^h(S_v)``. The horizon ``h`` (the iterations before the
access crosses into its next line) is computed at run time from the
access's address and a bound on its offsets within one iteration
(:func:`~autotile.measure.cpu._periodic_loops._in_line_window`); nothing is
extrapolated past it. The walker compares states after the first few
iterations of each such window (an *in-line* loop, see
:func:`~autotile.measure.cpu._periodic_loops.loop_periods`).

A fully associative stack that need not be compared
---------------------------------------------------
For a loop of period 1 (or an in-line loop inside one line window) every
iteration's trace is ``phi`` of the one before, from the run's (or the
window's) first iteration ``w0`` on. A full LRU stack holds the ``C`` most
recently used distinct lines of the trace so far, in order of last use. If
every line of the stack after iteration ``c`` was last touched after
iteration ``w0`` ended (a *fresh* stack), the stack is that list for the
trace of iterations ``w0+1 .. c`` alone; ``phi`` is one-to-one on trace lines
and the trace of ``w0 .. c-1`` is ``phi^-1`` of it, so the stack after
iteration ``c - 1`` was ``phi^-1`` of this one: ``S_c = phi(S_(c-1))`` holds
for the fully associative cache without a snapshot or a comparison. The
walker keeps, per slot of the stack, a clock value never later than the
line's last access (a restored stack gets -1, an extrapolated fresh one the
clock of the jump, since its lines were all touched during the skipped
iterations), so the test is one comparison: the least recently used slot's
value against the clock at the end of iteration ``w0``. The sets of the
set-associative cache are still compared with a snapshot, and on a match the
stack is relabelled in place (``phi^q`` of each line) instead of rebuilt.

A stack that is not fresh
-------------------------
A loop of period 1 with a long run waits, as above, until its stack is fresh:
with ``C`` lines and ``m`` new lines per iteration, about ``C / m`` iterations
(64 at ``n = 1024``), while its sets match after a few. This holds for an
innermost loop and for one with a few body iterations inside it (at most
``INNER_MAX_BODIES``, e.g. an ``i`` loop over a ``j`` loop of 4 iterations).
Let the run begin at iteration ``w0`` (clock ``t0`` before its first access,
``t1`` after its first iteration). In the run, every access is simulated, or
repeats the lines of the body iteration just before it in the same iteration
of the loop (the same-lines shortcut: the first body iteration of each
iteration of the loop is always simulated), and no loop inside it jumps
(else the walker does not try). A line's time above ``t0`` is then its last
access in the run, or an earlier access of that repetition, in the same
iteration of the loop. The stack after
iteration ``c`` is then ``R ++ P``: ``R`` the lines touched in the run by last
use (time above ``t0``), whose tail ``U`` holds those last touched in
iteration ``w0`` (time at most ``t1``), and ``P`` older lines.

Hits repeat. Take access ``a`` of iteration ``t + 1 > c`` on line ``x``, and
``y = phi^-1(x)`` its line in iteration ``t``. (i) If ``x`` was touched after
iteration ``w0``, at ``(s, b)``, then ``y`` was touched at ``(s - 1, b)`` and
not since (``phi`` is one-to-one on trace lines), and the distinct lines in
between are ``phi`` of those of ``y``: equal stack distances, equal hits, for
any earlier state. (ii) Else ``x`` is a line of ``U`` or ``P`` or new, and
``y`` was not touched in the run before: both hit only if still held from
before. The walker tries a jump only if no access of iteration ``c`` hit a
line with time at most ``t1`` (counted while simulating), so the first-touch
accesses of iteration ``c`` missed; and :func:`_fa_extend` refuses if a later
iteration touches a line of ``U``, or a line of ``P`` at position ``pos``
(0 = most recent) at an iteration ``c + k`` with ``m_c * (k - 1) < C - pos``,
``m_c`` the misses of iteration ``c``. By induction over the accesses, each
later iteration has ``m_c`` misses; hits on ``R`` do not move the older lines
below them, so every miss pushes that line one place down and it has left the
cache before ``c + k``: those accesses miss too. So every later iteration
has the hits of iteration ``c`` (the set-associative cache by the comparison
of its sets with ``phi`` of the snapshot, as above). Accesses are ordered by
iteration, then by position ``b`` in it; a later iteration touches ``phi^k``
of the lines of iteration ``c``, which the walker lists by walking the loops
inside (only accesses that the loop moves: the others are in ``R``).

The final state. Lines last used at ``s + K`` after ``K`` more iterations are
``phi^K`` of those last used at ``s`` now, for ``s >= w0``, in the same
order; lines last used at ``w0 + j`` (``j < K``) are ``phi^j(U)``, as no line
of ``U`` is touched again. Older lines keep their order and are never hit.
So the stack after the run's last iteration (``K = e - 1 - c`` later) is the
first ``C`` lines of ``phi^K(R) ++ phi^(K-1)(U) ++ ... ++ U ++ P'``, with
``P'`` the lines of ``P`` that no later iteration touches (one that is
touched, after its eviction, is in the run's part). If a full stack would
come out shorter than ``C``, the lines below are unknown and nothing is
extrapolated. The new lines get time ``t0 + 1``, never later than their last
access. Such a loop is tried at its sparse comparisons from iteration
``INNER_FIRST`` on (from the usual first one if its last try failed), if it
runs at least ``2 * INNER_FIRST`` iterations and at least ``INNER_MIN_EXT``
body iterations in all (a shorter one gains less than the rebuild costs).

Where no loop qualifies, an in-line loop of period 1 with at most
``INNER_MAX_BODIES_LOCAL`` body iterations per iteration (and at least
``INNER_MIN_WINDOW`` per line window) is extended the same way within its
line windows: a window is a run of the argument above, as every iteration of
it is ``phi`` of the one before (``phi`` moving its in-line buffers by 0
lines), ``w0`` the window's first iteration, and ``times`` at most the
window's horizon. Such a loop is tried at the comparisons of its windows.

Loops of exactly two periods
----------------------------
At ``n = 1024`` a row of 4 KB is two set cycles (2 KB), so many loops that
move along a row have ``ext == 2 * P``. The argument above holds with ``q = 0``
whole blocks and a partial block of ``r = P - 1`` iterations: if
``S_P = phi(S_0)``, iterations ``P+1 .. 2P-1`` repeat iterations
``1 .. P-1`` and the state after them is ``phi(S_(P-1))``. A periodic loop of
two periods is compared at iteration ``P`` (and, as any dense loop, up to
iteration ``e - 2``). An in-line loop of two periods keeps its line windows
and is also compared at iteration ``P`` with its iteration 0, with ``phi``
moving each buffer by its steps over ``P`` iterations (whole set cycles),
and if that fails once more at iteration ``P + j2`` with iteration ``j2``, the
first iteration after 0 at which the walk stops (the end of the first line
window when that window was extrapolated). Both use snapshots of the states
at those iterations and of ``S_(P-1)``.

What is compared, and when, only decides how much is extrapolated, never
the counts: a loop whose runs never match is watched in fewer and fewer runs
(``MAX_BACKOFF``), and an unwatched innermost loop's iterations that repeat the
previous iteration's lines are counted in one step (the shortcut of
:mod:`~autotile.measure.cpu._nestsim`, applied up to the next line crossing).

Compulsory misses (distinct lines) do not repeat like this; they are counted
exactly by :func:`~autotile.measure.cpu._periodic_loops.footprint_lines`, which
marks the lines an access spans or walks it only over the loops that move it.

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

import numba
import numpy as np
import numpy.typing as npt

from autotile.measure.cpu._periodic_loops import loop_periods

_I64 = npt.NDArray[np.int64]

__all__ = ["walk_periodic", "periodic_hits"]

#: Iterations compared one by one per run of a densely watched loop.
GIVE_UP = 16
#: First iteration of a sparse comparison; later ones double it.
FIRST_SPARSE = 32
#: Comparisons per line window of an in-line loop.
GIVE_UP_IN_LINE = 4
#: Most runs of a loop left unwatched after runs without a match (see walk_periodic).
MAX_BACKOFF = 63
#: First comparison in a run of an innermost loop of period 1 (see _fa_extend).
INNER_FIRST = 4
#: Fewest iterations of an innermost loop for that (a shorter one gains less than it costs).
INNER_MIN_EXT = 128
#: Most body iterations per iteration of such a loop when it is not innermost.
INNER_MAX_BODIES = 64
#: Most body iterations per iteration of an in-line loop that extends its stack within
#: a line window (taken only where no loop qualifies by the rules above).
INNER_MAX_BODIES_LOCAL = 512
#: Fewest body iterations per line window of such a loop (a shorter window gains less
#: than its comparisons cost).
INNER_MIN_WINDOW = 256


@numba.njit(cache=True, nogil=True, inline="always")
def _region(x, lo, hi):  # type: ignore[no-untyped-def]  # pragma: no cover
    for r in range(lo.shape[0]):
        if lo[r] <= x < hi[r]:
            return r
    return -1


@numba.njit(cache=True, nogil=True, inline="always")
def _sa_touch_mru(tags, s, line):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Access ``line`` in set ``s``, whose ways are kept MRU first; return whether it hit.

    The lines ahead of it move down one way; on a miss the last way (the LRU
    line, or an empty way, -1) drops out.
    """
    x = tags[s, 0]
    if x == line:
        return True
    for w in range(1, tags.shape[1]):
        y = tags[s, w]
        tags[s, w] = x
        if y == line:
            tags[s, 0] = line
            return True
        x = y
    tags[s, 0] = line
    return False


@numba.njit(cache=True, nogil=True)
def _snapshot(tags, sl_line, sl_next, ends, out_sa, out_fa):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Write both caches' states in canonical form (MRU first, -1 padded).

    The fully associative stack is a list of slots (``ends[0]`` the MRU slot,
    ``sl_next`` the next slot towards the LRU end, ``sl_line`` each slot's line).
    """
    n_sets, ways = tags.shape
    for s in range(n_sets):
        for w in range(ways):
            out_sa[s * ways + w] = tags[s, w]
    x = ends[0]
    k = 0
    while x >= 0:
        out_fa[k] = sl_line[x]
        k += 1
        x = sl_next[x]
    for j in range(k, out_fa.shape[0]):
        out_fa[j] = -1
    return k


@numba.njit(cache=True, nogil=True)
def _sa_equal(tags, old_sa, shift_l, lo, hi, active, x_lo, x_hi):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The set-associative half of :func:`_live_equal`.

    Compares the sets in ``active`` with ``phi(old_sa)``, resets ``x_lo`` and
    ``x_hi`` and widens them by the lines of ``old_sa`` compared.
    """
    n_sets, ways = tags.shape
    for r in range(lo.shape[0]):
        x_lo[r] = hi[r]
        x_hi[r] = lo[r] - 1
    for s in range(n_sets):
        if not active[s]:
            continue
        for w in range(ways):
            x = old_sa[s * ways + w]
            t = tags[s, w]
            if x < 0 or t < 0:
                if x != t:
                    return False
                continue
            r = _region(x, lo, hi)
            y = x + shift_l[r]
            if y != t or not (lo[r] <= y < hi[r]):
                return False
            x_lo[r] = min(x_lo[r], x)
            x_hi[r] = max(x_hi[r], x)
    return True


@numba.njit(cache=True, nogil=True)
def _live_equal(tags, sl_line, sl_next, ends, old_sa, old_fa, shift_l, lo, hi, active, x_lo,  # type: ignore[no-untyped-def]
                x_hi):  # pragma: no cover
    """Whether the caches now hold ``phi(old)``, every line kept inside its buffer.

    Only the sets in ``active`` (those the loop touched since ``old``) are
    compared, way by way (MRU first), and the comparison stops at the first
    difference. When they are equal, ``x_lo[r]`` and ``x_hi[r]`` hold the
    smallest and largest line of buffer ``r`` among the lines compared (those
    of ``old`` in the active sets and in the fully associative stack: the lines
    that :func:`_shifted_ok` checks), ``x_lo[r] > x_hi[r]`` if there are none.
    """
    if not _sa_equal(tags, old_sa, shift_l, lo, hi, active, x_lo, x_hi):
        return False
    y = ends[0]
    for i in range(old_fa.shape[0]):
        x = old_fa[i]
        if x < 0:
            return y < 0
        if y < 0:
            return False
        r = _region(x, lo, hi)
        z = x + shift_l[r]
        if z != sl_line[y] or not (lo[r] <= z < hi[r]):
            return False
        x_lo[r] = min(x_lo[r], x)
        x_hi[r] = max(x_hi[r], x)
        y = sl_next[y]
    return y < 0


@numba.njit(cache=True, nogil=True)
def _fa_fresh(sl_time, ends, fa_cap, since):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Whether the fully associative stack is full of lines touched after clock ``since``.

    ``sl_time`` holds, per slot, a clock value at or before the slot line's last
    access, so the least recently used slot's value bounds them all.
    """
    return ends[2] == fa_cap and sl_time[ends[1]] > since


@numba.njit(cache=True, nogil=True)
def _fa_relabel(slot_of, sl_line, sl_time, ends, shift_l, times, lo, hi, x_lo, x_hi,  # type: ignore[no-untyped-def]
                clock, tmp):  # pragma: no cover
    """Replace the fully associative stack ``S`` by ``phi^times(S)``, if it stays in its buffers.

    ``S = phi(S_old)`` is known (not compared), so the lines of ``S_old`` are
    ``phi^-1`` of the stack's. Where ``phi`` moves some buffer they widen
    ``x_lo`` and ``x_hi`` (as :func:`_live_equal` would; where it moves none,
    no line can leave its buffer), and the relabelling happens only if
    :func:`_range_ok` then holds for ``times + 1`` shifts of ``S_old``;
    returns whether it did. The list order is kept; every slot's time becomes
    ``clock``. ``tmp`` (at least ``ends[2]`` long) is scratch space.
    """
    k = ends[2]
    n_reg = lo.shape[0]
    moving = False
    for r in range(n_reg):
        if shift_l[r] != 0:
            moving = True
    if moving:
        n_mv = 0
        for i in range(k):
            y = sl_line[i]
            # the buffer of a line (as _region: a line shared by two buffers is the
            # lower one's): the number of buffers that end at or below it
            r = 0
            for j in range(n_reg - 1):
                r += y >= hi[j]
            d = shift_l[r]
            x = y - d
            x_lo[r] = min(x_lo[r], x)
            x_hi[r] = max(x_hi[r], x)
            if d != 0:
                tmp[n_mv] = i
                n_mv += 1
        if not _range_ok(x_lo, x_hi, shift_l, times + 1, lo, hi):
            return False
        for m in range(n_mv):
            i = tmp[m]
            y = sl_line[i]
            r = 0
            for j in range(n_reg - 1):
                r += y >= hi[j]
            z = y + shift_l[r] * times
            sl_line[i] = z
            slot_of[z] = i
    elif not _range_ok(x_lo, x_hi, shift_l, times + 1, lo, hi):
        # phi is the identity: the stack's lines stay where they are (the check is
        # that of the set-associative lines compared)
        return False
    for i in range(k):
        sl_time[i] = clock
    return True


@numba.njit(cache=True, nogil=True)
def _fa_extend(slot_of, sl_line, sl_prev, sl_next, sl_time, ends, fa_cap, lines, shift_l,  # type: ignore[no-untyped-def]
               times, lo, hi, thr0, thr, n_miss, new_time, tmp_line, tmp_time, tmp_flag,
               tmp_acc               ):  # pragma: no cover
    """Set the fully associative stack to its state ``times`` iterations later, if provable.

    For a loop of period 1 (see ``INNER_MAX_BODIES``) at the end of its iteration
    ``c`` of a run whose first iteration began after clock ``thr0`` and ended at
    clock ``thr`` (the stack's times exact to the iteration since then; see "A
    stack that is not fresh" in the module docstring). ``lines`` holds the lines
    of iteration ``c`` (at least those of the accesses that the loop moves;
    repeats allowed), ``n_miss`` its misses. The stack is ``R ++ P``: ``R`` the
    lines touched in the run (time above ``thr0``), ending with ``U``, those
    last touched in its first iteration (time at most ``thr``), and ``P`` the
    older lines. Returns False,
    changing nothing, if a later iteration of the run may touch a line of
    ``U``, or a line of ``P`` before ``n_miss`` misses per iteration have
    evicted it. Else the stack becomes the first ``fa_cap`` lines of
    ``phi^times(R) ++ phi^(times-1)(U) ++ ... ++ phi(U) ++ U ++ P'``, ``P'``
    the lines of ``P`` that no later iteration touches (False if a full stack
    would come out short), the new lines' times ``new_time``; returns True.
    ``tmp_line``, ``tmp_time`` and ``tmp_flag`` (``fa_cap`` long) and ``tmp_acc``
    (at least ``5 * len(lines) + 2 * fa_cap`` long) are scratch (int64, but
    ``tmp_flag``, bool): nothing is allocated, as an allocation costs about what
    testing the whole stack does.
    """
    p = lines.shape[0]
    k_all = ends[2]
    full = k_all == fa_cap
    # per access that the loop moves: its line, the lines it moves per iteration (d),
    # |d| - 1 where a power of two (no division) else -1, and the lowest and highest
    # line it touches later (phi^k of its line, 1 <= k <= times); g_lo .. g_hi spans
    # them all, so that most lines need no test against each access
    acc = tmp_acc[:5 * p].reshape(5, p)
    order = tmp_acc[5 * p:5 * p + fa_cap]  # the stack's slots, MRU first
    aux = tmp_acc[5 * p + fa_cap:5 * p + 2 * fa_cap]
    n_flag = 0  # lines of P that a later iteration touches
    n_mv = 0
    g_lo = 0
    g_hi = -1
    for a in range(p):
        y = lines[a]
        d = shift_l[_region(y, lo, hi)]
        if d == 0:
            continue  # it touches its line of iteration c again: a line of R
        if d > 0:
            a_lo = y + d
            a_hi = y + times * d
        else:
            a_lo = y + times * d
            a_hi = y + d
        ad = abs(d)
        acc[0, n_mv] = y
        acc[1, n_mv] = d
        acc[2, n_mv] = ad - 1 if (ad & (ad - 1)) == 0 else -1
        acc[3, n_mv] = a_lo
        acc[4, n_mv] = a_hi
        if n_mv == 0 or a_lo < g_lo:
            g_lo = a_lo
        if n_mv == 0 or a_hi > g_hi:
            g_hi = a_hi
        n_mv += 1
    # pass 1: the lines not touched after the run's first iteration (U and P) that a
    # later iteration touches (phi^k of a line of iteration c, 1 <= k <= times). A
    # line of P at position pos is evicted after fa_cap - pos misses: touched at
    # k with n_miss * (k - 1) < fa_cap - pos it may still be held (False); later, it
    # is left out of P'. A line of U (or any line where no miss evicts) may be held
    # at every k
    m = 0  # lines of R
    u = 0  # lines of U
    pos = 0
    x = ends[0]
    while x >= 0:
        t = sl_time[x]
        tmp_flag[pos] = False
        tmp_line[pos] = sl_line[x]
        tmp_time[pos] = t
        if t > thr:
            m += 1
        else:
            in_u = t > thr0
            if in_u:
                m += 1
                u += 1
            z = sl_line[x]
            if g_lo <= z <= g_hi:
                near_all = in_u or not full or n_miss == 0
                for b in range(n_mv):
                    if z < acc[3, b] or z > acc[4, b]:
                        continue
                    d = acc[1, b]
                    diff = z - acc[0, b]
                    mk = acc[2, b]
                    if (diff & mk) == 0 if mk >= 0 else diff % d == 0:
                        if near_all or n_miss * (diff // d - 1) < fa_cap - pos:
                            return False
                        if not tmp_flag[pos]:
                            tmp_flag[pos] = True
                            n_flag += 1
        order[pos] = x
        pos += 1
        x = sl_next[x]
    n_u = min(times * u, fa_cap - m)  # copies of U (phi^(times-1)(U) .. U) that fit
    n_new = min(fa_cap, m + n_u + (k_all - m - n_flag))
    if full and n_new < fa_cap:
        return False  # the lines below P' are not known
    keep = n_new - m - n_u  # lines of P' that fit
    if full and 4 * keep >= fa_cap:
        # every slot stays occupied: R is relabelled in place, the lines of P' keep
        # their slots (no slot_of write, a scattered write into an array of all lines),
        # the copies of U take the slots of the lines of P that leave; then the slots
        # are linked in the new order. (Where few lines of P' stay, the new list is
        # written to slots 0 .. n_new - 1 as below, which is cheaper.)
        nf = 0  # free slots, in aux
        kept = 0
        for i in range(m, k_all):
            if tmp_flag[i] or kept == keep:
                aux[nf] = order[i]
                nf += 1
            else:
                order[m + kept] = order[i]  # P' after R, in order (m + kept <= i)
                kept += 1
        # the order of the new list: R, the copies of U, P' (tmp_time holds it)
        for i in range(m):
            tmp_time[i] = order[i]
        n = m
        j = times - 1
        f = 0
        while n < m + n_u:
            for i in range(m - u, m):
                if n >= m + n_u:
                    break
                y = sl_line[order[i]]  # a line of U (R is relabelled below)
                z = y + shift_l[_region(y, lo, hi)] * j
                x = aux[f]
                f += 1
                sl_line[x] = z
                slot_of[z] = x
                sl_time[x] = new_time
                tmp_time[n] = x
                n += 1
            j -= 1
        for i in range(m):
            x = order[i]
            y = sl_line[x]
            z = y + shift_l[_region(y, lo, hi)] * times
            sl_line[x] = z
            slot_of[z] = x
            sl_time[x] = new_time
        for i in range(kept):
            tmp_time[n] = order[m + i]
            n += 1
        prev = -1
        for i in range(n):
            x = tmp_time[i]
            sl_prev[x] = prev
            if prev >= 0:
                sl_next[prev] = x
            prev = x
        sl_next[prev] = -1
        ends[0] = tmp_time[0]
        ends[1] = prev
        return True
    # else the new list in slots 0 .. n - 1 (the old one is in tmp_line / tmp_time)
    n = 0
    for i in range(m):
        y = tmp_line[i]
        z = y + shift_l[_region(y, lo, hi)] * times
        sl_line[n] = z
        slot_of[z] = n
        sl_time[n] = new_time
        n += 1
    j = times - 1
    while n < m + n_u:
        for i in range(m - u, m):
            if n >= m + n_u:
                break
            y = tmp_line[i]
            z = y + shift_l[_region(y, lo, hi)] * j
            sl_line[n] = z
            slot_of[z] = n
            sl_time[n] = new_time
            n += 1
        j -= 1
    for i in range(m, k_all):
        if n >= n_new:
            break
        if not tmp_flag[i]:
            y = tmp_line[i]
            sl_line[n] = y
            slot_of[y] = n
            sl_time[n] = tmp_time[i]
            n += 1
    _link_slots(sl_prev, sl_next, ends, n)
    return True


@numba.njit(cache=True, nogil=True)
def _iter_lines(addr, step, ext, l0, line_bytes, cnt, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Write the distinct lines of one iteration of loop ``l0`` to ``out``; return how many.

    ``addr`` holds the accesses' byte addresses at the iteration's first body
    iteration; the loops inside ``l0`` are walked (their counters in ``cnt``).
    Only accesses that loop ``l0`` moves count (the others touch the same
    lines in every iteration).
    """
    n_loops, p = step.shape
    for l in range(l0 + 1, n_loops):
        cnt[l] = 0
    n = 0
    while True:
        for a in range(p):
            if step[l0, a] == 0:
                continue
            x = addr[a]
            for l in range(l0 + 1, n_loops):
                x += step[l, a] * cnt[l]
            ln = x // line_bytes
            new = True
            for i in range(n - 1, -1, -1):
                if out[i] == ln:
                    new = False
                    break
            if new:
                out[n] = ln
                n += 1
        l = n_loops - 1
        while l > l0:
            cnt[l] += 1
            if cnt[l] < ext[l]:
                break
            cnt[l] = 0
            l -= 1
        if l == l0:
            break
    return n


@numba.njit(cache=True, nogil=True)
def _link_slots(sl_prev, sl_next, ends, k):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Make slots ``0 .. k-1`` the fully associative stack, MRU first."""
    for i in range(k):
        sl_prev[i] = i - 1
        sl_next[i] = i + 1
    if k == 0:
        ends[0] = -1
        ends[1] = -1
    else:
        sl_next[k - 1] = -1
        ends[0] = 0
        ends[1] = k - 1
    ends[2] = k


@numba.njit(cache=True, nogil=True)
def _restore_sa(tags, sa, shift_l, times, lo, hi, active):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Set the sets in ``active`` to ``phi^times`` of a snapshot's."""
    n_sets, ways = tags.shape
    for s in range(n_sets):
        if not active[s]:
            continue
        for w in range(ways):
            x = sa[s * ways + w]
            if x < 0:
                tags[s, w] = -1
            else:
                tags[s, w] = x + shift_l[_region(x, lo, hi)] * times


@numba.njit(cache=True, nogil=True)
def _range_ok(x_lo, x_hi, shift_l, times, lo, hi):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`_shifted_ok` of the lines that :func:`_live_equal` just compared.

    ``phi^times`` adds the same number of lines to every line of a buffer, so
    it keeps them all inside the buffer if and only if it keeps the smallest
    and the largest.
    """
    for r in range(lo.shape[0]):
        if x_lo[r] <= x_hi[r]:
            d = shift_l[r] * times
            if not (lo[r] <= x_lo[r] + d and x_hi[r] + d < hi[r]):
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
def _restore(tags, slot_of, sl_line, sl_prev, sl_next, sl_time, ends, sa, fa, shift_l, times,  # type: ignore[no-untyped-def]
             lo, hi, active):  # pragma: no cover
    """Set both caches to ``phi^times`` of a snapshot.

    Sets not in ``active`` keep their lines, with their LRU order. The fully
    associative stack is rebuilt in slots ``0 .. k-1`` (MRU first; a line that
    left keeps a stale ``slot_of`` entry, see :func:`walk_periodic`). The slots'
    times become -1: when these
    lines were last accessed is not known here, and a time must never be
    later than the access (see :func:`_fa_fresh`).
    """
    _restore_sa(tags, sa, shift_l, times, lo, hi, active)
    k = 0
    for i in range(fa.shape[0]):
        x = fa[i]
        if x < 0:
            break
        y = x + shift_l[_region(x, lo, hi)] * times
        slot_of[y] = i
        sl_line[i] = y
        sl_time[i] = -1
        k += 1
    _link_slots(sl_prev, sl_next, ends, k)


@numba.njit(cache=True, nogil=True)
def _skip(l, r, clock, active, last_touch, last, addr, step, cnt, window, n_jumps):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Skip ``r`` iterations of loop ``l`` after a jump.

    The sets in ``active`` (restored) count as touched at ``clock``; the next
    body iteration compares no lines with the last one's; the addresses and the
    counter move on, and an in-line loop's line window begins after the jump.
    """
    for s in range(active.shape[0]):
        if active[s]:
            last_touch[s] = clock
    for a in range(last.shape[0]):
        last[a] = -1
        addr[a] += step[l, a] * r
    cnt[l] += r
    window[l] = cnt[l] + 1
    n_jumps[l] += 1


@numba.njit(cache=True, nogil=True)
def _take(tags, sl_line, sl_next, ends, snap_sa, snap_fa, snap_hits, snap_clock, slot,  # type: ignore[no-untyped-def]
          sa_hits, fa_hits, clock, with_fa, snap_has_fa):  # pragma: no cover
    if with_fa:
        _snapshot(tags, sl_line, sl_next, ends, snap_sa[slot], snap_fa[slot])
    else:
        n_sets, ways = tags.shape
        for s in range(n_sets):
            for w in range(ways):
                snap_sa[slot, s * ways + w] = tags[s, w]
    snap_has_fa[slot] = with_fa
    snap_hits[slot, 0] = sa_hits
    snap_hits[slot, 1] = fa_hits
    snap_clock[slot] = clock


@numba.njit(cache=True, nogil=True)
def walk_periodic(ext, step, addr0, line_bytes, n_sets, ways, fa_cap,  # type: ignore[no-untyped-def]
                  n_ids, period, dense, local, shift, block, win_lo, win_hi, lo, hi,
                  shortcut, give_up, first_sparse, give_up_in_line,
                  max_backoff, half_p, half_shift):  # pragma: no cover
    """Set-associative and fully associative hits of an affine nest, extrapolating.

    A periodic loop ``l`` (``period[l] > 0``, not ``local[l]``) is compared at
    the end of its iterations ``period[l] .. period[l] + give_up`` if
    ``dense[l]``, and at iterations near ``first_sparse * 2**m`` (after a
    sparse match, from the iteration that matched); an in-line
    loop at the end of the first ``give_up_in_line + 1`` iterations of each
    line window (the iterations whose in-line accesses stay in the same
    lines), against the iteration before. Where no comparison matches, that
    run (or window) of the loop is simulated. Returns ``(sa_hits, fa_hits,
    n_simulated, n_tries, n_jumps)``: ``n_simulated`` is the number of accesses
    replayed, ``n_tries[l]`` and ``n_jumps[l]`` the comparisons made at the end
    of an iteration of loop ``l`` and those that matched.

    A dense loop whose last watched run matched at iteration ``m`` makes its
    dense comparisons (and the snapshots they need) from iteration ``m - 1``
    on in its next run; if that run matched only at a sparse comparison, the
    next run makes none; if no comparison matched, the next makes them all.
    Like the back-off, this only decides where to compare.

    A loop of period 1 whose fully associative stack is fresh (see the module
    docstring) compares only its set-associative sets with the snapshot, and
    snapshots that such a loop takes next skip the stack. The innermost loop of
    period 1 with at most ``INNER_MAX_BODIES`` body iterations per iteration and
    at least ``INNER_MIN_EXT`` body iterations per run is compared from iteration
    ``INNER_FIRST`` of each run on (if its last such try jumped); when its stack
    is not fresh, it may still jump by :func:`_fa_extend` (see the module
    docstring); where no loop qualifies, an in-line loop of period 1 with at most
    ``INNER_MAX_BODIES_LOCAL`` body iterations may, at the comparisons of its line
    windows. ``half_p`` and
    ``half_shift`` (from :func:`~autotile.measure.cpu._periodic_loops.loop_periods`)
    give each in-line loop of two periods its second comparison, at iteration
    ``P`` (or ``P + j2``); those count in ``n_tries`` and ``n_jumps`` too.
    """
    n_loops, p = step.shape
    tags = np.full((n_sets, ways), -1, np.int64)
    # the fully associative stack: a doubly linked list of fa_cap slots (small enough to
    # stay in L1), and slot_of, a slot per line. Occupied slots are always
    # 0 .. ends[2] - 1, and line x is resident if and only if s = slot_of[x] has
    # 0 <= s < ends[2] and sl_line[s] == x: every write of a line to a slot writes
    # slot_of too, so the entries of lines that left need no clearing (a stale entry
    # points to a slot that holds another line, or to none). Linking the lines
    # themselves (arrays of n_ids) made every step of a snapshot, comparison or
    # restore a cache miss at n = 1024
    slot_of = np.full(n_ids, -1, np.int32)
    sl_line = np.full(max(fa_cap, 1), -1, np.int64)
    sl_prev = np.full(max(fa_cap, 1), -1, np.int64)
    sl_next = np.full(max(fa_cap, 1), -1, np.int64)
    ends = np.array([-1, -1, 0], np.int64)  # MRU slot, LRU slot, lines held
    # per slot, a clock value at or before its line's last access (see _fa_fresh)
    sl_time = np.full(max(fa_cap, 1), -1, np.int64)
    relabel_tmp = np.empty(max(fa_cap, 1), np.int64)
    last_touch = np.zeros(n_sets, np.int64)
    active = np.zeros(n_sets, np.bool_)
    n_sa = n_sets * ways
    x_lo = np.empty(lo.shape[0], np.int64)  # line ranges of the last comparison, per buffer
    x_hi = np.empty(lo.shape[0], np.int64)
    # snapshot slots: level l owns a ring [off[l], off[l] + period[l] + 1) for the
    # dense comparisons, then two slots (before, after) for the sparse ones
    off = np.zeros(n_loops + 1, np.int64)
    for l in range(n_loops):
        off[l + 1] = off[l] + (period[l] + 3 if period[l] > 0 else 0) + \
            (3 if half_p[l] > 0 else 0)
    n_slots = max(off[n_loops], 1)
    snap_sa = np.empty((n_slots, n_sa), np.int64)
    snap_fa = np.empty((n_slots, fa_cap), np.int64)
    snap_hits = np.zeros((n_slots, 2), np.int64)
    snap_clock = np.zeros(n_slots, np.int64)
    next_sparse = np.zeros(n_loops, np.int64)
    learned = np.zeros(n_loops, np.int64)  # iteration of the last sparse match, per loop
    # iteration of the dense match in the loop's last watched run; the next run
    # compares from the iteration before it on (0: from the first, -1: not at all)
    dense_at = np.zeros(n_loops, np.int64)
    dense_hit = np.zeros(n_loops, np.bool_)
    window = np.zeros(n_loops, np.int64)  # first iteration of an in-line loop's line window
    n_tries = np.zeros(n_loops, np.int64)
    # back-off: a run of a loop without a match makes the loop skip the next
    # 1, 3, 7, ... max_backoff runs unwatched; a match resets it
    watched = np.zeros(n_loops, np.bool_)
    matched = np.zeros(n_loops, np.bool_)
    backoff = np.zeros(n_loops, np.int64)
    skip = np.zeros(n_loops, np.int64)
    n_jumps = np.zeros(n_loops, np.int64)
    # for a loop of period 1: the clock at the end of the first iteration from which
    # every later one is phi of the one before (the run's first, or the line window's)
    thr = np.zeros(n_loops, np.int64)
    fresh_last = np.zeros(n_loops, np.bool_)  # the loop's last comparison found a fresh stack
    snap_has_fa = np.zeros(n_slots, np.bool_)
    # snapshots of S_0 (1), S_(P-1) (2) and S_j2 (4) taken this run (see below)
    half_taken = np.zeros(n_loops, np.int64)
    half_j2 = np.zeros(n_loops, np.int64)
    sa_hits = 0
    fa_hits = 0
    simulated = 0
    clock = 0
    cnt = np.zeros(n_loops, np.int64)
    # the innermost loop of period 1 that moves some access, with few body iterations
    # inside (so that every iteration after its run's first is simulated, with times
    # exact to the iteration) may jump with a stack that is not fresh (_fa_extend):
    # it counts the fully associative hits on lines not touched since the end of its
    # run's first iteration (qthr) and keeps the hits and those counts at the start
    # of its current iteration (fa_mark, q_mark)
    inner = -1
    inner_nb = 1  # body iterations per iteration of that loop
    for l in range(n_loops - 1, -1, -1):
        if inner_nb > INNER_MAX_BODIES:
            break
        if period[l] == 1 and not local[l] and ext[l] * inner_nb >= INNER_MIN_EXT \
                and ext[l] >= 2 * INNER_FIRST:
            for a in range(p):
                if step[l, a] != 0:
                    inner = l
            if inner >= 0:
                break
        inner_nb *= ext[l]
    if inner < 0:
        # else an in-line loop of period 1: its line windows are runs as above (see
        # "A stack that is not fresh" in the module docstring)
        inner_nb = 1
        for l in range(n_loops - 1, -1, -1):
            if inner_nb > INNER_MAX_BODIES_LOCAL:
                break
            if period[l] == 1 and local[l]:
                wl = ext[l]  # iterations per line window, at most
                for a in range(p):
                    g_ = block[l, a]
                    if g_ > 0:
                        wl = min(wl, (g_ - 1 - (win_hi[l, a] - win_lo[l, a])) //
                                 abs(step[l, a]) + 1)
                if wl >= 2 * INNER_FIRST and wl * inner_nb >= INNER_MIN_WINDOW:
                    inner = l
                    break
            inner_nb *= ext[l]
    if inner < 0:  # (l == inner below then never holds: l >= 0)
        inner_nb = 1
    inner_tmp = np.empty(max(fa_cap, 1), np.int64)
    inner_flag = np.zeros(max(fa_cap, 1), np.bool_)
    it_lines = np.empty(max(inner_nb * p, 1), np.int64)  # the lines of one iteration of it
    inner_acc = np.empty(5 * max(inner_nb * p, p) + 2 * max(fa_cap, 1), np.int64)
    inner_cnt = np.zeros(n_loops, np.int64)
    qthr = -2  # sl_time is at least -1: no hit counts until a run's first iteration ends
    q_hits = 0
    q_mark = 0
    fa_mark = 0
    # (kept in an array, out of the registers of the loop over accesses): the clock
    # before the first access of the loop's current run; the clock after the last jump
    # of a loop inside it; whether its last _fa_extend attempt jumped (or none was made)
    xs = np.array([0, -1, 1], np.int64)
    lines = np.zeros(p, np.int64)
    last = np.full(p, -1, np.int64)
    addr = addr0.copy()
    pow2_sets = (n_sets & (n_sets - 1)) == 0
    pow2_line = (line_bytes & (line_bytes - 1)) == 0
    line_shift = 0
    while (1 << line_shift) < line_bytes:
        line_shift += 1
    done = n_loops == 0
    run_shortcut = not done and period[n_loops - 1] == 0
    if run_shortcut:
        for a in range(p):
            if abs(step[n_loops - 1, a]) >= line_bytes:
                run_shortcut = False
    while True:
        # ---- one iteration of the body
        same = shortcut
        for a in range(p):
            # addresses are non-negative, so a power-of-two line size is a shift (an
            # integer division is 20-40 cycles of latency, per access)
            ln = (addr[a] >> line_shift) if pow2_line else addr[a] // line_bytes
            lines[a] = ln
            if ln != last[a]:
                same = False
        clock += p
        if same:
            # the iterations of the innermost loop up to its accesses' next line
            # crossing repeat these lines too: count them at once (an unwatched
            # innermost loop only, so that no comparison is skipped)
            h = 0
            if run_shortcut:
                h = ext[n_loops - 1] - 1 - cnt[n_loops - 1]
                for a in range(p):
                    s_ = step[n_loops - 1, a]
                    if s_ > 0:
                        h = min(h, (line_bytes - 1 - addr[a] % line_bytes) // s_)
                    elif s_ < 0:
                        h = min(h, (addr[a] % line_bytes) // (-s_))
                if h > 0:
                    clock += h * p
                    cnt[n_loops - 1] += h
                    for a in range(p):
                        addr[a] += step[n_loops - 1, a] * h
            sa_hits += p * (h + 1)
            fa_hits += p * (h + 1)
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
                if _sa_touch_mru(tags, s, ln):
                    sa_hits += 1
                # fully associative LRU, inlined by hand (a call made this walk 5x slower
                # when the list was of lines: 1.0 -> 5.0 s of CPU on one n = 1024 schedule)
                head = ends[0]
                sl = slot_of[ln]
                if sl >= 0 and sl < ends[2] and sl_line[sl] == ln:  # resident (see above)
                    fa_hits += 1
                    if sl_time[sl] <= qthr:
                        q_hits += 1
                    if sl == head:
                        sl_time[sl] = c0
                        continue
                    pp = sl_prev[sl]
                    qq = sl_next[sl]
                    sl_next[pp] = qq
                    if qq >= 0:
                        sl_prev[qq] = pp
                    else:
                        ends[1] = pp
                else:
                    if ends[2] == fa_cap:
                        # evict the LRU line and reuse its slot
                        sl = ends[1]
                        ends[1] = sl_prev[sl]
                        if ends[1] >= 0:
                            sl_next[ends[1]] = -1
                        else:
                            head = -1
                    else:
                        sl = ends[2]
                        ends[2] += 1
                    slot_of[ln] = sl
                    sl_line[sl] = ln
                sl_time[sl] = c0
                sl_prev[sl] = -1
                sl_next[sl] = head
                if head >= 0:
                    sl_prev[head] = sl
                ends[0] = sl
                if ends[1] < 0:
                    ends[1] = sl
        if done:
            break
        # ---- advance the mixed-radix counter; watch the loops whose iteration ends
        l = n_loops - 1
        c = cnt[l]
        if 1 <= c < ext[l] - 1 and l != inner and half_p[l] == 0 \
                and (period[l] == 0 or not watched[l]):
            # an iteration inside a run of the innermost loop that nothing watches: the
            # steps below would only move its counter and addresses
            cnt[l] = c + 1
            for a in range(p):
                addr[a] += step[l, a]
            continue
        while l >= 0:
            per = period[l]
            c = cnt[l]
            e = ext[l]
            # a comparison of S_c with phi(S_old) that, if equal, skips rem iterations;
            # iteration c + 1 + j then repeats iteration (c - per + 1 + j % per), and the
            # state after the last skipped one is phi^(rem // per + 1)(S_part)
            old = -1
            part = -1
            rem = 0
            keep = -1  # slots to snapshot S_c into if no jump is taken
            keep2 = -1
            sparse_try = False
            at_sparse = False  # c is one of the loop's sparse comparison points
            if per > 0 and c == 0 and (local[l] or c + per <= e - 1):
                # a run of a watched loop begins: back off after runs without a match
                if watched[l]:
                    if matched[l]:
                        backoff[l] = 0
                    else:
                        backoff[l] = min(2 * backoff[l] + 1, max_backoff)
                        skip[l] = backoff[l]
                if watched[l] and not dense_hit[l]:
                    # no dense match last run: if a sparse one matched, skip the dense
                    # comparisons in this run; if none did, make them all again
                    dense_at[l] = -1 if matched[l] else 0
                dense_hit[l] = False
                matched[l] = False
                watched[l] = skip[l] == 0
                if skip[l] > 0:
                    skip[l] -= 1
                window[l] = 0
            if per == 1 and c == (window[l] if local[l] else 0):
                thr[l] = clock
                if l == inner:
                    qthr = clock
            if per > 0 and not watched[l]:
                pass
            elif per > 0 and local[l]:
                # horizon: iterations after c whose in-line accesses keep c's lines
                hz = e - 1 - c
                for a in range(p):
                    g_ = block[l, a]
                    if g_ > 0:
                        s_ = step[l, a]
                        u = (addr[a] + win_lo[l, a]) % g_
                        room = g_ - 1 - u - (win_hi[l, a] - win_lo[l, a])
                        if room < 0:
                            h = -1
                        elif s_ > 0:
                            h = room // s_
                        else:
                            h = u // (-s_)
                        hz = min(hz, h)
                if hz <= 0:
                    window[l] = c + 1
                elif c - window[l] <= give_up_in_line:
                    rel = c - window[l]
                    if rel >= 1:
                        old = off[l] + (rel - 1) % 2
                        part = old
                        rem = hz
                    if rel < give_up_in_line and hz >= 2:
                        keep = off[l] + rel % 2
            elif per > 0 and (c + per <= e - 1 or (dense[l] and c <= e - 2)):
                # past c = e - 1 - per only a dense comparison happens (a loop of
                # two periods: q = 0 below, a partial block of up to per - 1)
                if c == 0:
                    # first sparse comparison of this run: the first iteration at or
                    # after first_sparse (and after the dense ones) with the partial
                    # block empty
                    x = max(first_sparse, per + give_up + 1)
                    if l == inner and xs[2] != 0:
                        x = INNER_FIRST  # _fa_extend needs no fresh stack
                    if learned[l] > 0:  # where the last sparse comparison matched
                        x = learned[l]
                    next_sparse[l] = x + (e - 1 - x) % per
                if dense[l] and dense_at[l] >= 0 and c <= per + give_up:
                    first = max(per, dense_at[l] - 1)
                    if c >= first:
                        old = off[l] + (c - per) % (per + 1)
                        part = off[l] + (c - per + (e - 1 - c) % per) % (per + 1)
                    if first - per <= c < per + give_up:  # an old or partial block to come
                        keep = off[l] + c % (per + 1)
                nsp = next_sparse[l]
                if c == nsp - per:
                    keep2 = off[l] + per + 1
                elif c == nsp and old < 0:
                    old = off[l] + per + 1
                    part = old
                    sparse_try = True
                if c == nsp:
                    at_sparse = True
                    x = 2 * nsp
                    next_sparse[l] = x + (e - 1 - x) % per
                rem = e - 1 - c
            jumped = False
            if old >= 0:
                for s in range(n_sets):
                    active[s] = last_touch[s] > snap_clock[old]
                q = rem // per
                # a fresh stack is phi of the one before without comparing (see the
                # module docstring); else it is compared with the snapshot, if taken
                fresh = per == 1 and part == old and _fa_fresh(sl_time, ends, fa_cap, thr[l])
                if fresh:
                    n_tries[l] += 1
                    if _sa_equal(tags, snap_sa[old], shift[l], lo, hi, active, x_lo, x_hi) \
                            and _fa_relabel(slot_of, sl_line, sl_time, ends, shift[l], q, lo, hi,
                                            x_lo, x_hi, clock + 1, relabel_tmp):
                        jumped = True
                        _restore_sa(tags, snap_sa[part], shift[l], q + 1, lo, hi, active)
                extended = False
                if not fresh and l == inner and part == old and c >= 1 \
                        and (at_sparse or local[l]) and xs[1] <= xs[0] and q_hits == q_mark:
                    # a stack that is not fresh: extended if provable
                    # ("A stack that is not fresh" in the module docstring)
                    n_tries[l] += 1
                    it_miss = p * inner_nb - (fa_hits - fa_mark)  # of iteration c
                    if _sa_equal(tags, snap_sa[old], shift[l], lo, hi, active, x_lo, x_hi) \
                            and _range_ok(x_lo, x_hi, shift[l], q + 1, lo, hi):
                        if inner_nb == 1:
                            it_l = lines  # the iteration is one body iteration
                        else:
                            it_l = it_lines[:_iter_lines(addr, step, ext, l, line_bytes,
                                                         inner_cnt, it_lines)]
                        extended = _fa_extend(slot_of, sl_line, sl_prev, sl_next, sl_time, ends,
                                              fa_cap, it_l, shift[l], q, lo, hi,
                                              xs[0], qthr, it_miss, xs[0] + 1, relabel_tmp,
                                              inner_tmp, inner_flag, inner_acc)
                    xs[2] = extended
                    if extended:
                        jumped = True
                        _restore_sa(tags, snap_sa[part], shift[l], q + 1, lo, hi, active)
                if not fresh and not jumped and snap_has_fa[old] and snap_has_fa[part]:
                    n_tries[l] += 1
                    if _live_equal(tags, sl_line, sl_next, ends, snap_sa[old], snap_fa[old],
                                   shift[l], lo, hi, active, x_lo, x_hi) and \
                            (_range_ok(x_lo, x_hi, shift[l], q + 1, lo, hi) if part == old else
                             _shifted_ok(snap_sa[part], snap_fa[part], shift[l], q + 1, lo, hi,
                                         active, ways)):
                        jumped = True
                        _restore(tags, slot_of, sl_line, sl_prev, sl_next, sl_time, ends,
                                 snap_sa[part], snap_fa[part], shift[l], q + 1, lo, hi, active)
                fresh_last[l] = fresh or extended
                if jumped:
                    # the hits of blocks c-per+1 .. c repeat q times, then a partial block
                    sa_hits += q * (sa_hits - snap_hits[old, 0]) \
                        + snap_hits[part, 0] - snap_hits[old, 0]
                    fa_hits += q * (fa_hits - snap_hits[old, 1]) \
                        + snap_hits[part, 1] - snap_hits[old, 1]
                    clock += 1  # the restored sets count as touched now
                    _skip(l, rem, clock, active, last_touch, last, addr, step, cnt, window,
                          n_jumps)
                    if l > inner:
                        xs[1] = clock
                    matched[l] = True
                    if sparse_try:
                        learned[l] = c
                    elif dense[l] and not local[l]:
                        dense_at[l] = c
                        dense_hit[l] = True
            if not jumped:
                # a loop whose last comparison found a fresh stack is not expected to
                # need the stack's snapshot
                with_fa = not (per == 1 and fresh_last[l])
                if keep >= 0:
                    _take(tags, sl_line, sl_next, ends, snap_sa, snap_fa, snap_hits, snap_clock,
                          keep, sa_hits, fa_hits, clock, with_fa, snap_has_fa)
                if keep2 >= 0:
                    _take(tags, sl_line, sl_next, ends, snap_sa, snap_fa, snap_hits, snap_clock,
                          keep2, sa_hits, fa_hits, clock, with_fa, snap_has_fa)
            hp = half_p[l]
            if hp > 0:
                # an in-line loop of two periods: S_P is compared with phi(S_0), phi
                # moving each buffer by P iterations' steps (whole set cycles), and on
                # a match iterations P+1 .. 2P-1 repeat iterations 1 .. P-1; the state
                # after them is phi(S_(P-1)) (q = 0 and a partial block, as above). If
                # S_0 still holds lines from before the run, S_(P+j2) is compared with
                # phi(S_j2) instead, j2 the next iteration the walk stops at (after an
                # in-line jump, the end of the first line window)
                cn = cnt[l]  # past any jump above: the state is S_cn
                h0 = off[l] + period[l] + 3
                hold = -1
                if cn == 0:
                    _take(tags, sl_line, sl_next, ends, snap_sa, snap_fa, snap_hits,
                          snap_clock, h0, sa_hits, fa_hits, clock, True, snap_has_fa)
                    half_taken[l] = 1
                elif half_taken[l] == 1 and cn <= hp - 2:
                    _take(tags, sl_line, sl_next, ends, snap_sa, snap_fa, snap_hits,
                          snap_clock, h0 + 2, sa_hits, fa_hits, clock, True, snap_has_fa)
                    half_taken[l] = 5
                    half_j2[l] = cn
                elif cn == hp - 1 and half_taken[l] & 1:
                    _take(tags, sl_line, sl_next, ends, snap_sa, snap_fa, snap_hits,
                          snap_clock, h0 + 1, sa_hits, fa_hits, clock, True, snap_has_fa)
                    half_taken[l] |= 2
                elif cn == hp and half_taken[l] & 3 == 3:
                    hold = h0
                elif half_taken[l] & 6 == 6 and cn == hp + half_j2[l]:
                    hold = h0 + 2
                if hold >= 0:
                    for s in range(n_sets):
                        active[s] = last_touch[s] > snap_clock[hold]
                    n_tries[l] += 1
                    if _live_equal(tags, sl_line, sl_next, ends, snap_sa[hold], snap_fa[hold],
                                   half_shift[l], lo, hi, active, x_lo, x_hi) and \
                            _shifted_ok(snap_sa[h0 + 1], snap_fa[h0 + 1], half_shift[l], 1,
                                        lo, hi, active, ways):
                        half_taken[l] = 0
                        sa_hits += snap_hits[h0 + 1, 0] - snap_hits[hold, 0]
                        fa_hits += snap_hits[h0 + 1, 1] - snap_hits[hold, 1]
                        clock += 1
                        _restore(tags, slot_of, sl_line, sl_prev, sl_next, sl_time, ends,
                                 snap_sa[h0 + 1], snap_fa[h0 + 1], half_shift[l], 1, lo, hi,
                                 active)
                        _skip(l, e - 1 - cn, clock, active, last_touch, last, addr, step, cnt,
                              window, n_jumps)
                        if l > inner:
                            xs[1] = clock
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
        if l <= inner:
            # an iteration of inner begins (l < inner: its run begins): its first body
            # iteration is simulated, so that no line's time is left from before it
            fa_mark = fa_hits
            q_mark = q_hits
            if l < inner or inner_nb > 1:
                for a in range(p):
                    last[a] = -1
            if l < inner or (local[inner] and cnt[inner] == window[inner]):
                xs[0] = clock  # a run (or an in-line loop's line window) begins
    return sa_hits, fa_hits, simulated, n_tries, n_jumps


def periodic_hits(ext: _I64, step: _I64, addr0: _I64, base: _I64, total_bytes: int,
                  line_bytes: int, n_sets: int, ways: int, shortcut: bool
                  ) -> tuple[int, int, int]:
    """Hits of an affine nest in both caches, extrapolating where provably periodic.

    Parameters
    ----------
    ext, step : ndarray of int64
        As in :func:`~autotile.measure.cpu._periodic_loops.loop_periods`.
    addr0 : ndarray of shape (n_accesses,), int64
        Byte address of each access at iteration 0.
    base : ndarray of shape (n_accesses,), int64
        Base address of each access's buffer, bytes.
    total_bytes : int
        End of the last buffer, bytes.
    line_bytes, n_sets, ways : int
        Set-associative geometry; the fully associative cache has
        ``n_sets * ways`` lines.
    shortcut : bool
        Count an iteration that repeats the previous iteration's lines as hits
        (exact only if ``ways >= n_accesses``).

    Returns
    -------
    tuple of int
        ``(sa_hits, fa_hits, n_simulated)``: hits of the set-associative and
        the fully associative cache, and the accesses actually replayed.
    """
    (period, dense, local, shift, block, win_lo, win_hi, lo, hi, _, half_p,
     half_shift) = loop_periods(ext, step, base, total_bytes, line_bytes, n_sets)
    n_ids = total_bytes // line_bytes + 1
    sa, fa, sim, _, _ = walk_periodic(ext, step, addr0, line_bytes, n_sets, ways, n_sets * ways,
                                n_ids, period, dense, local, shift, block, win_lo, win_hi,
                                lo, hi, shortcut, GIVE_UP, FIRST_SPARSE, GIVE_UP_IN_LINE,
                                MAX_BACKOFF, half_p, half_shift)
    return int(sa), int(fa), int(sim)
