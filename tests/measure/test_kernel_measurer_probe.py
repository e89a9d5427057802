"""The matmul probe: batched 1-element tiles give the schedule of the old 16-element probe."""

import numpy as np
import pytest

from autotile.measure.gpu._matmul_schedule import (
    _PROBE_BLOCK,
    _matmul_probe,
    _probe_schedule,
    clear_schedule_cache,
    matmul_tile_schedule,
)

SCHEDULE_FIELDS = ("prog_seg_ptr", "seg_n_steps", "seg_op_ptr", "op_base", "op_stride", "op_lo",
                   "op_hi", "op_write", "tile_bytes")
TRACE_COLS = ("buffer", "offset_bytes", "size_bytes", "is_write", "program", "op")


# (npm, npn, nk, GROUP_M, NUM_SMS or 0, programs probed)
GEOMETRIES = [
    (8, 8, 4, 1, 0, 64),
    (8, 8, 4, 3, 0, 64),      # last group smaller: the batch splits in two
    (13, 7, 5, 4, 0, 91),
    (16, 16, 2, 8, 0, 100),   # a prefix of the grid (max_probe_programs)
    (5, 9, 3, 16, 0, 45),     # GROUP_M above the tile rows: column-major
    (6, 5, 3, 2, 7, 30),      # persistent: programs loop from their id, one at a time
]


@pytest.mark.parametrize("npm,npn,nk,group,persistent,n_run", GEOMETRIES)
def test_batched_one_element_probe_gives_the_16_element_schedule(npm, npn, nk, group,
                                                                  persistent, n_run):
    old = _matmul_probe(npm, npn, group, persistent, n_run, block=16, batch=False)
    new = _matmul_probe(npm, npn, group, persistent, n_run)
    seq = _matmul_probe(npm, npn, group, persistent, n_run, block=_PROBE_BLOCK, batch=False)
    for c in TRACE_COLS:  # batched and one-at-a-time record the same trace
        np.testing.assert_array_equal(getattr(new, c), getattr(seq, c))
    assert old.program.tolist() == new.program.tolist()
    assert old.op.tolist() == new.op.tolist()
    for k_merge in (1, 2):
        tiles = (64 * 32 * 2, 32 * 64 * 2, 64 * 64 * 2)
        a = _probe_schedule(old, 16, npm, npn, nk, *tiles, k_merge)
        b = _probe_schedule(new, _PROBE_BLOCK, npm, npn, nk, *tiles, k_merge)
        for f in SCHEDULE_FIELDS:
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
        assert a.buffer_names == b.buffer_names


def test_cold_probe_is_batched_and_cached():
    clear_schedule_cache()
    sched, n = matmul_tile_schedule(8192, 8192, 8192, 128, 128, 64, 8, max_probe_programs=4096)
    assert n == 4096 and sched.n_programs == 4096
    info = _matmul_probe.cache_info()
    assert info.misses == 1 and info.currsize == 1
    matmul_tile_schedule(8192, 8192, 8192, 128, 128, 32, 8, max_probe_programs=4096)
    assert _matmul_probe.cache_info().hits == 1
