"""The periodic fast path of the nest simulator gives exactly the counts of full simulation."""

from __future__ import annotations

import numpy as np
import pytest

from autotile import te
from autotile.measure import (
    CacheConfig,
    ScheduleMeasurer,
    classify_misses,
    gemm_ground_truth,
    simulate_cache,
    simulate_cache_reference,
    simulate_nest,
)
from autotile.measure.cpu._nestsim import (
    EXTRAPOLATE_MIN_ACCESSES,
    AffineAccess,
    AffineNest,
    _affine_steps,
)
from autotile.measure.cpu._periodic import (
    FIRST_SPARSE,
    GIVE_UP,
    GIVE_UP_IN_LINE,
    INNER_FIRST,
    INNER_MAX_BODIES,
    INNER_MAX_BODIES_LOCAL,
    INNER_MIN_EXT,
    INNER_MIN_WINDOW,
    MAX_BACKOFF,
    _fa_extend,
    _fa_relabel,
    _live_equal,
    _range_ok,
    _restore,
    _shifted_ok,
    _snapshot,
    periodic_hits,
    walk_periodic,
)
from autotile.measure.cpu._periodic_loops import _in_line_window, footprint_lines, loop_periods
from autotile.space import gemm_space


def _counts(mb) -> tuple[int, int, int, int, int]:  # type: ignore[no-untyped-def]
    return (mb.set_assoc.n_misses, mb.fully_assoc.n_misses, mb.compulsory, mb.capacity,
            mb.conflict)


def _simulated_fraction(nest: AffineNest, cache: CacheConfig) -> float:
    ext, step, addr0, base = _affine_steps(nest)
    _, _, sim = periodic_hits(ext, step, addr0, base, nest.total_bytes, cache.line_bytes,
                              cache.n_sets, cache.ways, True)
    return sim / (nest.n_iters * len(nest.accesses))


def _walk(nest: AffineNest, cache: CacheConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                          int]:
    """``(local, n_tries, n_jumps, n_simulated)``: in-line loops, comparisons, matches."""
    ext, step, addr0, base = _affine_steps(nest)
    w = loop_periods(ext, step, base, nest.total_bytes, cache.line_bytes, cache.n_sets)
    n_ids = nest.total_bytes // cache.line_bytes + 1
    _, _, sim, tries, jumps = walk_periodic(
        ext, step, addr0, cache.line_bytes, cache.n_sets, cache.ways, cache.n_lines, n_ids,
        *w[:9], cache.ways >= len(nest.accesses), GIVE_UP, FIRST_SPARSE, GIVE_UP_IN_LINE,
        MAX_BACKOFF, w[10], w[11])
    return w[2], tries, jumps, int(sim)


def _resident(slot_of: np.ndarray, sl_line: np.ndarray, ends: np.ndarray) -> set[int]:
    """The lines that ``slot_of`` marks resident (see walk_periodic: entries are not cleared)."""
    s = slot_of.astype(np.int64)
    x = np.flatnonzero((s >= 0) & (s < ends[2]))
    return {int(v) for v in x[sl_line[s[x]] == x]}


def _jumps(nest: AffineNest, cache: CacheConfig) -> tuple[np.ndarray, np.ndarray, float]:
    """``(local, n_jumps, simulated fraction)``: which loops are in-line, matches per loop."""
    local, _, jumps, sim = _walk(nest, cache)
    return local, jumps, sim / (nest.n_iters * len(nest.accesses))


@pytest.mark.parametrize(("n", "k", "seed"), [(64, 200, 0), (128, 8, 1), (256, 2, 2)])
def test_random_schedules_match_full_simulation(n: int, k: int, seed: int) -> None:
    space = gemm_space(n)
    m = ScheduleMeasurer(space)
    for cfg in space.sample(np.random.default_rng(seed), k):
        nest = m.nest(cfg).simplified()
        assert _counts(simulate_nest(nest, extrapolate=True)) == \
            _counts(simulate_nest(nest, extrapolate=False)), cfg


