"""Batched launches: many programs of one grid in a single pass of the kernel.

``kernel[grid](..., batch_programs=True)`` (or an int, the most programs per
batch) runs the programs of a launch in batches of consecutive programs.
Within a batch the kernel function is called *once*: ``tl.program_id``
returns the ids of all programs of the batch and every value that depends on
them is a :class:`~autotile.lang._tensor.BatchedTensor` with a leading
program axis.  Plain Python work (``for``/``if`` on constexprs and scalar
arguments) is done once per batch instead of once per program, which is what
makes a batch of tiny programs fast.

The result equals the sequential interpreter's (one program after another,
axis 0 fastest): memory, the :class:`~autotile.lang.LaunchRecord` counts
(memory and op counts: every op is counted once per batch with one
program's block shape, the same in every program of the batch) and the
:class:`~autotile.lang.AccessTrace` rows, in the same order.  A batch
falls back to fewer programs at a time whenever it cannot be exact:

* a Python-level decision (``if``, ``while``, ``range``, ``int()`` ...) on
  a value that differs between the programs raises
  :class:`~autotile.lang._state.Divergence`: the batch is undone and split
  into runs of consecutive programs that decided alike, each retried as a
  batch (runs shorter than :data:`MIN_BATCH`, or than ``batch_programs``
  when that is 2 or 3, go one program at a time);
* a builtin without batched support (atomics, scans, ``tl.reduce``, block
  pointers at program-dependent offsets, prints, ...), any error, or two
  programs of the batch touching the same memory with at least one write
  (checked exactly when a region is read after a store or stored after any
  access) raise :class:`~autotile.lang._state.NeedsSequential`: the batch is
  undone and its programs run one at a time, which also reproduces the
  sequential error, if any, at the right program.

Undoing a batch restores every element it stored (a journal of old values),
drops its trace rows and counts.  Ops of one batch run in program order per
op, so stores of several programs to one address in one op keep the last
program's value, as NumPy's fancy assignment (used by the sequential path
too) applies repeated indices in order.

Values are bitwise those of the sequential run: each op applies the same
NumPy function to the stacked blocks (elementwise ops do not depend on the
layout; ``dot`` multiplies every program's blocks with the same matmul as one
program; float sums reduce C-contiguous data in both paths, since NumPy's
summation order depends on the memory layout).

Not covered: Python side effects of the kernel function itself (a plain
``print``, appending to a global list) happen once per batch attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.lang import _dtypes as D
from autotile.lang._state import Divergence, Launch, NeedsSequential
from autotile.lang._tensor import BatchedTensor, tensor

__all__ = ["BatchRun", "BatchChunk", "run_batched", "consecutive_runs", "MIN_BATCH",
           "DEFAULT_BATCH_PROGRAMS"]

#: Programs per batch for ``batch_programs=True``.
DEFAULT_BATCH_PROGRAMS = 1024
#: Runs of fewer consecutive programs than this go one program at a time
#: (``min(MIN_BATCH, batch_programs)`` when ``batch_programs`` is smaller, but
#: at least 2: ``batch_programs=2`` or ``3`` does batch).
MIN_BATCH = 4


class BatchChunk:
    """Trace rows of one load/store op executed by every program of a batch.

    Attributes
    ----------
    buf : int
        Buffer id.
    act : ndarray of int64
        Active element offsets, program-major (C order of the batched
        offsets); for a ``uniform`` op, the offsets of one program.
    n_act : ndarray of int64, shape (n_programs,)
        Active lanes of each program.
    is_write : bool
        Whether the op writes.
    lo : int
        Linear id of the first program of the batch.
    op : int
        Op index within each program.
    uniform : bool
        Whether every program accessed the same offsets (``act``).
    """

    __slots__ = ("buf", "act", "n_act", "is_write", "lo", "op", "uniform")

    def __init__(self, buf: int, act: Any, n_act: Any, is_write: bool, lo: int, op: int,
                 uniform: bool):
        self.buf = buf
        self.act = act
        self.n_act = n_act
        self.is_write = is_write
        self.lo = lo
        self.op = op
        self.uniform = uniform


def _regions(buffers: list[Any]) -> tuple[list[int], list[int], list[bool]]:
    """Group buffers whose memory overlaps.

    Returns
    -------
    region : list of int
        Region id of each buffer (-1 for an empty buffer).
    offset_bytes : list of int
        Byte offset of each buffer's element 0 within its region.
    exact : list of bool
        Per region: all its buffers share one itemsize and element grid, so
        element addresses compare exactly.
    """
    spans = []
    for i, b in enumerate(buffers):
        if b.n:
            lo = int(b.flat.__array_interface__["data"][0])
            spans.append((lo, lo + b.n * b.itemsize, i))
    spans.sort()
    region = [-1] * len(buffers)
    offset = [0] * len(buffers)
    exact: list[bool] = []
    base = end = -1
    members: list[int] = []

    def close() -> None:
        if members:
            isz = {buffers[j].itemsize for j in members}
            exact.append(len(isz) == 1 and all(offset[j] % buffers[j].itemsize == 0
                                               for j in members))

    for lo, hi, i in spans:
        if lo >= end:
            close()
            members = []
            base, end = lo, hi
        end = max(end, hi)
        region[i] = len(exact)
        offset[i] = lo - base
        members.append(i)
    close()
    return region, offset, exact


class BatchRun:
    """State of one batch: programs ``lo .. hi - 1`` of a launch run together.

    Parameters
    ----------
    lo, hi : int
        Linear ids of the first and one past the last program.
    n_buffers : int
        Buffers of the launch.
    regions : tuple
        What :func:`_regions` returned for the launch's buffers.

    Attributes
    ----------
    n : int
        Programs in the batch.
    counts : ndarray of int64, shape (n, 2 * n_buffers)
        Elements read / written per program and buffer (as ``Launch.counts``).
    masked, lanes : ndarray of int64, shape (n,)
        Masked-off and all load/store lanes per program.
    """

    def __init__(self, lo: int, hi: int, n_buffers: int,
                 regions: tuple[list[int], list[int], list[bool]]):
        self.lo = lo
        self.n = hi - lo
        self.counts = np.zeros((self.n, 2 * n_buffers), dtype=np.int64)
        self.masked = np.zeros(self.n, dtype=np.int64)
        self.lanes = np.zeros(self.n, dtype=np.int64)
        self._region, self._offset, self._exact = regions
        self._journal: list[tuple[Any, Any, Any]] = []
        self._log: dict[int, list[tuple[Any, Any, Any, bool, bool]]] = {}
        self._written: set[int] = set()
        # per region: each program's byte span [lo, hi] over all its accesses and over
        # its writes; disjoint spans rule out a conflict without the exact check
        self._spans: dict[int, npt.NDArray[np.int64]] = {}

    # -- accounting --------------------------------------------------------------------
    def record(self, st: Launch, buf: Any, act: Any, n_act: Any, n_lanes: int,
               is_write: bool) -> None:
        """Count, check and trace one op executed by every program of the batch.

        Parameters
        ----------
        st : Launch
            The running launch.
        buf : Buffer
            Buffer accessed.
        act : ndarray of int64
            Active element offsets: program-major for all programs, or, when
            ``n_act`` is None, those of one program (every program accessed them).
        n_act : ndarray of int64 of shape (n,), or None
            Active lanes per program; None for the same ``act`` in every program.
        n_lanes : int
            Lanes (active or not) of the op in one program.
        is_write : bool
            Whether the op writes.

        Raises
        ------
        NeedsSequential
            If two programs of the batch touch the same memory and one writes.
        """
        uniform = n_act is None
        counts = np.full(self.n, act.size, dtype=np.int64) if uniform else n_act
        self.counts[:, 2 * buf.index + (1 if is_write else 0)] += counts
        self.lanes += n_lanes
        self.masked += n_lanes - counts
        self._hazard(buf, act, counts, uniform, is_write)
        if st.trace is not None:
            st.chunks.append(BatchChunk(buf.index, act, counts, is_write, self.lo, st.op,
                                        uniform))
        st.op += 1

    def save(self, buf: Any, act: Any) -> None:
        """Remember the elements ``act`` of ``buf`` before the batch overwrites them."""
        if act.size:
            self._journal.append((buf.flat, act, buf.flat[act]))

    def undo(self) -> None:
        """Restore every element the batch stored, newest first."""
        for flat, act, old in reversed(self._journal):
            flat[act] = old
        self._journal.clear()

    # -- cross-program memory dependences ----------------------------------------------
    def _hazard(self, buf: Any, act: Any, counts: Any, uniform: bool, is_write: bool) -> None:
        r = self._region[buf.index]
        if r < 0 or not act.size:
            return
        log = self._log.setdefault(r, [])
        check = bool(log) if is_write else r in self._written
        log.append((buf, act, counts, uniform, is_write))
        if is_write:
            self._written.add(r)
        self._update_spans(r, buf, act, counts, uniform, is_write)
        if check and not self._spans_disjoint(r) and (not self._exact[r]
                                                      or self._conflict(log)):
            raise NeedsSequential("programs of the batch share memory through a store")

    def _update_spans(self, r: int, buf: Any, act: Any, counts: Any, uniform: bool,
                      is_write: bool) -> None:
        """Add an access to region ``r``'s per-program byte spans (O(programs))."""
        sp = self._spans.get(r)
        if sp is None:
            big = np.iinfo(np.int64).max
            sp = self._spans[r] = np.array([[big] * self.n, [-1] * self.n,
                                            [big] * self.n, [-1] * self.n], dtype=np.int64)
        b = self._offset[buf.index] + act.astype(np.int64) * buf.itemsize
        if uniform:
            lo = np.full(self.n, b.min(), np.int64)
            hi = np.full(self.n, b.max() + buf.itemsize - 1, np.int64)
            has = np.ones(self.n, bool)
        else:
            has = np.asarray(counts) > 0
            starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[has]
            lo = np.zeros(self.n, np.int64)
            hi = np.zeros(self.n, np.int64)
            if starts.size:
                lo[has] = np.minimum.reduceat(b, starts)
                hi[has] = np.maximum.reduceat(b, starts) + buf.itemsize - 1
        rows = (0, 1, 2, 3) if is_write else (0, 1)
        for k in rows:
            if k % 2 == 0:
                sp[k, has] = np.minimum(sp[k, has], lo[has])
            else:
                sp[k, has] = np.maximum(sp[k, has], hi[has])

    def _spans_disjoint(self, r: int) -> bool:
        """Whether no program's write span in region ``r`` meets another program's span.

        Then no address is shared through a store and the exact check is not
        needed. Run only where the exact check would run (a write after
        earlier accesses, a read after a write).
        """
        sp = self._spans[r]
        wl, wh, al, ah = sp[2], sp[3], sp[0], sp[1]
        w = np.flatnonzero(wh >= 0)
        if not w.size:
            return True
        meet = (wl[w, None] <= ah[None, :]) & (al[None, :] <= wh[w, None])
        meet[np.arange(w.size), w] = False  # a program's own accesses
        return not bool(meet.any())

    def _conflict(self, log: list[tuple[Any, Any, Any, bool, bool]]) -> bool:
        """Whether an address is touched by two programs of the batch, one writing."""
        addr, prog, wr = [], [], []
        progs = np.arange(self.n, dtype=np.int64)
        for buf, act, counts, uniform, is_write in log:
            b = self._offset[buf.index] + act.astype(np.int64) * buf.itemsize
            if uniform:
                b = np.tile(b, self.n)
            addr.append(b)
            prog.append(np.repeat(progs, counts))
            wr.append(np.full(b.size, is_write))
        a = np.concatenate(addr)
        p = np.concatenate(prog)
        w = np.concatenate(wr)
        order = np.lexsort((p, a))
        a, p, w = a[order], p[order], w[order]
        start = np.flatnonzero(np.concatenate(([True], a[1:] != a[:-1])))
        last = np.concatenate((start[1:], [a.size])) - 1
        shared = p[start] != p[last]
        return bool(np.any(shared & np.logical_or.reduceat(w, start)))


