import dataclasses
import math

import pytest

from autotile.errors import MeasureError
from autotile.measure.gpu._hardware import H100_SXM
from autotile.measure.gpu._time_model import (
    GpuModelParams,
    estimate_time,
    matmul_efficiency,
    matmul_instr_n,
    matmul_regs_per_thread,
    matmul_smem_bytes,
    matmul_smem_step_bytes,
    occupancy,
)

P = GpuModelParams()


def test_resource_formulas():
    assert matmul_smem_bytes(128, 128, 64, 3, 2) == 3 * (128 * 64 + 64 * 128) * 2 == 98304
    # 128x128 fp32 accumulator over 256 threads = 64 regs + 40 base = 104
    assert matmul_regs_per_thread(128, 128, 8, P) == 104
    assert matmul_regs_per_thread(128, 128, 4, P) == 168
    assert matmul_regs_per_thread(16, 16, 2, P) == 48  # 4 + 40 -> rounded up to 48


def test_occupancy_limiters_and_infeasible_reasons():
    o = occupancy(H100_SXM, num_warps=8, smem_bytes=98304, regs_per_thread=104)
    assert (o.blocks_per_sm, o.limiter, o.occupancy) == (2, "smem", 0.25)
    o = occupancy(H100_SXM, num_warps=4, smem_bytes=4096, regs_per_thread=40)
    assert (o.blocks_per_sm, o.limiter) == (12, "registers")  # 65536 // (40 * 128)
    o = occupancy(H100_SXM, num_warps=2, smem_bytes=1024, regs_per_thread=24)
    assert (o.blocks_per_sm, o.limiter) == (32, "blocks")
    bad = occupancy(H100_SXM, num_warps=4, smem_bytes=240_000, regs_per_thread=40)
    assert bad.blocks_per_sm == 0 and "240000 B > smem_per_block_bytes=232448" in bad.reason
    bad = occupancy(H100_SXM, num_warps=4, smem_bytes=1024, regs_per_thread=296)
    assert bad.reason == "registers per thread 296 > max_regs_per_thread=255"


def test_efficiency_shape():
    big = matmul_efficiency(128, 128, 64, 8, P)
    # c_mn = 24 since session 13 (after v7): 1 + 24 (2 / 128) = 1.375
    assert P.tile_overhead_elems == 24.0
    assert big == pytest.approx(0.85 / 1.375 / 1.125)
    assert matmul_efficiency(64, 64, 64, 8, P) < big  # small tile, and 64 < 16 * 8 fallback
    assert matmul_efficiency(128, 128, 64, 2, P) < matmul_efficiency(128, 128, 64, 4, P)


def test_roofline_overlap_and_waves():
    hw = dataclasses.replace(H100_SXM, launch_overhead_s=0.0)
    peak_sm = hw.fp16_tensor_flops_per_s / hw.n_sms
    kw = dict(flops_per_program=peak_sm * 1e-3, hbm_bytes=hw.hbm_bytes_per_s * 0.9 * 5e-4,
              efficiency=1.0)
    serial = estimate_time(hw, P, n_programs=132, blocks_per_sm=1, num_stages=1, **kw)
    assert serial.compute_s == pytest.approx(1e-3) and serial.memory_s == pytest.approx(5e-4)
    assert serial.time_s == pytest.approx(1.5e-3) and serial.bound == "compute"
    piped = estimate_time(hw, P, n_programs=132, blocks_per_sm=1, num_stages=5, **kw)
    assert piped.time_s == pytest.approx(1e-3 + 0.35**4 * 5e-4)
    fixed_clock = dataclasses.replace(P, clock_exponent=0.0)
    one_more = estimate_time(hw, fixed_clock, n_programs=133, blocks_per_sm=1, num_stages=5,
                             **kw)
    assert one_more.n_sm_rounds == 2 and one_more.compute_s == pytest.approx(2e-3)
    # eq. 5e: the SMs are busy 133 / 264 of the time, so the clock rises by (264 / 133)^(1/3)
    boosted = estimate_time(hw, P, n_programs=133, blocks_per_sm=1, num_stages=5, **kw)
    assert boosted.compute_s == pytest.approx(2e-3 / (264 / 133) ** (1 / 3))
    one = estimate_time(hw, P, n_programs=1, blocks_per_sm=1, num_stages=5, **kw)
    assert one.compute_s == pytest.approx(1e-3 / 1.47)  # capped at max_clock_boost
    with pytest.raises(MeasureError, match="efficiency must be in"):
        estimate_time(hw, P, n_programs=1, blocks_per_sm=1, num_stages=1,
                      flops_per_program=1.0, hbm_bytes=0.0, efficiency=1.5)


