"""Eqs. 1, 2 and 5d: a tile Triton loads with scalar loads has one buffer and costs time."""

from __future__ import annotations

import pytest

from autotile.errors import MeasureError
from autotile.measure import GpuModelParams, KernelModelMeasurer
from autotile.measure.gpu import H200_MEASURED_L2, estimate_time
from autotile.measure.gpu._time_model import (
    SMEM_PORT_BYTES_PER_S_PER_SM,
    matmul_regs_per_thread,
    matmul_scalar_regs_per_thread,
    matmul_smem_bytes,
)

P = GpuModelParams()


def cfg(bm, bn, bk, w, s):
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s)


def test_buffers_reproduce_tritons_out_of_resources_numbers():
    assert matmul_smem_bytes(128, 256, 128, 3, 2) == 294912
    assert matmul_smem_bytes(256, 64, 128, 4, 2, a_buffers=4, b_buffers=1) == 278528
    assert matmul_smem_bytes(256, 128, 128, 3, 2, a_buffers=3, b_buffers=1) == 229376


def test_scalar_elements_are_staged_in_registers():
    # 256x128 fp32 accumulator over 8 warps: 128 + 40; B's 128x128 step: 64 per thread
    assert matmul_regs_per_thread(256, 128, 8, P) == 168
    assert matmul_regs_per_thread(256, 128, 8, P, staged_elems=128 * 128) == 232
    assert matmul_regs_per_thread(128, 256, 8, P, staged_elems=128 * 256) == 296


def test_eq_5d_chain_and_lsu_terms():
    hw = H200_MEASURED_L2
    flops = hw.tensor_flops_per_s("float16") / hw.n_sms * 5e-6  # c0 = 5 us per program
    kw = dict(flops_per_program=flops, hbm_bytes=0.0, efficiency=1.0, num_stages=3,
              n_steps_per_program=10)
    base = estimate_time(hw, P, n_programs=132, blocks_per_sm=1, **kw)
    assert base.compute_s == pytest.approx(5e-6)
    # one program per SM, 10 steps of 4000 scalar elements: (10 x (1.7 + 1.0) + 5) us
    one = estimate_time(hw, P, n_programs=132, blocks_per_sm=1, scalar_step_elems=4000, **kw)
    assert one.compute_s == pytest.approx(32e-6)
    # two per SM, both resident: (2 x 10 x 2.7 + 10) / 2 us
    two = estimate_time(hw, P, n_programs=264, blocks_per_sm=2, scalar_step_elems=4000, **kw)
    assert two.compute_s == pytest.approx(32e-6)
    # scalar stores only: r x e_c / R = 8000 / 4e9 s, below c0
    out = estimate_time(hw, P, n_programs=132, blocks_per_sm=1, scalar_epilogue_elems=8000,
                        **kw)
    assert out.compute_s == pytest.approx(5e-6)
    off = GpuModelParams(scalar_elems_per_s_per_sm=float("inf"))
    assert estimate_time(hw, off, n_programs=132, blocks_per_sm=1, scalar_step_elems=4000,
                         **kw).compute_s == pytest.approx(5e-6)


def test_matmul_at_n_5000_ranks_the_configs_triton_ran():
    m = KernelModelMeasurer("matmul", {"M": 3000, "N": 5000, "K": 2000}, H200_MEASURED_L2)
    best = m.measure(cfg(256, 128, 128, 8, 3))  # measured 0.546 ms, the best tutorial config
    wide = m.measure(cfg(128, 256, 64, 8, 3))   # measured 0.776 ms
    # session 13 (after v7): the port at 1.33 GHz and c_mn = 24 (4.788e-4 and 8.558e-4 before)
    assert best.ok and best.metrics["time_s"] == pytest.approx(4.869e-4, rel=1e-3)
    assert wide.metrics["time_s"] == pytest.approx(8.644e-4, rel=1e-3)
    spill = m.measure(cfg(128, 256, 128, 8, 3))  # measured 1.075 ms
    assert spill.status == "infeasible" and "registers per thread 296" in spill.error
    # the same configs at N = 5008 (a multiple of 16) are pipelined and far faster
    m16 = KernelModelMeasurer("matmul", {"M": 3008, "N": 5008, "K": 2000}, H200_MEASURED_L2)
    assert m16.measure(cfg(128, 256, 64, 8, 3)).metrics["time_s"] == pytest.approx(
        1.225e-4, rel=1e-3)
    assert "smem_fits" in m16.measure(cfg(256, 128, 128, 8, 3)).error


