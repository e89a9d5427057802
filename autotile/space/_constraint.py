"""``Constraint``: a named predicate over configs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import ConstraintError, InvalidConfigError
from autotile.space._knob import format_value

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
        to value; it must return a ``bool`` (or ``numpy.bool_``): ``None``,
        ints and other values raise :class:`~autotile.errors.ConstraintError`,
        as does an exception inside ``fn`` (chained). With ``vectorized=True``,
        ``fn(columns) -> bool array`` where ``columns`` maps each knob name to
        a 1-D NumPy array of values (``int64`` for integer knobs and integer
        ``Choice`` knobs, ``bool`` for :class:`Boolean`, ``object`` arrays of
        tuples for :class:`Permutation`) and returns a bool array of the
        columns' length (or one bool); such a constraint must also accept a
        single config dict (then the "columns" are scalars) and return a bool.
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
        """Return whether ``config`` satisfies the constraint.

        Parameters
        ----------
        config : Mapping
            Knob name -> value.

        Returns
        -------
        bool
            ``fn(config)``, which must be a ``bool`` or ``numpy.bool_``.

        Raises
        ------
        ConstraintError
            If ``fn`` raises (chained) or returns anything else (``None``,
            an int, a string), naming the constraint and the config.
        """
        try:
            out = self.fn(config)
        except Exception as exc:
            raise ConstraintError(
                f"constraint {self.name!r} raised {type(exc).__name__}: {exc} on config "
                f"{_config_text(config)}") from exc
        if isinstance(out, (bool, np.bool_)):
            return bool(out)
        raise ConstraintError(
            f"constraint {self.name!r} must return a bool, got {type(out).__name__} "
            f"{_short(out)} for config {_config_text(config)}")

    def evaluate_columns(self, columns: Mapping[str, Any], n: int) -> npt.NDArray[np.bool_]:
        """Evaluate a vectorized constraint on columns of ``n`` configs.

        Parameters
        ----------
        columns : Mapping
            Knob name -> 1-D array of ``n`` values.
        n : int
            Number of configs.

        Returns
        -------
        ndarray of shape (n,), dtype bool
            Whether each config satisfies the constraint.

        Raises
        ------
        ConstraintError
            If ``fn`` raises (chained) or returns something other than a bool
            array of shape ``(n,)`` or a bool.
        """
        try:
            out = self.fn(columns)
        except Exception as exc:
            raise ConstraintError(
                f"vectorized constraint {self.name!r} raised {type(exc).__name__}: {exc} on "
                f"the columns of {n} configs") from exc
        arr = np.asarray(out)
        if arr.dtype != np.bool_ or arr.shape not in ((), (n,)):
            got = (f"an {arr.dtype} array of shape {arr.shape}" if isinstance(out, np.ndarray)
                   else f"{type(out).__name__} {_short(out)}")
            raise ConstraintError(
                f"vectorized constraint {self.name!r} must return bools (a bool array of shape "
                f"({n},) or a bool), got {got}")
        return np.broadcast_to(arr, (n,))


def _config_text(config: Any) -> str:
    if isinstance(config, Mapping):
        return ", ".join(f"{k}={format_value(v)}" for k, v in config.items())
    return _short(config)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