def _pid_tensor(ids: Any) -> tensor:
    if ids[0] == ids[-1] and (ids == ids[0]).all():
        return tensor(np.int32(ids[0]), D.int32)
    return BatchedTensor(ids.astype(np.int32), D.int32)


def _segments(key: Any) -> list[tuple[int, int]]:
    """Runs ``[start, end)`` of equal consecutive entries of ``key``."""
    cut = np.flatnonzero(key[1:] != key[:-1]) + 1
    bounds = [0, *cut.tolist(), int(key.size)]
    return list(zip(bounds[:-1], bounds[1:]))


def consecutive_runs(lin: Any) -> list[tuple[int, int]]:
    """Rows ``[a, b)`` of ``lin`` whose linear program ids are consecutive.

    Parameters
    ----------
    lin : ndarray of int64 of shape (n,)
        Strictly increasing linear program ids (all of a grid, or the subset
        of a launch with ``programs=``).

    Returns
    -------
    list of (int, int)
        ``lin[a:b]`` is ``lin[a] + arange(b - a)`` for each run; one run for
        a whole grid, none for ``n = 0``.
    """
    if lin.size == 0:
        return []
    cut = (np.flatnonzero(np.diff(lin) != 1) + 1).tolist()
    bounds = [0, *cut, int(lin.size)]
    return list(zip(bounds[:-1], bounds[1:]))


