"""Analytic GPU time model: occupancy, tensor-core efficiency, waves, roofline with overlap.

The whole model, with every assumption, is written out in ``docs/gpu_model.md``;
the formulas here carry the equation numbers used there.

References
----------
.. [1] S. Williams, A. Waterman, D. Patterson, "Roofline: An Insightful Visual
   Performance Model for Multicore Architectures", CACM 52(4), 2009.
.. [2] NVIDIA, "Matrix Multiplication Background User's Guide" (Deep Learning
   Performance docs), §"Wave Quantization" and §"Tile Quantization".
.. [3] NVIDIA, "CUDA C++ Programming Guide", §"Compute Capabilities" (cc 9.0
   limits; 1 KB of shared memory reserved per block) and the CUDA occupancy
   calculator (registers allocated per warp in units of 256).
.. [4] NVIDIA CUTLASS, "Efficient GEMM in CUDA" (docs/efficient_gemm.md):
   multistage shared-memory pipelines hold ``stages x (A tile + B tile)``;
   Triton's software pipeliner (``num_stages``) does the same.
.. [5] J. D. C. Little, "A Proof for the Queuing Formula: L = lambda W",
   Operations Research 9(3), 1961; V. Volkov, "Understanding Latency Hiding
   on GPUs", PhD thesis, UC Berkeley, 2016 (Little's law for GPU memory:
   bytes in flight = bandwidth x latency).
.. [6] Triton 3.x, ``lib/Dialect/TritonGPU/Transforms/Utility.cpp``
   (``mmaVersionToInstrShape``: the ``wgmma`` instruction shape ``m16 x n x k``
   per warp, ``n`` the largest of 256, 248, ..., 8 that divides ``BLOCK_N``
   and is at most ``BLOCK_N / max(num_warps / (BLOCK_M / 16), 1)``) and
   ``lib/Dialect/TritonGPU/Transforms/AccelerateMatmul.cpp``
   (``warpsPerTileV3``: warps start as ``[4, 1]``, one warpgroup, and double
   along M while ``BLOCK_M > 16 * warps_m``, so 8 warps split BLOCK_M over two
   warpgroups; ``warpsPerTileV2`` for ``mma.sync``); NVIDIA PTX ISA,
   §"Asynchronous Warpgroup Level Matrix Multiply-Accumulate"
   (``wgmma.mma_async`` ``m64nNk16``, ``N <= 256``, operands in shared memory).
.. [7] NVIDIA, "CUDA C++ Programming Guide", §"Compute Capability 5.x" /
   "Shared Memory" (kept by 6.x-9.0): 32 banks, each 32 bits wide per clock,
   i.e. 128 bytes per clock per SM; Z. Luo et al., "Benchmarking and Dissecting
   the Nvidia Hopper GPU Architecture", arXiv:2402.13499, 2024 (measured
   shared-memory throughput of Hopper close to 128 B/clk/SM).
.. [8] J. Choi, M. Dukhan, X. Liu, R. Vuduc, "Algorithmic time, energy, and
   power on candidate HPC compute building blocks", IPDPS 2014 (the power
   line: under a power cap a kernel takes at least ``(e_F W + e_D Q) /
   (P_cap - P_0)``); J. Choi et al., "A roofline model of energy", IPDPS 2013.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from autotile.errors import MeasureError
from autotile.measure.gpu._hardware import HardwareProfile

__all__ = [
    "GpuModelParams",
    "GpuEstimate",
    "Occupancy",
    "matmul_smem_bytes",
    "matmul_regs_per_thread",
    "matmul_scalar_regs_per_thread",
    "matmul_efficiency",
    "matmul_instr_n",
    "matmul_smem_step_bytes",
    "occupancy",
    "estimate_time",
]

#: Shared memory the CUDA runtime reserves per resident block on cc >= 8.0 [3].
RESERVED_SMEM_PER_BLOCK_BYTES = 1024
#: Register allocation granularity per thread (256 per warp / 32 threads) [3].
REG_ALLOC_UNIT = 8
#: Shared-memory bandwidth per SM and clock: 32 banks x 4 bytes [7].
SMEM_BYTES_PER_CLK_PER_SM = 128
#: ``R`` and ``L_u`` of eq. 5d, fitted on the H200 at 3000 x 5000 x 2000 fp16 (B loaded
#: with 2-byte scalar loads: N % 16 != 0) over tutorial 03's configs, least squares on
#: log time (docs/gpu_model.md, "Unvectorised operands"): R is 2.2 elements per clock
#: per SM at 1.83 GHz, 15x below the 32 load-store lanes of an SM (H100 whitepaper).
SCALAR_ELEMS_PER_S_PER_SM = 4.0e9
UNPIPELINED_LATENCY_S = 1.7e-6
#: ``w_A`` of eq. 5d: what one element of A loaded with scalar loads (K % 16 != 0) costs
#: relative to one of B, selected by leave-one-shape-out over the four H200 shapes with
#: unvectorised operands (docs/gpu_model.md, "Unvectorised operands"); the pair
#: 128x64x32 / 64x128x32 at 2500 x 7000 x 3000 (same programs and steps, A and B
#: swapped) alone gives 0.30.
SCALAR_A_WEIGHT = 0.3
#: Registers per element of a scalar-loaded A tile besides the one its load writes (eq. 2):
#: its address. For a load it cannot vectorise Triton's blocked layout puts the 32 lanes of
#: a warp along A's contiguous K (``BlockedEncodingAttr`` builder: lanes and warps fill the
#: fastest axis first), so each of a thread's A elements lies in another row, and a row's
#: offset ``((pid_m * BLOCK_M + i) % M) * K`` is not affine in ``i``: one 32-bit offset
#: register per element, held across the K loop (docs/gpu_model.md §3.7, "After v5"; no
#: SASS read). A scalar B's elements share one column and differ by multiples of ``N``.
SCALAR_A_EXTRA_REGS = 1.0
#: Registers per element of a scalar-loaded B tile besides the one its load writes (eq. 2):
#: its address. For B too Triton's layout of an unvectorised load puts the 32 lanes along
#: K (``order = [0, 1]`` in the TTGIR of the session-12 diagnostic, H200), so a thread's B
#: elements lie in distinct columns whose offsets ``(pid_n * BLOCK_N + j) % N`` are not
#: affine in ``j``. B's phase (values and addresses) joins eq. 2's maximum with A's instead
#: of adding to it: the compiled registers of 128x64x32 are 164 with only B scalar and 168
#: with A and B scalar (docs/gpu_model.md §3.7, "After the A-and-B diagnostic").
SCALAR_B_EXTRA_REGS = 1.0
#: At most this many of B's address registers a thread (eq. 2). Chosen on compiled
#: residency alone (H200, session 12 and 13 register diagnostics, 100 (shape, config)
#: pairs; any cap in 12-24 gives the same residency): without it 32x64x32 with 2 warps
#: (32 B elements a thread) would compile to 136 registers and 7 programs an SM; it
#: compiled to 128 and 8.
SCALAR_B_ADDRESS_REGS_CAP = 16.0
#: ``B_smem`` of eq. 5c: the shared-memory port of a Hopper SM, 128 B/clk [7], at the
#: 1.83 GHz clock of the H100 and H200 profiles' tensor peak (989.4e12 / (132 x 4096)), so
#: that the port and the tensor cores scale with the same clock under the power cap.
SMEM_PORT_BYTES_PER_S_PER_SM = SMEM_BYTES_PER_CLK_PER_SM * 1.83e9
#: SM clock of a compute-bound matmul under the H200's 700 W cap: the energy probe measured
#: 1,290-1,392 MHz (docs/gpu_model.md §3.5); 1.33 GHz is taken as its middle.
CAPPED_SM_CLOCK_HZ = 1.33e9
#: The default ``B_smem`` of eq. 5c since session 13 (after v7): the port's 128 B/clk [7] at
#: the clock under the power cap, 170 GB/s. Over the 50 H200 matmul shapes with tutorial-03
#: timings the measured efficiency of large launches follows shared-memory bytes per FLOP
#: (about 0.72 of the port bound at 1.83 GHz for every 4- and 8-warp tile), and this
#: value is selected by leave-one-shape-out among 1.83, 1.56 and 1.33 GHz
#: (docs/gpu_model.md §3.7, "After v7").
SMEM_PORT_CAPPED_BYTES_PER_S_PER_SM = SMEM_BYTES_PER_CLK_PER_SM * CAPPED_SM_CLOCK_HZ
#: ``c_mn`` of eq. 4 since session 13 (after v7): selected by leave-one-shape-out over the
#: 50 H200 matmul shapes on 16-32 together with the capped port (16 before; the H200
#: calibration ``H200_FITTED_PARAMS`` fits 36.9).
TILE_OVERHEAD_ELEMS = 24.0
#: ``g`` of the partial-wave term of eq. 5: a program of a partial wave after full waves
#: runs at ``(k / b) ** g`` of the rate of ``k / b`` of the SM; selected by leave-one-shape-
#: out over the 34 H200 matmul shapes on the grid 0, 0.25, 0.5, 0.75, 1 (every fold
#: picks 0.75; docs/gpu_model.md §3.7, "After v5").
TAIL_RATE_EXPONENT = 0.75
#: ``N`` of the ``wgmma`` shapes Triton may pick for 16-bit and fp32 operands,
#: largest first [6].
_WGMMA_N = tuple(range(256, 0, -8))


@dataclass(frozen=True)
class GpuModelParams:
    """Free parameters of the time model, to be calibrated on measured kernels.

    Parameters
    ----------
    peak_efficiency : float, default=0.85
        Fraction of the tensor-core peak reached by the best tile (eq. 4).
    tile_overhead_elems : float, default=TILE_OVERHEAD_ELEMS
        ``c_mn`` in the tile-shape factor ``1 / (1 + c_mn (1/BLOCK_M + 1/BLOCK_N))``
        (24 since session 13; 16 before).
    k_overhead_elems : float, default=8.0
        ``c_k`` in the K factor ``1 / (1 + c_k / BLOCK_K)``.
    warp_efficiency : tuple of (int, float)
        Default ``((1, 0.3), (2, 0.55), (4, 0.9), (8, 1.0), (16, 0.95))``.
        Factor per ``num_warps`` (4 warps = one Hopper warpgroup; fewer
        cannot issue ``wgmma``).
    mma_fallback_efficiency : float, default=0.6
        Extra factor when ``BLOCK_M < 16 * num_warps`` (too few rows for the
        warps' ``wgmma`` tiles, so Triton falls back to ``mma.sync``).
    bandwidth_efficiency : float, default=0.9
        Fraction of the HBM peak a streaming kernel reaches.
    overlap_decay : float, default=0.35
        ``d`` in the memory/compute overlap ``o = 1 - d ** (num_stages * blocks_per_sm - 1)``.
    reg_base_per_thread : int, default=40
        Registers per thread besides the accumulator (addresses, loop state,
        operand fragments).
    count_writes : bool, default=True
        Whether stores count towards ``memory_s`` (the seed's traffic numbers
        are reads only; a real kernel also writes C).
    pipeline_latency_s : float, default=0.0
        ``L`` in the software-pipeline term (eq. 5b): seconds from issuing
        one K step's operand loads to their arrival in shared memory, under
        load. 0 switches the latency part off.
    sm_load_bytes_per_s : float, default=inf
        ``B_sm`` in eq. 5b: operand bytes per second one SM can load from
        L2 into shared memory. ``inf`` switches the bandwidth part off.
    smem_bytes_per_s_per_sm : float, default=SMEM_PORT_CAPPED_BYTES_PER_S_PER_SM
        ``B_smem`` in eq. 5c: shared-memory bytes per second one SM serves
        (tile writes plus the tensor-core operand reads of
        :func:`matmul_smem_step_bytes`); the default is the hardware port,
        128 B/clk [7], at the 1.33 GHz an H200 SM holds under its power cap
        (170 GB/s; 1.83 GHz, the clock of the profiles' tensor peak, 234 GB/s,
        before session 13's change after v7). ``inf`` switches eq. 5c off.
    smem_overlap_norm : float, default=inf
        ``q`` in eq. 5c': the tensor-core time ``c`` and the shared-memory
        port time ``s`` combine as ``(c**q + s**q) ** (1/q)``, a smooth
        maximum: ``inf`` is ``max(c, s)`` (the port fully hidden behind the
        tensor cores until it is the slower of the two), 1 their sum. A
        ``wgmma`` reads its operands from shared memory while it runs, so the
        two overlap only in part near the crossover. Must be ``>= 1``.
    power_cap_s_per_byte : float, default=0.0
        ``b`` in the power-cap term (eq. 9), seconds per byte of HBM
        traffic: ``b = e_D / (P_cap - P_0)``, the energy one HBM byte costs
        over the power the card may spend above its constant draw. A kernel
        held at its power cap spends that energy instead of compute, so its
        compute time grows by ``b`` per byte. 0 switches eq. 9 off.
    scalar_elems_per_s_per_sm : float, default=SCALAR_ELEMS_PER_S_PER_SM
        ``R`` in eq. 5d: elements per second one SM moves with scalar (one
        element per thread and instruction) loads and stores, which Triton
        emits for an operand it cannot vectorise
        (:func:`~autotile.kernels.matmul_access`), including their way into
        shared memory. ``inf`` switches eq. 5d off.
    clock_exponent : float, default=1/3
        ``a`` in eq. 5e: under the board power cap, a launch that keeps only
        a fraction ``u`` of the SMs' time busy (a wave-quantisation tail)
        runs its tensor work at ``min(u ** -a, max_clock_boost)`` times the
        clock of a full launch. 1/3 is the cube law of dynamic power (``P ~
        C V^2 f`` with ``V ~ f``, so ``n_busy f^3`` is held constant); 0
        switches eq. 5e off.
    max_clock_boost : float, default=1.47
        Upper bound of that factor: the H200's 1,980 MHz boost clock over
        the 1,290-1,392 MHz it holds under its 700 W cap in compute-bound
        matmuls (``docs/results/h200.md``, energy probe). Must be ``>= 1``.
    unpipelined_latency_s : float, default=UNPIPELINED_LATENCY_S
        ``L_u`` in eq. 5d: seconds per K step that a program with a
        synchronously loaded tile waits besides moving its elements: the
        load latency the pipeline no longer hides, the store to shared
        memory and the barrier before ``tl.dot``.
    scalar_a_weight : float, default=SCALAR_A_WEIGHT
        ``w_A`` in eq. 5d: the cost of one element of the A tile loaded with
        scalar loads relative to one of B (``e = w_A * BLOCK_M * BLOCK_K +
        BLOCK_K * BLOCK_N`` when both are scalar). Measured, not derived: at
        2500 x 7000 x 3000 on the H200, 128x64x32 (A 4096, B 2048 elements a
        step) ran 1.44x faster than 64x128x32 (A 2048, B 4096) with the same
        programs and steps, ``w_A`` = 0.30. Why A is cheaper (its tile is
        contiguous along K, the order ``wgmma`` reads A in) is an unchecked
        assumption. Must be ``>= 0``.
    scalar_a_extra_regs : float, default=SCALAR_A_EXTRA_REGS
        ``x``: registers per element of a scalar-loaded A tile on top of the
        one its load writes (eq. 2), counted after a scalar B tile's
        registers are free (``staged = e_A + max(e_B, x * e_A)``). The
        default 1 is one address register per element: the elements a
        thread loads lie in distinct rows of A, whose offsets
        ``((pid_m * BLOCK_M + i) % M) * K`` are not affine in ``i``
        (docs/gpu_model.md §3.7). 0 turns it off. Must be ``>= 0``.
    scalar_b_extra_regs : float, default=SCALAR_B_EXTRA_REGS
        ``x_B``: registers per element of a scalar-loaded B tile on top of the
        one its load writes (eq. 2), at most ``scalar_b_address_regs_cap`` a
        thread. B's phase ``e_B + min(x_B e_B, c)`` joins the maximum of
        eq. 2 (``staged = max(e_A + e_B, (1 + x) e_A, e_B + min(x_B e_B,
        c))``, per thread): the address overhead is taken once a launch, not
        once per scalar operand. The registers it adds never make a program
        infeasible (capped at ``max_regs_per_thread``). 0 turns it off. Must
        be ``>= 0``.
    scalar_b_address_regs_cap : float, default=SCALAR_B_ADDRESS_REGS_CAP
        ``c``: the most address registers a thread holds for B (eq. 2).
        ``inf`` means no cap. Must be ``>= 0``.
    tail_rate_exponent : float, default=TAIL_RATE_EXPONENT
        ``g`` of the partial-wave term of eq. 5 (matmul): after ``W >= 1``
        full waves of ``b`` resident programs per SM, the busiest SM runs
        its last ``k < b`` programs at ``(k / b) ** g`` of its full rate, so
        they take ``k * (b / k) ** g`` programs' time instead of ``k``. 0
        switches it off (a partial wave at the full rate), 1 keeps each
        program at its full-wave share. Fitted (docs/gpu_model.md §3.7).
        Must be ``>= 0``.

    Raises
    ------
    MeasureError
        If a number field is not a real number (a bool or a string is not)
        or is NaN; if an efficiency is outside ``(0, 1]``, ``overlap_decay``
        outside ``[0, 1)``, ``tile_overhead_elems``, ``k_overhead_elems``,
        ``pipeline_latency_s`` or ``power_cap_s_per_byte`` negative or not
        finite, ``sm_load_bytes_per_s`` or ``smem_bytes_per_s_per_sm`` not
        positive (``inf`` is allowed), ``reg_base_per_thread`` not an int
        ``>= 0``, ``count_writes`` not a bool, or ``warp_efficiency`` empty,
        with a warp count that is not a power of two ``>= 1``, or listing a
        warp count twice.
    """

    peak_efficiency: float = 0.85
    tile_overhead_elems: float = TILE_OVERHEAD_ELEMS
    k_overhead_elems: float = 8.0
    warp_efficiency: tuple[tuple[int, float], ...] = (
        (1, 0.3), (2, 0.55), (4, 0.9), (8, 1.0), (16, 0.95))
    mma_fallback_efficiency: float = 0.6
    bandwidth_efficiency: float = 0.9
    overlap_decay: float = 0.35
    reg_base_per_thread: int = 40
    count_writes: bool = True
    pipeline_latency_s: float = 0.0
    sm_load_bytes_per_s: float = math.inf
    smem_bytes_per_s_per_sm: float = SMEM_PORT_CAPPED_BYTES_PER_S_PER_SM
    smem_overlap_norm: float = math.inf
    power_cap_s_per_byte: float = 0.0
    scalar_elems_per_s_per_sm: float = SCALAR_ELEMS_PER_S_PER_SM
    unpipelined_latency_s: float = UNPIPELINED_LATENCY_S
    clock_exponent: float = 1.0 / 3.0
    max_clock_boost: float = 1.47
    scalar_a_weight: float = SCALAR_A_WEIGHT
    scalar_a_extra_regs: float = SCALAR_A_EXTRA_REGS
    scalar_b_extra_regs: float = SCALAR_B_EXTRA_REGS
    scalar_b_address_regs_cap: float = SCALAR_B_ADDRESS_REGS_CAP
    tail_rate_exponent: float = TAIL_RATE_EXPONENT

    def __post_init__(self) -> None:
        def real(name: str, value: Any, *, finite: bool = True,
                 rule: str = "a finite number") -> float:
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise MeasureError(f"{name} must be a real number, got {type(value).__name__} "
                                   f"{name}={value!r}")
            v = float(value)
            if math.isnan(v) or (finite and math.isinf(v)):
                what = rule if finite else "a number (inf allowed), not NaN"
                raise MeasureError(f"{name} must be {what}, got {name}={value!r}")
            return v

        for name in ("peak_efficiency", "mma_fallback_efficiency", "bandwidth_efficiency"):
            v = real(name, getattr(self, name))
            if not 0.0 < v <= 1.0:
                raise MeasureError(f"{name} must be in (0, 1], got {name}={v}")
            object.__setattr__(self, name, v)
        object.__setattr__(self, "warp_efficiency", self._check_warp_table(real))
        decay = real("overlap_decay", self.overlap_decay)
        if not 0.0 <= decay < 1.0:
            raise MeasureError(f"overlap_decay must be in [0, 1), got overlap_decay={decay}")
        object.__setattr__(self, "overlap_decay", decay)
        for name in ("tile_overhead_elems", "k_overhead_elems", "pipeline_latency_s",
                     "power_cap_s_per_byte", "unpipelined_latency_s", "clock_exponent",
                     "scalar_a_weight", "scalar_a_extra_regs", "scalar_b_extra_regs",
                     "tail_rate_exponent"):
            v = real(name, getattr(self, name), rule="finite and >= 0")
            if v < 0:
                rule = "finite and >= 0" if name == "power_cap_s_per_byte" else ">= 0"
                raise MeasureError(f"{name} must be {rule}, got {name}={v}")
            object.__setattr__(self, name, v)
        rb = self.reg_base_per_thread
        if isinstance(rb, bool) or not isinstance(rb, numbers.Integral) or rb < 0:
            raise MeasureError("reg_base_per_thread must be an int >= 0, got "
                               f"{type(rb).__name__} reg_base_per_thread={rb!r}")
        object.__setattr__(self, "reg_base_per_thread", int(rb))
        if not isinstance(self.count_writes, (bool, np.bool_)):
            raise MeasureError("count_writes must be a bool, got "
                               f"{type(self.count_writes).__name__} "
                               f"count_writes={self.count_writes!r}")
        object.__setattr__(self, "count_writes", bool(self.count_writes))
        for name in ("sm_load_bytes_per_s", "smem_bytes_per_s_per_sm",
                     "scalar_elems_per_s_per_sm"):
            v = real(name, getattr(self, name), finite=False)
            if not v > 0:
                raise MeasureError(f"{name} must be > 0 (inf switches it off), got {name}={v}")
            object.__setattr__(self, name, v)
        boost = real("max_clock_boost", self.max_clock_boost)
        if not boost >= 1.0:
            raise MeasureError(f"max_clock_boost must be >= 1, got max_clock_boost={boost}")
        object.__setattr__(self, "max_clock_boost", boost)
        q = real("smem_overlap_norm", self.smem_overlap_norm, finite=False)
        if not q >= 1.0:
            raise MeasureError("smem_overlap_norm must be >= 1 (inf is max), got "
                               f"smem_overlap_norm={q}")
        object.__setattr__(self, "smem_overlap_norm", q)
        cap = real("scalar_b_address_regs_cap", self.scalar_b_address_regs_cap, finite=False)
        if not cap >= 0.0:
            raise MeasureError("scalar_b_address_regs_cap must be >= 0 (inf: no cap), got "
                               f"scalar_b_address_regs_cap={cap}")
        object.__setattr__(self, "scalar_b_address_regs_cap", cap)

    def _check_warp_table(self, real: Any) -> tuple[tuple[int, float], ...]:
        """``warp_efficiency`` as a tuple of ``(int, float)`` pairs, checked."""
        table = self.warp_efficiency
        if isinstance(table, (str, bytes, Mapping)) or not isinstance(table, Iterable):
            raise MeasureError(
                "warp_efficiency must be a non-empty sequence of (num_warps, efficiency) "
                f"pairs, got {type(table).__name__} warp_efficiency={table!r}")
        out: list[tuple[int, float]] = []
        raw: Any
        for raw in table:
            pair = None if isinstance(raw, (str, bytes)) or not isinstance(
                raw, Iterable) else tuple(raw)
            if pair is None or len(pair) != 2:
                raise MeasureError(
                    "warp_efficiency must hold (num_warps, efficiency) pairs, got "
                    f"{raw!r} in warp_efficiency={table!r}")
            w, e = pair
            if isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 1 or (
                    w & (w - 1)):
                raise MeasureError(
                    "warp_efficiency's warp counts must be powers of two >= 1 (Triton's "
                    f"num_warps), got num_warps={w!r} in warp_efficiency={table!r}")
            name = f"warp_efficiency[{int(w)}]"
            ev = real(name, e)
            if not 0.0 < ev <= 1.0:
                raise MeasureError(f"{name} must be in (0, 1], got {name}={ev}")
            if any(int(w) == w0 for w0, _ in out):
                raise MeasureError(
                    f"warp_efficiency must list each warp count once, got num_warps={int(w)} "
                    f"twice in warp_efficiency={table!r}")
            out.append((int(w), ev))
        if not out:
            raise MeasureError(
                "warp_efficiency must list at least one (num_warps, efficiency) pair, got "
                f"warp_efficiency={table!r}")
        return tuple(out)

    def warp_factor(self, num_warps: int) -> float:
        """Efficiency factor of ``num_warps`` (nearest listed count below, else the first)."""
        table = dict(self.warp_efficiency)
        if num_warps in table:
            return table[num_warps]
        below = [w for w in table if w <= num_warps]
        return table[max(below)] if below else table[min(table)]

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-able dict; ``GpuModelParams(**d)`` inverts it."""
        d = asdict(self)
        d["warp_efficiency"] = [list(p) for p in self.warp_efficiency]
        return d


@dataclass(frozen=True)
class Occupancy:
    """Resident programs per SM and what limits them.

    Attributes
    ----------
    blocks_per_sm : int
        0 when the program cannot launch.
    limiter : str
        ``"blocks"``, ``"warps"``, ``"smem"`` or ``"registers"``.
    occupancy : float
        Resident warps over ``max_warps_per_sm``.
    reason : str or None
        Why the program cannot launch.
    """

    blocks_per_sm: int
    limiter: str
    occupancy: float
    reason: str | None = None


@dataclass(frozen=True)
class GpuEstimate:
    """Estimated time of one kernel launch.

    Attributes
    ----------
    time_s : float
        Kernel time, seconds (eq. 8).
    compute_s, memory_s : float
        Tensor-core time after wave quantization (eq. 5) and HBM time (eq. 6).
    overlap : float
        ``o`` of eq. 7 in ``[0, 1)``.
    efficiency : float
        Fraction of the tensor peak used by a running program (eq. 4).
    bound : {"compute", "memory"}
        The larger of ``compute_s`` and ``memory_s``.
    n_sm_rounds : int
        ``ceil(n_programs / n_sms)``: programs on the busiest SM.
    feed_s : float, default=0.0
        Time the busiest SM needs to get its programs' operands into shared
        memory through the software pipeline (eq. 5b); ``compute_s``
        includes it (it is the larger of the two). 0 when the term is off.
    smem_s : float, default=0.0
        Time the busiest SM's shared-memory port needs for its programs'
        tile writes and tensor-core operand reads (eq. 5c); ``compute_s``
        includes it. 0 when the term is off.
    power_s : float, default=0.0
        Power-capped time of eq. 9, ``compute_s + b * hbm_bytes``, seconds;
        ``time_s`` is at least this plus the launch overhead. 0 when the
        term is off.
    """

    time_s: float
    compute_s: float
    memory_s: float
    overlap: float
    efficiency: float
    bound: Literal["compute", "memory"]
    n_sm_rounds: int
    feed_s: float = 0.0
    smem_s: float = 0.0
    power_s: float = 0.0


def smooth_max(a: Any, b: Any, q: float) -> Any:
    """``(a**q + b**q) ** (1/q)`` for non-negative times: ``max(a, b)`` at ``q = inf`` (eq. 5c').

    Parameters
    ----------
    a, b : float or ndarray of float64
        Times, seconds (>= 0), broadcastable.
    q : float
        The norm, ``>= 1``: 1 adds the times, ``inf`` takes their maximum.

    Returns
    -------
    float or ndarray of float64
        Seconds, between ``max(a, b)`` and ``a + b``. Computed as ``m * ((a/m)**q +
        (b/m)**q) ** (1/q)`` with ``m = max(a, b)``, so large ``q`` does not overflow.
    """
    if math.isinf(q):
        return np.maximum(a, b)
    m = np.maximum(a, b)
    safe = np.where(m > 0, m, 1.0)
    return np.where(m > 0, m * ((a / safe) ** q + (b / safe) ** q) ** (1.0 / q), 0.0)


def matmul_smem_bytes(block_m: int, block_n: int, block_k: int, num_stages: int,
                      itemsize: int, *, a_buffers: int | None = None,
                      b_buffers: int | None = None) -> int:
    """Shared memory of a pipelined matmul program (eq. 1).

    ``(BLOCK_M * BLOCK_K * n_A + BLOCK_K * BLOCK_N * n_B) * itemsize`` bytes,
    ``n_A = n_B = num_stages`` by default. Triton keeps ``num_stages`` buffers
    of a tile whose loads it pipelines (async copies) and one buffer of a tile
    it loads synchronously (:func:`~autotile.kernels.matmul_access`: scalar
    2-byte loads are not pipelined).

    Parameters
    ----------
    block_m, block_n, block_k : int
        Tile, elements.
    num_stages : int
    itemsize : int
        Bytes per element.
    a_buffers, b_buffers : int, optional
        Buffers of the A and B tiles (default ``num_stages`` each).

    Returns
    -------
    int
        Bytes.

    References
    ----------
    CUTLASS "Efficient GEMM in CUDA" (multistage pipeline); Triton
    ``matmul`` tutorial (its ``num_stages`` buffers of the A and B tiles);
    Triton's ``OutOfResources`` messages on an H200: 294,912 B for 128x256x128
    with 3 stages (3 x (A + B)), 278,528 B for 256x64x128 with 4 stages at
    N = 5000 (4 x A + 1 x B).
    """
    n_a = int(num_stages) if a_buffers is None else int(a_buffers)
    n_b = int(num_stages) if b_buffers is None else int(b_buffers)
    return (block_m * block_k * n_a + block_k * block_n * n_b) * int(itemsize)


def matmul_regs_per_thread(block_m: int, block_n: int, num_warps: int,
                           params: GpuModelParams, staged_elems: float = 0) -> int:
    """Registers per thread of a matmul program (eq. 2).

    The fp32 accumulator ``BLOCK_M x BLOCK_N`` spread over ``num_warps * 32``
    threads plus ``reg_base_per_thread``, plus one register per element of a
    synchronously loaded tile that the thread holds between its scalar load
    and the store to shared memory (``staged_elems / (32 * num_warps)``; an
    async copy goes to shared memory without registers), rounded up to the
    allocation unit of 8 registers per thread (CUDA occupancy calculator).

    Parameters
    ----------
    block_m, block_n : int
    num_warps : int
    params : GpuModelParams
    staged_elems : float, default=0
        Elements per K step of the tiles loaded with scalar loads (e.g.
        ``BLOCK_K * BLOCK_N`` when B is; see ``scalar_a_extra_regs``).
    """
    acc = math.ceil(block_m * block_n / (32 * num_warps))
    staged = math.ceil(staged_elems / (32 * num_warps))
    regs = acc + staged + params.reg_base_per_thread
    return -(-regs // REG_ALLOC_UNIT) * REG_ALLOC_UNIT


def matmul_scalar_regs_per_thread(block_m: int, block_n: int, num_warps: int,
                                  params: GpuModelParams, *, scalar_a_elems: float = 0,
                                  scalar_b_elems: float = 0,
                                  max_regs_per_thread: int = 255) -> int:
    """Registers per thread of a matmul program with scalar-loaded operands (eq. 2).

    The tiles staged in registers per K step, over the program's ``32 * num_warps``
    threads, are the larger of three phases: both tiles' values ``e_A + e_B``; A's
    values and addresses ``(1 + x) e_A`` (``x = scalar_a_extra_regs``); B's values and
    at most ``c`` addresses a thread ``e_B + min(x_B e_B, 32 * num_warps * c)``
    (``x_B = scalar_b_extra_regs``, ``c = scalar_b_address_regs_cap``). The registers
    B's addresses add are capped at ``max_regs_per_thread``: they never make a program
    infeasible (an address can be recomputed; the H200 ran every such config at 255
    registers). Without scalar operands this is :func:`matmul_regs_per_thread`.

    Parameters
    ----------
    block_m, block_n : int
    num_warps : int
    params : GpuModelParams
    scalar_a_elems : float, default=0
        ``e_A``: elements of the A tile loaded with scalar loads per K step
        (``BLOCK_M * BLOCK_K``, or 0 when A is vectorised).
    scalar_b_elems : float, default=0
        ``e_B``: the same for B (``BLOCK_K * BLOCK_N`` or 0).
    max_regs_per_thread : int, default=255
        The hardware's limit (``HardwareProfile.max_regs_per_thread``).

    Returns
    -------
    int
        Registers per thread, a multiple of 8 (or ``max_regs_per_thread`` where B's
        addresses reach it).

    References
    ----------
    docs/gpu_model.md §3.7, "After v5" (A's addresses) and "After the A-and-B
    diagnostic" (B's, session 13).
    """
    staged = scalar_a_elems + max(float(scalar_b_elems),
                                  params.scalar_a_extra_regs * scalar_a_elems)
    regs = matmul_regs_per_thread(block_m, block_n, num_warps, params, staged_elems=staged)
    if scalar_b_elems > 0 and params.scalar_b_extra_regs > 0:
        phase_b = scalar_b_elems + min(params.scalar_b_extra_regs * scalar_b_elems,
                                       32 * num_warps * params.scalar_b_address_regs_cap)
        with_b = matmul_regs_per_thread(block_m, block_n, num_warps, params,
                                        staged_elems=max(staged, phase_b))
        regs = max(regs, min(with_b, max_regs_per_thread))
    return regs


def matmul_efficiency(block_m: int, block_n: int, block_k: int, num_warps: int,
                      params: GpuModelParams) -> float:
    """Fraction of the tensor-core peak a running matmul program reaches (eq. 4).

    ``peak_efficiency * 1/(1 + c_mn (1/BM + 1/BN)) * 1/(1 + c_k/BK) *
    warp_factor(num_warps)``, times ``mma_fallback_efficiency`` when
    ``BM < 16 * num_warps``. The tile factor is the arithmetic intensity of
    one tile step relative to its operand traffic (``BM*BN*BK`` FMAs over
    ``(BM + BN)*BK`` loads), the K factor the per-step loop overhead.

    References
    ----------
    NVIDIA "Matrix Multiplication Background User's Guide", §"Dimension
    Quantization Effects" and §"Tile size" (larger tiles reuse more and run
    closer to peak).
    """
    eff = params.peak_efficiency
    eff /= 1.0 + params.tile_overhead_elems * (1.0 / block_m + 1.0 / block_n)
    eff /= 1.0 + params.k_overhead_elems / block_k
    eff *= params.warp_factor(num_warps)
    if block_m < 16 * num_warps:
        eff *= params.mma_fallback_efficiency
    return eff


def _warps_per_tile_v2(block_m: int, block_n: int, num_warps: int) -> tuple[int, int]:
    """Triton's ``warpsPerTileV2`` for ``mma.sync`` m16n8: balance the repeats [6]."""
    warps = [1, 1]
    reps = [-(-block_m // 16), -(-block_n // 8)]
    while warps[0] * warps[1] < num_warps:
        if reps[0] >= reps[1]:
            warps[0] *= 2
            if reps[0] != 1:
                reps[0] //= 2
        else:
            warps[1] *= 2
            reps[1] = max(reps[1] // 2, 1)
    return warps[0], warps[1]


def matmul_instr_n(block_m: int, block_n: int, num_warps: int) -> int:
    """``N`` of the ``wgmma`` instruction Triton picks for a tile, 0 if it uses ``mma.sync``.

    Triton uses ``wgmma`` (MMAv3) when ``num_warps`` is a multiple of 4 and
    ``BLOCK_M % 64 == 0``, ``BLOCK_N % 8 == 0``; ``N`` is the largest of 256,
    248, ..., 8 that divides ``BLOCK_N`` and is at most
    ``BLOCK_N / max(num_warps // (BLOCK_M // 16), 1)``
    (``mmaVersionToInstrShape`` [6]). 128x256 with 8 warps gets
    ``m64n256k16``, 256x128 ``m64n128k16``.
    """
    if num_warps < 4 or num_warps % 4 or block_m % 64 or block_n % 8:
        return 0
    n_warps_n = max(num_warps // max(block_m // 16, 1), 1)
    max_n = max(block_n // n_warps_n, 8)
    return next(n for n in _WGMMA_N if block_n % n == 0 and n <= max_n)


def matmul_smem_step_bytes(block_m: int, block_n: int, block_k: int, num_warps: int,
                           itemsize: int) -> float:
    """Shared-memory bytes one K step of a matmul program moves (eq. 5c).

    The tile loads write ``(BM + BN) * BK`` elements. With ``wgmma``
    (``n = matmul_instr_n(...) > 0``) every ``m64nNk16`` instruction reads
    its A (64 x 16) and B (16 x n) operands from shared memory, and a step
    issues ``(BM / 64) * (BN / n) * (BK / 16)`` of them, so the reads are
    ``BM * BN * BK * (1/n + 1/64)`` elements: the warpgroups split BLOCK_M
    (``warpsPerTileV3`` [6]), and each re-reads B for every 64 rows. With
    ``mma.sync`` each of the ``w_m x w_n`` warps (``warpsPerTileV2`` [6])
    loads its rows of A and columns of B once: ``(w_n * BM + w_m * BN) * BK``.

    Parameters
    ----------
    block_m, block_n, block_k : int
        Tile, elements.
    num_warps : int
    itemsize : int
        Operand bytes per element.

    Returns
    -------
    float
        Bytes written and read in shared memory per K step.

    References
    ----------
    Triton ``mmaVersionToInstrShape``, ``warpsPerTileV3``/``V2`` and the PTX
    ISA ``wgmma.mma_async`` shapes [6].
    """
    writes = (block_m + block_n) * block_k
    n = matmul_instr_n(block_m, block_n, num_warps)
    if n:
        reads = block_m * block_n * block_k * (1.0 / n + 1.0 / 64)
    else:
        w_m, w_n = _warps_per_tile_v2(block_m, block_n, num_warps)
        reads = (w_n * block_m + w_m * block_n) * block_k
    return float((writes + reads) * itemsize)


def occupancy(hw: HardwareProfile, *, num_warps: int, smem_bytes: int,
              regs_per_thread: int) -> Occupancy:
    """Resident programs per SM from the cc 9.0 limits (eq. 3).

    ``min(max_blocks_per_sm, max_warps_per_sm // num_warps, smem_per_sm //
    (smem + 1 KB), regs_per_sm // (regs_per_thread * 32 * num_warps))``;
    infeasible (0) when one program alone exceeds a per-block limit.

    Parameters
    ----------
    hw : HardwareProfile
    num_warps : int
        Warps per program.
    smem_bytes : int
        Shared memory per program, bytes (without the 1 KB reserve).
    regs_per_thread : int
        Registers per thread.

    Returns
    -------
    Occupancy

    References
    ----------
    CUDA C++ Programming Guide, §"Compute Capabilities" (cc 9.0) and
    §"Occupancy Calculator".
    """
    threads = 32 * num_warps
    if smem_bytes > hw.smem_per_block_bytes:
        return Occupancy(0, "smem", 0.0,
                         f"shared memory per block {smem_bytes} B > "
                         f"smem_per_block_bytes={hw.smem_per_block_bytes} B")
    if regs_per_thread > hw.max_regs_per_thread:
        return Occupancy(0, "registers", 0.0,
                         f"registers per thread {regs_per_thread} > "
                         f"max_regs_per_thread={hw.max_regs_per_thread}")
    if num_warps > hw.max_warps_per_sm or threads > 1024:
        return Occupancy(0, "warps", 0.0, f"num_warps={num_warps} exceeds 1024 threads")
    limits = {
        "blocks": hw.max_blocks_per_sm,
        "warps": hw.max_warps_per_sm // num_warps,
        "smem": hw.smem_per_sm_bytes // (smem_bytes + RESERVED_SMEM_PER_BLOCK_BYTES),
        "registers": hw.regs_per_sm // (regs_per_thread * threads),
    }
    limiter = min(limits, key=lambda k: limits[k])
    b = limits[limiter]
    if b < 1:
        return Occupancy(0, limiter, 0.0, f"one program does not fit on an SM ({limiter})")
    return Occupancy(b, limiter, b * num_warps / hw.max_warps_per_sm)


def estimate_time(hw: HardwareProfile, params: GpuModelParams, *, flops_per_program: float,
                  n_programs: int, hbm_bytes: float, efficiency: float,
                  blocks_per_sm: int, num_stages: int, dtype: str = "float16",
                  n_steps_per_program: int = 0, step_bytes: float = 0.0,
                  smem_step_bytes: float = 0.0, scalar_step_elems: float = 0.0,
                  scalar_epilogue_elems: float = 0.0,
                  tail_rate_exponent: float = 0.0) -> GpuEstimate:
    """Kernel time from compute, operand feed, HBM traffic, waves and pipelining (eqs. 5-8).

    * compute (eq. 5): ``ceil(n_programs / n_sms) * flops_per_program /
      (peak / n_sms * efficiency)``: the busiest SM's programs at its share
      of the tensor peak (wave quantization over SMs);
    * partial wave (when ``tail_rate_exponent = g > 0``): with ``b =
      blocks_per_sm``, ``W`` full waves of ``n_sms * b`` programs and ``k =
      ceil(rest / n_sms) < b`` programs on the busiest SM after them (``W >=
      1``), ``compute_s`` counts ``W * b + k * (b / k) ** g`` programs instead
      of ``ceil(n_programs / n_sms)``: the SM runs a partial wave at ``(k /
      b) ** g`` of its full rate;
    * clock under the power cap (eq. 5e, when ``clock_exponent = a > 0``):
      with ``u = n_programs / (r * n_sms)`` the busy fraction of the SMs'
      time, ``compute_s`` is divided by ``min(u ** -a, max_clock_boost)``:
      the power a wave tail leaves unused raises the clock of the busy SMs
      (dynamic power ``~ n_busy * f^3``);
    * operand feed (eq. 5b, when ``n_steps_per_program > 0``): with
      ``r = ceil(n_programs / n_sms)``, ``b' = min(blocks_per_sm, r)``,
      ``x = step_bytes / sm_load_bytes_per_s`` and ``L = pipeline_latency_s``,
      ``feed_s = r * n_steps_per_program * max(x, (L + x) / (b' * max(num_stages - 1, 1)))``
      and ``compute_s = max(compute_s, feed_s)``. A K step can only refill a
      stage buffer after its previous use, so each program has
      ``num_stages - 1`` steps of loads in flight and the SM
      ``b' * (num_stages - 1)``; by Little's law [5] the SM then completes
      at most that many steps per load latency ``L + x``. With the defaults
      (``L = 0``, ``B_sm = inf``) ``feed_s = 0`` and eq. 5 is unchanged;
    * shared-memory port (eq. 5c, when ``n_steps_per_program > 0``):
      ``smem_s = r * n_steps_per_program * smem_step_bytes /
      smem_bytes_per_s_per_sm`` and ``compute_s = smooth_max(compute_s, smem_s,
      q)`` (eq. 5c', ``q = smem_overlap_norm``; ``max`` with the default ``inf``):
      the SM's programs share one shared-memory port [7]; 0 with the default
      ``B_smem = inf``;
    * unvectorised operands (eq. 5d, when ``scalar_step_elems > 0`` or
      ``scalar_epilogue_elems > 0``): with ``e`` the elements one program
      loads per K step with scalar loads, ``e_c`` the elements it stores so
      after the loop, ``R = scalar_elems_per_s_per_sm``, ``L_u =
      unpipelined_latency_s`` and ``c0`` the tensor time of eq. 5: the SM
      moves scalar elements at rate ``R``, ``scalar_s = r *
      (n_steps_per_program * e + e_c) / R``; and, when ``e > 0``, ``chain_s =
      ceil(n_programs / (n_sms * blocks_per_sm)) * (n_steps_per_program *
      (L_u + e / R) + c0 / r)``: such a tile has one shared-memory buffer and
      is not pipelined, so a program's steps run load, store to shared memory
      and ``tl.dot`` in turn, the resident programs overlap and the launch
      runs in waves of ``n_sms * blocks_per_sm`` such chains (wave
      quantization over resident programs). ``compute_s = max(compute_s,
      scalar_s, chain_s)``;
    * memory (eq. 6): ``hbm_bytes / (hbm_bytes_per_s * bandwidth_efficiency)``;
    * overlap (eq. 7): ``o = 1 - overlap_decay ** (num_stages * blocks_per_sm - 1)``;
    * time (eq. 8): ``max(c, m) + (1 - o) * min(c, m) + launch_overhead_s``:
      the roofline bound when fully pipelined, their sum with one stage and
      one resident program;
    * power cap (eq. 9, when ``power_cap_s_per_byte = b > 0``): ``time_s =
      max(time_s, c + b * hbm_bytes + launch_overhead_s)``. The power line
      of Choi et al. [8]: under a cap ``P_cap`` a kernel takes at least
      ``(e_F * W + e_D * Q) / (P_cap - P_0)``; the calibrated ``c`` plays the
      first part (the compute-bound configs it is fitted on run at the cap),
      ``b = e_D / (P_cap - P_0)`` the second. At the H200's 700 W cap the
      SM clock then drops as DRAM traffic grows (measured:
      ``docs/results/h200.md``, energy probe).

    Parameters
    ----------
    hw : HardwareProfile
    params : GpuModelParams
    flops_per_program : float
        FLOPs one program executes (padded tiles included).
    n_programs : int
        Programs launched.
    hbm_bytes : float
        HBM traffic, bytes.
    efficiency : float
        Fraction of the peak a running program reaches, in ``(0, 1]``.
    blocks_per_sm : int
        Resident programs per SM (>= 1).
    num_stages : int
        Software-pipeline depth (>= 1).
    dtype : str, default="float16"
        Operand dtype, selects the peak (:meth:`HardwareProfile.tensor_flops_per_s`).
    n_steps_per_program : int, default=0
        Software-pipelined loop steps per program (a matmul's
        ``cdiv(K, BLOCK_K)`` per tile); 0 switches eq. 5b off.
    step_bytes : float, default=0.0
        Operand bytes one step loads into shared memory (a matmul's
        ``(BLOCK_M + BLOCK_N) * BLOCK_K * itemsize``).
    smem_step_bytes : float, default=0.0
        Shared-memory bytes one step writes and reads
        (:func:`matmul_smem_step_bytes`), for eq. 5c.
    scalar_step_elems : float, default=0.0
        Elements one program loads per step with scalar loads (eq. 5d), e.g.
        ``BLOCK_K * BLOCK_N`` when Triton cannot vectorise B's loads.
    scalar_epilogue_elems : float, default=0.0
        Elements one program stores with scalar stores after its loop
        (eq. 5d), e.g. ``BLOCK_M * BLOCK_N`` when C's stores are not vectorised.
    tail_rate_exponent : float, default=0.0
        ``g`` of the partial-wave term (a matmul passes
        ``params.tail_rate_exponent``); 0 switches it off. Finite and ``>= 0``.

    Returns
    -------
    GpuEstimate

    Raises
    ------
    MeasureError
        If ``blocks_per_sm``, ``num_stages`` or ``n_programs`` is < 1, the
        efficiency is outside ``(0, 1]`` or ``tail_rate_exponent`` is negative,
        infinite or NaN.

    References
    ----------
    Williams et al., "Roofline", CACM 2009 (``max(compute, memory)``);
    NVIDIA "Matrix Multiplication Background User's Guide", §"Wave Quantization";
    Little 1961 and Volkov 2016 [5] (eq. 5b); CUDA Programming Guide
    shared-memory banks [7] (eq. 5c); CUTLASS "Efficient GEMM in
    CUDA", §"Software Pipelining" [4]; Choi et al. 2014 [8] (the power
    line, eq. 9).
    """
    if blocks_per_sm < 1 or num_stages < 1 or n_programs < 1:
        raise MeasureError(f"blocks_per_sm, num_stages and n_programs must be >= 1, got "
                           f"{blocks_per_sm}, {num_stages}, {n_programs}")
    if not 0.0 < efficiency <= 1.0:
        raise MeasureError(f"efficiency must be in (0, 1], got efficiency={efficiency}")
    if not 0.0 <= tail_rate_exponent < math.inf:  # also rejects NaN
        raise MeasureError(f"tail_rate_exponent must be finite and >= 0, got "
                           f"tail_rate_exponent={tail_rate_exponent!r}")
    rounds = -(-n_programs // hw.n_sms)
    peak_sm = hw.tensor_flops_per_s(dtype) / hw.n_sms
    compute_s = rounds * flops_per_program / (peak_sm * efficiency)
    if params.clock_exponent > 0:  # eq. 5e: a wave tail leaves power for a higher clock
        busy = n_programs / (rounds * hw.n_sms)
        compute_s /= min(busy ** -params.clock_exponent, params.max_clock_boost)
    tensor_s = compute_s  # eq. 5d's chains take one program's tensor time, tensor_s / rounds
    full, rest = divmod(n_programs, hw.n_sms * blocks_per_sm)
    k_tail = -(-rest // hw.n_sms)
    if tail_rate_exponent > 0 and full >= 1 and 0 < k_tail < blocks_per_sm:
        # a partial wave after full ones runs at (k / b) ** g of the SM's full rate
        units = full * blocks_per_sm + k_tail * (blocks_per_sm / k_tail) ** tail_rate_exponent
        compute_s *= units / rounds
    feed_s = 0.0
    if n_steps_per_program > 0:
        x = step_bytes / params.sm_load_bytes_per_s
        in_flight = min(blocks_per_sm, rounds) * max(num_stages - 1, 1)
        feed_s = rounds * n_steps_per_program * max(
            x, (params.pipeline_latency_s + x) / in_flight)
        compute_s = max(compute_s, feed_s)
    smem_s = 0.0
    if n_steps_per_program > 0 and math.isfinite(params.smem_bytes_per_s_per_sm):
        smem_s = rounds * n_steps_per_program * smem_step_bytes / params.smem_bytes_per_s_per_sm
        compute_s = float(smooth_max(compute_s, smem_s, params.smem_overlap_norm))
    rate = params.scalar_elems_per_s_per_sm
    if (scalar_step_elems > 0 or scalar_epilogue_elems > 0) and math.isfinite(rate):
        steps = max(int(n_steps_per_program), 1)
        scalar_s = rounds * (steps * scalar_step_elems + scalar_epilogue_elems) / rate
        compute_s = max(compute_s, scalar_s)
        if scalar_step_elems > 0:
            per_prog_s = (steps * (params.unpipelined_latency_s + scalar_step_elems / rate)
                          + tensor_s / rounds)
            # the chains run in waves of resident programs (co-resident chains overlap)
            chain_s = -(-n_programs // (hw.n_sms * blocks_per_sm)) * per_prog_s
            compute_s = max(compute_s, chain_s)
    memory_s = hbm_bytes / (hw.hbm_bytes_per_s * params.bandwidth_efficiency)
    o = 1.0 - params.overlap_decay ** (num_stages * blocks_per_sm - 1)
    t = max(compute_s, memory_s) + (1.0 - o) * min(compute_s, memory_s) + hw.launch_overhead_s
    power_s = 0.0
    if params.power_cap_s_per_byte > 0:
        power_s = compute_s + params.power_cap_s_per_byte * hbm_bytes
        t = max(t, power_s + hw.launch_overhead_s)
    return GpuEstimate(t, compute_s, memory_s, o, efficiency,
                       "compute" if compute_s >= memory_s else "memory", rounds, feed_s,
                       smem_s, power_s)
