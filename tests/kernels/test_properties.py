"""Hypothesis: random shapes, strides and block sizes against the NumPy references."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autotile.kernels as K

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
pow2 = st.sampled_from


def _strided(rng, shape, dtype, transpose, pad):
    """An array of ``shape`` with column-major storage if ``transpose`` and padded rows."""
    if transpose:
        base = rng.standard_normal((shape[1], shape[0] + pad)).astype(dtype)
        return base[:, : shape[0]].T
    base = rng.standard_normal((shape[0], shape[1] + pad)).astype(dtype)
    return base[:, : shape[1]]


@SETTINGS
@given(n=st.integers(1, 3000), block=pow2([16, 64, 256, 1024]), seed=st.integers(0, 99))
def test_add_property(n, block, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.random((2, n), dtype=np.float32)
    np.testing.assert_array_equal(K.add(x, y, BLOCK_SIZE=block), K.add_reference(x, y))


@SETTINGS
@given(m=st.integers(1, 9), n=st.integers(1, 300), pad=st.integers(0, 5),
       block=pow2([16, 32, 128, 512]), seed=st.integers(0, 99))
def test_softmax_property(m, n, pad, block, seed):
    rng = np.random.default_rng(seed)
    x = _strided(rng, (m, n), np.float32, False, pad) * 5
    ref = K.softmax_reference(x)
    np.testing.assert_allclose(K.softmax_naive(x, BLOCK_SIZE=block), ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(K.softmax_fused(x), ref, rtol=1e-5, atol=1e-7)


@SETTINGS
@given(m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(1, 70),
       bm=pow2([16, 32, 64]), bn=pow2([16, 32, 64]), bk=pow2([16, 32]),
       group=st.integers(1, 4), order=st.sampled_from(["grouped", "row_major"]),
       ta=st.booleans(), tb=st.booleans(), pad=st.integers(0, 3),
       dtype=st.sampled_from([np.float16, np.float32]), seed=st.integers(0, 99))
def test_matmul_property(m, n, k, bm, bn, bk, group, order, ta, tb, pad, dtype, seed):
    rng = np.random.default_rng(seed)
    a = _strided(rng, (m, k), dtype, ta, pad)
    b = _strided(rng, (k, n), dtype, tb, pad)
    c = K.matmul(a, b, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group, PID_ORDER=order,
                 out_dtype=np.float32)
    np.testing.assert_allclose(c, K.matmul_reference(a, b, np.float32), rtol=1e-4, atol=1e-4)


@SETTINGS
@given(m=st.integers(1, 60), n=st.integers(1, 60), k=st.integers(1, 40),
       bm=pow2([16, 32]), bn=pow2([16, 32]), group=st.integers(1, 3),
       sms=st.integers(1, 6), seed=st.integers(0, 99))
def test_persistent_matmul_property(m, n, k, bm, bn, group, sms, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    ref = K.matmul_reference(a, b, np.float32)
    c = K.matmul_persistent(a, b, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=16, GROUP_M=group,
                            NUM_SMS=sms, out_dtype=np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


@SETTINGS
@given(m=st.integers(1, 60), n8=st.integers(1, 8), k8=st.integers(1, 6),
       bm=pow2([16, 32]), bn=pow2([16, 32]), sms=st.integers(1, 6), seed=st.integers(0, 99))
def test_descriptor_matmul_property(m, n8, k8, bm, bn, sms, seed):
    rng = np.random.default_rng(seed)
    n, k = 8 * n8, 8 * k8  # fp16 rows of a multiple of 16 bytes
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = K.matmul_descriptor_persistent(a, b, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=16, GROUP_M=2,
                                       NUM_SMS=sms, out_dtype=np.float32)
    np.testing.assert_allclose(c, K.matmul_reference(a, b, np.float32), rtol=1e-4, atol=1e-4)


@SETTINGS
@given(n=st.integers(1, 100), d=pow2([16, 32]), bm=pow2([16, 32, 64]),
       bn_frac=st.sampled_from([1, 2]), causal=st.booleans(), batch=st.integers(1, 2),
       seed=st.integers(0, 99))
def test_flash_attention_property(n, d, bm, bn_frac, causal, batch, seed):
    rng = np.random.default_rng(seed)
    bn = max(16, bm // bn_frac)
    q, k, v = (rng.standard_normal((batch, n, d)).astype(np.float32) for _ in range(3))
    k = np.swapaxes(np.ascontiguousarray(np.swapaxes(k, 1, 2)), 1, 2)  # strided K
    o, lse = K.flash_attention(q, k, v, causal=causal, BLOCK_M=bm, BLOCK_N=bn)
    ref_o, ref_lse = K.attention_reference(q, k, v, causal=causal)
    np.testing.assert_allclose(o, ref_o, atol=2e-6)
    np.testing.assert_allclose(lse, ref_lse, atol=1e-5)


@SETTINGS
@given(m=st.integers(1, 8), n=st.integers(1, 400), pad=st.integers(0, 4),
       block=pow2([16, 64, 256]), seed=st.integers(0, 99))
def test_layer_norm_property(m, n, pad, block, seed):
    rng = np.random.default_rng(seed)
    x = _strided(rng, (m, n), np.float32, False, pad)
    w, b = rng.standard_normal((2, n)).astype(np.float32)
    y, mean, rstd = K.layer_norm(x, w, b, BLOCK_SIZE=block)
    ry, rm, rr = K.layer_norm_reference(x, w, b)
    np.testing.assert_allclose(y, ry, rtol=1e-4, atol=5e-4)
    np.testing.assert_allclose(mean, rm, rtol=1e-4, atol=1e-5)


@SETTINGS
@given(m=st.integers(1, 8), n=st.integers(1, 500), pad=st.integers(0, 4),
       seed=st.integers(0, 99))
def test_l2_norm_property(m, n, pad, seed):
    rng = np.random.default_rng(seed)
    x = _strided(rng, (m, n), np.float32, False, pad)
    np.testing.assert_allclose(K.l2_norm(x), K.l2_norm_reference(x), rtol=1e-5)
