"""The library's analytic GPU models, registered by name in :data:`GPU_MODELS`.

A GPU model is ``model(measurer, config, cfg) -> MeasureResult``: it reads
the problem shape, dtype, hardware and parameters from the
:class:`~autotile.measure.KernelModelMeasurer` and one config (``cfg`` as a
dict). A :class:`~autotile.kernels.KernelSpec` names its model; the measurer
looks it up here and never branches on a kernel's name.

* ``"tile_matmul"``: L2 traffic of the probed program order
  (:func:`matmul_tile_schedule`) and eqs. 1-9 of docs/gpu_model.md;
  ``"tile_matmul_tma"`` the same for operands loaded through tensor descriptors;
* ``"row_softmax"``: a row-wise kernel that keeps its rows in registers;
* ``"flash_attention_io"``: flash attention's IO formula;
* ``"records"`` (:mod:`._records_model`): any kernel, from a reduced
  interpreter run.
"""

from __future__ import annotations

import math
from typing import Any

from autotile.kernels import io_flash, matmul_access
from autotile.measure._result import MeasureResult
from autotile.measure.gpu._l2sim import L2Stats, simulate_l2
from autotile.measure.gpu._matmul_schedule import matmul_tile_schedule
from autotile.measure.gpu._time_model import (
    estimate_time,
    matmul_efficiency,
    matmul_scalar_regs_per_thread,
    matmul_smem_bytes,
    matmul_smem_step_bytes,
    occupancy,
)

__all__ = ["tile_matmul", "tile_matmul_tma", "row_softmax", "flash_attention_io"]


def _ok(m: Any, config: Any, metrics: dict[str, float]) -> MeasureResult:
    out: MeasureResult = m._ok(config, metrics)
    return out


def _infeasible(m: Any, config: Any, reason: str) -> MeasureResult:
    out: MeasureResult = m._infeasible(config, reason)
    return out


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def tile_matmul(self: Any, config: Any, c: dict[str, Any]) -> MeasureResult:
    """Eqs. 1-9 for a tiled matmul: L2 traffic of the probed program order (``"tile_matmul"``).

    Reads ``M, N, K`` from the shape and ``BLOCK_M, BLOCK_N, BLOCK_K,
    GROUP_M, num_warps, num_stages`` (and ``NUM_SMS`` for a persistent kernel)
    from the config; see docs/gpu_model.md. The operands are loaded through
    pointers, as :func:`~autotile.kernels.matmul_kernel` does: a tile whose
    leading stride or bound is not a multiple of 16 is loaded with scalar,
    unpipelined loads (:func:`~autotile.kernels.matmul_access`; eqs. 1, 2, 5d).
    """
    return _tile_matmul(self, config, c, descriptors=False)


def tile_matmul_tma(self: Any, config: Any, c: dict[str, Any]) -> MeasureResult:
    """:func:`tile_matmul` for a kernel that loads and stores through tensor descriptors.

    TMA copies need only 16-byte aligned strides (the descriptor kernel's
    launcher checks them), so every tile is pipelined (``"tile_matmul_tma"``).
    """
    return _tile_matmul(self, config, c, descriptors=True)


