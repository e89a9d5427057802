"""The ``Knob`` base class: one tunable dimension of a space."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from autotile.errors import InvalidConfigError

__all__ = ["Knob", "format_value", "to_jsonable", "from_jsonable", "as_int",
           "MAX_LISTED_VALUES"]

#: Most values a knob lists (``values``, ``value_array``). Larger knobs (an
#: ``IntRange(0, 10**12)``, a ``Permutation`` of 13 items) work without listing:
#: ``len``, ``in``, ``index``, ``value_at``, ``values_at``, sampling and encoding.
MAX_LISTED_VALUES = 1 << 24


def format_value(value: Any) -> str:
    """Return the stable text form of a knob value.

    Integers, floats, strings, ``None`` and booleans print as Python does
    (strings without quotes); tuples print as ``(a,b,c)`` without spaces.

    Parameters
    ----------
    value : Any
        A knob value.

    Returns
    -------
    str
        The text used by ``str(config)`` and in error messages.
    """
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(format_value(v) for v in value) + ")"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def to_jsonable(value: Any) -> Any:
    """Turn tuples (recursively) into lists so that ``json.dumps`` round-trips.

    Parameters
    ----------
    value : Any
        A knob value.

    Returns
    -------
    Any
        The same value with every tuple replaced by a list.
    """
    if isinstance(value, (tuple, list)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def from_jsonable(value: Any) -> Any:
    """Inverse of :func:`to_jsonable`: lists (recursively) become tuples.

    Parameters
    ----------
    value : Any
        A value read by ``json.loads``.

    Returns
    -------
    Any
        The same value with every list replaced by a tuple.
    """
    if isinstance(value, (list, tuple)):
        return tuple(from_jsonable(v) for v in value)
    return value


def as_int(value: Any) -> int | None:
    """Return ``value`` as a Python int if it is an integer (not a bool), else ``None``.

    Parameters
    ----------
    value : Any
        Candidate value; ``int`` and ``numpy.integer`` are accepted.

    Returns
    -------
    int or None
        The integer, or ``None`` for bools, floats, strings and others.
    """
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    return None


def _all_subclasses(cls: type) -> list[type]:
    out: list[type] = []
    subs: list[type] = cls.__subclasses__()
    for sub in subs:
        out.append(sub)
        out.extend(_all_subclasses(sub))
    return out


@dataclass(frozen=True)
class Knob:
    """One tunable dimension: a name and a finite, ordered tuple of values.

    Subclasses are frozen dataclasses validated in ``__post_init__``. The
    contract every knob kind implements:

    * ``values`` : tuple of all values in a fixed order; ``index(value)``
      and ``value_at(i)`` are inverse; ``len(knob)`` is the number of values.
      A knob of more than :data:`MAX_LISTED_VALUES` values refuses to list
      them (``values``, ``value_array``) with an
      :class:`~autotile.errors.InvalidConfigError` naming the knob and its
      size; everything else works without listing them.
    * ``check(value)`` returns ``None`` if ``value`` belongs to the knob and
      an error message naming the rule and the value otherwise;
      ``validate(value)`` returns the canonical value (Python ints, tuples)
      or raises :class:`~autotile.errors.InvalidConfigError`.
    * ``encode(value)`` returns ``n_features`` floats for cost models,
      named by ``feature_names``.
    * ``neighbours(value)`` lists the values one local step away and
      ``mutate(value, rng)`` draws a random different value.
    * ``to_dict()``/``to_json()`` and ``Knob.from_json`` round-trip.

    Parameters
    ----------
    name : str
        Knob name; must not contain ``=``, ``,``, spaces or parentheses.
    """

    name: str

    kind: ClassVar[str] = "Knob"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidConfigError(f"knob name must be a non-empty str, got {self.name!r}")
        bad = set("=,() \t\n") & set(self.name)
        if bad:
            raise InvalidConfigError(
                f"knob name must not contain any of '=, ()' or whitespace, got name={self.name!r}"
            )

    # -- to be provided by subclasses -------------------------------------------------
    # ``values`` (a tuple, property or field) is provided by every subclass; it is only
    # declared for type checkers because ``Choice`` stores it as a dataclass field.
    if TYPE_CHECKING:

        @property
        def values(self) -> tuple[Any, ...]:
            """All values, in enumeration order."""

    def check(self, value: Any) -> str | None:  # pragma: no cover - overridden
        """Return ``None`` if ``value`` is in the knob, else an error message."""
        raise NotImplementedError

    # -- generic implementations ------------------------------------------------------
    def __len__(self) -> int:
        return len(self.values)

    @cached_property
    def _index_of(self) -> dict[Any, int]:
        return {v: i for i, v in enumerate(self.values)}

    def canonical(self, value: Any) -> Any:
        """Return the canonical form of a value already known to be valid.

        Parameters
        ----------
        value : Any
            A value for which ``check`` returned ``None``.

        Returns
        -------
        Any
            ``value`` with NumPy scalars turned into Python scalars and lists
            into tuples.
        """
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, list):
            return tuple(value)
        return value

    def validate(self, value: Any) -> Any:
        """Return the canonical form of ``value`` or raise.

        Parameters
        ----------
        value : Any
            Candidate value.

        Returns
        -------
        Any
            The canonical value (equal to one of ``values``).

        Raises
        ------
        InvalidConfigError
            If ``value`` is not one of the knob's values.
        """
        msg = self.check(value)
        if msg is not None:
            raise InvalidConfigError(msg)
        return self.canonical(value)

    def __contains__(self, value: object) -> bool:
        try:
            return self.check(value) is None
        except TypeError:
            return False

    def index(self, value: Any) -> int:
        """Return the position of ``value`` in ``values``.

        Parameters
        ----------
        value : Any
            A value of the knob.

        Returns
        -------
        int
            ``0 <= index < len(self)``.

        Raises
        ------
        InvalidConfigError
            If ``value`` is not one of the knob's values.
        """
        return self._index_of[self.validate(value)]

    def value_at(self, index: int) -> Any:
        """Return ``values[index]``.

        Parameters
        ----------
        index : int
            ``0 <= index < len(self)``.

        Returns
        -------
        Any
            The value at that position.
        """
        return self.values[index]

    def _check_listable(self) -> None:
        """Raise if the knob has too many values to list (see :data:`MAX_LISTED_VALUES`).

        Raises
        ------
        InvalidConfigError
            Naming the knob, its number of values and the limit.
        """
        n = len(self)
        if n > MAX_LISTED_VALUES:
            raise InvalidConfigError(
                f"{type(self).kind} knob {self.name!r} has {n} values, too many to list (at "
                f"most {MAX_LISTED_VALUES}); len(), `in`, index(), value_at(), values_at(), "
                f"sampling and encoding work without listing them")

    def value_array(self) -> npt.NDArray[Any]:
        """Return all values as a 1-D NumPy array (object dtype unless numeric).

        Vectorised constraints receive columns gathered from this array.

        Returns
        -------
        ndarray of shape (len(self),)
            ``int64`` for integer knobs, ``bool`` for :class:`Boolean`,
            ``object`` otherwise (tuples for :class:`Permutation`).

        Raises
        ------
        InvalidConfigError
            If the knob has more than :data:`MAX_LISTED_VALUES` values.
        """
        self._check_listable()
        out = np.empty(len(self), dtype=object)
        for i, v in enumerate(self.values):
            out[i] = v
        return out

    def values_at(self, indices: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """Return the values at positions ``indices`` (``value_array()[indices]``).

        Parameters
        ----------
        indices : ndarray of int64
            Positions, ``0 <= indices < len(self)``.

        Returns
        -------
        ndarray
            Same shape as ``indices``, the dtype of :meth:`value_array`;
            :class:`IntRange` computes them without listing its values.
        """
        return self.value_array()[indices]

    @property
    def n_features(self) -> int:
        """Number of floats ``encode`` returns."""
        return 1

    @property
    def feature_names(self) -> list[str]:
        """Names of the ``n_features`` encoded features."""
        return [self.name]

    def encode(self, value: Any) -> list[float]:  # pragma: no cover - overridden
        """Return the numeric features of ``value`` (``n_features`` floats)."""
        raise NotImplementedError

    def neighbours(self, value: Any) -> list[Any]:
        """Return the values one step from ``value``: the previous and the next one.

        Parameters
        ----------
        value : Any
            A value of the knob.

        Returns
        -------
        list
            Up to two values, lower first.
        """
        i = self.index(value)
        return [self.value_at(j) for j in (i - 1, i + 1) if 0 <= j < len(self)]

    def mutate(self, value: Any, rng: np.random.Generator) -> Any:
        """Return a value drawn uniformly from the other values of the knob.

        Parameters
        ----------
        value : Any
            Current value.
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        Any
            A different value, or ``value`` itself if the knob has one value.
        """
        n = len(self)
        if n <= 1:
            return value
        i = self.index(value)
        j = int(rng.integers(n - 1))
        return self.value_at(j + 1 if j >= i else j)

    def format_value(self, value: Any) -> str:
        """Return the text form of ``value`` used by ``str(config)``.

        Parameters
        ----------
        value : Any
            A value of the knob.

        Returns
        -------
        str
            See :func:`format_value`.
        """
        return format_value(value)

    @cached_property
    def _text_to_value(self) -> dict[str, Any]:
        return {self.format_value(v): v for v in self.values}

    def parse_value(self, text: str) -> Any:
        """Inverse of ``format_value``.

        Parameters
        ----------
        text : str
            Text form of a value.

        Returns
        -------
        Any
            The value.

        Raises
        ------
        InvalidConfigError
            If ``text`` is not the text of one of the values.
        """
        try:
            return self._text_to_value[text.strip()]
        except KeyError:
            raise InvalidConfigError(
                f"{self.name}={text.strip()} is not a value of knob {self!r}"
            ) from None

    # -- JSON -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-compatible dict with ``kind`` and the dataclass fields.

        Returns
        -------
        dict
            E.g. ``{"kind": "Divisors", "name": "i_factor", "n": 64}``.
        """
        out: dict[str, Any] = {"kind": type(self).kind}
        for f in fields(self):
            out[f.name] = to_jsonable(getattr(self, f.name))
        return out

    def to_json(self) -> str:
        """Return ``json.dumps(self.to_dict())``.

        Returns
        -------
        str
            JSON text; ``Knob.from_json`` reads it back.
        """
        return json.dumps(self.to_dict())

    @staticmethod
    def from_json(data: str | Mapping[str, Any]) -> Knob:
        """Rebuild a knob from ``to_json()`` text or a ``to_dict()`` mapping.

        Parameters
        ----------
        data : str or Mapping
            JSON text or the parsed dict.

        Returns
        -------
        Knob
            An instance of the subclass named by ``kind``.

        Raises
        ------
        InvalidConfigError
            If ``kind`` names no knob class or the fields are invalid.
        """
        d = dict(json.loads(data) if isinstance(data, str) else data)
        kind = d.pop("kind", None)
        for sub in _all_subclasses(Knob):
            if getattr(sub, "kind", None) == kind:
                kwargs = {k: from_jsonable(v) for k, v in d.items()}
                try:
                    return sub(**kwargs)  # type: ignore[no-any-return]
                except TypeError as exc:
                    raise InvalidConfigError(f"bad fields for knob kind {kind!r}: {exc}") from None
        raise InvalidConfigError(f"unknown knob kind {kind!r}")
