"""Search spaces of the library kernels, built from their declared knobs.

Each kernel of :mod:`autotile.kernels` declares its knobs and constraints as a
:class:`~autotile.kernels.KernelKnobs` (constraints take ``(config, shape)``);
the functions here turn one into an :class:`~autotile.space.Space` for a fixed
problem shape. Hardware feasibility (shared memory, registers) is *not* a
space constraint: :class:`KernelModelMeasurer` reports such configs as
``"infeasible"`` with the reason, as ``triton.autotune`` scores them ``inf``.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Mapping
from typing import Any

from autotile.errors import InvalidConfigError
from autotile.kernels._flash_attention import FLASH_KNOBS
from autotile.kernels._knobs import KernelKnobs
from autotile.kernels._matmul import MATMUL_KNOBS
from autotile.kernels._persistent_matmul import MATMUL_PERSISTENT_KNOBS
from autotile.kernels._softmax import SOFTMAX_FUSED_KNOBS
from autotile.kernels._spec import DTYPE_ITEMSIZE_BYTES
from autotile.space import Choice, Constraint, Knob, Space

__all__ = [
    "DTYPE_ITEMSIZE",
    "PADDING_CONSTRAINTS",
    "space_from_knobs",
    "matmul_space",
    "persistent_matmul_space",
    "softmax_space",
    "flash_attention_space",
]

#: SMs of the default GPU (H100 SXM5 / H200, GH100: NVIDIA H100 whitepaper, Table 3).
_DEFAULT_N_SMS = 132

#: Bytes per element of the dtypes the kernel spaces accept (the specs' table).
DTYPE_ITEMSIZE: Mapping[str, int] = DTYPE_ITEMSIZE_BYTES

#: Space constraints that only trim a block larger than the (padded) problem:
#: ``block_m_le_padded_m``, ``block_n_le_padded_n`` (matmul, persistent matmul)
#: and ``block_m_le_n`` (flash attention). The kernels mask such a block, so it
#: launches and computes the right result while doing the padded tile's work;
#: a search space leaves it out (a smaller block is never slower), but
#: ``@autotune`` scores a config the user listed anyway (see
#: :class:`autotile.tuner.KernelModelScorer`), as Triton would run it.
PADDING_CONSTRAINTS: frozenset[str] = frozenset(
    {"block_m_le_padded_m", "block_n_le_padded_n", "block_m_le_n"})


def _check_shape(**dims: int) -> dict[str, int]:
    """Each size as a Python int; any ``numbers.Integral`` but bool is accepted."""
    out: dict[str, int] = {}
    for k, v in dims.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise InvalidConfigError(f"{k} must be a positive int, got {k}={v!r}")
        out[k] = int(v)
    return out


def check_shape_mapping(owner: str, shape: Any) -> dict[str, Any]:
    """``shape`` as a dict, with integral sizes (NumPy ints too) turned into Python ints.

    Other values are kept for the space functions to reject by name.

    Raises
    ------
    TypeError
        If ``shape`` is not a mapping (e.g. a tuple ``(M, N, K)``).
    """
    if not isinstance(shape, Mapping):
        raise TypeError(
            f"{owner}: shape must be a mapping of size names to ints, like "
            f"{{'M': 1024, 'N': 1024, 'K': 1024}} (matmul), {{'M': .., 'N': ..}} (softmax) "
            f"or {{'N': .., 'd': ..}} (flash attention), got {type(shape).__name__} "
            f"shape={shape!r}")
    return {k: int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v
            for k, v in shape.items()}


def _check_dtype(dtype: str) -> str:
    if dtype not in DTYPE_ITEMSIZE:
        raise InvalidConfigError(f"dtype must be one of {sorted(DTYPE_ITEMSIZE)}, "
                                 f"got dtype={dtype!r}")
    return dtype


def space_from_knobs(knobs: KernelKnobs, shape: Mapping[str, int], *,
                     extra: Mapping[str, tuple[Any, ...]] | None = None,
                     extra_constraints: tuple[Constraint, ...] = (),
                     name: str | None = None) -> Space:
    """Turn a kernel's declared knobs into a :class:`Space` for one problem shape.

    Parameters
    ----------
    knobs : KernelKnobs
        The kernel's declaration; every knob becomes a :class:`Choice` and
        every constraint a space :class:`Constraint` with ``shape`` bound.
    shape : mapping of str to int
        Problem sizes the constraints read (``knobs.shape_names``).
    extra : mapping of str to tuple, optional
        Knobs to add or to override (same name replaces the declared choices).
    extra_constraints : tuple of Constraint, default=()
        More constraints over the config dict.
    name : str, optional
        Space label.

    Returns
    -------
    Space

    Raises
    ------
    InvalidConfigError
        If ``shape`` misses a name the constraints read.
    """
    missing = [n for n in knobs.shape_names if n not in shape]
    if missing:
        raise InvalidConfigError(f"shape must give {knobs.shape_names}, missing {missing}")
    choices = {**dict(knobs.knobs), **dict(extra or {})}
    ks: list[Knob] = [Choice(k, tuple(v)) for k, v in choices.items()]
    shp = dict(shape)
    cons = [Constraint(c.name, functools.partial(_bound, c, shp)) for c in knobs.constraints]
    return Space(ks, [*cons, *extra_constraints], name=name)


def _bound(rule: Any, shape: dict[str, int], cfg: Mapping[str, Any]) -> bool:
    return bool(rule(cfg, shape))


def matmul_space(M: int, N: int, K: int, dtype: str = "float16") -> Space:
    """Space of :func:`autotile.kernels.matmul_kernel` for ``C[M, N] = A[M, K] @ B[K, N]``.

    Knobs (from ``MATMUL_KNOBS``): ``BLOCK_M``, ``BLOCK_N`` in 16..256,
    ``BLOCK_K`` in 16..128 (powers of two), ``GROUP_M`` in 1..64 (powers of
    two), ``num_warps`` in {2, 4, 8}, ``num_stages`` in {2, 3, 4, 5}; the
    kernel's constraints (fp16 tiles fit 227 KiB of shared memory: ``num_stages``
    buffers of a tile whose loads Triton pipelines, one of a tile it loads with
    scalar loads because ``K`` or ``N`` is not a multiple of 16; no block
    beyond the padded problem, ``GROUP_M <= next_power_of_2(cdiv(M,
    BLOCK_M))``, at least 4 outputs per thread). Every ``GROUP_M >= cdiv(M,
    BLOCK_M)`` launches the tiles in the same column-major order (Triton's
    grouped formula clamps the group to the tile rows left), so the space
    keeps one of them, the smallest power of two; the measurers and
    ``@autotune``'s scorer map a larger ``GROUP_M`` onto it
    (:func:`~autotile.kernels.canonical_group_m`) instead of refusing it. The
    rules that drop a block larger than the padded problem are
    :data:`PADDING_CONSTRAINTS`: the kernel masks such a block, so
    ``@autotune`` still scores and launches a config list that holds one
    (e.g. ``BLOCK_M=64`` at ``M=1``).

    Parameters
    ----------
    M, N, K : int
        Problem shape.
    dtype : {"float16", "bfloat16", "float32"}, default="float16"
        Operand dtype (recorded in the space name; the measurer uses it).

    Returns
    -------
    Space
        7,091 configs at ``8192^3`` (8,400 before constraints).

    Raises
    ------
    InvalidConfigError
        For a non-positive size or an unknown dtype.
    """
    shape = _check_shape(M=M, N=N, K=K)
    M, N, K = shape["M"], shape["N"], shape["K"]
    _check_dtype(dtype)
    return space_from_knobs(MATMUL_KNOBS, shape, name=f"matmul[{M}x{N}x{K},{dtype}]")


def persistent_matmul_space(M: int, N: int, K: int, dtype: str = "float16",
                            hardware: Any = None) -> Space:
    """Space of the persistent matmul: :func:`matmul_space` plus ``NUM_SMS``.

    ``NUM_SMS`` (programs launched) takes ``n_sms * (1/2, 1, 2, 3, 4)`` of
    ``hardware``.

    Parameters
    ----------
    M, N, K : int
        Problem shape.
    dtype : str, default="float16"
    hardware : object with an ``n_sms`` attribute, optional
        Usually a :class:`~autotile.measure.HardwareProfile`; default 132 SMs
        (H100 SXM5 and H200, both GH100 dies).

    Returns
    -------
    Space

    Raises
    ------
    InvalidConfigError
        For a non-positive size or an unknown dtype.
    """
    shape = _check_shape(M=M, N=N, K=K)
    M, N, K = shape["M"], shape["N"], shape["K"]
    _check_dtype(dtype)
    n = _DEFAULT_N_SMS if hardware is None else int(hardware.n_sms)
    progs = tuple(sorted({max(1, n // 2), n, 2 * n, 3 * n, 4 * n}))
    return space_from_knobs(MATMUL_PERSISTENT_KNOBS, shape, extra={"NUM_SMS": progs},
                            name=f"matmul_persistent[{M}x{N}x{K},{dtype}]")


def softmax_space(M: int, N: int, dtype: str = "float32") -> Space:
    """Space of the fused row softmax: ``num_warps`` and ``ROWS_PER_PROGRAM``.

    ``num_warps`` comes from ``SOFTMAX_FUSED_KNOBS``; ``ROWS_PER_PROGRAM``
    (1..16, powers of two) is the row count a program handles, as in Triton
    tutorial 02's persistent variant (the library kernel itself does one row;
    the knob exists in the model only). ``BLOCK_SIZE`` is fixed to
    ``next_power_of_2(N)``. Constraint: ``32 * num_warps <= BLOCK_SIZE *
    ROWS_PER_PROGRAM`` (no idle thread).

    Returns
    -------
    Space

    Raises
    ------
    InvalidConfigError
        For a non-positive size or an unknown dtype.
    """
    M, N = _check_shape(M=M, N=N).values()
    _check_dtype(dtype)
    block = 1 << max(0, (N - 1).bit_length())
    ks: list[Knob] = [Choice("num_warps", tuple(SOFTMAX_FUSED_KNOBS.knobs["num_warps"])),
                      Choice("ROWS_PER_PROGRAM", (1, 2, 4, 8, 16))]
    busy = Constraint("threads_le_elems",
                      lambda c: 32 * c["num_warps"] <= block * c["ROWS_PER_PROGRAM"])
    rows = Constraint("rows_le_m", lambda c: c["ROWS_PER_PROGRAM"] <= max(1, M))
    return Space(ks, [busy, rows], name=f"softmax[{M}x{N},{dtype}]")


def flash_attention_space(N: int, d: int, dtype: str = "float16") -> Space:
    """Space of :func:`autotile.kernels.attn_fwd_kernel`: BLOCK_M, BLOCK_N, num_warps, num_stages.

    Knobs and constraints from ``FLASH_KNOBS`` (accumulator plus score
    block within 228 KiB), plus
    ``BLOCK_M <= max(16, N)``.

    Returns
    -------
    Space

    Raises
    ------
    InvalidConfigError
        For a non-positive size or an unknown dtype.
    """
    shape = _check_shape(N=N, d=d)
    N, d = shape["N"], shape["d"]
    _check_dtype(dtype)
    fits = Constraint("block_m_le_n", lambda c: c["BLOCK_M"] <= max(16, N))
    return space_from_knobs(FLASH_KNOBS, shape, extra_constraints=(fits,),
                            name=f"flash_attention[N={N},d={d},{dtype}]")
