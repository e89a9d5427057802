# Triton kernels are untyped by convention and ``BLOCK: tl.constexpr`` is not an int to
# mypy, so the checks that fire inside @jit bodies are off in this module.
# mypy: disable-error-code="no-untyped-def,arg-type,operator,attr-defined"
"""Row-wise L2 norm (seed exercise 1): one program per row, masked lanes are 0."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

import autotile.lang as tl
from autotile.kernels._host import check_int, is_power_of_2, next_power_of_2
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

__all__ = ["l2_norm_kernel", "l2_norm", "l2_norm_reference", "L2_NORM_KNOBS"]


@jit
def l2_norm_kernel(ptr, out, stride, N, BLOCK: tl.constexpr):
    """``out[row] = sqrt(sum(x[row, :] ** 2))``; ``BLOCK >= N``, masked lanes load 0.

    Computes in float32: Triton's ``tl.sqrt`` takes float32/float64 only.
    """
    row = tl.program_id(0)
    col = tl.arange(0, BLOCK)
    x = tl.load(ptr + row * stride + col, mask=col < N, other=0.0).to(tl.float32)
    tl.store(out + row, tl.sqrt(tl.sum(x * x, axis=0)))


def l2_norm(x: npt.NDArray[np.floating], *, BLOCK: int | None = None
            ) -> npt.NDArray[np.floating]:
    """Launch :func:`l2_norm_kernel` on one program per row.

    Parameters
    ----------
    x : ndarray of shape (M, N)
        Input with unit column stride (any row stride).
    BLOCK : int, optional
        Lanes per program, a power of two ``>= N``; default ``next_power_of_2(N)``.

    Returns
    -------
    ndarray of shape (M,), dtype of ``x``

    Raises
    ------
    TypeError
        If ``BLOCK`` is not an int.
    ValueError
        If ``x`` is not 2-D with unit column stride or ``BLOCK`` is too small.
    """
    if x.ndim != 2 or x.strides[1] != x.itemsize:
        raise ValueError(
            f"x must be 2-D with unit column stride, got shape={x.shape}, strides={x.strides}"
        )
    m, n = x.shape
    block = next_power_of_2(n) if BLOCK is None else check_int("BLOCK", BLOCK, 1)
    if not is_power_of_2(block) or block < n:
        raise ValueError(f"BLOCK must be a power of two >= N, got BLOCK={block}, N={n}")
    out = np.empty(m, x.dtype)
    l2_norm_kernel[(m,)](x, out, x.strides[0] // x.itemsize, n, BLOCK=block)
    return out


def l2_norm_reference(x: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """Float64 reference: ``sqrt(sum(x ** 2, axis=1))``."""
    x64 = np.asarray(x, np.float64)
    out: npt.NDArray[np.float64] = np.sqrt((x64 * x64).sum(axis=1))
    return out


L2_NORM_KNOBS = KernelKnobs(
    kernel=l2_norm_kernel,
    knobs={"BLOCK": tuple(2**i for i in range(4, 17)), "num_warps": (1, 2, 4, 8)},
    constraints=(
        ShapeConstraint("block_covers_row", lambda c, s: c["BLOCK"] >= s["N"], "BLOCK >= N"),
    ),
    shape_names=("M", "N"),
)


# ------------------------------------------------------------------ kernel spec
def _l2_args(s: Any, dtype: str, rng: Any) -> dict[str, Any]:
    m, n = s["M"], s["N"]
    return {"ptr": new_array((m, n), dtype, rng), "out": empty_array((m,), dtype),
            "stride": n, "N": n}


L2_NORM_SPEC = KernelSpec(
    name="l2_norm", kernel=l2_norm_kernel, knobs=L2_NORM_KNOBS, shape_names=("M", "N"),
    make_args=_l2_args, grid=lambda s, meta: (s["M"],),
    reference=lambda a: {"out": l2_norm_reference(as_float_array(a["ptr"]))},
    flops=lambda s: 2.0 * s["M"] * s["N"],
    compulsory_bytes=lambda s, d: float(s["M"] * s["N"] + s["M"]) * DTYPE_ITEMSIZE_BYTES[d],
    shape_of=lambda a: ({"M": int(a["ptr"].shape[0]), "N": int(a["N"])}, dtype_name(a["ptr"])),
    default_dtype="float32", small_shape=lambda s: {"M": min(s["M"], 4), "N": s["N"]},
    launcher=l2_norm, host_reference=l2_norm_reference,
    doc="row-wise L2 norm (seed exercise 1)",
)
