"""Ordered integer knobs: ``PowerOfTwo``, ``Divisors`` and ``IntRange``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from autotile.errors import InvalidConfigError
from autotile.space._knob import Knob, as_int

__all__ = ["PowerOfTwo", "Divisors", "IntRange", "divisors"]


def divisors(n: int) -> tuple[int, ...]:
    """Return all positive divisors of ``n`` in ascending order.

    Parameters
    ----------
    n : int
        A positive integer.

    Returns
    -------
    tuple of int
        E.g. ``divisors(12) == (1, 2, 3, 4, 6, 12)``.
    """
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return tuple(small + large[::-1])


def _is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


class _IntKnob(Knob):
    """Shared parts of the integer knobs (not a dataclass itself)."""

    def canonical(self, value: Any) -> Any:
        """Return ``value`` as a Python int.

        Parameters
        ----------
        value : Any
            A valid value.

        Returns
        -------
        int
            The value.
        """
        return int(value)

    def value_array(self) -> npt.NDArray[Any]:
        """Return all values as an ``int64`` array.

        Returns
        -------
        ndarray of shape (len(self),), dtype int64
            The values in order.
        """
        return np.asarray(self.values, dtype=np.int64)

    def parse_value(self, text: str) -> Any:
        """Parse the decimal text of a value.

        Parameters
        ----------
        text : str
            E.g. ``"16"``.

        Returns
        -------
        int
            The validated value.

        Raises
        ------
        InvalidConfigError
            If ``text`` is not an integer or not in the knob.
        """
        try:
            v = int(text.strip())
        except ValueError:
            raise InvalidConfigError(f"{self.name}={text.strip()} is not an integer") from None
        return self.validate(v)

    def _type_msg(self, value: Any) -> str | None:
        if as_int(value) is None:
            return f"{self.name} must be an int, got {type(value).__name__} {self.name}={value!r}"
        return None


@dataclass(frozen=True)
class PowerOfTwo(_IntKnob):
    """Powers of two from ``low`` to ``high`` inclusive.

    Encoded as ``log2(value)``.

    Parameters
    ----------
    name : str
        Knob name.
    low, high : int
        Powers of two with ``1 <= low <= high``.

    Examples
    --------
    >>> PowerOfTwo("BLOCK_M", 16, 128).values
    (16, 32, 64, 128)
    """

    low: int
    high: int

    kind: ClassVar[str] = "PowerOfTwo"

    def __post_init__(self) -> None:
        super().__post_init__()
        for attr in ("low", "high"):
            v = as_int(getattr(self, attr))
            if v is None or not _is_pow2(v):
                raise InvalidConfigError(
                    f"{attr} must be a power of two, got {attr}={getattr(self, attr)!r}"
                )
            object.__setattr__(self, attr, v)
        if self.low > self.high:
            raise InvalidConfigError(
                f"low <= high must hold, but got (low={self.low}, high={self.high})"
            )

    @cached_property
    def values(self) -> tuple[int, ...]:
        """Powers of two ``low, 2*low, ..., high``."""
        lo, hi = self.low.bit_length() - 1, self.high.bit_length() - 1
        return tuple(1 << e for e in range(lo, hi + 1))

    def __len__(self) -> int:
        return self.high.bit_length() - self.low.bit_length() + 1

    def check(self, value: Any) -> str | None:
        """Return ``None`` if ``value`` is a power of two in ``[low, high]``."""
        msg = self._type_msg(value)
        if msg:
            return msg
        v = int(value)
        if not _is_pow2(v) or not self.low <= v <= self.high:
            return f"{self.name}={v} is not a power of two in [{self.low}, {self.high}]"
        return None

    def index(self, value: Any) -> int:
        """Return ``log2(value) - log2(low)``."""
        v = self.validate(value)
        return int(v.bit_length() - self.low.bit_length())

    def value_at(self, index: int) -> Any:
        """Return ``low * 2**index``."""
        return self.low << int(index)

    @property
    def feature_names(self) -> list[str]:
        """``["<name>:log2"]``."""
        return [f"{self.name}:log2"]

    def encode(self, value: Any) -> list[float]:
        """Return ``[log2(value)]``."""
        return [float(int(self.validate(value)).bit_length() - 1)]


@dataclass(frozen=True)
class Divisors(_IntKnob):
    """All positive divisors of ``n`` in ascending order.

    Used for split factors of a loop of extent ``n``. Encoded as
    ``log2(value)``.

    Parameters
    ----------
    name : str
        Knob name.
    n : int
        A positive integer.

    Examples
    --------
    >>> Divisors("i_factor", 64).values
    (1, 2, 4, 8, 16, 32, 64)
    """

    n: int

    kind: ClassVar[str] = "Divisors"

    def __post_init__(self) -> None:
        super().__post_init__()
        v = as_int(self.n)
        if v is None or v < 1:
            raise InvalidConfigError(f"n must be a positive int, got n={self.n!r}")
        object.__setattr__(self, "n", v)

    @cached_property
    def values(self) -> tuple[int, ...]:
        """Divisors of ``n``, ascending."""
        return divisors(self.n)

    def check(self, value: Any) -> str | None:
        """Return ``None`` if ``value`` divides ``n``."""
        msg = self._type_msg(value)
        if msg:
            return msg
        v = int(value)
        if v < 1 or self.n % v:
            return f"{self.name}={v} is not a divisor of {self.n}"
        return None

    @property
    def feature_names(self) -> list[str]:
        """``["<name>:log2"]``."""
        return [f"{self.name}:log2"]

    def encode(self, value: Any) -> list[float]:
        """Return ``[log2(value)]``."""
        return [math.log2(self.validate(value))]


@dataclass(frozen=True)
class IntRange(_IntKnob):
    """Integers ``low, low + step, ...`` up to and including ``high``.

    ``high`` is included when ``high - low`` is a multiple of ``step``.
    Encoded as the value itself.

    Parameters
    ----------
    name : str
        Knob name.
    low, high : int
        Bounds, inclusive, ``low <= high``.
    step : int, default=1
        Positive stride.

    Examples
    --------
    >>> IntRange("num_stages", 1, 4).values
    (1, 2, 3, 4)
    """

    low: int
    high: int
    step: int = 1

    kind: ClassVar[str] = "IntRange"

    def __post_init__(self) -> None:
        super().__post_init__()
        for attr in ("low", "high", "step"):
            v = as_int(getattr(self, attr))
            if v is None:
                raise InvalidConfigError(
                    f"{attr} must be an int, got {attr}={getattr(self, attr)!r}"
                )
            object.__setattr__(self, attr, v)
        if self.step < 1:
            raise InvalidConfigError(f"step must be positive, got step={self.step}")
        if self.low > self.high:
            raise InvalidConfigError(
                f"low <= high must hold, but got (low={self.low}, high={self.high})"
            )

    @property
    def values(self) -> tuple[int, ...]:
        """``tuple(range(low, high + 1, step))``.

        Raises
        ------
        InvalidConfigError
            If there are more than ``MAX_LISTED_VALUES`` (2**24) values:
            ``len``, ``in``, :meth:`index`, :meth:`value_at`,
            :meth:`values_at`, sampling and encoding work without listing.
        """
        self._check_listable()
        return tuple(range(self.low, self.high + 1, self.step))

    def value_array(self) -> npt.NDArray[Any]:
        """Return all values as an ``int64`` array (``np.arange``).

        Raises
        ------
        InvalidConfigError
            If there are more than ``MAX_LISTED_VALUES`` values.
        """
        self._check_listable()
        return np.arange(self.low, self.high + 1, self.step, dtype=np.int64)

    def values_at(self, indices: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """Return ``low + indices * step`` without listing the values.

        Parameters
        ----------
        indices : ndarray of int64
            Positions, ``0 <= indices < len(self)``.

        Returns
        -------
        ndarray of int64 (object when a value does not fit int64)
            The values.
        """
        idx = np.asarray(indices, dtype=np.int64)
        if -(2**63) <= self.low and self.high < 2**63:
            return self.low + idx * np.int64(self.step)
        out = np.empty(idx.shape, dtype=object)
        out.flat[:] = [self.value_at(int(i)) for i in idx.reshape(-1)]
        return out

    def __len__(self) -> int:
        return (self.high - self.low) // self.step + 1

    def check(self, value: Any) -> str | None:
        """Return ``None`` if ``value`` is on the grid ``low + k * step <= high``."""
        msg = self._type_msg(value)
        if msg:
            return msg
        v = int(value)
        if not self.low <= v <= self.high or (v - self.low) % self.step:
            return f"{self.name}={v} is not in [{self.low}, {self.high}] with step {self.step}"
        return None

    def index(self, value: Any) -> int:
        """Return ``(value - low) // step``."""
        return (int(self.validate(value)) - self.low) // self.step

    def value_at(self, index: int) -> Any:
        """Return ``low + index * step``."""
        return self.low + int(index) * self.step

    def encode(self, value: Any) -> list[float]:
        """Return ``[float(value)]``."""
        return [float(self.validate(value))]