def run_batched(st: Launch, fn: Callable[..., Any], call_args: list[Any], n_prog: int,
                max_batch: int, counts: Any, masked: Any, lanes: Any, ops: Any,
                run_sequential: Callable[[int, int], None], start: int = 0) -> int:
    """Run programs ``start .. start + n_prog - 1`` in batches of up to ``max_batch``.

    Parameters
    ----------
    st : Launch
        The launch (``grid``, ``buffers``, ``chunks``).
    fn : callable
        The kernel function.
    call_args : list
        Its converted arguments.
    n_prog : int
        Programs to run.
    max_batch : int
        Most programs per batch. Runs shorter than ``min(MIN_BATCH,
        max_batch)`` (at least 2) go one program at a time, so
        ``max_batch=1`` runs every program alone.
    counts, masked, lanes, ops : ndarray
        Per-program counters, filled for every program: program ``i`` (a
        linear id) fills row ``i - start``.  ``ops`` holds the op counters
        (:data:`~autotile.lang._state.OP_COUNTS` columns); every program of
        a batch gets the batch's counts, which are per program.
    run_sequential : callable
        ``run_sequential(lo, hi)`` runs programs ``lo .. hi - 1`` (linear
        ids) one at a time and fills the counters.
    start : int, default=0
        Linear id of the first program (a launch with ``programs=`` runs
        each run of consecutive ids through here).

    Returns
    -------
    int
        Programs that ran in batches (the others ran one at a time).
    """
    regions = _regions(st.buffers)
    nb = len(st.buffers)
    g0, g1 = st.grid[0], st.grid[1]
    end = start + n_prog
    todo = [(lo, min(lo + max_batch, end)) for lo in range(start, end, max_batch)][::-1]
    n_batched = 0
    min_batch = max(2, min(MIN_BATCH, max_batch))
    while todo:
        lo, hi = todo.pop()
        if hi - lo < min_batch:
            run_sequential(lo, hi)
            continue
        run = BatchRun(lo, hi, nb, regions)
        mark = len(st.chunks)
        lin = np.arange(lo, hi, dtype=np.int64)
        x, yz = lin % g0, lin // g0
        y, z = yz % g1, yz // g1
        st.pid = (int(x[0]), int(y[0]), int(z[0]))
        st.pid_tensors = [_pid_tensor(x), _pid_tensor(y), _pid_tensor(z)]
        st.linear = lo
        st.op = 0
        st.ops.clear()
        st.batch = run
        split: list[tuple[int, int]] | None = None
        try:
            fn(*call_args)
        except Divergence as d:
            split = _segments(d.key)
        except (NeedsSequential, Exception):
            pass
        else:
            r0, r1 = lo - start, hi - start
            counts[r0:r1] = run.counts
            masked[r0:r1] = run.masked
            lanes[r0:r1] = run.lanes
            ops[r0:r1] = st.ops.take()
            n_batched += hi - lo
            continue
        finally:
            st.batch = None
        st.ops.clear()
        run.undo()
        del st.chunks[mark:]
        if split is None:
            run_sequential(lo, hi)
        else:
            todo.extend((lo + a, lo + b) for a, b in reversed(split))
    return n_batched
