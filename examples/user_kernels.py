"""Four kernels that are not in autotile's library, written as a Triton user would.

GELU (tanh form), a row-wise RMS norm that loops over column blocks, a 2-D
tiled transpose and an online softmax that loops over column blocks. Each is
plain Triton-valid source (the same functions run under ``triton.jit``).

* ``@autotune(configs=..., key=...)`` tunes them with no ``scorer=``: the
  records GPU model scores them (``tests/tuner/test_user_kernels.py``);
* each also gets a :class:`~autotile.kernels.KernelSpec` in this one file,
  with no library edit, so ``KernelModelMeasurer(GELU_SPEC, shape)`` models it
  and ``TritonMeasurer(GELU_SPEC, shape)`` times it on a GPU
  (``benchmarks/records_model_h200.py``).
"""

# mypy: disable-error-code="no-untyped-def,arg-type,operator,attr-defined"
from __future__ import annotations

import numpy as np

import autotile.lang as tl
from autotile.kernels import (
    KernelKnobs,
    KernelSpec,
    ShapeConstraint,
    as_float_array,
    dtype_name,
    empty_array,
    new_array,
)
from autotile.kernels._spec import DTYPE_ITEMSIZE_BYTES
from autotile.lang import jit


@jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    t = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0  # tanh(inner)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + t), mask=mask)


def gelu_reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


@jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride + cols, x * rstd * w, mask=mask)


def rms_norm_reference(x: np.ndarray, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w.astype(np.float64)


@jit
def transpose_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + rn[:, None] * M + rm[None, :], tl.trans(tile), mask=tl.trans(mask))


@jit
def online_softmax_kernel(x_ptr, y_ptr, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N,
                    other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        empty = m_new == -float("inf")
        s = tl.where(empty, 0.0, s * tl.exp(m - m_new) + tl.exp(x - m_new))
        m = m_new
    row_max = tl.max(m, axis=0)
    denom = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N,
                    other=-float("inf")).to(tl.float32)
        tl.store(y_ptr + row * stride + cols, tl.exp(x - row_max) / denom, mask=cols < N)


def softmax_reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ------------------------------------------------------------------ kernel specs
# One spec per kernel: what KernelModelMeasurer and TritonMeasurer need. No
# library file is edited; register_kernel(SPEC) would make a name lookup work too.
def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _threads_fit(block_key: str) -> ShapeConstraint:
    return ShapeConstraint("threads_le_block", lambda c, s: 32 * c["num_warps"] <= c[block_key],
                           f"32 * num_warps <= {block_key}")


_WARPS = (1, 2, 4, 8, 16)
_BLOCKS = tuple(2 ** i for i in range(7, 15))

GELU_SPEC = KernelSpec(
    name="gelu", kernel=gelu_kernel,
    knobs=KernelKnobs(gelu_kernel, {"BLOCK": _BLOCKS, "num_warps": _WARPS},
                      (_threads_fit("BLOCK"),), ("n",)),
    shape_names=("n",),
    make_args=lambda s, d, rng: {"x_ptr": new_array((s["n"],), d, rng),
                                 "y_ptr": empty_array((s["n"],), d), "n": s["n"]},
    grid=lambda s, meta: (_cdiv(s["n"], meta["BLOCK"]),),
    reference=lambda a: {"y_ptr": gelu_reference(as_float_array(a["x_ptr"]))},
    flops=lambda s: 12.0 * s["n"],
    compulsory_bytes=lambda s, d: 2.0 * s["n"] * DTYPE_ITEMSIZE_BYTES[d],
    shape_of=lambda a: ({"n": int(a["n"])}, dtype_name(a["x_ptr"])),
    small_shape=lambda s: {"n": min(s["n"], 5000)}, doc="GELU, tanh form")

