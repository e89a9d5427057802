"""How a config of an autotile ``Space`` travels through Optuna's parameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.trial import BaseTrial, FrozenTrial

from autotile.errors import InvalidConfigError
from autotile.space import Choice, Config, IntRange, Knob, Permutation, Space

__all__ = [
    "ENCODINGS",
    "Encoding",
    "knob_distribution",
    "space_distributions",
    "param_of",
    "value_of",
    "suggest_config",
    "config_from_params",
    "trial_config_text",
    "CONFIG_ATTR",
    "MAX_CATEGORICAL_ORDERS",
]

Encoding = Literal["categorical", "index"]
#: The ways a knob can be suggested (see :func:`suggest_config`).
ENCODINGS: tuple[str, ...] = ("categorical", "index")
#: A permutation with more orders than this is suggested by its rank, not as categorical
#: choices: Optuna stores a categorical distribution, every choice, with every trial's
#: parameter (15 KB per trial for the 720 loop orders of the GEMM space), which makes
#: storages and optuna-dashboard slow on long studies.
MAX_CATEGORICAL_ORDERS = 24

_PLAIN = (bool, int, float, str, type(None))


def _perm_text(value: tuple[str, ...]) -> str:
    return ",".join(value)


def _choice_param(knob: Knob, value: Any) -> Any:
    """The categorical choice that stands for ``value``."""
    if isinstance(knob, Permutation):
        return _perm_text(value)
    if isinstance(knob, Choice) and not all(isinstance(v, _PLAIN) for v in knob.values):
        return knob.format_value(value)
    return value


def knob_distribution(knob: Knob, encoding: Encoding = "categorical") -> BaseDistribution:
    """Return the Optuna distribution a knob is suggested with.

    Parameters
    ----------
    knob : Knob
        The knob.
    encoding : {"categorical", "index"}, default="categorical"
        ``"categorical"``: an :class:`~optuna.distributions.IntRange` knob is an
        :class:`~optuna.distributions.IntDistribution` over its values, every
        other knob a :class:`~optuna.distributions.CategoricalDistribution` of
        its values (a permutation as its items joined by commas, e.g.
        ``"io,jo,ko,ii,ki,ji"``; a :class:`~autotile.space.Choice` holding
        tuples as the values' text), except that a permutation with more than
        :data:`MAX_CATEGORICAL_ORDERS` orders (five or more items) is an
        ``IntDistribution(0, n! - 1)`` over its lexicographic rank, so that a
        stored trial holds one number rather than all ``n!`` choices.
        ``"index"``: every knob is an
        ``IntDistribution(0, len(knob) - 1)`` over the position of its value
        (an ``IntRange`` stays over its values); for samplers that only model
        numbers (CMA-ES, QMC).

    Returns
    -------
    optuna.distributions.BaseDistribution
        The distribution.

    Raises
    ------
    ValueError
        If ``encoding`` is unknown.
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS}, got encoding={encoding!r}")
    if isinstance(knob, IntRange):
        return IntDistribution(knob.low, knob.high, step=knob.step)
    if encoding == "index" or (isinstance(knob, Permutation)
                               and len(knob) > MAX_CATEGORICAL_ORDERS):
        return IntDistribution(0, len(knob) - 1)
    return CategoricalDistribution([_choice_param(knob, v) for v in knob.values])


def space_distributions(
    space: Space, encoding: Encoding = "categorical"
) -> dict[str, BaseDistribution]:
    """Return ``{knob name: knob_distribution(knob, encoding)}`` in knob order.

    Parameters
    ----------
    space : Space
        The space.
    encoding : {"categorical", "index"}, default="categorical"
        See :func:`knob_distribution`.

    Returns
    -------
    dict of str to optuna.distributions.BaseDistribution
        One distribution per knob.
    """
    return {k.name: knob_distribution(k, encoding) for k in space.knobs}


def param_of(knob: Knob, value: Any, distribution: BaseDistribution) -> Any:
    """Return the parameter value that stands for a knob value in ``distribution``.

    Parameters
    ----------
    knob : Knob
        The knob.
    value : Any
        A value of the knob.
    distribution : optuna.distributions.BaseDistribution
        A distribution made by :func:`knob_distribution` (either encoding).

    Returns
    -------
    Any
        The choice (categorical), the value (``IntRange``) or the index.
    """
    if isinstance(distribution, CategoricalDistribution):
        return _choice_param(knob, value)
    if isinstance(knob, IntRange):
        return int(value)
    return knob.index(value)


