import numpy as np
import pytest

import autotile.lang as tl
from tests.lang._kernels import add_kernel, softmax_kernel


def _run_add(n, block, trace):
    x = np.ones(n, np.float32)
    y = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    with tl.recording(trace=trace) as rec:
        add_kernel[(tl.cdiv(n, block),)](x, y, out, n, BLOCK_SIZE=block)
    return rec.last


def test_element_trace_columns():
    r = _run_add(100, 64, "element")
    t = r.trace
    assert len(t) == 300
    assert t.buffer_names == ("x_ptr", "y_ptr", "out_ptr")
    assert t.granularity == "element"
    np.testing.assert_array_equal(t.buffer[:64], 0)
    np.testing.assert_array_equal(t.offset_bytes[:64], 4 * np.arange(64))
    assert t.is_write.sum() == 100
    assert set(t.program.tolist()) == {0, 1}
    assert t.op[:64].tolist() == [0] * 64 and t.op[64:128].tolist() == [1] * 64
    assert int(t.size_bytes.sum()) == 1200
    # addresses are disjoint per buffer and aligned
    assert len(set(t.buffer_base_bytes)) == 3
    assert all(b % 4096 == 0 for b in t.buffer_base_bytes)
    assert t.addr.dtype == np.uint64
    assert t.addr[0] == t.buffer_base_bytes[0]


@pytest.mark.parametrize("gran,unit,rows", [("sector", 32, 3 * (8 + 5)), ("line", 128,
                                                                        3 * (2 + 2))])
def test_sector_and_line_traces_deduplicate_within_op(gran, unit, rows):
    r = _run_add(100, 64, gran)
    t = r.trace
    # program 0 touches 256 B per op -> 8 sectors / 2 lines; program 1 touches 144 B
    assert len(t) == rows
    assert (t.offset_bytes % unit == 0).all()
    assert (t.size_bytes == unit).all()


def test_tile_trace_one_row_per_op():
    r = _run_add(100, 64, "tile")
    t = r.trace
    assert len(t) == 6
    assert t.size_bytes.tolist() == [256, 256, 256, 144, 144, 144]
    assert t.offset_bytes.tolist() == [0, 0, 0, 256, 256, 256]
    assert t.is_write.tolist() == [False, False, True] * 2


def test_no_trace_by_default_and_records_accumulate():
    r = _run_add(10, 16, None)
    assert r.trace is None
    x = np.ones(10, np.float32)
    with tl.recording() as rec:
        add_kernel[(1,)](x, x, x, 10, BLOCK_SIZE=16)
        add_kernel[(2,)](x, x, x, 10, BLOCK_SIZE=8)
    assert [r.n_programs for r in rec.records] == [1, 2]
    assert rec.last is add_kernel.last_record
    assert rec.last.meta == {"BLOCK_SIZE": 8}
    with pytest.raises(ValueError, match="trace must be one of"):
        with tl.recording(trace="page"):
            pass


def test_bytes_per_program_and_aliasing_shares_base():
    x = np.ones(10, np.float32)
    with tl.recording(trace="element") as rec:
        add_kernel[(1,)](x, x, x, 10, BLOCK_SIZE=16)
    r = rec.last
    assert r.bytes_read.tolist() == [[40, 40, 0]]
    assert r.bytes_written.tolist() == [[0, 0, 40]]
    assert len(set(r.trace.buffer_base_bytes)) == 1


def test_softmax_record_per_program():
    m, n = 5, 781
    x = np.zeros((m, n), np.float32)
    y = np.zeros_like(x)
    softmax_kernel[(m,)](y, x, n, n, BLOCK=1024)
    r = softmax_kernel.last_record
    assert r.elems_read[:, r.buffer_names.index("x")].tolist() == [781] * m
    assert r.masked_lanes.tolist() == [2 * (1024 - 781)] * m
    assert r.total_lanes.tolist() == [2048] * m
