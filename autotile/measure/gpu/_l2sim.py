"""L2 / HBM traffic of a tile kernel: lockstep waves of programs through an LRU L2.

Model (seed §4.3, ``docs/gpu_model.md`` §L2):

* the L2 is one fully associative LRU cache of ``l2_bytes``, filled at the
  granularity of the kernel's tiles (one ``tl.load`` of one program = one
  tile; a tile occupies its nominal bytes);
* programs run in waves of ``n_concurrent`` consecutive program ids; a wave
  starts when the previous one has finished;
* the programs of a wave advance through their steps (K-loop iterations) in
  lockstep: at step ``t`` every running program, in program order, issues its
  loads of step ``t`` in its own op order;
* HBM read bytes = bytes of the read misses; stores go straight to HBM (each
  stored tile counts its bytes once as write traffic) and do not allocate.

:class:`L2Model` selects a variant (``docs/gpu_model.md`` §2.5): resident
programs that drift apart instead of advancing in lockstep (``stagger``), and
an L2 split into partitions that each hold their own copy of shared data
(``partitions``: the simulated capacity is ``l2_bytes // partitions``). The
default, :data:`LOCKSTEP`, is the model above; :data:`DRIFT` is the variant
fitted to ncu DRAM bytes on an H200.

The per-program loads come from the kernel itself, as a :class:`TileSchedule`:
:func:`schedule_from_trace` reads an interpreter trace (``"tile"``
granularity) of a *probe* launch with the real program grid but one step per
loop, maps every load's byte offset to tile coordinates (:class:`BufferTiling`)
and extends the loop ops along their loop axis to the full trip count.
:func:`lockstep_stream_from_trace` is the unreduced reference: a full trace
(every step), reordered into lockstep. Both feed the same numba LRU.

References
----------
Hennessy & Patterson, *Computer Architecture*, 6th ed., App. B.1 (LRU
replacement, compulsory misses). Triton tutorial 03 "Matrix Multiplication",
§"L2 Cache Optimizations" (program order and L2 reuse).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt

from autotile.errors import MeasureError
from autotile.lang import AccessTrace
from autotile.measure.gpu._l2_lockstep import lockstep_counts

__all__ = [
    "BufferTiling",
    "L2Model",
    "LOCKSTEP",
    "DRIFT",
    "DRIFT_WARM",
    "TileSchedule",
    "L2Stats",
    "schedule_from_trace",
    "lockstep_stream_from_trace",
    "simulate_l2",
    "simulate_l2_stream",
]

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class L2Model:
    """How resident programs progress and how much L2 they can share.

    Parameters
    ----------
    stagger : float, default=0.0
        Phase spread of the programs resident on one SM, as a fraction of a
        program's duration, in ``[0, 1]``. With ``b`` programs per SM, the
        ``k``-th one (``k = 0 .. b - 1``) of the first wave starts
        ``stagger * k / b`` of a program's duration after the first; every
        program lasts its number of steps, and a slot starts the next program
        id when its current program ends. 0 gives the lockstep waves of the
        seed model; 1 spreads the programs of an SM evenly over a program's
        duration; a single program per SM is never staggered.
    partitions : int, default=1
        L2 partitions that each cache their own copy of data read by SMs on
        both sides; the simulated capacity is ``l2_bytes // partitions``.
    warm_steps : float, default=0.0
        Program steps (loop iterations, before any ``k_merge``) of the whole
        launch after which the programs of an SM have drifted ``stagger``
        apart: a launch of ``E = waves x steps per program`` steps (``waves
        = programs / n_concurrent``, fractional) is replayed with the
        stagger ``stagger * min(1, E / warm_steps)``. The programs of an SM
        start a launch together and drift apart as it runs, so a launch of
        a few waves stays close to lockstep. 0 applies ``stagger`` from the
        start.

    Raises
    ------
    MeasureError
        If ``stagger`` is outside ``[0, 1]``, ``partitions`` is not an
        int >= 1, or ``warm_steps`` is negative or not finite.

    References
    ----------
    NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), §"L2 cache"
    (two partitions, each caching data for the SMs of its GPCs); NVIDIA H100
    Tensor Core GPU Architecture whitepaper v1.04, §"H100 L2 cache" (same
    partitioned design); ``docs/gpu_model.md`` §2.5 for the fit.
    """

    stagger: float = 0.0
    partitions: int = 1
    warm_steps: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.stagger <= 1.0:
            raise MeasureError(f"stagger must be in [0, 1], got stagger={self.stagger!r}")
        if (isinstance(self.partitions, bool) or int(self.partitions) != self.partitions
                or self.partitions < 1):
            raise MeasureError(f"partitions must be an int >= 1, got "
                               f"partitions={self.partitions!r}")
        if not (isinstance(self.warm_steps, (int, float)) and not isinstance(self.warm_steps, bool)
                and np.isfinite(self.warm_steps) and self.warm_steps >= 0):
            raise MeasureError(f"warm_steps must be a finite number >= 0, got "
                               f"warm_steps={self.warm_steps!r}")
        object.__setattr__(self, "stagger", float(self.stagger))
        object.__setattr__(self, "partitions", int(self.partitions))
        object.__setattr__(self, "warm_steps", float(self.warm_steps))

    @property
    def is_lockstep(self) -> bool:
        """True when programs advance in lockstep waves (``stagger == 0``)."""
        return self.stagger == 0.0

    def capacity_bytes(self, l2_bytes: int | None) -> int | None:
        """Simulated capacity, bytes: ``l2_bytes // partitions`` (None stays None)."""
        return None if l2_bytes is None else int(l2_bytes) // self.partitions

    def launch_stagger(self, n_waves: float, n_steps: float) -> float:
        """Stagger replayed for a launch of ``n_waves`` waves of ``n_steps``-step programs.

        Parameters
        ----------
        n_waves : float
            ``programs / n_concurrent`` (fractional).
        n_steps : float
            Loop steps of one program (before any ``k_merge``).

        Returns
        -------
        float
            ``stagger * min(1, n_waves * n_steps / warm_steps)``; ``stagger``
            when ``warm_steps`` is 0.
        """
        if self.warm_steps == 0.0:
            return self.stagger
        return self.stagger * min(1.0, n_waves * n_steps / self.warm_steps)


