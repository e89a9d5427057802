"""The records model's time half: reduction latencies in a program's chain and their issue slots."""

import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import LangError
from autotile.kernels._spec import KernelLaunch
from autotile.measure import H200_MEASURED_L2
from autotile.measure.gpu import _records_model as rm
from autotile.measure.gpu._time_model import GpuModelParams


@tl.jit
def row_norm_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(0, N, BLOCK):
        cols = k + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    s = tl.sum(acc, axis=0)
    m = tl.max(acc, axis=0)
    tl.store(y_ptr + row, s + m)


def _launch(num_warps=4, rows=4096, n=2048):
    x = np.zeros((rows, n), np.float16)
    y = np.zeros(rows, np.float32)
    return KernelLaunch(row_norm_kernel, (rows,), {"x_ptr": x, "y_ptr": y, "N": n},
                        {"BLOCK": 512}, num_warps=num_warps)


def test_reduce_latency_is_the_measured_table_interpolated_in_log_warps():
    assert rm.reduce_latency_s(1) == pytest.approx(83.5e-9)
    assert rm.reduce_latency_s(16) == pytest.approx(233.1e-9)
    assert rm.reduce_latency_s(2) < rm.reduce_latency_s(3) < rm.reduce_latency_s(4)
    mid = np.interp(np.log2(3), [1, 2], [143.4e-9, 164.2e-9])
    assert rm.reduce_latency_s(3) == pytest.approx(mid)


def test_each_program_waits_for_its_two_reductions():
    hw, params = H200_MEASURED_L2, GpuModelParams()
    reason, f = rm.launch_features(_launch(num_warps=8), hw, params)
    assert reason is None
    assert f["reductions"] == 2.0
    with_red = rm.launch_time(f, hw, params, "float16")
    without = rm.launch_time(dict(f, reductions=0.0), hw, params, "float16")
    n_prog, bps = f["n_prog"], f["bps"]
    assert n_prog >= hw.n_sms * bps  # every SM slot busy: latency_s = programs per slot x chain
    extra = n_prog / (hw.n_sms * bps) * 2 * rm.reduce_latency_s(8)
    assert with_red["latency_s"] - without["latency_s"] == pytest.approx(extra, rel=1e-9)


def test_every_warp_issues_each_reductions_slots():
    hw, params = H200_MEASURED_L2, GpuModelParams()
    _, f = rm.launch_features(_launch(num_warps=8), hw, params)
    with_red = rm.launch_time(f, hw, params, "float16")
    without = rm.launch_time(dict(f, reductions=0.0), hw, params, "float16")
    rounds = -(-4096 // hw.n_sms)  # 32 programs on the busiest SM
    assert rounds == 32
    # 2 reductions x 8 warps x 50 slots, at 4 warp instructions per SM and clock
    slots_s = 32 * 2 * 8 * 50.0 / (4 * hw.clock_hz)
    assert rm.REDUCE_ISSUE_SLOTS == 50.0
    assert with_red["compute_s"] - without["compute_s"] == pytest.approx(slots_s, rel=1e-9)
    # the same two reductions spread over 16 warps take twice the slots
    _, f16 = rm.launch_features(_launch(num_warps=16), hw, params)
    d16 = (rm.launch_time(f16, hw, params, "float16")["compute_s"]
           - rm.launch_time(dict(f16, reductions=0.0), hw, params, "float16")["compute_s"])
    assert d16 == pytest.approx(2 * slots_s, rel=1e-9)


def test_estimate_launch_is_features_then_time():
    hw, params = H200_MEASURED_L2, GpuModelParams()
    launch = _launch(num_warps=4)
    reason, est = rm.estimate_launch(launch, hw, params, "float16")
    _, f = rm.launch_features(launch, hw, params)
    assert reason is None
    assert dict(est) == dict(rm.launch_time(f, hw, params, "float16"))


@tl.jit
def scale_rows_kernel(x_ptr, w_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for k in range(0, N, BLOCK):
        cols = k + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        tl.store(y_ptr + row * N + cols, x * w, mask=cols < N)


def test_loads_of_one_iteration_are_one_step_of_the_chain():
    hw, params = H200_MEASURED_L2, GpuModelParams()
    x = np.zeros((8192, 2048), np.float16)
    launch = KernelLaunch(scale_rows_kernel, (8192,),
                          {"x_ptr": x, "w_ptr": np.zeros(2048, np.float16),
                           "y_ptr": np.zeros_like(x), "N": 2048}, {"BLOCK": 256},
                          num_warps=2)
    reason, f = rm.launch_features(launch, hw, params)
    assert reason is None
    assert f["n_steps"] == 16.0  # 8 iterations of two loads (x and w)
    assert f["n_groups"] == 8.0  # one wait per iteration
    grouped = rm.launch_time(f, hw, params, "float16")
    serial = rm.launch_time(dict(f, n_groups=16.0), hw, params, "float16")
    step = f["hit_rate"] * rm.L2_LATENCY_S + (1 - f["hit_rate"]) * rm.HBM_LATENCY_S
    n_prog, bps = f["n_prog"], f["bps"]
    assert n_prog >= hw.n_sms * bps
    saved = n_prog / (hw.n_sms * bps) * 8 * step
    assert serial["latency_s"] - grouped["latency_s"] == pytest.approx(saved, rel=1e-9)


def test_load_groups_start_when_a_buffer_repeats():
    # program 0: x, w | x, w | x (three waits); program 1: x | x (two)
    prog = np.array([0, 0, 0, 0, 0, 1, 1], np.int64)
    op = np.array([0, 1, 3, 4, 6, 0, 2], np.int64)
    buf = np.array([0, 1, 0, 1, 0, 0, 0], np.int64)
    assert rm._load_groups(prog, op, buf) == pytest.approx(2.5)
    # several trace rows of one op count once
    assert rm._load_groups(np.zeros(3, np.int64), np.zeros(3, np.int64),
                           np.zeros(3, np.int64)) == 1.0


@tl.jit
def small_k_dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK_K: tl.constexpr):
    m = tl.arange(0, 16)
    k = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + m[:, None] * BLOCK_K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * 16 + m[None, :])
    tl.store(c_ptr + m[:, None] * 16 + m[None, :], tl.dot(a, b))


