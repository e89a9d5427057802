# Triton kernels are untyped by convention and ``BLOCK: tl.constexpr`` is not an int to
# mypy, so the checks that fire inside @jit bodies are off in this module.
# mypy: disable-error-code="no-untyped-def,arg-type,operator,attr-defined"
"""Row softmax: the naive five-kernel version and the fused one (Triton tutorial 02, seed §3).

The naive version is five real kernels, one per NumPy op, each reading its
inputs from and writing its output to memory::

    x_max = x.max(1)            # read MN,     write M
    z = x - x_max[:, None]      # read MN + M, write MN
    num = exp(z)                # read MN,     write MN
    den = num.sum(1)            # read MN,     write M
    out = num / den[:, None]    # read MN + M, write MN

so it reads ``5MN + 2M`` and writes ``3MN + 2M`` elements (:func:`io_naive_softmax`).
The fused kernel gives one program a whole row and reads and writes ``MN``
each (:func:`io_fused_softmax`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

import autotile.lang as tl
from autotile.kernels._host import check_int, check_power_of_2, is_power_of_2, next_power_of_2
from autotile.kernels._knobs import KernelKnobs, ShapeConstraint
from autotile.kernels._spec import (
    DTYPE_ITEMSIZE_BYTES,
    KernelLaunch,
    KernelSpec,
    as_float_array,
    dtype_name,
    empty_array,
    new_array,
)
from autotile.lang import jit

__all__ = [
    "row_max_kernel",
    "sub_row_kernel",
    "exp_kernel",
    "row_sum_kernel",
    "div_row_kernel",
    "softmax_kernel",
    "softmax_naive",
    "softmax_fused",
    "softmax_reference",
    "io_naive_softmax",
    "io_fused_softmax",
    "SOFTMAX_NAIVE_KNOBS",
    "SOFTMAX_FUSED_KNOBS",
]


# --------------------------------------------------------------------------- naive: 5 kernels
@jit
def row_max_kernel(x_ptr, max_ptr, stride_x, n_cols, BLOCK_SIZE: tl.constexpr):
    """``max[row] = max(x[row, :])``; one program per row, columns in chunks."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.full([BLOCK_SIZE], float("-inf"), dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_SIZE):
        x = tl.load(x_ptr + row * stride_x + off + cols, mask=off + cols < n_cols,
                    other=float("-inf"))
        acc = tl.maximum(acc, x)
    tl.store(max_ptr + row, tl.max(acc, axis=0))


@jit
def sub_row_kernel(x_ptr, m_ptr, z_ptr, stride_x, stride_z, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    """``z[row, :] = x[row, :] - m[row]``; the row scalar is read once per row."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    m = tl.load(m_ptr + row)
    for off in range(0, n_cols, BLOCK_SIZE):
        mask = off + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + off + cols, mask=mask)
        tl.store(z_ptr + row * stride_z + off + cols, x - m, mask=mask)


@jit
def exp_kernel(z_ptr, e_ptr, stride_z, stride_e, n_cols, BLOCK_SIZE: tl.constexpr):
    """``e[row, :] = exp(z[row, :])``."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    for off in range(0, n_cols, BLOCK_SIZE):
        mask = off + cols < n_cols
        z = tl.load(z_ptr + row * stride_z + off + cols, mask=mask)
        tl.store(e_ptr + row * stride_e + off + cols, tl.exp(z), mask=mask)


@jit
def row_sum_kernel(x_ptr, sum_ptr, stride_x, n_cols, BLOCK_SIZE: tl.constexpr):
    """``sum[row] = sum(x[row, :])``."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_SIZE):
        x = tl.load(x_ptr + row * stride_x + off + cols, mask=off + cols < n_cols, other=0.0)
        acc += x
    tl.store(sum_ptr + row, tl.sum(acc, axis=0))


@jit
def div_row_kernel(x_ptr, d_ptr, y_ptr, stride_x, stride_y, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    """``y[row, :] = x[row, :] / d[row]``; the row scalar is read once per row."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    d = tl.load(d_ptr + row)
    for off in range(0, n_cols, BLOCK_SIZE):
        mask = off + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + off + cols, mask=mask)
        tl.store(y_ptr + row * stride_y + off + cols, x / d, mask=mask)


