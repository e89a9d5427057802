"""Categorical knobs: ``Choice`` and ``Boolean``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from autotile.errors import InvalidConfigError
from autotile.space._knob import Knob, format_value, from_jsonable, to_jsonable

__all__ = ["Choice", "Boolean"]


def _same_type_member(value: Any, candidates: tuple[Any, ...]) -> bool:
    """``value in candidates`` without ``True == 1`` or ``1 == 1.0`` confusions."""
    for c in candidates:
        if type(c) is type(value) and c == value:
            return True
    return False


def _has_nan(value: Any) -> bool:
    """Whether ``value`` is a float NaN or a tuple holding one (at any depth)."""
    if isinstance(value, float):
        return value != value
    if isinstance(value, tuple):
        return any(_has_nan(v) for v in value)
    return False


@dataclass(frozen=True)
class Choice(Knob):
    """A categorical knob over a fixed tuple of values.

    Values must be distinct, hashable and JSON-able (``int``, ``float``,
    ``str``, ``bool``, ``None`` or tuples of those; not NaN); lists are turned
    into tuples. Their text forms (see :func:`~autotile.space.format_value`) must
    be distinct too, so that ``str(config)`` can be parsed back. Encoded
    one-hot. Being unordered, every other value is a neighbour.

    Parameters
    ----------
    name : str
        Knob name.
    values : tuple
        The values, in enumeration order.

    Examples
    --------
    >>> Choice("row_width", (64, 65, 68, 80)).index(68)
    2
    """

    values: tuple[Any, ...]

    kind: ClassVar[str] = "Choice"

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.values, (str, bytes)) or not hasattr(self.values, "__iter__"):
            raise InvalidConfigError(
                f"values must be a tuple of values, got values={self.values!r}"
            )
        vals = tuple(from_jsonable(v) for v in self.values)
        if not vals:
            raise InvalidConfigError(f"Choice {self.name!r} needs at least one value")
        for v in vals:
            try:
                hash(v)
                json.dumps(to_jsonable(v))
            except TypeError:
                raise InvalidConfigError(
                    f"Choice values must be hashable and JSON-able, got {self.name}={v!r}"
                ) from None
            if _has_nan(v):
                raise InvalidConfigError(
                    f"Choice values must not be NaN (NaN != NaN, so no config could ever "
                    f"match it), got {self.name}={v!r} in values={vals!r}"
                )
        texts = [format_value(v) for v in vals]
        if len(set(texts)) != len(vals) or len(set(vals)) != len(vals):
            raise InvalidConfigError(
                f"Choice {self.name!r} values must be distinct (also as text), got "
                f"values={vals!r}"
            )
        object.__setattr__(self, "values", vals)

    def check(self, value: Any) -> str | None:
        """Return ``None`` if ``value`` is one of ``values`` (same type too)."""
        v = self.canonical(value)
        try:
            hash(v)
        except TypeError:
            return self._not_one_of(v)
        if v in self._index_of and _same_type_member(v, self.values):
            return None
        return self._not_one_of(v)

    def _not_one_of(self, v: Any) -> str:
        """The message for a value outside ``values``: reprs, plus the type when it differs."""
        kind = "" if any(type(v) is type(x) for x in self.values) else \
            f" ({type(v).__name__})"
        return f"{self.name}={v!r}{kind} is not one of {self.values!r}"

    def canonical(self, value: Any) -> Any:
        """Return ``value`` with NumPy scalars and lists made Python scalars and tuples."""
        if isinstance(value, np.generic):
            return value.item()
        return from_jsonable(value)

    def value_array(self) -> npt.NDArray[Any]:
        """Return the values as an array: numeric dtype if all are ints, else object."""
        if all(type(v) is int for v in self.values):
            return np.asarray(self.values, dtype=np.int64)
        return super().value_array()

    @property
    def n_features(self) -> int:
        """``len(values)`` (one-hot)."""
        return len(self.values)

    @property
    def feature_names(self) -> list[str]:
        """``["<name>=<value>", ...]``."""
        return [f"{self.name}={format_value(v)}" for v in self.values]

    def encode(self, value: Any) -> list[float]:
        """Return the one-hot vector of ``value``."""
        out = [0.0] * len(self.values)
        out[self.index(value)] = 1.0
        return out

    def neighbours(self, value: Any) -> list[Any]:
        """Return every other value, in order (a categorical knob has no adjacency)."""
        i = self.index(value)
        return [v for j, v in enumerate(self.values) if j != i]


@dataclass(frozen=True)
class Boolean(Knob):
    """A ``False``/``True`` knob, encoded as 0.0/1.0.

    Parameters
    ----------
    name : str
        Knob name.
    """

    kind: ClassVar[str] = "Boolean"

    @property
    def values(self) -> tuple[bool, bool]:
        """``(False, True)``."""
        return (False, True)

    def __len__(self) -> int:
        return 2

    def check(self, value: Any) -> str | None:
        """Return ``None`` if ``value`` is a ``bool`` (or ``numpy.bool_``)."""
        if isinstance(value, (bool, np.bool_)):
            return None
        return f"{self.name}={format_value(value)} is not a bool"

    def canonical(self, value: Any) -> Any:
        """Return ``bool(value)``."""
        return bool(value)

    def index(self, value: Any) -> int:
        """Return 0 for ``False`` and 1 for ``True``."""
        return int(self.validate(value))

    def value_at(self, index: int) -> Any:
        """Return ``bool(index)``."""
        return (False, True)[index]

    def value_array(self) -> npt.NDArray[Any]:
        """Return ``array([False, True])``."""
        return np.array([False, True])

    def encode(self, value: Any) -> list[float]:
        """Return ``[float(value)]``."""
        return [float(self.validate(value))]
