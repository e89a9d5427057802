"""``Constraint``: a named predicate over configs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from autotile.errors import InvalidConfigError

__all__ = ["Constraint", "as_constraint"]


@dataclass(frozen=True)
class Constraint:
    """A named predicate that every valid config satisfies.

    Parameters
    ----------
    name : str
        Reported when the constraint is violated.
    fn : callable
        ``fn(config) -> bool`` where ``config`` is a ``dict`` from knob name
        to value. With ``vectorized=True``, ``fn(columns) -> bool array``
        where ``columns`` maps each knob name to a 1-D NumPy array of values
        (``int64`` for integer knobs and integer ``Choice`` knobs, ``bool`` for
        :class:`Boolean`, ``object`` arrays of tuples for :class:`Permutation`);
        such a constraint must also accept a single config dict (then the
        "columns" are scalars) and return a bool.
    vectorized : bool, default=False
        Whether ``fn`` works on columns; used to count big spaces fast.

    Notes
    -----
    Constraints are code and are not serialised: ``Space.to_json`` writes
    only their names and ``Space.from_json`` must be given them again.

    Examples
    --------
    >>> fits = Constraint("tile_fits", lambda c: c["i_factor"] * c["j_factor"] <= 256)
    """

    name: str
    fn: Callable[[Any], Any]
    vectorized: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidConfigError(f"constraint name must be a non-empty str, got {self.name!r}")
        if not callable(self.fn):
            raise InvalidConfigError(f"constraint fn must be callable, got fn={self.fn!r}")

    def __call__(self, config: Mapping[str, Any]) -> bool:
        """Return whether ``config`` satisfies the constraint."""
        return bool(self.fn(config))


def as_constraint(obj: Constraint | Callable[[Any], Any], position: int) -> Constraint:
    """Wrap a plain callable as a :class:`Constraint` named after the function.

    Parameters
    ----------
    obj : Constraint or callable
        The constraint.
    position : int
        Its position, used to name lambdas ``"constraint_<position>"``.

    Returns
    -------
    Constraint
        ``obj`` itself if it already is one.
    """
    if isinstance(obj, Constraint):
        return obj
    if not callable(obj):
        raise InvalidConfigError(f"constraints must be Constraint or callable, got {obj!r}")
    name = getattr(obj, "__name__", "")
    if not name or name == "<lambda>":
        name = f"constraint_{position}"
    return Constraint(name, obj)
