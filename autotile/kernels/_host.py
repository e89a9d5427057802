"""Host-side integer helpers shared by the launchers (Triton's ``triton.cdiv`` etc.)."""

from __future__ import annotations

__all__ = ["cdiv", "next_power_of_2", "is_power_of_2"]


def cdiv(a: int, b: int) -> int:
    """Ceiling division ``ceil(a / b)`` for positive ints."""
    return -(-int(a) // int(b))


def next_power_of_2(n: int) -> int:
    """Smallest power of two ``>= n`` (1 for ``n <= 1``)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def is_power_of_2(n: int) -> bool:
    """Return True when ``n`` is a positive power of two."""
    return n > 0 and (n & (n - 1)) == 0
