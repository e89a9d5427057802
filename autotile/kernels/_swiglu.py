# Triton kernels are untyped by convention and ``BLOCK: tl.constexpr`` is not an int to
# mypy, so the checks that fire inside @jit bodies are off in this module.
# mypy: disable-error-code="no-untyped-def,arg-type,operator,attr-defined"
"""SwiGLU, the gated activation of LLaMA-style MLPs: ``out = silu(gate) * up``.

This module is the worked example of adding a kernel to autotile: one file
(the Triton-valid ``@jit`` source, a NumPy reference and one
:class:`KernelSpec`) and one line in ``_registry.py``. Nothing else names it:
the GPU model (``"records"``), ``TritonMeasurer``, ``@autotune`` and the
conformance tests find it through the registry.

References
----------
Shazeer, "GLU Variants Improve Transformer", arXiv:2002.05202, 2020.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

import autotile.lang as tl
from autotile.kernels._host import cdiv
from autotile.kernels._knobs import KernelKnobs, ShapeConstraint
from autotile.kernels._spec import (
    DTYPE_ITEMSIZE_BYTES,
    KernelSpec,
    as_float_array,
    dtype_name,
    empty_array,
    new_array,
)
from autotile.lang import jit

__all__ = ["swiglu_kernel", "swiglu", "swiglu_reference", "SWIGLU_SPEC"]


@jit
def swiglu_kernel(gate_ptr, up_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    """``out[i] = gate[i] * sigmoid(gate[i]) * up[i]``, ``BLOCK`` elements per program."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    g = tl.load(gate_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(up_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    out = g * tl.sigmoid(g) * u
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def swiglu_reference(gate: npt.NDArray[Any], up: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    """Float64 reference: ``gate * sigmoid(gate) * up``."""
    g = np.asarray(gate, np.float64)
    return g / (1.0 + np.exp(-g)) * np.asarray(up, np.float64)


def swiglu(gate: npt.NDArray[Any], up: npt.NDArray[Any], *, BLOCK: int = 1024
           ) -> npt.NDArray[Any]:
    """Launch :func:`swiglu_kernel` on two 1-D arrays of one dtype and length.

    Returns
    -------
    ndarray
        ``silu(gate) * up``, same shape and dtype as ``gate``.

    Raises
    ------
    ValueError
        If the arrays are not 1-D of one shape.
    """
    if gate.ndim != 1 or gate.shape != up.shape:
        raise ValueError(f"gate and up must be 1-D of one shape, got {gate.shape} and "
                         f"{up.shape}")
    out = np.empty_like(gate)
    n = gate.shape[0]
    swiglu_kernel[(cdiv(n, BLOCK),)](gate, up, out, n, BLOCK=BLOCK)
    return out


def _args(s: Any, dtype: str, rng: Any) -> dict[str, Any]:
    n = s["n"]
    return {"gate_ptr": new_array((n,), dtype, rng), "up_ptr": new_array((n,), dtype, rng),
            "out_ptr": empty_array((n,), dtype), "n_elements": n}


SWIGLU_SPEC = KernelSpec(
    name="swiglu",
    kernel=swiglu_kernel,
    knobs=KernelKnobs(
        kernel=swiglu_kernel,
        knobs={"BLOCK": (256, 512, 1024, 2048, 4096), "num_warps": (1, 2, 4, 8)},
        constraints=(ShapeConstraint("threads_le_block",
                                     lambda c, s: 32 * c["num_warps"] <= c["BLOCK"],
                                     "32 * num_warps <= BLOCK"),),
        shape_names=("n",)),
    shape_names=("n",),
    make_args=_args,
    grid=lambda s, meta: (cdiv(s["n"], meta["BLOCK"]),),
    reference=lambda a: {"out_ptr": swiglu_reference(as_float_array(a["gate_ptr"]),
                                                     as_float_array(a["up_ptr"]))},
    flops=lambda s: 6.0 * s["n"],
    compulsory_bytes=lambda s, d: 3.0 * s["n"] * DTYPE_ITEMSIZE_BYTES[d],
    shape_of=lambda a: ({"n": int(a["n_elements"])}, dtype_name(a["gate_ptr"])),
    small_shape=lambda s: {"n": min(s["n"], 3000)},
    launcher=swiglu, host_reference=swiglu_reference,
    doc="SwiGLU gate: silu(gate) * up (the worked example of adding a kernel)",
)