def test_params_validation_and_json():
    assert GpuModelParams(**GpuModelParams().to_json()) == P
    assert P.warp_factor(8) == 1.0 and P.warp_factor(32) == 0.95
    with pytest.raises(MeasureError, match="peak_efficiency must be in"):
        GpuModelParams(peak_efficiency=0.0)
    with pytest.raises(MeasureError, match="overlap_decay must be in"):
        GpuModelParams(overlap_decay=1.0)


def test_pipeline_feed_term_little_law():
    """Eq. 5b: loads of a step have num_stages - 1 steps to arrive (Little's law)."""
    hw = dataclasses.replace(H100_SXM, launch_overhead_s=0.0)
    peak_sm = hw.fp16_tensor_flops_per_s / hw.n_sms
    # one program per SM, 100 steps of 1 us of tensor work each, 64 KB per step
    kw = dict(flops_per_program=peak_sm * 1e-4, hbm_bytes=0.0, efficiency=1.0,
              n_programs=132, n_steps_per_program=100, step_bytes=65536.0)
    off = estimate_time(hw, P, blocks_per_sm=1, num_stages=2, **kw)
    assert off.feed_s == 0.0 and off.compute_s == pytest.approx(1e-4)  # defaults: term off
    assert off == estimate_time(hw, P, blocks_per_sm=1, num_stages=2,
                                **{k: v for k, v in kw.items() if k not in (
                                    "n_steps_per_program", "step_bytes")})
    p = GpuModelParams(pipeline_latency_s=0.8e-6, sm_load_bytes_per_s=65536 / 0.5e-6)
    # 2 stages, 1 program: one step in flight, (0.8 + 0.5) us per step > 1 us of compute
    two = estimate_time(hw, p, blocks_per_sm=1, num_stages=2, **kw)
    assert two.feed_s == pytest.approx(100 * 1.3e-6) and two.compute_s == two.feed_s
    # 3 stages: two steps in flight, 0.65 us per step < 1 us: compute bound again
    three = estimate_time(hw, p, blocks_per_sm=1, num_stages=3, **kw)
    assert three.feed_s == pytest.approx(65e-6) and three.compute_s == pytest.approx(1e-4)
    # two resident programs on 264 programs: 2 rounds, four steps in flight per SM
    kw2 = dict(kw, n_programs=264)
    two_res = estimate_time(hw, p, blocks_per_sm=2, num_stages=3, **kw2)
    assert two_res.feed_s == pytest.approx(2 * 100 * 0.5e-6)  # bandwidth part: x = 0.5 us
    # fewer programs than resident slots: only the programs present count
    lone = estimate_time(hw, p, blocks_per_sm=4, num_stages=2, **kw)
    assert lone.feed_s == pytest.approx(two.feed_s)
    with pytest.raises(MeasureError, match="pipeline_latency_s must be >= 0"):
        GpuModelParams(pipeline_latency_s=-1.0)
    with pytest.raises(MeasureError, match="sm_load_bytes_per_s must be > 0"):
        GpuModelParams(sm_load_bytes_per_s=0.0)
    assert GpuModelParams(**p.to_json()) == p


