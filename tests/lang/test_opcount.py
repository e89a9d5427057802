"""Per-program op counts of a launch (``LaunchRecord.dot_flops``, ``alu_ops``, ...).

Small hand-written kernels check each counting rule of
:mod:`autotile.lang._opcount` with exact values; the library kernels check
whole-kernel formulas, and that a batched launch (``batch_programs=True``)
records exactly the counts of the sequential one.
"""

import numpy as np
import pytest

import autotile.kernels as K
import autotile.lang as tl
from autotile.lang import jit

OPS = ("dot_flops", "dot_operand_bytes", "alu_ops", "sfu_ops", "max_tile_elems",
       "scratch_bytes", "reductions")


def ops(record, row=None):
    """The seven counters of one row (or of every row when all rows agree)."""
    out = {}
    for name in OPS:
        col = getattr(record, name)
        assert col.dtype == np.int64 and col.shape == (record.n_programs,)
        if row is None:
            assert (col == col[0]).all(), name
            out[name] = int(col[0])
        else:
            out[name] = int(col[row])
    return out


# -- tl.dot ----------------------------------------------------------------------------
@jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m = tl.arange(0, M)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + (m[:, None] * K + k[None, :]))
    b = tl.load(b_ptr + (k[:, None] * N + n[None, :]))
    tl.store(c_ptr + (m[:, None] * N + n[None, :]), tl.dot(a, b))


def test_dot_flops_operand_bytes_and_index_arithmetic():
    a = np.ones((16, 32), np.float16)
    b = np.ones((32, 16), np.float16)
    c = np.zeros((16, 16), np.float32)
    dot_kernel[(3,)](a, b, c, M=16, N=16, K=32)
    r = dot_kernel.last_record
    np.testing.assert_array_equal(c, 32.0)
    assert ops(r) == {
        "dot_flops": 2 * 16 * 16 * 32,
        "dot_operand_bytes": 16 * 32 * 2 + 32 * 16 * 2,
        # m*K (16) + ... (16x32); k*N (32) + ... (32x16); m*N (16) + ... (16x16)
        "alu_ops": 16 + 512 + 32 + 512 + 16 + 256,
        "sfu_ops": 0,
        "max_tile_elems": 512,
        "scratch_bytes": 0,
        "reductions": 0,
    }
    assert r.summary()["ops"]["dot_flops"] == 3 * 2 * 16 * 16 * 32


@jit
def dot_loop_kernel(out_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                    K: tl.constexpr, STEPS: tl.constexpr):
    acc = tl.zeros((B, M, N), dtype=tl.float32)
    for _ in range(STEPS):
        a = tl.full((B, M, K), 1.0, tl.float32)
        b = tl.full((B, K, N), 1.0, tl.float32)
        acc = tl.dot(a, b, acc)
    tl.store(out_ptr + tl.arange(0, 1), tl.sum(tl.reshape(acc, B * M * N), axis=0))


def test_batched_3d_dot_sums_over_calls_and_takes_the_largest_stage():
    out = np.zeros(1, np.float32)
    dot_loop_kernel[(2,)](out, B=2, M=16, N=32, K=64, STEPS=3)
    assert out[0] == 3 * 64 * 2 * 16 * 32
    o = ops(dot_loop_kernel.last_record)
    assert o["dot_flops"] == 3 * 2 * (2 * 16 * 32 * 64)
    assert o["dot_operand_bytes"] == 2 * (16 * 64 + 64 * 32) * 4
    # the reshape (2, 16, 32) -> (1024,) changes the layout; the sum reads 1024 lanes
    assert o["scratch_bytes"] == 2 * 16 * 32 * 4
    assert o["alu_ops"] == 2 * 16 * 32
    assert o["max_tile_elems"] == 2 * 64 * 32


# -- element-wise math -----------------------------------------------------------------
@jit
def unary_kernel(x_ptr, y_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, FN(x))


