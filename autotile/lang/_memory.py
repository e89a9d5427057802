"""Memory builtins: ``load``, ``store`` and atomics, with bounds checks and recording.

Every access is checked against its buffer before memory is touched.  Lanes
whose mask is false never read or write memory and are not counted; a
masked-off lane of a ``load`` yields ``other`` (0 when ``other`` is None,
where Triton leaves the value undefined).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autotile.errors import LangError, OutOfBoundsError
from autotile.lang import _dtypes as D
from autotile.lang._pointers import pointer_to_int, split
from autotile.lang._semantic import check_atomic_type, check_writable
from autotile.lang._state import Launch, NeedsSequential, current, type_str
from autotile.lang._tensor import BatchedTensor, tensor, to_tensor, unwrap, values

__all__ = ["load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg",
           "atomic_cas", "atomic_and", "atomic_or", "atomic_xor", "access"]


def _check(st: Launch, buf: Any, act: Any, kind: str) -> None:
    """Raise OutOfBoundsError if any active offset is outside ``buf``."""
    if act.size == 0:
        return
    # one reduction: negative offsets become huge as unsigned
    if act.dtype == np.int64 and act.flags.c_contiguous:
        if act.view(np.uint64).max() < buf.n:
            return
    elif act.min() >= 0 and act.max() < buf.n:
        return
    bad = act[(act < 0) | (act >= buf.n)][:5]
    raise OutOfBoundsError(
        f"out-of-bounds {kind} in {st.where()}: buffer {buf.name!r} has {buf.n} elements "
        f"(valid offsets 0..{buf.n - 1}), first offending element offsets "
        f"{[int(x) for x in bad]}")


def access(st: Launch, buf: Any, off: Any, m: Any, is_write: bool) -> Any:
    """Check, count and trace one memory op; return the active offsets.

    Parameters
    ----------
    st : Launch
        Running launch.
    buf : Buffer
        Buffer accessed.
    off : ndarray of int64
        Element offsets of all lanes.
    m : ndarray of bool or None
        Lane mask broadcast to ``off``'s shape, or None for all lanes.
    is_write : bool
        Whether the op writes.

    Returns
    -------
    ndarray of int64
        1-D offsets of the active lanes (C order).

    Notes
    -----
    In a batched run ``off`` is the same in every program of the batch: the
    op is counted and traced once per program.
    """
    if is_write:
        check_writable(buf, "store", st.where())
    act = np.ravel(off) if m is None else np.asarray(off)[m]
    _check(st, buf, act, "store" if is_write else "load")
    if st.batch is not None:  # the same op in every program of a batch
        st.batch.record(st, buf, act, None, np.size(off), is_write)
        return act
    n_act = act.size
    st.counts[2 * buf.index + (1 if is_write else 0)] += n_act
    total = np.size(off)
    st.lanes += total
    st.masked += total - n_act
    if st.trace is not None:
        st.chunks.append((buf.index, act, is_write, st.linear, st.op))
    st.op += 1
    return act


def _parts(pointer: Any, what: str) -> list[tuple[tensor, Any]]:
    """:func:`~autotile.lang._pointers.split` after the pointer check of :func:`_pointer`."""
    if not isinstance(pointer, tensor) or not isinstance(pointer.dtype, D.pointer_type):
        raise LangError(f"{what} expects a pointer (or block of pointers), got {pointer!r}")
    return split(pointer, what)


def _split_access(st: Launch, parts: list[tuple[tensor, Any]], mask: Any, what: str,
                  op: Any) -> Any:
    """Run ``op(pointer, mask)`` once per argument of ``parts``; merge what it returns.

    Each access is masked to the lanes of its argument (and ``mask``).  The
    launch's lane counters see one access of the block's lanes, as for a
    pointer into one argument.  Returns the merged values (None for stores).
    """
    shape = np.broadcast_shapes(*(np.shape(q.v) for q, _ in parts),
                                np.shape(values(to_tensor(mask))) if mask is not None else ())
    m = _mask(mask, shape, what) if mask is not None else None
    lanes0, masked0 = st.lanes, st.masked
    out: Any = None
    for q, lanes in parts:
        inb = np.broadcast_to(lanes, shape)
        r = op(q, tensor(inb if m is None else inb & m, D.int1))
        if r is not None:
            out = r if out is None else tensor(np.where(inb, r.v, out.v), r.dtype)
    total = int(np.prod(shape, dtype=np.int64))
    st.lanes = lanes0 + total
    st.masked = masked0 + (0 if m is None else total - int(np.count_nonzero(m)))
    return out


def _stored(vt: tensor, et: Any) -> tensor:
    """A pointer stored into an integer buffer is its address (Triton casts to ``et``)."""
    if isinstance(vt.dtype, D.pointer_type):
        return pointer_to_int(vt, et)
    return vt


def _mask(mask: Any, shape: tuple[int, ...], what: str) -> Any:
    mask = unwrap(mask)
    if mask is None:
        return None
    if isinstance(mask, tensor):
        mv = mask.v
    else:
        mv = np.asarray(mask)
    if mv.dtype != np.bool_:
        mv = mv != 0
    if np.shape(mv) == shape:
        return mv
    try:
        return np.broadcast_to(mv, shape)
    except ValueError:
        raise LangError(f"{what} mask of shape {np.shape(mv)} cannot broadcast to the "
                        f"pointer shape {shape}") from None


def load(pointer: Any, mask: Any = None, other: Any = None, boundary_check: Any = (),
         padding_option: str = "", cache_modifier: str = "", eviction_policy: str = "",
         volatile: bool = False) -> tensor:
    """Load a block of values through a block of pointers.

    Parameters
    ----------
    pointer : tensor of pointers, or a block pointer
        Addresses to read; its shape is the result's shape (after
        broadcasting with ``mask``).
    mask : tensor of int1, optional
        Lanes to read; false lanes never touch memory.
    other : scalar or tensor, optional
        Value of masked-off lanes (cast to the element type); 0 if None.
    boundary_check, padding_option : optional
        For block pointers (see :func:`make_block_ptr`).
    cache_modifier, eviction_policy, volatile : optional
        Accepted and ignored.

    Returns
    -------
    tensor
        Values of the pointer's element type.

    Raises
    ------
    OutOfBoundsError
        If an active lane is outside its buffer.
    """
    st = current("load")
    if hasattr(pointer, "_block_load"):
        return pointer._block_load(st, boundary_check, padding_option)  # type: ignore[no-any-return]
    parts = _parts(pointer, "load")
    mask = unwrap(mask)
    if len(parts) > 1:
        return _split_access(st, parts, mask, "load",  # type: ignore[no-any-return]
                             lambda q, m: load(q, m, other))
    p = parts[0][0]
    if st.batch is not None and (type(p) is BatchedTensor or type(mask) is BatchedTensor
                                 or type(unwrap(other)) is BatchedTensor):
        return _load_batched(st, p, mask, unwrap(other))
    buf = p.buf
    et = p.dtype.element_ty
    off = p.v
    if mask is not None:
        mshape = mask.shape if isinstance(mask, tensor) else np.shape(mask)
        if mshape != np.shape(off):
            try:
                shp = np.broadcast_shapes(np.shape(off), mshape)
            except ValueError:
                raise LangError(f"load mask of shape {mshape} cannot broadcast with the pointer "
                                f"shape {np.shape(off)}") from None
            off = np.broadcast_to(off, shp)
        m = _mask(mask, np.shape(off), "load")
        if m.all():
            m = None
    else:
        m = None
    act = access(st, buf, off, m, False)
    shape = np.shape(off)
    if m is None:
        raw = buf.flat[act] if shape else buf.flat[int(off)]
        val = et.to_compute(raw).reshape(shape) if shape else et.to_compute(raw)
    else:
        o = unwrap(other)
        if o is None:
            ov: Any = 0
        elif isinstance(o, tensor):
            ov = o.v
        else:
            ov = o
        val = np.empty(shape, dtype=et.np)
        val[...] = et.cast(np.asarray(ov))
        if act.size:
            val[m] = et.to_compute(buf.flat[act])
        if not shape:
            val = val[()]
    if st.ir is not None:
        st.emit(f"tt.load {buf.name}{' (masked)' if mask is not None else ''} : "
                f"{type_str(shape, et)}")
    return tensor(val, et)


def store(pointer: Any, value: Any, mask: Any = None, boundary_check: Any = (),
          cache_modifier: str = "", eviction_policy: str = "") -> None:
    """Store a block of values through a block of pointers.

    Parameters
    ----------
    pointer : tensor of pointers, or a block pointer
        Addresses to write.
    value : tensor or scalar
        Values, broadcast to the pointer's shape and cast to its element type.
    mask : tensor of int1, optional
        Lanes to write; false lanes never touch memory.
    boundary_check : optional
        For block pointers.
    cache_modifier, eviction_policy : optional
        Accepted and ignored.

    Raises
    ------
    OutOfBoundsError
        If an active lane is outside its buffer.
    """
    st = current("store")
    if hasattr(pointer, "_block_store"):
        pointer._block_store(st, value, boundary_check)
        return
    parts = _parts(pointer, "store")
    mask = unwrap(mask)
    if len(parts) > 1:
        _split_access(st, parts, mask, "store", lambda q, m: store(q, value, m))
        return
    p = parts[0][0]
    if st.batch is not None and (type(p) is BatchedTensor or type(mask) is BatchedTensor
                                 or type(value) is BatchedTensor):
        _store_batched(st, p, value, mask)
        return
    buf = p.buf
    et = p.dtype.element_ty
    off = p.v
    shape = np.shape(off)
    vt = _stored(to_tensor(value), et)
    vv = vt.v
    if np.shape(vv) != shape:
        try:
            vv = np.broadcast_to(vv, shape)
        except ValueError:
            raise LangError(f"store value of shape {np.shape(vv)} cannot broadcast to the "
                            f"pointer shape {shape} (buffer {buf.name!r})") from None
    mask = unwrap(mask)
    m = _mask(mask, shape, "store") if mask is not None else None
    if m is not None and m.all():
        m = None
    act = access(st, buf, off, m, True)
    if act.size:
        if st.batch is not None:
            st.batch.save(buf, act)
        vals = vv if m is None else np.asarray(vv)[m]
        if vt.dtype is not et:
            vals = et.cast(vals)
        buf.flat[act] = et.to_storage(np.ravel(vals) if m is None else vals)
    if st.ir is not None:
        st.emit(f"tt.store {buf.name}{' (masked)' if mask is not None else ''} : "
                f"{type_str(shape, et)}")


def _full(v: Any, batched: bool, shape: tuple[int, ...]) -> Any:
    """``v`` (program axis first when ``batched``) broadcast to ``shape``."""
    if batched:
        v = v.reshape(v.shape[:1] + (1,) * (len(shape) - v.ndim) + v.shape[1:])
    return np.broadcast_to(v, shape)


def _bool_mask(mv: Any) -> Any:
    return mv if mv.dtype == np.bool_ else mv != 0


def _load_batched(st: Launch, p: tensor, mask: Any, other: Any) -> tensor:
    """:func:`load` in a batched run: one gather for every program of the batch."""
    run = st.batch
    buf, et = p.buf, p.dtype.element_ty
    mt = None if mask is None else to_tensor(mask)
    block = p.shape if mt is None else np.broadcast_shapes(p.shape, mt.shape)
    shape = (run.n,) + block
    off = _full(values(p), type(p) is BatchedTensor, shape)
    m = None
    if mt is not None:
        m = _full(_bool_mask(np.asarray(values(mt))), type(mt) is BatchedTensor, shape)
        if m.all():
            m = None
    act = off.reshape(-1) if m is None else off[m]
    _check(st, buf, act, "load")
    n_lanes = int(np.prod(block, dtype=np.int64))
    n_act = None if m is None else np.count_nonzero(m.reshape(run.n, -1), axis=1)
    if n_act is None:
        n_act = np.full(run.n, n_lanes, dtype=np.int64)
    run.record(st, buf, act, n_act, n_lanes, False)
    if m is None:
        return BatchedTensor(et.to_compute(buf.flat[act]).reshape(shape), et)
    if other is None:
        ov: Any = 0
        ob = False
    elif isinstance(other, tensor):
        ov, ob = values(other), type(other) is BatchedTensor
    else:
        ov, ob = other, False
    val = np.empty(shape, dtype=et.np)
    val[...] = _full(et.cast(np.asarray(ov)), ob, shape) if ob else et.cast(np.asarray(ov))
    if act.size:
        val[m] = et.to_compute(buf.flat[act])
    return BatchedTensor(val, et)


def _store_batched(st: Launch, p: tensor, value: Any, mask: Any) -> None:
    """:func:`store` in a batched run: one scatter for every program of the batch."""
    run = st.batch
    buf, et = p.buf, p.dtype.element_ty
    shape = (run.n,) + p.shape
    off = _full(values(p), type(p) is BatchedTensor, shape)
    vt = _stored(to_tensor(value), et)
    if len(vt.shape) > len(p.shape):
        raise NeedsSequential("store value of a larger rank than the pointer")
    vv = _full(values(vt), type(vt) is BatchedTensor, shape)
    m = None
    if mask is not None:
        mt = to_tensor(mask)
        if len(mt.shape) > len(p.shape):
            raise NeedsSequential("store mask of a larger rank than the pointer")
        m = _full(_bool_mask(np.asarray(values(mt))), type(mt) is BatchedTensor, shape)
        if m.all():
            m = None
    act = off.reshape(-1) if m is None else off[m]
    check_writable(buf, "store", st.where())
    _check(st, buf, act, "store")
    n_lanes = int(np.prod(p.shape, dtype=np.int64))
    n_act = np.full(run.n, n_lanes, dtype=np.int64) if m is None else \
        np.count_nonzero(m.reshape(run.n, -1), axis=1)
    run.record(st, buf, act, n_act, n_lanes, True)
    if act.size:
        run.save(buf, act)
        vals = vv.reshape(-1) if m is None else vv[m]
        if vt.dtype is not et:
            vals = et.cast(vals)
        buf.flat[act] = et.to_storage(vals)


def _atomic(kind: str, pointer: Any, val: Any, mask: Any, cmp: Any = None) -> tensor:
    st = current(f"atomic_{kind}")
    if st.batch is not None:
        raise NeedsSequential("atomics run one program at a time")
    parts = _parts(pointer, f"atomic_{kind}")
    if len(parts) > 1:
        return _split_access(st, parts, unwrap(mask), f"atomic_{kind}",  # type: ignore[no-any-return]
                             lambda q, m: _atomic(kind, q, val, m, cmp))
    p = parts[0][0]
    buf, et = p.buf, p.dtype.element_ty
    check_atomic_type(kind, et)
    check_writable(buf, f"atomic_{kind}", st.where())
    vt = to_tensor(val)
    shape = np.broadcast_shapes(np.shape(p.v), np.shape(vt.v))
    off = np.broadcast_to(p.v, shape)
    vv = et.cast(np.broadcast_to(vt.v, shape))
    m = _mask(mask, shape, f"atomic_{kind}")
    if m is not None and m.all():
        m = None
    act = access(st, buf, off, m, False)
    st.counts[2 * buf.index + 1] += act.size
    if st.trace is not None:
        st.chunks.append((buf.index, act, True, st.linear, st.op - 1))
    vals = np.ravel(vv) if m is None else np.asarray(vv)[m]
    cv = None
    if cmp is not None:
        c = et.cast(np.broadcast_to(to_tensor(cmp).v, shape))
        cv = np.ravel(c) if m is None else np.asarray(c)[m]
    old = np.zeros(act.size, dtype=et.np)
    flat = buf.flat
    fns: dict[str, Any] = {"add": np.add, "max": np.maximum, "min": np.minimum,
                           "xchg": lambda o, v: v, "and": np.bitwise_and,
                           "or": np.bitwise_or, "xor": np.bitwise_xor}
    if act.size and np.unique(act).size == act.size:
        o = et.to_compute(flat[act])
        old[:] = o
        if kind == "cas":
            new = np.where(o == cv, vals, o)
        else:
            new = fns[kind](o, vals)
        flat[act] = et.to_storage(et.cast(new))
    else:  # duplicate addresses: serialise lanes in order
        for i in range(act.size):
            a = act[i]
            o = et.to_compute(flat[a:a + 1])[0]
            old[i] = o
            if kind == "cas":
                new = vals[i] if o == cv[i] else o  # type: ignore[index]
            else:
                new = fns[kind](o, vals[i])
            flat[a:a + 1] = et.to_storage(et.cast(np.asarray([new])))
    out = np.zeros(shape, dtype=et.np)
    if m is None:
        out[...] = old.reshape(shape)
    else:
        out[m] = old
    if st.ir is not None:
        st.emit(f"tt.atomic_rmw({kind}) {buf.name} : {type_str(shape, et)}")
    return tensor(out if shape else out[()], et)


def atomic_add(pointer: Any, val: Any, mask: Any = None, sem: Any = None,
               scope: Any = None) -> tensor:
    """Atomically add ``val`` at ``pointer``; return the old values.

    Lanes hitting the same address are applied one after another in lane
    (C) order, so each sees the previous lane's result.
    """
    return _atomic("add", pointer, val, mask)


def atomic_max(pointer: Any, val: Any, mask: Any = None, sem: Any = None,
               scope: Any = None) -> tensor:
    """Atomically store ``max(old, val)``; return the old values."""
    return _atomic("max", pointer, val, mask)


def atomic_min(pointer: Any, val: Any, mask: Any = None, sem: Any = None,
               scope: Any = None) -> tensor:
    """Atomically store ``min(old, val)``; return the old values."""
    return _atomic("min", pointer, val, mask)


def atomic_xchg(pointer: Any, val: Any, mask: Any = None, sem: Any = None,
                scope: Any = None) -> tensor:
    """Atomically store ``val``; return the old values."""
    return _atomic("xchg", pointer, val, mask)


def atomic_and(pointer: Any, val: Any, mask: Any = None, sem: Any = None,
               scope: Any = None) -> tensor:
    """Atomically store ``old & val``; return the old values."""
    return _atomic("and", pointer, val, mask)


def atomic_or(pointer: Any, val: Any, mask: Any = None, sem: Any = None,
              scope: Any = None) -> tensor:
    """Atomically store ``old | val``; return the old values."""
    return _atomic("or", pointer, val, mask)


def atomic_xor(pointer: Any, val: Any, mask: Any = None, sem: Any = None,
               scope: Any = None) -> tensor:
    """Atomically store ``old ^ val``; return the old values."""
    return _atomic("xor", pointer, val, mask)


def atomic_cas(pointer: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None) -> tensor:
    """Atomically store ``val`` where ``old == cmp``; return the old values."""
    return _atomic("cas", pointer, val, None, cmp)