def test_smem_step_bytes_follow_tritons_wgmma_layout():
    """Eq. 5c: 8 warps split BLOCK_M over two warpgroups, so 256x128 re-reads B."""
    # Triton's mmaVersionToInstrShape: n is the widest wgmma N the tile allows
    assert matmul_instr_n(128, 256, 8) == 256
    assert matmul_instr_n(256, 128, 8) == 128
    assert matmul_instr_n(64, 128, 8) == 64     # BLOCK_M 64: two warpgroups split N
    assert matmul_instr_n(128, 128, 4) == 128
    assert matmul_instr_n(32, 64, 4) == 0       # BLOCK_M % 64 != 0: mma.sync
    assert matmul_instr_n(128, 128, 2) == 0     # < 4 warps: mma.sync
    # per k16: 128x256 issues 2 x m64n256 (A 64x16 + B 16x256 each) = 10,240 elements,
    # 256x128 4 x m64n128 = 12,288; per BLOCK_K = 64 step x 4, plus the (BM + BN) * BK
    # tile writes, x 2 bytes
    assert matmul_smem_step_bytes(128, 256, 64, 8, 2) == (4 * 10240 + 384 * 64) * 2
    assert matmul_smem_step_bytes(256, 128, 64, 8, 2) == (4 * 12288 + 384 * 64) * 2
    # mma.sync: warpsPerTileV2 gives 32x64 with 4 warps [2, 2]; each warp loads its
    # 16 rows of A and 32 columns of B: (2 * 32 + 2 * 64) * 32 reads + 96 * 32 writes
    assert matmul_smem_step_bytes(32, 64, 32, 4, 2) == ((2 * 32 + 2 * 64) * 32 + 96 * 32) * 2


def test_smem_port_term_is_a_roofline_on_the_step_bytes():
    hw = dataclasses.replace(H100_SXM, launch_overhead_s=0.0)
    peak_sm = hw.fp16_tensor_flops_per_s / hw.n_sms
    kw = dict(flops_per_program=peak_sm * 1e-4, hbm_bytes=0.0, efficiency=1.0,
              n_programs=264, n_steps_per_program=100, step_bytes=0.0,
              blocks_per_sm=2, num_stages=3)
    off = estimate_time(hw, dataclasses.replace(P, smem_bytes_per_s_per_sm=math.inf),
                        smem_step_bytes=1e5, **kw)   # B_smem = inf: off
    assert off.smem_s == 0.0 and off.compute_s == pytest.approx(2e-4)
    # the default is the port, 128 B/clk at the 1.33 GHz under the power cap (session 13,
    # after v7): 2 x 100 x 1e5 B / 170.24e9 B/s = 117 us, below the 200 us of compute
    port = estimate_time(hw, P, smem_step_bytes=1e5, **kw)
    assert P.smem_bytes_per_s_per_sm == pytest.approx(170.24e9)
    assert port.smem_s == pytest.approx(2e7 / 170.24e9) and port.compute_s == pytest.approx(2e-4)
    p = GpuModelParams(smem_bytes_per_s_per_sm=1e11)
    # 2 rounds x 100 steps x 1e5 B / 1e11 B/s = 200 us = compute: not above it
    assert estimate_time(hw, p, smem_step_bytes=1e5, **kw).compute_s == pytest.approx(2e-4)
    hi = estimate_time(hw, p, smem_step_bytes=1.5e5, **kw)
    assert hi.smem_s == pytest.approx(3e-4) and hi.compute_s == hi.smem_s
    with pytest.raises(MeasureError, match="smem_bytes_per_s_per_sm must be > 0"):
        GpuModelParams(smem_bytes_per_s_per_sm=0.0)
    assert GpuModelParams(**p.to_json()) == p


