"""``make_searcher``: build a searcher (autotile's or Optuna's) by name."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import warnings
from collections.abc import Mapping
from typing import Any

import optuna
from optuna.samplers import BaseSampler

from autotile.search._params import Encoding
from autotile.search._study_args import check_seed
from autotile.space import Space

__all__ = ["SEARCHERS", "DEFAULT_SEARCHER", "make_searcher", "build_searcher",
           "check_searcher_options", "encoding_for"]

#: Searcher names accepted by :func:`make_searcher` (aliases: ``"xgb"`` for
#: ``"model"``, ``"evo"`` for ``"evolutionary"``).
SEARCHERS: tuple[str, ...] = (
    "grid", "random", "model", "evolutionary", "bandit", "tpe", "cmaes", "gp", "nsga2", "qmc",
)
#: The searcher recommended when nothing is known about the space: the AUC bandit over
#: model-guided, Parzen and random proposals (:class:`autotile.search.BanditSearcher`).
DEFAULT_SEARCHER = "bandit"
# autotile's own searchers: name -> (module, class), imported on first use
_AUTOTILE = {
    "grid": ("autotile.search._grid", "GridSearcher"),
    "random": ("autotile.search._random", "RandomSearcher"),
    "model": ("autotile.search._model_guided", "ModelGuidedSearcher"),
    "evolutionary": ("autotile.search._evolutionary", "EvolutionarySearcher"),
    "bandit": ("autotile.search._bandit", "BanditSearcher"),
}
_ALIASES = {"xgb": "model", "evo": "evolutionary", "auto": "bandit", "nsgaii": "nsga2",
            "cma": "cmaes"}
_NEEDS = {"cmaes": ("cmaes",), "gp": ("torch", "scipy")}


def _require(name: str) -> None:
    missing = [m for m in _NEEDS.get(name, ()) if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(
            f"searcher {name!r} needs the package(s) {', '.join(missing)}, which cannot be "
            f"imported; install with `pip install {' '.join(missing)}`"
        )


def searcher_key(name: Any) -> str:
    """The searcher of :data:`SEARCHERS` that ``name`` (or an alias) names.

    Parameters
    ----------
    name : str
        A searcher name or alias, in any case (``"XGB"`` names ``"model"``).

    Returns
    -------
    str
        The canonical name, one of :data:`SEARCHERS`.

    Raises
    ------
    ValueError
        If ``name`` is neither (the message lists both), or is a sampler
        class rather than an instance (the message says so).
    """
    key = _ALIASES.get(name.lower(), name.lower()) if isinstance(name, str) else name
    if isinstance(name, type) and issubclass(name, BaseSampler):
        try:
            takes_space = "space" in inspect.signature(name).parameters
        except (TypeError, ValueError):
            takes_space = False
        example = f"{name.__name__}({'space, ' if takes_space else ''}seed=0)"
        raise ValueError(
            f"searcher must be a searcher's name or a sampler object, got the class "
            f"{name.__name__} itself; pass an instance (e.g. {example}) or a name, one of "
            f"{SEARCHERS}")
    if key not in SEARCHERS:
        raise ValueError(
            f"searcher must be one of {SEARCHERS} (or an alias: {sorted(_ALIASES)}), "
            f"got {name!r}"
        )
    return str(key)


def make_searcher(
    name: str, space: Space, seed: int | None = None, **kwargs: Any
) -> BaseSampler:
    """Return a seeded searcher by name.

    Parameters
    ----------
    name : str
        ``"grid"``, ``"random"``, ``"model"`` (alias ``"xgb"``),
        ``"evolutionary"`` (alias ``"evo"``), ``"bandit"`` (alias ``"auto"``,
        :data:`DEFAULT_SEARCHER`): autotile's
        searchers over ``space``. ``"tpe"``, ``"cmaes"``, ``"gp"``, ``"nsga2"``, ``"qmc"``:
        Optuna's ``TPESampler``, ``CmaEsSampler``, ``GPSampler``,
        ``NSGAIISampler`` and ``QMCSampler``; they sample one knob at a time
        (see :func:`encoding_for`), may propose a config the constraints
        forbid (the study records a failed trial) and may propose a config
        twice (the study reuses the first measurement).
    space : Space
        The space.
    seed : int, optional
        Seed of the searcher, ``0 <= seed < 2**32`` (NumPy's seed range, for
        every searcher).
    **kwargs
        Passed to the searcher's constructor (e.g. ``plan_size`` for
        ``"model"``, ``n_startup_trials`` for ``"tpe"``).

    Returns
    -------
    optuna.samplers.BaseSampler
        The searcher.

    Raises
    ------
    ValueError
        If ``name`` is unknown or ``seed`` is not None or an int with
        ``0 <= seed < 2**32``.
    TypeError
        If ``kwargs`` holds an option the searcher does not take, ``seed`` or
        ``space``, or a value of the wrong type (:func:`check_searcher_options`).
    ImportError
        If an Optuna sampler's optional dependency is missing (``cmaes`` for
        CMA-ES; ``torch`` and ``scipy`` for GP), naming the package.

    Examples
    --------
    >>> from autotile.space import gemm_space
    >>> make_searcher("random", gemm_space(64), seed=0)
    <autotile.search._random.RandomSearcher object at ...>
    """
    return build_searcher(name, space, seed, kwargs)


def build_searcher(name: str, space: Space, seed: int | None,
                   options: Mapping[str, Any]) -> BaseSampler:
    """:func:`make_searcher` with the options as one mapping.

    Callers that pass a user's ``searcher_kwargs`` on use this form: spread
    into ``make_searcher(name, space, seed, **options)``, options holding
    ``seed`` would fail in Python's call machinery ("got multiple values for
    argument 'seed'") before :func:`check_searcher_options` could name the
    problem.

    Parameters
    ----------
    name, space, seed
        As for :func:`make_searcher`.
    options : Mapping[str, Any]
        The searcher's options (``searcher_kwargs``).

    Returns
    -------
    optuna.samplers.BaseSampler
        The searcher.

    Raises
    ------
    ValueError, TypeError, ImportError
        As :func:`make_searcher`.
    """
    kwargs = dict(options)
    key = searcher_key(name)
    check_seed(seed)
    _require(key)
    ctor = check_searcher_options(name, kwargs)
    if key in _AUTOTILE:
        searcher: BaseSampler = ctor(space, seed=seed, **kwargs)
        return searcher
    samplers = optuna.samplers
    if key == "tpe":
        # constant liar: running trials (other workers', or earlier ones of a batch) count as
        # bad, so TPE proposes away from configs being measured
        kwargs.setdefault("constant_liar", True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return samplers.TPESampler(seed=seed, **kwargs)
    if key == "cmaes":
        return samplers.CmaEsSampler(seed=seed, **kwargs)
    if key == "gp":
        return samplers.GPSampler(seed=seed, **kwargs)
    if key == "nsga2":
        return samplers.NSGAIISampler(seed=seed, **kwargs)
    kwargs.setdefault("scramble", seed is not None)
    return samplers.QMCSampler(seed=seed, **kwargs)


#: The Optuna sampler class behind each of Optuna's searcher names.
_OPTUNA_CLASS = {"tpe": "TPESampler", "cmaes": "CmaEsSampler", "gp": "GPSampler",
                 "nsga2": "NSGAIISampler", "qmc": "QMCSampler"}


def check_searcher_options(name: str, kwargs: Mapping[str, Any]) -> Any:
    """Check a searcher's name and options without building it; return its class.

    Parameters
    ----------
    name : str
        A searcher name, as for :func:`make_searcher`.
    kwargs : Mapping[str, Any]
        Options for the searcher's constructor (``searcher_kwargs``).

    Returns
    -------
    type
        The searcher's class (an Optuna sampler class for Optuna's names).

    Raises
    ------
    ValueError
        If ``name`` is not a searcher name.
    TypeError
        If ``kwargs`` holds an option the searcher does not take (the message
        names it and lists the options it does take), holds ``seed`` or
        ``space`` (arguments of their own), or gives an option whose default is
        a bool, int or float a value of another type (an int fits a float
        option).

    Notes
    -----
    A searcher's optional dependency (``cmaes``; ``torch`` and ``scipy``) is
    not needed to check its options: :func:`make_searcher` requires it, so
    that ``searcher_kwargs={}`` and None fail at the same point.
    """
    key = searcher_key(name)
    if key in _AUTOTILE:
        module, cls = _AUTOTILE[key]
        ctor = getattr(importlib.import_module(module), cls)
    else:
        ctor = getattr(optuna.samplers, _OPTUNA_CLASS[key])
    _check_options(name, ctor, dict(kwargs))
    return ctor


def _check_options(name: str, ctor: Any, kwargs: dict[str, Any]) -> None:
    """Refuse options ``ctor`` does not take, naming them and the ones it does."""
    try:
        params = inspect.signature(ctor).parameters
    except (TypeError, ValueError):  # no signature to read: let the constructor decide
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    for own in ("seed", "space"):
        if own in kwargs:
            raise TypeError(f"searcher {name!r}: {own!r} is not a searcher option; pass "
                            f"{own}= itself (to tune, autotune or make_searcher), not in "
                            f"the options, got options {sorted(kwargs)}")
    known = [n for n, p in params.items() if n not in ("self", "space", "seed")
             and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                            inspect.Parameter.KEYWORD_ONLY)]
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        raise TypeError(f"searcher {name!r} has no option(s) {unknown}; its options are "
                        f"{known}")
    for key, value in kwargs.items():
        want = _default_type(params[key].default)
        if want is not None and not _is_instance(value, want):
            raise TypeError(
                f"searcher {name!r} option {key}={value!r}: expected {want.__name__} "
                f"(its default is {params[key].default!r}), got {type(value).__name__}")


def _default_type(default: Any) -> type | None:
    """The type an option's value must have, read from its default (None: not checked).

    Only plain numeric and bool defaults decide (bool, int, float); an option
    whose default is None, a str (a name that may also take an object, as
    ``featurizer``), a callable or an object takes what its constructor
    documents, and the constructor checks it.
    """
    for t in (bool, int, float):
        if type(default) is t:
            return t
    return None


def _is_instance(value: Any, want: type) -> bool:
    """Whether ``value`` fits an option whose default is of type ``want``.

    An int fits a float option; a bool fits only a bool option (``True`` is
    not a count); NumPy scalars count as their Python types.
    """
    import numpy as np

    if want is bool:
        return isinstance(value, (bool, np.bool_))
    if isinstance(value, (bool, np.bool_)):
        return False
    if want is int:
        return isinstance(value, (int, np.integer))
    if want is float:
        return isinstance(value, (int, float, np.integer, np.floating))
    return isinstance(value, want)


def encoding_for(sampler: BaseSampler) -> Encoding:
    """Return how a study suggests knobs to ``sampler`` (see :func:`suggest_config`).

    CMA-ES and QMC only model numbers: Optuna would sample their categorical
    parameters independently at random. They get ``"index"``: every knob is
    an integer parameter over the position of its value (split factors in
    increasing order, permutations by lexicographic rank). Every other
    sampler gets ``"categorical"``.

    Parameters
    ----------
    sampler : optuna.samplers.BaseSampler
        The sampler.

    Returns
    -------
    {"categorical", "index"}
        The encoding.
    """
    numeric_only = (optuna.samplers.CmaEsSampler, optuna.samplers.QMCSampler)
    return "index" if isinstance(sampler, numeric_only) else "categorical"
