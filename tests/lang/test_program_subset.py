"""The interpreter-only launch option ``programs=``: run a subset of the grid.

A subset launch must give, for the programs it runs, exactly the rows of
the full launch (counts, op counts, trace rows with their real program
index), with ``program_id``/``num_programs`` of the full grid.
"""

import numpy as np
import pytest

import autotile.kernels as K
import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit
from autotile.lang._semantic import MAX_PROGRAMS

ROW_FIELDS = ("program_ids", "elems_read", "elems_written", "masked_lanes", "total_lanes",
              "dot_flops", "dot_operand_bytes", "alu_ops", "sfu_ops", "max_tile_elems",
              "scratch_bytes")
TRACE_COLS = ("buffer", "offset_bytes", "size_bytes", "is_write", "program", "op")


@jit
def ids_kernel(out_ptr, BLOCK: tl.constexpr):
    """Program ``p`` writes its 3 ids and 3 grid sizes to ``out[p]`` (6 lanes)."""
    p0, p1, p2 = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    n0, n1 = tl.num_programs(0), tl.num_programs(1)
    lin = p0 + n0 * (p1 + n1 * p2)
    col = tl.arange(0, BLOCK)
    v = tl.where(col == 0, p0, tl.where(col == 1, p1, tl.where(col == 2, p2, tl.where(
        col == 3, n0, tl.where(col == 4, n1, tl.num_programs(2))))))
    tl.store(out_ptr + lin * 6 + col, v, mask=col < 6)


def _matmul(programs=None, batch=False, m=100, n=70, k=50, trace="sector"):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    extra = {} if programs is None else {"programs": programs}
    with tl.recording(trace=trace) as rec:
        K.matmul_kernel[(tl.cdiv(m, 32) * tl.cdiv(n, 16),)](
            a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=32, BLOCK_N=16, BLOCK_K=16,
            GROUP_M=2, PID_ORDER="grouped", batch_programs=batch, **extra)
    return c, rec.last


def _trace_rows(trace, keep):
    sel = np.isin(trace.program, keep)
    return {c: getattr(trace, c)[sel] for c in TRACE_COLS}


@pytest.mark.parametrize("batch", [False, True, 3])
@pytest.mark.parametrize("gran", ["element", "line", "tile"])
def test_subset_rows_equal_the_full_launch_rows(batch, gran):
    c_full, full = _matmul(trace=gran)
    subset = np.array([0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 17, 19])
    c_sub, sub = _matmul(subset, batch, trace=gran)
    assert full.n_programs == full.n_programs_total == 4 * 5
    assert (sub.n_programs, sub.n_programs_total) == (13, 20)
    for f in ROW_FIELDS:
        np.testing.assert_array_equal(getattr(sub, f), getattr(full, f)[subset], err_msg=f)
    np.testing.assert_array_equal(sub.linear_ids, subset)
    t_full = _trace_rows(full.trace, subset)
    assert set(sub.trace.program.tolist()) == set(subset.tolist())
    for col in TRACE_COLS:
        np.testing.assert_array_equal(getattr(sub.trace, col), t_full[col], err_msg=col)
    # only the programs that ran wrote their tiles of C
    tiles = np.zeros((4, 5), bool)
    for pid in subset:
        tiles[K.tile_of_pid(int(pid), 100, 70, 32, 16, 2)] = True
    written = np.kron(tiles, np.ones((32, 16), bool))[:100, :70]
    np.testing.assert_array_equal(c_sub[written], c_full[written])
    assert (c_sub[~written] == 0).all()
    if batch:
        # runs of consecutive programs (0-5 and 9-13) are batched where the kernel allows
        assert 0 < sub.n_programs_batched <= 11


