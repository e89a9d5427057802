"""The ``Permutation`` knob: all orderings of a tuple of names (e.g. loop orders)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from autotile.errors import InvalidConfigError
from autotile.space._knob import Knob, format_value

__all__ = ["Permutation", "order_crossover"]

#: Permutations of up to this many items check and rank values through a table of all
#: orderings (8! = 40,320 entries at most) instead of sorting each value.
_MAX_TABLE_ITEMS = 8


def order_crossover(
    a: tuple[Any, ...], b: tuple[Any, ...], rng: np.random.Generator
) -> tuple[Any, ...]:
    """Order crossover (OX) of two permutations of the same items.

    The child copies ``a[i:j]`` for random cut points ``i < j`` and fills the
    other positions, starting at ``j`` and wrapping around, with the missing
    items in the order they appear in ``b`` (read from position ``j`` on).

    Parameters
    ----------
    a, b : tuple
        Parents, permutations of the same items.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    tuple
        A permutation of the same items.

    References
    ----------
    Davis, "Applying adaptive algorithms to epistatic domains", IJCAI 1985.
    """
    n = len(a)
    if n < 2:
        return tuple(a)
    i, j = sorted(int(x) for x in rng.choice(n + 1, size=2, replace=False))
    child: list[Any] = [None] * n
    child[i:j] = a[i:j]
    kept = set(a[i:j])
    fill = [b[(j + t) % n] for t in range(n) if b[(j + t) % n] not in kept]
    for t, item in enumerate(fill):
        child[(j + t) % n] = item
    return tuple(child)


@dataclass(frozen=True)
class Permutation(Knob):
    """All orderings of ``items``; each value is a tuple of the items.

    Enumeration order is ``itertools.permutations(items)`` order, i.e. the
    lexicographic order of the index permutations; ``index`` and
    ``value_at`` rank and unrank arithmetically (no table). Encoded as the
    position of each item (``items[k]`` -> feature ``k``). Neighbours: all
    swaps of two adjacent items plus moving one item to another position.

    Parameters
    ----------
    name : str
        Knob name.
    items : tuple of str
        Distinct names, e.g. ``("io", "ii", "jo", "ji", "ko", "ki")``.

    Examples
    --------
    >>> Permutation("order", ("a", "b", "c")).values[:3]
    (('a', 'b', 'c'), ('a', 'c', 'b'), ('b', 'a', 'c'))
    """

    items: tuple[str, ...]

    kind: ClassVar[str] = "Permutation"

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.items, str) or not hasattr(self.items, "__iter__"):
            raise InvalidConfigError(f"items must be a tuple of str, got items={self.items!r}")
        items = tuple(self.items)
        if not items:
            raise InvalidConfigError(f"Permutation {self.name!r} needs at least one item")
        for it in items:
            if not isinstance(it, str) or not it or set(it) & set("=,() \t\n"):
                raise InvalidConfigError(
                    f"items must be non-empty str without '=, ()' or spaces, got item={it!r}"
                )
        if len(set(items)) != len(items):
            raise InvalidConfigError(f"items must be distinct, got items={items!r}")
        object.__setattr__(self, "items", items)

    @cached_property
    def _pos(self) -> dict[str, int]:
        return {it: k for k, it in enumerate(self.items)}

    @cached_property
    def values(self) -> tuple[tuple[str, ...], ...]:
        """All ``len(items)!`` orderings in ``itertools.permutations`` order.

        Raises
        ------
        InvalidConfigError
            If there are more than ``MAX_LISTED_VALUES`` orderings (13 items
            or more): :meth:`index` and :meth:`value_at` rank and unrank
            without listing them.
        """
        self._check_listable()
        return tuple(itertools.permutations(self.items))

    def __len__(self) -> int:
        return math.factorial(len(self.items))

    @cached_property
    def _small(self) -> bool:
        """Whether orderings are looked up in a table (up to 8 items: 40,320 orderings)."""
        return len(self.items) <= _MAX_TABLE_ITEMS

    def check(self, value: Any) -> str | None:
        """Return ``None`` if ``value`` is a tuple/list holding each item once."""
        if type(value) is tuple and self._small:
            try:
                if value in self._index_of:
                    return None  # a canonical ordering: the table of all orderings has it
            except TypeError:  # unhashable items: the checks below say what is wrong
                pass
        if not isinstance(value, (tuple, list)):
            return (
                f"{self.name} must be a tuple of {format_value(self.items)}, got "
                f"{type(value).__name__} {self.name}={value!r}"
            )
        if len(value) != len(self.items) or sorted(
            self._pos.get(v, -1) if isinstance(v, str) else -1 for v in value
        ) != list(range(len(self.items))):
            return (
                f"{self.name}={format_value(value)} is not a permutation of "
                f"{format_value(self.items)}"
            )
        return None

    def canonical(self, value: Any) -> Any:
        """Return ``tuple(value)``."""
        return tuple(value)

    def index(self, value: Any) -> int:
        """Return the lexicographic rank of ``value`` (Lehmer code)."""
        if type(value) is tuple and self._small:
            rank = self._index_of.get(value)
            if rank is not None:
                return rank
        perm = [self._pos[v] for v in self.validate(value)]
        n = len(perm)
        rank = 0
        for k in range(n):
            smaller = sum(1 for t in perm[k + 1 :] if t < perm[k])
            rank += smaller * math.factorial(n - 1 - k)
        return rank

    def value_at(self, index: int) -> Any:
        """Return the permutation of lexicographic rank ``index``."""
        index = int(index)
        rest = list(self.items)
        out = []
        for k in range(len(rest) - 1, -1, -1):
            q, index = divmod(index, math.factorial(k))
            out.append(rest.pop(q))
        return tuple(out)

    def parse_value(self, text: str) -> Any:
        """Parse ``"(a,b,c)"`` (spaces and missing parentheses allowed)."""
        t = text.strip()
        if t.startswith("(") and t.endswith(")"):
            t = t[1:-1]
        return self.validate(tuple(s.strip() for s in t.split(",")))

    @property
    def n_features(self) -> int:
        """``len(items)``."""
        return len(self.items)

    @property
    def feature_names(self) -> list[str]:
        """``["<name>:pos(<item>)", ...]``."""
        return [f"{self.name}:pos({it})" for it in self.items]

    def encode(self, value: Any) -> list[float]:
        """Return the position of each item of ``items`` in ``value``."""
        v = self.validate(value)
        pos = [0.0] * len(self.items)
        for p, it in enumerate(v):
            pos[self._pos[it]] = float(p)
        return pos

    @staticmethod
    def _move(value: tuple[str, ...], src: int, dst: int) -> tuple[str, ...]:
        lst = list(value)
        lst.insert(dst, lst.pop(src))
        return tuple(lst)

    def neighbours(self, value: Any) -> list[Any]:
        """Return adjacent swaps, then moves of one item to another position.

        Duplicates and ``value`` itself are dropped; for ``n`` items there are
        ``(n - 1) ** 2`` neighbours.
        """
        v = self.validate(value)
        n = len(v)
        out: list[tuple[str, ...]] = []
        seen = {v}
        for k in range(n - 1):
            w = v[:k] + (v[k + 1], v[k]) + v[k + 2 :]
            if w not in seen:
                seen.add(w)
                out.append(w)
        for src in range(n):
            for dst in range(n):
                if src != dst:
                    w = self._move(v, src, dst)
                    if w not in seen:
                        seen.add(w)
                        out.append(w)
        return out

    def mutate(self, value: Any, rng: np.random.Generator) -> Any:
        """Move one random item to another random position (a random neighbour move)."""
        v = self.validate(value)
        n = len(v)
        if n < 2:
            return v
        src = int(rng.integers(n))
        dst = int(rng.integers(n - 1))
        if dst >= src:
            dst += 1
        return self._move(v, src, dst)
