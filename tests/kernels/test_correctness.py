"""Each launcher against its NumPy reference at the seed's sizes."""

import numpy as np
import pytest

import autotile.kernels as K


def rel_err(got, ref):
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    return float(np.abs(got - ref).max() / np.abs(ref).max())


def test_vector_add():
    rng = np.random.default_rng(0)
    x, y = rng.random((2, 98_432), dtype=np.float32)
    np.testing.assert_array_equal(K.add(x, y, BLOCK_SIZE=1024), K.add_reference(x, y))


def test_softmax_naive_and_fused_match_reference():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((37, 781)).astype(np.float32)
    ref = K.softmax_reference(x)
    np.testing.assert_allclose(K.softmax_naive(x, BLOCK_SIZE=256), ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(K.softmax_fused(x), ref, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("order", ["grouped", "row_major"])
def test_matmul_200x300x100_fp16_to_fp16_rounding(order):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((200, 100)).astype(np.float16)
    b = rng.standard_normal((100, 300)).astype(np.float16)
    c = K.matmul(a, b, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=2, PID_ORDER=order)
    assert c.dtype == np.float16
    exact = a.astype(np.float64) @ b.astype(np.float64)
    err = rel_err(c, exact)
    print(f"matmul 200x300x100 fp16 ({order}): max relative error {err:.2e} (seed: 3.5e-4)")
    assert err < 1e-3
    # fp32 output: only fp32 accumulation error left
    c32 = K.matmul(a, b, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, out_dtype=np.float32)
    assert c32.dtype == np.float32
    assert rel_err(c32, exact) < 1e-6


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
def test_matmul_transposed_operands_via_strides(ta, tb):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((200, 100)).astype(np.float16)
    b = rng.standard_normal((100, 300)).astype(np.float16)
    a_in = np.ascontiguousarray(a.T).T if ta else a  # column-major storage of a
    b_in = np.ascontiguousarray(b.T).T if tb else b
    assert (a_in.strides[0] == a.itemsize) == ta
    c = K.matmul(a_in, b_in, BLOCK_M=32, BLOCK_N=64, BLOCK_K=16, out_dtype=np.float32)
    np.testing.assert_allclose(c, K.matmul_reference(a, b, np.float32), rtol=1e-5, atol=1e-4)


def test_grouped_order_group_1_is_row_major_and_large_group_is_column_major():
    M, N, bm, bn = 9 * 16, 7 * 16, 16, 16
    n_pid = 9 * 7
    grouped1 = [K.tile_of_pid(p, M, N, bm, bn, 1, "grouped") for p in range(n_pid)]
    row_major = [K.tile_of_pid(p, M, N, bm, bn, 1, "row_major") for p in range(n_pid)]
    assert grouped1 == row_major == [(p // 7, p % 7) for p in range(n_pid)]
    big = [K.tile_of_pid(p, M, N, bm, bn, 64, "grouped") for p in range(n_pid)]
    assert big == [(p % 9, p // 9) for p in range(n_pid)]


def test_persistent_matmul_25_tiles_on_4_programs():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((80, 48)).astype(np.float16)
    b = rng.standard_normal((48, 80)).astype(np.float16)
    c = K.matmul_persistent(a, b, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2, NUM_SMS=4,
                            out_dtype=np.float32)
    np.testing.assert_allclose(c, K.matmul_reference(a, b, np.float32), rtol=1e-5, atol=1e-4)


def test_descriptor_persistent_matmul():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((72, 40)).astype(np.float16)  # 40 * 2 B = 80 B, 16 B aligned
    b = rng.standard_normal((40, 88)).astype(np.float16)
    c = K.matmul_descriptor_persistent(a, b, BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=2,
                                       NUM_SMS=4, out_dtype=np.float32)
    np.testing.assert_allclose(c, K.matmul_reference(a, b, np.float32), rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match="16-byte"):
        a36 = np.zeros((16, 36), np.float16)  # 72-byte rows
        K.matmul_descriptor_persistent(a36, np.zeros((36, 16), np.float16), NUM_SMS=4)


@pytest.mark.parametrize("n", [256, 300])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_within_1e6_of_float64(n, causal):
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((n, 64)).astype(np.float32) for _ in range(3))
    o, lse = K.flash_attention(q, k, v, causal=causal, BLOCK_M=64)
    ref_o, ref_lse = K.attention_reference(q, k, v, causal=causal)
    err = float(np.abs(o - ref_o).max())
    print(f"flash N={n} causal={causal}: max |O - O_f64| = {err:.2e} (seed: 6.1e-7)")
    assert err < 1e-6
    assert float(np.abs(lse - ref_lse).max()) < 1e-5


def test_flash_attention_batched_fp16():
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 100, 32)).astype(np.float16) for _ in range(3))
    o, lse = K.flash_attention(q, k, v, causal=True, BLOCK_M=32, BLOCK_N=16)
    assert o.dtype == np.float16 and lse.shape == (2, 100)
    ref_o, _ = K.attention_reference(q, k, v, causal=True)
    assert float(np.abs(o - ref_o).max()) < 5e-3


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_key_block_wider_than_query_block(causal):
    # BLOCK_N > BLOCK_M launches (tutorial 06's 64 x 128): with CAUSAL the key block
    # that crosses the diagonal reaches past it and the element-wise mask drops the rest
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((200, 32)).astype(np.float32) for _ in range(3))
    o, lse = K.flash_attention(q, k, v, causal=causal, BLOCK_M=32, BLOCK_N=128)
    ref_o, ref_lse = K.attention_reference(q, k, v, causal=causal)
    assert float(np.abs(o - ref_o).max()) < 1e-6
    assert float(np.abs(lse - ref_lse).max()) < 1e-5


def test_layer_norm():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((13, 300)).astype(np.float32)
    w, b = rng.standard_normal((2, 300)).astype(np.float32)
    y, mean, rstd = K.layer_norm(x, w, b, BLOCK_SIZE=128)
    ry, rm, rr = K.layer_norm_reference(x, w, b)
    np.testing.assert_allclose(y, ry, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mean, rm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, rr, rtol=1e-5)


def test_l2_norm():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((11, 300)).astype(np.float32)
    np.testing.assert_allclose(K.l2_norm(x), K.l2_norm_reference(x), rtol=1e-6)


def test_launchers_validate_at_the_boundary():
    a = np.zeros((32, 16), np.float16)
    with pytest.raises(ValueError, match="BLOCK_M must be a power of two >= 16"):
        K.matmul(a, a.T, BLOCK_M=48)
    with pytest.raises(ValueError, match="PID_ORDER"):
        K.matmul(a, a.T, PID_ORDER="zigzag")
    with pytest.raises(ValueError, match="shape"):
        K.matmul(a, a)
    with pytest.raises(ValueError, match="BLOCK_SIZE must be a power of two >= n_cols"):
        K.softmax_fused(np.zeros((2, 100), np.float32), BLOCK_SIZE=64)
    q = np.zeros((64, 64), np.float32)
    with pytest.raises(ValueError, match="BLOCK_N must be a power of two >= 16"):
        K.flash_attention(q, q, q, BLOCK_M=32, BLOCK_N=48)
