import numpy as np
import pytest

import autotile.lang as tl
from tests.lang._kernels import add_kernel, matmul_kernel, softmax_kernel


def test_vector_add_seed_numbers():
    n = 98_432
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    add_kernel[lambda META: (tl.cdiv(n, META["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=1024)
    np.testing.assert_array_equal(out, x + y)
    rec = add_kernel.last_record
    assert rec.n_programs == 97
    last = rec.program((96,))
    assert last["x_ptr"]["elems_read"] == 128
    assert last["out_ptr"]["elems_written"] == 128
    assert last["out_ptr"]["bytes_written"] == 512
    assert rec.program(0)["x_ptr"]["elems_read"] == 1024
    s = rec.summary()
    assert s["n_programs"] == 97
    assert s["masked_lanes"] == 3 * (1024 - 128)
    assert s["buffers"]["y_ptr"]["bytes_read"] == 4 * n
    assert rec.total_elems_written("out_ptr") == n
    assert rec.grid == (97, 1, 1)


def _softmax_ref(x):
    z = x - x.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def test_fused_softmax_seed_counts():
    m, n = 1823, 781
    x = np.random.default_rng(1).standard_normal((m, n)).astype(np.float32)
    y = np.empty_like(x)
    softmax_kernel[(m,)](y, x, x.strides[0] // x.itemsize, n, BLOCK=tl.next_power_of_2(n))
    np.testing.assert_allclose(y, _softmax_ref(x), rtol=1e-5, atol=1e-7)
    rec = softmax_kernel.last_record
    assert rec.total_elems_read() == 1_423_763
    assert rec.total_elems_written() == 1_423_763
    assert rec.summary()["masked_lanes"] == 2 * m * (1024 - 781)


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("group_m", [1, 4])
def test_matmul_fp16(trans_a, group_m):
    M, N, K = 200, 300, 100
    rng = np.random.default_rng(2)
    a = rng.standard_normal((M, K)).astype(np.float16)
    if trans_a:
        a = np.ascontiguousarray(a.T).T
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), dtype=np.float16)
    BM, BN, BK = 64, 64, 32
    grid = (tl.cdiv(M, BM) * tl.cdiv(N, BN),)
    matmul_kernel[grid](a, b, c, M, N, K, a.strides[0] // 2, a.strides[1] // 2,
                        b.strides[0] // 2, b.strides[1] // 2, c.strides[0] // 2,
                        c.strides[1] // 2, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                        GROUP_M=group_m, num_warps=4, num_stages=3)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    rel = np.abs(c.astype(np.float32) - ref).max() / np.abs(ref).max()
    assert rel < 1e-3
    rec = matmul_kernel.last_record
    assert rec.num_warps == 4 and rec.num_stages == 3
    assert rec.n_programs == 4 * 5
