"""Register pressure of one program: the block values live across its loads.

A GPU compiler keeps in registers every value that is still needed after a
point where the whole block must exist at once. For element-wise code that
point is a load: its values are issued together to hide the memory latency,
and every value computed before the load and used after it (a loop's
accumulator, a row kept for a second pass) stays live across it. A reduction
is such a point too. Between those points a thread works element by element,
so temporaries of an element-wise chain need no block-sized storage.

:func:`live_values` runs code (a one-program launch) with the interpreter's
block values tracked from creation to last read, and reports, over the
program's loads and reductions, the largest sum of bytes of

* the values created before the point and read after it, and
* the block the load itself brings in,

counting floating-point values, loaded values and integer (and int1)
values computed from loaded or floating-point data (an integer accumulator
``acc += tl.load(...)``, a histogram, a mask from loaded values): index,
mask and pointer blocks derived only from ``tl.arange``, program ids and
scalar arguments are affine in the lane index, which a compiler keeps in a
base register plus constants, not one register per element (Triton's
blocked layout gives each thread contiguous elements).  A value is "computed
from" the values an op read since the previous value was created (dataflow
seen through the interpreter's reads of ``tensor.v``).  Pointer blocks are
never counted.

This is a liveness analysis on the executed op order, the textbook basis of
register allocation (Aho, Lam, Sethi, Ullman, "Compilers", 2nd ed., §9.2.5
"Live-Variable Analysis"), applied to block values instead of scalars. The
records GPU model (``autotile.measure.gpu``) turns the peak into registers
per thread, hence occupancy and spills.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from autotile.lang import _descriptor, _memory, _opcount
from autotile.lang import _dtypes as D
from autotile.lang._tensor import tensor

__all__ = ["LiveValues", "live_values"]

#: The op counters of :mod:`autotile.lang._opcount` that builtins call with the
#: blocks they read or produced (``reduction`` also marks a point: ``_reduction``).
_COUNTERS = ("alu", "binary", "math", "dot", "layout", "reshape")
_LOCK = threading.RLock()  # re-entrant: a records-model launch inside a tracked block


class LiveValues:
    """What :func:`live_values` measured (read after the ``with`` block ends).

    Attributes
    ----------
    peak_bytes : int
        Largest, over the program's loads and reductions, of the bytes of
        floating-point and loaded block values live across the point plus the
        bytes the load brings in (0 for a program with neither), bytes per
        program.
    n_points : int
        Loads and reductions seen.
    """

    def __init__(self) -> None:
        self.peak_bytes = 0
        self.n_points = 0
        self._clock = 0
        self._born: dict[int, int] = {}
        self._last: dict[int, int] = {}
        self._bytes: dict[int, int] = {}
        self._data: dict[int, bool] = {}  # float, loaded, or computed from such values
        self._reads: list[int] = []  # values read since the last value was created
        self._keep: list[Any] = []
        self._points: list[tuple[int, int]] = []  # (clock, bytes brought in)
        self._pending = False
        self._quiet = 0  # > 0 while the op counters read blocks (bookkeeping, not dataflow)
        self._thread = threading.get_ident()

    def _finish(self) -> None:
        peak = 0
        ids = list(self._born)
        born = np.array([self._born[i] for i in ids], np.int64)
        last = np.array([self._last.get(i, -1) for i in ids], np.int64)
        size = np.array([self._bytes[i] for i in ids], np.int64)
        for clock, brought in self._points:
            live = int(size[(born <= clock) & (last > clock)].sum()) if ids else 0
            peak = max(peak, live + brought)
        self.peak_bytes = peak
        self.n_points = len(self._points)
        self._keep.clear()


@contextmanager
def live_values() -> Iterator[LiveValues]:
    """Track block values while the body runs (one thread at a time).

    Run one program of a launch inside it (``launch.run(programs=[0])``);
    batched launches are not tracked (their values hold many programs).
    Blocks nest: an inner block (the records GPU model scoring a config
    inside a tracked launch, say) tracks its own values, which the outer
    block sees too; other threads wait for the outermost block to end.

    Yields
    ------
    LiveValues
        Filled in when the block exits: ``peak_bytes`` per program.

    Examples
    --------
    >>> import numpy as np
    >>> import autotile.lang as tl
    >>> @tl.jit
    ... def rowsum(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    ...     acc = tl.zeros([BLOCK], dtype=tl.float32)
    ...     for off in range(0, N, BLOCK):
    ...         cols = off + tl.arange(0, BLOCK)
    ...         acc += tl.load(x_ptr + cols, mask=cols < N, other=0.0)
    ...     tl.store(y_ptr, tl.sum(acc, axis=0))
    >>> x, y = np.ones(1024, np.float16), np.zeros(1, np.float32)
    >>> with tl.live_values() as lv:
    ...     rowsum[(1,)](x, y, 1024, BLOCK=256)
    >>> lv.peak_bytes  # the float32 accumulator (1 KiB) + a float16 block loaded (512 B)
    1536
    """
    lv = LiveValues()
    with _LOCK:
        slot = tensor.__dict__["v"]
        init = tensor.__init__
        access_m = _memory.access
        access_d = getattr(_descriptor, "access")
        reduction = _opcount.reduction
        me = lv._thread

        class _Tracked:
            def __get__(self, obj: Any, typ: Any = None) -> Any:
                if obj is None:
                    return slot
                if threading.get_ident() == me and not lv._quiet:
                    i = id(obj)
                    lv._last[i] = lv._clock
                    lv._reads.append(i)
                return slot.__get__(obj, typ)

            def __set__(self, obj: Any, value: Any) -> None:
                slot.__set__(obj, value)

        def _init(self: tensor, v: Any, dtype: Any, buf: Any = None, name: str | None = None
                  ) -> None:
            init(self, v, dtype, buf, name)
            if threading.get_ident() != me or type(self) is not tensor:
                return
            lv._clock += 1
            i = id(self)
            lv._keep.append(self)
            lv._born[i] = lv._clock
            is_ptr = type(dtype) is D.pointer_type
            is_float = not is_ptr and getattr(dtype, "is_floating", lambda: False)()
            # a loaded value, whatever its type, and what is computed from data
            data = is_float or lv._pending or builtins.any(lv._data.get(r, False)
                                                           for r in lv._reads)
            lv._reads.clear()
            lv._pending = False
            lv._data[i] = data
            n = v.size if type(v) is np.ndarray else 0
            lv._bytes[i] = n * ((dtype.bits + 7) // 8) if (data and not is_ptr and n > 1) else 0

        def _access(st: Any, buf: Any, off: Any, m: Any, is_write: bool) -> Any:
            out = access_m(st, buf, off, m, is_write)
            if threading.get_ident() == me:
                lv._reads.clear()  # what a store reads flows into memory, not into a value
                if not is_write:
                    n = int(np.size(off))
                    lv._points.append((lv._clock, n * int(buf.itemsize) if n > 1 else 0))
                    lv._pending = True
            return out

        # the op counters read the blocks an op produced (to count lanes) after the
        # block was created: that read is bookkeeping, not dataflow into the next value;
        # only the tracked thread's reads are silenced (the counters are module-wide)
        counters = {name: getattr(_opcount, name) for name in _COUNTERS}

        def _quiet(fn: Any) -> Any:
            def run(*args: Any, **kwargs: Any) -> Any:
                if threading.get_ident() != me:
                    return fn(*args, **kwargs)
                lv._quiet += 1
                try:
                    return fn(*args, **kwargs)
                finally:
                    lv._quiet -= 1
            return run

        quiet_reduction = _quiet(reduction)

        def _reduction(t: Any, step: bool = True) -> None:
            quiet_reduction(t, step)
            if threading.get_ident() == me:
                lv._points.append((lv._clock, 0))

        try:
            setattr(tensor, "v", _Tracked())
            setattr(tensor, "__init__", _init)
            _memory.access = _access
            setattr(_descriptor, "access", _access)
            for name, fn in counters.items():
                setattr(_opcount, name, _quiet(fn))
            _opcount.reduction = _reduction
            yield lv
        finally:
            setattr(tensor, "v", slot)
            setattr(tensor, "__init__", init)
            _memory.access = access_m
            setattr(_descriptor, "access", access_d)
            for name, fn in counters.items():
                setattr(_opcount, name, fn)
            _opcount.reduction = reduction
            lv._finish()
