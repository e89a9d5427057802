"""The records model's element-wise load flag: Triton's divisibility-by-16 specialisation."""

import numpy as np
import pytest

import autotile.lang as tl
from autotile.kernels import KERNELS
from autotile.kernels._spec import KernelLaunch
from autotile.measure import H200_MEASURED_L2, KernelModelMeasurer
from autotile.measure.gpu import _records_model as rm
from autotile.measure.gpu._time_model import GpuModelParams


@tl.jit
def row_scale_kernel(x_ptr, w_ptr, y_ptr, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for k in range(0, N, BLOCK):
        cols = k + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        tl.store(y_ptr + row * stride + cols, x * w, mask=cols < N)


def _launch(n, stride=None, rows=1024, block=512, num_warps=4):
    stride = n if stride is None else stride
    x = np.zeros((rows, stride), np.float16)
    return KernelLaunch(row_scale_kernel, (rows,),
                        {"x_ptr": x, "w_ptr": np.zeros(n, np.float16), "y_ptr": np.zeros_like(x),
                         "stride": stride, "N": n}, {"BLOCK": block}, num_warps=num_warps)


def _element_trace(launch, programs):
    with tl.recording(trace="element") as rec:
        launch.run(programs=programs)
    return rec.last.trace


def _names(trace):
    return {trace.buffer_names[b] for b in rm.elementwise_buffers(trace)}


@pytest.fixture(autouse=True)
def _element_trace_on(monkeypatch):
    # launch_features runs the element trace only when asked (the term is off)
    monkeypatch.setattr(rm, "ELEMENTWISE_TRACE", True)


def test_the_element_trace_is_skipped_while_the_term_is_off(monkeypatch):
    monkeypatch.setattr(rm, "ELEMENTWISE_TRACE", None)
    hw, params = H200_MEASURED_L2, GpuModelParams()
    _, f = rm.launch_features(_launch(1800), hw, params)
    assert "ew_elems" not in f
    rm.launch_time(f, hw, params, "float16")  # no term, no feature needed
    monkeypatch.setattr(rm, "ELEMENTWISE_LOAD_CYCLES", 16.0)
    with pytest.raises(ValueError, match="lack ew_elems"):
        rm.launch_time(f, hw, params, "float16")
    _, g = rm.launch_features(_launch(1800), hw, params)  # the term on: traced
    assert g["ew_elems"] == 3600.0


def test_rows_on_the_16_element_grid_vectorise():
    hw, params = H200_MEASURED_L2, GpuModelParams()
    assert _names(_element_trace(_launch(2048), [0, 1, 1023])) == set()
    reason, f = rm.launch_features(_launch(2048), hw, params)
    assert reason is None
    assert f["ew_elems"] == 0.0


def test_a_row_stride_of_1800_elements_loads_one_element_at_a_time():
    # rows start at multiples of 8 elements (16 bytes in fp16), not of 16: Triton's
    # stride argument gets divisibility 1 and both loads go element-wise (w's mask
    # ends at N = 1800 too)
    hw, params = H200_MEASURED_L2, GpuModelParams()
    assert _names(_element_trace(_launch(1800), [0, 1, 1023])) == {"x_ptr", "w_ptr"}
    reason, f = rm.launch_features(_launch(1800), hw, params)
    assert reason is None
    assert f["ew_elems"] == 2 * 1800.0  # x and w, 1800 elements each per program


def test_an_aligned_stride_with_an_unaligned_mask_is_element_wise():
    # a padded row (stride 2048) starts on the grid, but the mask ends at 1800
    assert _names(_element_trace(_launch(1800, stride=2048), [0, 1])) == {"x_ptr", "w_ptr"}
    # ... while an aligned N inside a padded row vectorises
    assert _names(_element_trace(_launch(1792, stride=2048), [0, 1])) == set()


def test_scalar_loads_and_other_traces():
    @tl.jit
    def pick_kernel(x_ptr, y_ptr):
        pid = tl.program_id(0)
        tl.store(y_ptr + pid, tl.load(x_ptr + 3 * pid + 1))

    launch = KernelLaunch(pick_kernel, (8,), {"x_ptr": np.zeros(24, np.float32),
                                              "y_ptr": np.zeros(8, np.float32)}, {})
    assert rm.elementwise_buffers(_element_trace(launch, [0, 1, 2])) == set()
    with tl.recording(trace="sector") as rec:
        _launch(2048).run(programs=[0])
    with pytest.raises(ValueError, match="element"):
        rm.elementwise_buffers(rec.last.trace)


@pytest.mark.parametrize("shape, flagged", [
    ({"M": 256, "N": 256, "K": 1800}, {"a_ptr"}),   # A's rows are K apart
    ({"M": 256, "N": 1800, "K": 256}, {"b_ptr"}),   # B's rows are N apart
    ({"M": 256, "N": 256, "K": 256}, set()),
])
def test_matmul_operands_off_the_grid(shape, flagged):
    spec = KERNELS["matmul"]
    m = KernelModelMeasurer(spec, shape, H200_MEASURED_L2, dtype="float16")
    cfg = dict(m.space.config_at(0))
    (launch,) = spec.launches(shape, "float16", cfg, m.model_args())
    assert _names(_element_trace(launch, [0, 1])) == flagged


def test_element_wise_loads_lengthen_the_chain():
    # the flag is a feature; its time term is off in the model (0 cycles: session 13
    # found no chain cost that keeps the records checks' targets, docs/gpu_model.md)
    assert rm.ELEMENTWISE_LOAD_CYCLES == 0.0
    hw, params = H200_MEASURED_L2, GpuModelParams()
    _, f = rm.launch_features(_launch(1800, num_warps=4), hw, params)
    assert rm.launch_time(f, hw, params, "float16") == \
        rm.launch_time(dict(f, ew_elems=0.0), hw, params, "float16")
    old = rm.ELEMENTWISE_LOAD_CYCLES
    try:
        rm.ELEMENTWISE_LOAD_CYCLES = 16.0
        base = rm.launch_time(dict(f, ew_elems=0.0), hw, params, "float16")
        slow = rm.launch_time(f, hw, params, "float16")
    finally:
        rm.ELEMENTWISE_LOAD_CYCLES = old
    # 3600 elements a program over 128 threads, 16 cycles each, in every program's chain
    per_program = 3600 * 16.0 / (32 * 4) / hw.clock_hz
    slots = f["n_prog"] / (hw.n_sms * f["bps"])
    extra = per_program * (slots if slots >= 1 else 1.0)
    assert slow["latency_s"] - base["latency_s"] == pytest.approx(extra, rel=1e-9)
    assert slow["compute_s"] == base["compute_s"]  # a chain cost, not a throughput one
