"""Batched launches (``batch_programs=``) equal the one-program-at-a-time interpreter.

Every comparison runs a launch twice on fresh copies of the same inputs --
sequentially and batched -- and asserts bitwise-equal memory, equal
LaunchRecords (all fields but ``n_programs_batched``) and equal AccessTraces
(every column, dtype and order).  ``n_programs_batched`` then says whether the
batched path really ran (library kernels) or fell back (pid-dependent control
flow, shared memory, unsupported builtins).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autotile.kernels as K
import autotile.lang as tl
from autotile.errors import LangError, OutOfBoundsError
from autotile.lang import jit
from autotile.lang._batch import MIN_BATCH
from tests.lang._kernels import add_kernel_unmasked

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
GRANULARITIES = ("element", "sector", "line", "tile")
TRACE_COLS = ("buffer", "offset_bytes", "size_bytes", "is_write", "program", "op")
RECORD_FIELDS = ("kernel_name", "grid", "buffer_names", "itemsize_bytes", "num_warps",
                 "num_stages", "meta")
RECORD_ARRAYS = ("program_ids", "elems_read", "elems_written", "masked_lanes", "total_lanes",
                 "dot_flops", "dot_operand_bytes", "alu_ops", "sfu_ops", "max_tile_elems",
                 "scratch_bytes")


def _same_array(x, y):
    assert x.dtype == y.dtype and x.shape == y.shape
    assert np.array_equal(np.ascontiguousarray(x).view(np.uint8),
                          np.ascontiguousarray(y).view(np.uint8))


def assert_same_records(seq, bat):
    assert len(seq) == len(bat)
    for r1, r2 in zip(seq, bat):
        for f in RECORD_FIELDS:
            assert getattr(r1, f) == getattr(r2, f), f
        for f in RECORD_ARRAYS:
            _same_array(getattr(r1, f), getattr(r2, f))
        assert r1.n_programs_batched == 0
        assert (r1.trace is None) == (r2.trace is None)
        if r1.trace is not None:
            t1, t2 = r1.trace, r2.trace
            assert (t1.granularity, t1.buffer_names, t1.buffer_base_bytes) == \
                (t2.granularity, t2.buffer_names, t2.buffer_base_bytes)
            for c in TRACE_COLS:
                _same_array(getattr(t1, c), getattr(t2, c))


def both(launch, inputs, gran="element", batch=True):
    """Run ``launch(arrays, batch_programs)`` sequentially and batched; compare; return records."""
    runs = []
    for b in (False, batch):
        arrays = [a.copy() for a in inputs]
        with tl.recording(trace=gran) as rec:
            launch(arrays, b)
        runs.append((arrays, rec.records))
    (a1, r1), (a2, r2) = runs
    for x, y in zip(a1, a2):
        _same_array(x, y)
    assert_same_records(r1, r2)
    return r2


def n_batched(records):
    return sum(r.n_programs_batched for r in records)


def n_programs(records):
    return sum(r.n_programs for r in records)


# -- the kernel library -------------------------------------------------------------------
@SETTINGS
@given(n=st.integers(1, 3000), block=st.sampled_from([16, 64, 256]),
       batch=st.sampled_from([True, 4, 5, 64]), gran=st.sampled_from(GRANULARITIES))
def test_vector_add(n, block, batch, gran):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)

    def launch(a, b):
        K.add_kernel[(tl.cdiv(n, block),)](a[0], a[1], a[2], n, BLOCK_SIZE=block,
                                           batch_programs=b)

    recs = both(launch, [x, y, np.zeros(n, np.float32)], gran, batch)
    n_prog = tl.cdiv(n, block)
    size = n_prog if batch is True else batch
    tail = n_prog % size
    expect = n_prog - (tail if tail < MIN_BATCH else 0) if n_prog >= MIN_BATCH else 0
    assert n_batched(recs) == expect


@SETTINGS
@given(m=st.integers(1, 40), n=st.integers(1, 200), pad=st.integers(0, 7),
       gran=st.sampled_from(GRANULARITIES))
def test_softmax_fused_masked_rows(m, n, pad, gran):
    rng = np.random.default_rng(m * n)
    x = rng.standard_normal((m, n + pad)).astype(np.float32)[:, :n]
    block = tl.next_power_of_2(n)

    def launch(a, b):
        K.softmax_kernel[(m,)](a[1], a[0][:, :n], n + pad, n, n, BLOCK_SIZE=block,
                               batch_programs=b)

    recs = both(launch, [np.ascontiguousarray(np.pad(x, ((0, 0), (0, pad)))),
                         np.zeros((m, n), np.float32)], gran)
    assert n_batched(recs) == (m if m >= MIN_BATCH else 0)


@SETTINGS
@given(m=st.integers(4, 30), n=st.integers(1, 300), block=st.sampled_from([16, 32, 128]))
def test_softmax_naive_five_kernels(m, n, block):
    rng = np.random.default_rng(m + n)
    x = (rng.standard_normal((m, n)) * 4).astype(np.float32)

    def launch(a, b):
        x_, x_max, z, num, den, out = a
        g = (m,)
        K.row_max_kernel[g](x_, x_max, n, n, BLOCK_SIZE=block, batch_programs=b)
        K.sub_row_kernel[g](x_, x_max, z, n, n, n, BLOCK_SIZE=block, batch_programs=b)
        K.exp_kernel[g](z, num, n, n, n, BLOCK_SIZE=block, batch_programs=b)
        K.row_sum_kernel[g](num, den, n, n, BLOCK_SIZE=block, batch_programs=b)
        K.div_row_kernel[g](num, den, out, n, n, n, BLOCK_SIZE=block, batch_programs=b)

    bufs = [x, np.zeros(m, np.float32), np.zeros((m, n), np.float32),
            np.zeros((m, n), np.float32), np.zeros(m, np.float32), np.zeros((m, n), np.float32)]
    recs = both(launch, bufs, "sector")
    assert n_batched(recs) == n_programs(recs) == 5 * m


@SETTINGS
@given(M=st.integers(1, 90), N=st.integers(1, 90), K_=st.integers(1, 70),
       bm=st.sampled_from([16, 32]), bn=st.sampled_from([16, 32]), bk=st.sampled_from([16, 32]),
       group=st.integers(1, 9), order=st.sampled_from(["grouped", "row_major"]),
       dtype=st.sampled_from([np.float16, np.float32]), trans_a=st.booleans(),
       gran=st.sampled_from(GRANULARITIES))
def test_matmul_group_m_edge_tiles(M, N, K_, bm, bn, bk, group, order, dtype, trans_a, gran):
    rng = np.random.default_rng(M * 10_000 + N * 100 + K_)
    a = rng.standard_normal((K_, M) if trans_a else (M, K_)).astype(dtype)
    b = rng.standard_normal((K_, N)).astype(dtype)

    def launch(arr, bp):
        a_ = arr[0].T if trans_a else arr[0]
        sa = [s // a_.itemsize for s in a_.strides]
        K.matmul_kernel[(tl.cdiv(M, bm) * tl.cdiv(N, bn),)](
            a_, arr[1], arr[2], M, N, K_, *sa, N, 1, N, 1, BLOCK_M=bm, BLOCK_N=bn,
            BLOCK_K=bk, GROUP_M=group, PID_ORDER=order, batch_programs=bp)

    recs = both(launch, [a, b, np.zeros((M, N), np.float16)], gran)
    if tl.cdiv(M, bm) * tl.cdiv(N, bn) >= 4 * MIN_BATCH and order == "row_major":
        assert n_batched(recs) == n_programs(recs)


def test_matmul_result_is_the_product():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((70, 50)).astype(np.float16)
    b = rng.standard_normal((50, 90)).astype(np.float16)
    out = np.zeros((70, 90), np.float16)
    K.matmul_kernel[(tl.cdiv(70, 32) * tl.cdiv(90, 32),)](
        a, b, out, 70, 90, 50, 50, 1, 90, 1, 90, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16,
        GROUP_M=2, PID_ORDER="grouped", batch_programs=True)
    assert K.matmul_kernel.last_record.n_programs_batched > 0
    np.testing.assert_allclose(out.astype(np.float32), K.matmul_reference(a, b, np.float32),
                               rtol=2e-3, atol=2e-3)


def _attention(causal, n, d, heads, bm, bn, dtype, gran, batch=True):
    rng = np.random.default_rng(n * d + heads)
    q, k, v = (rng.standard_normal((heads, n, d)).astype(dtype) for _ in range(3))

    def launch(arr, b):
        q_, k_, v_, o, lse = arr

        def es(x):
            return [s // x.itemsize for s in x.strides]

        K.attn_fwd_kernel[(tl.cdiv(n, bm), heads)](
            q_, k_, v_, o, lse, 1.0 / np.sqrt(d), n, *es(q_), *es(k_), *es(v_), *es(o),
            lse.strides[0] // 4, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
            batch_programs=b)

    return both(launch, [q, k, v, np.zeros((heads, n, d), dtype),
                         np.zeros((heads, n), np.float32)], gran, batch)


@SETTINGS
@given(n=st.integers(1, 100), heads=st.integers(1, 3), bm=st.sampled_from([16, 32]),
       dtype=st.sampled_from([np.float16, np.float32]), gran=st.sampled_from(GRANULARITIES))
def test_flash_attention_batches(n, heads, bm, dtype, gran):
    recs = _attention(False, n, 16, heads, bm, 16, dtype, gran)
    if n_programs(recs) >= MIN_BATCH:
        assert n_batched(recs) == n_programs(recs)


def test_flash_attention_causal_falls_back():
    # the K loop ends at the program's diagonal block: a different trip count per program
    recs = _attention(True, 80, 32, 2, 16, 16, np.float32, "tile")
    assert n_batched(recs) == 0 and n_programs(recs) == 10


def test_flash_attention_causal_single_query_block_batches_heads():
    recs = _attention(True, 16, 16, 6, 16, 16, np.float32, "tile")
    assert n_batched(recs) == 6


@pytest.mark.parametrize("m,n,block", [(9, 300, 128), (5, 64, 64), (16, 1000, 256)])
def test_layer_norm(m, n, block):
    rng = np.random.default_rng(m)
    x = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)

    def launch(a, b):
        K.layer_norm_fwd_kernel[(m,)](a[0], a[1], a[2], a[3], a[4], a[5], n, n, 1e-5,
                                      BLOCK_SIZE=block, batch_programs=b)

    recs = both(launch, [x, np.zeros_like(x), w, bias, np.zeros(m, np.float32),
                         np.zeros(m, np.float32)], "line")
    assert n_batched(recs) == m


def test_l2_norm():
    x = np.random.default_rng(3).standard_normal((33, 70)).astype(np.float32)

    def launch(a, b):
        K.l2_norm_kernel[(33,)](a[0], a[1], 70, 70, BLOCK=128, batch_programs=b)

    recs = both(launch, [x, np.zeros(33, np.float32)], "element")
    assert n_batched(recs) == 33


def test_bfloat16_buffers():
    rng = np.random.default_rng(5)
    x = tl.bf16_array(rng.standard_normal((21, 50)).astype(np.float32))

    def launch(a, b):
        K.l2_norm_kernel[(21,)](a[0], a[1], 50, 50, BLOCK=64, batch_programs=b)
        K.add_kernel[(tl.cdiv(21 * 50, 64),)](a[0], a[0], a[2], 21 * 50, BLOCK_SIZE=64,
                                              batch_programs=b)

    out = tl.bf16_array(np.zeros(21, np.float32))
    recs = both(launch, [x, out, tl.bf16_array(np.zeros((21, 50), np.float32))], "sector")
    assert n_batched(recs) == n_programs(recs)


@pytest.mark.parametrize("kernel_name", ["pointer", "descriptor"])
@pytest.mark.parametrize("num_sms", [3, 7])
def test_persistent_matmul_falls_back(kernel_name, num_sms):
    rng = np.random.default_rng(num_sms)
    M, N, K_ = 96, 80, 48
    a = rng.standard_normal((M, K_)).astype(np.float16)
    b = rng.standard_normal((K_, N)).astype(np.float16)
    meta = dict(BLOCK_M=32, BLOCK_N=16, BLOCK_K=16, GROUP_M=2, NUM_SMS=num_sms)

    def launch(arr, bp):
        if kernel_name == "pointer":
            K.matmul_persistent_kernel[(num_sms,)](arr[0], arr[1], arr[2], M, N, K_, K_, 1, N,
                                                   1, N, 1, **meta, batch_programs=bp)
        else:
            K.matmul_descriptor_persistent_kernel[(num_sms,)](
                arr[0], arr[1], arr[2], M, N, K_, K_, N, N, **meta, batch_programs=bp)

    recs = both(launch, [a, b, np.zeros((M, N), np.float16)], "tile")
    assert n_batched(recs) == 0


# -- fallbacks -----------------------------------------------------------------------------
@jit
def _branchy(out_ptr, SPLIT: tl.constexpr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(out_ptr + 2 * pid, pid * 10)  # a store before the decision (undone, replayed)
    if MODE == 0:
        if pid < SPLIT:
            tl.store(out_ptr + 2 * pid + 1, 1)
        else:
            tl.store(out_ptr + 2 * pid + 1, -1)
    elif MODE == 1:
        if pid % 2 == 0:
            tl.store(out_ptr + 2 * pid + 1, 7)
    elif MODE == 2:
        acc = 0
        for i in range(pid % 3):
            acc += i + 1
        tl.store(out_ptr + 2 * pid + 1, acc)
    else:
        j = pid * 0 + 1
        while j < pid:
            j = j * 2
        tl.store(out_ptr + 2 * pid + 1, j)


@pytest.mark.parametrize("mode,split,expect", [
    (0, 5, 20),    # two runs: 0..4 and 5..19, both batched
    (0, 2, 18),    # 0..1 too short: one program at a time; 2..19 batched
    (1, 0, 0),     # alternating decisions: every run is one program
    (2, 0, 0),     # loop trip count from the pid
    (3, 0, 12),    # while on a pid-derived value: runs split again at each iteration
])
def test_pid_dependent_control_flow_falls_back(mode, split, expect):
    def launch(a, b):
        _branchy[(20,)](a[0], SPLIT=split, MODE=mode, batch_programs=b)

    recs = both(launch, [np.zeros(40, np.int32)], "element")
    assert n_batched(recs) == expect


@jit
def _uniform_decisions(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    one = pid * 0 + 1             # same in every program: int(), bool(), range() are fine
    for k in range(int(one) + 1):
        if one > 0:
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
            tl.store(out_ptr + offs, x * (k + 1) + float(one), mask=offs < n)


def test_uniform_decisions_stay_batched():
    x = np.arange(50, dtype=np.float32)

    def launch(a, b):
        _uniform_decisions[(7,)](a[0], a[1], 50, BLOCK=8, batch_programs=b)

    recs = both(launch, [x, np.zeros(50, np.float32)], "tile")
    assert n_batched(recs) == 7


@jit
def _chain(out_ptr):
    pid = tl.program_id(0)
    prev = tl.load(out_ptr + pid - 1, mask=pid > 0, other=0)
    tl.store(out_ptr + pid, prev + 1)


@jit
def _two_stores(out_ptr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid)
    tl.store(out_ptr + pid + 1, -pid)


@jit
def _copy(src_ptr, dst_ptr):
    pid = tl.program_id(0)
    tl.store(dst_ptr + pid, tl.load(src_ptr + pid))


@jit
def _in_place(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x * 2 + 1)
    y = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, y + 1)


def test_programs_sharing_memory_fall_back():
    def chain(a, b):
        _chain[(12,)](a[0], batch_programs=b)

    assert n_batched(both(chain, [np.zeros(12, np.int32)])) == 0

    def two_stores(a, b):
        _two_stores[(12,)](a[0], batch_programs=b)

    assert n_batched(both(two_stores, [np.zeros(13, np.int32)])) == 0

    def shifted_alias(a, b):  # dst = src shifted by one element: program p reads p's write
        _copy[(12,)](a[0][:-1], a[0][1:], batch_programs=b)

    assert n_batched(both(shifted_alias, [np.arange(13, dtype=np.int32)])) == 0


def test_in_place_updates_of_one_program_stay_batched():
    def launch(a, b):
        _in_place[(9,)](a[0], BLOCK=4, batch_programs=b)

    recs = both(launch, [np.arange(36, dtype=np.float32)], "element")
    assert n_batched(recs) == 9


@jit
def _atomic_count(counter_ptr, out_ptr):
    pid = tl.program_id(0)
    old = tl.atomic_add(counter_ptr, 1)
    tl.store(out_ptr + pid, old)


@jit
def _scan(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), 0))


def test_atomics_and_builtins_without_batch_support_fall_back():
    def atomic(a, b):
        _atomic_count[(10,)](a[0], a[1], batch_programs=b)

    assert n_batched(both(atomic, [np.zeros(1, np.int32), np.zeros(10, np.int32)])) == 0

    def scan(a, b):
        _scan[(6,)](a[0], a[1], BLOCK=8, batch_programs=b)

    x = np.arange(48, dtype=np.float32)
    assert n_batched(both(scan, [x, np.zeros(48, np.float32)])) == 0


@jit
def _printing(out_ptr):
    pid = tl.program_id(0)
    tl.device_print("pid", pid)
    tl.store(out_ptr + pid, pid)


def test_device_print_prints_once_per_program(capsys):
    out = np.zeros(5, np.int32)
    _printing[(5,)](out, batch_programs=True)
    batched = capsys.readouterr().out
    _printing[(5,)](out, batch_programs=False)
    assert batched == capsys.readouterr().out and batched.count("\n") == 5
    assert _printing.last_record.n_programs_batched == 0


def test_out_of_bounds_error_is_the_sequential_one():
    outs, msgs = [], []
    for b in (False, True):
        x = np.ones(100, np.float32)
        out = np.zeros(100, np.float32)
        with pytest.raises(OutOfBoundsError) as e:
            add_kernel_unmasked[(4,)](x, x, out, 100, BLOCK_SIZE=32, batch_programs=b)
        outs.append(out)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "program_id=(3,)" in msgs[0]
    np.testing.assert_array_equal(outs[0], outs[1])
    assert outs[1][:96].sum() == 192  # programs 0..2 did store


# -- grids, block pointers, uniform accesses --------------------------------------------
@jit
def _grid3(out_ptr, scale_ptr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    s = tl.load(scale_ptr)        # the same address in every program
    lin = x + nx * (y + ny * z)
    tl.store(out_ptr + 3 * lin + tl.arange(0, 2), (x * 100 + y * 10 + z) * s)
    tl.store(out_ptr + 3 * lin + 2, s)


@pytest.mark.parametrize("grid", [(5,), (3, 4), (2, 3, 2), (1, 6, 1), (1, 1, 7)])
def test_multi_axis_grids(grid):
    n = int(np.prod(grid))

    def launch(a, b):
        _grid3[grid](a[0], a[1], batch_programs=b)

    recs = both(launch, [np.zeros(3 * n, np.int32), np.full(1, 2, np.int32)], "tile")
    assert n_batched(recs) == n


@jit
def _block_ptrs(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, PID_OFFS: tl.constexpr):
    pid = tl.program_id(0)
    row = pid * BM if PID_OFFS else 0
    src = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (row, 0), (BM, BN), (1, 0))
    blk = tl.load(src, boundary_check=(0, 1))
    desc = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    desc.store([row, 0], blk + 1)


@pytest.mark.parametrize("pid_offsets,expect", [(True, 0), (False, 5)])
def test_block_pointers_batch_only_at_uniform_offsets(pid_offsets, expect):
    x = np.arange(20 * 8, dtype=np.float32).reshape(20, 8)

    def launch(a, b):
        _block_ptrs[(5,)](a[0], a[1], 20, 8, BM=4, BN=8, PID_OFFS=pid_offsets,
                          batch_programs=b)

    recs = both(launch, [x, np.zeros_like(x)], "element")
    assert n_batched(recs) == expect


# -- builtins on batched values --------------------------------------------------------
@jit
def _kitchen_sink(x_ptr, w_ptr, out_ptr, B: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, B)
    sq = r[:, None] * B + r[None, :]
    tile = tl.load(x_ptr + pid * B * B + sq)                             # (B, B) per program
    w = tl.load(w_ptr + sq)                                              # plain (B, B)
    o = out_ptr + pid * 20 * B * B          # vectors at o + k * B, matrices at o + k * B * B
    s = pid.to(tl.float32) * 0.5 - 1.0                                   # batched scalar
    tl.store(o + r, tl.sum(tile, axis=0))
    tl.store(o + B + r, tl.sum(tile * s, axis=1))
    tl.store(o + 2 * B, tl.sum(tile))
    tl.store(o + 2 * B + 1 + r[:, None] * 0, tl.max(tile, axis=1, keep_dims=True))
    tl.store(o + 3 * B + r, tl.min(tile, axis=0).to(tl.float32))
    tl.store(o + 4 * B + r, tl.argmax(tile, axis=1).to(tl.float32))
    tl.store(o + 5 * B + r, tl.argmin(tile, axis=0, tie_break_left=False).to(tl.float32))
    tl.store(o + 6 * B + r, tl.xor_sum(tile.to(tl.int32, bitcast=True), axis=1).to(tl.float32))
    tl.store(o + 7 * B + r, tl.sum(tl.broadcast_to(s, (B, B)), axis=0) + tl.cdiv(pid, 3))
    h = tile.to(tl.float16)
    tl.store(o + 8 * B + r, tl.sum(h * h, axis=1).to(tl.float32))
    tl.store(o + 9 * B + r, tl.max(tl.sum(tile, axis=None, keep_dims=True) + w, axis=0))
    tl.store(o + 10 * B + r, tl.sum(tl.trans(tile) * 3.0, axis=0))       # F-ordered operands
    tl.store(o + 11 * B + r, tl.sum(tl.trans(tile), axis=1) + tl.sum(tile.T + w, axis=0))
    tl.store(o + 12 * B + r, tl.sum(tl.broadcast_to(tl.sum(tile, axis=1)[:, None], (B, B)),
                                    axis=1))
    tl.store(o + 1 * B * B + sq, tl.dot(tile, w, tile))
    tl.store(o + 2 * B * B + sq, tl.dot(w, tile.T))
    t3 = tl.reshape(tile, (B // 2, 2, B))
    tl.store(o + 3 * B * B + sq, tl.reshape(tl.permute(t3, (1, 0, 2)), (B, B)))
    tl.store(o + 4 * B * B + sq, tl.trans(tile))
    e = tl.expand_dims(tl.sum(tile, axis=1), 1)
    tl.store(o + 5 * B * B + sq, tl.broadcast_to(e, (B, B)) - w)
    tl.store(o + 6 * B * B + sq,
             tl.where(tile > s, tile, -w) + tl.maximum(tile, s) * tl.minimum(w, s))
    tl.store(o + 7 * B * B + sq,
             tl.exp(tile) + tl.log(tl.abs(tile) + 1) + tl.sqrt(tl.abs(tile)) + tl.sigmoid(-tile))
    tl.store(o + 8 * B * B + sq, tl.softmax(tile * s))
    tl.store(o + 9 * B * B + sq, tl.fma(tile, s, w))
    i = (tile * 100).to(tl.int32)
    q = i // (pid - 3) + i % (pid + 1) + (i >> 2) + (~i & 7) + (-i | 1)
    tl.store(o + 10 * B * B + sq, q.to(tl.float32))
    tl.store(o + 11 * B * B + sq, (tile * 1e9).to(tl.int8).to(tl.float32))
    tl.store(o + 12 * B * B + sq, tl.zeros_like(tile) + tl.full((B, B), 2.0, tl.float32))
    tl.store(o + 13 * B * B + sq, tl.exp2(tile * s) * tl.log2(tl.abs(w) + 1))
    tl.store(o + 14 * B * B + sq, tl.where(tl.abs(tile) < 1, s, w))
    tl.store(o + 15 * B * B + sq, tl.dot(tile, tile.T) * tl.cos(s) + abs(tile))
    tl.store(o + 16 * B * B + sq, tl.dot(tile.T * 2.0, w) + tl.dot(w.T, tl.trans(tile)))
    tl.store(o + 17 * B * B + sq, tl.dot(tile.to(tl.float16), w.to(tl.float16)))
    tl.store(o + 18 * B * B + sq, tl.dot(tl.broadcast_to(s, (B, B)), w, w))
    tl.store(o + 19 * B * B + sq, tl.dot(w, w, tile))


@pytest.mark.parametrize("B", [16, 32])  # tl.dot needs K >= 16, as on the GPU
def test_batched_builtins_equal_sequential(B):
    n = 13
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, B, B)).astype(np.float32)
    x[3, 2, :] = 1.0  # ties for argmax/argmin
    w = rng.standard_normal((B, B)).astype(np.float32)

    def launch(a, b):
        _kitchen_sink[(n,)](a[0], a[1], a[2], B=B, batch_programs=b)

    recs = both(launch, [x, w, np.zeros(n * 20 * B * B, np.float32)], "tile")
    assert n_batched(recs) == n


def test_batch_programs_must_be_a_bool_or_a_positive_int():
    x = np.zeros(8, np.float32)
    for bad in (0, -2, 1.5, "yes"):
        with pytest.raises(LangError, match="batch_programs must be a bool or an int >= 1"):
            K.add_kernel[(1,)](x, x, x, 8, BLOCK_SIZE=8, batch_programs=bad)


def test_batch_programs_is_not_recorded_in_meta_and_ir_listing_is_unchanged():
    x = np.zeros(64, np.float32)
    K.add_kernel[(4,)](x, x, x, 64, BLOCK_SIZE=16, batch_programs=True)
    assert "batch_programs" not in K.add_kernel.last_record.meta
    ir = K.add_kernel.trace(x, x, x, 64, BLOCK_SIZE=16, grid=(4,), batch_programs=True)
    assert str(ir) == str(K.add_kernel.trace(x, x, x, 64, BLOCK_SIZE=16, grid=(4,)))


# -- small batch sizes (new-user test: batch_programs=2/3 used to never batch) ---------------
@pytest.mark.parametrize("batch,n_prog,expect", [
    (1, 7, 0),     # one program at a time
    (2, 7, 6),     # 3 batches of 2, the last program alone
    (2, 8, 8),
    (3, 7, 6),     # 2 batches of 3, the last program alone
    (3, 8, 6),     # 2 batches of 3, a tail of 2 < 3 one at a time
    (3, 9, 9),
    (4, 7, 4),
])
def test_small_batch_programs_batch(batch, n_prog, expect):
    n, block = n_prog * 16 - 5, 16
    rng = np.random.default_rng(batch * 100 + n_prog)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)

    def launch(a, b):
        K.add_kernel[(n_prog,)](a[0], a[1], a[2], n, BLOCK_SIZE=block, batch_programs=b)

    for gran in ("element", "tile"):
        recs = both(launch, [x, y, np.zeros(n, np.float32)], gran, batch)
        assert n_batched(recs) == expect


@pytest.mark.parametrize("batch", [2, 3])
def test_small_batches_fall_back_like_large_ones(batch):
    def launch(a, b):
        _branchy[(20,)](a[0], SPLIT=5, MODE=0, batch_programs=b)

    recs = both(launch, [np.zeros(40, np.int32)], "element", batch)
    # the batch holding pids 4 and 5 (batch 2: 4-5; batch 3: 3-5) diverges and splits into
    # pieces shorter than `batch` (one program at a time); batch 3 also leaves the tail 18-19
    assert n_batched(recs) == {2: 18, 3: 15}[batch]


def test_small_batches_of_the_matmul_equal_sequential():
    rng = np.random.default_rng(3)
    M, N, K_ = 48, 64, 32
    a0 = rng.standard_normal((M, K_)).astype(np.float16)
    b0 = rng.standard_normal((K_, N)).astype(np.float16)
    n_prog = tl.cdiv(M, 16) * tl.cdiv(N, 16)

    def launch(arr, bp):
        K.matmul_kernel[(n_prog,)](arr[0], arr[1], arr[2], M, N, K_, K_, 1, N, 1, N, 1,
                                   BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2,
                                   PID_ORDER="row_major", batch_programs=bp)

    for batch in (2, 3):
        recs = both(launch, [a0, b0, np.zeros((M, N), np.float16)], "sector", batch)
        assert n_batched(recs) == n_prog == 12


@jit
def _row_scale(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N)
        tl.store(y_ptr + row * N + cols, x * 2.0, mask=cols < N)


@jit
def _shifted_copy(x_ptr, N, BLOCK: tl.constexpr):
    # program p reads row p, which program p - 1 wrote: a chain, sequential only
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * N + cols, mask=cols < N)
    tl.store(x_ptr + (row + 1) * N + cols, v + 1.0, mask=cols < N)


def test_disjoint_rows_stay_batched_and_match_sequential():
    x = np.random.default_rng(0).standard_normal((64, 100)).astype(np.float32)
    y1, y2 = np.zeros_like(x), np.zeros_like(x)
    _row_scale[(64,)](x, y1, 100, BLOCK=32, batch_programs=True)
    _row_scale[(64,)](x, y2, 100, BLOCK=32)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(y1, 2 * x)


def test_programs_that_share_rows_through_stores_match_sequential():
    x0 = np.arange(9 * 16, dtype=np.float32).reshape(9, 16)
    a, b = x0.copy(), x0.copy()
    _shifted_copy[(8,)](a, 16, BLOCK=16, batch_programs=True)
    _shifted_copy[(8,)](b, 16, BLOCK=16)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[8], x0[0] + 8)  # the chain ran in program order
