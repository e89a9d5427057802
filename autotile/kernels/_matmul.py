# Triton kernels are untyped by convention and ``BLOCK: tl.constexpr`` is not an int to
# mypy, so the checks that fire inside @jit bodies are off in this module.
# mypy: disable-error-code="no-untyped-def,arg-type,operator,attr-defined"
"""Blocked matrix multiplication, Triton tutorial 03 (seed §4.1-§4.2).

Each program computes one ``BLOCK_M x BLOCK_N`` tile of ``C = A @ B``,
walking ``K`` in ``BLOCK_K`` steps. Edge rows and columns of ``A``/``B`` wrap
with ``% M`` / ``% N`` (valid but unused data; the store is masked) and the
``K`` tail is masked to 0, exactly as in the tutorial. Inputs may have any
strides (a transposed operand is just swapped strides) and any float dtype;
``tl.dot`` accumulates in float32 and the result is cast to ``C``'s dtype.

Program order (``PID_ORDER``):

``"grouped"``
    The tutorial's ``GROUP_M`` swizzle: tiles are taken ``GROUP_M`` tile-rows
    at a time, column by column inside the group. ``GROUP_M = 1`` gives the
    row-major order and ``GROUP_M >= cdiv(M, BLOCK_M)`` the column-major one.
``"row_major"``
    ``pid -> (pid // num_pid_n, pid % num_pid_n)``, ignoring ``GROUP_M``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

import autotile.lang as tl
from autotile.kernels._alignment import matmul_access
from autotile.kernels._host import cdiv, check_int, check_power_of_2, next_power_of_2
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

__all__ = [
    "matmul_kernel",
    "matmul",
    "matmul_reference",
    "tile_of_pid",
    "MATMUL_KNOBS",
    "PID_ORDERS",
    "canonical_group_m",
]

#: Program orders understood by :func:`matmul_kernel` and :func:`tile_of_pid`.
PID_ORDERS = ("grouped", "row_major")


@jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, PID_ORDER: tl.constexpr,
):
    """``C[M, N] = A[M, K] @ B[K, N]``; one program per output tile."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    if PID_ORDER == "row_major":
        pid_m = pid // num_pid_n
        pid_n = pid % num_pid_n
    else:
        num_pid_in_group = GROUP_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def tile_of_pid(pid: int, M: int, N: int, BLOCK_M: int, BLOCK_N: int,
                GROUP_M: int = 1, PID_ORDER: str = "grouped") -> tuple[int, int]:
    """Host-side copy of the kernel's ``pid -> (pid_m, pid_n)`` map.

    Parameters
    ----------
    pid : int
        Program id in ``[0, cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N))``.
    M, N : int
        Output shape.
    BLOCK_M, BLOCK_N : int
        Tile shape.
    GROUP_M : int, default=1
        Tile-rows per group (``"grouped"`` only).
    PID_ORDER : {"grouped", "row_major"}, default="grouped"

    Returns
    -------
    pid_m, pid_n : int
        Tile coordinates of program ``pid``.
    """
    num_pid_m, num_pid_n = cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)
    if PID_ORDER == "row_major":
        return pid // num_pid_n, pid % num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    return (first_pid_m + (pid % num_pid_in_group) % group_size_m,
            (pid % num_pid_in_group) // group_size_m)


def _check_matmul(a: npt.NDArray[np.generic], b: npt.NDArray[np.generic],
                  BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, GROUP_M: int,
                  PID_ORDER: str) -> None:
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(
            f"a @ b needs a of shape (M, K) and b of shape (K, N), got a.shape={a.shape}, "
            f"b.shape={b.shape}"
        )
    for name, v in (("BLOCK_M", BLOCK_M), ("BLOCK_N", BLOCK_N), ("BLOCK_K", BLOCK_K)):
        check_power_of_2(name, v, 16, " (tl.dot)")
    check_int("GROUP_M", GROUP_M, 1)
    if not isinstance(PID_ORDER, str) or PID_ORDER not in PID_ORDERS:
        raise ValueError(f"PID_ORDER must be one of {PID_ORDERS}, got PID_ORDER={PID_ORDER!r}")


def _elem_strides(x: npt.NDArray[np.generic]) -> tuple[int, int]:
    s0, s1 = x.strides
    if s0 % x.itemsize or s1 % x.itemsize:
        raise ValueError(f"strides must be whole elements, got strides={x.strides}")
    return s0 // x.itemsize, s1 // x.itemsize


