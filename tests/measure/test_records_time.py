"""The records model's time half: reduction latencies in a program's chain."""

import numpy as np
import pytest

import autotile.lang as tl
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


def test_estimate_launch_is_features_then_time():
    hw, params = H200_MEASURED_L2, GpuModelParams()
    launch = _launch(num_warps=4)
    reason, est = rm.estimate_launch(launch, hw, params, "float16")
    _, f = rm.launch_features(launch, hw, params)
    assert reason is None
    assert dict(est) == dict(rm.launch_time(f, hw, params, "float16"))
