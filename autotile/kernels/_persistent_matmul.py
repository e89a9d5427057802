# Triton kernels are untyped by convention and ``BLOCK: tl.constexpr`` is not an int to
# mypy, so the checks that fire inside @jit bodies are off in this module.
# mypy: disable-error-code="no-untyped-def,arg-type,operator,attr-defined"
"""Persistent matmul (seed §5): ``NUM_SMS`` programs loop over all output tiles.

``matmul_persistent_kernel`` launches a grid of ``NUM_SMS`` programs; program
``start`` handles tiles ``start, start + NUM_SMS, ...`` in the grouped order
of :mod:`autotile.kernels._matmul`, with the same main loop (``% M``/``% N``
wrap, masked ``K`` tail, float32 accumulation).

``matmul_descriptor_persistent_kernel`` is the tensor-descriptor (TMA)
variant of Triton tutorial 09: blocks are addressed by element coordinates
through ``tl.make_tensor_descriptor`` and out-of-bounds lanes are zero-filled
on load and dropped on store by the descriptor, so the kernel has no masks.
As with TMA, the innermost stride of every operand must be 1 and the outer
stride a multiple of 16 bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

import autotile.lang as tl
from autotile.kernels._host import cdiv, check_int
from autotile.kernels._knobs import KernelKnobs, ShapeConstraint
from autotile.kernels._matmul import (
    MATMUL_KNOBS,
    _check_matmul,
    _elem_strides,
    matmul_args,
    matmul_reference,
    matmul_shape_of,
    matmul_small_shape,
    matmul_spec_reference,
)
from autotile.kernels._spec import DTYPE_ITEMSIZE_BYTES, KernelLaunch, KernelSpec
from autotile.lang import jit

__all__ = [
    "matmul_persistent_kernel",
    "matmul_descriptor_persistent_kernel",
    "matmul_persistent",
    "matmul_descriptor_persistent",
    "MATMUL_PERSISTENT_KNOBS",
]


@jit
def matmul_persistent_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
):
    """``C = A @ B`` with ``NUM_SMS`` programs, each looping over every NUM_SMS-th tile."""
    start = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in range(start, num_tiles, NUM_SMS):
        group_id = tile_id // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
        pid_n = (tile_id % num_pid_in_group) // group_size_m
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


@jit
def matmul_descriptor_persistent_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_bk, stride_cm,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
):
    """Persistent ``C = A @ B`` through tensor descriptors (unit inner strides)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1],
                                       block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                       block_shape=[BLOCK_M, BLOCK_N])
    start = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in range(start, num_tiles, NUM_SMS):
        group_id = tile_id // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
        pid_n = (tile_id % num_pid_in_group) // group_size_m
        offs_am = pid_m * BLOCK_M
        offs_bn = pid_n * BLOCK_N
        accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            offs_k = k * BLOCK_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_k, offs_bn])
            accumulator = tl.dot(a, b, accumulator)
        c_desc.store([offs_am, offs_bn], accumulator.to(c_ptr.dtype.element_ty))


def _launch_persistent(kernel_name: str, a: npt.NDArray[np.generic],
                       b: npt.NDArray[np.generic], BLOCK_M: int, BLOCK_N: int,
                       BLOCK_K: int, GROUP_M: int, NUM_SMS: int,
                       out_dtype: npt.DTypeLike,
                       out: npt.NDArray[np.generic] | None) -> npt.NDArray[np.generic]:
    _check_matmul(a, b, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, "grouped")
    NUM_SMS = check_int("NUM_SMS", NUM_SMS, 1)
    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = int(BLOCK_M), int(BLOCK_N), int(BLOCK_K), int(GROUP_M)
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = np.empty((M, N), dtype=out_dtype)
    elif out.shape != (M, N):
        raise ValueError(f"out must have shape {(M, N)}, got out.shape={out.shape}")
    n_tiles = cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)
    grid = (min(NUM_SMS, n_tiles),)
    meta = dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                NUM_SMS=grid[0])
    if kernel_name == "pointer":
        matmul_persistent_kernel[grid](
            a, b, out, M, N, K,
            *_elem_strides(a), *_elem_strides(b), *_elem_strides(out), **meta)
    else:
        strides = [_elem_strides(x) for x in (a, b, out)]
        if any(s[1] != 1 or (s[0] * x.itemsize) % 16 for s, x in zip(strides, (a, b, out))):
            raise ValueError(
                "tensor descriptors need unit inner strides and 16-byte aligned outer "
                f"strides (as TMA does), got element strides a={strides[0]}, "
                f"b={strides[1]}, c={strides[2]}"
            )
        matmul_descriptor_persistent_kernel[grid](
            a, b, out, M, N, K, strides[0][0], strides[1][0], strides[2][0], **meta)
    return out


