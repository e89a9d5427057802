"""Counter-based random numbers: ``tl.randint``, ``tl.rand``, ``tl.randn`` (Philox).

The same functions, constants and conversions as Triton's
``python/triton/language/random.py`` (v3.4), so a kernel gets the same
numbers from the interpreter as from Triton:

* :func:`philox_impl` runs ``n_rounds`` rounds of Philox-4x32 (uint32
  counters) or Philox-4x64 (uint64) on four counters and a two-word key
  (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011;
  the multipliers and key increments of Random123);
* :func:`philox` keys it with ``seed`` (uint32 counters: the seed's low and
  high 32 bits);
* :func:`randint4x` uses the offsets as the counters (low word, then the
  high word of a 64-bit offset), :func:`randint` keeps the first of the four
  results;
* :func:`uint_to_uniform_float` maps a random int32/int64 to ``[0, 1)`` with
  Triton's scale factor (``x`` or ``-x - 1``, times ``4.6566127342e-10`` in
  float32), :func:`rand`/:func:`rand4x` apply it to :func:`randint4x`;
* :func:`pair_uniform_to_normal` is Triton's Box-Muller transform,
  :func:`randn`/:func:`randn4x` apply it to two (four) uniform blocks.

The integer results and ``rand`` are bit-exact: unsigned arithmetic wraps
and the one float32 product rounds as on the GPU.  ``randn`` uses the
interpreter's float32 ``log``, ``sqrt``, ``cos`` and ``sin`` (NumPy's, as
Triton's interpreter), which may differ from the GPU's in the last bits.
"""

from __future__ import annotations

from typing import Any

from autotile.errors import LangError
from autotile.lang import _dtypes as D
from autotile.lang._creation import cast, full
from autotile.lang._math import cos, log, maximum, sin, sqrt, umulhi, where
from autotile.lang._tensor import tensor, to_tensor, unwrap

__all__ = ["N_ROUNDS_DEFAULT", "philox_impl", "philox", "randint", "randint4x",
           "uint_to_uniform_float", "rand", "rand4x", "pair_uniform_to_normal", "randn",
           "randn4x"]

#: Philox rounds when ``n_rounds`` is not given (Triton's ``N_ROUNDS_DEFAULT``).
N_ROUNDS_DEFAULT = 10

#: (key increment A, key increment B, round multiplier A, round multiplier B)
_PHILOX_32 = (0x9E3779B9, 0xBB67AE85, 0xD2511F53, 0xCD9E8D57)
_PHILOX_64 = (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B, 0xD2E7470EE14C6C93, 0xCA5A826395121157)


def philox_impl(c0: Any, c1: Any, c2: Any, c3: Any, k0: Any, k1: Any,
                n_rounds: int = N_ROUNDS_DEFAULT) -> tuple[tensor, tensor, tensor, tensor]:
    """Run ``n_rounds`` rounds of Philox on counters ``c0..c3`` with key ``(k0, k1)``.

    Parameters
    ----------
    c0, c1, c2, c3 : tensor of uint32 or uint64
        The counters (one type for all four).
    k0, k1 : tensor of the counters' type
        The key.
    n_rounds : int, default=10
        Rounds (a constexpr).

    Returns
    -------
    tuple of 4 tensors
        The four random words, in the counters' type.

    Raises
    ------
    LangError
        If ``c0`` is neither uint32 nor uint64 ("dtype not supported in philox_impl").
    """
    c0, c1, c2, c3 = (to_tensor(c) for c in (c0, c1, c2, c3))
    if c0.dtype is D.uint32:
        key_a, key_b, round_a, round_b = _PHILOX_32
    elif c0.dtype is D.uint64:
        key_a, key_b, round_a, round_b = _PHILOX_64
    else:
        raise LangError(f"dtype not supported in philox_impl: {c0.dtype} (uint32 or uint64)")
    for _ in range(int(unwrap(n_rounds))):
        _c0, _c2 = c0, c2
        c0 = umulhi(round_b, _c2) ^ c1 ^ k0
        c2 = umulhi(round_a, _c0) ^ c3 ^ k1
        c1 = round_b * _c2  # unsigned: wraps, as Triton's sanitize_overflow=False
        c3 = round_a * _c0
        k0 = k0 + key_a
        k1 = k1 + key_b
    return c0, c1, c2, c3


