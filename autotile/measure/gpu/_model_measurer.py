"""Score library-kernel configs with the GPU model instead of a GPU.

:class:`KernelModelMeasurer` turns a config of a kernel space
(:mod:`autotile.kernels._spaces`) into a :class:`MeasureResult`:
occupancy and feasibility (:mod:`._gpu_model`), HBM traffic from the L2
simulator fed by the kernel's own program order (:mod:`._l2sim`), and the
time estimate. :func:`matmul_tile_schedule` derives that order from a probe
launch of the real kernel (same program grid, 1-element tiles, one K step,
programs run in batches by the interpreter) and caches it;
:func:`clear_schedule_cache` empties the cache.
:func:`flash_attention_pareto` and :func:`flash_attention_study` are the
seed's §4.4 multi-objective view of flash attention.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

import autotile.lang as tl
from autotile.errors import MeasureError
from autotile.kernels import (
    io_flash,
    matmul_kernel,
    matmul_persistent_kernel,
    onchip_flash_bytes,
)
from autotile.kernels._spaces import (
    DTYPE_ITEMSIZE,
    check_shape_mapping,
    flash_attention_space,
    matmul_space,
    persistent_matmul_space,
    softmax_space,
)
from autotile.measure._result import Measurer, MeasureResult
from autotile.measure.gpu._hardware import H100_SXM, HardwareProfile
from autotile.measure.gpu._l2sim import (
    BufferTiling,
    L2Model,
    L2Stats,
    TileSchedule,
    schedule_from_trace,
    simulate_l2,
)
from autotile.measure.gpu._time_model import (
    GpuModelParams,
    estimate_time,
    matmul_efficiency,
    matmul_regs_per_thread,
    matmul_smem_bytes,
    matmul_smem_step_bytes,
    occupancy,
)
from autotile.space import Space

__all__ = [
    "KernelModelMeasurer",
    "KERNEL_MODEL_METRICS",
    "matmul_tile_schedule",
    "clear_schedule_cache",
    "flash_attention_objectives",
    "flash_attention_pareto",
    "flash_attention_study",
]

#: Metrics of every ``"ok"`` result of :class:`KernelModelMeasurer`.
KERNEL_MODEL_METRICS = ("time_s", "tflops", "hbm_bytes", "hbm_read_bytes", "l2_hit_rate",
                        "compute_s", "memory_s", "occupancy", "bound", "blocks_per_sm",
                        "n_waves", "k_merge")
#: Probe tile edge in elements. The schedule only needs which tile each op
#: touches, so 1 x 1 x 1 tiles give the same schedule as real ones (the probe
#: is interpreter-only: Triton's ``tl.dot`` would want 16) at a fraction of the
#: interpreter's work.
_PROBE_BLOCK = 1
#: Programs per interpreter batch of a probe (``batch_programs``).
_PROBE_BATCH = 1 << 16
#: Problem-size keys of each kernel's ``shape``.
_SHAPE_KEYS = {"matmul": ("M", "N", "K"), "matmul_persistent": ("M", "N", "K"),
               "softmax_fused": ("M", "N"), "flash_attention": ("N", "d")}


def _short(obj: Any, limit: int = 80) -> str:
    text = repr(obj)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@functools.lru_cache(maxsize=64)
def _matmul_probe(npm: int, npn: int, group_m: int, persistent: int, n_run: int,
                  block: int = _PROBE_BLOCK, batch: int | bool = _PROBE_BATCH
                  ) -> tl.AccessTrace:
    """Tile trace of the real matmul kernel on an ``npm x npn`` tile grid, one K step.

    ``persistent == 0``: :func:`matmul_kernel` on its first ``n_run`` programs;
    otherwise :func:`matmul_persistent_kernel` with ``NUM_SMS = persistent``.
    ``block`` is the tile edge in elements and ``batch`` the launch's
    ``batch_programs`` (``False`` runs one program at a time; the trace is the
    same). The persistent kernel loops from its program id, so its programs
    always run one at a time.
    """
    b = block
    m, n = npm * b, npn * b
    a_ = np.zeros((m, b), np.float16)
    b_ = np.zeros((b, n), np.float16)
    c_ = np.zeros((m, n), np.float16)
    args = (a_, b_, c_, m, n, b, b, 1, n, 1, n, 1)
    meta = dict(BLOCK_M=b, BLOCK_N=b, BLOCK_K=b, GROUP_M=group_m)
    with tl.recording(trace="tile") as rec:
        if persistent:
            matmul_persistent_kernel[(min(persistent, npm * npn),)](
                *args, **meta, NUM_SMS=min(persistent, npm * npn))
        else:
            matmul_kernel[(n_run,)](*args, **meta, PID_ORDER="grouped", batch_programs=batch)
    tr = rec.last.trace
    assert tr is not None
    return tr


def _probe_schedule(tr: tl.AccessTrace, block: int, npm: int, npn: int, nk: int,
                    a_tile_bytes: int, b_tile_bytes: int, c_tile_bytes: int,
                    k_merge: int) -> TileSchedule:
    """Full-size schedule from a probe trace with ``block``-element tiles."""
    b = block
    tilings = [
        BufferTiling("a_ptr", b, (b, b), (npm, nk), a_tile_bytes, 2, loop_axis=1),
        BufferTiling("b_ptr", npn * b, (b, b), (nk, npn), b_tile_bytes, 2, loop_axis=0),
        BufferTiling("c_ptr", npn * b, (b, b), (npm, npn), c_tile_bytes, 2),
    ]
    return schedule_from_trace(tr, tilings, k_merge=k_merge)


@functools.lru_cache(maxsize=256)
def _matmul_schedule(npm: int, npn: int, nk: int, group_m: int, persistent: int, n_run: int,
                     a_tile_bytes: int, b_tile_bytes: int, c_tile_bytes: int,
                     k_merge: int) -> TileSchedule:
    tr = _matmul_probe(npm, npn, group_m, persistent, n_run)
    return _probe_schedule(tr, _PROBE_BLOCK, npm, npn, nk, a_tile_bytes, b_tile_bytes,
                           c_tile_bytes, k_merge)


def matmul_tile_schedule(M: int, N: int, K: int, BLOCK_M: int, BLOCK_N: int, BLOCK_K: int,
                         GROUP_M: int, *, itemsize: int = 2, out_itemsize: int | None = None,
                         NUM_SMS: int | None = None, k_merge: int = 1,
                         max_probe_programs: int | None = None) -> tuple[TileSchedule, int]:
    """Tile schedule of the library matmul, derived from a probe launch (cached).

    The probe launches the real kernel with the program grid of the full
    problem (``cdiv(M, BLOCK_M) x cdiv(N, BLOCK_N)`` tiles, the same
    ``GROUP_M``) but 1 x 1 x 1 tiles and a single K step, records a
    ``"tile"`` trace and extends it to ``cdiv(K, BLOCK_K)`` steps
    (:func:`schedule_from_trace`). The interpreter runs the probe's programs
    in batches (``batch_programs``), which records the same trace as one
    program at a time. Probes are cached per (tile grid, ``GROUP_M``,
    ``NUM_SMS``) and schedules per geometry.

    Parameters
    ----------
    M, N, K : int
        Problem shape.
    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M : int
        Kernel meta-parameters.
    itemsize : int, default=2
        Bytes per A/B element.
    out_itemsize : int, optional
        Bytes per C element (default ``itemsize``).
    NUM_SMS : int, optional
        Programs of the persistent kernel; None for :func:`matmul_kernel`.
    k_merge : int, default=1
        Loop steps fused per simulated step (see :func:`schedule_from_trace`).
    max_probe_programs : int, optional
        Probe only the first this-many programs of the non-persistent kernel
        (the launch grid is cut, the kernel's mapping is unchanged).

    Returns
    -------
    schedule : TileSchedule
    n_programs : int
        Programs of the real launch (the schedule may hold a prefix).
    """
    npm, npn, nk = _cdiv(M, BLOCK_M), _cdiv(N, BLOCK_N), _cdiv(K, BLOCK_K)
    n_prog = npm * npn
    persistent = 0 if NUM_SMS is None else int(NUM_SMS)
    n_run = n_prog if (persistent or max_probe_programs is None) else min(
        n_prog, int(max_probe_programs))
    osz = itemsize if out_itemsize is None else out_itemsize
    sched = _matmul_schedule(npm, npn, nk, int(GROUP_M), persistent, n_run,
                             BLOCK_M * BLOCK_K * itemsize, BLOCK_K * BLOCK_N * itemsize,
                             BLOCK_M * BLOCK_N * osz, int(k_merge))
    return sched, (min(persistent, n_prog) if persistent else n_prog)


def clear_schedule_cache() -> None:
    """Empty the probe and schedule caches of :func:`matmul_tile_schedule`."""
    _matmul_probe.cache_clear()
    _matmul_schedule.cache_clear()


class KernelModelMeasurer(Measurer):
    """Scores configs of a library kernel with the GPU model.

    Parameters
    ----------
    kernel_name : {"matmul", "matmul_persistent", "softmax_fused", "flash_attention"}
        Which kernel (and space).
    shape : mapping of str to int
        ``{"M", "N", "K"}`` for the matmuls, ``{"M", "N"}`` for softmax,
        ``{"N", "d"}`` (optionally ``"heads"``) for flash attention.
    hardware : HardwareProfile, default=H100_SXM
    params : GpuModelParams, optional
        Model parameters (default ``GpuModelParams()``).
    dtype : str, default="float16"
        Operand dtype.
    max_simulated_loads : int, default=2_000_000
        Tile loads one L2 simulation may issue; above it ``k_merge`` loop
        steps are fused (reported as the ``k_merge`` metric).
    max_probe_programs : int, default=4096
        Programs of a matmul launch that are probed and simulated; larger grids are
        simulated on the prefix and extrapolated.
    l2_model : L2Model, optional
        Program progress and L2 partitions of the matmul traffic simulation
        (default :data:`~autotile.measure.gpu._l2sim.LOCKSTEP`, the seed model;
        :data:`~autotile.measure.gpu._l2sim.DRIFT` is fitted to H200 ncu bytes).

    Attributes
    ----------
    space : Space
        The kernel's space for ``shape``.

    Raises
    ------
    TypeError
        If ``shape`` is not a mapping, ``hardware`` is not a
        :class:`HardwareProfile`, ``params`` is not a :class:`GpuModelParams`
        (or None) or ``l2_model`` is not an :class:`L2Model` (or None).
    MeasureError
        If ``kernel_name`` is unknown, or ``shape`` lacks a key of the kernel
        or has a key it does not take (matmul: ``M, N, K``; softmax: ``M, N``;
        flash attention: ``N, d``).

    Notes
    -----
    Metrics (``KERNEL_MODEL_METRICS``): ``time_s``, ``tflops`` (useful
    FLOP/s / 1e12), ``hbm_bytes`` (reads + writes when
    ``params.count_writes``), ``hbm_read_bytes``, ``l2_hit_rate``,
    ``compute_s``, ``memory_s``, ``occupancy`` (resident warps / max),
    ``bound`` (0 compute, 1 memory), ``blocks_per_sm``, ``n_waves``,
    ``k_merge``. Objective: ``time_s``. A config that cannot launch is
    ``"infeasible"`` with the reason.
    """

    metrics = KERNEL_MODEL_METRICS
    objective = "time_s"

    def __init__(self, kernel_name: str, shape: Mapping[str, int],
                 hardware: HardwareProfile = H100_SXM, params: GpuModelParams | None = None,
                 *, dtype: str = "float16", max_simulated_loads: int = 2_000_000,
                 max_probe_programs: int = 4096, l2_model: L2Model | None = None) -> None:
        if not isinstance(hardware, HardwareProfile):
            raise TypeError(
                "KernelModelMeasurer: hardware must be a HardwareProfile (e.g. "
                "autotile.measure.H100_SXM), got "
                f"{type(hardware).__name__} hardware={_short(hardware)}")
        if params is not None and not isinstance(params, GpuModelParams):
            raise TypeError(
                "KernelModelMeasurer: params must be a GpuModelParams or None, got "
                f"{type(params).__name__} params={_short(params)}")
        if l2_model is not None and not isinstance(l2_model, L2Model):
            raise TypeError(
                "KernelModelMeasurer: l2_model must be an L2Model or None, got "
                f"{type(l2_model).__name__} l2_model={_short(l2_model)}")
        self.kernel_name = kernel_name
        self.shape = check_shape_mapping("KernelModelMeasurer", shape)
        self.hardware = hardware
        self.params = GpuModelParams() if params is None else params
        self.dtype = dtype
        self.max_simulated_loads = int(max_simulated_loads)
        self.max_probe_programs = int(max_probe_programs)
        self.l2_model = l2_model
        s = self.shape
        dims = _SHAPE_KEYS.get(kernel_name)
        if dims is not None and set(s) - set(dims):
            raise MeasureError(
                f"shape of {kernel_name!r} takes the keys {dims}, got unknown "
                f"{sorted(set(s) - set(dims))} in shape={s}")
        try:
            if kernel_name == "matmul":
                self.space: Space = matmul_space(s["M"], s["N"], s["K"], dtype)
            elif kernel_name == "matmul_persistent":
                self.space = persistent_matmul_space(s["M"], s["N"], s["K"], dtype, hardware)
            elif kernel_name == "softmax_fused":
                self.space = softmax_space(s["M"], s["N"], dtype)
            elif kernel_name == "flash_attention":
                self.space = flash_attention_space(s["N"], s["d"], dtype)
            else:
                raise MeasureError(
                    "kernel_name must be one of ('matmul', 'matmul_persistent', "
                    f"'softmax_fused', 'flash_attention'), got {kernel_name!r}")
        except KeyError as exc:
            raise MeasureError(f"shape misses {exc} for {kernel_name!r}, got {s}") from None
        self._itemsize = DTYPE_ITEMSIZE[dtype]

    def settings(self) -> dict[str, Any]:
        """Everything besides the space that changes the numbers, JSON-able.

        Returns
        -------
        dict
            ``kernel_name``, ``shape``, ``dtype``, ``hardware`` (every field
            of the profile, not just its name), ``params`` (every
            :class:`GpuModelParams` field), ``l2_model`` (None for the
            default), ``max_simulated_loads`` and ``max_probe_programs``.
        """
        return {"dtype": self.dtype, "hardware": self.hardware, "kernel_name": self.kernel_name,
                "l2_model": self.l2_model, "max_probe_programs": self.max_probe_programs,
                "max_simulated_loads": self.max_simulated_loads, "params": self.params,
                "shape": self.shape}

    # -- helpers ---------------------------------------------------------------------
    def _infeasible(self, cfg: Any, reason: str) -> MeasureResult:
        return MeasureResult(self.config_text(cfg), "infeasible", {}, 0.0, reason)

    def _ok(self, cfg: Any, m: dict[str, float]) -> MeasureResult:
        return MeasureResult(self.config_text(cfg), "ok", m)

    def _feasibility_space(self) -> Any:
        """The space whose constraints a config must meet to be scored (``self.space``)."""
        return self.space

    def _measure(self, config: Any) -> MeasureResult:
        bad = self._feasibility_space().violations(config)
        if bad:
            return self._infeasible(config, "; ".join(bad))
        cfg = dict(config)
        if self.kernel_name.startswith("matmul"):
            return self._matmul(config, cfg)
        if self.kernel_name == "softmax_fused":
            return self._softmax(config, cfg)
        return self._flash(config, cfg)

    # -- matmul ----------------------------------------------------------------------
    def _matmul(self, config: Any, c: dict[str, Any]) -> MeasureResult:
        hw, p, isz = self.hardware, self.params, self._itemsize
        M, N, K = self.shape["M"], self.shape["N"], self.shape["K"]
        bm, bn, bk = c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"]
        nw, ns = c["num_warps"], c["num_stages"]
        smem = matmul_smem_bytes(bm, bn, bk, ns, isz)
        regs = matmul_regs_per_thread(bm, bn, nw, p)
        occ = occupancy(hw, num_warps=nw, smem_bytes=smem, regs_per_thread=regs)
        if occ.reason is not None:
            return self._infeasible(config, occ.reason)
        n_conc = hw.n_sms * occ.blocks_per_sm
        npm, npn, nk = _cdiv(M, bm), _cdiv(N, bn), _cdiv(K, bk)
        persistent = c.get("NUM_SMS") if self.kernel_name == "matmul_persistent" else None
        n_tiles = npm * npn
        n_probe = n_tiles if persistent else min(n_tiles, self.max_probe_programs)
        k_merge = max(1, min(nk, math.ceil(2 * n_probe * nk / self.max_simulated_loads)))
        sched, n_prog = matmul_tile_schedule(
            M, N, K, bm, bn, bk, c["GROUP_M"], itemsize=isz, NUM_SMS=persistent,
            k_merge=k_merge, max_probe_programs=self.max_probe_programs)
        if persistent and n_prog > n_conc:
            return self._infeasible(
                config, f"NUM_SMS={persistent} programs exceed the {n_conc} resident "
                f"programs (a persistent kernel needs all of its programs resident)")
        st: L2Stats = simulate_l2(sched, l2_bytes=hw.l2_bytes, n_concurrent=n_conc,
                                  total_programs=None if persistent else n_prog,
                                  model=self.l2_model, n_sms=hw.n_sms)
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
                            smem_step_bytes=matmul_smem_step_bytes(bm, bn, bk, nw, isz))
        return self._ok(config, {
            "time_s": est.time_s, "tflops": 2.0 * M * N * K / est.time_s / 1e12,
            "hbm_bytes": hbm, "hbm_read_bytes": st.hbm_read_bytes,
            "l2_hit_rate": st.l2_hit_rate, "compute_s": est.compute_s,
            "memory_s": est.memory_s, "occupancy": occ.occupancy,
            "bound": 0.0 if est.bound == "compute" else 1.0,
            "blocks_per_sm": float(occ.blocks_per_sm),
            "n_waves": float(_cdiv(n_units, n_conc)), "k_merge": float(k_merge)})

    # -- softmax ---------------------------------------------------------------------
    def _softmax(self, config: Any, c: dict[str, Any]) -> MeasureResult:
        hw, p, isz = self.hardware, self.params, self._itemsize
        M, N = self.shape["M"], self.shape["N"]
        nw, rows = c["num_warps"], c["ROWS_PER_PROGRAM"]
        block = 1 << max(0, (N - 1).bit_length())
        regs = -(-(math.ceil(block * rows / (32 * nw)) + p.reg_base_per_thread) // 8) * 8
        occ = occupancy(hw, num_warps=nw, smem_bytes=0, regs_per_thread=regs)
        if occ.reason is not None:
            return self._infeasible(config, occ.reason)
        n_prog = _cdiv(M, rows)
        read, write = M * N * isz, M * N * 4  # the fused kernel writes float32
        hbm = read + (write if p.count_writes else 0)
        est = estimate_time(hw, p, flops_per_program=5.0 * N * rows, n_programs=n_prog,
                            hbm_bytes=hbm, efficiency=1.0, blocks_per_sm=occ.blocks_per_sm,
                            num_stages=1, dtype="float32")
        return self._ok(config, {
            "time_s": est.time_s, "tflops": 5.0 * M * N / est.time_s / 1e12,
            "hbm_bytes": float(hbm), "hbm_read_bytes": float(read), "l2_hit_rate": 0.0,
            "compute_s": est.compute_s, "memory_s": est.memory_s,
            "occupancy": occ.occupancy, "bound": 0.0 if est.bound == "compute" else 1.0,
            "blocks_per_sm": float(occ.blocks_per_sm),
            "n_waves": float(_cdiv(n_prog, hw.n_sms * occ.blocks_per_sm)), "k_merge": 1.0})

    # -- flash attention -------------------------------------------------------------
    def _flash(self, config: Any, c: dict[str, Any]) -> MeasureResult:
        hw, p, isz = self.hardware, self.params, self._itemsize
        n, d = self.shape["N"], self.shape["d"]
        heads = self.shape.get("heads", 1)
        bm, bn, nw, ns = c["BLOCK_M"], c["BLOCK_N"], c["num_warps"], c["num_stages"]
        smem = bm * d * isz + ns * 2 * bn * d * isz  # Q once, K and V per stage
        regs = -(-(math.ceil((bm * d + bm * bn) / (32 * nw)) + p.reg_base_per_thread)
                 // 8) * 8
        occ = occupancy(hw, num_warps=nw, smem_bytes=smem, regs_per_thread=regs)
        if occ.reason is not None:
            return self._infeasible(config, occ.reason)
        n_prog = _cdiv(n, bm) * heads
        hbm = float(io_flash(n, d, bm, isz, block_n=bn, n_heads=heads))
        eff = matmul_efficiency(bm, bn, d, nw, p)
        flops_prog = 4.0 * bm * _cdiv(n, bn) * bn * d
        est = estimate_time(hw, p, flops_per_program=flops_prog, n_programs=n_prog,
                            hbm_bytes=hbm, efficiency=eff, blocks_per_sm=occ.blocks_per_sm,
                            num_stages=ns, dtype=self.dtype)
        return self._ok(config, {
            "time_s": est.time_s, "tflops": 4.0 * n * n * d * heads / est.time_s / 1e12,
            "hbm_bytes": hbm, "hbm_read_bytes": hbm, "l2_hit_rate": 0.0,
            "compute_s": est.compute_s, "memory_s": est.memory_s,
            "occupancy": occ.occupancy, "bound": 0.0 if est.bound == "compute" else 1.0,
            "blocks_per_sm": float(occ.blocks_per_sm),
            "n_waves": float(_cdiv(n_prog, hw.n_sms * occ.blocks_per_sm)), "k_merge": 1.0})


# --------------------------------------------------------------------------------------
# flash attention: three objectives (seed §4.4)
def flash_attention_objectives(N: int, d: int, BLOCK_M: int, BLOCK_N: int,
                               dtype: str = "float16") -> tuple[int, int, int]:
    """The seed's three flash-attention objectives for one block shape.

    Parameters
    ----------
    N, d : int
        Sequence length and head dimension (one head, not causal).
    BLOCK_M, BLOCK_N : int
        Query rows per program and key rows per step.
    dtype : str, default="float16"

    Returns
    -------
    hbm_bytes : int
        :func:`~autotile.kernels.io_flash` (minimise).
    onchip_bytes : int
        fp32 accumulator plus score block per program,
        :func:`~autotile.kernels.onchip_flash_bytes` (minimise).
    n_programs : int
        ``cdiv(N, BLOCK_M)`` (parallelism, maximise).

    References
    ----------
    Dao et al., "FlashAttention", NeurIPS 2022, Theorem 2 (IO complexity);
    seed §4.4.
    """
    isz = DTYPE_ITEMSIZE[dtype]
    return (io_flash(N, d, BLOCK_M, isz, block_n=BLOCK_N),
            onchip_flash_bytes(BLOCK_M, d, BLOCK_N), _cdiv(N, BLOCK_M))


def flash_attention_pareto(N: int = 4096, d: int = 128, dtype: str = "float16"
                           ) -> list[dict[str, int]]:
    """Exact Pareto front of the three flash-attention objectives, by enumeration.

    ``num_warps`` and ``num_stages`` do not change the objectives, so the
    front is over the distinct ``(BLOCK_M, BLOCK_N)`` of
    :func:`flash_attention_space`.

    Returns
    -------
    list of dict
        ``BLOCK_M``, ``BLOCK_N``, ``hbm_bytes``, ``onchip_bytes``,
        ``n_programs`` of each non-dominated point, by increasing ``BLOCK_M``
        then ``BLOCK_N``.
    """
    space = flash_attention_space(N, d, dtype)
    pts = sorted({(c["BLOCK_M"], c["BLOCK_N"]) for c in space})
    objs = {bb: flash_attention_objectives(N, d, *bb, dtype) for bb in pts}

    def key(o: tuple[int, int, int]) -> tuple[int, int, int]:
        return (o[0], o[1], -o[2])  # all minimised

    front = []
    for bb, o in objs.items():
        ko = key(o)
        dominated = any(all(x <= y for x, y in zip(key(q), ko)) and key(q) != ko
                        for q in objs.values())
        if not dominated:
            front.append({"BLOCK_M": bb[0], "BLOCK_N": bb[1], "hbm_bytes": o[0],
                          "onchip_bytes": o[1], "n_programs": o[2]})
    return front


def flash_attention_study(N: int = 4096, d: int = 128, dtype: str = "float16", *,
                          n_trials: int = 60, seed: int = 0) -> Any:
    """Optuna NSGA-II study over :func:`flash_attention_space` with the three objectives.

    Directions: ``["minimize", "minimize", "maximize"]`` for
    ``(hbm_bytes, onchip_bytes, n_programs)``. Configs that break a space
    constraint are pruned.

    Parameters
    ----------
    N, d : int
    dtype : str, default="float16"
    n_trials : int, default=60
    seed : int, default=0
        Seed of the NSGA-II sampler.

    Returns
    -------
    optuna.Study
        ``study.best_trials`` is the front found.

    References
    ----------
    Deb et al., "A fast and elitist multiobjective genetic algorithm:
    NSGA-II", IEEE TEC 6(2), 2002; Optuna ``NSGAIISampler``.
    """
    import optuna

    space = flash_attention_space(N, d, dtype)

    def objective(trial: optuna.Trial) -> tuple[int, int, int]:
        cfg = {k.name: trial.suggest_categorical(k.name, list(k.values))
               for k in space.knobs}
        if not space.is_valid(cfg):
            raise optuna.TrialPruned(", ".join(space.violations(cfg)))
        return flash_attention_objectives(N, d, cfg["BLOCK_M"], cfg["BLOCK_N"], dtype)

    study = optuna.create_study(directions=["minimize", "minimize", "maximize"],
                                sampler=optuna.samplers.NSGAIISampler(seed=seed))
    study.optimize(objective, n_trials=n_trials)
    return study