@pytest.mark.parametrize("fn,alu,sfu", [
    (tl.exp, 1, 1), (tl.exp2, 0, 1), (tl.log, 1, 1), (tl.log2, 0, 1), (tl.sqrt, 0, 1),
    (tl.sqrt_rn, 0, 1), (tl.rsqrt, 0, 1), (tl.sin, 0, 1), (tl.cos, 0, 1), (tl.erf, 0, 1),
    (tl.abs, 1, 0), (tl.floor, 1, 0), (tl.ceil, 1, 0),
    # 1 / (1 + exp(-x)): negation, exp (mul + ex2), add, division (rcp + mul)
    (tl.sigmoid, 4, 2),
    (lambda x: x / 3.0, 1, 1), (lambda x: tl.fdiv(x, x), 1, 1), (lambda x: tl.div_rn(x, x), 1, 1),
    (lambda x: x * 2.0 + 1.0, 2, 0), (lambda x: tl.fma(x, x, x), 1, 0),
    (lambda x: tl.where(x > 0, x, 0.0), 2, 0), (lambda x: tl.maximum(x, 0.5), 1, 0),
    (lambda x: tl.clamp(x, 0.1, 0.9), 2, 0), (lambda x: -x, 1, 0),
    (lambda x: x.to(tl.float16), 1, 0), (lambda x: x.to(tl.float32), 0, 0),
    (lambda x: x.to(tl.int32, bitcast=True), 0, 0),
])
def test_elementwise_alu_and_sfu_lanes(fn, alu, sfu):
    x = np.linspace(0.1, 0.9, 64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    unary_kernel[(2,)](x, y, FN=fn, BLOCK=64)
    o = ops(unary_kernel.last_record)
    assert (o["alu_ops"], o["sfu_ops"]) == (64 * alu, 64 * sfu)
    assert o["max_tile_elems"] == 64
    assert o["dot_flops"] == o["dot_operand_bytes"] == o["scratch_bytes"] == 0


@jit
def exp_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


def test_exp_kernel_counts_block_sfu_lanes_and_scalar_ops_count_one():
    x = np.zeros(4 * 128, np.float32)
    y = np.zeros_like(x)
    exp_kernel[(4,)](x, y, BLOCK=128)
    np.testing.assert_array_equal(y, 1.0)
    r = exp_kernel.last_record
    # pid * BLOCK is a 0-d op (1 lane), + arange 128 lanes, exp = FMUL + MUFU.EX2
    assert ops(r)["sfu_ops"] == 128
    assert ops(r)["alu_ops"] == 1 + 128 + 128
    assert r.summary()["ops"] == {"dot_flops": 0, "alu_ops": 4 * 257, "sfu_ops": 4 * 128,
                                  "dot_operand_bytes": 0, "max_tile_elems": 128,
                                  "scratch_bytes": 0, "reductions": 0}


@jit
def copy_kernel(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = src + offs
    p = p + 1
    p = p - 1
    tl.store(dst + offs, tl.load(p))


def test_pointer_arithmetic_loads_and_stores_count_no_alu():
    x = np.arange(32, dtype=np.float32)
    y = np.zeros_like(x)
    copy_kernel[(1,)](x, y, BLOCK=32)
    np.testing.assert_array_equal(y, x)
    assert ops(copy_kernel.last_record) == {"dot_flops": 0, "dot_operand_bytes": 0,
                                            "alu_ops": 0, "sfu_ops": 0, "max_tile_elems": 32,
                                            "scratch_bytes": 0, "reductions": 0}


@jit
def scalar_kernel(out_ptr, n):
    s = n * 2 + 1
    tl.store(out_ptr, s)


def test_scalar_ops_count_one_lane_each():
    out = np.zeros(1, np.int32)
    scalar_kernel[(1,)](out, 5)
    assert out[0] == 11
    o = ops(scalar_kernel.last_record)
    assert o["alu_ops"] == 2 and o["max_tile_elems"] == 1


# -- reductions, scans and layout changes ----------------------------------------------
@jit
def tile_kernel(x_ptr, FN: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]  # 8 + 128 ALU lanes
    FN(tl.load(x_ptr + offs))  # computed (and counted) even though nothing stores it


def _combine_add(a, b):
    return a + b


@pytest.mark.parametrize("fn,alu,scratch,max_tile,reductions", [
    (lambda x: tl.sum(x, axis=1), 128, 128 * 4, 128, 1),
    (lambda x: tl.max(x, axis=0), 128, 128 * 4, 128, 1),
    (lambda x: tl.min(x), 128, 128 * 4, 128, 1),
    (lambda x: tl.argmax(x, axis=1), 128, 128 * 4, 128, 1),
    (lambda x: tl.xor_sum(x.to(tl.int32, bitcast=True), axis=1), 128, 128 * 4, 128, 1),
    # the value and the index reductions
    (lambda x: tl.max(x, axis=1, return_indices=True), 256, 128 * 4, 128, 2),
    (lambda x: tl.cumsum(x, axis=1), 128, 128 * 4, 128, 1),
    (lambda x: tl.cumsum(x.to(tl.float16), axis=1), 256, 128 * 2, 128, 1),
    # one combine per input element; the ops inside combine_fn are not counted on top
    (lambda x: tl.reduce(x, 1, _combine_add), 128, 128 * 4, 128, 1),
    (lambda x: tl.associative_scan(x, 0, _combine_add), 128, 128 * 4, 128, 1),
    (lambda x: tl.trans(x), 0, 128 * 4, 128, 0),
    (lambda x: x.T, 0, 128 * 4, 128, 0),
    (lambda x: tl.permute(x, 1, 0), 0, 128 * 4, 128, 0),
    (lambda x: tl.permute(x, 0, 1), 0, 0, 128, 0),
    (lambda x: tl.reshape(x, (16, 8)), 0, 128 * 4, 128, 0),
    (lambda x: tl.ravel(x), 0, 128 * 4, 128, 0),
    (lambda x: tl.reshape(x, (8, 1, 16)), 0, 0, 128, 0),
    (lambda x: tl.reshape(x[None, :, :], (8, 16)), 0, 0, 128, 0),
    (lambda x: tl.expand_dims(x, 0), 0, 0, 128, 0),
    (lambda x: tl.broadcast_to(x[None, :, :], (2, 8, 16)), 0, 0, 256, 0),
    (lambda x: tl.join(x, x), 0, 0, 256, 0),
])
def test_reductions_scans_and_layout_changes(fn, alu, scratch, max_tile, reductions):
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    tile_kernel[(1,)](x, FN=fn, M=8, N=16)
    o = ops(tile_kernel.last_record)
    assert o["alu_ops"] == 8 + 128 + alu
    assert o["scratch_bytes"] == scratch
    assert o["max_tile_elems"] == max_tile
    assert o["reductions"] == reductions
    assert o["sfu_ops"] == o["dot_flops"] == o["dot_operand_bytes"] == 0


def test_softmax_builtin_counts_its_composition():
    x = np.zeros((8, 16), np.float32)
    tile_kernel[(1,)](x, FN=tl.softmax, M=8, N=16)
    o = ops(tile_kernel.last_record)
    # max, sub, exp (FMUL + EX2), sum, div (RCP + FMUL): 5 ALU and 2 SFU lanes per element
    assert (o["alu_ops"], o["sfu_ops"]) == (8 + 128 + 5 * 128, 2 * 128)
    assert o["scratch_bytes"] == 128 * 4
    assert o["reductions"] == 2  # max and sum


# -- per-program rows ------------------------------------------------------------------
@jit
def triangle_kernel(out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(pid):
        acc = tl.exp(acc) * 0.5
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)


@pytest.mark.parametrize("batch", [False, True])
def test_rows_follow_each_program(batch):
    out = np.zeros(5 * 16, np.float32)
    triangle_kernel[(5,)](out, BLOCK=16, batch_programs=batch)
    r = triangle_kernel.last_record
    pid = np.arange(5)
    np.testing.assert_array_equal(r.sfu_ops, 16 * pid)
    # per trip: exp (FMUL + EX2) and * 0.5; then pid * BLOCK (out_ptr + ... + arange are
    # pointer additions)
    np.testing.assert_array_equal(r.alu_ops, 2 * 16 * pid + 1)
    np.testing.assert_array_equal(r.max_tile_elems, 16)
    assert r.summary()["ops"]["sfu_ops"] == 16 * 10


# -- library kernels: whole-kernel formulas, batched == sequential ------------------------
def _vector_add(batch, n=1000, block=128):
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    K.add_kernel[(tl.cdiv(n, block),)](x, x, out, n, BLOCK_SIZE=block, batch_programs=batch)
    np.testing.assert_array_equal(out, 2.0)
    return K.add_kernel.last_record


def _softmax(batch, m=37, n=50, block=64):
    x = np.random.default_rng(0).standard_normal((m, n)).astype(np.float32)
    out = np.zeros_like(x)
    K.softmax_kernel[(m,)](out, x, n, n, n, BLOCK_SIZE=block, batch_programs=batch)
    np.testing.assert_allclose(out, K.softmax_reference(x), rtol=1e-5)
    return K.softmax_kernel.last_record


def _layer_norm(batch, m=9, n=300, block=128):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    mean = np.zeros(m, np.float32)
    rstd = np.zeros(m, np.float32)
    K.layer_norm_fwd_kernel[(m,)](x, y, w, b, mean, rstd, n, n, 1e-5, BLOCK_SIZE=block,
                                  batch_programs=batch)
    np.testing.assert_allclose(y, K.layer_norm_reference(x, w, b, eps=1e-5)[0], atol=1e-4)
    return K.layer_norm_fwd_kernel.last_record


def _matmul(batch, m=100, n=70, k=50, bm=32, bn=32, bk=32, dtype=np.float16):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = np.zeros((m, n), np.float32)
    K.matmul_kernel[(tl.cdiv(m, bm) * tl.cdiv(n, bn),)](
        a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=2,
        PID_ORDER="grouped", batch_programs=batch)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3,
                               atol=1e-3)
    return K.matmul_kernel.last_record


def _flash(batch, n=80, d=16, heads=2, bm=32, bn=16):
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((heads, n, d)).astype(np.float32) for _ in range(3))
    o = np.zeros_like(q)
    lse = np.zeros((heads, n), np.float32)

    def es(x):
        return [s // x.itemsize for s in x.strides]

    K.attn_fwd_kernel[(tl.cdiv(n, bm), heads)](
        q, k, v, o, lse, 0.25, n, *es(q), *es(k), *es(v), *es(o), n, HEAD_DIM=d,
        BLOCK_M=bm, BLOCK_N=bn, CAUSAL=False, batch_programs=batch)
    np.testing.assert_allclose(o, K.attention_reference(q, k, v, sm_scale=0.25)[0], atol=1e-4)
    return K.attn_fwd_kernel.last_record


def test_vector_add_counts():
    # pid * BLOCK (1 lane), + arange, offsets < n, x + y
    assert ops(_vector_add(False)) == {"dot_flops": 0, "dot_operand_bytes": 0,
                                       "alu_ops": 1 + 3 * 128, "sfu_ops": 0,
                                       "max_tile_elems": 128, "scratch_bytes": 0,
                                       "reductions": 0}


def test_fused_softmax_counts():
    b = 64
    # two row * stride products; mask, max, sub, exp FMUL, sum, div FMUL; exp and div on SFU
    assert ops(_softmax(False, block=b)) == {"dot_flops": 0, "dot_operand_bytes": 0,
                                             "alu_ops": 2 + 6 * b, "sfu_ops": 2 * b,
                                             "max_tile_elems": b, "scratch_bytes": 4 * b,
                                             "reductions": 2}


def test_layer_norm_counts():
    n, b = 300, 128
    steps = -(-n // b)
    # per step: pass 1 cols, mask, += (3); pass 2 cols, mask, mask, sub, where, square,
    # += (7); pass 3 cols, mask, sub, * rstd, * w, + b (6).  Outside: 2 row * stride,
    # 2 sums of BLOCK lanes, 2 scalar divisions, var + eps, 1 / sqrt.
    assert ops(_layer_norm(False, n=n, block=b)) == {
        "dot_flops": 0, "dot_operand_bytes": 0,
        "alu_ops": 16 * b * steps + 2 * b + 6, "sfu_ops": 4,
        "max_tile_elems": b, "scratch_bytes": 4 * b, "reductions": 2}


def test_matmul_dot_flops_are_the_padded_product():
    m, n, k, bm, bn, bk = 100, 70, 50, 32, 32, 32
    r = _matmul(False, m, n, k, bm, bn, bk)
    k_pad = -(-k // bk) * bk
    assert r.n_programs == 4 * 3
    assert ops(r)["dot_flops"] == 2 * bm * bn * k_pad
    assert r.summary()["ops"]["dot_flops"] == 2 * (4 * bm) * (3 * bn) * k_pad
    assert ops(r)["dot_operand_bytes"] == (bm * bk + bk * bn) * 2
    assert ops(r)["sfu_ops"] == ops(r)["scratch_bytes"] == 0
    assert ops(r)["max_tile_elems"] == bm * bn


def test_flash_attention_counts():
    n, d, bm, bn = 80, 16, 32, 16
    r = _flash(False, n, d, 2, bm, bn)
    steps = -(-n // bn)
    o = ops(r)
    assert o["dot_flops"] == steps * 2 * (2 * bm * bn * d)
    assert o["dot_operand_bytes"] == (bm * d + d * bn) * 4
    # per step: exp(m_i - m_new) and exp(qk - m_new); after: acc / l_i, log(l_i)
    assert o["sfu_ops"] == steps * (bm + bm * bn) + bm * d + bm
    assert o["scratch_bytes"] == bm * bn * 4
    assert o["max_tile_elems"] == bm * max(bn, d)


@pytest.mark.parametrize("launch", [_vector_add, _softmax, _layer_norm, _matmul, _flash],
                         ids=["vector_add", "softmax", "layer_norm", "matmul", "flash"])
def test_batched_launch_counts_like_the_sequential_one(launch):
    seq, bat = launch(False), launch(True)
    assert seq.n_programs_batched == 0 and bat.n_programs_batched == bat.n_programs
    for name in OPS:
        np.testing.assert_array_equal(getattr(bat, name), getattr(seq, name), err_msg=name)
    assert bat.summary()["ops"] == seq.summary()["ops"]
    assert seq.summary()["ops"]["alu_ops"] > 0


def _combine_pair(a, ia, b, ib):
    return a + b, tl.maximum(ia, ib)


@jit
def pair_reduce_kernel(x_ptr, y_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    s, m = tl.reduce((x, tl.arange(0, N)), 0, _combine_pair)
    tl.store(y_ptr, s + m)


def test_a_multi_operand_reduce_is_one_reduction_step_batched_or_not():
    x = np.ones(16, np.float32)
    y = np.zeros(1, np.float32)
    with tl.recording() as rec:
        pair_reduce_kernel[(3,)](x, y, N=16)
        pair_reduce_kernel[(3,)](x, y, N=16, batch_programs=True)
    seq, bat = rec.records
    np.testing.assert_array_equal(seq.reductions, [1, 1, 1])
    np.testing.assert_array_equal(bat.reductions, [1, 1, 1])
    assert y[0] == 16 + 15
