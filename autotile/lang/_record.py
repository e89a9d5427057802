"""What a launch did to memory: :class:`LaunchRecord` and :class:`AccessTrace`.

Every launch produces a :class:`LaunchRecord` (per-program, per-buffer
element counts and per-program op counts -- tensor-core FLOPs, ALU and SFU
lanes, tile and scratch sizes, :mod:`autotile.lang._opcount`; always on, a
few integer additions per op), available as ``kernel.last_record``.  A
compact :class:`AccessTrace` is built only when asked for, with
:func:`recording`::

    with tl.recording(trace="line") as rec:
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    record = rec.last                # LaunchRecord
    record.trace.addr                # uint64 byte addresses, program order

Trace granularities (one row per ...):

``"element"``
    active lane of every load/store (``size_bytes`` = itemsize);
``"sector"`` / ``"line"``
    distinct 32-byte sector / 128-byte line touched by one load/store op
    (deduplicated within the op, offsets aligned down);
``"tile"``
    load/store op: ``offset_bytes`` is the lowest byte touched and
    ``size_bytes`` the bytes actually accessed (active lanes x itemsize).

Rows are in execution order: programs in linear order (axis 0 fastest),
ops in program order -- also for a batched launch (``batch_programs=``),
whose rows are put back in that order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["AccessTrace", "LaunchRecord", "Recorder", "recording", "GRANULARITIES"]

GRANULARITIES = {"element": 0, "sector": 32, "line": 128, "tile": -1}


@dataclass(frozen=True, eq=False)
class AccessTrace:
    """Columns of a memory access trace, all of shape (n_accesses,).

    Attributes
    ----------
    granularity : str
        ``"element"``, ``"sector"``, ``"line"`` or ``"tile"``.
    buffer : ndarray of int16
        Buffer id (index into ``buffer_names``).
    offset_bytes : ndarray of int64
        Byte offset within the buffer.
    size_bytes : ndarray of int64
        Bytes covered by the row.
    is_write : ndarray of bool
        Whether the access writes (atomics appear as a read row and a write row).
    program : ndarray of int32
        Linear program index (``pid0 + grid0 * (pid1 + grid1 * pid2)``).
    op : ndarray of int32
        Index of the load/store op within its program.
    buffer_names : tuple of str
        Kernel parameter name of each buffer id.
    buffer_base_bytes : tuple of int
        Virtual base byte address of each buffer (4 KiB aligned, disjoint;
        arguments sharing memory share a base).
    """

    granularity: str
    buffer: npt.NDArray[np.int16]
    offset_bytes: npt.NDArray[np.int64]
    size_bytes: npt.NDArray[np.int64]
    is_write: npt.NDArray[np.bool_]
    program: npt.NDArray[np.int32]
    op: npt.NDArray[np.int32]
    buffer_names: tuple[str, ...]
    buffer_base_bytes: tuple[int, ...]

    def __len__(self) -> int:
        return int(self.buffer.size)

    @property
    def addr(self) -> npt.NDArray[np.uint64]:
        """Global virtual byte addresses (base of the buffer + offset), uint64."""
        base = np.asarray(self.buffer_base_bytes, dtype=np.int64)
        if base.size == 0:
            return np.zeros(0, dtype=np.uint64)
        return (base[self.buffer] + self.offset_bytes).astype(np.uint64)


@dataclass(frozen=True, eq=False)
class LaunchRecord:
    """Memory traffic of one launch, per program and per buffer.

    Attributes
    ----------
    kernel_name : str
        Name of the kernel function.
    grid : tuple of int
        Launch grid, padded to 3 entries.
    buffer_names : tuple of str
        Parameter name of each array argument, in parameter order.
    itemsize_bytes : tuple of int
        Element size of each buffer.
    program_ids : ndarray of int64, shape (n_programs, 3)
        Program id of each row, in execution (linear) order.  With the
        launch option ``programs=`` (a subset of the grid) only the programs
        that ran have a row.
    elems_read, elems_written : ndarray of int64, shape (n_programs, n_buffers)
        Elements loaded / stored by each program in each buffer (active
        lanes only; a lane accessed twice counts twice).
    masked_lanes : ndarray of int64, shape (n_programs,)
        Masked-off load/store lanes of each program.
    total_lanes : ndarray of int64, shape (n_programs,)
        All load/store lanes of each program.
    dot_flops : ndarray of int64, shape (n_programs,)
        Floating-point (or integer) operations of each program's ``tl.dot``
        calls: ``2 * M * N * K`` per dot of an ``(M, K)`` by a ``(K, N)``
        block (times the batch of a 3-D dot), summed.
    dot_operand_bytes : ndarray of int64, shape (n_programs,)
        Largest ``M * K * itemsize(a) + K * N * itemsize(b)`` (bytes; times
        the batch of a 3-D dot) over each program's dots -- the shared
        memory of one pipeline stage; 0 without a dot.
    alu_ops : ndarray of int64, shape (n_programs,)
        Lanes of element-wise arithmetic, comparisons, casts, ``where``,
        ``minimum``/``maximum``, ``fma`` on non-pointer values, plus one per
        input element of each reduction or scan (a 0-d value counts 1;
        pointer arithmetic counts 0).  Summed over the program.
    sfu_ops : ndarray of int64, shape (n_programs,)
        Lanes of special-function-unit ops: ``exp``, ``exp2``, ``log``,
        ``log2``, ``sqrt``, ``rsqrt``, ``sin``, ``cos``, ``erf`` and float
        division (its reciprocal).  Summed over the program.
    max_tile_elems : ndarray of int64, shape (n_programs,)
        Largest element count of any block the program created (a
        register-pressure proxy).
    scratch_bytes : ndarray of int64, shape (n_programs,)
        Largest block (bytes) that went through a layout change needing
        shared memory: ``trans``/``permute`` inputs, reduction and scan
        inputs, inputs of a ``reshape`` that moves more than size-1 axes;
        0 if none.
    reductions : ndarray of int64, shape (n_programs,)
        Reductions and scans each program ran (one per call, whatever its
        size).  Summed over the program.
    num_warps, num_stages : int
        Launch options (recorded, not used for execution).
    meta : dict
        Keyword arguments of the launch.
    trace : AccessTrace or None
        Access trace, when requested through :func:`recording`.
    n_programs_batched : int
        Programs that ran in batches (launch option ``batch_programs``); the
        others ran one at a time.  Everything else in the record is the same
        either way.

    Notes
    -----
    The op counters follow the rules of :mod:`autotile.lang._opcount`; they
    count lanes (elements of one program's block), whether or not a load
    mask is active.
    """

    kernel_name: str
    grid: tuple[int, int, int]
    buffer_names: tuple[str, ...]
    itemsize_bytes: tuple[int, ...]
    program_ids: npt.NDArray[np.int64]
    elems_read: npt.NDArray[np.int64]
    elems_written: npt.NDArray[np.int64]
    masked_lanes: npt.NDArray[np.int64]
    total_lanes: npt.NDArray[np.int64]
    dot_flops: npt.NDArray[np.int64]
    dot_operand_bytes: npt.NDArray[np.int64]
    alu_ops: npt.NDArray[np.int64]
    sfu_ops: npt.NDArray[np.int64]
    max_tile_elems: npt.NDArray[np.int64]
    scratch_bytes: npt.NDArray[np.int64]
    reductions: npt.NDArray[np.int64]
    num_warps: int = 4
    num_stages: int = 3
    meta: dict[str, Any] = field(default_factory=dict)
    trace: AccessTrace | None = None
    n_programs_batched: int = 0

    @property
    def n_programs(self) -> int:
        """Number of programs that ran (rows of the record)."""
        return int(self.program_ids.shape[0])

    @property
    def n_programs_total(self) -> int:
        """Number of programs of the grid (``n_programs`` unless a subset ran)."""
        g = self.grid
        return g[0] * g[1] * g[2]

    @property
    def linear_ids(self) -> npt.NDArray[np.int64]:
        """Linear index ``pid0 + grid0 * (pid1 + grid1 * pid2)`` of each row.

        Returns
        -------
        ndarray of int64 of shape (n_programs,)
            Increasing; ``arange(n_programs)`` unless a subset ran.
        """
        p, g = self.program_ids, self.grid
        return p[:, 0] + g[0] * (p[:, 1] + g[1] * p[:, 2])

    @property
    def bytes_read(self) -> npt.NDArray[np.int64]:
        """Bytes loaded, shape (n_programs, n_buffers)."""
        return self.elems_read * np.asarray(self.itemsize_bytes, dtype=np.int64)

    @property
    def bytes_written(self) -> npt.NDArray[np.int64]:
        """Bytes stored, shape (n_programs, n_buffers)."""
        return self.elems_written * np.asarray(self.itemsize_bytes, dtype=np.int64)

    def _col(self, buffer: str | int) -> int:
        if isinstance(buffer, int):
            return buffer
        try:
            return self.buffer_names.index(buffer)
        except ValueError:
            raise KeyError(f"no buffer named {buffer!r}; buffers are {self.buffer_names}") from None

    def program_index(self, pid: tuple[int, ...] | int) -> int:
        """Row of program ``pid`` (a tuple of 1-3 ints, or an int for axis 0).

        Raises
        ------
        KeyError
            If ``pid`` did not run (a launch with ``programs=``).
        """
        p = (pid,) if isinstance(pid, int) else tuple(pid)
        p = p + (0,) * (3 - len(p))
        g = self.grid
        lin = p[0] + g[0] * (p[1] + g[1] * p[2])
        if self.n_programs == self.n_programs_total:
            return lin
        ids = self.linear_ids
        row = int(np.searchsorted(ids, lin))
        if row == ids.size or ids[row] != lin:
            raise KeyError(f"program {pid} (linear index {lin}) did not run in this launch "
                           f"of {self.n_programs} of {self.n_programs_total} programs")
        return row

    def program(self, pid: tuple[int, ...] | int) -> dict[str, dict[str, int]]:
        """Counts of one program by buffer name.

        Returns
        -------
        dict
            ``{buffer: {"elems_read", "elems_written", "bytes_read", "bytes_written"}}``.
        """
        i = self.program_index(pid)
        out = {}
        for j, nm in enumerate(self.buffer_names):
            r, w = int(self.elems_read[i, j]), int(self.elems_written[i, j])
            s = self.itemsize_bytes[j]
            out[nm] = {"elems_read": r, "elems_written": w, "bytes_read": r * s,
                       "bytes_written": w * s}
        return out

    def total_elems_read(self, buffer: str | int | None = None) -> int:
        """Elements read from ``buffer`` (all buffers if None) by all programs."""
        if buffer is None:
            return int(self.elems_read.sum())
        return int(self.elems_read[:, self._col(buffer)].sum())

    def total_elems_written(self, buffer: str | int | None = None) -> int:
        """Elements written to ``buffer`` (all buffers if None) by all programs."""
        if buffer is None:
            return int(self.elems_written.sum())
        return int(self.elems_written[:, self._col(buffer)].sum())

    def total_bytes_read(self, buffer: str | int | None = None) -> int:
        """Bytes read from ``buffer`` (all buffers if None)."""
        b = self.bytes_read
        return int(b.sum() if buffer is None else b[:, self._col(buffer)].sum())

    def total_bytes_written(self, buffer: str | int | None = None) -> int:
        """Bytes written to ``buffer`` (all buffers if None)."""
        b = self.bytes_written
        return int(b.sum() if buffer is None else b[:, self._col(buffer)].sum())

    def op_totals(self) -> dict[str, int]:
        """Op counts over the programs that ran.

        Returns
        -------
        dict
            ``dot_flops``, ``alu_ops``, ``sfu_ops`` and ``reductions`` summed;
            ``dot_operand_bytes``, ``max_tile_elems`` and ``scratch_bytes``
            as the maximum over programs (0 for no rows).
        """
        def top(a: npt.NDArray[np.int64]) -> int:
            return int(a.max()) if a.size else 0

        return {"dot_flops": int(self.dot_flops.sum()), "alu_ops": int(self.alu_ops.sum()),
                "sfu_ops": int(self.sfu_ops.sum()),
                "reductions": int(self.reductions.sum()),
                "dot_operand_bytes": top(self.dot_operand_bytes),
                "max_tile_elems": top(self.max_tile_elems),
                "scratch_bytes": top(self.scratch_bytes)}

    def summary(self) -> dict[str, Any]:
        """Kernel-level totals: per buffer elements/bytes, programs, masked lanes, op counts.

        ``"ops"`` is :meth:`op_totals`.  Totals are over the programs that
        ran (``n_programs`` of ``n_programs_total``).
        """
        return {
            "kernel": self.kernel_name,
            "grid": self.grid,
            "n_programs": self.n_programs,
            "n_programs_total": self.n_programs_total,
            "masked_lanes": int(self.masked_lanes.sum()),
            "total_lanes": int(self.total_lanes.sum()),
            "ops": self.op_totals(),
            "buffers": {
                nm: {"elems_read": self.total_elems_read(j),
                     "elems_written": self.total_elems_written(j),
                     "bytes_read": self.total_bytes_read(j),
                     "bytes_written": self.total_bytes_written(j)}
                for j, nm in enumerate(self.buffer_names)
            },
        }


class Recorder:
    """Collects the :class:`LaunchRecord` of every launch inside :func:`recording`.

    Attributes
    ----------
    trace : str or None
        Trace granularity requested.
    records : list of LaunchRecord
        One per launch, in launch order.
    """

    def __init__(self, trace: str | None):
        self.trace = trace
        self.records: list[LaunchRecord] = []

    @property
    def last(self) -> LaunchRecord:
        """The most recent record.

        Raises
        ------
        IndexError
            If nothing was launched.
        """
        if not self.records:
            raise IndexError("no kernel was launched inside this recording() block")
        return self.records[-1]


RECORDER: ContextVar[Recorder | None] = ContextVar("autotile_lang_recorder", default=None)


@contextlib.contextmanager
def recording(trace: str | None = None) -> Iterator[Recorder]:
    """Record every launch in the block, optionally with an access trace.

    Parameters
    ----------
    trace : {None, "element", "sector", "line", "tile"}, default=None
        Access-trace granularity; None records counts only.

    Yields
    ------
    Recorder
        ``records`` fills up as kernels are launched.

    Raises
    ------
    ValueError
        For an unknown granularity.
    """
    if trace is not None and trace not in GRANULARITIES:
        raise ValueError(f"trace must be one of {sorted(GRANULARITIES)} or None, got {trace!r}")
    rec = Recorder(trace)
    token = RECORDER.set(rec)
    try:
        yield rec
    finally:
        RECORDER.reset(token)


def _batch_rows(ch: Any, gran: int, isz: int) -> tuple[Any, Any, Any] | None:
    """Rows of a :class:`~autotile.lang._batch.BatchChunk`: (offset_bytes, size_bytes, program).

    Rows are program-major and, per program, exactly those of the sequential
    chunk (same deduplication and order).
    """
    n = ch.n_act
    n_prog = n.size
    progs = ch.lo + np.arange(n_prog, dtype=np.int64)
    keep = n > 0
    if not keep.any():
        return None
    if gran < 0 and ch.uniform:
        off = np.full(n_prog, int(ch.act.min()) * isz, dtype=np.int64)
        return off, n * isz, progs
    act = np.tile(ch.act, n_prog) if ch.uniform else ch.act
    if gran < 0:
        starts = (np.cumsum(n) - n)[keep]
        off = np.minimum.reduceat(act, starts).astype(np.int64) * isz
        return off, n[keep] * isz, progs[keep]
    byte = act.astype(np.int64) * isz
    if gran == 0:
        return byte, np.full(byte.size, isz, dtype=np.int64), np.repeat(progs, n)
    line = byte // gran
    seg = np.repeat(np.arange(n_prog, dtype=np.int64), n)
    order = np.lexsort((line, seg))
    line, seg = line[order], seg[order]
    first = np.ones(line.size, dtype=bool)
    first[1:] = (line[1:] != line[:-1]) | (seg[1:] != seg[:-1])
    line, seg = line[first], seg[first]
    return line * gran, np.full(line.size, gran, dtype=np.int64), progs[seg]


def build_trace(granularity: str, chunks: list[Any], itemsizes: list[int],
                names: tuple[str, ...], bases: tuple[int, ...]) -> AccessTrace:
    """Assemble an :class:`AccessTrace` from the chunks a launch recorded.

    A chunk is ``(buf, elem_offsets, w, prog, op)`` for one op of one program,
    or a :class:`~autotile.lang._batch.BatchChunk` for one op of a batch of
    programs; rows of batches are put back in program order.
    """
    gran = GRANULARITIES[granularity]
    bufs, offs, sizes, ws, progs, ops = [], [], [], [], [], []
    batched = False
    for ch in chunks:
        if not isinstance(ch, tuple):
            batched = True
            rows = _batch_rows(ch, gran, itemsizes[ch.buf])
            if rows is None:
                continue
            off, size, prog = rows
            n = off.size
            offs.append(off)
            sizes.append(size)
            progs.append(prog.astype(np.int32))
            bufs.append(np.full(n, ch.buf, dtype=np.int16))
            ws.append(np.full(n, ch.is_write, dtype=np.bool_))
            ops.append(np.full(n, ch.op, dtype=np.int32))
            continue
        b, act, w, p, o = ch
        if act.size == 0:
            continue
        isz = itemsizes[b]
        byte = act.astype(np.int64) * isz
        if gran == 0:
            n = byte.size
            sizes.append(np.full(n, isz, dtype=np.int64))
        elif gran > 0:
            byte = np.unique(byte // gran) * gran
            n = byte.size
            sizes.append(np.full(n, gran, dtype=np.int64))
        else:
            n = 1
            sizes.append(np.array([act.size * isz], dtype=np.int64))
            byte = np.array([byte.min()], dtype=np.int64)
        offs.append(byte)
        bufs.append(np.full(n, b, dtype=np.int16))
        ws.append(np.full(n, w, dtype=np.bool_))
        progs.append(np.full(n, p, dtype=np.int32))
        ops.append(np.full(n, o, dtype=np.int32))

    def cat(xs: list[Any], dt: Any) -> Any:
        return np.concatenate(xs) if xs else np.zeros(0, dtype=dt)

    cols = [cat(bufs, np.int16), cat(offs, np.int64), cat(sizes, np.int64), cat(ws, np.bool_),
            cat(progs, np.int32), cat(ops, np.int32)]
    if batched:  # a batch's rows are op-major: stable sort by program
        order = np.argsort(cols[4], kind="stable")
        cols = [c[order] for c in cols]
    return AccessTrace(granularity, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], names,
                       bases)
