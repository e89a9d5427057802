"""Per-program op counts: tensor-core FLOPs, ALU and SFU lanes, tile and scratch sizes.

Every launch counts, for each program, what a GPU cost model needs besides
memory traffic (always on: a few integer additions per op).  The builtins
call the helpers below with the block they produced; the helpers add to the
running :class:`~autotile.lang._state.OpCounter` of the launch
(``CURRENT.get().ops``) and the launch copies it into the per-program rows
of its :class:`~autotile.lang.LaunchRecord` (attributes named in
:data:`~autotile.lang._state.OP_COUNTS`).

Counts are per program and per *lane*: an op on a block of ``n`` elements
counts ``n``; an op on a 0-d value (``pid * BLOCK``, a scalar argument)
counts 1; arithmetic between plain Python numbers (constexprs) is Python's
and counts 0.  A batched launch (``batch_programs=``) counts each op once per
batch with the block shape of one program, which is what every program of
the batch counts sequentially, so both give the same rows.

``dot_flops`` (sum)
    ``2 * M * N * K`` per ``tl.dot`` of an ``(M, K)`` by a ``(K, N)`` block,
    times the batch size of a 3-D dot.  Adding the accumulator is free (the
    MMA accumulates in place).
``dot_operand_bytes`` (maximum)
    Largest ``numel(a) * itemsize(a) + numel(b) * itemsize(b)`` over the
    program's dots: the shared-memory footprint of one pipeline stage.
``alu_ops`` (sum)
    Lanes of element-wise work on non-pointer values: ``+ - * / // % << >>
    & | ^``, comparisons, unary ``-``/``~``/``abs``, ``where``,
    ``maximum``/``minimum`` (``clamp`` is both), ``fma``, ``floor``/``ceil``,
    casts (not bitcasts, not casts to the same type), the extra FMUL of
    ``exp``/``log`` and of a division (see ``sfu_ops``), and one per *input*
    element of a reduction or scan (``sum``, ``max``, ``min``, ``argmax``,
    ``argmin``, ``xor_sum``, ``reduce``, ``cumsum``, ``cumprod``,
    ``associative_scan``).  For ``reduce`` and ``associative_scan`` the ops
    of ``combine_fn`` are not counted on top: one combine per input element,
    whatever its body.  Pointer arithmetic (``ptr + offs``, pointer
    comparisons, ``where`` on pointers) is address generation and is not
    counted; the integer index math that computes ``offs`` is.  Loads,
    stores, atomics, ``arange``/``full``/``zeros`` and shape ops count 0.
    Integer division and modulo count 1 (on a GPU they are a short
    instruction sequence).
``sfu_ops`` (sum)
    Lanes of transcendental ops, which run on the special function units:
    see :data:`MATH_LANES`.  A float division (``/``, ``tl.fdiv``,
    ``tl.div_rn``) is an SFU reciprocal (``MUFU.RCP``) plus an ALU multiply;
    ``tl.sigmoid`` is counted as its composition ``1 / (1 + exp(-x))``
    (2 SFU + 4 ALU lanes per element); ``tl.softmax`` likewise.  The rule
    does not depend on the dtype.
``max_tile_elems`` (maximum)
    Largest element count of any block the program creates (results of
    arithmetic, loads, ``arange``, ``full``, reductions, dots, ...; pointer
    blocks and masks included; at least 1 for a program that computes
    anything): a register-pressure proxy.
``scratch_bytes`` (maximum)
    Largest block, in bytes of its element type (8 per pointer), that goes
    through a layout change needing shared memory on a GPU: the input of
    ``tl.trans``/``tl.permute`` (not the identity permutation)/``x.T``, the
    input of every reduction and scan listed under ``alu_ops``, and the
    input of a ``tl.reshape``/``tl.view``/``tl.ravel`` that changes more
    than size-1 axes (one that only inserts or drops size-1 axes keeps the
    layout).  ``join``, ``split``, ``cat``,
    ``flip``, broadcasts and ``expand_dims`` count 0; so do ``tl.dot``
    operands (they are ``dot_operand_bytes``).
``reductions`` (sum)
    Reductions and scans the program ran (each call listed under
    ``alu_ops``, whatever its size and however many operands a ``reduce``
    or ``associative_scan`` has; ``max``/``min`` with ``return_indices``
    count two, the value and the index): on a GPU each is a chain of warp
    shuffles and, across warps, a shared-memory exchange and a barrier, whose
    latency the program waits for.

The ALU/SFU split follows the CUDA C++ Programming Guide, section
"Arithmetic Instructions", table "Throughput of Native Arithmetic
Instructions": compute capabilities 7.x-9.0 retire 64-128 results per clock
and multiprocessor of 32-bit floating-point add, multiply and multiply-add
(and of compare/min/max), but only 16 of "32-bit floating-point reciprocal,
reciprocal square root, base-2 logarithm (``__log2f``), base 2 exponential
(``exp2f``), sine (``__sinf``), cosine (``__cosf``)" -- the SFU (``MUFU``)
instructions.  The counts are instruction *classes*, not SASS counts: the
range reduction of ``sin``/``cos``, the Newton steps of an IEEE division or
square root and the polynomial of ``erf`` are not counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autotile.lang import _dtypes as D
from autotile.lang._state import CURRENT
from autotile.lang._tensor import BatchedTensor, tensor

__all__ = ["MATH_LANES", "numel", "binary", "alu", "math", "dot", "reduction", "layout",
           "reshape", "snapshot", "restore"]

#: ``tl`` math function (name as :func:`autotile.lang._math._math1` gets it) ->
#: (ALU lanes, SFU lanes) per element.  ``exp``/``log`` lower to ``ex2``/``lg2``
#: of a scaled argument (Triton multiplies by ``log2(e)`` / ``ln(2)``).
MATH_LANES: dict[str, tuple[int, int]] = {
    "exp": (1, 1),      # FMUL by log2(e) + MUFU.EX2
    "exp2": (0, 1),     # MUFU.EX2
    "log": (1, 1),      # MUFU.LG2 + FMUL by ln(2)
    "log2": (0, 1),     # MUFU.LG2
    "sqrt": (0, 1),     # MUFU.SQRT / MUFU.RSQ (sqrt and sqrt_rn)
    "rsqrt": (0, 1),    # MUFU.RSQ
    "sin": (0, 1),      # MUFU.SIN
    "cos": (0, 1),      # MUFU.COS
    "erf": (0, 1),      # counted as one transcendental; its polynomial FMAs are not
    "absf": (1, 0),     # abs: ALU
    "floor": (1, 0),    # FRND: ALU
    "ceil": (1, 0),     # FRND: ALU
}

_PTR = D.pointer_type


def numel(t: tensor) -> int:
    """Elements of one program's block of ``t`` (1 for a 0-d value)."""
    if type(t) is BatchedTensor:
        pv = t.pv
        return int(pv.size // pv.shape[0])
    v = t.v
    return int(v.size) if type(v) is np.ndarray else 1


def _itemsize(dt: Any) -> int:
    """Bytes of one element: ``dtype.itemsize``, 8 for a pointer."""
    return 8 if type(dt) is _PTR else (dt.bits + 7) // 8


def binary(op: str, t: tensor) -> tensor:
    """Count the binary operator ``op`` that produced the non-pointer block ``t``; return ``t``.

    One ALU lane per element; ``truediv`` adds one SFU lane (the reciprocal).
    """
    st = CURRENT.get()
    if st is not None:
        if type(t) is tensor:  # numel inline: this runs for every operator
            v = t.v
            n = v.size if type(v) is np.ndarray else 1
        else:
            n = numel(t)
        c = st.ops
        c.alu_ops += n
        if op == "truediv":
            c.sfu_ops += n
    return t


def alu(t: tensor) -> tensor:
    """Count one ALU lane per element of the result ``t`` (0 for pointers); return ``t``."""
    st = CURRENT.get()
    if st is not None and type(t.dtype) is not _PTR:
        if type(t) is tensor:
            v = t.v
            st.ops.alu_ops += v.size if type(v) is np.ndarray else 1
        else:
            st.ops.alu_ops += numel(t)
    return t


def math(name: str, t: tensor) -> tensor:
    """Count the math function ``name`` (a :data:`MATH_LANES` key) with result ``t``."""
    st = CURRENT.get()
    if st is not None:
        n_alu, n_sfu = MATH_LANES[name]
        n = t.v.size if type(t) is tensor and type(t.v) is np.ndarray else numel(t)
        c = st.ops
        c.alu_ops += n_alu * n
        c.sfu_ops += n_sfu * n
    return t


def dot(a: tensor, b: tensor) -> None:
    """Count a ``tl.dot`` of blocks ``a`` (``(M, K)`` or ``(B, M, K)``) and ``b``."""
    st = CURRENT.get()
    if st is None:
        return
    sa, sb = a.shape, b.shape
    n_a = n_b = 1
    for d in sa:
        n_a *= int(d)
    for d in sb:
        n_b *= int(d)
    c = st.ops
    c.dot_flops += 2 * n_a * int(sb[-1])
    nbytes = n_a * _itemsize(a.dtype) + n_b * _itemsize(b.dtype)
    if nbytes > c.dot_operand_bytes:
        c.dot_operand_bytes = nbytes


def reduction(t: tensor, step: bool = True) -> None:
    """Count a reduction or scan of the block ``t``: ALU lanes, scratch bytes, one reduction.

    ``step=False`` for the second and later operands of a multi-operand
    reduce or scan, which run in the first operand's shuffles.
    """
    st = CURRENT.get()
    if st is None:
        return
    n = t.v.size if type(t) is tensor and type(t.v) is np.ndarray else numel(t)
    c = st.ops
    c.alu_ops += n
    if step:
        c.reductions += 1
    nbytes = n * _itemsize(t.dtype)
    if nbytes > c.scratch_bytes:
        c.scratch_bytes = nbytes


def layout(t: tensor) -> None:
    """Count a layout change (transpose, permute) of the block ``t``: scratch bytes."""
    st = CURRENT.get()
    if st is None:
        return
    nbytes = numel(t) * _itemsize(t.dtype)
    c = st.ops
    if nbytes > c.scratch_bytes:
        c.scratch_bytes = nbytes


def reshape(t: tensor, shape: tuple[int, ...]) -> None:
    """Count a reshape of ``t`` to ``shape``: a layout change unless only size-1 axes move."""
    if [d for d in t.shape if d != 1] != [d for d in shape if d != 1]:
        layout(t)


def snapshot() -> tuple[int, int, int] | None:
    """The summed counters (``dot_flops``, ``alu_ops``, ``sfu_ops``) now, or None outside a launch.

    With :func:`restore`, leaves out the ops of a ``combine_fn``.
    """
    st = CURRENT.get()
    if st is None:
        return None
    c = st.ops
    return c.dot_flops, c.alu_ops, c.sfu_ops


def restore(snap: tuple[int, int, int] | None) -> None:
    """Set the summed counters back to a :func:`snapshot` (maxima are kept)."""
    st = CURRENT.get()
    if st is None or snap is None:
        return
    c = st.ops
    c.dot_flops, c.alu_ops, c.sfu_ops = snap