def philox(seed: Any, c0: Any, c1: Any, c2: Any, c3: Any,
           n_rounds: int = N_ROUNDS_DEFAULT) -> tuple[tensor, tensor, tensor, tensor]:
    """Philox keyed with ``seed`` on counters ``c0..c3`` (reinterpreted as unsigned).

    32-bit counters take the seed's low and high 32 bits as the key; 64-bit
    counters take the seed and 0 (a block of shape ``(1,)``, as in Triton).

    Raises
    ------
    LangError
        If ``seed`` is not an integer or the counters are not 32 or 64 bits wide.
    """
    seed = to_tensor(seed)
    if isinstance(seed.dtype, D.pointer_type) or seed.dtype.kind == 3:
        raise LangError(f"the seed of a Philox generator must be an integer, got {seed.dtype}")
    seed = cast(seed, D.uint64)
    cs = [to_tensor(c) for c in (c0, c1, c2, c3)]
    bits = cs[0].dtype.bits
    if bits == 32:
        int_dtype = D.uint32
        seed_hi = cast((seed >> 32) & 0xFFFFFFFF, D.uint32)
        seed_lo = cast(seed & 0xFFFFFFFF, D.uint32)
    elif bits == 64:
        int_dtype = D.uint64
        seed_hi = full((1,), 0, D.uint64)
        seed_lo = seed
    else:
        raise LangError(f"bitwidth not supported in philox: {bits} ({cs[0].dtype})")
    u = [cast(c, int_dtype, bitcast=True) for c in cs]
    return philox_impl(u[0], u[1], u[2], u[3], seed_lo, seed_hi, n_rounds)


def randint(seed: Any, offset: Any, n_rounds: int = N_ROUNDS_DEFAULT) -> tensor:
    """A block of random uint32 for a ``seed`` scalar and an ``offset`` block.

    The first word of :func:`randint4x`; the same ``(seed, offset)`` always
    gives the same number.
    """
    return randint4x(seed, offset, n_rounds)[0]


def randint4x(seed: Any, offset: Any,
              n_rounds: int = N_ROUNDS_DEFAULT) -> tuple[tensor, tensor, tensor, tensor]:
    """Four blocks of random uint32: Philox with counters ``(offset_lo, offset_hi, 0, 0)``.

    ``offset_hi`` is the high 32 bits of a 64-bit offset, 0 otherwise.
    """
    offset = to_tensor(offset)
    offset_lo = cast(offset, D.uint32)
    _0 = offset_lo * 0
    if offset.dtype.bits > 32:
        offset_hi = cast(offset >> 32, D.uint32)
    else:
        offset_hi = _0
    return philox(seed, offset_lo, offset_hi, _0, _0, n_rounds)


def uint_to_uniform_float(x: Any) -> tensor:
    """Map random 32- or 64-bit integers to float32 in ``[0, 1)`` (Triton's conversion).

    The bits are read as a signed integer ``s``; ``s`` (or ``-s - 1`` when
    negative) is multiplied by ``4.6566127342e-10`` (``1.0842020432385337e-19``
    for 64 bits) in float32, the largest scale that keeps the product below 1.

    Raises
    ------
    LangError
        If ``x`` is not int32, uint32, int64 or uint64.
    """
    x = to_tensor(x)
    if x.dtype in (D.uint32, D.int32):
        s = cast(x, D.int32, bitcast=True)
        scale = 4.6566127342e-10
    elif x.dtype in (D.uint64, D.int64):
        s = cast(x, D.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    else:
        raise LangError(f"uint_to_uniform_float needs int32, uint32, int64 or uint64, got "
                        f"{x.dtype}")
    s = where(s < 0, ~s, s)  # ~s == -s - 1, without the overflow of -(-2**31)
    return s * scale


def rand(seed: Any, offset: Any, n_rounds: int = N_ROUNDS_DEFAULT) -> tensor:
    """A block of random float32 in ``[0, 1)`` for a ``seed`` scalar and an ``offset`` block."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


def rand4x(seed: Any, offsets: Any,
           n_rounds: int = N_ROUNDS_DEFAULT) -> tuple[tensor, tensor, tensor, tensor]:
    """Four blocks of random float32 in ``[0, 1)`` (one per word of :func:`randint4x`)."""
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    return (uint_to_uniform_float(i1), uint_to_uniform_float(i2), uint_to_uniform_float(i3),
            uint_to_uniform_float(i4))


def pair_uniform_to_normal(u1: Any, u2: Any) -> tuple[tensor, tensor]:
    """Box-Muller: two uniform blocks to two standard normal blocks (float32).

    ``u1`` is clamped below at ``1e-7``; ``r = sqrt(-2 log u1)``,
    ``th = 2 pi u2``; returns ``(r cos th, r sin th)``.
    """
    u1 = maximum(1.0e-7, u1)
    th = 6.283185307179586 * to_tensor(u2)
    r = sqrt(-2.0 * log(u1))
    return r * cos(th), r * sin(th)


def randn(seed: Any, offset: Any, n_rounds: int = N_ROUNDS_DEFAULT) -> tensor:
    """A block of random float32 from N(0, 1) for a ``seed`` scalar and an ``offset`` block."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    n1, _ = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    return n1


def randn4x(seed: Any, offset: Any,
            n_rounds: int = N_ROUNDS_DEFAULT) -> tuple[tensor, tensor, tensor, tensor]:
    """Four blocks of random float32 from N(0, 1)."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