# --------------------------------------------------------------------------- fused
@jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    """Fused row softmax, one program per row; ``BLOCK_SIZE >= n_cols``, lanes past it are -inf."""
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    mask = col_offsets < n_cols
    row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    output_ptrs = output_row_start_ptr + col_offsets
    tl.store(output_ptrs, softmax_output, mask=mask)


# --------------------------------------------------------------------------- host side
def _check_2d(x: npt.NDArray[np.floating]) -> tuple[int, int]:
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D of shape (n_rows, n_cols), got x.shape={x.shape}")
    if x.strides[1] != x.itemsize:
        raise ValueError(
            f"x must be contiguous along its rows (unit column stride), got strides={x.strides}"
        )
    return int(x.shape[0]), int(x.shape[1])


def softmax_naive(x: npt.NDArray[np.floating], *, BLOCK_SIZE: int = 1024
                  ) -> npt.NDArray[np.floating]:
    """Row softmax as five separate launches (max, subtract, exp, sum, divide).

    Parameters
    ----------
    x : ndarray of shape (n_rows, n_cols), dtype float32
        Input with unit column stride (any row stride).
    BLOCK_SIZE : int, default=1024
        Columns per chunk of every kernel's column loop, a power of two.

    Returns
    -------
    ndarray of shape (n_rows, n_cols), dtype float32
        ``softmax(x, axis=1)``. The intermediates ``x_max``, ``z``, ``num``
        and ``den`` are separate buffers, as in the five NumPy ops.

    Raises
    ------
    TypeError
        If ``BLOCK_SIZE`` is not an int.
    ValueError
        If ``x`` is not 2-D with unit column stride or ``BLOCK_SIZE`` is not
        a power of two.
    """
    m, n = _check_2d(x)
    BLOCK_SIZE = check_power_of_2("BLOCK_SIZE", BLOCK_SIZE)
    x_max = np.empty(m, np.float32)
    z = np.empty((m, n), np.float32)
    num = np.empty((m, n), np.float32)
    den = np.empty(m, np.float32)
    out = np.empty((m, n), np.float32)
    sx = x.strides[0] // x.itemsize
    grid = (m,)
    row_max_kernel[grid](x, x_max, sx, n, BLOCK_SIZE=BLOCK_SIZE)
    sub_row_kernel[grid](x, x_max, z, sx, n, n, BLOCK_SIZE=BLOCK_SIZE)
    exp_kernel[grid](z, num, n, n, n, BLOCK_SIZE=BLOCK_SIZE)
    row_sum_kernel[grid](num, den, n, n, BLOCK_SIZE=BLOCK_SIZE)
    div_row_kernel[grid](num, den, out, n, n, n, BLOCK_SIZE=BLOCK_SIZE)
    return out