def matmul_persistent(
    a: npt.NDArray[np.generic],
    b: npt.NDArray[np.generic],
    *,
    BLOCK_M: int = 64,
    BLOCK_N: int = 64,
    BLOCK_K: int = 32,
    GROUP_M: int = 8,
    NUM_SMS: int = 132,
    out_dtype: npt.DTypeLike = np.float16,
    out: npt.NDArray[np.generic] | None = None,
) -> npt.NDArray[np.generic]:
    """Launch :func:`matmul_persistent_kernel` on ``min(NUM_SMS, n_tiles)`` programs.

    Parameters
    ----------
    a : ndarray of shape (M, K)
        Any strides, float16 or float32.
    b : ndarray of shape (K, N)
        Any strides, float16 or float32.
    BLOCK_M, BLOCK_N, BLOCK_K : int, default=64, 64, 32
        Tile shape, powers of two >= 16.
    GROUP_M : int, default=8
        Tile-rows per group of the tile order.
    NUM_SMS : int, default=132
        Programs launched (one per SM; 132 on an H100 SXM), capped at the
        number of tiles.
    out_dtype : dtype, default=float16
        Dtype of ``C`` when ``out`` is omitted.
    out : ndarray of shape (M, N), optional
        Output buffer.

    Returns
    -------
    ndarray of shape (M, N)
        ``a @ b``, float32 accumulation.
    """
    return _launch_persistent("pointer", a, b, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_SMS,
                              out_dtype, out)


def matmul_descriptor_persistent(
    a: npt.NDArray[np.generic],
    b: npt.NDArray[np.generic],
    *,
    BLOCK_M: int = 64,
    BLOCK_N: int = 64,
    BLOCK_K: int = 32,
    GROUP_M: int = 8,
    NUM_SMS: int = 132,
    out_dtype: npt.DTypeLike = np.float16,
    out: npt.NDArray[np.generic] | None = None,
) -> npt.NDArray[np.generic]:
    """Launch :func:`matmul_descriptor_persistent_kernel`; arguments as :func:`matmul_persistent`.

    Raises
    ------
    ValueError
        If an operand's innermost stride is not 1 or its outer stride is not a
        multiple of 16 bytes (tensor-descriptor rules).
    """
    return _launch_persistent("descriptor", a, b, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_SMS,
                              out_dtype, out)


MATMUL_PERSISTENT_KNOBS = KernelKnobs(
    kernel=matmul_persistent_kernel,
    knobs={**MATMUL_KNOBS.knobs, "NUM_SMS": (132,)},
    constraints=MATMUL_KNOBS.constraints + (
        ShapeConstraint("num_sms_positive", lambda c, s: c["NUM_SMS"] >= 1, "NUM_SMS >= 1"),
    ),
    shape_names=("M", "N", "K"),
    canonical=MATMUL_KNOBS.canonical,
)


# ------------------------------------------------------------------ kernel specs
def _persistent_launches(spec: Any, s: Any, dtype: str, config: Any, a: Any) -> list[Any]:
    meta, nw, ns = spec.split_config(config)
    n_tiles = cdiv(s["M"], meta["BLOCK_M"]) * cdiv(s["N"], meta["BLOCK_N"])
    meta = {**meta, "NUM_SMS": min(int(meta["NUM_SMS"]), n_tiles)}
    names = set(spec.kernel.arg_names)
    return [KernelLaunch(spec.kernel, (meta["NUM_SMS"],),
                         {k: v for k, v in a.items() if k in names}, meta, nw, ns)]


def _persistent_space(s: dict[str, int], dtype: str, hardware: Any) -> Any:
    from autotile.kernels._spaces import persistent_matmul_space

    return persistent_matmul_space(s["M"], s["N"], s["K"], dtype, hardware)


def _persistent_spec(name: str, kernel: Any, launcher: Any, doc: str,
                     model: str = "tile_matmul") -> KernelSpec:
    return KernelSpec(
        name=name, kernel=kernel, knobs=MATMUL_PERSISTENT_KNOBS, shape_names=("M", "N", "K"),
        make_args=matmul_args,
        grid=lambda s, meta: (min(int(meta["NUM_SMS"]), cdiv(s["M"], meta["BLOCK_M"])
                                  * cdiv(s["N"], meta["BLOCK_N"])),),
        reference=matmul_spec_reference,
        flops=lambda s: 2.0 * s["M"] * s["N"] * s["K"],
        compulsory_bytes=lambda s, d: float(s["M"] * s["K"] + s["K"] * s["N"]
                                            + s["M"] * s["N"]) * DTYPE_ITEMSIZE_BYTES[d],
        shape_of=matmul_shape_of, space_fn=_persistent_space,
        launches_fn=_persistent_launches, model=model,
        small_shape=matmul_small_shape, launcher=launcher, host_reference=matmul_reference,
        doc=doc)


MATMUL_PERSISTENT_SPEC = _persistent_spec(
    "matmul_persistent", matmul_persistent_kernel, matmul_persistent,
    "C = A @ B on NUM_SMS looping programs (seed §5)")
MATMUL_DESCRIPTOR_PERSISTENT_SPEC = _persistent_spec(
    "matmul_descriptor_persistent", matmul_descriptor_persistent_kernel,
    matmul_descriptor_persistent, "persistent C = A @ B through tensor descriptors",
    model="tile_matmul_tma")
