# Triton kernels are untyped by convention and ``BLOCK: tl.constexpr`` is not an int to
# mypy, so the checks that fire inside @jit bodies are off in this module.
# mypy: disable-error-code="no-untyped-def,arg-type,operator,attr-defined"
"""Vector addition, Triton tutorial 01 (seed §2.1)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

import autotile.lang as tl
from autotile.kernels._host import cdiv, check_power_of_2
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

__all__ = ["add_kernel", "add", "add_reference", "ADD_KNOBS"]


@jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """``out[i] = x[i] + y[i]``; program ``pid`` owns ``BLOCK_SIZE`` elements, masked at the end."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(
    x: npt.NDArray[np.generic],
    y: npt.NDArray[np.generic],
    *,
    BLOCK_SIZE: int = 1024,
    out: npt.NDArray[np.generic] | None = None,
) -> npt.NDArray[np.generic]:
    """Launch :func:`add_kernel` on ``cdiv(n, BLOCK_SIZE)`` programs.

    Parameters
    ----------
    x, y : ndarray of shape (n,)
        Contiguous inputs of one dtype.
    BLOCK_SIZE : int, default=1024
        Elements per program, a power of two.
    out : ndarray of shape (n,), optional
        Output buffer; allocated like ``x`` when omitted.

    Returns
    -------
    ndarray of shape (n,)
        ``x + y``.

    Raises
    ------
    TypeError
        If ``BLOCK_SIZE`` is not an int.
    ValueError
        If the shapes differ, the inputs are not 1-D or ``BLOCK_SIZE`` is not
        a power of two.
    """
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(
            f"x and y must be 1-D of one shape, got x.shape={x.shape}, y.shape={y.shape}"
        )
    BLOCK_SIZE = check_power_of_2("BLOCK_SIZE", BLOCK_SIZE)
    if out is None:
        out = np.empty_like(x)
    n = x.shape[0]
    add_kernel[(cdiv(n, BLOCK_SIZE),)](x, y, out, n, BLOCK_SIZE=BLOCK_SIZE)
    return out


def add_reference(
    x: npt.NDArray[np.generic], y: npt.NDArray[np.generic]
) -> npt.NDArray[np.generic]:
    """NumPy reference of :func:`add`."""
    out: npt.NDArray[np.generic] = np.add(x, y)
    return out


ADD_KNOBS = KernelKnobs(
    kernel=add_kernel,
    knobs={"BLOCK_SIZE": (128, 256, 512, 1024, 2048, 4096), "num_warps": (1, 2, 4, 8)},
    constraints=(
        ShapeConstraint(
            "threads_le_block",
            lambda c, s: 32 * c["num_warps"] <= c["BLOCK_SIZE"],
            "32 * num_warps <= BLOCK_SIZE (every thread owns at least one element)",
        ),
    ),
    shape_names=("n",),
)


# ------------------------------------------------------------------ kernel spec
def _add_args(s: Any, dtype: str, rng: Any) -> dict[str, Any]:
    n = s["n"]
    return {"x_ptr": new_array((n,), dtype, rng), "y_ptr": new_array((n,), dtype, rng),
            "out_ptr": empty_array((n,), dtype), "n_elements": n}


ADD_SPEC = KernelSpec(
    name="vector_add", kernel=add_kernel, knobs=ADD_KNOBS, shape_names=("n",),
    make_args=_add_args,
    grid=lambda s, meta: (cdiv(s["n"], meta["BLOCK_SIZE"]),),
    reference=lambda a: {"out_ptr": as_float_array(a["x_ptr"]) + as_float_array(a["y_ptr"])},
    flops=lambda s: float(s["n"]),
    compulsory_bytes=lambda s, d: 3.0 * s["n"] * DTYPE_ITEMSIZE_BYTES[d],
    shape_of=lambda a: ({"n": int(a["n_elements"])}, dtype_name(a["x_ptr"])),
    small_shape=lambda s: {"n": min(s["n"], 1000)},
    default_dtype="float32", launcher=add, host_reference=add_reference,
    doc="out = x + y (tutorial 01)",
)
