# Triton kernels are untyped by convention and ``BLOCK: tl.constexpr`` is not an int to
# mypy, so the checks that fire inside @jit bodies are off in this module.
# mypy: disable-error-code="no-untyped-def,arg-type,operator,attr-defined"
"""Layer-norm forward, Triton tutorial 05.

One program per row: a first pass over the row's columns in ``BLOCK_SIZE``
chunks accumulates the mean, a second the variance, and a third writes
``y = (x - mean) * rstd * w + b``. ``Mean`` and ``Rstd`` (float32, one per
row) are stored for a backward pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

import autotile.lang as tl
from autotile.kernels._host import check_power_of_2
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

__all__ = ["layer_norm_fwd_kernel", "layer_norm", "layer_norm_reference", "LAYER_NORM_KNOBS"]


@jit
def layer_norm_fwd_kernel(
    X, Y, W, B, Mean, Rstd,
    stride, N, eps,
    BLOCK_SIZE: tl.constexpr,
):
    """``Y[row] = (X[row] - mean) * rstd * W + B``; one program per row."""
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


def layer_norm(
    x: npt.NDArray[np.floating],
    weight: npt.NDArray[np.floating],
    bias: npt.NDArray[np.floating],
    *,
    eps: float = 1e-5,
    BLOCK_SIZE: int = 1024,
) -> tuple[npt.NDArray[np.floating], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Launch :func:`layer_norm_fwd_kernel` on one program per row.

    Parameters
    ----------
    x : ndarray of shape (M, N)
        Input with unit column stride (any row stride).
    weight, bias : ndarray of shape (N,)
        Affine parameters.
    eps : float, default=1e-5
        Added to the variance.
    BLOCK_SIZE : int, default=1024
        Columns per chunk, a power of two.

    Returns
    -------
    y : ndarray of shape (M, N), dtype of ``x``
    mean, rstd : ndarray of shape (M,), dtype float32

    Raises
    ------
    TypeError
        If ``BLOCK_SIZE`` is not an int.
    ValueError
        If the shapes disagree, the columns are strided or ``BLOCK_SIZE`` is not
        a power of two.
    """
    if x.ndim != 2 or weight.shape != (x.shape[1],) or bias.shape != (x.shape[1],):
        raise ValueError(
            f"x must be (M, N) with weight and bias (N,), got x.shape={x.shape}, "
            f"weight.shape={weight.shape}, bias.shape={bias.shape}"
        )
    if x.strides[1] != x.itemsize:
        raise ValueError(f"x must have unit column stride, got strides={x.strides}")
    BLOCK_SIZE = check_power_of_2("BLOCK_SIZE", BLOCK_SIZE)
    m, n = x.shape
    y = np.empty((m, n), x.dtype)
    mean = np.empty(m, np.float32)
    rstd = np.empty(m, np.float32)
    stride = x.strides[0] // x.itemsize
    if stride != n:
        # ``Y`` shares ``X``'s row stride in the tutorial kernel.
        y = np.empty((m, stride), x.dtype)[:, :n]
    layer_norm_fwd_kernel[(m,)](x, y, weight, bias, mean, rstd, stride, n, float(eps),
                                BLOCK_SIZE=BLOCK_SIZE)
    return y, mean, rstd


def layer_norm_reference(
    x: npt.NDArray[np.floating],
    weight: npt.NDArray[np.floating],
    bias: npt.NDArray[np.floating],
    *,
    eps: float = 1e-5,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Float64 reference of :func:`layer_norm`: ``(y, mean, rstd)``."""
    x64 = np.asarray(x, np.float64)
    mean = x64.mean(axis=1)
    var = ((x64 - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1.0 / np.sqrt(var + eps)
    y = (x64 - mean[:, None]) * rstd[:, None] * np.asarray(weight, np.float64) + np.asarray(
        bias, np.float64
    )
    return y, mean, rstd


LAYER_NORM_KNOBS = KernelKnobs(
    kernel=layer_norm_fwd_kernel,
    knobs={"BLOCK_SIZE": (128, 256, 512, 1024, 2048, 4096, 8192),
           "num_warps": (1, 2, 4, 8, 16)},
    constraints=(
        ShapeConstraint("threads_le_block", lambda c, s: 32 * c["num_warps"] <= c["BLOCK_SIZE"],
                   "32 * num_warps <= BLOCK_SIZE"),
        ShapeConstraint("block_le_64kb_row", lambda c, s: c["BLOCK_SIZE"] * 4 <= 65536,
                   "BLOCK_SIZE * 4 B <= 64 KB (tutorial: larger rows are not supported)"),
    ),
    shape_names=("M", "N"),
)


# ------------------------------------------------------------------ kernel spec
def _ln_args(s: Any, dtype: str, rng: Any) -> dict[str, Any]:
    m, n = s["M"], s["N"]
    return {"X": new_array((m, n), dtype, rng), "Y": empty_array((m, n), dtype),
            "W": new_array((n,), dtype, rng), "B": new_array((n,), dtype, rng),
            "Mean": empty_array((m,), "float32"), "Rstd": empty_array((m,), "float32"),
            "stride": n, "N": n, "eps": 1e-5}


def _ln_ref(a: Any) -> dict[str, Any]:
    y, mean, rstd = layer_norm_reference(as_float_array(a["X"]), as_float_array(a["W"]),
                                         as_float_array(a["B"]), eps=float(a["eps"]))
    return {"Y": y, "Mean": mean, "Rstd": rstd}


LAYER_NORM_SPEC = KernelSpec(
    name="layer_norm", kernel=layer_norm_fwd_kernel, knobs=LAYER_NORM_KNOBS,
    shape_names=("M", "N"), make_args=_ln_args, grid=lambda s, meta: (s["M"],),
    reference=_ln_ref, flops=lambda s: 8.0 * s["M"] * s["N"],
    compulsory_bytes=lambda s, d: float(2 * s["M"] * s["N"] + 2 * s["N"])
    * DTYPE_ITEMSIZE_BYTES[d] + 8.0 * s["M"],
    shape_of=lambda a: ({"M": int(a["X"].shape[0]), "N": int(a["N"])}, dtype_name(a["X"])),
    small_shape=lambda s: {"M": min(s["M"], 4), "N": min(s["N"], 300)},
    launcher=layer_norm, host_reference=layer_norm_reference,
    doc="layer-norm forward (tutorial 05)",
)