def softmax_fused(x: npt.NDArray[np.floating], *, BLOCK_SIZE: int | None = None
                  ) -> npt.NDArray[np.floating]:
    """Fused row softmax: one launch of :func:`softmax_kernel`, one program per row.

    Parameters
    ----------
    x : ndarray of shape (n_rows, n_cols), dtype float32
        Input with unit column stride (any row stride).
    BLOCK_SIZE : int, optional
        Lanes per program; defaults to ``next_power_of_2(n_cols)``. Must be a
        power of two ``>= n_cols``.

    Returns
    -------
    ndarray of shape (n_rows, n_cols), dtype float32

    Raises
    ------
    TypeError
        If ``BLOCK_SIZE`` is not an int.
    ValueError
        If ``BLOCK_SIZE`` is not a power of two or is smaller than ``n_cols``.
    """
    m, n = _check_2d(x)
    block = next_power_of_2(n) if BLOCK_SIZE is None else check_int("BLOCK_SIZE", BLOCK_SIZE)
    if not is_power_of_2(block) or block < n:
        raise ValueError(
            f"BLOCK_SIZE must be a power of two >= n_cols, got BLOCK_SIZE={block}, n_cols={n}"
        )
    out = np.empty((m, n), np.float32)
    softmax_kernel[(m,)](out, x, x.strides[0] // x.itemsize, n, n, BLOCK_SIZE=block)
    return out


def softmax_reference(x: npt.NDArray[np.floating]) -> npt.NDArray[np.floating]:
    """NumPy reference: the five ops of the naive version, in float32."""
    x = np.asarray(x, np.float32)
    z = x - x.max(axis=1)[:, None]
    num = np.exp(z)
    out: npt.NDArray[np.floating] = num / num.sum(axis=1)[:, None]
    return out


def io_naive_softmax(M: int, N: int) -> tuple[int, int]:
    """Elements read and written by the naive five-op softmax of an ``M x N`` matrix.

    Returns
    -------
    n_read_elems, n_written_elems : int
        ``5MN + 2M`` and ``3MN + 2M``.
    """
    return 5 * M * N + 2 * M, 3 * M * N + 2 * M


def io_fused_softmax(M: int, N: int) -> tuple[int, int]:
    """Elements read and written by the fused softmax: ``MN`` each."""
    return M * N, M * N


SOFTMAX_NAIVE_KNOBS = KernelKnobs(
    kernel=row_max_kernel,
    knobs={"BLOCK_SIZE": (128, 256, 512, 1024, 2048, 4096), "num_warps": (1, 2, 4, 8)},
    constraints=(
        ShapeConstraint(
            "threads_le_block",
            lambda c, s: 32 * c["num_warps"] <= c["BLOCK_SIZE"],
            "32 * num_warps <= BLOCK_SIZE",
        ),
    ),
    shape_names=("M", "N"),
)

SOFTMAX_FUSED_KNOBS = KernelKnobs(
    kernel=softmax_kernel,
    knobs={
        "BLOCK_SIZE": tuple(2**i for i in range(4, 17)),
        "num_warps": (1, 2, 4, 8, 16, 32),
    },
    constraints=(
        ShapeConstraint(
            "block_covers_row",
            lambda c, s: c["BLOCK_SIZE"] >= s["N"],
            "BLOCK_SIZE >= n_cols (one program holds a whole row)",
        ),
        ShapeConstraint(
            "block_is_next_pow2",
            lambda c, s: c["BLOCK_SIZE"] == next_power_of_2(s["N"]),
            "BLOCK_SIZE == next_power_of_2(n_cols) (larger blocks only add masked lanes)",
        ),
    ),
    shape_names=("M", "N"),
)


# ------------------------------------------------------------------ kernel specs
def _softmax_args(s: Any, dtype: str, rng: Any) -> dict[str, Any]:
    m, n = s["M"], s["N"]
    return {"output_ptr": empty_array((m, n), "float32"),
            "input_ptr": new_array((m, n), dtype, rng),
            "input_row_stride": n, "output_row_stride": n, "n_cols": n}


def _softmax_ref(a: Any) -> dict[str, Any]:
    x = as_float_array(a["input_ptr"]).astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"output_ptr": e / e.sum(axis=1, keepdims=True)}


def _softmax_shape_of(a: Any) -> tuple[dict[str, int], str]:
    x = a["input_ptr"]
    return {"M": int(x.shape[0]), "N": int(a["n_cols"])}, dtype_name(x)


def _softmax_space(s: dict[str, int], dtype: str, hardware: Any) -> Any:
    from autotile.kernels._spaces import softmax_space

    return softmax_space(s["M"], s["N"], dtype)