def test_descriptor_kernel_is_modelled_as_pipelined():
    shape = {"M": 3000, "N": 5000, "K": 2000}
    c = dict(cfg(128, 256, 64, 8, 3), NUM_SMS=132)
    ptr = KernelModelMeasurer("matmul_persistent", shape, H200_MEASURED_L2).measure(c)
    tma = KernelModelMeasurer("matmul_descriptor_persistent", shape, H200_MEASURED_L2).measure(c)
    assert tma.metrics["time_s"] < 0.3 * ptr.metrics["time_s"]


def test_a_wave_tail_runs_at_a_higher_clock():
    # 256 x 12288 x 4096 bf16: 128x256 tiles give 96 programs, so 96 of 132 SMs are busy and
    # the clock rises by (132 / 96)^(1/3) (eq. 5e); the 128x64 tiles (384 programs) fill the SMs
    m = KernelModelMeasurer("matmul", {"M": 256, "N": 12288, "K": 4096}, H200_MEASURED_L2,
                            dtype="bfloat16")
    # eqs. 5e and 5' as in session 11: the port at 1.83 GHz and c_mn = 16 (before v7)
    old = dict(smem_bytes_per_s_per_sm=SMEM_PORT_BYTES_PER_S_PER_SM, tile_overhead_elems=16.0)
    m_old = KernelModelMeasurer("matmul", {"M": 256, "N": 12288, "K": 4096}, H200_MEASURED_L2,
                                GpuModelParams(**old), dtype="bfloat16")
    fixed = KernelModelMeasurer("matmul", {"M": 256, "N": 12288, "K": 4096}, H200_MEASURED_L2,
                                GpuModelParams(clock_exponent=0.0, **old), dtype="bfloat16")
    wide, narrow = dict(cfg(128, 256, 64, 8, 3), GROUP_M=2), dict(cfg(128, 64, 64, 4, 4), GROUP_M=2)
    assert m_old.measure(wide).metrics["compute_s"] == pytest.approx(
        fixed.measure(wide).metrics["compute_s"] / (132 / 96) ** (1 / 3))
    assert m_old.measure(narrow).metrics["compute_s"] == pytest.approx(
        fixed.measure(narrow).metrics["compute_s"] / (132 / 128) ** (1 / 3))
    # measured 51.1 us and 62.1 us: the wide tile is now predicted the faster one
    assert m_old.measure(wide).metrics["time_s"] < m_old.measure(narrow).metrics["time_s"]
    # and with the defaults since session 13 (after v7): 60.7 against 78.0 us
    assert m.measure(wide).metrics["time_s"] == pytest.approx(6.071e-5, rel=1e-3)
    assert m.measure(narrow).metrics["time_s"] == pytest.approx(7.799e-5, rel=1e-3)
    # without eq. 5e and the partial-wave term the narrow tile was predicted faster (57.3 us);
    # each alone puts the wide one first: 384 programs of 128x64 at 2 an SM leave a partial
    # wave of one program an SM after a full wave (62.4 against 69.7 us without eq. 5e)
    bare = KernelModelMeasurer("matmul", {"M": 256, "N": 12288, "K": 4096}, H200_MEASURED_L2,
                               GpuModelParams(clock_exponent=0.0, tail_rate_exponent=0.0,
                                              **old), dtype="bfloat16")
    assert bare.measure(wide).metrics["time_s"] > bare.measure(narrow).metrics["time_s"]
    assert bare.measure(narrow).metrics["time_s"] == pytest.approx(5.733e-5, rel=1e-3)
    assert fixed.measure(wide).metrics["time_s"] == pytest.approx(6.238e-5, rel=1e-3)
    assert fixed.measure(narrow).metrics["time_s"] == pytest.approx(6.967e-5, rel=1e-3)


def test_chains_run_in_waves_of_resident_programs():
    hw = H200_MEASURED_L2
    flops = hw.tensor_flops_per_s("float16") / hw.n_sms * 5e-6  # c0 = 5 us per program
    kw = dict(flops_per_program=flops, hbm_bytes=0.0, efficiency=1.0, num_stages=3,
              n_steps_per_program=10, scalar_step_elems=4000)
    # 396 programs, 2 resident per SM: 2 waves of 264 chains of (10 x 2.7 + 5) us each,
    # not 3 rounds / 2 = 1.5 chains
    three = estimate_time(hw, P, n_programs=396, blocks_per_sm=2, **kw)
    assert three.compute_s == pytest.approx(64e-6)
    # 264 programs fill one wave: the same 32 us as before
    assert estimate_time(hw, P, n_programs=264, blocks_per_sm=2, **kw).compute_s == \
        pytest.approx(32e-6)


