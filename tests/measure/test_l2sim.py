"""L2 simulator: the seed's §4.3 numbers, its block counts, and probe == full replay."""

import numpy as np
import pytest

import autotile.kernels as K
import autotile.lang as tl
from autotile.errors import MeasureError
from autotile.measure.gpu._hardware import H100_SXM
from autotile.measure.gpu._l2sim import (
    BufferTiling,
    lockstep_stream_from_trace,
    simulate_l2,
    simulate_l2_stream,
)
from autotile.measure.gpu._matmul_schedule import matmul_tile_schedule

GB = 1e9


@pytest.fixture(scope="module")
def seed_traffic():
    out = {}
    for g in (1, 8, 16, 64):
        sched, n = matmul_tile_schedule(8192, 8192, 8192, 128, 128, 64, g)
        assert n == 4096
        out[g] = simulate_l2(sched, l2_bytes=H100_SXM.l2_bytes, n_concurrent=132)
    return out


def test_seed_8192_traffic(seed_traffic):
    t = {g: s.hbm_read_bytes / GB for g, s in seed_traffic.items()}
    print("8192^3 HBM read GB by GROUP_M:", t)
    assert round(t[1], 2) == 4.36  # row-major (GROUP_M = 1)
    assert round(t[8], 2) == 1.74
    assert abs(t[16] - t[8]) / t[8] < 0.02
    assert seed_traffic[64].hbm_read_bytes == seed_traffic[1].hbm_read_bytes  # column-major
    comp = seed_traffic[8].compulsory_read_bytes
    assert comp == 2 * 8192**2 * 2 and round(comp / GB, 2) == 0.27
    assert seed_traffic[8].hbm_write_bytes == 8192**2 * 2  # C, counted apart
    assert seed_traffic[8].n_waves == 32


@pytest.mark.parametrize("nb,group,first,expected", [
    (12, 1, 12, 156), (12, 4, 12, 84), (9, 1, 9, 90), (9, 3, 9, 54)])
def test_seed_distinct_input_blocks(nb, group, first, expected):
    size = nb * 16
    sched, _ = matmul_tile_schedule(size, size, size, 16, 16, 16, group)
    st = simulate_l2(sched, l2_bytes=None, n_concurrent=first, n_programs=first)
    assert st.compulsory_read_bytes / (16 * 16 * 2) == expected


def _full_replay(M, N, K_, bm, bn, bk, group, n_conc, cap, num_sms=None):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K_)).astype(np.float16)
    b = rng.standard_normal((K_, N)).astype(np.float16)
    with tl.recording(trace="tile") as rec:
        if num_sms is None:
            K.matmul(a, b, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group)
        else:
            K.matmul_persistent(a, b, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group,
                                NUM_SMS=num_sms)
    npm, npn, nk = M // bm, N // bn, K_ // bk
    tilings = [BufferTiling("a_ptr", K_, (bm, bk), (npm, nk), bm * bk * 2, 2, 1),
               BufferTiling("b_ptr", N, (bk, bn), (nk, npn), bk * bn * 2, 2, 0),
               BufferTiling("c_ptr", N, (bm, bn), (npm, npn), bm * bn * 2, 2)]
    ids, w, tb = lockstep_stream_from_trace(rec.last.trace, tilings, n_conc)
    return simulate_l2_stream(ids, w, tb, l2_bytes=cap)


@pytest.mark.parametrize("shape,blocks,group,n_conc,cap_tiles,num_sms", [
    ((512, 512, 512), (64, 64, 64), 1, 6, 24, None),
    ((512, 512, 512), (64, 64, 64), 2, 6, 24, None),
    ((512, 512, 512), (64, 64, 64), 8, 10, 40, None),
    ((256, 512, 512), (32, 64, 128), 4, 8, 30, None),
    ((512, 512, 256), (64, 64, 64), 2, 5, 12, 5),
])
def test_probe_schedule_equals_full_replay(shape, blocks, group, n_conc, cap_tiles, num_sms):
    (M, N, K_), (bm, bn, bk) = shape, blocks
    cap = cap_tiles * bm * bk * 2
    ref = _full_replay(M, N, K_, bm, bn, bk, group, n_conc, cap, num_sms)
    sched, n = matmul_tile_schedule(M, N, K_, bm, bn, bk, group, NUM_SMS=num_sms)
    got = simulate_l2(sched, l2_bytes=cap, n_concurrent=n_conc)
    assert 0 < ref.n_read_hits < ref.n_reads  # the cache matters
    assert (got.hbm_read_bytes, got.n_reads, got.n_read_hits, got.hbm_write_bytes,
            got.compulsory_read_bytes) == (ref.hbm_read_bytes, ref.n_reads, ref.n_read_hits,
                                           ref.hbm_write_bytes, ref.compulsory_read_bytes)


def _lru_reference(ids, tb, cap):
    cache, used, miss_bytes = [], 0, 0
    for t in ids:
        if t in cache:
            cache.remove(t)
            cache.insert(0, t)
            continue
        miss_bytes += tb[t]
        cache.insert(0, t)
        used += tb[t]
        while used > cap:
            used -= tb[cache.pop()]
    return miss_bytes


def test_stream_lru_matches_python_reference():
    rng = np.random.default_rng(1)
    tb = rng.integers(1, 5, size=40).astype(np.int64) * 8
    ids = rng.integers(0, 40, size=3000).astype(np.int64)
    st = simulate_l2_stream(ids, np.zeros(ids.size, bool), tb, l2_bytes=200)
    assert st.hbm_read_bytes == _lru_reference(ids.tolist(), tb, 200)


def test_k_merge_and_extrapolation_are_close():
    exact, _ = matmul_tile_schedule(2048, 2048, 2048, 64, 64, 64, 8)
    merged, _ = matmul_tile_schedule(2048, 2048, 2048, 64, 64, 64, 8, k_merge=4)
    prefix, n = matmul_tile_schedule(2048, 2048, 2048, 64, 64, 64, 8, max_probe_programs=512)
    cap = 4 << 20
    a = simulate_l2(exact, l2_bytes=cap, n_concurrent=132)
    b = simulate_l2(merged, l2_bytes=cap, n_concurrent=132)
    c = simulate_l2(prefix, l2_bytes=cap, n_concurrent=132, total_programs=n)
    assert b.n_reads * 4 == a.n_reads
    assert abs(b.hbm_read_bytes / a.hbm_read_bytes - 1) < 0.1
    assert c.extrapolation == pytest.approx(1024 / 396)
    assert abs(c.hbm_read_bytes / a.hbm_read_bytes - 1) < 0.15


def test_errors():
    with pytest.raises(MeasureError, match="loop_axis must be None, 0 or 1"):
        BufferTiling("a", 1, (1, 1), (1, 1), 1, 1, loop_axis=2)
    with pytest.raises(MeasureError, match="must be positive"):
        BufferTiling("a", 0, (1, 1), (1, 1), 1, 1)
    sched, _ = matmul_tile_schedule(64, 64, 64, 16, 16, 16, 1)
    with pytest.raises(MeasureError, match="n_concurrent must be >= 1"):
        simulate_l2(sched, l2_bytes=100, n_concurrent=0)
    with pytest.raises(MeasureError, match="l2_bytes must be an int >= 0"):
        simulate_l2(sched, l2_bytes=-1, n_concurrent=1)
