"""``autotile.lang``: a NumPy interpreter for Triton-style tile kernels.

Kernels use Triton's names and signatures, so the same source runs under
``triton.jit`` when ``tl`` is ``triton.language``::

    import autotile.lang as tl
    from autotile.lang import jit

    @jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)

    add_kernel[(tl.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    add_kernel.last_record.summary()      # per-buffer elements/bytes, programs

Arguments: NumPy arrays become pointers to their element 0 (strides are in
elements: pass ``a.strides[0] // a.itemsize``); Python ints become int32
(int64 if large) scalars, floats float32 scalars; ``tl.constexpr``
parameters arrive as plain Python values.  bfloat16 buffers are
:class:`BFloat16Array` (uint16 bits; see :func:`bf16_array`).

Recording: every launch leaves a :class:`LaunchRecord` on
``kernel.last_record`` (per program: elements read and written per buffer,
``dot_flops``, ``alu_ops``, ``sfu_ops``, ``dot_operand_bytes``,
``max_tile_elems``, ``scratch_bytes``, ``reductions``); ``with tl.recording(trace="line") as
rec:`` also collects records with an :class:`AccessTrace`.  The launch
option ``programs=[...]`` (interpreter only) runs a subset of the grid's
programs, with the record and trace rows of the full launch for them.  ``kernel.trace(...,
grid=...)`` (or :func:`ir_listing`) lists the block-level ops of program 0.

Semantics notes (where the interpreter fixes what Triton leaves open):

* programs run sequentially, axis 0 fastest, each as plain Python (``for``
  and ``if`` on scalars are ordinary Python control flow); the launch option
  ``batch_programs=True`` (interpreter only) runs batches of programs in one
  pass with the same memory, record and trace, falling back to one program
  at a time where programs branch differently (:mod:`autotile.lang._batch`);
* index arithmetic keeps Triton's types (``program_id``/``arange`` are
  int32); pointer offsets are int64;
* signed integer overflow is an error: a ``+``, ``-``, ``*``, ``<<`` or unary
  ``-`` on int8/16/32/64 values whose exact result does not fit the type
  raises :class:`~autotile.errors.IntegerOverflowError` (kernel, program id,
  operands, exact and wrapped value), where the GPU would wrap silently (an
  int32 ``pid * stride`` past ``2**31`` reads the wrong element, Triton
  #6748); this is Triton's ``sanitize_overflow`` check, which the GPU only
  runs with ``debug=True``.  The launch option ``sanitize_overflow=False``
  keeps the GPU's two's-complement wrapping, for kernels that wrap on
  purpose (hashes, random number generators); batched launches and
  ``programs=`` subsets follow the same option.  Unsigned integers, ``//``,
  ``%``, casts, reductions and scans (a combine function's arithmetic
  included) and atomics always wrap; a Python int operand
  outside the type an op computes in is an error, as in Triton;
* ``//`` and ``%`` on integers truncate toward zero (C), ``%`` on floats is
  ``fmod``, ``//`` on floats is a :class:`~autotile.errors.LangError`;
* masked-off lanes of ``load`` give ``other`` or 0, never touch memory and
  are not counted; an active lane outside its buffer raises
  :class:`~autotile.errors.OutOfBoundsError` (kernel, program id, buffer,
  first 5 offsets) before anything is read or written; a store or atomic to
  an argument whose array is read-only (``flags.writeable`` False) raises a
  :class:`~autotile.errors.LangError` naming the argument;
* ``dot`` multiplies fp16/bf16/fp32 in float32 (no TF32 rounding) and
  checks ``input_precision`` against Triton's values;
* NaN rule: ``max``/``min``/``maximum``/``minimum`` ignore a NaN operand
  like ``max.f32`` (NaN only when every lane is NaN), and ``argmax``/
  ``argmin`` point at that value (``[1, nan, 5, 2]``: max 5, argmax 2; an
  all-NaN row gives index 0), where Triton's GPU argmax lets a NaN win
  depending on the reduction tree;
* ``tl.reduce`` and ``tl.associative_scan`` take one tensor or a tuple of
  tensors and a combine function (``@jit`` or plain Python) called on
  blocks: ``reduce`` combines adjacent pairs level by level, ``scan`` folds
  left to right, so any associative combine gives a left fold's result
  (:mod:`autotile.lang._combine`); both run batched;
* Python scalars follow Triton's weak typing: an int or float operand
  takes the tensor's type when its kind (bool < int < float) is not higher,
  and a literal is int32/uint32/int64/uint64 or float32/float64 by value;
  ``x = v`` with a Python number ``v`` binds a scalar of that type, as
  Triton's code generator does (``value = 1; value.dtype`` is int32;
  :mod:`autotile.lang._assign`);
  ``>>`` is arithmetic when the shifted operand is signed, logical when
  unsigned; ``tensor.shape`` equals the list of the same ints;
* bfloat16 values are float32 arrays rounded to bfloat16 (nearest even)
  after every op, cast, load and store; the fp8 types (``float8e5``,
  ``float8e4nv``, ``float8e4b15``, ``float8e5b16``, ``float8e4b8``) likewise,
  saturating to the largest finite value (:mod:`autotile.lang._fp8`), with
  :class:`Float8Array` buffers (:func:`fp8_array`, :func:`reinterpret`).
"""

