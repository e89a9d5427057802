"""Per-launch interpreter state: the current program, buffers and counters.

The interpreter needs to know, inside builtins like ``tl.program_id`` or
``tl.load``, which launch and which program it is executing.  That state
lives in one :class:`contextvars.ContextVar` (``CURRENT``), set for the
duration of a launch -- the interpreter's equivalent of Triton's builder,
and the only process-wide state in ``autotile.lang``.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import numpy as np

from autotile.errors import LangError

__all__ = ["Buffer", "Launch", "CURRENT", "current", "shape_str", "Divergence",
           "NeedsSequential", "OpCounter", "OP_COUNTS"]

#: Names of the per-program op counters, in :class:`OpCounter` order (see
#: :mod:`autotile.lang._opcount` for what each counts).
OP_COUNTS = ("dot_flops", "dot_operand_bytes", "alu_ops", "sfu_ops", "max_tile_elems",
             "scratch_bytes", "reductions")


class Buffer:
    """One kernel argument array seen as flat memory.

    Attributes
    ----------
    index : int
        Buffer id within the launch (order of the kernel's array arguments).
    name : str
        The kernel parameter name.
    flat : ndarray
        1-D view of the array's memory span (storage dtype).
    n : int
        Number of elements in ``flat``.
    dtype : dtype
        Element type.
    itemsize : int
        Bytes per element.
    base_addr : int
        Virtual byte address of element 0 of ``flat`` (for traces).
    const : bool
        Whether the kernel parameter is annotated ``tl.const`` (stores refused).
    """

    __slots__ = ("index", "name", "flat", "n", "dtype", "itemsize", "base_addr", "key", "const")

    def __init__(self, index: int, name: str, flat: Any, dtype: Any, key: Any):
        self.index = index
        self.name = name
        self.flat = flat
        self.n = int(flat.size)
        self.dtype = dtype
        self.itemsize = dtype.itemsize
        self.base_addr = 0
        self.const = False
        self.key = key

    def retyped(self, dtype: Any) -> Buffer:
        """The same memory, counted as this buffer, seen as elements of ``dtype``.

        ``dtype`` must have this buffer's itemsize (a pointer cast such as
        ``p.to(tl.pointer_type(tl.int32))`` on a float32 buffer).
        """
        b = Buffer(self.index, self.name, self.flat.view(dtype.storage), dtype, self.key)
        b.base_addr = self.base_addr
        b.const = self.const
        return b


class OpCounter:
    """Op counters of the running program (or of every program of a running batch).

    The builtins add to them through :mod:`autotile.lang._opcount`; the
    launch copies them into its per-program rows (:meth:`take`) after each
    program or batch.  Attributes are those named in :data:`OP_COUNTS`:
    ``dot_flops``, ``alu_ops``, ``sfu_ops`` and ``reductions`` are sums, ``dot_operand_bytes``,
    ``max_tile_elems`` and ``scratch_bytes`` maxima.
    """

    __slots__ = OP_COUNTS

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Set every counter to 0."""
        self.dot_flops = self.dot_operand_bytes = self.alu_ops = self.sfu_ops = 0
        self.max_tile_elems = self.scratch_bytes = self.reductions = 0

    def take(self) -> tuple[int, int, int, int, int, int, int]:
        """Return the counters in :data:`OP_COUNTS` order and clear them."""
        r = (self.dot_flops, self.dot_operand_bytes, self.alu_ops, self.sfu_ops,
             self.max_tile_elems, self.scratch_bytes, self.reductions)
        self.clear()
        return r


class Launch:
    """Mutable state of one kernel launch (one per ``kernel[grid](...)`` call)."""

    __slots__ = (
        "kernel_name", "grid", "pid", "pid_tensors", "buffers", "counts", "masked",
        "lanes", "op", "trace", "chunks", "ir", "arange_cache", "linear", "batch", "ops",
        "sanitize_overflow",
    )

    def __init__(self, kernel_name: str, grid: tuple[int, int, int], buffers: list[Buffer],
                 trace: str | None, ir: bool, sanitize_overflow: bool = True):
        self.kernel_name = kernel_name
        self.grid = grid
        self.pid: tuple[int, ...] = (0, 0, 0)
        self.pid_tensors: list[Any] = []
        self.buffers = buffers
        self.counts = [0] * (2 * len(buffers))
        self.masked = 0
        self.lanes = 0
        self.ops = OpCounter()
        self.op = 0
        self.trace = trace
        # trace chunks: (buf, elem_offsets, is_write, program, op) or _batch.BatchChunk
        self.chunks: list[Any] = []
        self.ir: list[tuple[str, bool]] | None = [] if ir else None
        self.arange_cache: dict[tuple[int, int], Any] = {}
        self.linear = 0
        # the running batch of programs (``_batch.BatchRun``), None for one program at a time
        self.batch: Any = None
        # raise on signed integer overflow (``_overflow``) instead of wrapping
        self.sanitize_overflow = sanitize_overflow

    def where(self) -> str:
        """Describe the current program for error messages."""
        return f"kernel {self.kernel_name!r}, program_id={self.pid_tuple()}"

    def pid_tuple(self) -> tuple[int, ...]:
        """Program id as a tuple with one entry per grid dimension."""
        nd = 3
        while nd > 1 and self.grid[nd - 1] == 1:
            nd -= 1
        return tuple(self.pid[:nd])

    def emit(self, text: str, arith: bool = False) -> None:
        """Append one line to the IR listing (when listing is on)."""
        if self.ir is not None:
            self.ir.append((text, arith))


class NeedsSequential(BaseException):  # noqa: N818 - a signal, not an error
    """Raised inside a batched run for what only one program at a time can do.

    The launch undoes the batch and runs its programs one by one, which gives
    the result (or the error) of the sequential interpreter.  It derives from
    :class:`BaseException` so that no ``except Exception`` in a kernel or a
    builtin swallows it.
    """


class Divergence(NeedsSequential):
    """A Python-level decision (``bool``, ``int``, ``range``, ...) differs between programs.

    Parameters
    ----------
    key : ndarray of shape (n_programs,)
        What each program of the batch decided; programs with equal
        consecutive keys can run together.
    """

    def __init__(self, key: Any):
        super().__init__("programs of the batch take different paths")
        self.key = key


CURRENT: ContextVar[Launch | None] = ContextVar("autotile_lang_launch", default=None)


def current(what: str) -> Launch:
    """Return the running launch, or raise if called outside a kernel.

    Raises
    ------
    LangError
        If no kernel is executing.
    """
    st = CURRENT.get()
    if st is None:
        raise LangError(f"tl.{what} can only be called inside a @jit kernel being launched")
    return st


def shape_str(shape: tuple[int, ...]) -> str:
    """Format a block shape as in the IR listing: ``1024``, ``64x64`` or ``scalar``."""
    return "x".join(str(d) for d in shape) if shape else "scalar"


def type_str(shape: tuple[int, ...], dt: Any) -> str:
    """Format a block type: ``tensor<1024xi32>``, ``tensor<64x64xfloat32>`` or ``i32``."""
    name = dt.short if hasattr(dt, "short") else repr(dt)
    if not shape:
        return name
    return "tensor<" + "x".join(str(d) for d in shape) + "x" + name + ">"


def np_errstate() -> Any:
    """The floating-point error state kernels run under (IEEE, no warnings)."""
    return np.errstate(all="ignore")
