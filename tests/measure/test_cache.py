"""The cache simulators against the lecture notes' numbers and against each other."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile import te
from autotile.errors import MeasureError
from autotile.measure import (
    AffineNest,
    CacheConfig,
    classify_misses,
    simulate_cache,
    simulate_cache_reference,
    simulate_nest,
)


def ikj(s, C):
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    s[C].reorder(i, k, j)


def tvm_blocking_permutation(s, C):
    """TVM CPU GEMM tutorial, 'Blocking' + 'Loop permutation' at bn=16, kfactor=4."""
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, jo, ii, ji = s[C].tile(i, j, x_factor=16, y_factor=16)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)


def tvm_blocking(s, C):
    """TVM CPU GEMM tutorial, 'Blocking' step only (reorder mo, no, ko, ki, mi, ni)."""
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, jo, ii, ji = s[C].tile(i, j, x_factor=16, y_factor=16)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ki, ii, ji)


def both(nest):
    fast = simulate_nest(nest)
    slow = classify_misses(nest.byte_trace())
    assert (fast.total, fast.fully_assoc.n_misses, fast.compulsory) == (
        slow.total, slow.fully_assoc.n_misses, slow.compulsory)
    return fast


# --- the lecture notes' numbers (§7.2, exercise 5) ---------------------------------

def test_default_order_64(gemm):
    mb = both(te.lower(gemm(64)))
    assert mb.total == 266_760
    assert mb.fully_assoc.n_misses == 16_896
    assert mb.compulsory == 768
    assert mb.conflict == 266_760 - 16_896


def test_reorder_ikj_64(gemm):
    mb = both(te.lower(gemm(64, ikj)))
    assert mb.total == 16_896
    assert mb.conflict == 0


def test_n65_default_equals_fully_associative(gemm):
    mb = both(te.lower(gemm(65)))
    assert mb.total == 17_814
    assert mb.fully_assoc.n_misses == 17_814


def test_padded_width_65_removes_almost_all_conflicts(gemm):
    # Padding A and B rows of a 64x64 GEMM to 65 elements (260-byte rows).
    mb = both(te.lower(gemm(64, width=65)))
    assert mb.total == 17_213
    assert mb.fully_assoc.n_misses == 17_212
    assert mb.conflict == 1


def test_compulsory_is_three_arrays_once(gemm):
    assert both(te.lower(gemm(64))).compulsory == 3 * 64 * 64 * 4 // 64 == 768


def test_tvm_tutorial_packing_drops_conflicts_1204_to_20(gemm):
    before = both(te.lower(gemm(64, tvm_blocking_permutation)))
    after = both(te.lower(gemm(64, tvm_blocking_permutation, pack=16)))
    assert before.conflict == 1_204
    assert after.conflict == 20
    # packing is invisible to the fully associative cache
    assert before.fully_assoc.n_misses == after.fully_assoc.n_misses == 2_304
    assert (before.total, after.total) == (3_508, 2_324)


def test_tvm_blocking_step(gemm):
    mb = both(te.lower(gemm(64, tvm_blocking)))
    assert (mb.total, mb.fully_assoc.n_misses, mb.conflict) == (3_820, 2_304, 1_516)


# --- fast path == reference ------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 4095), min_size=0, max_size=400),
    st.sampled_from([(512, 2, 32), (1024, 4, 64), (256, 1, 16), (1024, 16, 64), (768, 3, 64)]),
)
def test_fast_equals_reference(addrs, geom):
    cache = CacheConfig(*geom)
    fast = simulate_cache(np.array(addrs, np.int64), cache)
    assert fast == simulate_cache_reference(addrs, cache)


def test_fully_associative_sparse_addresses():
    rng = np.random.default_rng(0)
    addrs = rng.choice(np.arange(0, 10**9, 64), 300) .astype(np.int64)
    trace = np.concatenate([addrs, addrs[::-1], addrs])
    cache = CacheConfig(64 * 64, 64, 64)
    assert simulate_cache(trace, cache) == simulate_cache_reference(trace, cache)


@settings(max_examples=25, deadline=None)
@given(
    fi=st.sampled_from([1, 2, 4, 8, 16]), fj=st.sampled_from([1, 2, 4, 8, 16]),
    fk=st.sampled_from([1, 2, 4, 8, 16]), perm=st.permutations(range(6)),
    pack=st.sampled_from([None, 4, 16]), ways=st.sampled_from([1, 2, 4]),
)
def test_nest_walker_equals_trace_replay(gemm, fi, fj, fk, perm, pack, ways):
    def steps(s, C):
        i, j = s[C].op.axis
        (k,) = s[C].op.reduce_axis
        io, ii = s[C].split(i, factor=fi)
        jo, ji = s[C].split(j, factor=fj)
        ko, ki = s[C].split(k, factor=fk)
        loops = [io, ii, jo, ji, ko, ki]
        s[C].reorder(*[loops[p] for p in perm])
    nest = te.lower(gemm(16, steps, pack=pack))
    cache = CacheConfig(1024, ways, 32)
    fast = simulate_nest(nest, cache)
    trace = nest.byte_trace()
    assert fast.set_assoc == simulate_cache_reference(trace, cache)
    assert fast.fully_assoc == simulate_cache_reference(trace, cache.as_fully_associative())
    assert simulate_nest(nest, cache, shortcut=False) == fast


# --- bad input --------------------------------------------------------------------

@pytest.mark.parametrize("kw, msg", [
    ({"size_bytes": 1000}, "multiple of line_bytes"),
    ({"line_bytes": 48}, "power of two"),
    ({"ways": 0}, "ways=0"),
    ({"size_bytes": -8}, "size_bytes=-8"),
    ({"ways": 2.0}, "ways=2.0"),
])
def test_cache_config_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        CacheConfig(**kw)


@pytest.mark.parametrize("trace, msg", [
    (np.zeros((2, 2), np.int64), "1-D"),
    (np.array([0.5, 1.0]), "integer"),
    (np.array([0, -64]), "negative"),
])
def test_trace_errors(trace, msg):
    with pytest.raises(MeasureError, match=msg):
        simulate_cache(trace)
    with pytest.raises(MeasureError, match=msg):
        simulate_cache_reference(trace)


def test_fused_nest_is_not_affine(gemm):
    def fuse(s, C):
        i, j = s[C].op.axis
        s[C].fuse(i, j)
    nest = te.lower(gemm(8, fuse))
    with pytest.raises(MeasureError, match="not affine"):
        AffineNest.from_loop_nest(nest)
    # the general path still works
    plain = te.lower(gemm(8)).byte_trace()
    assert classify_misses(nest.byte_trace()).total == classify_misses(plain).total


def test_geometry_properties():
    c = CacheConfig()
    assert (c.n_lines, c.n_sets, c.fully_associative) == (128, 32, False)
    fa = c.as_fully_associative()
    assert (fa.ways, fa.n_sets, fa.fully_associative) == (128, 1, True)
    assert CacheConfig(**c.to_json()) == c


@settings(max_examples=25, deadline=None)
@given(fi=st.sampled_from([1, 2, 4, 8, 16]), fj=st.sampled_from([1, 2, 4, 8, 16]),
       fk=st.sampled_from([1, 2, 4, 8, 16]), perm=st.permutations(range(6)))
def test_simplified_nest_has_the_same_trace(gemm, fi, fj, fk, perm):
    def steps(s, C):
        i, j = s[C].op.axis
        (k,) = s[C].op.reduce_axis
        loops = [*s[C].split(i, factor=fi), *s[C].split(j, factor=fj), *s[C].split(k, factor=fk)]
        s[C].reorder(*[loops[p] for p in perm])
    full = AffineNest.from_loop_nest(te.lower(gemm(16, steps)))
    simple = full.simplified()
    assert simple.n_iters == full.n_iters and all(e > 1 for e in simple.extents)
    small = CacheConfig(512, 2, 32)
    assert simulate_nest(simple, small) == simulate_nest(full, small)