from __future__ import annotations

import dis
import sys

from autotile.lang import _core as _core_mod
from autotile.lang import math, random
from autotile.lang._backend import TritonBackendWarning, backend_rules
from autotile.lang._coalesce import (
    CoalesceReport,
    ThreadLayout,
    coalesce,
    layout_coalesced_scalar,
    layout_coalesced_vector,
    layout_contiguous_per_thread,
)
from autotile.lang._core import (
    PropagateNan,
    abs,
    arange,
    argmax,
    argmin,
    associative_scan,
    assume,
    broadcast,
    broadcast_to,
    cast,
    cat,
    cdiv,
    ceil,
    clamp,
    cos,
    cumprod,
    cumsum,
    debug_barrier,
    device_assert,
    device_print,
    div_rn,
    dot,
    erf,
    exp,
    exp2,
    expand_dims,
    fdiv,
    flip,
    floor,
    fma,
    full,
    gather,
    histogram,
    interleave,
    join,
    log,
    log2,
    max,
    max_constancy,
    max_contiguous,
    maximum,
    min,
    minimum,
    multiple_of,
    next_power_of_2,
    num_programs,
    permute,
    program_id,
    range,
    ravel,
    reduce,
    reduce_or,
    reshape,
    rsqrt,
    sigmoid,
    sin,
    softmax,
    sort,
    split,
    sqrt,
    sqrt_rn,
    static_assert,
    static_print,
    static_range,
    sum,
    swizzle2d,
    topk,
    trans,
    umulhi,
    view,
    where,
    xor_sum,
    zeros,
    zeros_like,
)
from autotile.lang._descriptor import (
    TensorDescriptor,
    advance,
    load_tensor_descriptor,
    make_block_ptr,
    make_tensor_descriptor,
    store_tensor_descriptor,
)
from autotile.lang._dtypes import (
    BFloat16Array,
    Float8Array,
    bf16_array,
    bf16_to_float32,
    bfloat16,
    dtype,
    float8e4b8,
    float8e4b15,
    float8e4nv,
    float8e5,
    float8e5b16,
    float16,
    float32,
    float64,
    fp8_array,
    fp8_to_float32,
    int1,
    int8,
    int16,
    int32,
    int64,
    pointer_type,
    reinterpret,
    round_to_bf16,
    uint8,
    uint16,
    uint32,
    uint64,
)
from autotile.lang._from_triton import from_triton, is_triton_kernel
from autotile.lang._jit import IRListing, JITFunction, ir_listing, jit
from autotile.lang._liveness import LiveValues, live_values
from autotile.lang._memory import (
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xchg,
    atomic_xor,
    load,
    store,
)
from autotile.lang._random import (
    pair_uniform_to_normal,
    philox,
    philox_impl,
    rand,
    rand4x,
    randint,
    randint4x,
    randn,
    randn4x,
    uint_to_uniform_float,
)
from autotile.lang._record import AccessTrace, LaunchRecord, Recorder, recording
from autotile.lang._tensor import const, constexpr, tensor

del _core_mod
block_type = tensor
#: ``tl.pointer_type(tl.int32)`` under Triton's alias.
pi32_t = pointer_type(int32)
#: Triton's limit on the elements of one block (``tl.TRITON_MAX_TENSOR_NUMEL``).
TRITON_MAX_TENSOR_NUMEL = 1048576

#: ``triton.language`` names the interpreter does not provide, and why; accessing one
#: raises :class:`~autotile.errors.UnsupportedBuiltinError` naming it.
UNSUPPORTED_BUILTINS = {
    "inline_asm_elementwise": "inline PTX/GCN assembly cannot run on the CPU",
    "dot_scaled": "block-scaled (microscaling) dot products are not implemented",
    "bitonic_merge": "use tl.sort",
    "extra": "libdevice and other backend libraries are not provided; use tl.math",
    "async_task": "warp specialisation is a compiler feature",
    "constexpr_function": "use plain Python functions of constexpr values",
    "tensor_descriptor": "build descriptors with tl.make_tensor_descriptor",
}


