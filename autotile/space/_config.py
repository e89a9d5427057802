"""``Config``: one value per knob, immutable and hashable."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from autotile.errors import InvalidConfigError
from autotile.space._knob import format_value, from_jsonable, to_jsonable

if TYPE_CHECKING:
    from autotile.space._space import Space

__all__ = ["Config"]


def _freeze(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return from_jsonable(value)


@dataclass(frozen=True, init=False, eq=False)
class Config(Mapping[str, Any]):
    """An immutable, hashable mapping from knob name to value.

    Keys keep their insertion order (a :class:`Space` builds configs in knob
    order), which fixes the text form ``str(config)``, e.g.
    ``"i_factor=16, j_factor=16, k_factor=4, order=(io,jo,ko,ki,ii,ji)"``.
    Equality and hashing ignore the key order. Lists become tuples and
    NumPy scalars become Python scalars. A bare ``Config`` is not checked
    against any space: use :meth:`Space.validate` for that.

    Parameters
    ----------
    mapping : Mapping or iterable of (str, value) pairs, optional
        Initial items.
    **values
        More items, as keyword arguments.

    Raises
    ------
    InvalidConfigError
        If ``mapping`` is neither a mapping nor an iterable of pairs (e.g.
        the text ``"a=1"``), a knob name is not a str or a value is not
        hashable.

    Examples
    --------
    >>> cfg = Config({"i_factor": 16, "order": ["io", "ii"]})
    >>> str(cfg)
    'i_factor=16, order=(io,ii)'
    >>> cfg.replace(i_factor=8)["i_factor"]
    8
    """

    _items: tuple[tuple[str, Any], ...]

    def __init__(
        self, mapping: Mapping[str, Any] | tuple[tuple[str, Any], ...] = (), /, **values: Any
    ) -> None:
        if isinstance(mapping, Mapping):
            items = dict(mapping.items())
        else:
            try:
                if isinstance(mapping, (str, bytes)):
                    raise TypeError
                items = dict(mapping)
            except (TypeError, ValueError):
                raise InvalidConfigError(
                    f"Config takes a mapping of knob name to value or (name, value) pairs, got "
                    f"{type(mapping).__name__} {mapping!r}; e.g. Config({{'BLOCK': 64}}) or "
                    f"Config(BLOCK=64) (a config's text form is not parsed)") from None
        items.update(values)
        for k in items:
            if not isinstance(k, str):
                raise InvalidConfigError(f"knob names must be str, got {k!r}")
        frozen = tuple((k, _freeze(v)) for k, v in items.items())
        try:
            hash(frozen)
        except TypeError:
            raise InvalidConfigError(f"config values must be hashable, got {items!r}") from None
        object.__setattr__(self, "_items", frozen)
        object.__setattr__(self, "_dict", dict(frozen))

    @classmethod
    def _trusted(cls, items: tuple[tuple[str, Any], ...]) -> Config:
        """Build from canonical, validated items without copying checks."""
        obj = object.__new__(cls)
        object.__setattr__(obj, "_items", items)
        object.__setattr__(obj, "_dict", dict(items))
        return obj

    # -- Mapping ----------------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        try:
            return self._dict[name]  # type: ignore[attr-defined]
        except KeyError:
            raise KeyError(f"config has no knob {name!r}; knobs: {', '.join(self)}") from None

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._dict  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Config):
            return bool(self._dict == other._dict)  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._items))

    def __getstate__(self) -> tuple[tuple[str, Any], ...]:
        return self._items

    def __setstate__(self, state: tuple[tuple[str, Any], ...]) -> None:
        object.__setattr__(self, "_items", state)
        object.__setattr__(self, "_dict", dict(state))

    # -- text -------------------------------------------------------------------------
    def __str__(self) -> str:
        return ", ".join(f"{k}={format_value(v)}" for k, v in self._items)

    def __repr__(self) -> str:
        return f"Config({self})"

    @classmethod
    def from_str(cls, space: Space, text: str) -> Config:
        """Parse the text form ``str(config)`` against ``space``.

        Parameters
        ----------
        space : Space
            The space whose knobs name and parse the values.
        text : str
            E.g. ``"i_factor=16, j_factor=16, k_factor=4, order=(io,jo,ko,ki,ii,ji)"``.

        Returns
        -------
        Config
            The validated config; same as ``space.parse(text)``.

        Raises
        ------
        InvalidConfigError
            If the text is malformed or the config is invalid in ``space``.
        """
        return space.parse(text)

    # -- conversions ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return a plain ``dict`` copy (permutation values stay tuples).

        Returns
        -------
        dict
            Knob name -> value, in knob order.
        """
        return dict(self._items)

    def replace(self, **changes: Any) -> Config:
        """Return a copy with some values changed (not validated against a space).

        Parameters
        ----------
        **changes
            New values of existing knobs.

        Returns
        -------
        Config
            The new config, same key order.

        Raises
        ------
        InvalidConfigError
            If a key is not a knob of this config.
        """
        unknown = [k for k in changes if k not in self._dict]  # type: ignore[attr-defined]
        if unknown:
            raise InvalidConfigError(
                f"unknown knob {unknown[0]!r} in replace(); knobs: {', '.join(self)}"
            )
        return Config(tuple((k, changes.get(k, v)) for k, v in self._items))

    def to_json(self) -> str:
        """Return a JSON object text, tuples written as lists.

        Returns
        -------
        str
            E.g. ``'{"i_factor": 16, "order": ["io", "ii"]}'``.
        """
        return json.dumps({k: to_jsonable(v) for k, v in self._items})

    @classmethod
    def from_json(cls, data: str | Mapping[str, Any]) -> Config:
        """Inverse of :meth:`to_json` (lists become tuples again).

        Parameters
        ----------
        data : str or Mapping
            JSON text or its parsed dict.

        Returns
        -------
        Config
            Equal to the config that was written.
        """
        d = json.loads(data) if isinstance(data, str) else data
        if not isinstance(d, Mapping):
            raise InvalidConfigError(f"config JSON must be an object, got {d!r}")
        return cls(d)
