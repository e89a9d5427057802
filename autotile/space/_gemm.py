"""The GEMM schedule template: split factors of ``i``, ``j``, ``k`` and the loop order.

Lecture notes §7.3: splitting each of the three loops of an ``n x n x n``
matrix multiplication and ordering the six resulting loops gives
``len(divisors(n))**3 * 6!`` schedules (246,960 at ``n = 64``; 958,320 at
``n = 1024``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autotile.errors import InvalidConfigError
from autotile.space._categorical import Choice
from autotile.space._config import Config
from autotile.space._knob import Knob, as_int
from autotile.space._numeric import Divisors, divisors
from autotile.space._permutation import Permutation
from autotile.space._space import Space

__all__ = ["GEMM_LOOPS", "gemm_space", "gemm_schedule", "gemm_canonical_key"]

GEMM_LOOPS = ("io", "ii", "jo", "ji", "ko", "ki")
"""Names of the six loops after splitting ``i``, ``j`` and ``k`` (outer ``o``, inner ``i``)."""


def _check_n(n: Any) -> int:
    v = as_int(n)
    if v is None or v < 1:
        raise InvalidConfigError(f"n must be a positive int, got n={n!r}")
    return v


def gemm_space(n: int = 64, *, pack_b: bool = False, pad: bool = False) -> Space:
    """Return the GEMM schedule space of lecture-notes §7.3.

    Knobs, in order:

    * ``i_factor``, ``j_factor``, ``k_factor`` : :class:`Divisors` of ``n``,
      the split factor = extent of the inner loop (``ii``, ``ji``, ``ki``).
    * ``order`` : :class:`Permutation` of ``("io", "ii", "jo", "ji", "ko", "ki")``,
      outer to inner.
    * ``pack_tile`` (only if ``pack_b``) : :class:`Choice` of ``0`` (no
      packing) and the divisors of ``n``; ``T > 0`` stores ``B`` packed as
      ``Bp[j // T, k, j % T]`` (``T = n`` is layout-identical to no packing).
    * ``row_width`` (only if ``pad``) : :class:`Choice` of
      ``(n, n + 1, n + 4, n + 16)`` allocated elements per row (``n``: no
      padding).

    There are no constraints: every factor divides ``n``.

    Parameters
    ----------
    n : int, default=64
        Extent of ``i``, ``j`` and ``k`` (``C = A @ B`` with ``n x n`` matrices).
    pack_b : bool, default=False
        Add the ``pack_tile`` knob.
    pad : bool, default=False
        Add the ``row_width`` knob.

    Returns
    -------
    Space
        ``len(divisors(n))**3 * 720`` configs, times the optional knob sizes.

    Examples
    --------
    >>> len(gemm_space(64)), len(gemm_space(1024))
    (246960, 958320)
    """
    n = _check_n(n)
    knobs: list[Knob] = [
        Divisors("i_factor", n),
        Divisors("j_factor", n),
        Divisors("k_factor", n),
        Permutation("order", GEMM_LOOPS),
    ]
    if pack_b:
        knobs.append(Choice("pack_tile", (0, *divisors(n))))
    if pad:
        knobs.append(Choice("row_width", (n, n + 1, n + 4, n + 16)))
    return Space(knobs, name=f"gemm_n{n}")


def _space_for(config: Mapping[str, Any], n: int) -> Space:
    return gemm_space(n, pack_b="pack_tile" in config, pad="row_width" in config)


def gemm_schedule(config: Mapping[str, Any], n: int = 64) -> tuple[Any, tuple[Any, Any, Any]]:
    """Build the :mod:`autotile.te` schedule of a GEMM config.

    ``C[i, j] = sum_k A[i, k] * B[k, j]`` in float32; ``i``, ``j``, ``k`` are
    split by their factors (``split(axis, factor=f)`` -> outer ``io`` of
    extent ``n // f``, inner ``ii`` of extent ``f``), the six loops are
    reordered as ``order`` says, ``B`` is packed if ``pack_tile > 0`` and
    ``A`` and ``B`` are padded to ``row_width`` if it is not ``n`` (a packed
    ``B`` is not padded). ``C`` is padded too if :mod:`autotile.te` accepts an
    output layout; at the time of writing ``transform_layout`` takes inputs
    only, so ``C`` stays row-major.

    Parameters
    ----------
    config : Mapping
        A config of ``gemm_space(n, ...)`` (extra knobs decide the flags).
    n : int, default=64
        Matrix size.

    Returns
    -------
    tuple of (autotile.te.Schedule, (Tensor, Tensor, Tensor))
        The schedule and ``(A, B, C)``; ``te.lower(s)`` and ``te.build(s)``
        take it from there.

    Raises
    ------
    InvalidConfigError
        If ``config`` is not valid in the GEMM space of size ``n``.
    """
    from autotile import te
    from autotile.errors import ScheduleError

    n = _check_n(n)
    cfg = _space_for(config, n).validate(config)
    A = te.placeholder((n, n), dtype="float32", name="A")
    B = te.placeholder((n, n), dtype="float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C)
    i_ax, j_ax = s[C].op.axis
    (k_ax,) = s[C].op.reduce_axis
    loops: dict[str, Any] = {}
    for name, axis in (("i", i_ax), ("j", j_ax), ("k", k_ax)):
        loops[name + "o"], loops[name + "i"] = s[C].split(axis, factor=cfg[f"{name}_factor"])
    s[C].reorder(*(loops[name] for name in cfg["order"]))
    tile = cfg.get("pack_tile", 0)
    width = cfg.get("row_width", n)
    if tile:
        s.transform_layout(B, te.PackedLayout(tile=tile))
    if width != n:
        s.transform_layout(A, te.PaddedLayout(width=width))
        if not tile:
            s.transform_layout(B, te.PaddedLayout(width=width))
        try:
            s.transform_layout(C, te.PaddedLayout(width=width))
        except ScheduleError:
            pass  # te lays out outputs row-major only (see docstring)
    return s, (A, B, C)


def gemm_canonical_key(
    config: Mapping[str, Any], n: int = 64, *, merge: bool = True
) -> tuple[Any, ...]:
    """Return a key such that configs with equal keys produce the same access trace.

    The loop nest is written as a sequence of ``(loop, extent, multiplier)``
    outer to inner, where the axis value is ``sum(multiplier * counter)``
    over its loops (``io`` has multiplier ``factor``, ``ii`` multiplier 1).
    Rewrites, each of which keeps the iteration order of ``(i, j, k)``:

    1. drop loops of extent 1 (factor 1 empties the inner loop, factor ``n``
       the outer one);
    2. if ``merge``: name every loop by its axis (``"i"``, not ``"io"``/
       ``"ii"``; extent and multiplier still tell them apart) and merge an
       outer loop directly followed by its own inner loop into the unsplit
       loop ``(axis, n, 1)``.

    Without ``merge`` a loop keeps its schedule name, so e.g. ``i`` split by
    1 and by ``n`` give different keys. Extra knobs (``pack_tile``,
    ``row_width``) are appended as ``(name, value)`` pairs.

    Parameters
    ----------
    config : Mapping
        A GEMM config.
    n : int, default=64
        Matrix size.
    merge : bool, default=True
        Apply rewrite 2.

    Returns
    -------
    tuple
        ``((loop, extent, multiplier), ...)`` then the extra-knob pairs.

    Examples
    --------
    >>> cfg = {"i_factor": 1, "j_factor": 64, "k_factor": 4,
    ...        "order": ("io", "ii", "jo", "ji", "ki", "ko")}
    >>> gemm_canonical_key(cfg, 64, merge=False)
    (('io', 64, 1), ('ji', 64, 1), ('ki', 4, 1), ('ko', 16, 4))
    >>> gemm_canonical_key(cfg, 64)
    (('i', 64, 1), ('j', 64, 1), ('k', 4, 1), ('k', 16, 4))
    >>> gemm_canonical_key({**cfg, "order": ("io", "ii", "jo", "ji", "ko", "ki")}, 64)
    (('i', 64, 1), ('j', 64, 1), ('k', 64, 1))
    """
    n = _check_n(n)
    cfg = config if isinstance(config, Config) else _space_for(config, n).validate(config)
    nest: list[tuple[str, int, int]] = []
    for loop in cfg["order"]:
        f = cfg[f"{loop[0]}_factor"]
        ext, mult = (n // f, f) if loop[1] == "o" else (f, 1)
        if ext > 1:
            nest.append((loop, ext, mult))
    if merge:
        merged: list[tuple[str, int, int]] = []
        for loop, ext, mult in nest:
            axis = loop[0]
            prev = merged[-1] if merged else None
            if loop[1] == "i" and prev is not None and prev[0] == axis + "o":
                merged[-1] = (axis, n, 1)
            else:
                merged.append((loop, ext, mult))
        nest = [(loop[0], ext, mult) for loop, ext, mult in merged]
    extras = tuple((k, v) for k, v in cfg.items() if k in ("pack_tile", "row_width"))
    return tuple(nest) + extras