def test_unvectorised_a_costs_less_than_b():
    # 2500 x 7000 x 3000 fp16: K and N not multiples of 16, A and B scalar. Measured on the
    # H200: 128x64x32 1.149 ms, 64x128x32 1.655 ms (same programs and steps, A and B swapped)
    m = KernelModelMeasurer("matmul", {"M": 2500, "N": 7000, "K": 3000}, H200_MEASURED_L2)
    tall = m.measure(cfg(128, 64, 32, 4, 4)).metrics["time_s"]
    wide = m.measure(cfg(64, 128, 32, 4, 4)).metrics["time_s"]
    assert tall < wide
    even = KernelModelMeasurer("matmul", {"M": 2500, "N": 7000, "K": 3000}, H200_MEASURED_L2,
                               params=GpuModelParams(scalar_a_weight=1.0))
    assert even.measure(cfg(128, 64, 32, 4, 4)).metrics["time_s"] == pytest.approx(
        even.measure(cfg(64, 128, 32, 4, 4)).metrics["time_s"], rel=1e-3)
    with pytest.raises(MeasureError, match="scalar_a_weight"):
        GpuModelParams(scalar_a_weight=-0.1)


def test_scalar_a_address_registers_reject_128x256x128_where_only_a_is_scalar():
    # 3600 x 2800 x 3000 bf16 and 3000 x 3520 x 2900 fp16 (only A scalar): 128x256x128 stages
    # 64 A elements a thread, each with its own address register: 128 + 64 + 64 + 40 = 296 >
    # 255 (measured 2.2x slower than 128x256x64 at both shapes, 37.5% and 39.4% of the best);
    # without the address registers (x = 0) it was feasible and the model's pick
    kw = dict(dtype="bfloat16")
    shape = {"M": 3600, "N": 2800, "K": 3000}
    on = KernelModelMeasurer("matmul", shape, H200_MEASURED_L2, **kw)
    off = KernelModelMeasurer("matmul", shape, H200_MEASURED_L2, **kw,
                              params=GpuModelParams(scalar_a_extra_regs=0.0))
    assert P.scalar_a_extra_regs == 1.0
    assert off.measure(cfg(128, 256, 128, 8, 3)).ok
    spill = on.measure(cfg(128, 256, 128, 8, 3))
    assert not spill.ok and "registers per thread 296" in spill.error
    fp16 = KernelModelMeasurer("matmul", {"M": 3000, "N": 3520, "K": 2900}, H200_MEASURED_L2)
    assert "registers per thread 296" in fp16.measure(cfg(128, 256, 128, 8, 3)).error
    # 128x256x64 (32 A elements a thread): 128 + 32 + 32 + 40 = 232, feasible, measured 87%
    assert fp16.measure(cfg(128, 256, 64, 8, 3)).ok
    # 64x128x64 (32 A elements a thread): 64 + 64 + 40 = 168 registers, 3 programs an SM
    # either way (the shared memory of 4 stages allows 3), so the same time
    assert on.measure(cfg(64, 128, 64, 4, 4)).metrics["time_s"] == pytest.approx(
        off.measure(cfg(64, 128, 64, 4, 4)).metrics["time_s"], rel=1e-12)
    assert on.measure(cfg(64, 128, 64, 4, 4)).metrics["time_s"] == pytest.approx(
        4.398e-4, rel=1e-3)  # 4.326e-4 before session 13's port clock and c_mn
    # both scalar (2500 x 7000 x 3000): B's staged registers are free before A's address
    # registers count, so 64x256x32 keeps 128 + 16 + 64 + 40 = 248 and stays feasible
    # (measured 60.6% of the best), as does 128x128x32 (128 + 32 + 32 + 40 = 232, 88.9%)
    both = KernelModelMeasurer("matmul", {"M": 2500, "N": 7000, "K": 3000}, H200_MEASURED_L2)
    assert both.measure(cfg(64, 256, 32, 4, 4)).ok
    assert both.measure(cfg(128, 128, 32, 4, 4)).ok
    with pytest.raises(MeasureError, match="scalar_a_extra_regs"):
        GpuModelParams(scalar_a_extra_regs=-0.5)


