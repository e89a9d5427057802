"""Host-side integer helpers shared by the launchers (Triton's ``triton.cdiv`` etc.)."""

from __future__ import annotations

import numbers
from typing import Any

__all__ = ["cdiv", "next_power_of_2", "is_power_of_2", "check_int", "check_power_of_2"]


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


def check_int(name: str, value: Any, minimum: int = 1) -> int:
    """Check a launcher's integer meta-parameter and return it as an ``int``.

    Parameters
    ----------
    name : str
        The parameter's name, for the message (e.g. ``"GROUP_M"``).
    value : object
        A Python or NumPy integer (``bool`` is rejected).
    minimum : int, default=1
        Smallest allowed value.

    Raises
    ------
    TypeError
        If ``value`` is not an integer (e.g. ``2.5``, ``"128"``, ``True``).
    ValueError
        If ``value < minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= {minimum}, got {name}={value!r} "
                        f"({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {name}={value!r}")
    return int(value)


def check_power_of_2(name: str, value: Any, minimum: int = 1, why: str = "") -> int:
    """Check an int meta-parameter that must be a power of two ``>= minimum``.

    Raises
    ------
    TypeError
        If ``value`` is not an integer.
    ValueError
        If it is not a power of two ``>= minimum``.
    """
    v = check_int(name, value, 1)
    if not is_power_of_2(v) or v < minimum:
        at_least = f" >= {minimum}" if minimum > 1 else ""
        raise ValueError(f"{name} must be a power of two{at_least}{why}, got {name}={value!r}")
    return v
