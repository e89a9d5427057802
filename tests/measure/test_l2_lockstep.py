"""The NumPy lockstep L2 counts equal the numba replay, load for load."""

from __future__ import annotations

import numpy as np
import pytest

from autotile.errors import MeasureError
from autotile.measure.gpu._l2_lockstep import lockstep_counts
from autotile.measure.gpu._l2sim import _sim_schedule, simulate_l2
from autotile.measure.gpu._matmul_schedule import matmul_tile_schedule

SHAPES = ((1024, 1024, 1024), (1000, 1700, 900), (256, 6144, 2048), (4096, 384, 1536),
          (3000, 5000, 2000))


def _replay(s, n_conc, cap, p_hi):
    return _sim_schedule(s.prog_seg_ptr, s.seg_n_steps, s.seg_op_ptr, s.op_base, s.op_stride,
                         s.op_lo, s.op_hi, s.op_write, s.tile_bytes, n_conc, cap, p_hi)


def test_equals_the_replay_on_random_matmul_schedules():
    rng = np.random.default_rng(7)
    n_checked = 0
    for trial in range(40):
        M, N, K = SHAPES[trial % len(SHAPES)]
        bm, bn = (int(v) for v in rng.choice([16, 32, 64, 128, 256], 2))
        bk, g = int(rng.choice([16, 32, 64, 128])), int(rng.choice([1, 2, 4, 8, 32]))
        sched, _ = matmul_tile_schedule(M, N, K, bm, bn, bk, g, k_merge=int(rng.choice([1, 3])),
                                        max_probe_programs=int(rng.choice([300, 4096])))
        n_conc = int(rng.choice([7, 132, 264, 528]))
        # L2 sizes from infinite down to a few tile rows, so every branch decides hits
        cap = int(rng.choice([-1, 60 << 20, 8 << 20, 3 << 20, 1 << 20]))
        p_hi = sched.n_programs
        got = lockstep_counts(sched, n_conc, cap, p_hi)
        if got is None:  # one wave's step does not fit next to a tile: replayed instead
            continue
        n_checked += 1
        np.testing.assert_array_equal(got, _replay(sched, n_conc, cap, p_hi))
    assert n_checked >= 30


def test_simulate_l2_gives_the_same_stats_either_way():
    sched, n = matmul_tile_schedule(4096, 4096, 4096, 128, 64, 32, 8, max_probe_programs=1024)
    kw = dict(l2_bytes=62_914_560, n_concurrent=264, total_programs=n)
    fast, slow = simulate_l2(sched, **kw), simulate_l2(sched, replay="loads", **kw)
    assert fast == slow
    # 3 full waves of the 1,024 probed programs simulated, scaled to the launch's 2,048
    assert fast.extrapolation == pytest.approx(2048 / 792)
    assert fast.hbm_read_bytes == pytest.approx(1.3015052e8, rel=1e-7)
    with pytest.raises(MeasureError, match="replay must be"):
        simulate_l2(sched, replay="fast", **kw)


def test_declines_what_it_does_not_cover():
    persistent, _ = matmul_tile_schedule(512, 512, 512, 64, 64, 64, 4, NUM_SMS=8)
    assert lockstep_counts(persistent, 8, 60 << 20, persistent.n_programs) is None
    sched, _ = matmul_tile_schedule(2048, 2048, 2048, 256, 256, 64, 8)
    # one wave's tiles of one step (33 A and B tiles of 32 KiB) exceed a 64 KiB L2
    assert lockstep_counts(sched, 132, 64 << 10, sched.n_programs) is None
    assert lockstep_counts(sched, 132, 60 << 20, 0).tolist() == [0] * 6