def test_scalar_b_address_registers_are_taken_once_a_launch():
    # session 13 (docs/gpu_model.md §3.7, "After the A-and-B diagnostic"): 128x64x32 w4
    # compiled to 164 registers with only B scalar and 168 with A and B scalar (H200,
    # 3 programs an SM both). B only: 64 accumulator + 40 + 16 B values + 16 B addresses
    # = 136 (3 programs; 120 and 4 programs without B's addresses)
    off = GpuModelParams(scalar_b_extra_regs=0.0)
    assert P.scalar_b_extra_regs == 1.0 and P.scalar_b_address_regs_cap == 16.0
    b_only = dict(scalar_b_elems=32 * 64)
    assert matmul_scalar_regs_per_thread(128, 64, 4, P, **b_only) == 136
    assert matmul_scalar_regs_per_thread(128, 64, 4, off, **b_only) == 120
    # A and B: the larger phase, A's 32 values and 32 addresses = 64 (168 as compiled), not
    # A's plus B's addresses (32 + 16 + 32 + 16 = 96: 200, 2 programs)
    both = dict(scalar_a_elems=128 * 32, scalar_b_elems=32 * 64)
    assert matmul_scalar_regs_per_thread(128, 64, 4, P, **both) == 168
    assert matmul_scalar_regs_per_thread(128, 64, 4, off, **both) == 168
    # no scalar operand: eq. 2 unchanged
    assert matmul_scalar_regs_per_thread(128, 128, 4, P) == matmul_regs_per_thread(
        128, 128, 4, P) == 168


def test_scalar_b_address_registers_are_capped():
    # 32x64x32 w2, B only (32 B elements a thread): at most 16 addresses, 32 + 40 + 32 + 16 =
    # 120 registers, 8 programs an SM as compiled (128 registers); uncapped 136 and 7
    b_only = dict(scalar_b_elems=32 * 64)
    assert matmul_scalar_regs_per_thread(32, 64, 2, P, **b_only) == 120
    uncapped = GpuModelParams(scalar_b_address_regs_cap=float("inf"))
    assert matmul_scalar_regs_per_thread(32, 64, 2, uncapped, **b_only) == 136
    # B's addresses never make a program infeasible: 64x256x32 uncapped would need
    # 128 + 40 + 64 + 64 = 296 and gets the 255 a thread may use (compiled 255, ran)
    wide = dict(scalar_b_elems=32 * 256)
    assert matmul_scalar_regs_per_thread(64, 256, 4, P, **wide) == 248
    assert matmul_scalar_regs_per_thread(64, 256, 4, uncapped, **wide) == 255
    # ... but one infeasible without them stays so: 128x256x128 w8, 128 + 40 + 128 = 296
    assert matmul_scalar_regs_per_thread(128, 256, 8, P, scalar_b_elems=128 * 256) == 296
    with pytest.raises(MeasureError, match="scalar_b_extra_regs"):
        GpuModelParams(scalar_b_extra_regs=-1.0)
    with pytest.raises(MeasureError, match="scalar_b_address_regs_cap"):
        GpuModelParams(scalar_b_address_regs_cap=-1.0)


def test_scalar_b_address_registers_pick_the_best_config_at_352x11000x6992():
    # 352 x 11000 x 6992 fp16 (only B scalar; v6: the model's pick 128x64x32 measured 77.9%
    # of the best, 128x128x32): 128x64x32 now runs 3 programs an SM as compiled, two rounds
    # on the busiest SM, and falls behind 128x128x32 and 128x64x64
    shape = {"M": 352, "N": 11000, "K": 6992}
    on = KernelModelMeasurer("matmul", shape, H200_MEASURED_L2)
    off = KernelModelMeasurer("matmul", shape, H200_MEASURED_L2,
                              params=GpuModelParams(scalar_b_extra_regs=0.0))
    r_on, r_off = on.measure(cfg(128, 64, 32, 4, 4)), off.measure(cfg(128, 64, 32, 4, 4))
    assert (r_on.metrics["blocks_per_sm"], r_off.metrics["blocks_per_sm"]) == (3.0, 4.0)
    # with the port at 1.33 GHz and c_mn = 24 (session 13, after v7; 1.0402, 0.5216 and
    # 0.6617 ms before)
    assert r_on.metrics["time_s"] == pytest.approx(1.0495e-3, rel=1e-3)
    assert r_off.metrics["time_s"] == pytest.approx(0.5262e-3, rel=1e-3)
    best = on.measure(cfg(128, 128, 32, 4, 4)).metrics["time_s"]
    assert best == pytest.approx(0.6679e-3, rel=1e-3)
    assert best < on.measure(cfg(128, 64, 64, 4, 4)).metrics["time_s"] < r_on.metrics["time_s"]
    # A and B scalar (2500 x 7000 x 3000): A's phase is the larger, nothing changes
    ab = {"M": 2500, "N": 7000, "K": 3000}
    t = [KernelModelMeasurer("matmul", ab, H200_MEASURED_L2, params=p).measure(
        cfg(128, 64, 32, 4, 4)).metrics for p in (P, GpuModelParams(scalar_b_extra_regs=0.0))]
    assert t[0]["blocks_per_sm"] == t[1]["blocks_per_sm"] == 3.0
    assert t[0]["time_s"] == t[1]["time_s"]
