"""The block matrix product ``tl.dot``.

Accumulation types follow the GPU's tensor-core instructions (float32 for
fp16/bf16/fp32 operands, int32 for int8) except that float32 operands are
multiplied in full float32 rather than TF32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang import _opcount
from autotile.lang import _semantic as S
from autotile.lang._operands import any_batched, as_dtype, emit
from autotile.lang._state import shape_str
from autotile.lang._tensor import BatchedTensor, tensor, to_tensor, values

__all__ = ["dot"]


def dot(input: Any, other: Any, acc: Any = None, input_precision: Any = None,
        allow_tf32: Any = None, max_num_imprecise_acc: Any = None,
        out_dtype: Any = D.float32) -> tensor:
    """Block matrix product ``input @ other (+ acc)``.

    float16/bfloat16/float32 operands accumulate in float32 (float64 in
    float64, int8 in int32).  Products of fp16/bf16 values are exact in
    float32, so the result matches a float32 GEMM.  ``input_precision`` and
    ``allow_tf32`` do not change the result: float32 operands are multiplied
    in full float32 (the GPU would use TF32 by default), but
    ``input_precision`` must be one that Triton accepts.  Triton's NVIDIA
    backend needs the inner dimension ``K`` to be at least 16 (32 for 8-bit
    operands; ``M`` and ``N`` may be smaller): a smaller ``K`` is computed, as
    Triton's interpreter does, with a :class:`~autotile.lang.TritonBackendWarning`,
    and is an error inside :func:`~autotile.lang.backend_rules` ``("nvidia")``.

    Raises
    ------
    LangError
        If ranks are not 2/3, inner dimensions differ, dtypes differ,
        ``K < 16`` under ``backend_rules("nvidia")`` (``K < 32`` for int8,
        uint8 or fp8 operands; Triton's message "Input shapes should have
        M >= 1, N >= 1 and K >= 16") or
        ``input_precision`` is not None or one of Triton's ``"tf32"``,
        ``"tf32x3"``, ``"ieee"``, ``"bf16x3"``, ``"bf16x6"`` (any case).
    """
    S.check_input_precision(input_precision)
    a, b = to_tensor(input), to_tensor(other)
    S.check_dot_shapes(a.shape, b.shape)
    if a.dtype is not b.dtype:
        raise LangError(f"dot operands must have the same dtype, got {a.dtype} and {b.dtype}")
    S.check_dot_min_size(a.shape, b.shape, a.dtype.primitive_bitwidth)
    cdt: Any
    if a.dtype is D.float64:
        rt, cdt = D.float64, np.float64
    elif a.dtype.kind != 3:
        rt, cdt = D.int32, np.int32
    else:
        rt, cdt = as_dtype(out_dtype), np.float32
    batched = any_batched(a, b, acc)
    # a batched operand's program axis is a matmul batch axis (the other one broadcasts)
    r = np.matmul(np.asarray(values(a), dtype=cdt), np.asarray(values(b), dtype=cdt))
    r_shape = r.shape[1:] if any_batched(a, b) else r.shape
    if acc is not None:
        at = to_tensor(acc)
        if at.shape != r_shape:
            raise LangError(f"dot accumulator shape {at.shape} does not match the product shape "
                            f"{r_shape}")
        rt = at.dtype
        r = np.asarray(values(at), dtype=np.float64 if rt is D.float64 else cdt) + r
    r = rt.cast(r)
    _opcount.dot(a, b)
    if batched:
        return BatchedTensor(r, rt)
    emit(f"tt.dot : {shape_str(a.shape)} * {shape_str(b.shape)} -> {shape_str(r.shape)}")
    return tensor(r, rt)