def _importing() -> bool:
    """Whether the running ``__getattr__`` serves a ``from autotile.lang import name``.

    Python asks for the name from ``importlib``'s ``_handle_fromlist`` (a
    package) and then from the importing frame's ``IMPORT_FROM`` instruction.
    """
    try:
        frame = sys._getframe(2)  # 0: this function, 1: __getattr__, 2: its caller
    except ValueError:
        return False
    code = frame.f_code
    if code.co_name == "_handle_fromlist" and "importlib" in code.co_filename:
        return True
    i = frame.f_lasti
    return 0 <= i < len(code.co_code) and code.co_code[i] == dis.opmap["IMPORT_FROM"]


def __getattr__(name: str) -> object:
    """Raise a clear error for a Triton builtin the interpreter lacks.

    Raises
    ------
    UnsupportedBuiltinError
        For ``tl.name`` (an ``AttributeError``, so ``hasattr`` is False).
    UnsupportedBuiltinImportError
        For ``from autotile.lang import name`` (an ``ImportError`` that keeps
        the message).
    AttributeError
        For a name Triton does not have either.
    """
    from autotile.errors import UnsupportedBuiltinError, UnsupportedBuiltinImportError

    reason = UNSUPPORTED_BUILTINS.get(name)
    if reason is not None:
        msg = (f"tl.{name} is a triton.language builtin that autotile's interpreter does not "
               f"support ({reason}); see docs/guide/language.md, section 'Not supported'")
        if _importing():
            err = UnsupportedBuiltinImportError(msg)
            err.name = name
            raise err
        raise UnsupportedBuiltinError(msg)
    raise AttributeError(f"module 'autotile.lang' has no attribute {name!r}")

__all__ = [
    # kernels and launch
    "jit", "JITFunction", "const", "constexpr", "tensor", "IRListing", "ir_listing",
    "from_triton", "is_triton_kernel", "backend_rules", "TritonBackendWarning",
    # recording
    "LaunchRecord", "AccessTrace", "Recorder", "recording", "live_values", "LiveValues",
    # dtypes
    "dtype", "pointer_type", "int1", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "float16", "bfloat16", "float32", "float64", "float8e5", "float8e4nv",
    "float8e4b15", "float8e5b16", "float8e4b8",
    "BFloat16Array", "bf16_array", "bf16_to_float32", "round_to_bf16", "Float8Array",
    "fp8_array", "fp8_to_float32", "reinterpret",
    # builtins
    "program_id", "num_programs", "arange", "zeros", "zeros_like", "full", "cast", "where",
    "maximum", "minimum", "clamp", "PropagateNan", "exp", "exp2", "log", "log2", "sqrt",
    "sqrt_rn", "rsqrt", "abs", "sigmoid", "cos", "sin", "fma", "floor", "ceil", "erf", "fdiv",
    "div_rn", "sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum", "cumsum",
    "cumprod", "associative_scan", "dot", "reshape", "view", "trans", "permute",
    "broadcast_to", "broadcast", "expand_dims", "ravel", "join", "split", "cat", "flip",
    "softmax", "static_range", "range", "multiple_of", "max_contiguous", "max_constancy",
    "debug_barrier", "static_assert", "static_print", "device_assert", "device_print",
    "assume", "cdiv", "next_power_of_2", "umulhi", "gather", "histogram", "interleave", "math",
    "reduce_or", "swizzle2d", "sort", "topk", "TRITON_MAX_TENSOR_NUMEL", "UNSUPPORTED_BUILTINS",
    # random numbers (Philox)
    "random", "rand", "randn", "randint", "rand4x", "randn4x", "randint4x", "philox",
    "philox_impl", "pair_uniform_to_normal", "uint_to_uniform_float",
    "pi32_t",
    "load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas",
    "atomic_and", "atomic_or", "atomic_xor",
    # descriptors and block pointers
    "make_tensor_descriptor", "TensorDescriptor", "load_tensor_descriptor",
    "store_tensor_descriptor", "make_block_ptr", "advance",
    # coalescing model
    "ThreadLayout", "CoalesceReport", "coalesce", "layout_contiguous_per_thread",
    "layout_coalesced_vector", "layout_coalesced_scalar",
]