def _tile_matmul(self: Any, config: Any, c: dict[str, Any], *, descriptors: bool
                 ) -> MeasureResult:
    hw, p, isz = self.hardware, self.params, self._itemsize
    M, N, K = self.shape["M"], self.shape["N"], self.shape["K"]
    bm, bn, bk = c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"]
    nw, ns = c["num_warps"], c["num_stages"]
    # a descriptor kernel is modelled as aligned operands (TMA needs 16-byte strides only)
    acc = matmul_access(M, 16, 16, isz) if descriptors else matmul_access(M, N, K, isz)
    n_a, n_b = acc.n_buffers(ns)
    scalar_a = 0 if acc.a.is_async else bm * bk
    scalar_b = 0 if acc.b.is_async else bk * bn
    scalar_out = bm * bn if acc.c.vector_elems == 1 else 0
    smem = matmul_smem_bytes(bm, bn, bk, ns, isz, a_buffers=n_a, b_buffers=n_b)
    # eq. 2: the larger of the phases of A's and B's values and addresses
    regs = matmul_scalar_regs_per_thread(bm, bn, nw, p, scalar_a_elems=scalar_a,
                                         scalar_b_elems=scalar_b,
                                         max_regs_per_thread=hw.max_regs_per_thread)
    occ = occupancy(hw, num_warps=nw, smem_bytes=smem, regs_per_thread=regs)
    if occ.reason is not None:
        return _infeasible(self, config, occ.reason)
    n_conc = hw.n_sms * occ.blocks_per_sm
    npm, npn, nk = _cdiv(M, bm), _cdiv(N, bn), _cdiv(K, bk)
    persistent = c.get("NUM_SMS")
    n_tiles = npm * npn
    n_probe = n_tiles if persistent else min(n_tiles, self.max_probe_programs)
    k_merge = max(1, min(nk, math.ceil(2 * n_probe * nk / self.max_simulated_loads)))
    sched, n_prog = matmul_tile_schedule(
        M, N, K, bm, bn, bk, c["GROUP_M"], itemsize=isz, NUM_SMS=persistent,
        k_merge=k_merge, max_probe_programs=self.max_probe_programs)
    if persistent and n_prog > n_conc:
        return _infeasible(self,
            config, f"NUM_SMS={persistent} programs exceed the {n_conc} resident "
            f"programs (a persistent kernel needs all of its programs resident)")
    st: L2Stats = simulate_l2(sched, l2_bytes=hw.l2_bytes, n_concurrent=n_conc,
                              total_programs=None if persistent else n_prog,
                              model=self.l2_model, n_sms=hw.n_sms, k_merge=k_merge)
    hbm = st.hbm_read_bytes + (st.hbm_write_bytes if p.count_writes else 0.0)
    eff = matmul_efficiency(bm, bn, bk, nw, p)
    flops_tile = 2.0 * bm * bn * nk * bk
    if persistent:  # a persistent program does ceil(n_tiles / n_prog) tiles
        flops_prog, n_units = flops_tile * _cdiv(n_tiles, n_prog), n_prog
        n_steps = nk * _cdiv(n_tiles, n_prog)
    else:
        flops_prog, n_units, n_steps = flops_tile, n_prog, nk
    est = estimate_time(hw, p, flops_per_program=flops_prog, n_programs=n_units,
                        hbm_bytes=hbm, efficiency=eff, blocks_per_sm=occ.blocks_per_sm,
                        num_stages=ns, dtype=self.dtype, n_steps_per_program=n_steps,
                        step_bytes=float((bm + bn) * bk * isz),
                        smem_step_bytes=matmul_smem_step_bytes(bm, bn, bk, nw, isz),
                        scalar_step_elems=p.scalar_a_weight * scalar_a + scalar_b,
                        scalar_epilogue_elems=float(scalar_out * (n_steps // nk)),
                        tail_rate_exponent=p.tail_rate_exponent)
    return _ok(self, config, {
        "time_s": est.time_s, "tflops": 2.0 * M * N * K / est.time_s / 1e12,
        "hbm_bytes": hbm, "hbm_read_bytes": st.hbm_read_bytes,
        "l2_hit_rate": st.l2_hit_rate, "compute_s": est.compute_s,
        "memory_s": est.memory_s, "occupancy": occ.occupancy,
        "bound": 0.0 if est.bound == "compute" else 1.0,
        "blocks_per_sm": float(occ.blocks_per_sm),
        "n_waves": float(_cdiv(n_units, n_conc)), "k_merge": float(k_merge)})



#: ALU ops per element of a row in the fused softmax (``softmax_kernel``): the row
#: max, the subtraction, the ``log2 e`` factor of ``exp2``, the row sum and the
#: division (the kernel's 5 FLOPs an element); and its block reductions (max, sum).
#: Counted from the kernel source, not fitted.
ROW_ALU_OPS = 5
ROW_REDUCTIONS = 2
#: Exponent of the soft maximum of the fused softmax's bounds: 4, the records model's
#: value up to model v11. The records model's moved to 6 at v12 on the records checks'
#: timings (docs/gpu_model.md section 4.1); this model was not rechecked with it.
ROW_SOFT_MAX_EXPONENT = 4.0
#: Session 12, after the v7 kernels run: rows whose length ``N`` is not a multiple of 16
#: (Triton's divisibility-by-16 specialisation of the row stride fails, so the rows load
#: and store element-wise) with a block of 16384 elements ran 1.2-1.5x slower with 8, 16
#: and 32 warps than with 4 on the H200 (6144 x 9000, 2816 x 9500, 3200 x 10500,
#: 1152 x 13000), while 16384-element rows (aligned) ran best with 16-32 warps. No
#: mechanism was found; the model charges such a launch an extra bound of
#: ``rows / n_sms * num_warps * BLOCK * min(1, BLOCK / ROW_UNALIGNED_BLOCK_CAP) **
#: ROW_UNALIGNED_BLOCK_EXPONENT * ROW_UNALIGNED_WARP_ELEM_S`` seconds (it joins compute,
#: memory and latency in the soft maximum). Fitted, not sourced: form and constants
#: chosen on the 24 fp32 softmax cases of the v1-v7 kernels runs and
#: ``h200_softmax.csv`` (in-sample), exponent in 1-4 and constant in 2e-12-3e-11 s,
#: the widest passing band's middle; left out one case or one run at a time the
#: choice is the same (``benchmarks/h200/softmax_unaligned_check.py``,
#: docs/gpu_model.md section 4.2). Session 13 (the v8 kernels run): an unaligned row
#: with a 32768-element block (1536 x 21000) timed like an aligned one (1536 x 32768 in
#: v3: 32 warps best, 4 and 8 warps 1.2-1.5x slower), so the bound applies up to
#: ``ROW_UNALIGNED_BLOCK_CAP`` only.
ROW_UNALIGNED_WARP_ELEM_S = 1.2e-11
ROW_UNALIGNED_BLOCK_EXPONENT = 4.0
#: The largest block (elements) the unaligned bound applies to: the unaligned pattern
#: was timed at blocks of 4096-16384, and not at 32768 (session 13, v8 run).
ROW_UNALIGNED_BLOCK_CAP = 16384
#: Triton specialises an integer argument divisible by this value (the row stride).
ROW_STRIDE_DIVISOR = 16


def row_softmax(self: Any, config: Any, c: dict[str, Any]) -> MeasureResult:
    """A row-wise kernel that holds its rows in registers (``"row_softmax"``).

    Reads ``M, N`` from the shape and ``num_warps, ROWS_PER_PROGRAM`` from the
    config: one read of the input, one float32 write, ``5 N`` FLOPs a row.
    Registers as the records model counts them (``REG_FLOOR_PER_THREAD``,
    ``REGS_PER_LIVE_WORD`` per float32 element a thread holds); past the cap
    Triton spills (the records model's factor ``(need / cap) ** 2``) instead of
    refusing. A program loads its whole rows at once, so an SM keeps
    ``blocks_per_sm`` programs' rows in flight and, by Little's law, HBM
    delivers at most ``n_sms * blocks_per_sm * row_bytes / latency``, the
    latency being one program's (``HBM_LATENCY_S + PROGRAM_LATENCY_S``):
    many warps per row leave few programs resident (64 warps an SM). After
    its load a program's chain waits for its two block reductions
    (``reduce_latency_s(num_warps)``) and issues its instructions, one warp
    instruction a cycle (``ROW_ALU_OPS`` ALU ops at ``ALU_CYCLES_PER_WARP_OP``
    and one exponential at ``SFU_CYCLES_PER_WARP_OP`` per element of the
    padded row, over ``32 num_warps`` threads): ``latency_s = n_programs /
    (n_sms blocks_per_sm) * chain``, so few warps on a long row (a long
    per-thread chain) and many warps (slow reductions, few programs resident)
    both cost. When ``N`` is not a multiple of ``ROW_STRIDE_DIVISOR`` (Triton
    loads the rows element-wise) and ``BLOCK <= ROW_UNALIGNED_BLOCK_CAP``, a fourth
    bound, ``M / n_sms * num_warps * BLOCK * (BLOCK / ROW_UNALIGNED_BLOCK_CAP) **
    ROW_UNALIGNED_BLOCK_EXPONENT * ROW_UNALIGNED_WARP_ELEM_S`` (fitted on the H200,
    no mechanism), charges many warps on large blocks. Time: the soft maximum (exponent
    ``ROW_SOFT_MAX_EXPONENT``) of compute, memory, latency and that bound,
    times the spill factor, plus the launch overhead.
    """
    from autotile.measure.gpu._records_model import (
        ALU_CYCLES_PER_WARP_OP,
        HBM_LATENCY_S,
        PROGRAM_LATENCY_S,
        REG_FLOOR_PER_THREAD,
        REGS_PER_LIVE_WORD,
        SFU_CYCLES_PER_WARP_OP,
        reduce_latency_s,
        soft_max,
    )

    hw, p, isz = self.hardware, self.params, self._itemsize
    M, N = self.shape["M"], self.shape["N"]
    nw, rows = c["num_warps"], c["ROWS_PER_PROGRAM"]
    block = 1 << max(0, (N - 1).bit_length())
    words = math.ceil(block * rows / (32 * nw))
    regs_need = max(REG_FLOOR_PER_THREAD, math.ceil(REGS_PER_LIVE_WORD * words))
    regs_cap = min(hw.max_regs_per_thread, hw.regs_per_sm // (32 * nw) // 8 * 8)
    regs = min(-(-regs_need // 8) * 8, regs_cap)
    occ = occupancy(hw, num_warps=nw, smem_bytes=0, regs_per_thread=regs)
    if occ.reason is not None:
        return _infeasible(self, config, occ.reason)
    n_prog = _cdiv(M, rows)
    read, write = M * N * isz, M * N * 4  # the fused kernel writes float32
    hbm = read + (write if p.count_writes else 0)
    lat = p.pipeline_latency_s if p.pipeline_latency_s > 0 else HBM_LATENCY_S
    bw_little = hw.n_sms * occ.blocks_per_sm * rows * N * isz / (lat + PROGRAM_LATENCY_S)
    est = estimate_time(hw, p, flops_per_program=5.0 * N * rows, n_programs=n_prog,
                        hbm_bytes=hbm, efficiency=1.0, blocks_per_sm=occ.blocks_per_sm,
                        num_stages=1, dtype="float32")
    memory_s = hbm / min(hw.hbm_bytes_per_s * p.bandwidth_efficiency, bw_little)
    # after its load, a program's chain (as the records model's, docs/gpu_model.md 4.1)
    # waits for its two block reductions (max, sum) and issues its own instructions, one
    # warp instruction a cycle: every element of the padded row takes ROW_ALU_OPS ALU ops
    # and one exponential; an SM runs blocks_per_sm programs at once
    issue_s = block * rows * (ROW_ALU_OPS * ALU_CYCLES_PER_WARP_OP
                              + SFU_CYCLES_PER_WARP_OP) / (32 * nw) / hw.clock_hz
    chain_s = ROW_REDUCTIONS * reduce_latency_s(nw) + issue_s
    latency_s = n_prog / float(hw.n_sms * occ.blocks_per_sm) * chain_s
    # rows that Triton cannot prove 16-byte aligned (N not a multiple of 16) with large
    # blocks up to ROW_UNALIGNED_BLOCK_CAP: the extra bound of ROW_UNALIGNED_WARP_ELEM_S
    # (fitted, no mechanism found)
    unaligned_s = 0.0
    if N % ROW_STRIDE_DIVISOR and block <= ROW_UNALIGNED_BLOCK_CAP:
        unaligned_s = (M / float(hw.n_sms) * nw * block * ROW_UNALIGNED_WARP_ELEM_S
                       * (block / ROW_UNALIGNED_BLOCK_CAP) ** ROW_UNALIGNED_BLOCK_EXPONENT)
    spill = (regs_need / regs_cap) ** 2 if regs_need > regs_cap else 1.0
    t = soft_max((est.compute_s, memory_s, latency_s, unaligned_s),
                 ROW_SOFT_MAX_EXPONENT) * spill + hw.launch_overhead_s
    return _ok(self, config, {
        "time_s": t, "tflops": 5.0 * M * N / t / 1e12,
        "hbm_bytes": float(hbm), "hbm_read_bytes": float(read), "l2_hit_rate": 0.0,
        "compute_s": est.compute_s, "memory_s": memory_s, "latency_s": latency_s,
        "unaligned_s": unaligned_s,
        "occupancy": occ.occupancy, "bound": 0.0 if est.compute_s >= memory_s else 1.0,
        "blocks_per_sm": float(occ.blocks_per_sm), "spill_factor": spill,
        "regs_per_thread": float(regs_need),
        "n_waves": float(_cdiv(n_prog, hw.n_sms * occ.blocks_per_sm)), "k_merge": 1.0})



#: ALU lane-ops per score element of one key step of :func:`attn_fwd_kernel`: scale,
#: mask, row max, subtract, the ``log2 e`` factor of ``exp`` (ex2), row sum and the
#: fp16 conversion of ``p``; and per accumulator element (the ``alpha`` rescale).
#: Counted from the kernel source, not fitted.
ATTN_ALU_OPS_PER_SCORE = 7
ATTN_ALU_OPS_PER_ACC = 1
#: Rows of a query tile that one warp's share of a Hopper ``wgmma`` covers: the
#: instruction is m64 per warp group of 4 warps (PTX ISA, "wgmma.mma_async"), 16 rows
#: per warp.
ATTN_ROWS_PER_WARP = 16
#: Latency of one key step's K and V tile loads (issue to data in shared memory),
#: seconds, when ``params.pipeline_latency_s`` is 0: the matmul K-step latency fitted
#: on the H200 (model v5, ``H200_FITTED_PARAMS.pipeline_latency_s``), reused here, not
#: fitted on attention.
ATTN_STEP_LATENCY_S = 8.0e-7


def flash_attention_io(self: Any, config: Any, c: dict[str, Any]) -> MeasureResult:
    """Flash attention: SM pipes in sequence, registers, latency (``"flash_attention_io"``).

    Reads ``N, d`` (and ``heads``) from the shape and ``BLOCK_M, BLOCK_N,
    num_warps, num_stages`` from the config; docs/gpu_model.md, "Flash attention".
    Per key step a program runs ``4 BLOCK_M BLOCK_N d`` tensor FLOPs,
    ``BLOCK_M BLOCK_N`` exponentials (SFU) and
    ``7 BLOCK_M BLOCK_N + BLOCK_M d`` ALU lane-ops; the SM runs them one after
    another (the softmax waits for ``Q K^T`` and the second ``tl.dot`` for the
    softmax), and the busiest SM runs ``ceil(n_programs / n_sms)`` programs.
    Each step also waits for its K and V loads when ``num_stages - 1`` steps
    cannot cover the step latency (``pipeline_latency_s``, else
    :data:`ATTN_STEP_LATENCY_S`), shared by the resident programs. The
    result is multiplied by ``max(r, 1 / r)`` for ``r = BLOCK_M / (16
    num_warps)`` a warp's share of wgmma's 16 rows, by ``1 + 1 / b`` for ``b``
    resident blocks per SM, and by the records model's spill factor when the
    accumulator, scores, ``p`` and ``q`` need more than 255 registers a thread.
    HBM bytes: Q, K, V and O once when the K and V of the heads in flight fit
    the L2's reuse share (``L2_REUSE_FRACTION``; a head's query blocks run one
    after another and re-read K and V from L2), else Dao et al.'s IO count
    (2022, Thm. 2).
    """
    from autotile.measure.gpu._records_model import (
        CUDA_CORE_LANES_PER_SM,
        L2_REUSE_FRACTION,
        REG_FLOOR_PER_THREAD,
        SFU_LANES_PER_SM,
    )

    hw, p, isz = self.hardware, self.params, self._itemsize
    n, d = self.shape["N"], self.shape["d"]
    heads = self.shape.get("heads", 1)
    bm, bn, nw, ns = c["BLOCK_M"], c["BLOCK_N"], c["num_warps"], c["num_stages"]
    smem = bm * d * isz + ns * 2 * bn * d * isz  # Q once, K and V per stage
    # fp32 accumulator and scores, fp16 p and q, in 4-byte registers per thread
    words = (4 * bm * d + 4 * bm * bn + 2 * bm * bn + 2 * bm * d) / 4.0
    regs_need = math.ceil(words / (32 * nw)) + REG_FLOOR_PER_THREAD
    regs_cap = min(hw.max_regs_per_thread, hw.regs_per_sm // (32 * nw) // 8 * 8)
    regs = min(-(-regs_need // 8) * 8, regs_cap)
    occ = occupancy(hw, num_warps=nw, smem_bytes=smem, regs_per_thread=regs)
    if occ.reason is not None:
        return _infeasible(self, config, occ.reason)
    n_prog = _cdiv(n, bm) * heads
    n_steps = _cdiv(n, bn)
    # K and V of the heads in flight stay in L2 when they fit its reuse share: the
    # programs of a head are consecutive (grid axis 0), so its query blocks re-read K
    # and V from L2, and HBM sees Q, K, V and O once; else Dao et al.'s IO count
    q_blocks = _cdiv(n, bm)
    heads_in_flight = min(heads, _cdiv(hw.n_sms * occ.blocks_per_sm, q_blocks) + 1)
    if heads_in_flight * 2 * n * d * isz <= hw.l2_bytes * L2_REUSE_FRACTION:
        hbm = float(heads * (4 * n * d * isz + 4 * n))
    else:
        hbm = float(io_flash(n, d, bm, isz, block_n=bn, n_heads=heads))
    clock = hw.clock_hz
    tc_s = 4.0 * bm * bn * d / (hw.tensor_flops_per_s(self.dtype) / hw.n_sms
                               * p.peak_efficiency)
    sfu_s = bm * bn / (SFU_LANES_PER_SM * clock)
    alu_s = (ATTN_ALU_OPS_PER_SCORE * bm * bn + ATTN_ALU_OPS_PER_ACC * bm * d) / (
        CUDA_CORE_LANES_PER_SM * clock)
    step_s = tc_s + sfu_s + alu_s
    rounds = _cdiv(n_prog, hw.n_sms)
    resident = min(occ.blocks_per_sm, rounds)
    lat = p.pipeline_latency_s if p.pipeline_latency_s > 0 else ATTN_STEP_LATENCY_S
    step_s += max(0.0, lat - (ns - 1) * step_s) / resident
    compute_s = rounds * n_steps * step_s
    # a warp's rows off the wgmma's 16, either way: more repeat the m64 instruction and
    # hold twice the accumulator; fewer split the key columns between warps, so each
    # row max and sum of the online softmax crosses warps through shared memory
    rows_per_warp = bm / (ATTN_ROWS_PER_WARP * nw)
    compute_s *= max(rows_per_warp, 1.0 / rows_per_warp)
    # a block's GEMMs and softmax run in turn; other resident blocks fill the gaps
    compute_s *= 1.0 + 1.0 / occ.blocks_per_sm
    spill = (regs_need / regs_cap) ** 2 if regs_need > regs_cap else 1.0
    compute_s *= spill
    memory_s = hbm / (hw.hbm_bytes_per_s * p.bandwidth_efficiency)
    t = max(compute_s, memory_s) + hw.launch_overhead_s
    return _ok(self, config, {
        "time_s": t, "tflops": 4.0 * n * n * d * heads / t / 1e12,
        "hbm_bytes": hbm, "hbm_read_bytes": hbm, "l2_hit_rate": 0.0,
        "compute_s": compute_s, "memory_s": memory_s,
        "occupancy": occ.occupancy, "bound": 0.0 if compute_s >= memory_s else 1.0,
        "blocks_per_sm": float(occ.blocks_per_sm), "spill_factor": spill,
        "regs_per_thread": float(regs_need),
        "n_waves": float(_cdiv(n_prog, hw.n_sms * occ.blocks_per_sm)), "k_merge": 1.0})
