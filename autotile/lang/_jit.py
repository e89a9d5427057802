"""``@jit`` kernels and their launch: ``kernel[grid](*args, **meta)``.

A launch runs every program of the grid one after another (axis 0 fastest)
as plain Python calling NumPy, then stores a :class:`LaunchRecord` on
``kernel.last_record`` (and in the active :func:`recording` block).  With the
interpreter-only launch option ``batch_programs=True`` (or an int) it runs
batches of programs in one pass instead, with the same result
(:mod:`autotile.lang._batch`); with ``programs=`` (interpreter only too) it
runs a subset of the grid, e.g. a sample for a cost model.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from autotile.errors import IntegerOverflowError, LangError
from autotile.lang import _dtypes as D
from autotile.lang import _semantic as S
from autotile.lang._assign import kernel_body
from autotile.lang._batch import DEFAULT_BATCH_PROGRAMS, consecutive_runs, run_batched
from autotile.lang._record import RECORDER, LaunchRecord, build_trace
from autotile.lang._state import CURRENT, OP_COUNTS, Buffer, Launch, np_errstate
from autotile.lang._tensor import const, constexpr, tensor

__all__ = ["JITFunction", "jit", "IRListing"]

_LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                   "launch_cooperative_grid", "debug", "warmup", "stream", "device",
                   "batch_programs", "programs", "sanitize_overflow")


class IRListing:
    """Triton-IR-like listing of the block-level ops program 0 executed.

    Attributes
    ----------
    lines : tuple of str
        ``%i = op ...`` lines, numbered from 0.
    """

    def __init__(self, lines: tuple[str, ...]):
        self.lines = lines

    def __str__(self) -> str:
        return "\n".join(self.lines)

    def __repr__(self) -> str:
        return f"IRListing({len(self.lines)} ops)"

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self) -> Any:
        return iter(self.lines)


def _array_buffer(index: int, name: str, a: np.ndarray) -> tuple[Buffer, int]:
    """Flat view of ``a``'s memory span and the element offset of ``a[0, ..., 0]``."""
    if isinstance(a, D.BFloat16Array):
        dt = D.bfloat16
        a = a.view(np.ndarray)
    elif isinstance(a, D.Float8Array) and a.fp8_dtype is not None:
        dt = a.fp8_dtype
        a = a.view(np.ndarray)
    else:
        dt = D.from_numpy(a.dtype)  # type: ignore[assignment]
        if dt is None:
            raise LangError(f"argument {name!r} has unsupported dtype {a.dtype}")
    isz = a.itemsize
    if a.size == 0:
        flat = a.reshape(-1)
        return Buffer(index, name, flat, dt, (0, 0)), 0
    if a.flags.c_contiguous:
        flat = a.reshape(-1)
        first = 0
    else:
        for s in a.strides:
            if s % isz:
                raise LangError(f"argument {name!r} has strides {a.strides} that are not "
                                f"multiples of its itemsize {isz}")
        lo = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s < 0)
        hi = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s > 0)
        span = (hi - lo) // isz + 1
        corner = a[tuple(slice(n - 1, n) if st < 0 else slice(0, 1)
                         for st, n in zip(a.strides, a.shape))]
        flat = np.lib.stride_tricks.as_strided(corner, shape=(span,), strides=(isz,))
        first = -lo // isz
    key = (flat.__array_interface__["data"][0], flat.size * isz)
    return Buffer(index, name, flat, dt, key), first


