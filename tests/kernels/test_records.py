"""The seed's counts, measured from the interpreter's own launch records."""

import numpy as np
import pytest

import autotile.kernels as K
import autotile.lang as tl


def test_vector_add_97_programs_last_has_128_valid():
    n = 98_432
    rng = np.random.default_rng(0)
    x, y = rng.random((2, n), dtype=np.float32)
    with tl.recording() as rec:
        K.add(x, y, BLOCK_SIZE=1024)
    r = rec.last
    assert r.n_programs == 97
    last = r.program(96)
    print("vector add: programs", r.n_programs, "last program", last)
    assert last["x_ptr"]["elems_read"] == last["y_ptr"]["elems_read"] == 128
    assert last["out_ptr"]["elems_written"] == 128
    assert r.masked_lanes[96] == 3 * (1024 - 128)
    assert r.masked_lanes[:96].sum() == 0


def test_softmax_io_naive_vs_fused_1823x781():
    m, n = 1823, 781
    x = np.random.default_rng(1).standard_normal((m, n)).astype(np.float32)
    with tl.recording() as rec:
        out = K.softmax_naive(x, BLOCK_SIZE=1024)
    assert [r.kernel_name for r in rec.records] == [
        "row_max_kernel", "sub_row_kernel", "exp_kernel", "row_sum_kernel", "div_row_kernel"]
    naive_r = sum(r.total_elems_read() for r in rec.records)
    naive_w = sum(r.total_elems_written() for r in rec.records)
    with tl.recording() as rec:
        fused = K.softmax_fused(x)
    fused_r, fused_w = rec.last.total_elems_read(), rec.last.total_elems_written()
    ratio = (naive_r + naive_w) / (fused_r + fused_w)
    print(f"softmax {m}x{n}: naive reads {naive_r:,} writes {naive_w:,}; fused reads "
          f"{fused_r:,} writes {fused_w:,}; {ratio:.2f}x less")
    assert (naive_r, naive_w) == (7_122_461, 4_274_935) == K.io_naive_softmax(m, n)
    assert fused_r == fused_w == 1_423_763
    assert round(ratio, 2) == 4.00
    np.testing.assert_allclose(out, fused, rtol=1e-6, atol=1e-8)


def _distinct_blocks(trace, buf_id, first, ld, block):
    """Distinct (row-block, col-block) of buffer ``buf_id`` loaded by programs < first."""
    sel = (trace.program < first) & (trace.buffer == buf_id) & ~trace.is_write
    elem = trace.offset_bytes[sel] // 2  # fp16
    rows, cols = elem // ld, elem % ld
    return set(zip((rows // block).tolist(), (cols // block).tolist()))


@pytest.mark.parametrize("order,group,expected", [
    ("row_major", 3, 90), ("grouped", 3, 54), ("grouped", 1, 90)])
def test_group_m_distinct_input_blocks_9x9(order, group, expected):
    bs, nb = 16, 9
    size = nb * bs
    rng = np.random.default_rng(2)
    a = rng.standard_normal((size, size)).astype(np.float16)
    b = rng.standard_normal((size, size)).astype(np.float16)
    with tl.recording(trace="element") as rec:
        c = K.matmul(a, b, BLOCK_M=bs, BLOCK_N=bs, BLOCK_K=bs, GROUP_M=group, PID_ORDER=order)
    r = rec.last
    assert r.n_programs == 81
    ia, ib = r.buffer_names.index("a_ptr"), r.buffer_names.index("b_ptr")
    blocks_a = _distinct_blocks(r.trace, ia, 9, size, bs)
    blocks_b = _distinct_blocks(r.trace, ib, 9, size, bs)
    total = len(blocks_a) + len(blocks_b)
    print(f"GROUP_M 9x9 blocks, {order} GROUP_M={group}: first 9 programs load "
          f"{len(blocks_a)} A + {len(blocks_b)} B = {total} distinct blocks")
    assert total == expected
    np.testing.assert_allclose(c, K.matmul_reference(a, b), rtol=2e-3, atol=2e-2)


def test_persistent_matmul_records_25_tiles_on_4_programs():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((80, 40)).astype(np.float16)
    b = rng.standard_normal((40, 80)).astype(np.float16)
    with tl.recording() as rec:
        c = K.matmul_persistent(a, b, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2,
                                NUM_SMS=4, out_dtype=np.float32)
    r = rec.last
    assert r.n_programs == 4
    written = r.elems_written[:, r.buffer_names.index("c_ptr")]
    # program p owns tiles p, p + 4, ...: 7, 6, 6, 6 tiles of 256 elements
    assert written.tolist() == [7 * 256, 6 * 256, 6 * 256, 6 * 256]
    assert written.sum() == 25 * 256 == c.size
    np.testing.assert_allclose(c, K.matmul_reference(a, b, np.float32), rtol=1e-5, atol=1e-4)


def _flash_bytes(n, d, block_m, dtype, causal=False, block_n=None):
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((n, d)).astype(dtype) for _ in range(3))
    with tl.recording() as rec:
        K.flash_attention(q, k, v, causal=causal, BLOCK_M=block_m, BLOCK_N=block_n)
    r = rec.last
    return r, r.total_bytes_read() + r.total_bytes_written()


def test_flash_io_1024x64_block64_byte_for_byte():
    r, total = _flash_bytes(1024, 64, 64, np.float32)
    print(f"flash N=1024 d=64 BLOCK_M=64 fp32: {total:,} bytes from the records")
    assert total == 8_916_992 == K.io_flash(1024, 64, 64, 4)
    assert r.n_programs == 16
    assert r.total_bytes_read("Q") == 1024 * 64 * 4
    assert r.total_bytes_read("K") == r.total_bytes_read("V") == 16 * 1024 * 64 * 4
    assert r.total_bytes_written("O") == 1024 * 64 * 4
    assert r.total_bytes_written("L") == 1024 * 4


@pytest.mark.parametrize("block_m", [32, 64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_io_flash_matches_records_fp16_d128(block_m, causal):
    n = 300 if causal else 512
    _, total = _flash_bytes(n, 128, block_m, np.float16, causal=causal)
    assert total == K.io_flash(n, 128, block_m, 2, causal=causal)