RMS_NORM_SPEC = KernelSpec(
    name="rms_norm", kernel=rms_norm_kernel,
    knobs=KernelKnobs(rms_norm_kernel, {"BLOCK": _BLOCKS[:-1], "num_warps": _WARPS},
                      (_threads_fit("BLOCK"),), ("M", "N")),
    shape_names=("M", "N"),
    make_args=lambda s, d, rng: {
        "x_ptr": new_array((s["M"], s["N"]), d, rng), "w_ptr": new_array((s["N"],), d, rng),
        "y_ptr": empty_array((s["M"], s["N"]), d), "stride": s["N"], "N": s["N"],
        "eps": 1e-6},
    grid=lambda s, meta: (s["M"],),
    reference=lambda a: {"y_ptr": rms_norm_reference(as_float_array(a["x_ptr"]),
                                                     as_float_array(a["w_ptr"]))},
    flops=lambda s: 4.0 * s["M"] * s["N"],
    compulsory_bytes=lambda s, d: float(2 * s["M"] * s["N"] + s["N"]) * DTYPE_ITEMSIZE_BYTES[d],
    shape_of=lambda a: ({"M": int(a["x_ptr"].shape[0]), "N": int(a["N"])},
                        dtype_name(a["x_ptr"])),
    small_shape=lambda s: {"M": min(s["M"], 8), "N": min(s["N"], 1000)},
    doc="row-wise RMS norm, two loops over column blocks")

TRANSPOSE_SPEC = KernelSpec(
    name="transpose", kernel=transpose_kernel,
    knobs=KernelKnobs(transpose_kernel, {"BLOCK_M": (16, 32, 64, 128),
                                         "BLOCK_N": (16, 32, 64, 128), "num_warps": (2, 4, 8)},
                      (ShapeConstraint("threads_le_tile", lambda c, s: 32 * c["num_warps"]
                                       <= c["BLOCK_M"] * c["BLOCK_N"]),), ("M", "N")),
    shape_names=("M", "N"),
    make_args=lambda s, d, rng: {"x_ptr": new_array((s["M"], s["N"]), d, rng),
                                 "y_ptr": empty_array((s["N"], s["M"]), d),
                                 "M": s["M"], "N": s["N"]},
    grid=lambda s, meta: (_cdiv(s["M"], meta["BLOCK_M"]), _cdiv(s["N"], meta["BLOCK_N"])),
    reference=lambda a: {"y_ptr": as_float_array(a["x_ptr"]).T},
    flops=lambda s: 0.0,
    compulsory_bytes=lambda s, d: 2.0 * s["M"] * s["N"] * DTYPE_ITEMSIZE_BYTES[d],
    shape_of=lambda a: ({"M": int(a["M"]), "N": int(a["N"])}, dtype_name(a["x_ptr"])),
    small_shape=lambda s: {"M": min(s["M"], 200), "N": min(s["N"], 150)},
    doc="2-D tiled transpose through tl.trans")

ONLINE_SOFTMAX_SPEC = KernelSpec(
    name="online_softmax", kernel=online_softmax_kernel,
    knobs=KernelKnobs(online_softmax_kernel, {"BLOCK": _BLOCKS[:-1], "num_warps": _WARPS},
                      (_threads_fit("BLOCK"),), ("M", "N")),
    shape_names=("M", "N"),
    make_args=lambda s, d, rng: {"x_ptr": new_array((s["M"], s["N"]), d, rng),
                                 "y_ptr": empty_array((s["M"], s["N"]), d),
                                 "stride": s["N"], "N": s["N"]},
    grid=lambda s, meta: (s["M"],),
    reference=lambda a: {"y_ptr": softmax_reference(as_float_array(a["x_ptr"]))},
    flops=lambda s: 8.0 * s["M"] * s["N"],
    compulsory_bytes=lambda s, d: 2.0 * s["M"] * s["N"] * DTYPE_ITEMSIZE_BYTES[d],
    shape_of=lambda a: ({"M": int(a["x_ptr"].shape[0]), "N": int(a["N"])},
                        dtype_name(a["x_ptr"])),
    small_shape=lambda s: {"M": min(s["M"], 8), "N": min(s["N"], 700)},
    doc="online softmax with a loop over column blocks")

#: The four specs, by name.
USER_SPECS = {s.name: s for s in (GELU_SPEC, RMS_NORM_SPEC, TRANSPOSE_SPEC,
                                  ONLINE_SOFTMAX_SPEC)}