class JITFunction:
    """A kernel: ``kernel[grid](*args, **kwargs)`` runs it on NumPy arrays.

    Parameters
    ----------
    fn : callable
        The Python kernel function.

    Attributes
    ----------
    fn : callable
        The wrapped function.
    arg_names : list of str
        Parameter names.
    constexprs : list of int
        Indices of parameters annotated ``tl.constexpr``.
    last_record : LaunchRecord or None
        Record of the most recent launch.
    """

    def __init__(self, fn: Callable[..., Any], **kwargs: Any):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        sig = inspect.signature(fn)
        self.signature = sig
        self.arg_names = list(sig.parameters)
        self.params = list(sig.parameters.values())
        self._defaults = {p.name: p.default for p in self.params
                          if p.default is not inspect.Parameter.empty}
        self._constexpr = [self._annotated(p.annotation, constexpr) for p in self.params]
        self.constexprs = [i for i, c in enumerate(self._constexpr) if c]
        self._const = [self._annotated(p.annotation, const) for p in self.params]
        self.jit_kwargs = kwargs
        self.last_record: LaunchRecord | None = None
        self._body: Callable[..., Any] | None = None

    @property
    def body(self) -> Callable[..., Any]:
        """The function the interpreter runs: ``fn`` with Triton's assignment rule.

        ``x = v`` binds a typed scalar when ``v`` is a Python number
        (:mod:`autotile.lang._assign`).
        """
        if self._body is None:
            self._body = kernel_body(self.fn)
        return self._body

    @staticmethod
    def _annotated(ann: Any, marker: type) -> bool:
        """Whether annotation ``ann`` is ``marker`` (``tl.constexpr``, ``tl.const``) or names it."""
        if ann is marker:
            return True
        if isinstance(ann, str):
            return ann.split(".")[-1] == marker.__name__
        return False

    def __repr__(self) -> str:
        return f"JITFunction({self.fn.__module__}:{self.fn.__qualname__})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call as a device function from inside another kernel.

        Raises
        ------
        LangError
            When called outside a kernel launch (a kernel is launched as
            ``kernel[grid](...)``, as in Triton).
        """
        if CURRENT.get() is None:
            raise LangError(
                f"{self.__name__!r} is a @jit kernel: launch it with "
                f"{self.__name__}[grid](...), grid a tuple of program counts or a callable of "
                f"the meta-parameters, as in Triton; calling it directly works only inside "
                f"another kernel (a device function)")
        return self.body(*args, **kwargs)

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        def launcher(*args: Any, **kwargs: Any) -> None:
            self.run(*args, grid=grid, **kwargs)

        return launcher

    # -- binding -------------------------------------------------------------
    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any],
                                                                            dict[str, Any]]:
        names = self.arg_names
        if len(args) > len(names):
            raise LangError(f"kernel {self.__name__!r} takes {len(names)} arguments "
                            f"({', '.join(names)}), got {len(args)} positional")
        vals = list(args)
        options = {}
        for k in kwargs:
            if k not in names:
                if k in _LAUNCH_OPTIONS:
                    options[k] = kwargs[k]
                    continue
                raise LangError(f"kernel {self.__name__!r} got an unexpected keyword argument "
                                f"{k!r}; parameters are {names}")
        for i in range(len(args), len(names)):
            nm = names[i]
            if nm in kwargs:
                vals.append(kwargs[nm])
            elif nm in self._defaults:
                vals.append(self._defaults[nm])
            else:
                raise LangError(f"kernel {self.__name__!r} is missing argument {nm!r}")
        for i in range(len(args)):
            if names[i] in kwargs:
                raise LangError(f"kernel {self.__name__!r} got multiple values for {names[i]!r}")
        return vals, options

    def _grid(self, grid: Any, vals: list[Any], options: dict[str, Any],
              max_programs: int | None = S.MAX_PROGRAMS) -> tuple[int, int, int]:
        if callable(grid):
            meta = dict(zip(self.arg_names, vals))
            meta.update(options)
            fn = grid
            grid = fn(meta)
            try:
                return S.check_grid(grid, max_programs)
            except LangError as e:
                name = getattr(fn, "__qualname__", repr(fn))
                raise LangError(f"{e} (returned by the grid callable {name})") from None
        return S.check_grid(grid, max_programs)

    def _convert(self, vals: list[Any]) -> tuple[list[Any], list[Buffer]]:
        out: list[Any] = []
        buffers: list[Buffer] = []
        for i, (nm, v) in enumerate(zip(self.arg_names, vals)):
            if self._constexpr[i]:
                out.append(v.value if isinstance(v, constexpr) else v)
            elif isinstance(v, np.ndarray):
                buf, first = _array_buffer(len(buffers), nm, v)
                buf.const = self._const[i]
                buffers.append(buf)
                out.append(tensor(np.int64(first), D.pointer_type(buf.dtype), buf, nm))
            elif isinstance(v, (bool, int, float)):
                if isinstance(v, int) and not -(2**63) <= v < 2**64:
                    raise IntegerOverflowError(
                        f"kernel {self.__name__!r}: argument {nm!r} = {v} does not fit in 64 "
                        f"bits (an int argument is typed int32, int64 or uint64, so it must "
                        f"be in [-2**63, 2**64))")
                dt = D.py_scalar_dtype(v)
                out.append(tensor(np.array(v, dtype=dt.np)[()], dt, None, nm))
            elif isinstance(v, np.generic) and D.from_numpy(v.dtype) is not None:
                out.append(tensor(v, D.from_numpy(v.dtype), None, nm))
            elif isinstance(v, list):
                raise LangError(
                    f"kernel {self.__name__!r}: argument {nm!r} must be a NumPy array (a "
                    f"pointer), a scalar or a tl.constexpr, got {S.short_value(v)}; pass "
                    f"np.asarray(...) for a buffer")
            elif hasattr(v, "_device_descriptor"):
                desc, nb = v._device_descriptor(len(buffers), nm)
                buffers.extend(nb)
                out.append(desc)
            else:
                out.append(v)
        # virtual base addresses: 4 KiB aligned, shared for arguments with the same memory
        bases: dict[Any, int] = {}
        nxt = 1 << 20
        for b in buffers:
            if b.key not in bases:
                bases[b.key] = nxt
                nxt += ((b.n * b.itemsize + 4095) // 4096 + 1) * 4096
            b.base_addr = bases[b.key]
        return out, buffers

    # -- execution -----------------------------------------------------------
    def run(self, *args: Any, grid: Any, **kwargs: Any) -> None:
        """Launch on ``grid`` (what ``kernel[grid](*args, **kwargs)`` calls).

        Besides the kernel's arguments and Triton's launch options (accepted,
        recorded or ignored), the interpreter takes ``batch_programs`` and
        ``programs``:

        batch_programs : bool or int, default=False
            Run up to this many consecutive programs (``True``: 1024) in one
            pass of the kernel function, each value carrying a program axis
            (:mod:`autotile.lang._batch`).  ``1`` runs one program at a time;
            runs shorter than ``min(4, batch_programs)`` programs (the tail of
            the grid, or pieces split off by a fallback) also run one program
            at a time.  Memory, the record and the trace
            are those of the one-program-at-a-time run; batches whose programs
            branch differently on program-dependent values, share memory
            through stores or use builtins without batched support fall back
            to fewer programs at a time.  Not a Triton option: pass it only
            to the interpreter.

        programs : sequence or ndarray of int, optional
            Run only these programs: distinct linear indices ``pid0 + grid0 *
            (pid1 + grid1 * pid2)`` of the grid, in increasing order, each in
            ``[0, n_programs)`` (a list, tuple, range or integer array; a
            :class:`~autotile.errors.LangError` names a bad one).  They run in
            that order and ``tl.program_id``/``tl.num_programs`` are those of
            the full grid.  The :class:`LaunchRecord` has one row per program
            that ran (``n_programs_total`` is the grid's count) and the trace
            only their rows, with their real ``program`` index: the rows of
            the full launch for those programs, as long as programs do not
            read what others wrote.  The grid may exceed
            :data:`~autotile.lang._semantic.MAX_PROGRAMS` (the subset may
            not).  With ``batch_programs``, each run of consecutive indices is
            batched as a launch of just those programs would be.  Not a Triton
            option: pass it only to the interpreter.

        and ``sanitize_overflow`` (Triton's option of the same name, which on
        the GPU only acts with ``debug=True``):

        sanitize_overflow : bool, default=True
            Raise :class:`~autotile.errors.IntegerOverflowError` when a signed
            integer ``+``, ``-``, ``*``, ``<<`` or unary ``-`` (int8 to int64)
            leaves its type's range, naming the kernel, the program id, the
            operands, the exact and the wrapped value.  ``False`` wraps like
            the GPU (two's complement), for kernels that wrap on purpose
            (hashes, random number generators); batched launches and subsets
            (``programs=``) follow the same rule.  See :mod:`autotile.lang._overflow`.

        ``num_warps`` must be a power of 2 (Triton's rule; default 4); it is
        recorded, not simulated.

        Raises
        ------
        IntegerOverflowError
            On signed integer overflow with ``sanitize_overflow=True``, or an
            int argument outside ``[-2**63, 2**64)``.
        LangError
            On a bad argument, grid or launch option (``num_warps`` not a
            power of 2), a store through a ``tl.const`` parameter, or a
            misused builtin.
        """
        self._launch(args, kwargs, grid, ir=False)

    def _launch(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any,
                ir: bool, only_first: bool = False) -> Launch:
        vals, options = self._bind(args, kwargs)
        subset = options.get("programs")
        if only_first and subset is not None:
            raise LangError("trace() runs program 0; it does not take the launch option "
                            "programs=")
        # ``trace`` runs program 0 only and a subset is checked below, so any grid size
        # is fine there
        g = self._grid(grid, vals, options,
                       None if only_first or subset is not None else S.MAX_PROGRAMS)
        lin = None if subset is None else S.check_programs(subset, g)
        call_args, buffers = self._convert(vals)
        rec = RECORDER.get()
        trace = rec.trace if rec is not None else None
        sanitize = S.check_sanitize_overflow(options.get("sanitize_overflow", True))
        num_warps = S.check_num_warps(options.get("num_warps"))
        st = Launch(self.__name__, g, buffers, trace, ir, sanitize)
        if lin is None:
            n_prog = g[0] * g[1] * g[2]
            lin = np.arange(min(n_prog, 1) if only_first else n_prog, dtype=np.int64)
        n_prog = lin.size
        batch = S.check_batch_programs(options.get("batch_programs", False))
        if batch is True:
            batch = DEFAULT_BATCH_PROGRAMS
        nb = len(buffers)
        counts = np.zeros((n_prog, 2 * nb), dtype=np.int64)
        masked = np.zeros(n_prog, dtype=np.int64)
        lanes = np.zeros(n_prog, dtype=np.int64)
        ops = np.zeros((n_prog, len(OP_COUNTS)), dtype=np.int64)
        fn = self.body
        token = CURRENT.set(st)
        n_batched = 0
        try:
            with np_errstate():
                for a, b in consecutive_runs(lin):  # one run for a full launch
                    start = int(lin[a])
                    c, m, la, o = counts[a:b], masked[a:b], lanes[a:b], ops[a:b]
                    sequential = functools.partial(_run_programs, st, fn, call_args, counts=c,
                                                   masked=m, lanes=la, ops=o, start=start)
                    if batch and not ir and b - a > 1:
                        n_batched += run_batched(st, fn, call_args, b - a, int(batch), c, m, la,
                                                 o, sequential, start=start)
                    else:
                        sequential(start, start + b - a)
        finally:
            CURRENT.reset(token)
        pids = np.stack([lin % g[0], lin // g[0] % g[1], lin // (g[0] * g[1])], axis=1)
        names = tuple(b.name for b in buffers)
        itemsizes = [b.itemsize for b in buffers]
        tr = None
        if trace is not None:
            tr = build_trace(trace, st.chunks, itemsizes, names,
                             tuple(b.base_addr for b in buffers))
        meta = {k: v for k, v in kwargs.items() if k not in _LAUNCH_OPTIONS}
        record = LaunchRecord(
            kernel_name=self.__name__, grid=g, buffer_names=names,
            itemsize_bytes=tuple(itemsizes), program_ids=pids,
            elems_read=counts[:, 0::2], elems_written=counts[:, 1::2],
            masked_lanes=masked, total_lanes=lanes,
            **{name: ops[:, j].copy() for j, name in enumerate(OP_COUNTS)},
            num_warps=num_warps,
            num_stages=int(options.get("num_stages", 3)), meta=meta, trace=tr,
            n_programs_batched=n_batched)
        self.last_record = record
        if rec is not None:
            rec.records.append(record)
        return st

    def trace(self, *args: Any, grid: Any, include_arith: bool = False,
              **kwargs: Any) -> IRListing:
        """Run program 0 of the grid and list the block-level ops it executed.

        Parameters
        ----------
        *args, **kwargs
            Kernel arguments, as for a launch.  Program 0's stores do happen.
        grid : tuple or callable
            Launch grid.
        include_arith : bool, default=False
            Also list ``arith.*``/``tt.addptr`` ops (scalar and block).

        Returns
        -------
        IRListing
            Lines such as ``%1 = tt.make_range {start=0, end=1024} : tensor<1024xi32>``.
        """
        st = self._launch(args, kwargs, grid, ir=True, only_first=True)
        ops = [t for t, a in (st.ir or []) if include_arith or not a]
        return IRListing(tuple(f"%{i} = {t}" for i, t in enumerate(ops)))


def _run_programs(st: Launch, fn: Callable[..., Any], call_args: list[Any], lo: int, hi: int,
                  counts: Any, masked: Any, lanes: Any, ops: Any, start: int = 0) -> None:
    """Run programs ``lo .. hi - 1`` one after another, filling their counters.

    Program ``i`` (a linear id) fills row ``i - start`` of ``counts``,
    ``masked``, ``lanes`` and ``ops`` (op counters, :data:`OP_COUNTS` columns).
    """
    g0, g1 = st.grid[0], st.grid[1]
    nb = len(st.buffers)
    i32 = D.int32
    taken = []
    ty = tz = None
    last_yz = (-1, -1)
    for i in range(lo, hi):
        x, yz = i % g0, i // g0
        y, z = yz % g1, yz // g1
        if (y, z) != last_yz:
            ty, tz = tensor(np.int32(y), i32), tensor(np.int32(z), i32)
            last_yz = (y, z)
        st.pid = (x, y, z)
        st.pid_tensors = [tensor(np.int32(x), i32), ty, tz]
        st.linear = i
        st.op = 0
        st.ops.clear()
        fn(*call_args)
        r = i - start
        taken.append(st.ops.take())
        if nb:
            counts[r] = st.counts
            st.counts = [0] * (2 * nb)
        masked[r] = st.masked
        lanes[r] = st.lanes
        st.masked = st.lanes = 0
    if taken:
        ops[lo - start:hi - start] = taken


def jit(fn: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """Make a kernel from a Python function (``@jit`` or ``@jit(...)``).

    Triton's options (``do_not_specialize``, ``debug``, ...) are accepted and
    ignored.

    Returns
    -------
    JITFunction
        Launch it with ``kernel[grid](*args, **meta)``.
    """
    if fn is None:
        return lambda f: JITFunction(f, **kwargs)
    return JITFunction(fn, **kwargs)


def ir_listing(kernel: JITFunction, *args: Any, grid: Any, include_arith: bool = False,
               **kwargs: Any) -> IRListing:
    """Same as ``kernel.trace(*args, grid=grid, **kwargs)``."""
    return kernel.trace(*args, grid=grid, include_arith=include_arith, **kwargs)


__all__ += ["ir_listing"]