#: The seed model: lockstep waves, one L2 of the profile's size.
LOCKSTEP = L2Model()
#: Drifting programs and a two-partition L2, fitted to 35 ncu launches on an H200
#: (``benchmarks/h200/h200_analyze.py``, ``docs/gpu_model.md`` §2.5).
DRIFT = L2Model(stagger=0.5, partitions=2)
#: DRIFT whose stagger builds up over the first 800 program steps of a launch (the
#: traffic model of issue #13; ``warm_steps`` chosen by leave-one-file-out over the
#: six ncu files of ``benchmarks/h200/h200_traffic_v4.py``, 800 in every fold). Not
#: the default of any measurer: pass it as ``l2_model`` for traffic predictions.
DRIFT_WARM = L2Model(stagger=0.5, partitions=2, warm_steps=800.0)


@dataclass(frozen=True)
class BufferTiling:
    """How the loads of one buffer map to tiles.

    Parameters
    ----------
    name : str
        Kernel parameter name of the buffer (``AccessTrace.buffer_names``).
    ld_elems : int
        Row stride of the buffer *in the traced launch*, elements.
    tile_shape : (int, int)
        ``(rows, cols)`` of one tile *in the traced launch*, elements; a load
        whose lowest element is ``(r, c)`` belongs to tile ``(r // rows, c // cols)``.
    grid : (int, int)
        Tile grid ``(n_tile_rows, n_tile_cols)`` of the *modelled* (full-size)
        buffer.
    tile_bytes : int
        Bytes of one full-size tile (edge tiles count the nominal size).
    itemsize_bytes : int
        Bytes per element in the traced launch.
    loop_axis : {None, 0, 1}, default=None
        Axis a loop op walks, one tile per step; None for buffers loaded or
        stored outside the loop.

    Raises
    ------
    MeasureError
        If a size is not positive or ``loop_axis`` is not None, 0 or 1.
    """

    name: str
    ld_elems: int
    tile_shape: tuple[int, int]
    grid: tuple[int, int]
    tile_bytes: int
    itemsize_bytes: int
    loop_axis: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tile_shape", tuple(int(v) for v in self.tile_shape))
        object.__setattr__(self, "grid", tuple(int(v) for v in self.grid))
        vals = (self.ld_elems, *self.tile_shape, *self.grid, self.tile_bytes,
                self.itemsize_bytes)
        if len(self.tile_shape) != 2 or len(self.grid) != 2 or min(vals) <= 0:
            raise MeasureError(
                f"BufferTiling {self.name!r}: ld_elems, tile_shape, grid, tile_bytes and "
                f"itemsize_bytes must be positive (2 entries for shapes), got "
                f"ld_elems={self.ld_elems}, tile_shape={self.tile_shape}, grid={self.grid}, "
                f"tile_bytes={self.tile_bytes}, itemsize_bytes={self.itemsize_bytes}")
        if self.loop_axis not in (None, 0, 1):
            raise MeasureError(f"loop_axis must be None, 0 or 1, got {self.loop_axis!r}")

    def merged(self, k_merge: int) -> BufferTiling:
        """Return the tiling with ``k_merge`` consecutive loop tiles fused into one."""
        if self.loop_axis is None or k_merge == 1:
            return self
        g = list(self.grid)
        g[self.loop_axis] = -(-g[self.loop_axis] // k_merge)
        return BufferTiling(self.name, self.ld_elems, self.tile_shape, (g[0], g[1]),
                            self.tile_bytes * k_merge, self.itemsize_bytes, self.loop_axis)


@dataclass(frozen=True, eq=False)
class TileSchedule:
    """Tile-level loads of every program, compressed along the loop.

    Program ``p`` runs segments ``prog_seg_ptr[p] .. prog_seg_ptr[p + 1]``
    (a persistent program has one per output tile) one after another;
    segment ``s`` has ``seg_n_steps[s]`` steps and ops ``seg_op_ptr[s] ..
    seg_op_ptr[s + 1]``. At local step ``t`` op ``o`` touches tile
    ``op_base[o] + op_stride[o] * t`` when ``op_lo[o] <= t < op_hi[o]``.
    All arrays are int64 except ``op_write`` (bool).

    Attributes
    ----------
    prog_seg_ptr : ndarray of shape (n_programs + 1,)
    seg_n_steps : ndarray of shape (n_segments,)
    seg_op_ptr : ndarray of shape (n_segments + 1,)
    op_base, op_stride, op_lo, op_hi : ndarray of shape (n_ops,)
    op_write : ndarray of shape (n_ops,), bool
    tile_bytes : ndarray of shape (n_tiles,)
        Bytes of each tile id.
    buffer_names : tuple of str
        Buffers in tile-id order.
    """

    prog_seg_ptr: I64
    seg_n_steps: I64
    seg_op_ptr: I64
    op_base: I64
    op_stride: I64
    op_lo: I64
    op_hi: I64
    op_write: npt.NDArray[np.bool_]
    tile_bytes: I64
    buffer_names: tuple[str, ...]

    @property
    def n_programs(self) -> int:
        """Programs in the schedule."""
        return int(self.prog_seg_ptr.size - 1)

    @property
    def n_reads(self) -> int:
        """Tile loads issued by all programs (no cache involved)."""
        return int((self.op_hi - self.op_lo)[~self.op_write].sum())


@dataclass(frozen=True)
class L2Stats:
    """Result of an L2 simulation.

    Attributes
    ----------
    hbm_read_bytes : float
        Bytes of read misses (HBM -> L2), scaled by ``extrapolation``.
    hbm_write_bytes : float
        Bytes stored (L2 -> HBM), scaled by ``extrapolation``.
    compulsory_read_bytes : float
        Bytes of the distinct tiles read (an infinite L2), scaled likewise.
    n_reads, n_read_hits : int
        Tile loads simulated and how many hit (not scaled).
    n_waves : int
        Waves simulated.
    extrapolation : float, default=1.0
        Factor applied to the byte counts (> 1 when only a prefix of the
        programs was simulated).
    """

    hbm_read_bytes: float
    hbm_write_bytes: float
    compulsory_read_bytes: float
    n_reads: int
    n_read_hits: int
    n_waves: int
    extrapolation: float = 1.0

    def __post_init__(self) -> None:
        if self.n_read_hits > self.n_reads or min(self.n_reads, self.n_read_hits) < 0:
            raise MeasureError(f"0 <= n_read_hits <= n_reads must hold, got "
                               f"n_read_hits={self.n_read_hits}, n_reads={self.n_reads}")

    @property
    def hbm_bytes(self) -> float:
        """Read plus write HBM bytes."""
        return self.hbm_read_bytes + self.hbm_write_bytes

    @property
    def l2_hit_rate(self) -> float:
        """Fraction of tile loads that hit in L2 (0 when nothing was read)."""
        return self.n_read_hits / self.n_reads if self.n_reads else 0.0


# --------------------------------------------------------------------------------------
# trace -> tiles
def _tile_coords(trace: AccessTrace, tilings: Sequence[BufferTiling]
                 ) -> tuple[I64, I64, I64, I64]:
    """Rows of ``trace`` on a tiled buffer: (row index, buffer slot, tile row, tile col)."""
    if trace.granularity != "tile":
        raise MeasureError(f"trace granularity must be 'tile', got {trace.granularity!r}")
    slot_of = np.full(len(trace.buffer_names), -1, dtype=np.int64)
    for i, t in enumerate(tilings):
        if t.name not in trace.buffer_names:
            raise MeasureError(f"no buffer {t.name!r} in the trace; it has {trace.buffer_names}")
        slot_of[trace.buffer_names.index(t.name)] = i
    slot = slot_of[trace.buffer.astype(np.int64)]
    rows = np.flatnonzero(slot >= 0).astype(np.int64)
    slot = slot[rows]
    ld = np.array([t.ld_elems for t in tilings], dtype=np.int64)[slot]
    isz = np.array([t.itemsize_bytes for t in tilings], dtype=np.int64)[slot]
    tr = np.array([t.tile_shape[0] for t in tilings], dtype=np.int64)[slot]
    tc = np.array([t.tile_shape[1] for t in tilings], dtype=np.int64)[slot]
    elem = trace.offset_bytes[rows] // isz
    r, c = elem // ld // tr, elem % ld // tc
    return rows, slot, r, c


def _tile_ids(tilings: Sequence[BufferTiling], slot: I64, r: I64, c: I64
              ) -> tuple[I64, I64, I64]:
    """Global tile ids, per-slot id offsets and the per-tile byte table."""
    n_per = np.array([t.grid[0] * t.grid[1] for t in tilings], dtype=np.int64)
    first = np.concatenate(([0], np.cumsum(n_per)))
    rows_n = np.array([t.grid[0] for t in tilings], dtype=np.int64)[slot]
    cols_n = np.array([t.grid[1] for t in tilings], dtype=np.int64)[slot]
    if np.any(r >= rows_n) or np.any(c >= cols_n):
        raise MeasureError("a recorded load falls outside its BufferTiling.grid; check the "
                           "tilings against the traced launch")
    ids = first[slot] + r * cols_n + c
    tb = np.repeat(np.array([t.tile_bytes for t in tilings], dtype=np.int64), n_per)
    return ids, first, tb


def schedule_from_trace(trace: AccessTrace, tilings: Sequence[BufferTiling],
                        k_merge: int = 1) -> TileSchedule:
    """Build the full-size :class:`TileSchedule` from a one-step probe trace.

    The probe is the real kernel launched on the real program grid with every
    loop cut to a single step. Per program, ops are split into segments (a
    segment ends with its stores: a load after a store starts the next one).
    In a segment, loads of a buffer with a ``loop_axis`` are loop ops (one
    tile further along that axis per step, ``grid[loop_axis]`` steps); other
    loads before the first loop op are prologue ops (step 0); stores and later
    loads are epilogue ops (last step).

    Parameters
    ----------
    trace : AccessTrace
        ``"tile"`` trace of the probe launch.
    tilings : sequence of BufferTiling
        One per modelled buffer (others are ignored), with the probe's
        ``ld_elems``/``tile_shape`` and the full-size ``grid``/``tile_bytes``.
    k_merge : int, default=1
        Fuse this many consecutive loop steps into one (coarser tiles of
        ``k_merge`` times the bytes): exact for 1, an approximation that
        divides the simulation cost by ``k_merge`` otherwise.

    Returns
    -------
    TileSchedule

    Raises
    ------
    MeasureError
        If the trace is not at tile granularity, a load falls outside its
        tiling, or two loop buffers of one segment disagree on the trip count.
    """
    if k_merge < 1:
        raise MeasureError(f"k_merge must be >= 1, got k_merge={k_merge}")
    tilings = [t.merged(k_merge) for t in tilings]
    rows, slot, r, c = _tile_coords(trace, tilings)
    ids, _, tb = _tile_ids(tilings, slot, r, c)
    prog = trace.program[rows].astype(np.int64)
    w = trace.is_write[rows]
    n = rows.size
    n_prog = int(trace.program.max()) + 1 if len(trace) else 0
    axis = np.array([-1 if t.loop_axis is None else t.loop_axis for t in tilings])[slot]
    ext = np.array([1 if t.loop_axis is None else t.grid[t.loop_axis] for t in tilings],
                   dtype=np.int64)[slot]
    cols_n = np.array([t.grid[1] for t in tilings], dtype=np.int64)[slot]
    new = np.ones(n, dtype=bool)
    new[1:] = (prog[1:] != prog[:-1]) | (w[:-1] & ~w[1:])
    seg = np.cumsum(new) - 1
    n_seg = int(seg[-1]) + 1 if n else 0
    loop = ~w & (axis >= 0)
    idx = np.arange(n)
    first_loop = np.full(n_seg, n, dtype=np.int64)
    np.minimum.at(first_loop, seg[loop], idx[loop])
    steps_hi = np.ones(n_seg, dtype=np.int64)
    steps_lo = np.full(n_seg, np.iinfo(np.int64).max, dtype=np.int64)
    np.maximum.at(steps_hi, seg[loop], ext[loop])
    np.minimum.at(steps_lo, seg[loop], ext[loop])
    has_loop = first_loop < n
    if np.any(steps_lo[has_loop] != steps_hi[has_loop]):
        raise MeasureError("loop buffers of one segment have different trip counts")
    n_steps = steps_hi
    ns = n_steps[seg]
    prologue = ~w & ~loop & (idx < first_loop[seg])
    lo = np.where(loop | prologue, 0, ns - 1)
    hi = np.where(loop, ns, np.where(prologue, 1, ns))
    stride = np.where(loop, np.where(axis == 1, 1, cols_n), 0)
    seg_prog = prog[new]
    prog_seg_ptr = np.concatenate(([0], np.cumsum(np.bincount(seg_prog, minlength=n_prog))))
    seg_op_ptr = np.concatenate(([0], np.cumsum(np.bincount(seg, minlength=n_seg))))
    return TileSchedule(prog_seg_ptr.astype(np.int64), n_steps, seg_op_ptr.astype(np.int64),
                        ids, stride.astype(np.int64), lo.astype(np.int64),
                        hi.astype(np.int64), w.copy(), tb, tuple(t.name for t in tilings))


def lockstep_stream_from_trace(trace: AccessTrace, tilings: Sequence[BufferTiling],
                               n_concurrent: int) -> tuple[I64, npt.NDArray[np.bool_], I64]:
    """Reorder a full trace (every loop step recorded) into lockstep waves.

    This is the unreduced reference for :func:`schedule_from_trace`: the
    step of an access is counted from the trace itself (a program's step
    counter advances at every load of its first loop buffer; loads after a
    store belong to the next step), then accesses are ordered by (wave, step,
    program, trace order).

    Parameters
    ----------
    trace : AccessTrace
        ``"tile"`` trace of the full launch.
    tilings : sequence of BufferTiling
        With the launch's own ``ld_elems``, ``tile_shape`` and ``grid``.
    n_concurrent : int
        Programs per wave.

    Returns
    -------
    tile_ids : ndarray of int64, shape (n_accesses,)
    is_write : ndarray of bool, shape (n_accesses,)
    tile_bytes : ndarray of int64, shape (n_tiles,)
    """
    rows, slot, r, c = _tile_coords(trace, tilings)
    ids, _, tb = _tile_ids(tilings, slot, r, c)
    prog = trace.program[rows].astype(np.int64)
    w = trace.is_write[rows]
    is_loop = np.array([t.loop_axis is not None for t in tilings])[slot] & ~w
    step = np.zeros(rows.size, dtype=np.int64)
    cur_p, ctr, lead, after_store = -1, -1, -1, False
    for i in range(rows.size):
        p = int(prog[i])
        if p != cur_p:
            cur_p, ctr, lead, after_store = p, -1, -1, False
        if is_loop[i] and lead < 0:
            lead = int(slot[i])
        if is_loop[i] and slot[i] == lead:
            ctr += 1
            after_store = False
            step[i] = ctr
        elif w[i]:
            after_store = True
            step[i] = max(ctr, 0)
        else:
            step[i] = ctr + 1 if (after_store or ctr < 0) else ctr
    order = np.lexsort((np.arange(rows.size), prog, step, prog // int(n_concurrent)))
    return ids[order], w[order], tb


# --------------------------------------------------------------------------------------
# numba LRU
@numba.njit(cache=True, nogil=True, inline="always")
def _touch(t, tb, cap, prv, nxt, inc, st):  # type: ignore[no-untyped-def]
    """Access tile ``t``; return True on a hit. ``st`` = [head, tail, used_bytes]."""
    if inc[t]:
        if st[0] != t:  # unlink and move to the head
            p, q = prv[t], nxt[t]
            nxt[p] = q
            if q >= 0:
                prv[q] = p
            else:
                st[1] = p
            prv[t] = -1
            nxt[t] = st[0]
            prv[st[0]] = t
            st[0] = t
        return True
    inc[t] = True
    prv[t] = -1
    nxt[t] = st[0]
    if st[0] >= 0:
        prv[st[0]] = t
    else:
        st[1] = t
    st[0] = t
    st[2] += tb[t]
    while cap >= 0 and st[2] > cap and st[1] >= 0:
        v = st[1]
        inc[v] = False
        st[2] -= tb[v]
        st[1] = prv[v]
        if st[1] >= 0:
            nxt[st[1]] = -1
        else:
            st[0] = -1
    return False


@numba.njit(cache=True, nogil=True)
def _sim_schedule(prog_seg_ptr, seg_n_steps, seg_op_ptr, op_base, op_stride, op_lo,  # type: ignore[no-untyped-def]
                  op_hi, op_write, tb, n_conc, cap, p_hi):
    # The loop over a segment's ops is repeated in _sim_timed and _sim_phased on purpose:
    # a shared @njit helper (even with inline="always") took the scoring of one 8192^3
    # config from 26 to 60 ms CPU (measured with bench_gpu_model.py --only-scoring).
    n_t = tb.size
    prv = np.full(n_t, -1, np.int64)
    nxt = np.full(n_t, -1, np.int64)
    inc = np.zeros(n_t, np.bool_)
    seen = np.zeros(n_t, np.bool_)
    st = np.array([-1, -1, 0], np.int64)
    out = np.zeros(6, np.int64)  # reads, hits, read bytes, write bytes, compulsory, waves
    cur = np.empty(n_conc, np.int64)
    loc = np.empty(n_conc, np.int64)
    for w0 in range(0, p_hi, n_conc):
        w1 = min(w0 + n_conc, p_hi)
        out[5] += 1
        for j in range(w1 - w0):
            cur[j] = prog_seg_ptr[w0 + j]
            loc[j] = 0
        busy = True
        while busy:
            busy = False
            for j in range(w1 - w0):
                s = cur[j]
                if s >= prog_seg_ptr[w0 + j + 1]:
                    continue
                busy = True
                t = loc[j]
                for o in range(seg_op_ptr[s], seg_op_ptr[s + 1]):
                    if op_lo[o] <= t and t < op_hi[o]:
                        tile = op_base[o] + op_stride[o] * t
                        if op_write[o]:
                            out[3] += tb[tile]
                            continue
                        out[0] += 1
                        if not seen[tile]:
                            seen[tile] = True
                            out[4] += tb[tile]
                        if _touch(tile, tb, cap, prv, nxt, inc, st):
                            out[1] += 1
                        else:
                            out[2] += tb[tile]
                if t + 1 >= seg_n_steps[s]:
                    cur[j] = s + 1
                    loc[j] = 0
                else:
                    loc[j] = t + 1
    return out


@numba.njit(cache=True, nogil=True)
def _heap_push(hk, hp, n, key, val):  # type: ignore[no-untyped-def]
    """Push ``(key, val)`` on the min-heap of size ``n`` (ties: smaller val first)."""
    i = n
    hk[i] = key
    hp[i] = val
    while i > 0:
        par = (i - 1) >> 1
        if hk[par] > hk[i] or (hk[par] == hk[i] and hp[par] > hp[i]):
            hk[par], hk[i] = hk[i], hk[par]
            hp[par], hp[i] = hp[i], hp[par]
            i = par
        else:
            break
    return n + 1


@numba.njit(cache=True, nogil=True)
def _heap_pop(hk, hp, n):  # type: ignore[no-untyped-def]
    """Pop the smallest ``(key, val)``; returns ``(key, val, new size)``."""
    k0, v0 = hk[0], hp[0]
    n -= 1
    hk[0] = hk[n]
    hp[0] = hp[n]
    i = 0
    while True:
        lo = 2 * i + 1
        hi = lo + 1
        m = i
        if lo < n and (hk[lo] < hk[m] or (hk[lo] == hk[m] and hp[lo] < hp[m])):
            m = lo
        if hi < n and (hk[hi] < hk[m] or (hk[hi] == hk[m] and hp[hi] < hp[m])):
            m = hi
        if m == i:
            break
        hk[m], hk[i] = hk[i], hk[m]
        hp[m], hp[i] = hp[i], hp[m]
        i = m
    return k0, v0, n


@numba.njit(cache=True, nogil=True)
def _sim_timed(prog_seg_ptr, seg_n_steps, seg_op_ptr, op_base, op_stride, op_lo,  # type: ignore[no-untyped-def]
               op_hi, op_write, tb, n_conc, cap, p_hi, start0, step_t):
    """Event-ordered replay: program steps by (start + done steps x step time, program id).

    ``step_t[p]`` is program ``p``'s step duration (float64, length >= ``p_hi``; all
    ones for the library's L2 models, per-program values for the drift experiments
    of ``benchmarks/h200/h200_dram_bounds.py``). A slot takes the next program id when
    its program ends.
    """
    n_t = tb.size
    prv = np.full(n_t, -1, np.int64)
    nxt = np.full(n_t, -1, np.int64)
    inc = np.zeros(n_t, np.bool_)
    seen = np.zeros(n_t, np.bool_)
    st = np.array([-1, -1, 0], np.int64)
    out = np.zeros(6, np.int64)
    hk = np.empty(n_conc + 1, np.float64)
    hp = np.empty(n_conc + 1, np.int64)
    cur = np.empty(p_hi, np.int64)
    loc = np.zeros(p_hi, np.int64)
    done = np.zeros(p_hi, np.int64)
    t0 = np.zeros(p_hi, np.float64)
    n = 0
    nxt_p = min(n_conc, p_hi)
    for j in range(nxt_p):
        t0[j] = start0[j]
        cur[j] = prog_seg_ptr[j]
        n = _heap_push(hk, hp, n, t0[j], j)
    while n > 0:
        _, p, n = _heap_pop(hk, hp, n)
        s = cur[p]
        t = loc[p]
        if s < prog_seg_ptr[p + 1]:
            for o in range(seg_op_ptr[s], seg_op_ptr[s + 1]):
                if op_lo[o] <= t and t < op_hi[o]:
                    tile = op_base[o] + op_stride[o] * t
                    if op_write[o]:
                        out[3] += tb[tile]
                        continue
                    out[0] += 1
                    if not seen[tile]:
                        seen[tile] = True
                        out[4] += tb[tile]
                    if _touch(tile, tb, cap, prv, nxt, inc, st):
                        out[1] += 1
                    else:
                        out[2] += tb[tile]
            done[p] += 1
            if t + 1 >= seg_n_steps[s]:
                cur[p] = s + 1
                loc[p] = 0
            else:
                loc[p] = t + 1
        if cur[p] < prog_seg_ptr[p + 1]:
            n = _heap_push(hk, hp, n, t0[p] + done[p] * step_t[p], p)
        elif nxt_p < p_hi:  # the slot takes the next program id when this one ends
            q = nxt_p
            nxt_p += 1
            t0[q] = t0[p] + done[p] * step_t[p]
            cur[q] = prog_seg_ptr[q]
            n = _heap_push(hk, hp, n, t0[q], q)
    return out


@numba.njit(cache=True, nogil=True)
def _sim_stream(ids, is_write, tb, cap):  # type: ignore[no-untyped-def]
    n_t = tb.size
    prv = np.full(n_t, -1, np.int64)
    nxt = np.full(n_t, -1, np.int64)
    inc = np.zeros(n_t, np.bool_)
    seen = np.zeros(n_t, np.bool_)
    st = np.array([-1, -1, 0], np.int64)
    out = np.zeros(6, np.int64)
    for i in range(ids.size):
        tile = ids[i]
        if is_write[i]:
            out[3] += tb[tile]
            continue
        out[0] += 1
        if not seen[tile]:
            seen[tile] = True
            out[4] += tb[tile]
        if _touch(tile, tb, cap, prv, nxt, inc, st):
            out[1] += 1
        else:
            out[2] += tb[tile]
    return out


def _check_cap(l2_bytes: int | None) -> int:
    if l2_bytes is None:
        return -1
    if isinstance(l2_bytes, bool) or int(l2_bytes) != l2_bytes or l2_bytes < 0:
        raise MeasureError(f"l2_bytes must be an int >= 0 or None, got l2_bytes={l2_bytes!r}")
    return int(l2_bytes)


@numba.njit(cache=True, nogil=True)
def _sim_phased(prog_seg_ptr, seg_n_steps, seg_op_ptr, op_base, op_stride, op_lo,  # type: ignore[no-untyped-def]
                op_hi, op_write, tb, n_sms, n_conc, cap, p_hi, period, cls_int, cls_order,
                grp_ptr):
    """:func:`_sim_timed` when every program lasts ``period`` steps (same order, no heap).

    Slot ``j`` (class ``k = j // n_sms``) then runs programs ``j, j + n_conc, ...``
    back to back from time ``cls_int[k] + frac_k``; at each integer tick the
    classes are visited by increasing fractional start (``cls_order``, cut into
    groups of equal fraction by ``grp_ptr``) and, within a group, by program id.
    """
    n_t = tb.size
    prv = np.full(n_t, -1, np.int64)
    nxt = np.full(n_t, -1, np.int64)
    inc = np.zeros(n_t, np.bool_)
    seen = np.zeros(n_t, np.bool_)
    st = np.array([-1, -1, 0], np.int64)
    out = np.zeros(6, np.int64)
    n_cls = cls_int.size
    cur = np.empty(n_conc, np.int64)
    loc = np.zeros(n_conc, np.int64)
    pid = np.empty(n_conc, np.int64)
    for j in range(n_conc):
        pid[j] = j
        cur[j] = prog_seg_ptr[j] if j < p_hi else 0
    live = min(n_conc, p_hi)
    keys = np.empty(n_cls, np.int64)
    sel = np.empty(n_cls, np.int64)
    tau = 0
    while live > 0:
        for g in range(grp_ptr.size - 1):
            n_sel = 0
            for c in range(grp_ptr[g], grp_ptr[g + 1]):
                k = cls_order[c]
                u = tau - cls_int[k]
                if u < 0:
                    continue
                key = (u // period) * n_cls + k  # program id order: period index, then class
                i = n_sel
                while i > 0 and keys[i - 1] > key:
                    keys[i] = keys[i - 1]
                    sel[i] = sel[i - 1]
                    i -= 1
                keys[i] = key
                sel[i] = k
                n_sel += 1
            for c in range(n_sel):
                k = sel[c]
                for j in range(k * n_sms, min((k + 1) * n_sms, n_conc)):
                    p = pid[j]
                    if p >= p_hi:
                        continue
                    s = cur[j]
                    t = loc[j]
                    if s < prog_seg_ptr[p + 1]:
                        for o in range(seg_op_ptr[s], seg_op_ptr[s + 1]):
                            if op_lo[o] <= t and t < op_hi[o]:
                                tile = op_base[o] + op_stride[o] * t
                                if op_write[o]:
                                    out[3] += tb[tile]
                                    continue
                                out[0] += 1
                                if not seen[tile]:
                                    seen[tile] = True
                                    out[4] += tb[tile]
                                if _touch(tile, tb, cap, prv, nxt, inc, st):
                                    out[1] += 1
                                else:
                                    out[2] += tb[tile]
                        if t + 1 >= seg_n_steps[s]:
                            cur[j] = s + 1
                            loc[j] = 0
                        else:
                            loc[j] = t + 1
                    if cur[j] >= prog_seg_ptr[p + 1]:  # next program of this slot
                        pid[j] = p + n_conc
                        if pid[j] < p_hi:
                            cur[j] = prog_seg_ptr[pid[j]]
                            loc[j] = 0
                        else:
                            live -= 1
        tau += 1
    return out


def _program_steps(schedule: TileSchedule) -> I64:
    """Total steps of every program (sum over its segments)."""
    csum = np.concatenate(([0], np.cumsum(schedule.seg_n_steps)))
    return (csum[schedule.prog_seg_ptr[1:]] - csum[schedule.prog_seg_ptr[:-1]]).astype(np.int64)


def _run_staggered(schedule: TileSchedule, stagger: float, n_concurrent: int, n_sms: int,
                   cap: int, p_hi: int) -> npt.NDArray[np.int64]:
    """Time-ordered replay of :class:`L2Model` (phased fast path when durations are equal)."""
    s = schedule
    steps = _program_steps(s)[:p_hi]
    start0 = _stagger_starts(s, stagger, n_concurrent, n_sms)
    period = int(steps[0]) if steps.size else 0
    if period > 0 and np.all(steps == period):
        b = -(-n_concurrent // n_sms)
        v = start0[::n_sms][:b]
        cls_int = np.floor(v + 1e-9).astype(np.int64)
        frac = np.round(v - cls_int, 9)
        order = np.lexsort((np.arange(b), frac)).astype(np.int64)
        fs = frac[order]
        grp_ptr = np.concatenate(([0], np.flatnonzero(np.diff(fs) != 0) + 1, [b])
                                 ).astype(np.int64)
        out = _sim_phased(s.prog_seg_ptr, s.seg_n_steps, s.seg_op_ptr, s.op_base,
                          s.op_stride, s.op_lo, s.op_hi, s.op_write, s.tile_bytes,
                          int(n_sms), int(n_concurrent), cap, int(p_hi), period, cls_int,
                          order, grp_ptr)
    else:
        out = _sim_timed(s.prog_seg_ptr, s.seg_n_steps, s.seg_op_ptr, s.op_base, s.op_stride,
                         s.op_lo, s.op_hi, s.op_write, s.tile_bytes, int(n_concurrent), cap,
                         int(p_hi), start0, np.ones(int(p_hi), np.float64))
    return np.asarray(out, np.int64)


def _stagger_starts(schedule: TileSchedule, stagger: float, n_concurrent: int,
                    n_sms: int) -> npt.NDArray[np.float64]:
    """Start time (steps) of each first-wave slot: ``stagger * k * T / b`` for the k-th of an SM."""
    b = -(-n_concurrent // n_sms)
    first = schedule.prog_seg_ptr[:2]
    duration = float(schedule.seg_n_steps[first[0]:first[1]].sum()) if schedule.n_programs else 0.0
    k = np.arange(n_concurrent, dtype=np.int64) // n_sms
    return stagger * k * duration / b


def simulate_l2(schedule: TileSchedule, *, l2_bytes: int | None, n_concurrent: int,
                n_programs: int | None = None, total_programs: int | None = None,
                model: L2Model | None = None, n_sms: int | None = None,
                replay: str = "auto", k_merge: int = 1) -> L2Stats:
    """Run a :class:`TileSchedule` through an LRU L2 (lockstep waves by default).

    Parameters
    ----------
    schedule : TileSchedule
        From :func:`schedule_from_trace`.
    l2_bytes : int or None
        L2 capacity in bytes; None for an infinite cache (distinct tiles).
    n_concurrent : int
        Programs resident at once (``n_sms * blocks_per_sm``), one wave.
    n_programs : int, optional
        Simulate only programs ``0 .. n_programs - 1`` (default: all).
    total_programs : int, optional
        Programs of the real launch when ``schedule`` holds only a prefix of
        them; whole waves of the prefix are simulated and the byte counts
        scaled by ``total_programs / simulated_programs``.
    model : L2Model, optional
        Program progress and L2 partitions (default :data:`LOCKSTEP`, the
        seed model). With ``model.stagger > 0`` the programs are replayed in
        time order (:class:`L2Model`); ``n_waves`` is then
        ``ceil(programs / n_concurrent)``.
    n_sms : int, optional
        SMs sharing the ``n_concurrent`` slots (``blocks_per_sm =
        ceil(n_concurrent / n_sms)``); required when ``model.stagger > 0``.
    replay : {"auto", "loads"}, default="auto"
        ``"auto"`` computes the lockstep counts of a loop-tiled schedule (one
        segment per program, every read a loop op over all steps, as the
        matmul's) in NumPy from the structure of the stream
        (:func:`~autotile.measure.gpu._l2_lockstep.lockstep_counts`, the same
        numbers) and replays the loads one by one (numba) otherwise;
        ``"loads"`` always replays them.
    k_merge : int, default=1
        Loop steps fused per schedule step (as given to
        :func:`schedule_from_trace`); only ``model.warm_steps`` uses it, to
        count a program's steps before merging.

    Returns
    -------
    L2Stats

    Raises
    ------
    MeasureError
        If ``n_concurrent < 1``, ``l2_bytes`` is negative, ``k_merge < 1``,
        or ``n_sms`` is missing or below 1 for a staggered model.

    References
    ----------
    Seed §4.3 (lockstep waves of 132 programs, LRU over 16 KB tiles);
    ``docs/gpu_model.md`` §2.5 (the staggered, partitioned variant).
    """
    model = LOCKSTEP if model is None else model
    cap = _check_cap(l2_bytes)
    cap = cap if cap < 0 else cap // model.partitions
    if n_concurrent < 1:
        raise MeasureError(f"n_concurrent must be >= 1, got n_concurrent={n_concurrent}")
    if replay not in ("auto", "loads"):
        raise MeasureError(f"replay must be 'auto' or 'loads', got replay={replay!r}")
    if isinstance(k_merge, bool) or int(k_merge) != k_merge or k_merge < 1:
        raise MeasureError(f"k_merge must be an int >= 1, got k_merge={k_merge!r}")
    if not model.is_lockstep and (n_sms is None or n_sms < 1):
        raise MeasureError(f"a staggered L2Model needs n_sms >= 1, got n_sms={n_sms!r}")
    p_hi = schedule.n_programs if n_programs is None else min(int(n_programs),
                                                              schedule.n_programs)
    scale = 1.0
    if total_programs is not None and total_programs > schedule.n_programs:
        full = (schedule.n_programs // n_concurrent) * n_concurrent
        p_hi = full if full > 0 else schedule.n_programs
        scale = total_programs / p_hi
    s = schedule
    if model.warm_steps > 0.0:
        first = s.prog_seg_ptr[:2]
        n_steps = float(s.seg_n_steps[first[0]:first[1]].sum()) * int(k_merge) if (
            s.n_programs) else 0.0
        n_total = total_programs if total_programs is not None else p_hi
        model = L2Model(stagger=model.launch_stagger(n_total / n_concurrent, n_steps),
                        partitions=model.partitions)
    fast = lockstep_counts(s, int(n_concurrent), cap, int(p_hi)) if (
        model.is_lockstep and replay == "auto") else None
    if fast is not None:
        out = fast
    elif model.is_lockstep:
        out = _sim_schedule(s.prog_seg_ptr, s.seg_n_steps, s.seg_op_ptr, s.op_base,
                            s.op_stride, s.op_lo, s.op_hi, s.op_write, s.tile_bytes,
                            int(n_concurrent), cap, int(p_hi))
    else:
        assert n_sms is not None  # checked above
        out = _run_staggered(s, model.stagger, int(n_concurrent), int(n_sms), cap, int(p_hi))
        out[5] = -(-int(p_hi) // int(n_concurrent))
    return L2Stats(float(out[2]) * scale, float(out[3]) * scale, float(out[4]) * scale,
                   int(out[0]), int(out[1]), int(out[5]), scale)


def simulate_l2_stream(tile_ids: I64, is_write: npt.NDArray[np.bool_], tile_bytes: I64,
                       *, l2_bytes: int | None) -> L2Stats:
    """Run an explicit tile stream (e.g. :func:`lockstep_stream_from_trace`) through the LRU.

    Parameters
    ----------
    tile_ids : ndarray of int64, shape (n_accesses,)
    is_write : ndarray of bool, shape (n_accesses,)
    tile_bytes : ndarray of int64, shape (n_tiles,)
    l2_bytes : int or None
        Capacity in bytes; None for infinite.

    Returns
    -------
    L2Stats
        ``n_waves`` is 0 (the stream has no wave structure).
    """
    cap = _check_cap(l2_bytes)
    out = _sim_stream(np.ascontiguousarray(tile_ids, np.int64),
                      np.ascontiguousarray(is_write, np.bool_),
                      np.ascontiguousarray(tile_bytes, np.int64), cap)
    return L2Stats(float(out[2]), float(out[3]), float(out[4]), int(out[0]), int(out[1]), 0)
