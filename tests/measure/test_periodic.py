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
    AffineNest,
    _affine_steps,
)
from autotile.measure.cpu._periodic import footprint_lines, periodic_hits
from autotile.space import gemm_space


def _counts(mb) -> tuple[int, int, int, int, int]:  # type: ignore[no-untyped-def]
    return (mb.set_assoc.n_misses, mb.fully_assoc.n_misses, mb.compulsory, mb.capacity,
            mb.conflict)


def _simulated_fraction(nest: AffineNest, cache: CacheConfig) -> float:
    ext, step, addr0, base = _affine_steps(nest)
    _, _, sim = periodic_hits(ext, step, addr0, base, nest.total_bytes, cache.line_bytes,
                              cache.n_sets, cache.ways, True)
    return sim / (nest.n_iters * len(nest.accesses))


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
                                   CacheConfig(16384, 4, 32)])
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


def test_footprint_counts_distinct_lines(gemm) -> None:
    nest = AffineNest.from_loop_nest(te.lower(gemm(24, width=27)))
    ext, step, addr0, _ = _affine_steps(nest)
    trace = te.lower(gemm(24, width=27)).byte_trace()
    want = int(np.unique(np.asarray(trace) // 64).size)
    assert footprint_lines(ext, step, addr0, 64, nest.total_bytes // 64 + 1) == want


@pytest.mark.parametrize("addrs", [
    np.arange(0, 64 * 500, 4) % 12_000,
    np.array([0, 1 << 40, 64, (1 << 40) + 64, 0, 2048, 1 << 40]),  # sparse: np.unique path
])
def test_raw_trace_counts_lines_inside_the_loop(addrs: np.ndarray) -> None:
    for cache in (CacheConfig(), CacheConfig(1024, 2)):
        assert simulate_cache(addrs, cache) == simulate_cache_reference(addrs, cache)