def value_of(knob: Knob, param: Any, distribution: BaseDistribution) -> Any:
    """Inverse of :func:`param_of`: the knob value a parameter stands for.

    Parameters
    ----------
    knob : Knob
        The knob.
    param : Any
        The parameter value Optuna suggested.
    distribution : optuna.distributions.BaseDistribution
        Its distribution.

    Returns
    -------
    Any
        The knob value (not yet checked against the space's constraints).

    Raises
    ------
    InvalidConfigError
        If ``param`` stands for no value of the knob.
    """
    if isinstance(distribution, CategoricalDistribution):
        if isinstance(knob, Permutation) or (
            isinstance(knob, Choice) and not all(isinstance(v, _PLAIN) for v in knob.values)
        ):
            return knob.parse_value(str(param))
        return param
    if isinstance(knob, IntRange):
        return int(param)
    i = int(param)
    if not 0 <= i < len(knob):
        raise InvalidConfigError(
            f"index of knob {knob.name!r} must satisfy 0 <= index < {len(knob)}, got {i}"
        )
    return knob.value_at(i)


def suggest_config(
    trial: BaseTrial, space: Space, encoding: Encoding = "categorical", *, validate: bool = True
) -> Config | dict[str, Any]:
    """Suggest one config of ``space`` in an Optuna trial, one parameter per knob.

    Every knob becomes one Optuna parameter named after it, with the
    distribution of :func:`knob_distribution`. With an autotile searcher the
    whole config was chosen when the trial started and each suggestion just
    returns its part; with Optuna's own samplers (TPE, CMA-ES, ...) each
    knob is sampled by the sampler, so the combination may violate the
    space's constraints.

    Parameters
    ----------
    trial : optuna.trial.BaseTrial
        The trial (``optuna.trial.Trial`` or ``FixedTrial``).
    space : Space
        The space.
    encoding : {"categorical", "index"}, default="categorical"
        See :func:`knob_distribution`.
    validate : bool, default=True
        Return a validated :class:`~autotile.space.Config` (raising if the
        sampler combined values the constraints forbid). With ``False`` the
        raw ``{knob: value}`` dict is returned, for the caller to check.

    Returns
    -------
    Config or dict
        The config.

    Raises
    ------
    InvalidConfigError
        If ``validate`` and the suggested values violate the space's
        constraints (the message names every violated rule).

    Examples
    --------
    >>> import optuna
    >>> from autotile.space import gemm_space
    >>> def objective(trial):
    ...     cfg = suggest_config(trial, gemm_space(8))
    ...     return cfg["i_factor"] * cfg["j_factor"]
    """
    raw: dict[str, Any] = {}
    for knob in space.knobs:
        dist = knob_distribution(knob, encoding)
        param: Any
        if isinstance(dist, CategoricalDistribution):
            param = trial.suggest_categorical(knob.name, dist.choices)
        else:
            assert isinstance(dist, IntDistribution)
            param = trial.suggest_int(knob.name, dist.low, dist.high, step=dist.step)
        raw[knob.name] = value_of(knob, param, dist)
    return space.validate(raw) if validate else raw


def config_from_params(
    space: Space, params: Mapping[str, Any], distributions: Mapping[str, BaseDistribution]
) -> Config | None:
    """Rebuild the config of a trial from its Optuna parameters.

    Parameters
    ----------
    space : Space
        The space.
    params : Mapping
        ``FrozenTrial.params``.
    distributions : Mapping
        ``FrozenTrial.distributions``.

    Returns
    -------
    Config or None
        The validated config, or ``None`` if a knob is missing or the values
        are not a valid config.
    """
    raw = {}
    for knob in space.knobs:
        if knob.name not in params:
            return None
        try:
            raw[knob.name] = value_of(knob, params[knob.name], distributions[knob.name])
        except (InvalidConfigError, KeyError, ValueError, TypeError):
            return None
    if not space.is_valid(raw):
        return None
    return space.validate(raw)


def trial_config_text(trial: FrozenTrial) -> str | None:
    """The config text a trial records, if any (system or user attribute)."""
    text = trial.system_attrs.get(CONFIG_ATTR)
    if text is None:
        text = trial.user_attrs.get("config")
    return None if text is None else str(text)


#: System attribute where autotile searchers store the config they chose for a trial.
CONFIG_ATTR = "autotile:config"