def matmul(
    a: npt.NDArray[np.generic],
    b: npt.NDArray[np.generic],
    *,
    BLOCK_M: int = 64,
    BLOCK_N: int = 64,
    BLOCK_K: int = 32,
    GROUP_M: int = 8,
    PID_ORDER: str = "grouped",
    out_dtype: npt.DTypeLike = np.float16,
    out: npt.NDArray[np.generic] | None = None,
) -> npt.NDArray[np.generic]:
    """Launch :func:`matmul_kernel` on ``cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)`` programs.

    Parameters
    ----------
    a : ndarray of shape (M, K)
        Any strides (e.g. ``x.T`` of a row-major array), float16 or float32.
    b : ndarray of shape (K, N)
        Any strides, float16 or float32.
    BLOCK_M, BLOCK_N, BLOCK_K : int, default=64, 64, 32
        Tile shape, powers of two >= 16.
    GROUP_M : int, default=8
        Tile-rows per group of the ``"grouped"`` program order.
    PID_ORDER : {"grouped", "row_major"}, default="grouped"
        Program order; see the module docstring.
    out_dtype : dtype, default=float16
        Dtype of ``C`` (ignored when ``out`` is given). Accumulation is float32.
    out : ndarray of shape (M, N), optional
        Output buffer, any strides.

    Returns
    -------
    ndarray of shape (M, N)
        ``a @ b`` accumulated in float32, rounded to the output dtype.

    Raises
    ------
    TypeError
        If a block or ``GROUP_M`` is not an int (e.g. ``GROUP_M=2.5``).
    ValueError
        If the shapes do not chain, a block is not a power of two >= 16,
        ``GROUP_M < 1`` or ``PID_ORDER`` is unknown.
    """
    _check_matmul(a, b, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, PID_ORDER)
    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = int(BLOCK_M), int(BLOCK_N), int(BLOCK_K), int(GROUP_M)
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = np.empty((M, N), dtype=out_dtype)
    elif out.shape != (M, N):
        raise ValueError(f"out must have shape {(M, N)}, got out.shape={out.shape}")
    grid = (cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N),)
    matmul_kernel[grid](
        a, b, out, M, N, K,
        *_elem_strides(a), *_elem_strides(b), *_elem_strides(out),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        GROUP_M=GROUP_M, PID_ORDER=PID_ORDER,
    )
    return out


def matmul_reference(a: npt.NDArray[np.generic], b: npt.NDArray[np.generic],
                     out_dtype: npt.DTypeLike = np.float16) -> npt.NDArray[np.generic]:
    """NumPy reference: float32 product of the inputs, rounded to ``out_dtype``."""
    return (np.asarray(a, np.float32) @ np.asarray(b, np.float32)).astype(out_dtype)


#: Shared memory one program may use on cc 9.0 (227 KiB opt-in): Triton reports
#: "Hardware limit: 232448" on an H100/H200.
SMEM_PER_BLOCK_BYTES = 227 * 1024


def _fits_smem(c: Mapping[str, Any], s: Mapping[str, int]) -> bool:
    # 16-bit A and B tiles. A tile whose loads Triton pipelines (16-byte async copies)
    # takes num_stages buffers, one loaded synchronously (2-byte scalar loads when a
    # leading stride or size is not a multiple of 16) a single buffer (_alignment.py).
    n_a, n_b = matmul_access(s["M"], s["N"], s["K"], 2).n_buffers(c["num_stages"])
    tiles = c["BLOCK_M"] * c["BLOCK_K"] * n_a + c["BLOCK_K"] * c["BLOCK_N"] * n_b
    return bool(tiles * 2 <= SMEM_PER_BLOCK_BYTES)


def canonical_group_m(config: Mapping[str, Any], shape: Mapping[str, int]) -> dict[str, Any]:
    """Map a ``GROUP_M`` at or above the tile rows onto the one the space holds.

    The grouped program order clamps a group to the tile rows left
    (``group_size_m = min(num_pid_m - first_pid_m, GROUP_M)``), so every
    ``GROUP_M >= cdiv(M, BLOCK_M)`` launches the tiles in the same
    column-major order; the space keeps the smallest power of two among
    them, ``next_power_of_2(cdiv(M, BLOCK_M))`` (constraint
    ``group_m_le_tile_rows``). Tutorial 03's ``GROUP_M=8`` at ``M=256``,
    ``BLOCK_M=128`` becomes ``GROUP_M=2``.

    Parameters
    ----------
    config : mapping of str to value
        A matmul config (``BLOCK_M`` and ``GROUP_M`` ints; other knobs kept).
    shape : mapping of str to int
        ``M`` (and the other sizes, unused).

    Returns
    -------
    dict
        A copy of ``config``; ``GROUP_M`` changed only when it is at least
        the tile rows. A config without int ``BLOCK_M``/``GROUP_M`` (or with
        ``BLOCK_M < 1``) is returned unchanged for the constraints to refuse.

    Examples
    --------
    >>> canonical_group_m({"BLOCK_M": 128, "GROUP_M": 8}, {"M": 256})
    {'BLOCK_M': 128, 'GROUP_M': 2}
    >>> canonical_group_m({"BLOCK_M": 64, "GROUP_M": 8}, {"M": 384})
    {'BLOCK_M': 64, 'GROUP_M': 8}
    """
    out = dict(config)
    g, bm = out.get("GROUP_M"), out.get("BLOCK_M")
    if (not isinstance(g, (int, np.integer)) or not isinstance(bm, (int, np.integer))
            or isinstance(g, bool) or isinstance(bm, bool) or bm < 1 or "M" not in shape):
        return out
    num_pid_m = max(1, cdiv(int(shape["M"]), int(bm)))
    if g >= num_pid_m:
        out["GROUP_M"] = next_power_of_2(num_pid_m)
    return out