SOFTMAX_FUSED_SPEC = KernelSpec(
    name="softmax_fused", kernel=softmax_kernel, knobs=SOFTMAX_FUSED_KNOBS,
    shape_names=("M", "N"), make_args=_softmax_args,
    grid=lambda s, meta: (s["M"],),
    reference=_softmax_ref,
    flops=lambda s: 5.0 * s["M"] * s["N"],
    compulsory_bytes=lambda s, d: s["M"] * s["N"] * (DTYPE_ITEMSIZE_BYTES[d] + 4.0),
    shape_of=_softmax_shape_of,
    constexprs=lambda s, d: {"BLOCK_SIZE": next_power_of_2(s["N"])},
    space_fn=_softmax_space, model="row_softmax", model_knobs={"ROWS_PER_PROGRAM": 1},
    default_dtype="float32", small_shape=lambda s: {"M": min(s["M"], 3), "N": s["N"]},
    launcher=softmax_fused, host_reference=softmax_reference,
    doc="row softmax, one program per row (tutorial 02)",
)


def _naive_args(s: Any, dtype: str, rng: Any) -> dict[str, Any]:
    m, n = s["M"], s["N"]
    return {"x_ptr": new_array((m, n), dtype, rng), "x_max": empty_array((m,), "float32"),
            "z": empty_array((m, n), "float32"), "num": empty_array((m, n), "float32"),
            "den": empty_array((m,), "float32"), "y_ptr": empty_array((m, n), "float32"),
            "n_cols": n}


def _naive_launches(spec: Any, s: Any, dtype: str, config: Any, a: Any) -> list[Any]:
    meta, nw, ns = spec.split_config(config)
    n, grid = s["N"], (s["M"],)
    bs = {"BLOCK_SIZE": meta["BLOCK_SIZE"]}

    def launch(kernel: Any, **args: Any) -> KernelLaunch:
        return KernelLaunch(kernel, grid, args, bs, nw, ns)

    return [
        launch(row_max_kernel, x_ptr=a["x_ptr"], max_ptr=a["x_max"], stride_x=n, n_cols=n),
        launch(sub_row_kernel, x_ptr=a["x_ptr"], m_ptr=a["x_max"], z_ptr=a["z"], stride_x=n,
               stride_z=n, n_cols=n),
        launch(exp_kernel, z_ptr=a["z"], e_ptr=a["num"], stride_z=n, stride_e=n, n_cols=n),
        launch(row_sum_kernel, x_ptr=a["num"], sum_ptr=a["den"], stride_x=n, n_cols=n),
        launch(div_row_kernel, x_ptr=a["num"], d_ptr=a["den"], y_ptr=a["y_ptr"], stride_x=n,
               stride_y=n, n_cols=n),
    ]


SOFTMAX_NAIVE_SPEC = KernelSpec(
    name="softmax_naive", kernel=row_max_kernel, knobs=SOFTMAX_NAIVE_KNOBS,
    shape_names=("M", "N"), make_args=_naive_args,
    grid=lambda s, meta: (s["M"],),
    reference=lambda a: {"y_ptr": _softmax_ref({"input_ptr": a["x_ptr"]})["output_ptr"]},
    flops=lambda s: 5.0 * s["M"] * s["N"],
    compulsory_bytes=lambda s, d: s["M"] * s["N"] * (DTYPE_ITEMSIZE_BYTES[d] + 4.0),
    shape_of=lambda a: ({"M": int(a["x_ptr"].shape[0]), "N": int(a["n_cols"])},
                        dtype_name(a["x_ptr"])),
    launches_fn=_naive_launches, default_dtype="float32",
    small_shape=lambda s: {"M": min(s["M"], 3), "N": s["N"]},
    launcher=softmax_naive, host_reference=softmax_reference,
    doc="row softmax as five kernels: max, subtract, exp, sum, divide",
)