def test_the_model_applies_the_nvidia_backends_dot_minimum():
    # Triton's interpreter (and autotile's, by default) computes a K = 8 dot with a
    # warning; the GPU cannot compile it, so the GPU model's run must refuse it
    a, b = np.ones((16, 8), np.float16), np.ones((8, 16), np.float16)
    c = np.zeros((16, 16), np.float32)
    with pytest.warns(tl.TritonBackendWarning):
        small_k_dot_kernel[(1,)](a, b, c, BLOCK_K=8)
    np.testing.assert_array_equal(c, np.full((16, 16), 8.0, np.float32))
    launch = KernelLaunch(small_k_dot_kernel, (1,), {"a_ptr": a, "b_ptr": b, "c_ptr": c},
                          {"BLOCK_K": 8}, num_warps=4)
    with pytest.raises(LangError, match="K >= 16; got a.shape=\\(16, 8\\)"):
        rm.launch_features(launch, H200_MEASURED_L2, GpuModelParams())


@tl.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, x * 2.0, mask=offs < n)


def _scale_launch(block):
    n = 1 << 22
    x, y = np.zeros(n, np.float16), np.zeros(n, np.float16)
    return KernelLaunch(scale_kernel, (n // block,), {"x_ptr": x, "y_ptr": y, "n": n},
                        {"BLOCK": block}, num_warps=4)


def test_long_contiguous_spans_drain_once_per_launch():
    hw, params = H200_MEASURED_L2, GpuModelParams()
    assert rm.SPAN_DRAIN_PROGRAMS == 10.0 and rm.SPAN_FREE_BYTES == 512.0
    _, f = rm.launch_features(_scale_launch(4096), hw, params)
    # one 8 KB span read and one written per program: 2 x (8192 - 512) bytes beyond
    # one warp instruction's footprint, 10 times, at 1/132 of 4.8 TB/s x 0.9
    assert (f["span_r"], f["span_w"]) == (8192.0, 8192.0)
    m = rm.launch_time(f, hw, params, "float16")
    assert m["drain_s"] == pytest.approx(10 * 15360 * 132 / 4.32e12)
    assert m["drain_s"] == pytest.approx(4.693e-6, rel=1e-3)
    without = rm.launch_time(dict(f, span_r=0.0, span_w=0.0), hw, params, "float16")
    assert m["time_s"] - without["time_s"] == pytest.approx(4.693e-6, rel=1e-3)
    # a 512-byte block is one warp instruction's footprint: no drain
    _, g = rm.launch_features(_scale_launch(256), hw, params)
    assert (g["span_r"], g["span_w"]) == (512.0, 512.0)
    assert rm.launch_time(g, hw, params, "float16")["drain_s"] == 0.0


def test_a_row_programs_span_is_its_row_whatever_the_block():
    hw, params = H200_MEASURED_L2, GpuModelParams()
    for block in (256, 2048):
        launch = _launch(num_warps=4, rows=1024, n=2048)
        launch = KernelLaunch(row_norm_kernel, launch.grid, launch.args, {"BLOCK": block},
                              num_warps=4)
        _, f = rm.launch_features(launch, hw, params)
        # the loop's chunks of the 2048-element fp16 row join into one 4 KB span; the
        # program writes one float (one 32-byte sector)
        assert (f["run_r"], f["span_r"], f["span_w"]) == (min(block, 2048) * 2.0, 4096.0, 32.0)


def test_span_drain_is_the_launch_times_drain_and_rejects_negative_spans():
    hw, params = H200_MEASURED_L2, GpuModelParams()
    # GELU fp32 at BLOCK 8192: 32 KB read and written per program (docs/gpu_model.md:
    # 19.7 us); a 1024-element fp32 block 2.2 us; spans within 512 bytes cost nothing
    assert rm.span_drain_s(32768.0, 32768.0, hw, params) == pytest.approx(19.71e-6, rel=1e-3)
    assert rm.span_drain_s(4096.0, 4096.0, hw, params) == pytest.approx(2.190e-6, rel=1e-3)
    assert rm.span_drain_s(512.0, 0.0, hw, params) == 0.0
    _, f = rm.launch_features(_scale_launch(4096), hw, params)
    assert rm.launch_time(f, hw, params, "float16")["drain_s"] == \
        rm.span_drain_s(f["span_r"], f["span_w"], hw, params)
    with pytest.raises(ValueError, match=r"spans must be >= 0 bytes, got span_r=-1.0, "
                       r"span_w=0.0"):
        rm.span_drain_s(-1.0, 0.0, hw, params)
    with pytest.raises(ValueError, match=r"got span_r=0.0, span_w=nan"):
        rm.span_drain_s(0.0, float("nan"), hw, params)


def test_the_bounds_combine_in_a_soft_maximum_of_exponent_6():
    # model v12: 6, chosen on the records checks v1-v12 (4 up to v11)
    assert rm.SOFT_MAX_EXPONENT == 6.0
    assert rm.soft_max((1.0, 1.0)) == pytest.approx(1.12246, rel=1e-5)  # 2 ** (1/6)
    assert rm.soft_max((1.0, 0.6)) == pytest.approx(1.00763, rel=1e-5)
    assert rm.soft_max((1.0, 1.0), 4.0) == pytest.approx(1.18921, rel=1e-5)
    hw, params = H200_MEASURED_L2, GpuModelParams()
    _, f = rm.launch_features(_launch(num_warps=4), hw, params)
    m = rm.launch_time(f, hw, params, "float16")
    bounds = (m["compute_s"], m["memory_s"], m["latency_s"], m["overhead_s"])
    rest = (1.0 - m["overlap"]) * min(m["compute_s"], m["memory_s"])
    expect = (rm.soft_max(bounds, 6.0) + rest) * m["spill_factor"] + m["drain_s"] \
        + hw.launch_overhead_s
    assert m["time_s"] == pytest.approx(expect, rel=1e-12)
    # the v11 exponent would give a longer time for the same bounds
    assert rm.soft_max(bounds, 4.0) > rm.soft_max(bounds, 6.0)


def test_the_analytic_row_softmax_keeps_exponent_4():
    from autotile.measure.gpu import _analytic

    assert _analytic.ROW_SOFT_MAX_EXPONENT == 4.0
    # and row_softmax's time uses it, not the records model's 6 (6144 x 9000 fp32,
    # 4 warps: compute, memory, latency and, N being no multiple of 16, unaligned-row
    # bounds of the returned metrics)
    from autotile.measure import KernelModelMeasurer

    hw = H200_MEASURED_L2
    m = KernelModelMeasurer("softmax_fused", {"M": 6144, "N": 9000}, hw, dtype="float32")
    r = m._measure({"num_warps": 4, "ROWS_PER_PROGRAM": 1})
    assert r.ok, r.error
    assert r.metrics["unaligned_s"] > 0.0
    b = (r.metrics["compute_s"], r.metrics["memory_s"], r.metrics["latency_s"],
         r.metrics["unaligned_s"])
    expect = rm.soft_max(b, 4.0) * r.metrics["spill_factor"] + hw.launch_overhead_s
    assert r.metrics["time_s"] == pytest.approx(expect, rel=1e-12)
    assert rm.soft_max(b, 4.0) != pytest.approx(rm.soft_max(b, 6.0), rel=1e-6)
