"""``Space``: knobs plus constraints, with a bijection onto ``range(size)``.

This module holds the core of :class:`Space`: counting, the bijection
between valid configs and ``0 .. size - 1``, validation, explicit spaces
and JSON. The search moves (``sample``, ``neighbours``, ``mutate``,
``crossover``) come from :class:`~autotile.space._moves.SpaceMoves` and the
cost-model features (``encode``) from
:class:`~autotile.space._encoding.SpaceEncoding`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import InvalidConfigError
from autotile.space._config import Config
from autotile.space._constraint import Constraint, as_constraint
from autotile.space._encoding import SpaceEncoding
from autotile.space._enumerate import INT64_LIMIT, valid_product_indices
from autotile.space._knob import Knob, as_int, format_value
from autotile.space._moves import SpaceMoves

__all__ = ["Space"]

_MAX_ENUMERATION = 1 << 27
_MAX_POSITION_TABLE = 1 << 16  # knobs up to this many values get a value -> position dict


class _Token:
    """Identity of a space, held by the configs it made (:meth:`Space._own`)."""

    __slots__ = ()


class Space(SpaceMoves, SpaceEncoding):
    """A search space: knobs, constraints and the valid configs they allow.

    Valid configs are numbered ``0 .. size - 1`` in mixed-radix order over
    the knobs in declaration order (last knob fastest), skipping invalid
    ones; ``config_at`` and ``index_of`` are the two directions of that
    bijection and ``iter(space)`` walks it. Without constraints ``size`` is
    the product of the knob sizes (no enumeration, any size). With
    constraints the product is enumerated once (vectorised constraints on
    NumPy columns, plain ones in Python) and the valid product indices are
    cached; this needs ``product_size <= 2**27``.

    Parameters
    ----------
    knobs : sequence of Knob
        Knobs with distinct names, in declaration order.
    constraints : sequence of Constraint or callable, default=()
        Predicates ``fn(config_dict) -> bool``; plain callables are named
        after the function (``constraint_<i>`` for lambdas).
    name : str, optional
        A label for reports.

    Raises
    ------
    InvalidConfigError
        If a knob is not a :class:`Knob` or two knobs share a name.

    Examples
    --------
    >>> from autotile.space import Boolean, Divisors
    >>> space = Space([Divisors("i_factor", 64), Boolean("unroll")])
    >>> len(space), space.config_at(3)
    (14, Config(i_factor=2, unroll=True))
    """

    def __init__(
        self,
        knobs: Sequence[Knob],
        constraints: Sequence[Constraint | Callable[[Any], Any]] = (),
        name: str | None = None,
    ) -> None:
        knobs = tuple(knobs)
        for k in knobs:
            if not isinstance(k, Knob):
                raise InvalidConfigError(f"knobs must be Knob instances, got {k!r}")
        names = [k.name for k in knobs]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise InvalidConfigError(f"knob names must be distinct, got duplicate {dup[0]!r}")
        self._knobs = knobs
        self._names = tuple(names)
        self._by_name = {k.name: k for k in knobs}
        self._constraints = tuple(as_constraint(c, i) for i, c in enumerate(constraints))
        self.name = name
        self._radices = [len(k) for k in knobs]
        self._strides = [math.prod(self._radices[i + 1 :]) for i in range(len(knobs))]
        self._product_size = math.prod(self._radices)
        self._valid: npt.NDArray[np.int64] | None = None
        self._explicit = False
        self._tables: dict[str, npt.NDArray[np.float64]] = {}
        # per knob: value -> position of its canonical values (small knobs), else None
        self._positions: list[dict[Any, int] | None] | None = None

    # -- basic properties -------------------------------------------------------------
    @property
    def knobs(self) -> tuple[Knob, ...]:
        """The knobs, in declaration order."""
        return self._knobs

    @property
    def names(self) -> tuple[str, ...]:
        """Knob names, in declaration order."""
        return self._names

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        """The constraints, wrapped as :class:`Constraint`."""
        return self._constraints

    @property
    def product_size(self) -> int:
        """Product of the knob sizes (valid or not)."""
        return self._product_size

    @property
    def is_explicit(self) -> bool:
        """Whether the valid set was given explicitly (:meth:`from_configs`)."""
        return self._explicit

    def __getitem__(self, name: str) -> Knob:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"unknown knob {name!r}; knobs: {', '.join(self._names)}") from None

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return (
            f"Space({label}knobs=[{', '.join(self._names)}], "
            f"n_constraints={len(self._constraints)}, product_size={self._product_size})"
        )

    # -- counting ---------------------------------------------------------------------
    def _valid_indices(self) -> npt.NDArray[np.int64] | None:
        """Sorted valid product indices, or ``None`` when every product index is valid."""
        if self._valid is None and self._constraints:
            if self._product_size > _MAX_ENUMERATION:
                raise InvalidConfigError(
                    f"counting a constrained space enumerates its product, which must be "
                    f"<= {_MAX_ENUMERATION}, got product_size={self._product_size}"
                )
            self._valid = valid_product_indices(self._knobs, self._constraints, self._product_size)
        return self._valid

    def valid_product_indices(self) -> npt.NDArray[np.int64] | None:
        """Sorted mixed-radix product indices of the valid configs.

        Valid config ``i`` is product index ``valid_product_indices()[i]``
        (digits: knob value positions, last knob fastest).

        Returns
        -------
        ndarray of shape (size,), int64, or None
            ``None`` when every product index is valid (no constraints).
            Shared with the space's cache: do not modify it.

        Raises
        ------
        InvalidConfigError
            If the space has constraints and ``product_size > 2**27``.
        """
        return self._valid_indices()

    @property
    def size(self) -> int:
        """The exact number of valid configs."""
        valid = self._valid_indices()
        return self._product_size if valid is None else int(valid.shape[0])

    def __len__(self) -> int:
        return self.size

    def clear_cache(self) -> None:
        """Drop the cached valid indices and encoding tables (explicit spaces keep theirs)."""
        if not self._explicit:
            self._valid = None
        self._tables.clear()

    # -- bijection --------------------------------------------------------------------
    def _decode(self, p: int) -> Config:
        items = []
        for k, knob in enumerate(self._knobs):
            d, p = divmod(p, self._strides[k])
            items.append((knob.name, knob.value_at(d)))
        return self._own(tuple(items))

    def _product_index(self, values: Sequence[Any]) -> int:
        """Product index of canonical (already checked) knob values."""
        pos = getattr(self, "_positions", None)  # spaces unpickled from before lack it
        if pos is None:  # a dict per knob of up to _MAX_POSITION_TABLE values (canonical
            # values are distinct by ==, so a lookup is knob.index without the re-check)
            pos = self._positions = [
                k._index_of if len(k) <= _MAX_POSITION_TABLE else None for k in self._knobs]
        p = 0
        for knob, table, v, s in zip(self._knobs, pos, values, self._strides):
            p += (table[v] if table is not None else knob.index(v)) * s
        return p

    def config_at(self, index: int) -> Config:
        """Return the valid config number ``index``.

        Parameters
        ----------
        index : int
            ``0 <= index < size``; a Python or NumPy integer (not a bool).

        Returns
        -------
        Config
            The config, keys in knob order.

        Raises
        ------
        TypeError
            If ``index`` is not an integer (e.g. ``1.5``, ``"3"``, ``True``).
        IndexError
            If ``index`` is out of range.
        """
        i = as_int(index)
        if i is None:
            raise TypeError(f"config index must be an int, got index={index!r} "
                            f"({type(index).__name__})")
        size = self.size
        if not 0 <= i < size:
            raise IndexError(f"config index must satisfy 0 <= index < {size}, got index={i}")
        valid = self._valid_indices()
        return self._decode(i if valid is None else int(valid[i]))

    def index_of(self, config: Mapping[str, Any]) -> int:
        """Return the number of a valid config (inverse of :meth:`config_at`).

        Parameters
        ----------
        config : Mapping
            A valid config.

        Returns
        -------
        int
            ``0 <= index < size``.

        Raises
        ------
        InvalidConfigError
            If ``config`` is not valid in this space.
        """
        values, _ = self._check_knobs(config)
        if values is None:
            self.validate(config)  # raises, naming every problem
        assert values is not None
        p = self._product_index(values)
        valid = self._valid_indices()
        if valid is None:
            return p
        i = int(np.searchsorted(valid, p))
        if i < valid.shape[0] and int(valid[i]) == p:
            return i
        self.validate(config)  # raises: a violated constraint, or not a member
        raise AssertionError("unreachable: validate accepted a config outside the space")

    def __iter__(self) -> Iterator[Config]:
        valid = self._valid_indices()
        if valid is None:
            for p in range(self._product_size):
                yield self._decode(p)
        else:
            for p in valid.tolist():
                yield self._decode(p)

    # -- validation -------------------------------------------------------------------
    def _own(self, items: tuple[tuple[str, Any], ...]) -> Config:
        """A config of canonical member values in knob order, marked as checked by this space.

        :meth:`_check_knobs` takes the values of a marked config as they are (the
        searchers pass the configs a space made back to it many times per trial).
        The mark is not pickled or copied: a config from elsewhere is checked.
        """
        token = self.__dict__.get("_token")
        if token is None:  # spaces unpickled from before lack it
            token = self._token = _Token()
        cfg = Config._trusted(items)
        object.__setattr__(cfg, "_checked_by", token)
        return cfg

    def _check_knobs(self, mapping: Any) -> tuple[list[Any] | None, list[str]]:
        """Check names and knob membership; return canonical values and problems."""
        token = getattr(mapping, "_checked_by", None)
        if token is not None and token is self.__dict__.get("_token"):
            return [v for _, v in mapping._items], []
        if not isinstance(mapping, Mapping):
            return None, [
                f"config must be a mapping from knob name to value, got "
                f"{type(mapping).__name__} {mapping!r}"
            ]
        problems = []
        for key in mapping:
            if key not in self._by_name:
                problems.append(f"unknown knob {key!r} (knobs: {', '.join(self._names)})")
        values = []
        for knob in self._knobs:
            if knob.name not in mapping:
                problems.append(f"missing knob {knob.name!r}")
                continue
            v = mapping[knob.name]
            msg = knob.check(v)
            if msg is not None:
                problems.append(msg)
            else:
                values.append(knob.canonical(v))
        return (None if problems else values), problems

    def _satisfied(self, values: Sequence[Any]) -> list[str]:
        """Names of the constraints (or membership) that canonical ``values`` violate."""
        if self._explicit:
            p = self._product_index(values)
            valid = self._valid
            assert valid is not None
            i = int(np.searchsorted(valid, p))
            ok = i < valid.shape[0] and int(valid[i]) == p
            return [] if ok else ["<member>"]
        if not self._constraints:
            return []
        d = dict(zip(self._names, values))
        return [c.name for c in self._constraints if not c(d)]

    def violations(self, mapping: Any) -> list[str]:
        """List every reason why ``mapping`` is not a valid config (empty if valid).

        Parameters
        ----------
        mapping : Mapping
            Knob name -> value.

        Returns
        -------
        list of str
            Messages naming the rule and the value, e.g.
            ``"i_factor=5 is not a divisor of 64"``.
        """
        values, problems = self._check_knobs(mapping)
        if values is None:
            return problems
        bad = self._satisfied(values)
        text = ", ".join(f"{n}={format_value(v)}" for n, v in zip(self._names, values))
        out = []
        for name in bad:
            if name == "<member>":
                out.append(f"config {text} is not one of the {self.size} configs of this space")
            else:
                out.append(f"constraint {name!r} is violated by {text}")
        return out

    def is_valid(self, mapping: Any) -> bool:
        """Return whether ``mapping`` is a valid config of this space.

        Parameters
        ----------
        mapping : Mapping
            Knob name -> value.

        Returns
        -------
        bool
            ``not self.violations(mapping)``.
        """
        values, _ = self._check_knobs(mapping)
        return values is not None and not self._satisfied(values)

    def __contains__(self, mapping: object) -> bool:
        return self.is_valid(mapping)

    def validate(self, mapping: Any) -> Config:
        """Turn a mapping into a validated :class:`Config` in knob order.

        Parameters
        ----------
        mapping : Mapping
            Knob name -> value; lists are accepted for permutations and NumPy
            scalars for numbers.

        Returns
        -------
        Config
            Canonical config (Python scalars, tuples).

        Raises
        ------
        InvalidConfigError
            Naming every problem: unknown or missing knob, a value outside its
            knob (with the value), a violated constraint (by name).
        """
        values, problems = self._check_knobs(mapping)
        if values is not None:
            problems = self.violations(mapping) if self._satisfied(values) else []
        if problems:
            raise InvalidConfigError("; ".join(problems))
        assert values is not None
        return self._own(tuple(zip(self._names, values)))

    def parse(self, text: str) -> Config:
        """Parse ``str(config)`` back into a validated config.

        Parameters
        ----------
        text : str
            ``"name=value, name=value, ..."`` with the knobs in any order.

        Returns
        -------
        Config
            The validated config.

        Raises
        ------
        InvalidConfigError
            If the text is malformed or the config invalid.
        """
        parts: list[str] = []
        depth, cur = 0, list[str]()
        for ch in text:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append("".join(cur))
                cur = []
            else:
                cur.append(ch)
        parts.append("".join(cur))
        raw: dict[str, Any] = {}
        for part in parts:
            if not part.strip():
                continue
            key, sep, val = part.partition("=")
            key = key.strip()
            if not sep:
                raise InvalidConfigError(f"expected 'name=value', got {part.strip()!r}")
            if key not in self._by_name:
                raise InvalidConfigError(f"unknown knob {key!r} (knobs: {', '.join(self._names)})")
            raw[key] = self._by_name[key].parse_value(val)
        return self.validate(raw)

    # -- explicit spaces and JSON -----------------------------------------------------
    @classmethod
    def from_configs(
        cls, knobs: Sequence[Knob], configs: Iterable[Mapping[str, Any]], name: str | None = None
    ) -> Space:
        """Build a space whose valid configs are exactly ``configs``.

        Used to replay tuning caches (e.g. Kernel Tuner's JSON cache files,
        where the valid set is the set of keys). Duplicates are dropped;
        size, bijection (in mixed-radix order), sampling, neighbours,
        mutation and crossover all stay within the listed configs.

        Parameters
        ----------
        knobs : sequence of Knob
            The knobs; every config must have a value of each.
        configs : iterable of Mapping
            The allowed configs.
        name : str, optional
            A label.

        Returns
        -------
        Space
            The explicit space.

        Raises
        ------
        InvalidConfigError
            If a config is not in the knobs, or ``product_size >= 2**62``.
        """
        space = cls(knobs, name=name)
        if space._product_size >= INT64_LIMIT:
            raise InvalidConfigError(
                f"explicit spaces need product_size < 2**62, got {space._product_size}"
            )
        idx = []
        for c in configs:
            values, problems = space._check_knobs(c)
            if values is None:
                raise InvalidConfigError("; ".join(problems))
            idx.append(space._product_index(values))
        space._valid = np.unique(np.asarray(idx, dtype=np.int64))
        space._explicit = True
        return space

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-compatible dict: name, knobs, constraint names, members.

        Returns
        -------
        dict
            ``members`` lists the product indices of an explicit space
            (``None`` otherwise). Constraints are code: only names are written.
        """
        return {
            "name": self.name,
            "knobs": [k.to_dict() for k in self._knobs],
            "constraints": [c.name for c in self._constraints],
            "members": self._valid.tolist() if self._explicit and self._valid is not None else None,
        }

    def to_json(self) -> str:
        """Return ``json.dumps(self.to_dict())``.

        Returns
        -------
        str
            JSON text for :meth:`from_json`.
        """
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(
        cls,
        data: str | Mapping[str, Any],
        constraints: Sequence[Constraint | Callable[[Any], Any]] = (),
    ) -> Space:
        """Rebuild a space from :meth:`to_json` output.

        Parameters
        ----------
        data : str or Mapping
            JSON text or its parsed dict.
        constraints : sequence of Constraint or callable, default=()
            The constraints, which are not serialised; their names must
            match the names that were written.

        Returns
        -------
        Space
            An equivalent space.

        Raises
        ------
        InvalidConfigError
            If the constraint names differ from the written ones.
        """
        d = json.loads(data) if isinstance(data, str) else dict(data)
        knobs = [Knob.from_json(k) for k in d["knobs"]]
        if d.get("members") is not None:
            space = cls(knobs, name=d.get("name"))
            space._valid = np.asarray(d["members"], dtype=np.int64)
            space._explicit = True
            return space
        space = cls(knobs, constraints, name=d.get("name"))
        written = list(d.get("constraints", []))
        given = [c.name for c in space._constraints]
        if written != given:
            raise InvalidConfigError(
                f"Space.from_json needs the constraints {written} (code is not serialised), "
                f"got {given}"
            )
        return space