MATMUL_KNOBS = KernelKnobs(
    kernel=matmul_kernel,
    knobs={
        "BLOCK_M": (16, 32, 64, 128, 256),
        "BLOCK_N": (16, 32, 64, 128, 256),
        "BLOCK_K": (16, 32, 64, 128),
        "GROUP_M": (1, 2, 4, 8, 16, 32, 64),
        "num_warps": (2, 4, 8),
        "num_stages": (2, 3, 4, 5),
    },
    constraints=(
        ShapeConstraint("smem_fits", _fits_smem,
                   "(BLOCK_M * BLOCK_K * n_A + BLOCK_K * BLOCK_N * n_B) * 2 B <= 227 KiB, "
                   "n_A = num_stages if K % 16 == 0 else 1 (A loads pipelined only when "
                   "Triton vectorises them), n_B = num_stages if N % 16 == 0 else 1"),
        ShapeConstraint("block_m_le_padded_m",
                   lambda c, s: c["BLOCK_M"] <= max(16, next_power_of_2(s["M"])),
                   "BLOCK_M <= max(16, next_power_of_2(M)) (no tile entirely out of bounds)"),
        ShapeConstraint("block_n_le_padded_n",
                   lambda c, s: c["BLOCK_N"] <= max(16, next_power_of_2(s["N"])),
                   "BLOCK_N <= max(16, next_power_of_2(N))"),
        ShapeConstraint("group_m_le_tile_rows",
                   lambda c, s: c["GROUP_M"] <= next_power_of_2(max(1, cdiv(s["M"], c["BLOCK_M"]))),
                   "GROUP_M <= next_power_of_2(cdiv(M, BLOCK_M)): every GROUP_M >= cdiv(M, "
                   "BLOCK_M) gives the same column-major order (the kernel clamps the group "
                   "to the tile rows left), so the space keeps only the smallest such power "
                   "of two"),
        ShapeConstraint("warps_fit_tile",
                   lambda c, s: c["num_warps"] * 32 * 4 <= c["BLOCK_M"] * c["BLOCK_N"],
                   "num_warps * 128 <= BLOCK_M * BLOCK_N (>= 4 outputs per thread)"),
    ),
    shape_names=("M", "N", "K"),
    canonical=canonical_group_m,
)


# ------------------------------------------------------------------ kernel spec
def matmul_args(s: Any, dtype: str, rng: Any) -> dict[str, Any]:
    """Arguments of :func:`matmul_kernel` (and the persistent kernels): A, B random or 0."""
    m, n, k = s["M"], s["N"], s["K"]
    return {"a_ptr": new_array((m, k), dtype, rng), "b_ptr": new_array((k, n), dtype, rng),
            "c_ptr": empty_array((m, n), dtype), "M": m, "N": n, "K": k,
            "stride_am": k, "stride_ak": 1, "stride_bk": n, "stride_bn": 1,
            "stride_cm": n, "stride_cn": 1}


def matmul_spec_reference(a: Any) -> dict[str, Any]:
    """``{"c_ptr": A @ B}`` in float32."""
    return {"c_ptr": as_float_array(a["a_ptr"]) @ as_float_array(a["b_ptr"])}


def matmul_shape_of(a: Any) -> tuple[dict[str, int], str]:
    """``({"M", "N", "K"}, dtype of A)`` of a matmul call."""
    return ({"M": int(a["M"]), "N": int(a["N"]), "K": int(a["K"])}, dtype_name(a["a_ptr"]))


def matmul_small_shape(s: Any) -> dict[str, int]:
    """``M, N, K`` capped at 72, 40, 56: edge tiles and the masked K tail are exercised."""
    return {"M": min(s["M"], 72), "N": min(s["N"], 40), "K": min(s["K"], 56)}


def _matmul_space(s: dict[str, int], dtype: str, hardware: Any) -> Any:
    from autotile.kernels._spaces import matmul_space

    return matmul_space(s["M"], s["N"], s["K"], dtype)


MATMUL_SPEC = KernelSpec(
    name="matmul", kernel=matmul_kernel, knobs=MATMUL_KNOBS, shape_names=("M", "N", "K"),
    make_args=matmul_args,
    grid=lambda s, meta: (cdiv(s["M"], meta["BLOCK_M"]) * cdiv(s["N"], meta["BLOCK_N"]),),
    reference=matmul_spec_reference,
    flops=lambda s: 2.0 * s["M"] * s["N"] * s["K"],
    compulsory_bytes=lambda s, d: float(s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"])
    * DTYPE_ITEMSIZE_BYTES[d],
    shape_of=matmul_shape_of, constexprs=lambda s, d: {"PID_ORDER": "grouped"},
    space_fn=_matmul_space, model="tile_matmul", small_shape=matmul_small_shape,
    launcher=matmul, host_reference=matmul_reference,
    doc="C = A @ B, grouped or row-major tile order (tutorial 03)",
)