def test_partial_wave_after_full_waves_runs_below_the_sms_full_rate():
    # 100 us of tensor work a program at the SM's full rate, 2 resident programs an SM
    hw = dataclasses.replace(H100_SXM, launch_overhead_s=0.0)
    peak_sm = hw.fp16_tensor_flops_per_s / hw.n_sms
    kw = dict(flops_per_program=peak_sm * 1e-4, hbm_bytes=0.0, efficiency=1.0,
              blocks_per_sm=2, num_stages=3, tail_rate_exponent=0.75)
    # 396 programs: a full wave of 264, then one program an SM: 2 + 1 * 2 ** 0.75 programs
    tail = estimate_time(hw, P, n_programs=396, **kw)
    assert tail.compute_s == pytest.approx(1e-4 * (2 + 2 ** 0.75))
    assert tail.compute_s == pytest.approx(3.6818e-4, rel=1e-4)
    assert estimate_time(hw, P, n_programs=396, **{**kw, "tail_rate_exponent": 0.0}
                         ).compute_s == pytest.approx(3e-4)
    # whole waves, or one partial wave alone (no full wave before it): unchanged
    assert estimate_time(hw, P, n_programs=528, **kw).compute_s == pytest.approx(4e-4)
    assert estimate_time(hw, P, n_programs=132, **kw).compute_s == pytest.approx(1e-4)
    assert P.tail_rate_exponent == 0.75
    with pytest.raises(MeasureError, match="tail_rate_exponent"):
        GpuModelParams(tail_rate_exponent=-0.1)
    # estimate_time's own argument: a bad exponent is an error, not the term switched off
    for bad in (-0.5, math.nan, math.inf):
        with pytest.raises(MeasureError, match=r"tail_rate_exponent must be finite and >= 0, "
                                               r"got tail_rate_exponent="):
            estimate_time(hw, P, n_programs=396, **{**kw, "tail_rate_exponent": bad})


def test_port_at_the_capped_clock_and_c_mn_24_rank_the_v7_misses():
    # session 13, after v7 (docs/gpu_model.md §3.7): at 448 x 12880 x 6000 bf16 (H200, v7)
    # 128x256x64 w8 measured 142.6 us and 64x128x64 181.9 us; the model before the change
    # (port at 1.83 GHz, c_mn = 16) put them at 159.9 and 156.6 us and picked 64x128x64
    # (78.4 % of the best). With 128 B/clk at 1.33 GHz and c_mn = 24: 171.9 and 177.6 us.
    from autotile.measure import KernelModelMeasurer
    from autotile.measure.gpu import H200_MEASURED_L2
    from autotile.measure.gpu._time_model import (
        CAPPED_SM_CLOCK_HZ,
        SMEM_PORT_BYTES_PER_S_PER_SM,
        SMEM_PORT_CAPPED_BYTES_PER_S_PER_SM,
        TILE_OVERHEAD_ELEMS,
    )

    assert SMEM_PORT_CAPPED_BYTES_PER_S_PER_SM == pytest.approx(128 * CAPPED_SM_CLOCK_HZ)
    assert P.smem_bytes_per_s_per_sm == pytest.approx(170.24e9)
    assert P.tile_overhead_elems == TILE_OVERHEAD_ELEMS == 24.0

    def times(shape, dtype, params, configs):
        m = KernelModelMeasurer("matmul", shape, H200_MEASURED_L2, params=params, dtype=dtype)
        return [m.measure(dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w,
                               num_stages=s)).metrics["time_s"] for bm, bn, bk, w, s in configs]

    before = GpuModelParams(smem_bytes_per_s_per_sm=SMEM_PORT_BYTES_PER_S_PER_SM,
                            tile_overhead_elems=16.0)
    shape, pair = {"M": 448, "N": 12880, "K": 6000}, [(128, 256, 64, 8, 3), (64, 128, 64, 4, 4)]
    wide, narrow = times(shape, "bfloat16", P, pair)
    assert (wide, narrow) == (pytest.approx(171.88e-6, rel=1e-3),
                              pytest.approx(177.59e-6, rel=1e-3))
    wide0, narrow0 = times(shape, "bfloat16", before, pair)
    assert (wide0, narrow0) == (pytest.approx(159.90e-6, rel=1e-3),
                                pytest.approx(156.64e-6, rel=1e-3))
    # 320 x 9800 x 8000 fp16 (B scalar): 128x128x32 measured 633.2 us, 128x64x64 760.4 us;
    # now 759.2 against 760.9 us predicted (a narrow call), before 752.3 against 751.6
    pair = [(128, 128, 32, 4, 4), (128, 64, 64, 4, 4)]
    sq, tall = times({"M": 320, "N": 9800, "K": 8000}, "float16", P, pair)
    assert sq == pytest.approx(759.18e-6, rel=1e-3) and tall == pytest.approx(760.86e-6, rel=1e-3)
    sq0, tall0 = times({"M": 320, "N": 9800, "K": 8000}, "float16", before, pair)
    assert sq0 > tall0