def test_negative_conflict_counts_are_kept() -> None:
    # Schedules whose set-associative cache misses less than the fully associative one.
    truth = gemm_ground_truth(64)
    conflict = truth.column("conflict_misses")
    rows = np.flatnonzero(conflict < 0)
    assert len(rows) == 8095
    space = gemm_space(64)
    m = ScheduleMeasurer(space)
    for i in rows[:: len(rows) // 40][:40]:
        got = _counts(simulate_nest(m.nest(space.config_at(int(i))).simplified(),
                                   extrapolate=True))
        assert got[4] == conflict[i] < 0
        assert got[0] == truth.column("misses")[i]
        assert got[2] == truth.column("compulsory_misses")[i]


def test_fast_path_skips_most_of_a_periodic_nest() -> None:
    # i outermost at n = 256: each i iteration shifts A and C by whole rows.
    space = gemm_space(256)
    m = ScheduleMeasurer(space)
    cfg = {"i_factor": 1, "j_factor": 256, "k_factor": 256,
           "order": ("io", "ii", "jo", "ji", "ko", "ki")}
    nest = m.nest(cfg).simplified()
    assert nest.extents == (256, 256, 256)
    assert _simulated_fraction(nest, CacheConfig()) < 0.02
    assert _counts(simulate_nest(nest)) == _counts(simulate_nest(nest, extrapolate=False))
    assert nest.n_iters * 3 >= EXTRAPOLATE_MIN_ACCESSES  # extrapolated by default


@pytest.mark.parametrize("cache", [CacheConfig(8192, 1), CacheConfig(8192, 2),
                                   CacheConfig(4096, 8), CacheConfig(6144, 4),
                                   CacheConfig(16384, 4, 32), CacheConfig(4096, 64)])
@pytest.mark.parametrize("width", [None, 33, 36])
def test_other_geometries_and_padding_match_trace_replay(gemm, cache: CacheConfig,
                                                          width: int | None) -> None:
    def steps(s, C):  # type: ignore[no-untyped-def]
        i, j = s[C].op.axis
        (k,) = s[C].op.reduce_axis
        io, ii = s[C].split(i, factor=4)
        s[C].reorder(io, k, ii, j)

    nest = te.lower(gemm(32, steps, width=width))
    want = classify_misses(nest.byte_trace(), cache)
    got = simulate_nest(nest, cache, extrapolate=True)
    assert got == want


@pytest.mark.parametrize("width", [None, 27])  # rows of 96 bytes: every line spanned; 108: walked
def test_footprint_counts_distinct_lines(gemm, width: int | None) -> None:
    nest = AffineNest.from_loop_nest(te.lower(gemm(24, width=width)))
    ext, step, addr0, _ = _affine_steps(nest)
    trace = te.lower(gemm(24, width=width)).byte_trace()
    want = int(np.unique(np.asarray(trace) // 64).size)
    assert footprint_lines(ext, step, addr0, 64, nest.total_bytes // 64 + 1) == want


@pytest.mark.parametrize("addrs", [
    np.arange(0, 64 * 500, 4) % 12_000,
    np.array([0, 1 << 40, 64, (1 << 40) + 64, 0, 2048, 1 << 40]),  # sparse: np.unique path
])
def test_raw_trace_counts_lines_inside_the_loop(addrs: np.ndarray) -> None:
    for cache in (CacheConfig(), CacheConfig(1024, 2)):
        assert simulate_cache(addrs, cache) == simulate_cache_reference(addrs, cache)


# The slow class at n = 1024 (issue 16): i loops innermost under j and k loops that move
# A, B or C by a few bytes per iteration (a row of 4,096 bytes is 2 * line_bytes * n_sets).
# A cache of 4 sets gives 64x64 the same geometry (a row of 256 bytes = line_bytes * n_sets),
# and 2 sets with 32-byte lines, 1 or 2 ways and padded rows cover line crossings inside an
# iteration, caches without the same-lines shortcut and buffers that do not move together.
@pytest.mark.parametrize(("cache", "pad", "seed"), [
    (CacheConfig(1024, 4), False, 0),
    (CacheConfig(1024, 1), False, 1),
    (CacheConfig(512, 4, 32), False, 2),
    (CacheConfig(8192, 4), False, 3),
    (CacheConfig(1024, 2), True, 4),
])
def test_in_line_loops_match_full_simulation(cache: CacheConfig, pad: bool, seed: int) -> None:
    space = gemm_space(64, pad=pad)
    m = ScheduleMeasurer(space, cache)
    n_in_line = 0
    for cfg in space.sample(np.random.default_rng(seed), 60):
        nest = m.nest(cfg).simplified()
        local, jumps, _ = _jumps(nest, cache)
        n_in_line += bool((jumps[local] > 0).any())
        assert _counts(simulate_nest(nest, cache, extrapolate=True)) == \
            _counts(simulate_nest(nest, cache, extrapolate=False)), cfg
    assert n_in_line >= 25  # most schedules extrapolate an in-line loop


@pytest.mark.parametrize("order", [
    ("ko", "jo", "ki", "ii", "io", "ji"),  # 22 s at n = 1024 before in-line loops
    ("jo", "ji", "ko", "ki", "io", "ii"),  # j, k, i: one i run per (j, k)
    ("jo", "io", "ki", "ko", "ji", "ii"),  # k split 4 with ko inside ki
])
def test_slow_class_is_extrapolated_in_line(order: tuple[str, ...]) -> None:
    # n = 128 and a cache of 8 sets: a row (512 bytes) is line_bytes * n_sets, as at n = 1024
    cache = CacheConfig(2048, 4)
    space = gemm_space(128)
    m = ScheduleMeasurer(space, cache)
    nest = m.nest({"i_factor": 4, "j_factor": 16, "k_factor": 4, "order": order}).simplified()
    local, jumps, frac = _jumps(nest, cache)
    assert (jumps[local] > 0).any()  # an in-line loop matched
    assert frac < 0.05
    assert _counts(simulate_nest(nest, cache, extrapolate=True)) == \
        _counts(simulate_nest(nest, cache, extrapolate=False))


def test_dense_comparisons_start_where_the_last_run_matched() -> None:
    # ii (256 iterations, period 1, 96 accesses each) matches only at a sparse comparison.
    # Before this rule each of its 256 runs also made the 17 dense comparisons, which all
    # fail: 18 x 256 = 4,608 comparisons. Now only the first run does: 18 + 255 = 273.
    space = gemm_space(256)
    m = ScheduleMeasurer(space)
    nest = m.nest({"i_factor": 256, "j_factor": 16, "k_factor": 32,
                   "order": ("ko", "ji", "jo", "ii", "io", "ki")}).simplified()
    assert nest.extents == (8, 16, 16, 256, 32)
    _, tries, jumps, sim = _walk(nest, CacheConfig())
    assert tries.tolist() == [0, 8, 0, 273, 0]
    assert jumps.tolist() == [0, 8, 0, 256, 0]
    assert sim == 835_584
    assert _counts(simulate_nest(nest)) == _counts(simulate_nest(nest, extrapolate=False))


@pytest.mark.parametrize("seed", range(4))
def test_range_check_equals_line_by_line_check(seed: int) -> None:
    # _range_ok (the smallest and largest line per buffer, from _live_equal) decides as
    # _shifted_ok (every line) for random states, shifts and numbers of shifts
    rng = np.random.default_rng(seed)
    n_sets, ways, n_ids = 8, 4, 600
    lo = np.array([0, 200, 400], np.int64)
    hi = np.array([200, 400, 600], np.int64)
    for _ in range(200):
        tags = np.full((n_sets, ways), -1, np.int64)
        for s in range(n_sets):
            k = int(rng.integers(ways + 1))
            tags[s, :k] = s + n_sets * rng.choice(n_ids // n_sets, k, replace=False)
        fa = rng.choice(n_ids, int(rng.integers(1, 33)), replace=False)
        # the stack in slots 0 .. len(fa) - 1, MRU first
        sl_line = np.asarray(fa, np.int64)
        sl_next = np.append(np.arange(1, len(fa)), -1).astype(np.int64)
        ends = np.array([0, len(fa) - 1, len(fa)], np.int64)
        snap_sa = np.empty(n_sets * ways, np.int64)
        snap_fa = np.empty(32, np.int64)
        _snapshot(tags, sl_line, sl_next, ends, snap_sa, snap_fa)
        active = rng.random(n_sets) < 0.5
        x_lo = np.empty(3, np.int64)
        x_hi = np.empty(3, np.int64)
        assert _live_equal(tags, sl_line, sl_next, ends, snap_sa, snap_fa, np.zeros(3, np.int64),
                           lo, hi, active, x_lo, x_hi)
        shift = rng.integers(-3, 4, 3) * n_sets
        times = int(rng.integers(1, 20))
        assert _range_ok(x_lo, x_hi, shift, times, lo, hi) == \
            _shifted_ok(snap_sa, snap_fa, shift, times, lo, hi, active, ways)


def test_in_line_window_splits_inner_steps() -> None:
    # A moves 4 bytes per ki; inside, ko moves it 16 bytes (256 times), ii a row, ji not at
    # all. As a byte window ko spans the row; as a multiple of G = 16 it leaves 4 iterations
    # (4, 8, 12 bytes ahead) in one 16-byte block, so in one line.
    assert _in_line_window(4, np.array([16, 4096, 0]), np.array([256, 64, 16]), 64) == \
        (4, 16, 0, 0)
    # a window of 12 bytes (ji: 4 iterations of 4 bytes) and 16-byte steps: 4 per line
    assert _in_line_window(16, np.array([4]), np.array([4]), 64) == (4, 64, 0, 12)
    assert _in_line_window(-16, np.array([4]), np.array([4]), 64) == (4, 64, 0, 12)
    assert _in_line_window(64, np.array([4]), np.array([4]), 64) is None


@pytest.mark.parametrize("seed", range(6))
def test_random_affine_nests_with_negative_steps(seed: int) -> None:
    # Random nests of 3-4 loops and 3-4 accesses whose element strides mix 0, +-1, +-2,
    # +-3 and multiples of a line, of a row of sets or of both; buffers start anywhere.
    rng = np.random.default_rng(seed)
    for _ in range(40):
        cache = [CacheConfig(1024, 4), CacheConfig(512, 2, 32), CacheConfig(2048, 8)][
            int(rng.integers(3))]
        n_loops = int(rng.integers(3, 5))
        ext = [int(x) for x in rng.choice([3, 4, 6, 8, 16, 24], n_loops)]
        per_set = cache.line_bytes * cache.n_sets // 4
        menu = [0, 1, -1, 2, -2, 3, 16, -16, per_set, -per_set, 2 * per_set + 1]
        accs, base = [], 0
        n_acc = int(rng.integers(3, 5))
        for a in range(n_acc):
            lin = tuple(int(x) for x in rng.choice(menu, n_loops))
            off = -sum(min(0, c * (e - 1)) for c, e in zip(lin, ext))
            size = off + sum(max(0, c * (e - 1)) for c, e in zip(lin, ext)) + 1
            if a and rng.random() < 0.25:  # a second access to the previous buffer
                accs.append(AffineAccess(accs[-1].base_bytes, 4, accs[-1].linear,
                                         accs[-1].offset))
                continue
            accs.append(AffineAccess(base, 4, lin, off))
            base += 4 * size + 4 * int(rng.integers(0, 20))
        coef = tuple(tuple(int(i == j) for j in range(n_loops)) for i in range(n_loops))
        nest = AffineNest(tuple(ext), coef, tuple(accs), base)
        assert _counts(simulate_nest(nest, cache, extrapolate=True)) == \
            _counts(simulate_nest(nest, cache, extrapolate=False)), (nest, cache)


@pytest.mark.parametrize(("n", "seed"), [(64, 0), (128, 0), (128, 1)])
def test_loops_of_two_periods_are_extrapolated_exactly(n: int, seed: int) -> None:
    # a loop of exactly two periods (ext == 2P, P >= 2; at n = 1024 an outer loop that
    # moves along a row, which is two set cycles) is compared at iteration P and its
    # last P - 1 iterations are extrapolated: a partial block, no whole one (q = 0)
    space = gemm_space(n)
    m = ScheduleMeasurer(space)
    cache = CacheConfig()
    n_half = n_half_jumps = 0
    for cfg in space.sample(np.random.default_rng(seed), 300):
        nest = m.nest(cfg).simplified()
        ext, step, _, base = _affine_steps(nest)
        period = loop_periods(ext, step, base, nest.total_bytes, cache.line_bytes,
                              cache.n_sets)[0]
        half = (period >= 2) & (ext == 2 * period)
        if not half.any():
            continue
        n_half += 1
        _, _, jumps, _ = _walk(nest, cache)
        n_half_jumps += int(jumps[half].sum())
        assert _counts(simulate_nest(nest, extrapolate=True)) == \
            _counts(simulate_nest(nest, extrapolate=False)), cfg
        if n_half == 12:
            break
    assert n_half == 12
    assert n_half_jumps > 0


@pytest.mark.parametrize("seed", range(3))
def test_relabelling_a_known_stack_equals_restoring_its_snapshot(seed: int) -> None:
    # a stack known to be phi(S_old) (a fresh one: no snapshot of S_old is taken) is
    # moved to phi^(q+1)(S_old) by relabelling its slots in place; the result must be
    # the state that restoring S_old's snapshot q + 1 times shifted gives
    rng = np.random.default_rng(seed)
    n_sets, ways, n_ids, cap = 4, 2, 900, 8
    lo = np.array([0, 300, 600], np.int64)
    hi = np.array([300, 600, 900], np.int64)
    tags = np.full((n_sets, ways), -1, np.int64)
    active = np.zeros(n_sets, np.bool_)
    for _ in range(200):
        shift = rng.integers(-2, 3, 3) * n_sets
        q = int(rng.integers(0, 4))
        # S_old: cap distinct lines far enough from the buffers' ends for any shift used
        old = np.concatenate([r * 300 + 40 + rng.choice(220, 3, replace=False)
                              for r in range(3)])[:cap]
        rng.shuffle(old)
        cur = old + shift[old // 300]
        slot_of = np.full(n_ids, -1, np.int32)
        slot_of[cur] = np.arange(cap)
        sl_line = cur.astype(np.int64)
        sl_time = np.zeros(cap, np.int64)
        ends = np.array([0, cap - 1, cap], np.int64)
        x_lo = hi.copy()  # empty ranges, as _sa_equal leaves them without lines
        x_hi = lo - 1
        assert _fa_relabel(slot_of, sl_line, sl_time, ends, shift, q, lo, hi, x_lo, x_hi, 7,
                           np.empty(cap, np.int64))
        # the same through a snapshot of S_old
        want_slot_of = np.full(n_ids, -1, np.int32)
        w_line = np.full(cap, -1, np.int64)
        w_prev = np.full(cap, -1, np.int64)
        w_next = np.full(cap, -1, np.int64)
        w_time = np.zeros(cap, np.int64)
        w_ends = np.array([-1, -1, 0], np.int64)
        _restore(tags, want_slot_of, w_line, w_prev, w_next, w_time, w_ends,
                 np.full(n_sets * ways, -1, np.int64), old.astype(np.int64), shift, q + 1, lo,
                 hi, active)
        assert sl_line.tolist() == w_line.tolist()  # same lines, same LRU order
        assert _resident(slot_of, sl_line, ends) == _resident(want_slot_of, w_line, w_ends) \
            == set(w_line.tolist())
        assert sl_time.tolist() == [7] * cap
        assert w_time.tolist() == [-1] * cap  # a restored stack's times are unknown
        if shift.any():  # S_old's lines widen the ranges that _range_ok checks
            assert x_lo.tolist() == [int(old[old // 300 == r].min()) for r in range(3)]
            assert x_hi.tolist() == [int(old[old // 300 == r].max()) for r in range(3)]
        else:  # phi is the identity: nothing can leave its buffer
            assert x_lo.tolist() == hi.tolist()
    # a relabelling that would leave a buffer is refused and changes nothing
    cur = np.array([10, 20, 310, 320, 610, 620, 630, 290], np.int64)
    slot_of = np.full(n_ids, -1, np.int32)
    slot_of[cur] = np.arange(cap)
    slot_before = slot_of.copy()
    sl_line = cur.copy()
    shift = np.array([4, 0, 0], np.int64)
    assert not _fa_relabel(slot_of, sl_line, np.zeros(cap, np.int64),
                           np.array([0, cap - 1, cap], np.int64), shift, 3, lo, hi, hi.copy(),
                           lo - 1, 7, np.empty(cap, np.int64))
    assert sl_line.tolist() == cur.tolist()
    assert np.array_equal(slot_of, slot_before)


def test_in_line_loops_of_two_periods_are_extrapolated_exactly() -> None:
    # with 4 sets a row of sets is 256 bytes, so at n = 128 a j loop of 128 iterations
    # moving 4 bytes is in-line and of exactly two periods: it gets the comparison at
    # iteration P (or P + j2) on top of its line windows
    space = gemm_space(128)
    m = ScheduleMeasurer(space)
    cache = CacheConfig(size_bytes=1024, line_bytes=64, ways=4)
    n_half = 0
    for cfg in space.sample(np.random.default_rng(0), 300):
        nest = m.nest(cfg).simplified()
        ext, step, _, base = _affine_steps(nest)
        half_p = loop_periods(ext, step, base, nest.total_bytes, cache.line_bytes,
                              cache.n_sets)[10]
        if not (half_p > 0).any():
            continue
        n_half += 1
        assert _counts(simulate_nest(nest, cache, extrapolate=True)) == \
            _counts(simulate_nest(nest, cache, extrapolate=False)), cfg
        if n_half == 10:
            break
    assert n_half == 10


def _lru_run(stack: list[int], trace: list[list[int]], cap: int, t0: int
             ) -> tuple[list[list[int]], list[int], list[dict[int, int]], list[int]]:
    """Plain fully associative LRU over iterations: states, hits, last-touch clocks.

    Returns the stack (MRU first) after each iteration, the hits of each, the clock
    of each line's last touch after each iteration (the run's accesses are clocks
    ``t0 + 1, t0 + 2, ...``) and each iteration's hits on lines not touched since
    the first iteration ended.
    """
    stack = list(stack)
    when: dict[int, int] = {}
    clock = t0
    states, hits, times, q_hits = [], [], [], []
    thr = t0 + len(trace[0])
    for it in trace:
        h = qh = 0
        for ln in it:
            clock += 1
            if ln in stack:
                h += 1
                qh += when.get(ln, -1) <= thr
                stack.remove(ln)
            stack.insert(0, ln)
            del stack[cap:]
            when[ln] = clock
        states.append(list(stack))
        hits.append(h)
        times.append(dict(when))
        q_hits.append(qh)
    return states, hits, times, q_hits


@pytest.mark.parametrize("seed", range(4))
def test_extending_a_stack_that_is_not_fresh_equals_plain_lru(seed: int) -> None:
    # an innermost loop of period 1 whose stack still holds lines from before its
    # run (P) and lines of its first iteration (U): _fa_extend either refuses or
    # gives the stack that plain LRU reaches at the run's end, and the iterations it
    # skips have the hits of the current one
    rng = np.random.default_rng(seed)
    cap, n_ids, t0 = 12, 3000, 50
    lo = np.array([0, 1000, 2000], np.int64)
    hi = np.array([1000, 2000, 3000], np.int64)
    n_ok = n_u = n_flag = n_refused = n_short = 0
    for _ in range(400):
        shift = rng.choice([-3, -1, 0, 1, 2, 4], 3)
        n_it = int(rng.integers(6, 40))
        p = int(rng.integers(1, 4))
        reg = rng.integers(0, 3, p)
        y0 = np.array([int(lo[r]) + 300 + int(rng.integers(0, 60)) for r in reg])
        trace = [[int(y0[a] + t * shift[reg[a]]) for a in range(p)] for t in range(n_it)]
        # lines from before the run: some that the run touches later, some it never does
        later = [ln for it in trace[3:] for ln in it]
        pool = list(rng.choice(later, min(len(later), cap // 2), replace=False)) + \
            [int(lo[r]) + 900 + int(rng.integers(0, 90)) for r in rng.integers(0, 3, cap)]
        pre = list(dict.fromkeys(int(x) for x in pool))[:int(rng.integers(cap // 2, cap + 1))]
        states, hits, times, q_hits = _lru_run(pre, trace, cap, t0)
        thr = t0 + p
        for c in range(1, n_it - 1):
            if q_hits[c]:
                continue  # the walker does not try then
            st = states[c]
            k = len(st)
            sl_line = np.array(st + [-1] * (cap - k), np.int64)
            # times: exact for the run's lines; at or before t0 (any) for the others
            sl_time = np.array([times[c].get(x, int(rng.integers(-1, t0 + 1))) for x in st]
                               + [-1] * (cap - k), np.int64)
            sl_prev = np.array([i - 1 for i in range(k)] + [-1] * (cap - k), np.int64)
            sl_next = np.array([i + 1 if i + 1 < k else -1 for i in range(k)]
                               + [-1] * (cap - k), np.int64)
            ends = np.array([0 if k else -1, k - 1, k], np.int64)
            slot_of = np.full(n_ids, -1, np.int32)
            slot_of[st] = np.arange(k)
            before = (sl_line.copy(), sl_time.copy(), ends.copy(), slot_of.copy())
            times_k = n_it - 1 - c
            lines = np.array(trace[c], np.int64)
            ok = _fa_extend(slot_of, sl_line, sl_prev, sl_next, sl_time, ends, cap, lines,
                            shift.astype(np.int64), times_k, lo, hi, t0, thr,
                            p - hits[c], t0 + 1, np.empty(cap, np.int64),
                            np.empty(cap, np.int64), np.zeros(cap, np.bool_),
                            np.empty(5 * len(lines) + 2 * cap, np.int64))
            if not ok:
                n_refused += 1
                assert sl_line.tolist() == before[0].tolist()
                assert sl_time.tolist() == before[1].tolist()
                assert ends.tolist() == before[2].tolist()
                assert np.array_equal(slot_of, before[3])
                continue
            n_ok += 1
            n_u += any(t0 < times[c].get(x, -1) <= thr for x in st)
            n_flag += any(x not in times[c] and x in later for x in st)
            n_short += k < cap
            # the skipped iterations repeat iteration c's hits
            assert hits[c + 1:] == [hits[c]] * times_k
            # the stack is plain LRU's at the run's end, slots and times consistent
            got, x = [], int(ends[0])
            while x >= 0:
                got.append(int(sl_line[x]))
                x = int(sl_next[x])
            assert got == states[-1]
            assert int(ends[2]) == len(got)
            assert _resident(slot_of, sl_line, ends) == set(got)
            for i in range(int(ends[2])):  # never later than the line's last access
                assert sl_time[i] <= times[-1].get(int(sl_line[i]), t0)
    assert n_ok > 200 and n_refused > 50
    assert n_u > 20 and n_flag > 10 and n_short > 10


def test_innermost_loops_with_stacks_not_fresh_match_full_simulation() -> None:
    # at n = 128 with 8 sets (a row of 512 bytes is one set cycle) an i loop of
    # INNER_MIN_EXT iterations innermost has period 1: it is extrapolated from its
    # iteration INNER_FIRST on, before its stack is fresh
    space = gemm_space(128)
    m = ScheduleMeasurer(space)
    cache = CacheConfig(size_bytes=2048, line_bytes=64, ways=4)
    n_inner = n_neg = 0
    for cfg in space.sample(np.random.default_rng(5), 400):
        nest = m.nest(cfg).simplified()
        ext, step, _, base = _affine_steps(nest)
        w = loop_periods(ext, step, base, nest.total_bytes, cache.line_bytes, cache.n_sets)
        if not (w[0][-1] == 1 and not w[2][-1] and ext[-1] >= INNER_MIN_EXT
                and step[-1].any()):
            continue
        _, tries, jumps, sim = _walk(nest, cache)
        assert jumps[-1] > 0
        # about INNER_FIRST + 1 iterations of each run simulated, not 2 * ext / 3 lines
        runs = nest.n_iters // int(ext[-1])
        assert sim < runs * len(nest.accesses) * 10
        got = _counts(simulate_nest(nest, cache, extrapolate=True))
        assert got == _counts(simulate_nest(nest, cache, extrapolate=False)), cfg
        n_neg += got[4] < 0
        n_inner += 1
    assert n_inner == 30
    assert n_neg == 1  # the set-associative count below the fully associative one, kept


def _periodic_copy(**consts: int):  # type: ignore[no-untyped-def]
    """``_periodic`` compiled again with some module constants changed (numba freezes them)."""
    import importlib.util
    import re
    import sys
    import tempfile
    from pathlib import Path

    from autotile.measure.cpu import _periodic

    src = Path(_periodic.__file__).read_text().replace("cache=True, ", "")
    for name, value in consts.items():
        src, k = re.subn(rf"^{name} = \d+$", f"{name} = {value}", src, flags=re.M)
        assert k == 1, name
    name = "_periodic_copy_" + "_".join(f"{k}{v}" for k, v in consts.items())
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _first_rule_pick(ext: np.ndarray, step: np.ndarray, w: tuple) -> tuple[int, int]:  # type: ignore[type-arg]
    """The loop of period 1 that the walker extends by the first rule, and its body count.

    ``(-1, nb)`` where none qualifies (see walk_periodic: at most ``INNER_MAX_BODIES``
    body iterations per iteration, at least ``INNER_MIN_EXT`` in all).
    """
    nb = 1
    for l in range(len(ext) - 1, -1, -1):
        if nb > INNER_MAX_BODIES:
            break
        if w[0][l] == 1 and not w[2][l] and ext[l] * nb >= INNER_MIN_EXT \
                and ext[l] >= 2 * INNER_FIRST and step[l].any():
            return l, nb
        nb *= int(ext[l])
    return -1, nb


@pytest.mark.parametrize(("n", "size_bytes", "seed", "n_want", "n_fewer_want", "n_neg_want"),
                         [(32, 512, 0, 125, 26, 9), (64, 1024, 1, 108, 37, 10)])
def test_loops_over_body_iterations_extend_stacks_not_fresh(
        n: int, size_bytes: int, seed: int, n_want: int, n_fewer_want: int,
        n_neg_want: int) -> None:
    # a loop of period 1 with up to INNER_MAX_BODIES body iterations inside it (not
    # innermost) jumps with a stack that is not fresh (_fa_extend over the lines of a
    # whole iteration): the counts are those of plain simulation, and fewer accesses
    # are simulated than with only innermost loops extended (INNER_MAX_BODIES = 1)
    space = gemm_space(n)
    m = ScheduleMeasurer(space)
    cache = CacheConfig(size_bytes=size_bytes, line_bytes=64, ways=4)
    only_innermost = _periodic_copy(INNER_MAX_BODIES=1)
    n_new = n_neg = n_fewer = 0
    nbs = set()
    for cfg in space.sample(np.random.default_rng(seed), 400):
        nest = m.nest(cfg).simplified()
        ext, step, addr0, base = _affine_steps(nest)
        w = loop_periods(ext, step, base, nest.total_bytes, cache.line_bytes, cache.n_sets)
        pick, nb = _first_rule_pick(ext, step, w)  # the loop the walker picks
        if pick < 0 or nb == 1:
            continue
        _, tries, jumps, sim = _walk(nest, cache)
        if jumps[pick] == 0:
            continue
        n_ids = nest.total_bytes // cache.line_bytes + 1
        sa, fa, sim_old, _, _ = only_innermost.walk_periodic(
            ext, step, addr0, cache.line_bytes, cache.n_sets, cache.ways, cache.n_lines, n_ids,
            *w[:9], cache.ways >= len(nest.accesses), GIVE_UP, FIRST_SPARSE, GIVE_UP_IN_LINE,
            MAX_BACKOFF, w[10], w[11])
        got = _counts(simulate_nest(nest, cache, extrapolate=True))
        assert got == _counts(simulate_nest(nest, cache, extrapolate=False)), cfg
        full = simulate_nest(nest, cache, extrapolate=False)
        assert (nest.n_iters * len(nest.accesses) - int(sa), nest.n_iters * len(nest.accesses)
                - int(fa)) == (full.set_assoc.n_misses, full.fully_assoc.n_misses)
        n_fewer += sim < sim_old
        n_neg += got[4] < 0
        n_new += 1
        nbs.add(nb)
    assert n_new >= n_want
    assert n_fewer >= n_fewer_want  # the new jumps skip work the old code simulated
    assert n_neg >= n_neg_want  # negative conflict counts kept
    assert {4, 8, 16, 32, 64}.issubset(nbs)  # body iterations per iteration of the loop


def _local_pick(ext: np.ndarray, step: np.ndarray, w: tuple) -> tuple[int, int]:  # type: ignore[type-arg]
    """The in-line loop that the walker extends within its line windows, and its body count.

    ``(-1, 0)`` where a loop qualifies by the first rule (see walk_periodic) or none does.
    """
    if _first_rule_pick(ext, step, w)[0] >= 0:
        return -1, 0
    nb = 1
    for l in range(len(ext) - 1, -1, -1):
        if nb > INNER_MAX_BODIES_LOCAL:
            break
        if w[0][l] == 1 and w[2][l]:
            wl = int(ext[l])
            for a in range(step.shape[1]):
                g = int(w[4][l, a])
                if g > 0:
                    wl = min(wl, (g - 1 - int(w[6][l, a] - w[5][l, a])) // abs(int(step[l, a])) + 1)
            if wl >= 2 * INNER_FIRST and wl * nb >= INNER_MIN_WINDOW:
                return l, nb
        nb *= int(ext[l])
    return -1, 0


@pytest.mark.parametrize(("size_bytes", "seed", "n_pick_want", "n_new_want", "n_neg_want",
                          "nbs_want"),
                         [(1024, 1, 197, 11, 2, {16, 32}), (2048, 3, 127, 6, 3, {32, 64})])
def test_in_line_loops_extend_stacks_not_fresh_within_a_line_window(
        size_bytes: int, seed: int, n_pick_want: int, n_new_want: int, n_neg_want: int,
        nbs_want: set[int]) -> None:
    # where no loop qualifies by the first rule, an in-line loop of period 1 with up to
    # INNER_MAX_BODIES_LOCAL body iterations jumps within its line windows with a stack
    # that is not fresh: the counts are those of plain simulation on every schedule
    # where such a loop is picked, and those with more jumps of it than in the code
    # without (INNER_MAX_BODIES_LOCAL = 0) simulate fewer accesses
    space = gemm_space(64)
    m = ScheduleMeasurer(space)
    cache = CacheConfig(size_bytes=size_bytes, line_bytes=64, ways=4)
    without = _periodic_copy(INNER_MAX_BODIES_LOCAL=0)
    n_pick = n_new = n_neg = n_fewer = 0
    nbs = set()
    for cfg in space.sample(np.random.default_rng(seed), 400):
        nest = m.nest(cfg).simplified()
        ext, step, addr0, base = _affine_steps(nest)
        w = loop_periods(ext, step, base, nest.total_bytes, cache.line_bytes, cache.n_sets)
        pick, nb = _local_pick(ext, step, w)
        if pick < 0:
            continue
        n_pick += 1
        got = _counts(simulate_nest(nest, cache, extrapolate=True))
        assert got == _counts(simulate_nest(nest, cache, extrapolate=False)), cfg
        _, _, jumps, sim = _walk(nest, cache)
        n_ids = nest.total_bytes // cache.line_bytes + 1
        sa, fa, sim_old, _, jumps_old = without.walk_periodic(
            ext, step, addr0, cache.line_bytes, cache.n_sets, cache.ways, cache.n_lines, n_ids,
            *w[:9], cache.ways >= len(nest.accesses), GIVE_UP, FIRST_SPARSE, GIVE_UP_IN_LINE,
            MAX_BACKOFF, w[10], w[11])
        if jumps[pick] <= jumps_old[pick]:
            continue
        n_new += 1
        n_fewer += sim < sim_old
        n_neg += got[4] < 0
        nbs.add(nb)
    assert n_pick == n_pick_want
    assert n_new == n_new_want
    assert n_fewer == n_new  # every schedule with new jumps simulates fewer accesses
    assert n_neg == n_neg_want  # negative conflict counts kept
    assert nbs == nbs_want  # body iterations per iteration of the loop


def test_in_line_loops_of_small_bodies_are_watched_where_windows_are_long() -> None:
    # a j loop of 1,024 iterations over an i loop of 8 at n = 1024 (24 accesses per
    # iteration, 16 iterations per line window) is watched in-line since session 12
    ext, step, _, base = _affine_steps(ScheduleMeasurer(gemm_space(1024)).nest(
        {"i_factor": 128, "j_factor": 256, "k_factor": 8,
         "order": ("ko", "ii", "ki", "jo", "ji", "io")}).simplified())
    assert ext.tolist() == [128, 128, 8, 1024, 8]
    w = loop_periods(ext, step, base, 3 * 1024 * 1024 * 4, 64, 32)
    assert w[0].tolist() == [64, 1, 1, 1, 1]
    assert w[2].tolist() == [False, False, True, True, False]
    assert w[4][3].tolist() == [0, 64, 64]  # B and C move within a line (block 64 bytes)
    w0 = loop_periods(ext, step, base, 3 * 1024 * 1024 * 4, 64, 32, min_window=10**9)
    assert w0[0].tolist() == [64, 1, 1, 0, 1]  # not watched at all
    assert w0[2].tolist() == [False, False, True, False, False]
    # at n = 128 with 4 sets (a row of 512 bytes is two set cycles): the counts of every
    # schedule with such a loop are those of plain simulation, most simulating fewer
    # accesses than without it
    cache = CacheConfig(1024, 4)
    space = gemm_space(128)
    m = ScheduleMeasurer(space, cache)
    n_watched = n_fewer = 0
    for cfg in space.sample(np.random.default_rng(0), 200):
        nest = m.nest(cfg).simplified()
        ext, step, addr0, base = _affine_steps(nest)
        args = (ext, step, base, nest.total_bytes, cache.line_bytes, cache.n_sets)
        w, w0 = loop_periods(*args), loop_periods(*args, min_window=10**9)
        if np.array_equal(w[2], w0[2]):
            continue
        n_watched += 1
        assert _counts(simulate_nest(nest, cache, extrapolate=True)) == \
            _counts(simulate_nest(nest, cache, extrapolate=False)), cfg
        n_ids = nest.total_bytes // cache.line_bytes + 1
        sims = [walk_periodic(ext, step, addr0, cache.line_bytes, cache.n_sets, cache.ways,
                              cache.n_lines, n_ids, *v[:9], cache.ways >= len(nest.accesses),
                              GIVE_UP, FIRST_SPARSE, GIVE_UP_IN_LINE, MAX_BACKOFF, v[10],
                              v[11])[2] for v in (w, w0)]
        n_fewer += sims[0] < sims[1]
    assert n_watched == 15
    assert n_fewer == 11

