# Triton kernels are untyped by convention and ``BLOCK: tl.constexpr`` is not an int to
# mypy, so the checks that fire inside @jit bodies are off in this module.
# mypy: disable-error-code="no-untyped-def,arg-type,operator,attr-defined"
"""Flash-attention forward, Triton tutorial 06 style (seed §4.4).

One program per ``BLOCK_M`` block of queries (grid axis 0) and per batch-head
(grid axis 1). The program walks K and V in ``BLOCK_N`` blocks with the online
softmax (running row max ``m_i``, running row sum ``l_i``, rescaled
accumulator), then writes ``O`` and the per-row logsumexp ``L = m_i + log(l_i)``
in float32. With ``CAUSAL`` the loop's upper bound is the end of the program's
diagonal block, so blocks wholly above the diagonal are skipped, and the
diagonal block is masked element-wise.

IO (:func:`io_flash`): Q is read once, K and V are read once per query block,
O is written once and one float32 row statistic per query row is written.
On-chip state per program (:func:`onchip_flash_bytes`): the float32
accumulator ``BLOCK_M x d`` plus the float32 score block ``BLOCK_M x BLOCK_N``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

import autotile.lang as tl
from autotile.kernels._host import cdiv, check_power_of_2, is_power_of_2
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
    "attn_fwd_kernel",
    "flash_attention",
    "attention_reference",
    "io_flash",
    "onchip_flash_bytes",
    "default_block_n",
    "FLASH_KNOBS",
    "FLASH_ATTENTION_SPEC",
    "flash_attention_objectives",
    "flash_attention_pareto",
]


@jit
def attn_fwd_kernel(
    Q, K, V, O, L,
    sm_scale, N_CTX,
    stride_qb, stride_qn, stride_qd,
    stride_kb, stride_kn, stride_kd,
    stride_vb, stride_vn, stride_vd,
    stride_ob, stride_on, stride_od,
    stride_lb,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    """``O = softmax(Q K^T * sm_scale) V`` for one query block of one batch-head."""
    start_m = tl.program_id(0)
    off_b = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_b * stride_qb + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd
    q = tl.load(q_ptrs, mask=offs_m[:, None] < N_CTX, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        hi = (start_m + 1) * BLOCK_M
    else:
        hi = N_CTX
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k_ptrs = K + off_b * stride_kb + cols[None, :] * stride_kn + offs_d[:, None] * stride_kd
        k = tl.load(k_ptrs, mask=cols[None, :] < N_CTX, other=0.0)
        qk = tl.dot(q, k, input_precision="ieee") * sm_scale
        valid = cols[None, :] < N_CTX
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(valid, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        v_ptrs = V + off_b * stride_vb + cols[:, None] * stride_vn + offs_d[None, :] * stride_vd
        v = tl.load(v_ptrs, mask=cols[:, None] < N_CTX, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision="ieee")
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(L + off_b * stride_lb + offs_m, m_i + tl.log(l_i), mask=offs_m < N_CTX)
    o_ptrs = O + off_b * stride_ob + offs_m[:, None] * stride_on + offs_d[None, :] * stride_od
    tl.store(o_ptrs, acc.to(O.dtype.element_ty), mask=offs_m[:, None] < N_CTX)


def default_block_n(block_m: int) -> int:
    """``BLOCK_N = min(BLOCK_M, 64)``: the key-block rule behind the seed's on-chip sizes.

    At ``d = 128`` it gives the seed's 20 KB per program at ``BLOCK_M = 32``
    (``BLOCK_N = 32``) and 192 KB at ``BLOCK_M = 256`` (``BLOCK_N = 64``); see
    :func:`onchip_flash_bytes`.
    """
    return min(int(block_m), 64)


def onchip_flash_bytes(block_m: int, d: int, block_n: int | None = None) -> int:
    """On-chip bytes one program holds: fp32 accumulator plus fp32 score block.

    Parameters
    ----------
    block_m : int
        Query rows per program.
    d : int
        Head dimension.
    block_n : int, optional
        Key rows per inner step; defaults to :func:`default_block_n`.

    Returns
    -------
    int
        ``4 * block_m * d + 4 * block_m * block_n`` bytes.

    Examples
    --------
    >>> onchip_flash_bytes(32, 128), onchip_flash_bytes(256, 128)
    (20480, 196608)
    """
    bn = default_block_n(block_m) if block_n is None else int(block_n)
    return 4 * block_m * d + 4 * block_m * bn


def io_flash(N: int, d: int, block_m: int, itemsize: int, *, causal: bool = False,
             block_n: int | None = None, n_heads: int = 1, stat_bytes: int = 4) -> int:
    """Closed-form HBM bytes of :func:`flash_attention` (seed §4.4, lecture 5's ``io_flash``).

    Parameters
    ----------
    N : int
        Sequence length.
    d : int
        Head dimension.
    block_m : int
        Query rows per program.
    itemsize : int
        Bytes per element of Q, K, V and O (4 for float32, 2 for float16).
    causal : bool, default=False
        With causal block skipping, query block ``i`` reads only the keys
        ``[0, min(ceil((i + 1) * block_m / block_n) * block_n, N))``.
    block_n : int, optional
        Key rows per inner step (matters only for ``causal``); defaults to
        :func:`default_block_n`.
    n_heads : int, default=1
        Independent batch-heads.
    stat_bytes : int, default=4
        Bytes of the per-row statistic written (float32 logsumexp).

    Returns
    -------
    int
        ``n_heads * (2 N d s + 2 R d s + N * stat_bytes)`` where ``s`` is the
        itemsize and ``R`` the K (= V) rows read over all programs:
        ``cdiv(N, block_m) * N`` without ``causal``.

    Examples
    --------
    >>> io_flash(1024, 64, 64, 4)
    8916992
    """
    n_prog = cdiv(N, block_m)
    if causal:
        bn = default_block_n(block_m) if block_n is None else int(block_n)
        rows = sum(min(cdiv((i + 1) * block_m, bn) * bn, N) for i in range(n_prog))
    else:
        rows = n_prog * N
    per_head = 2 * N * d * itemsize + 2 * rows * d * itemsize + N * stat_bytes
    return n_heads * per_head


def _as_3d(x: npt.NDArray[np.generic], name: str) -> npt.NDArray[np.generic]:
    if x.ndim == 2:
        return x[None]
    if x.ndim != 3:
        raise ValueError(f"{name} must have shape (N, d) or (B, N, d), got {name}.shape={x.shape}")
    return x


def flash_attention(
    q: npt.NDArray[np.floating],
    k: npt.NDArray[np.floating],
    v: npt.NDArray[np.floating],
    *,
    causal: bool = False,
    sm_scale: float | None = None,
    BLOCK_M: int = 64,
    BLOCK_N: int | None = None,
) -> tuple[npt.NDArray[np.floating], npt.NDArray[np.float32]]:
    """Launch :func:`attn_fwd_kernel` on ``(cdiv(N, BLOCK_M), B)`` programs.

    Parameters
    ----------
    q, k, v : ndarray of shape (N, d) or (B, N, d)
        One dtype (float32 or float16), any strides; ``d`` a power of two >= 16.
    causal : bool, default=False
        Mask keys after the query (``key <= query`` is kept).
    sm_scale : float, optional
        Score scale, default ``1 / sqrt(d)``.
    BLOCK_M : int, default=64
        Query rows per program, a power of two >= 16.
    BLOCK_N : int, optional
        Key rows per inner step, a power of two >= 16; default
        :func:`default_block_n`. It need not divide ``BLOCK_M``: with
        ``causal`` the key block that crosses the diagonal is masked element-wise.

    Returns
    -------
    o : ndarray like ``q``
        The attention output, dtype of ``q``.
    lse : ndarray of shape (N,) or (B, N), dtype float32
        Per-row logsumexp of the scaled scores.

    Raises
    ------
    TypeError
        If ``BLOCK_M`` or ``BLOCK_N`` is not an int.
    ValueError
        If the shapes differ, or a block or ``d`` is not a power of two >= 16.
    """
    squeeze = q.ndim == 2
    q3, k3, v3 = _as_3d(q, "q"), _as_3d(k, "k"), _as_3d(v, "v")
    if not (q3.shape == k3.shape == v3.shape):
        raise ValueError(
            f"q, k and v must have one shape, got {q3.shape}, {k3.shape}, {v3.shape}"
        )
    b, n, d = q3.shape
    BLOCK_M = check_power_of_2("BLOCK_M", BLOCK_M, 16, " (tl.dot)")
    block_n = default_block_n(BLOCK_M) if BLOCK_N is None else \
        check_power_of_2("BLOCK_N", BLOCK_N, 16, " (tl.dot)")
    if not is_power_of_2(d) or d < 16:
        raise ValueError(f"d must be a power of two >= 16 (tl.dot), got d={d}")
    scale = 1.0 / float(np.sqrt(d)) if sm_scale is None else float(sm_scale)
    o = np.empty((b, n, d), q.dtype)
    lse = np.empty((b, n), np.float32)

    def es(x: npt.NDArray[np.generic]) -> list[int]:
        return [s // x.itemsize for s in x.strides]

    attn_fwd_kernel[(cdiv(n, BLOCK_M), b)](
        q3, k3, v3, o, lse, scale, n,
        *es(q3), *es(k3), *es(v3), *es(o), lse.strides[0] // 4,
        HEAD_DIM=d, BLOCK_M=BLOCK_M, BLOCK_N=block_n, CAUSAL=bool(causal),
    )
    if squeeze:
        return o[0], lse[0]
    return o, lse


def attention_reference(
    q: npt.NDArray[np.floating],
    k: npt.NDArray[np.floating],
    v: npt.NDArray[np.floating],
    *,
    causal: bool = False,
    sm_scale: float | None = None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Float64 reference of :func:`flash_attention`: ``(o, lse)`` of the same shapes."""
    q64, k64, v64 = (np.asarray(x, np.float64) for x in (q, k, v))
    d = q64.shape[-1]
    scale = 1.0 / np.sqrt(d) if sm_scale is None else float(sm_scale)
    s = np.einsum("...nd,...md->...nm", q64, k64) * scale
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    den = p.sum(axis=-1, keepdims=True)
    o = np.einsum("...nm,...md->...nd", p / den, v64)
    return o, (m + np.log(den))[..., 0]


FLASH_KNOBS = KernelKnobs(
    kernel=attn_fwd_kernel,
    knobs={
        "BLOCK_M": (16, 32, 64, 128, 256),
        "BLOCK_N": (16, 32, 64, 128),
        "num_warps": (2, 4, 8),
        "num_stages": (1, 2, 3, 4),
    },
    # BLOCK_N need not divide BLOCK_M: with CAUSAL the last key block of a query block
    # may reach past the diagonal, and the element-wise mask zeroes those scores
    # (tutorial 06 launches 64 x 128 tiles too)
    constraints=(
        ShapeConstraint("onchip_fits",
                   lambda c, s: onchip_flash_bytes(c["BLOCK_M"], s["d"], c["BLOCK_N"])
                   <= 228 * 1024,
                   "4 * BLOCK_M * (d + BLOCK_N) bytes <= 228 KiB (a proxy budget: H100 "
                   "shared memory per SM)"),
    ),
    shape_names=("N", "d"),
)


# ------------------------------------------------------------------ kernel spec
def _flash_args(s: Any, dtype: str, rng: Any) -> dict[str, Any]:
    h, n, d = s.get("heads", 1), s["N"], s["d"]
    st = {f"stride_{x}{a}": v for x in "qkvo" for a, v in zip("bnd", (n * d, d, 1))}
    return {"Q": new_array((h, n, d), dtype, rng), "K": new_array((h, n, d), dtype, rng),
            "V": new_array((h, n, d), dtype, rng), "O": empty_array((h, n, d), dtype),
            "L": empty_array((h, n), "float32"), "sm_scale": 1.0 / math.sqrt(d), "N_CTX": n,
            **st, "stride_lb": n}


def _flash_ref(a: Any) -> dict[str, Any]:
    o, lse = attention_reference(as_float_array(a["Q"]), as_float_array(a["K"]),
                                 as_float_array(a["V"]), sm_scale=float(a["sm_scale"]))
    return {"O": o, "L": lse}


def _flash_shape_of(a: Any) -> tuple[dict[str, int], str]:
    q = a["Q"]
    shape = {"N": int(a["N_CTX"]), "d": int(q.shape[-1])}
    if q.ndim == 3:
        shape["heads"] = int(q.shape[0])
    return shape, dtype_name(q)


def _flash_space(s: dict[str, int], dtype: str, hardware: Any) -> Any:
    from autotile.kernels._spaces import flash_attention_space

    return flash_attention_space(s["N"], s["d"], dtype)


FLASH_ATTENTION_SPEC = KernelSpec(
    name="flash_attention", kernel=attn_fwd_kernel, knobs=FLASH_KNOBS, shape_names=("N", "d"),
    optional_shape_names=("heads",), make_args=_flash_args,
    grid=lambda s, meta: (cdiv(s["N"], meta["BLOCK_M"]), s.get("heads", 1)),
    reference=_flash_ref,
    flops=lambda s: 4.0 * s["N"] * s["N"] * s["d"] * s.get("heads", 1),
    compulsory_bytes=lambda s, d: 4.0 * s.get("heads", 1) * s["N"] * s["d"]
    * DTYPE_ITEMSIZE_BYTES[d] + 4.0 * s.get("heads", 1) * s["N"],
    shape_of=_flash_shape_of,
    constexprs=lambda s, d: {"HEAD_DIM": s["d"], "CAUSAL": False},
    space_fn=_flash_space, model="flash_attention_io", dtypes=("float16", "bfloat16"),
    small_shape=lambda s: {"N": min(s["N"], 64), "d": s["d"], "heads": 1},
    launcher=flash_attention, host_reference=attention_reference,
    doc="attention forward with online softmax, causal or not (tutorial 06)",
)


# --------------------------------------------------------------------------------------
# flash attention: three objectives (seed §4.4)
def flash_attention_objectives(N: int, d: int, BLOCK_M: int, BLOCK_N: int,
                               dtype: str = "float16") -> tuple[int, int, int]:
    """The seed's three flash-attention objectives for one block shape.

    Parameters
    ----------
    N, d : int
        Sequence length and head dimension (one head, not causal).
    BLOCK_M, BLOCK_N : int
        Query rows per program and key rows per step.
    dtype : str, default="float16"

    Returns
    -------
    hbm_bytes : int
        :func:`~autotile.kernels.io_flash` (minimise).
    onchip_bytes : int
        fp32 accumulator plus score block per program,
        :func:`~autotile.kernels.onchip_flash_bytes` (minimise).
    n_programs : int
        ``cdiv(N, BLOCK_M)`` (parallelism, maximise).

    References
    ----------
    Dao et al., "FlashAttention", NeurIPS 2022, Theorem 2 (IO complexity);
    seed §4.4.
    """
    from autotile.kernels._spaces import DTYPE_ITEMSIZE

    isz = DTYPE_ITEMSIZE[dtype]
    return (io_flash(N, d, BLOCK_M, isz, block_n=BLOCK_N),
            onchip_flash_bytes(BLOCK_M, d, BLOCK_N), cdiv(N, BLOCK_M))


def flash_attention_pareto(N: int = 4096, d: int = 128, dtype: str = "float16"
                           ) -> list[dict[str, int]]:
    """Exact Pareto front of the three flash-attention objectives, by enumeration.

    ``num_warps`` and ``num_stages`` do not change the objectives, so the
    front is over the distinct ``(BLOCK_M, BLOCK_N)`` of
    :func:`flash_attention_space`.

    Returns
    -------
    list of dict
        ``BLOCK_M``, ``BLOCK_N``, ``hbm_bytes``, ``onchip_bytes``,
        ``n_programs`` of each non-dominated point, by increasing ``BLOCK_M``
        then ``BLOCK_N``.
    """
    from autotile.kernels._spaces import flash_attention_space

    space = flash_attention_space(N, d, dtype)
    pts = sorted({(c["BLOCK_M"], c["BLOCK_N"]) for c in space})
    objs = {bb: flash_attention_objectives(N, d, *bb, dtype) for bb in pts}

    def key(o: tuple[int, int, int]) -> tuple[int, int, int]:
        return (o[0], o[1], -o[2])  # all minimised

    front = []
    for bb, o in objs.items():
        ko = key(o)
        dominated = any(all(x <= y for x, y in zip(key(q), ko)) and key(q) != ko
                        for q in objs.values())
        if not dominated:
            front.append({"BLOCK_M": bb[0], "BLOCK_N": bb[1], "hbm_bytes": o[0],
                          "onchip_bytes": o[1], "n_programs": o[2]})
    return front