@pytest.mark.parametrize("grid", [(7,), (3, 4), (2, 3, 4)])
def test_program_id_and_num_programs_are_those_of_the_full_grid(grid):
    n = int(np.prod(grid))
    subset = list(range(1, n, 2))
    out = np.full((n, 6), -1, np.int32)
    ids_kernel[grid](out, BLOCK=8, programs=subset)
    g3 = (tuple(grid) + (1, 1))[:3]
    for lin in range(n):
        pid = (lin % g3[0], lin // g3[0] % g3[1], lin // (g3[0] * g3[1]))
        want = [*pid, *g3] if lin in subset else [-1] * 6
        assert out[lin].tolist() == want
    r = ids_kernel.last_record
    assert r.n_programs == len(subset) and r.n_programs_total == n
    assert r.grid == g3
    np.testing.assert_array_equal(r.linear_ids, subset)
    assert r.program_index(r.program_ids[1].tolist()) == 1
    assert r.program(tuple(r.program_ids[2].tolist()))["out_ptr"]["elems_written"] == 6
    with pytest.raises(KeyError, match="did not run"):
        r.program_index(0)


def test_full_launch_record_has_n_programs_total_equal_to_n_programs():
    out = np.zeros((6, 6), np.int32)
    ids_kernel[(2, 3)](out, BLOCK=8)
    r = ids_kernel.last_record
    assert r.n_programs == r.n_programs_total == 6
    assert r.summary()["n_programs_total"] == 6
    assert r.program_index((1, 2)) == 5


@pytest.mark.parametrize("programs", [[4], (0, 3), range(2, 5), np.array([1, 4], np.uint8),
                                      np.array([0, 2, 4], np.int64), [np.int32(3)]])
def test_accepted_index_sequences(programs):
    out = np.full((5, 6), -1, np.int32)
    ids_kernel[(5,)](out, BLOCK=8, programs=programs)
    ran = [int(p) for p in programs]
    assert (out[:, 0] >= 0).tolist() == [i in ran for i in range(5)]
    np.testing.assert_array_equal(ids_kernel.last_record.program_ids[:, 0], ran)


def test_run_method_takes_programs_too():
    out = np.full((4, 6), -1, np.int32)
    ids_kernel.run(out, grid=(4,), BLOCK=8, programs=[1, 2])
    assert out[:, 0].tolist() == [-1, 1, 2, -1]
    assert ids_kernel.last_record.n_programs == 2
    assert "programs" not in ids_kernel.last_record.meta


def test_a_subset_may_sample_a_grid_larger_than_a_full_launch_allows():
    n = MAX_PROGRAMS + 5
    out = np.zeros(6, np.int32)

    @jit
    def last_kernel(out_ptr, BLOCK: tl.constexpr):
        col = tl.arange(0, BLOCK)
        tl.store(out_ptr + col, tl.program_id(0) + col * 0, mask=col < 6)

    with pytest.raises(LangError, match="at most"):
        last_kernel[(n,)](out, BLOCK=8)
    last_kernel[(n,)](out, BLOCK=8, programs=[0, n - 1])
    assert out.tolist() == [n - 1] * 6
    r = last_kernel.last_record
    assert (r.n_programs, r.n_programs_total) == (2, n)


@pytest.mark.parametrize("programs,match", [
    ([2, 1], r"strictly increasing .* got programs\[0\]=2 followed by programs\[1\]=1"),
    ([0, 3, 3], r"strictly increasing .* got programs\[1\]=3 followed by programs\[2\]=3"),
    ([0, 5], r"in \[0, 5\) of grid=\(5, 1, 1\), got programs\[1\]=5"),
    ([-1, 2], r"in \[0, 5\) of grid=\(5, 1, 1\), got programs\[0\]=-1"),
    ([0, 1.5], r"programs must be a sequence or 1-D ndarray of ints .* got programs\[1\]=1.5 "
               r"\(float\)"),
    (np.array([0.0, 1.0]), r"got ndarray of shape \(2,\), float64 \(programs\[0\]="),
    (["0"], r"got programs\[0\]='0' \(str\)"),
    ([True, False], r"got programs\[0\]=True \(bool\)"),
    ([0, 1, np.True_], r"got programs\[2\]=\S*True\S* \(bool"),
    ([[0, 1]], r"got programs\[0\]=\[0, 1\] \(list\)"),
    (range(3, 0, -1), r"strictly increasing .* got programs\[0\]=3 followed by"),
    (np.array([True, False, True, False, False]), r"bool array .* np.flatnonzero\(mask\)"),
    (np.array([[0, 1]]), r"with shape \(1, 2\)"),
    ([], r"at least one program"),
    (3, r"got programs=3"),
    ({1, 2}, r"got programs=\{1, 2\}"),
])
def test_bad_subsets_are_lang_errors_naming_the_option_and_value(programs, match):
    out = np.zeros((5, 6), np.int32)
    with pytest.raises(LangError, match=match):
        ids_kernel[(5,)](out, BLOCK=8, programs=programs)
    assert (out == 0).all()


def test_ir_listing_does_not_take_programs():
    out = np.zeros((5, 6), np.int32)
    with pytest.raises(LangError, match="trace\\(\\) runs program 0"):
        ids_kernel.trace(out, grid=(5,), BLOCK=8, programs=[1])
