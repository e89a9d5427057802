"""Knob declarations of the kernel library: choices per knob plus named constraints.

A tuning layer reads a :class:`KernelKnobs` to build its search space; it does
not import the kernel module's internals. The declarations are deliberately
plain (a dict of tuples and a tuple of named predicates) so that a later
``autotile.space`` converter can turn them into spaces without this package
depending on ``autotile.space``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ShapeConstraint", "KernelKnobs"]

#: ``predicate(config, shape) -> bool``; ``config`` maps knob names to values,
#: ``shape`` maps problem-size names (``"M"``, ``"N"``, ...) to ints.
Predicate = Callable[[Mapping[str, Any], Mapping[str, int]], bool]


@dataclass(frozen=True)
class ShapeConstraint:
    """A named rule that a config must satisfy for a given problem shape.

    Parameters
    ----------
    name : str
        Short identifier, e.g. ``"block_n_le_block_m"``.
    predicate : callable
        ``predicate(config, shape) -> bool``. ``config`` maps knob names to
        values; ``shape`` maps problem-size names (``"M"``, ``"N"``, ``"K"``,
        ``"n_cols"``, ...) to ints. Returns True when the config is allowed.
    doc : str, default=""
        The rule in words, e.g. ``"BLOCK_N <= BLOCK_M"``.
    """

    name: str
    predicate: Predicate = field(compare=False)
    doc: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a ShapeConstraint needs a non-empty name, got name=''")
        if not callable(self.predicate):
            raise TypeError(
                f"ShapeConstraint.predicate must be callable, got {type(self.predicate).__name__}"
            )

    def __call__(self, config: Mapping[str, Any], shape: Mapping[str, int]) -> bool:
        """Return True when ``config`` satisfies this rule for ``shape``."""
        return bool(self.predicate(config, shape))


@dataclass(frozen=True, eq=False)
class KernelKnobs:
    """The tunable knobs of one kernel: choices per knob and the constraints.

    Parameters
    ----------
    kernel : object
        The ``@jit`` kernel the knobs belong to.
    knobs : dict of str to tuple
        Knob name -> allowed values, in increasing order for numeric knobs,
        e.g. ``{"BLOCK_M": (16, 32, 64), "num_warps": (2, 4, 8)}``. Knobs that
        are kernel meta-parameters are spelled as in the kernel signature;
        ``num_warps`` and ``num_stages`` are launch options as in Triton.
    constraints : tuple of ShapeConstraint, default=()
        Rules over a config and a problem shape.
    shape_names : tuple of str, default=()
        The problem-size names the constraints read, e.g. ``("M", "N", "K")``.
    canonical : callable, optional
        ``canonical(config, shape) -> dict``: the config the space holds for
        one that launches the same program order as it (e.g. the matmul's
        ``GROUP_M`` above the tile rows, which the kernel clamps). Measurers
        score and launch that config instead of refusing the one given
        (:meth:`canonical_config`). None: every config is its own.

    Raises
    ------
    ValueError
        If a knob has no choices or two constraints share a name.

    Examples
    --------
    >>> knobs = KernelKnobs(kernel=None, knobs={"BLOCK": (64, 128)},
    ...                     constraints=(ShapeConstraint("fits", lambda c, s: c["BLOCK"] <= 128),))
    >>> knobs.is_valid({"BLOCK": 64}, {})
    True
    """

    kernel: Any
    knobs: Mapping[str, tuple[Any, ...]]
    constraints: tuple[ShapeConstraint, ...] = ()
    shape_names: tuple[str, ...] = ()
    canonical: Callable[[Mapping[str, Any], Mapping[str, int]], dict[str, Any]] | None = \
        field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.canonical is not None and not callable(self.canonical):
            raise TypeError(f"KernelKnobs.canonical must be callable or None, got "
                            f"{type(self.canonical).__name__}")
        frozen = {str(k): tuple(v) for k, v in dict(self.knobs).items()}
        for name, choices in frozen.items():
            if len(choices) == 0:
                raise ValueError(f"knob {name!r} must have at least one choice, got ()")
        object.__setattr__(self, "knobs", frozen)
        object.__setattr__(self, "constraints", tuple(self.constraints))
        object.__setattr__(self, "shape_names", tuple(self.shape_names))
        names = [c.name for c in self.constraints]
        if len(set(names)) != len(names):
            raise ValueError(f"constraint names must be unique, got {names}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KernelKnobs):
            return NotImplemented
        return (
            self.kernel is other.kernel
            and dict(self.knobs) == dict(other.knobs)
            and self.constraints == other.constraints
            and self.shape_names == other.shape_names
        )

    def __hash__(self) -> int:
        return hash(
            (id(self.kernel), tuple(self.knobs.items()), self.constraints, self.shape_names)
        )

    @property
    def names(self) -> tuple[str, ...]:
        """Knob names in declaration order."""
        return tuple(self.knobs)

    @property
    def n_configs(self) -> int:
        """Size of the unconstrained cross product of the knob choices."""
        n = 1
        for choices in self.knobs.values():
            n *= len(choices)
        return n

    def violated(self, config: Mapping[str, Any], shape: Mapping[str, int]) -> tuple[str, ...]:
        """Names of the rules ``config`` breaks for ``shape``.

        Parameters
        ----------
        config : mapping of str to value
            One value per knob.
        shape : mapping of str to int
            Problem sizes, e.g. ``{"M": 512, "N": 512, "K": 512}``.

        Returns
        -------
        tuple of str
            ``"choice:<knob>"`` for a missing or unlisted knob value, then the
            names of the failing constraints, in declaration order.
        """
        bad = [
            f"choice:{name}"
            for name, choices in self.knobs.items()
            if name not in config or config[name] not in choices
        ]
        if bad:
            return tuple(bad)
        return tuple(c.name for c in self.constraints if not c(config, shape))

    def canonical_config(self, config: Mapping[str, Any], shape: Mapping[str, int]
                         ) -> dict[str, Any]:
        """The equivalent config the space holds (``canonical``), as a new dict.

        Parameters
        ----------
        config : mapping of str to value
            One value per knob.
        shape : mapping of str to int
            Problem sizes.

        Returns
        -------
        dict
            ``dict(config)`` when the knobs have no ``canonical`` rule.
        """
        return dict(config) if self.canonical is None else dict(self.canonical(config, shape))

    def is_valid(self, config: Mapping[str, Any], shape: Mapping[str, int]) -> bool:
        """Return True when ``config`` uses listed values and breaks no constraint."""
        return not self.violated(config, shape)
