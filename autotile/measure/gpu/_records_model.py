"""A GPU model for any kernel, from the interpreter's own records (``"records"``).

The seed's central idea (§0.4, §4.2-4.3) generalised: the interpreter
records every access and every block op each program makes, and the
simulators turn those records into traffic and time. For one config the
model runs a *window* of programs of each launch at the real shape (the first
:data:`WINDOW_PROGRAMS` programs plus the last one; inputs are zero pages, so
a real-size instance costs little memory) and reads, per program:

* bytes read and written per buffer, and a 128-byte-line trace in program
  order, which the L2 LRU simulator replays with the window's programs
  interleaved op by op (lockstep, the seed's model) in the L2 share of the
  window: ``l2_bytes * W / n_resident`` when the window holds fewer programs
  than are resident at once;
* ``tl.dot`` FLOPs (tensor cores), element-wise lane-ops (CUDA cores) and
  transcendental lane-ops (SFU);
* the largest block (registers) and the shared memory that dot operands
  (times ``num_stages``) and layout changes need;
* the number of programs, hence occupancy and waves.

Per-program quantities of the window are averaged and multiplied by the
launch's program count; HBM bytes likewise (``window misses * n_programs /
W``). Every assumption and constant is listed in docs/gpu_model.md, section
"The records model".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import autotile.lang as tl
from autotile.measure._result import MeasureResult
from autotile.measure.gpu._analytic import _infeasible, _ok
from autotile.measure.gpu._hardware import HardwareProfile
from autotile.measure.gpu._l2sim import simulate_l2_stream
from autotile.measure.gpu._time_model import GpuModelParams, occupancy

__all__ = ["records_model", "RecordsEstimate", "estimate_launch", "launch_features",
           "launch_time", "WINDOW_PROGRAMS",
           "CUDA_CORE_LANES_PER_SM", "SFU_LANES_PER_SM", "HBM_LATENCY_S", "L2_LATENCY_S",
           "PROGRAM_OVERHEAD_S", "PROGRAM_LATENCY_S", "L2_REUSE_FRACTION", "L2_SHARE_SPREAD",
           "REG_FLOOR_PER_THREAD", "REGS_PER_LIVE_WORD", "ALU_CYCLES_PER_WARP_OP",
           "SFU_CYCLES_PER_WARP_OP", "SHORT_READ_PENALTY", "SHORT_WRITE_PENALTY",
           "SOFT_MAX_EXPONENT", "soft_max", "REDUCE_LATENCY_S", "reduce_latency_s",
           "LOAD_ISSUE_SLOTS", "REDUCE_ISSUE_SLOTS", "SPAN_DRAIN_PROGRAMS", "SPAN_FREE_BYTES",
           "span_drain_s", "ELEMENTWISE_DIVISOR", "elementwise_buffers",
           "ELEMENTWISE_LOAD_CYCLES"]

#: Fewest programs of a launch that the model runs (plus the last one); the window
#: grows to :data:`WINDOW_TRACE_ROWS` trace rows, so that reuse between programs
#: up to that distance is seen by the L2 simulation.
WINDOW_PROGRAMS = 256
#: Line-trace rows the window may hold (it takes ``rows / rows_per_program``
#: programs, at least :data:`WINDOW_PROGRAMS`).
WINDOW_TRACE_ROWS = 1_000_000
#: Most programs a window holds.
MAX_WINDOW_PROGRAMS = 16384
#: FP32 lanes per SM per clock on Hopper (4 SM sub-partitions x 32; NVIDIA H100
#: whitepaper, "H100 SM Architecture": 128 FP32 cores per SM).
CUDA_CORE_LANES_PER_SM = 128
#: Special-function (MUFU: ex2, lg2, rsqrt, sin, cos) results per SM per clock
#: for compute capability 9.0 (CUDA C++ Programming Guide, "Arithmetic
#: Instructions", throughput table: 16 per clock per multiprocessor).
SFU_LANES_PER_SM = 16
#: Latency of an HBM load that misses L2, as a program's dependent chain of loads
#: sees it, seconds; used by Little's law when ``params.pipeline_latency_s`` is 0.
#: Fitted, not sourced: with :data:`PROGRAM_LATENCY_S`, read off the H200 timings
#: of GELU (one load per program, 16 warps, 512 elements: 0.83 us per program and
#: SM slot) and RMS norm (8192 x 8192, 16 warps, 512-element steps: 7.5 us per row
#: for 16 missing and 16 L2-hitting steps) of the v1 check
#: (``benchmarks/h200/data/records_model_v1_h200.csv``). Luo et al. ("Benchmarking
#: and Dissecting the Nvidia Hopper GPU Architecture", IPDPS 2024) measure several
#: hundred ns for one isolated global load on H800/H100.
HBM_LATENCY_S = 2.9e-7
#: Time a program holds its SM slot beyond its load steps and instructions:
#: block launch, the drain of its last stores and retirement, seconds. Fitted with
#: :data:`HBM_LATENCY_S` (same data).
PROGRAM_LATENCY_S = 5.1e-7
#: Share of the L2 that holds data for reuse by the programs resident at once.
#: Hopper's L2 is two partitions, each caching accesses of the SMs of the GPCs
#: wired to it (NVIDIA A100 and H100 whitepapers, "L2 cache"), so a line can sit
#: in both halves. Fitted, not sourced: RMS norm at 8192 x 8192 re-reads each row
#: from L2 when 1,056 rows (17 MB) are resident and from HBM when 4,224 rows
#: (69 MB) are, and half at 2,112 rows (35 MB) (v2 check, num_warps 8, 2 and 4).
L2_REUSE_FRACTION = 0.5
#: Factors on that share over which the window's L2 replay is averaged (log-spaced,
#: 2x either way). A choice, not fitted: a lockstep LRU keeps or loses a re-read
#: all at once, the GPU loses it gradually (layer norm, v3 check).
L2_SHARE_SPREAD = (0.5, 0.71, 1.0, 1.41, 2.0)
#: Registers per thread: ``max(REG_FLOOR_PER_THREAD, REGS_PER_LIVE_WORD * w)`` for
#: ``w`` 32-bit words per thread of block values live across a load
#: (:func:`autotile.lang.live_values`). The floor is what Triton's code needs for
#: indices, addresses and loop counters when block values are few; with many, ptxas
#: reuses those registers and the block values dominate. Fitted, not sourced: the
#: form and both values put the most configs in the right occupancy class (then the
#: smallest median relative error) on the registers plus spills that Triton 3.6 gave
#: 94 configs of GELU, RMS norm and transpose on the H200
#: (``benchmarks/h200/data/records_regs_h200.csv``, v1/v2 shapes). On online softmax
#: and layer norm, which the fit did not see, the occupancy class is right for 69%
#: and 72% of configs (the earlier additive form ``20 + 0.9 w``: 63% and 66%). The
#: form was chosen after the v5 check missed RMS norm, where ncu showed Triton's 32
#: registers (16 blocks per SM) at BLOCK 2048, 4 warps, against 48 estimated (10).
REG_FLOOR_PER_THREAD = 26
REGS_PER_LIVE_WORD = 1.15
#: Cycles between a warp's dependent instructions in a program's own chain: 4
#: for an FP32/INT ALU op (the FFMA latency measured by Jia et al., "Dissecting
#: the NVIDIA Volta GPU Architecture via Microbenchmarking", 2018, which later
#: generations keep), 8 for a transcendental (MUFU issues 16 lanes per SM per
#: clock = one warp instruction per 8 cycles per sub-partition; CUDA C++
#: Programming Guide, "Arithmetic Instructions", compute capability 9.0).
ALU_CYCLES_PER_WARP_OP = 4.0
SFU_CYCLES_PER_WARP_OP = 8.0
#: Extra HBM time for bytes moved in short contiguous pieces (DRAM bursts and
#: row-buffer locality lost): reads in pieces of <= 64 bytes cost 15% more, 128
#: bytes 7.5%, >= 256 bytes nothing; writes of 32-byte pieces 5% more. Fitted,
#: not sourced: the 2-D transpose of the v1 and v2 checks (4 warps: 128-row tiles
#: read in 32/64/128/256-byte pieces, 128-column tiles written in 32-byte pieces).
SHORT_READ_PENALTY = 0.15
SHORT_WRITE_PENALTY = 0.05
#: Latency of a load that hits L2, seconds: "a few hundred cycles" (about 260 at
#: 1.7 GHz; Luo et al., IPDPS 2024; Chips and Cheese, "Nvidia's H100: Funny L2, and
#: Tons of Bandwidth", 2023).
L2_LATENCY_S = 1.5e-7
#: Time an SM spends on each program it runs beyond its work (block launch and
#: retirement), seconds. Fitted, not sourced: 81 ns is the per-SM cost per
#: program of GELU at 2^26 elements with 128- and 256-element blocks on the H200
#: (``benchmarks/h200/data/records_model_v1_h200.csv``: 0.62 ns per program chip-wide,
#: independent of num_warps), where nothing else limits the time.
PROGRAM_OVERHEAD_S = 8.1e-8
#: Latency of one block reduction (``tl.sum``/``tl.max``, warp shuffles, then a
#: shared-memory exchange and a barrier across warps) in a program's chain,
#: seconds, by ``num_warps``: measured on the H200 with 4 elements per thread
#: (``benchmarks/h200/data/diag_reduce_latency.txt``, ``diag_records.py --part
#: reduce``); interpolated in ``log2(num_warps)``.
REDUCE_LATENCY_S = {1: 8.35e-8, 2: 1.434e-7, 4: 1.642e-7, 8: 1.915e-7, 16: 2.331e-7,
                    32: 3.211e-7}


#: Issue slots per warp load instruction (the load with its address, predicate,
#: conversion and loop work, beyond the counted ALU ops), charged at 4 warp
#: instructions per SM and clock (4 schedulers per SM: NVIDIA H100 whitepaper).
#: Fitted, not sourced: configs of many warps and a few elements per thread ran up
#: to 2x slower than predicted on the v5 and v6 timings (such a program issues one
#: load instruction per warp for a handful of elements); 16 was chosen there from
#: 4, 8, 16 and 32. Refitted to 8 with :data:`REDUCE_ISSUE_SLOTS` on the v5-v9
#: timings (``benchmarks/h200/records_fit.py``, leave one set out: docs/gpu_model.md
#: section 4.1): with the reductions' slots counted, 16 over-predicted the
#: small-block, many-warp configs of RMS norm, online softmax and layer norm by
#: 1.3-1.6x on v8 and v9.
LOAD_ISSUE_SLOTS = 8.0
#: Issue slots each warp of a program spends on one block reduction (``tl.sum``,
#: ``tl.max`` of a block spread over the program's warps), beyond its in-thread
#: lane-ops (counted in ``alu``): the butterfly within the warp (5 ``SHFL`` and 5
#: adds), the shared-memory store, barrier and load of the cross-warp step and its
#: own shuffles, the broadcast of the result. A warp shuffle retires 32 lanes per
#: SM and clock on compute capability 9.0 (CUDA C++ Programming Guide, "Arithmetic
#: Instructions", throughput table), one warp instruction per clock against 4 for
#: ALU work, so ~10 shuffles take ~40 of the SM's issue slots and the rest ~10.
#: Charged, like :data:`LOAD_ISSUE_SLOTS`, at 4 warp instructions per SM and clock,
#: and per warp: a reduction over 16 warps costs the SM twice the slots of one
#: over 8 warps for the same block. Fitted with :data:`LOAD_ISSUE_SLOTS` on the
#: v5-v9 timings (25, 50, 75, 100 tried; 50 and 75 tie): the v9 check's RMS norm
#: (12288 x 8192) ran its whole-row 8192 block 8% slower with 16 warps than with 8,
#: and layer norm's 16-warp configs 1.35x slower than its 4-warp ones (v9).
REDUCE_ISSUE_SLOTS = 50.0
#: Model v11: a program whose accesses to one buffer form one contiguous span
#: longer than one warp instruction's footprint (32 threads x 16 bytes,
#: :data:`SPAN_FREE_BYTES`) costs the launch, once, the time to move
#: ``SPAN_DRAIN_PROGRAMS`` times the excess (read span plus written span) at the
#: SM's share of the HBM bandwidth (``hbm_bytes_per_s * bandwidth_efficiency /
#: n_sms``). Fitted, not sourced: on the HBM-bound plateau of GELU (one span of
#: ``BLOCK`` elements read and one written per program) the measured time rises with
#: the span in every timed set (2-4 KB spans best, 16-64 KB spans 3-8 % slower), which
#: the bounds above predict flat; the rise follows the program's contiguous span, not
#: its bytes (the 2-D transposes move as many bytes per program in rows of <= 512
#: bytes and show no such rise). Chosen from 0-12 on the GELU timings of every set
#: v1-v11 (the most targets met, then the highest mean Spearman; so v1-v11 are
#: in-sample), checked leave one set out (10 chosen for ten of the eleven sets;
#: ``benchmarks/h200/records_spans.py``; docs/gpu_model.md section 4.1). A
#: row kernel's spans are its rows whatever its block, so there the term is the same
#: for every config of a shape. Which mechanism (each SM's last programs draining
#: alone, or a long span's sectors queueing on a few HBM channels) the timings do not
#: tell.
SPAN_DRAIN_PROGRAMS = 10.0
#: Bytes of a program's contiguous span that cost no drain (model v11): one warp
#: instruction's footprint, 32 threads x 16 bytes (a 128-bit load each). A choice,
#: not fitted: the transposes' tile rows never exceed it, so their term is 0.
SPAN_FREE_BYTES = 512.0
#: Element offsets Triton must be able to prove a load's rows start and end on for
#: it to vectorise the load (16: Triton's specialisation of integer arguments
#: divisible by 16, ``tt.divisibility = 16``; an argument that is not, such as a row
#: stride of 1800 elements, gets divisibility 1 and its loads go one element at a
#: time, whatever the data's real alignment). :func:`elementwise_buffers` tests the
#: records against it.
ELEMENTWISE_DIVISOR = 16
#: Cycles a thread's chain spends per element it loads one at a time (a load that
#: Triton cannot vectorise, :func:`elementwise_buffers`), beyond its ALU work. 0: off.
#: Session 13 tried 4-32 (``benchmarks/h200/records_alu_elementwise.py``): with
#: :data:`ALU_CYCLES_PER_WARP_OP` at 4 it moves no layer-norm pick of the v1-v7 kernels
#: runs; the pairs with fewer ALU cycles that fix layer norm lose targets of the records
#: checks (docs/gpu_model.md section 4.1, "Session 13").
ELEMENTWISE_LOAD_CYCLES = 0.0
#: Whether :func:`launch_features` runs the element trace for ``ew_elems``: None
#: (the default) only when :data:`ELEMENTWISE_LOAD_CYCLES` is non-zero, so the zero-shot
#: prior pays nothing for a term that is off; the evaluation scripts set it to True.
ELEMENTWISE_TRACE: bool | None = None
#: Programs of a launch whose element trace :func:`launch_features` reads for
#: :func:`elementwise_buffers`: the first two and the last one.
_ELEMENTWISE_PROGRAMS = 2
#: For refits only (``benchmarks/h200/records_fit.py``): a callable that
#: :func:`launch_features` calls with the window's lockstep replay
#: (``tr, order, key, inv, ids, hw, share, scale, W``) and whose dict it adds to
#: the features; None (the default) for the model.
_WINDOW_HOOK: Callable[..., dict[str, Any]] | None = None
#: Sectors one warp moves with a 16-byte-per-thread load (32 x 16 B = 512 B).
_SECTORS_PER_WARP_LOAD = 16


def reduce_latency_s(num_warps: int) -> float:
    """One block reduction's latency in a program's chain, from :data:`REDUCE_LATENCY_S`.

    Parameters
    ----------
    num_warps : int
        Warps of the program (clipped to the measured 1-32).

    Returns
    -------
    float
        Seconds: the H200 measurement interpolated linearly in
        ``log2(num_warps)`` (``benchmarks/h200/data/diag_reduce_latency.txt``).
    """
    w = sorted(REDUCE_LATENCY_S)
    x = np.log2(np.clip(float(num_warps), w[0], w[-1]))
    return float(np.interp(x, np.log2(w), [REDUCE_LATENCY_S[k] for k in w]))


#: Granularity of HBM traffic: the 32-byte sector of an L2 line (CUDA C++ Best
#: Practices Guide, "Coalesced Access to Global Memory": accesses are serviced in
#: 32-byte transactions).
_SECTOR_BYTES = 32


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class RecordsEstimate(dict[str, float]):
    """Metrics of one launch or a sum of launches (a dict of floats)."""


def _window(n_prog: int, rows_per_program: float) -> np.ndarray:
    size = int(WINDOW_TRACE_ROWS // max(rows_per_program, 1.0))
    size = min(n_prog, MAX_WINDOW_PROGRAMS, max(WINDOW_PROGRAMS, size))
    w = list(range(size))
    if n_prog > len(w):
        w.append(n_prog - 1)
    return np.asarray(w, dtype=np.int64)


def _counts(rec: Any, name: str, n: int) -> np.ndarray:
    v = getattr(rec, name, None)
    if v is None:
        return np.zeros(n, dtype=np.int64)
    return np.asarray(v, dtype=np.int64)


#: Exponent of the smooth maximum of the time bounds (compute, memory, latency,
#: program overhead): a kernel near one bound is slowed by the others, which a
#: hard maximum misses (it ties every config at the bandwidth bound). 6 adds 12 %
#: when two bounds are equal, 0.8 % when one is 60 % of the other. Model v12: chosen
#: from 3-8 on the H200 timings of every records check v1-v12 (the most targets met,
#: then the highest mean Spearman; so those checks are in-sample), checked leave one
#: set out (6 chosen for all twelve sets; ``benchmarks/h200/records_softmax_exp.py``,
#: docs/gpu_model.md section 4.1). Models v1-v11 used 4, a choice (19 % at two equal
#: bounds), which charged configs whose compute and memory bounds are close (online
#: softmax in bf16, v12) too much. The analytic models (:mod:`._analytic`) keep 4.
SOFT_MAX_EXPONENT = 6.0


def soft_max(bounds: tuple[float, ...], k: float = SOFT_MAX_EXPONENT) -> float:
    """``(sum b**k) ** (1/k)``: the largest bound, raised smoothly by the others (s)."""
    top = max(bounds)
    if top <= 0.0:
        return 0.0
    total = float(sum((b / top) ** k for b in bounds))
    return float(top * total ** (1.0 / k))


def span_drain_s(span_r: float, span_w: float, hw: HardwareProfile,
                 params: GpuModelParams) -> float:
    """Model v11's per-launch drain of a program's long contiguous spans (s).

    ``SPAN_DRAIN_PROGRAMS`` times the time to move the read and written spans'
    excess over :data:`SPAN_FREE_BYTES` at one SM's share of the bandwidth:
    ``SPAN_DRAIN_PROGRAMS * (max(span_r - SPAN_FREE_BYTES, 0) + max(span_w -
    SPAN_FREE_BYTES, 0)) * n_sms / (hbm_bytes_per_s * bandwidth_efficiency)``.

    Parameters
    ----------
    span_r, span_w : float
        Mean contiguous span of one buffer over all of a program's reads and
        writes (bytes, >= 0; :func:`launch_features`' ``span_r``, ``span_w``).
    hw : HardwareProfile
        The GPU (``n_sms``, ``hbm_bytes_per_s``).
    params : GpuModelParams
        Its ``bandwidth_efficiency``.

    Returns
    -------
    float
        The drain time in seconds, added once to the launch's time.

    Raises
    ------
    ValueError
        If a span is negative or not a number.
    """
    if not (span_r >= 0.0 and span_w >= 0.0):
        raise ValueError(f"spans must be >= 0 bytes, got span_r={span_r!r}, span_w={span_w!r}")
    excess = max(span_r - SPAN_FREE_BYTES, 0.0) + max(span_w - SPAN_FREE_BYTES, 0.0)
    return float(SPAN_DRAIN_PROGRAMS * excess * hw.n_sms
                 / (hw.hbm_bytes_per_s * params.bandwidth_efficiency))


def _mean_run_bytes(trace: Any, rows: np.ndarray, by_op: bool = True) -> float:
    """Mean bytes of the contiguous sector runs of each (program, op) among ``rows``.

    With ``by_op=False`` the runs are those of each (program, buffer) over all of
    the program's ops (its spans: a loop's chunks of one row join up).
    """
    prog = np.asarray(trace.program, np.int64)[rows]
    op = np.asarray(trace.op, np.int64)[rows]
    if not by_op:
        op = np.zeros_like(op)
    sec = np.asarray(trace.offset_bytes, np.int64)[rows] // _SECTOR_BYTES
    buf = np.asarray(trace.buffer, np.int64)[rows]
    order = np.lexsort((sec, buf, op, prog))
    prog, op, sec, buf = prog[order], op[order], sec[order], buf[order]
    same = (prog[1:] == prog[:-1]) & (op[1:] == op[:-1]) & (buf[1:] == buf[:-1])
    dup = same & (sec[1:] == sec[:-1])
    cont = same & (sec[1:] == sec[:-1] + 1)
    n_sec = sec.size - int(dup.sum())
    n_runs = n_sec - int(cont.sum())
    return float(_SECTOR_BYTES * n_sec / max(n_runs, 1))


def elementwise_buffers(trace: Any) -> set[int]:
    """Buffers some load of which Triton cannot vectorise: rows off its 16-element grid.

    Triton specialises a kernel's integer arguments divisible by 16 and vectorises
    a load only where it can prove its contiguous runs of elements start (and, for
    the mask, end) on a multiple of that many elements; otherwise each thread loads
    its elements one at a time. This emulates it from the records: for each read
    op of each program, the element offsets (relative to the buffer's base) at which
    a contiguous run of accessed elements starts or ends (ops of one element, scalar
    loads, left out); a buffer is element-wise
    when the gcd of those offsets over all of its read ops and programs is not a
    multiple of :data:`ELEMENTWISE_DIVISOR`. A row kernel with row stride ``N``
    starts its rows at ``row * N``: element-wise exactly when ``N % 16 != 0``.

    Parameters
    ----------
    trace : AccessTrace
        An ``"element"`` trace (one row per active lane: ``offset_bytes``,
        ``size_bytes`` the itemsize, ``program``, ``op``, ``buffer``,
        ``is_write``), of a few programs of the launch.

    Returns
    -------
    set of int
        Buffer ids (``trace.buffer``) with an element-wise read; empty without reads.

    Raises
    ------
    ValueError
        If ``trace`` is not an element trace.
    """
    if trace.granularity != "element":
        raise ValueError(f"elementwise_buffers needs an 'element' trace, "
                         f"got {trace.granularity!r}")
    reads = ~np.asarray(trace.is_write)
    if not reads.any():
        return set()
    size = np.asarray(trace.size_bytes, np.int64)[reads]
    elem = np.asarray(trace.offset_bytes, np.int64)[reads] // np.maximum(size, 1)
    prog = np.asarray(trace.program, np.int64)[reads]
    op = np.asarray(trace.op, np.int64)[reads]
    buf = np.asarray(trace.buffer, np.int64)[reads]
    order = np.lexsort((elem, op, prog))
    elem, op, prog, buf = elem[order], op[order], prog[order], buf[order]
    same = (prog[1:] == prog[:-1]) & (op[1:] == op[:-1])
    # an op of one element (a scalar load) has nothing to vectorise: left out
    first = np.ones(elem.size, bool)
    first[1:] = ~same
    group = np.cumsum(first) - 1
    multi = np.bincount(group)[group] > 1
    # a run starts where the previous row is another op or not the previous element
    start = np.ones(elem.size, bool)
    start[1:] = ~(same & (elem[1:] <= elem[:-1] + 1))
    end = np.ones(elem.size, bool)
    end[:-1] = start[1:]
    out: set[int] = set()
    for b in np.unique(buf).tolist():
        mine = multi & (buf == b)
        edges = np.concatenate([elem[start & mine], elem[end & mine] + 1])
        if edges.size and int(np.gcd.reduce(edges)) % ELEMENTWISE_DIVISOR:
            out.add(int(b))
    return out


#: Programs of the window whose load groups :func:`_load_groups` counts (the
#: programs are alike: the window's assumption).
_GROUP_SAMPLE = 64


def _load_groups(prog: np.ndarray, op: np.ndarray, buf: np.ndarray) -> float:
    """Mean dependent load steps of a program: its read ops, grouped by iteration.

    Loads of one loop iteration that read different buffers do not depend on
    each other: the warp issues them back to back and waits once, at the first
    use of their data (in-order issue; layer norm's ``w``, ``b`` and ``x`` of its
    third pass). Walking a program's read ops in order, a read of a buffer that
    the current group already read starts a new group (the next iteration, or
    the next loop over the same data).

    Parameters
    ----------
    prog, op, buf : ndarray of int64
        Program index, op index within the program and buffer of each read row
        of the window's sector trace.

    Returns
    -------
    float
        Groups per program, averaged over the first :data:`_GROUP_SAMPLE`
        programs of the window (at least 1).
    """
    key = prog * (1 << 32) + op
    uk, first = np.unique(key, return_index=True)
    p = uk >> 32
    b = buf[first]
    counts = []
    for q in np.unique(p)[:_GROUP_SAMPLE]:
        n = 0
        seen: set[int] = set()
        for x in b[p == q].tolist():
            if not seen or x in seen:
                n, seen = n + 1, set()
            seen.add(x)
        counts.append(n)
    return max(1.0, float(np.mean(counts))) if counts else 1.0


def _interleave(trace: Any) -> np.ndarray:
    """Row order of a lockstep replay: op 0 of every program, then op 1, ..."""
    prog = np.asarray(trace.program, np.int64)
    op = np.asarray(trace.op, np.int64)
    return np.lexsort((prog, op))


def estimate_launch(launch: Any, hw: HardwareProfile, params: GpuModelParams,
                    dtype: str, sanitize_overflow: bool = True
                    ) -> tuple[str | None, RecordsEstimate]:
    """Model one launch from a window of its programs.

    Parameters
    ----------
    launch : KernelLaunch
        Kernel, grid, arguments (real size) and meta-parameters.
    hw : HardwareProfile
    params : GpuModelParams
    dtype : str
        Operand dtype, selects the tensor-core peak of ``tl.dot``.
    sanitize_overflow : bool, default=True
        The interpreter's launch option for the window's launches: ``False``
        for a kernel that wraps signed integers on purpose (a hash), which
        would otherwise raise :class:`~autotile.errors.IntegerOverflowError`.

    Returns
    -------
    reason : str or None
        Why the config cannot launch (shared memory, registers), or None.
    metrics : RecordsEstimate
        ``time_s``, ``compute_s``, ``memory_s``, ``latency_s``, ``drain_s``
        (the span drain, :data:`SPAN_DRAIN_PROGRAMS`), ``hbm_read_bytes``,
        ``hbm_write_bytes``, ``occupancy``,
        ``blocks_per_sm``, ``n_waves``, ``smem_bytes``, ``regs_per_thread``,
        ``dot_flops``, ``alu_ops``, ``sfu_ops``.
    """
    reason, f = launch_features(launch, hw, params, sanitize_overflow)
    if reason is not None:
        return reason, RecordsEstimate()
    return None, launch_time(f, hw, params, dtype)


def launch_features(launch: Any, hw: HardwareProfile, params: GpuModelParams,
                    sanitize_overflow: bool = True) -> tuple[str | None, dict[str, float]]:
    """What the interpreter's window run tells about one launch (no time yet).

    The first half of :func:`estimate_launch`: registers, occupancy, the L2
    replay's HBM bytes and hit rate, and each program's op counts and load
    steps. :func:`launch_time` turns them into time; the split lets a fit of
    the time constants reuse one window run per config.

    Parameters
    ----------
    launch, hw, params, sanitize_overflow
        As for :func:`estimate_launch`.

    Returns
    -------
    reason : str or None
        Why the config cannot launch, or None.
    features : dict of str to float
        ``n_prog``, ``num_warps``, ``num_stages``, ``dot``, ``alu``, ``sfu``
        (mean per program: FLOPs and lane-ops), ``reductions`` (mean per
        program), ``has_dot`` (0/1), ``smem``
        (bytes), ``regs_need``, ``regs_cap`` (per thread), ``occupancy``,
        ``bps`` (blocks per SM), ``read_b``, ``write_b`` (HBM bytes),
        ``hit_rate``, ``inflight`` (bytes of a program's largest load op),
        ``run_r``, ``run_w`` (mean contiguous piece of one op, bytes), ``span_r``,
        ``span_w`` (mean contiguous span of one buffer over all of a program's ops,
        bytes; 0 with no reads or writes), ``n_steps``
        (load ops per program), ``n_groups`` (dependent load steps per program:
        :func:`_load_groups`), ``ew_elems`` (mean elements per program read from
        buffers that Triton loads one element at a time: :func:`elementwise_buffers`;
        0 when every load vectorises; present only when the element trace ran, see
        :data:`ELEMENTWISE_TRACE`). With :data:`_WINDOW_HOOK` set (refits only)
        also what it returns.
    """
    n_prog = launch.n_programs
    # the NVIDIA backend's rules (tl.dot's minimum K): a config the GPU cannot
    # compile raises here and is never scored as feasible
    with tl.backend_rules("nvidia"), tl.recording(trace="sector") as rec0, \
            tl.live_values() as live:
        launch.run(programs=[0], sanitize_overflow=sanitize_overflow)
    first = rec0.last.trace
    win = _window(n_prog, float(len(first)) if first is not None else 1.0)
    with tl.backend_rules("nvidia"), tl.recording(trace="sector") as rec:
        launch.run(programs=win, batch_programs=True, sanitize_overflow=sanitize_overflow)
    r = rec.last
    tr = r.trace
    nw, ns = int(launch.num_warps), int(launch.num_stages)
    W = len(win)
    dot = _counts(r, "dot_flops", W)
    alu = _counts(r, "alu_ops", W)
    sfu = _counts(r, "sfu_ops", W)
    red = _counts(r, "reductions", W)
    # loads Triton cannot vectorise (rows off the 16-element grid), from an element
    # trace of a few programs; their elements per program, from the window's counts
    trace_ew = (ELEMENTWISE_TRACE if ELEMENTWISE_TRACE is not None
                else ELEMENTWISE_LOAD_CYCLES != 0)
    ew: dict[str, float] = {}
    if trace_ew:
        few = sorted({*range(min(_ELEMENTWISE_PROGRAMS, n_prog)), n_prog - 1})
        with tl.backend_rules("nvidia"), tl.recording(trace="element") as rec_e:
            launch.run(programs=few, sanitize_overflow=sanitize_overflow)
        te = rec_e.last.trace
        ew_names = {te.buffer_names[b] for b in elementwise_buffers(te)} \
            if te is not None else set()
        ew_cols = [j for j, nm in enumerate(r.buffer_names) if nm in ew_names]
        ew["ew_elems"] = float(
            np.asarray(r.elems_read, np.int64)[:, ew_cols].sum(axis=1).mean()) \
            if ew_cols else 0.0
    dot_smem = int(_counts(r, "dot_operand_bytes", W).max(initial=0))
    scratch = int(_counts(r, "scratch_bytes", W).max(initial=0))
    smem = dot_smem * max(ns, 1) + scratch
    live_words = live.peak_bytes / 4.0 / (32 * nw)
    regs_need = int(np.ceil(max(REG_FLOOR_PER_THREAD, REGS_PER_LIVE_WORD * live_words)))
    # ptxas caps registers per thread at the hardware limit and at what lets one
    # block of 32 * num_warps threads fit the SM's register file, and spills the rest
    regs_cap = min(hw.max_regs_per_thread, hw.regs_per_sm // (32 * nw) // 8 * 8)
    regs = min(-(-regs_need // 8) * 8, regs_cap)
    occ = occupancy(hw, num_warps=nw, smem_bytes=smem, regs_per_thread=regs)
    if occ.reason is not None:
        return occ.reason, {}
    bps = occ.blocks_per_sm
    n_res = hw.n_sms * bps
    # -- HBM traffic: the window's line trace through the L2 share of the window ----
    read_b = write_b = 0.0
    extra: dict[str, Any] = {}
    hit_rate = 0.0
    inflight = 0.0
    run_r = run_w = 256.0
    span_r = span_w = 0.0
    n_steps = n_groups = 1.0
    if tr is not None and len(tr):
        order = _interleave(tr)
        key = (np.asarray(tr.buffer, np.int64)[order] << 40) + (
            np.asarray(tr.offset_bytes, np.int64)[order] // _SECTOR_BYTES)
        ids, inv = np.unique(key, return_inverse=True)
        cap = hw.l2_bytes * L2_REUSE_FRACTION * min(1.0, W / max(1, min(n_prog, n_res)))
        # the L2 share is uncertain (programs drift out of lockstep, the partitions fill
        # unevenly): average the LRU over capacities spread around it, so that reuse
        # fades as the resident data nears the share instead of falling off a cliff
        sims = [simulate_l2_stream(inv.astype(np.int64), np.asarray(tr.is_write)[order],
                                   np.full(ids.size, _SECTOR_BYTES, np.int64),
                                   l2_bytes=max(int(cap * f), _SECTOR_BYTES))
                for f in L2_SHARE_SPREAD]
        scale = n_prog / W
        if _WINDOW_HOOK is not None:  # refits only (benchmarks/h200/records_fit.py)
            extra.update(_WINDOW_HOOK(
                tr=tr, order=order, key=key, inv=inv, ids=ids, hw=hw, W=W, scale=scale,
                share=min(1.0, W / max(1, min(n_prog, n_res)))))
        read_b = float(np.mean([st.hbm_read_bytes for st in sims])) * scale
        write_b = float(np.mean([st.hbm_write_bytes for st in sims])) * scale
        hit_rate = float(np.mean([st.l2_hit_rate for st in sims]))
        # bytes one load op of a program keeps in flight, and dependent load steps
        prog = np.asarray(tr.program, np.int64)
        op = np.asarray(tr.op, np.int64)
        reads = ~np.asarray(tr.is_write)
        if reads.any():
            pk = prog[reads] * (1 << 32) + op[reads]
            _, per_op = np.unique(pk, return_counts=True)
            inflight = float(per_op.max()) * _SECTOR_BYTES
            n_ops = np.unique(pk).size
            n_steps = max(1.0, n_ops / W)
            n_groups = _load_groups(prog[reads], op[reads],
                                    np.asarray(tr.buffer, np.int64)[reads])
            run_r = _mean_run_bytes(tr, reads)
            span_r = _mean_run_bytes(tr, reads, by_op=False)
        if (~reads).any():
            run_w = _mean_run_bytes(tr, ~reads)
            span_w = _mean_run_bytes(tr, ~reads, by_op=False)
    return None, {
        "n_prog": float(n_prog), "num_warps": float(nw), "num_stages": float(ns),
        "dot": float(dot.mean()), "alu": float(alu.mean()), "sfu": float(sfu.mean()),
        "reductions": float(red.mean()), "has_dot": float(dot.any()), "smem": float(smem),
        "regs_need": float(regs_need),
        "regs_cap": float(regs_cap), "occupancy": float(occ.occupancy), "bps": float(bps),
        "read_b": read_b, "write_b": write_b, "hit_rate": hit_rate, "inflight": inflight,
        "run_r": run_r, "run_w": run_w, "span_r": span_r, "span_w": span_w,
        "n_steps": n_steps, "n_groups": n_groups, **ew, **extra}


def launch_time(f: dict[str, float], hw: HardwareProfile, params: GpuModelParams,
                dtype: str) -> RecordsEstimate:
    """Time and traffic of one launch from its :func:`launch_features` (s, bytes).

    Parameters
    ----------
    f : dict of str to float
        :func:`launch_features`' second result. Features cached before
        model v11 lack ``span_r`` and ``span_w``: they get no span drain
        (:func:`span_drain_s`).
    hw, params, dtype
        As for :func:`estimate_launch`.

    Returns
    -------
    RecordsEstimate
        As :func:`estimate_launch`'s second result.
    """
    n_prog = int(f["n_prog"])
    nw, ns, bps = int(f["num_warps"]), int(f["num_stages"]), int(f["bps"])
    read_b, write_b, hit_rate = f["read_b"], f["write_b"], f["hit_rate"]
    inflight, run_r, run_w, n_steps = f["inflight"], f["run_r"], f["run_w"], f["n_steps"]
    regs_need, regs_cap = f["regs_need"], f["regs_cap"]
    n_res = hw.n_sms * bps
    hbm = read_b + (write_b if params.count_writes else 0.0)
    # bytes weighted by the cost of their contiguous piece size
    f_r = 1.0 + SHORT_READ_PENALTY * float(np.clip((8.0 - np.log2(run_r)) / 2.0, 0.0, 1.0))
    f_w = 1.0 + SHORT_WRITE_PENALTY * float(np.clip(6.0 - np.log2(run_w), 0.0, 1.0))
    hbm_cost = read_b * f_r + (write_b * f_w if params.count_writes else 0.0)
    # -- time: the busiest SM's programs, compute pipes in sequence --------------------
    rounds = _cdiv(n_prog, hw.n_sms)
    clock = hw.clock_hz
    dot_s = rounds * f["dot"] / (hw.tensor_flops_per_s(dtype) / hw.n_sms
                                 * params.peak_efficiency)
    alu_s = rounds * f["alu"] / (CUDA_CORE_LANES_PER_SM * clock)
    sfu_s = rounds * f["sfu"] / (SFU_LANES_PER_SM * clock)
    # the issue slots of the loads: a warp's 16-byte-per-thread load moves 16 sectors,
    # so each of the n_steps load ops (taken as large as the largest) issues
    # ceil(sectors / (16 nw)) load instructions per warp, each with its address,
    # predicate and conversion work (LOAD_ISSUE_SLOTS); 4 warp schedulers per SM
    per_warp = float(np.ceil(max(inflight / _SECTOR_BYTES, 1.0) / (_SECTORS_PER_WARP_LOAD * nw)))
    ld_s = rounds * n_steps * nw * per_warp * LOAD_ISSUE_SLOTS / (4 * clock)
    # ... and each block reduction's shuffles, barriers and shared-memory exchange,
    # issued by every warp of the program (REDUCE_ISSUE_SLOTS per warp)
    ld_s += rounds * f.get("reductions", 0.0) * nw * REDUCE_ISSUE_SLOTS / (4 * clock)
    compute_s = dot_s + max(alu_s, sfu_s)
    lat = params.pipeline_latency_s if params.pipeline_latency_s > 0 else HBM_LATENCY_S
    # a loop's loads are software-pipelined over num_stages - 1 iterations ahead when
    # they feed tl.dot (Triton's pipeliner); other loops wait for each iteration's
    # loads (ptxas unrolls them 4 times, benchmarks/h200/data/diag_sass_rms_norm.txt,
    # but HBM_LATENCY_S was fitted with iterations serialised: docs/gpu_model.md).
    # The chain waits once per group of independent loads (one iteration's loads of
    # different buffers, _load_groups); features cached before v8 lack n_groups
    chain_steps = f.get("n_groups", n_steps)
    ahead = min(chain_steps, float(max(1, ns - 1))) if chain_steps > 1 and f["has_dot"] \
        else 1.0
    bw_peak = hw.hbm_bytes_per_s * params.bandwidth_efficiency
    bw_little = hw.n_sms * bps * ahead * max(inflight, _SECTOR_BYTES) / lat
    memory_s = hbm_cost / min(bw_peak, bw_little)
    waves = _cdiv(n_prog, n_res)
    step_lat = hit_rate * L2_LATENCY_S + (1.0 - hit_rate) * lat
    # one program's dependent chain: its load steps, then its own instructions issued
    # one warp instruction per cycle; an SM runs bps programs at once
    issue_s = (f["alu"] * ALU_CYCLES_PER_WARP_OP
               + f["sfu"] * SFU_CYCLES_PER_WARP_OP) / (32 * nw) / clock
    # ... and the elements its threads load one at a time (Triton could not vectorise
    # the load: elementwise_buffers)
    if ELEMENTWISE_LOAD_CYCLES:
        if "ew_elems" not in f:
            raise ValueError("launch_time: ELEMENTWISE_LOAD_CYCLES is set but the features "
                             "lack ew_elems (computed without the element trace: set "
                             "ELEMENTWISE_TRACE = True before launch_features)")
        issue_s += f["ew_elems"] * ELEMENTWISE_LOAD_CYCLES / (32 * nw) / clock
    # ... and no faster than the SM's pipes retire the program's ops when it has them
    # to itself (its share of compute_s): a wide block's short per-thread chain still
    # needs the SM's SFU/ALU lanes for all of its elements
    # ... and its block reductions, each a shuffle-and-barrier chain it waits for
    reduce_s = f.get("reductions", 0.0) * reduce_latency_s(nw)
    program_s = (PROGRAM_LATENCY_S + chain_steps * step_lat / ahead + reduce_s
                 + max(issue_s, compute_s / rounds))
    latency_s = n_prog / float(hw.n_sms * bps) * program_s if n_prog >= n_res \
        else program_s
    overhead_s = rounds * PROGRAM_OVERHEAD_S
    o = 1.0 - params.overlap_decay ** (ns * bps - 1) if bps * ns > 1 else 0.0
    # the SM's issue slots also run the loads (a throughput bound, not in the chain)
    compute_s = compute_s + ld_s
    t = soft_max((compute_s, memory_s, latency_s, overhead_s), SOFT_MAX_EXPONENT) \
        + (1.0 - o) * min(compute_s, memory_s)
    spill = (regs_need / regs_cap) ** 2 if regs_need > regs_cap else 1.0
    # model v11: long contiguous spans per program drain once per launch at the SM's
    # share of the bandwidth (features cached before v11 lack the spans: no term)
    drain_s = span_drain_s(f.get("span_r", 0.0), f.get("span_w", 0.0), hw, params)
    t = t * spill + drain_s + hw.launch_overhead_s
    return RecordsEstimate(
        time_s=t, compute_s=compute_s, memory_s=memory_s, latency_s=latency_s,
        overhead_s=overhead_s, drain_s=drain_s, overlap=o, spill_factor=spill,
        hbm_read_bytes=read_b, hbm_write_bytes=write_b, hbm_bytes=hbm,
        l2_hit_rate=hit_rate, occupancy=f["occupancy"], blocks_per_sm=float(bps),
        n_waves=float(waves),
        smem_bytes=f["smem"], regs_per_thread=float(regs_need),
        dot_flops=f["dot"] * n_prog, alu_ops=f["alu"] * n_prog,
        sfu_ops=f["sfu"] * n_prog)


def records_model(self: Any, config: Any, c: dict[str, Any]) -> MeasureResult:
    """The ``"records"`` GPU model: every launch of the config, from interpreter records.

    Launches run one after another, so times and bytes add up; occupancy
    and the wave count are those of the longest launch.
    """
    spec, shape, dtype = self.spec, self.shape, self.dtype
    args = self.model_args()
    try:
        launches = spec.launches(shape, dtype, c, args)
    except Exception as exc:  # noqa: BLE001 - the spec itself is at fault: failed
        return MeasureResult(self.config_text(config), "failed", {}, 0.0,
                             f"spec {spec.name!r}: building the launches (make_args, grid, "
                             f"constexprs) raised {type(exc).__name__}: {exc}")
    total: dict[str, float] = {}
    longest = -1.0
    for launch in launches:
        reason, m = estimate_launch(launch, self.hardware, self.params, dtype)
        if reason is not None:
            return _infeasible(self, config, reason)
        for k in ("time_s", "compute_s", "memory_s", "latency_s", "overhead_s", "drain_s",
                  "hbm_read_bytes",
                  "hbm_write_bytes", "hbm_bytes", "dot_flops", "alu_ops", "sfu_ops"):
            total[k] = total.get(k, 0.0) + m[k]
        if m["time_s"] > longest:
            longest = m["time_s"]
            for k in ("occupancy", "blocks_per_sm", "n_waves", "smem_bytes", "overlap",
                      "spill_factor",
                      "regs_per_thread", "l2_hit_rate"):
                total[k] = m[k]
    t = total["time_s"]
    flops = float(spec.flops(shape))
    reads = total["hbm_read_bytes"]
    comp = total["compute_s"]
    mem = max(total["memory_s"], total["latency_s"])
    return _ok(self, config, {
        "time_s": t, "tflops": flops / t / 1e12, "hbm_bytes": total["hbm_bytes"],
        "hbm_read_bytes": reads, "l2_hit_rate": total["l2_hit_rate"],
        "compute_s": comp, "memory_s": total["memory_s"], "occupancy": total["occupancy"],
        "bound": 0.0 if comp >= mem else 1.0, "blocks_per_sm": total["blocks_per_sm"],
        "n_waves": total["n_waves"], "k_merge": 1.0, "latency_s": total["latency_s"],
        "overhead_s": total["overhead_s"], "drain_s": total["drain_s"],
        "regs_per_thread": total["regs_per_thread"],
        "overlap": total["overlap"], "spill_factor": total["spill_factor"]})
