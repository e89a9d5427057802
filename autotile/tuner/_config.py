"""``LaunchConfig``: one candidate of ``@autotune``, Triton's ``triton.Config``."""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from autotile.errors import InvalidConfigError

__all__ = ["LaunchConfig", "Config", "LAUNCH_KNOBS", "check_bench_budgets", "check_candidates",
           "check_space_knobs", "check_space_search"]

#: Knob names that are launch options, not kernel meta-parameters.
LAUNCH_KNOBS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def check_bench_budgets(warmup: Any, rep: Any) -> None:
    """Check ``@autotune``'s ``warmup`` and ``rep``: None, or milliseconds (>= 0, > 0).

    Parameters
    ----------
    warmup : float or None
        ``do_bench``'s warm-up budget, milliseconds, ``>= 0``; None: the default.
    rep : float or None
        ``do_bench``'s timing budget, milliseconds, ``> 0``; None: the default.

    Raises
    ------
    InvalidConfigError
        If ``warmup`` is negative or ``rep`` is not positive, either is not
        finite, or either is not a real number.
    """
    from autotile.measure.gpu._triton_measurer import bench_ms_problem

    for name, value, positive in (("warmup", warmup, False), ("rep", rep, True)):
        why = None if value is None else bench_ms_problem(name, value, positive=positive)
        if why is not None:
            raise InvalidConfigError(f"autotune(): {why}")


def check_cache_dir(cache_dir: Any, disk_cache: bool) -> None:
    """Check ``@autotune``'s ``cache_dir``: None, or a path that is not an existing file.

    Parameters
    ----------
    cache_dir : str, os.PathLike or None
        The disk cache directory; None: the default.
    disk_cache : bool
        Whether the disk cache is on (an existing file is refused only then).

    Raises
    ------
    InvalidConfigError
        If ``cache_dir`` is neither None, a str nor a path (an int reached
        ``pathlib`` as "expected str, bytes or os.PathLike object"), or is an
        existing file while ``disk_cache`` is on.
    """
    if cache_dir is None:
        return
    if not isinstance(cache_dir, (str, os.PathLike)):
        raise InvalidConfigError(f"cache_dir must be a directory path (str or path) or None, "
                                 f"got {type(cache_dir).__name__} cache_dir={cache_dir!r}")
    if disk_cache and Path(cache_dir).exists() and not Path(cache_dir).is_dir():
        raise InvalidConfigError(f"cache_dir must be a directory, got cache_dir="
                                 f"{str(cache_dir)!r}, which is an existing file")


def check_space_search(searcher: Any, budget: Any, seed: Any,
                       searcher_kwargs: Any = None) -> int:
    """Check ``@autotune``'s ``searcher``, ``budget``, ``seed`` and options; return the budget.

    Checked at decoration, as Triton checks its arguments, not at the first
    call that tunes.

    Parameters
    ----------
    searcher : str
        A searcher name (:func:`autotile.search._factory.searcher_key`).
    budget : int
        Most configs the search measures, ``>= 1``.
    seed : int or None
        The search's seed, in ``[0, 2**32)``.
    searcher_kwargs : dict or None, default=None
        Options for the searcher's constructor (e.g. ``{"n_startup_trials": 4}``
        for ``"tpe"``), as :func:`autotile.search.make_searcher` takes them.

    Returns
    -------
    int
        ``budget`` as an int.

    Raises
    ------
    InvalidConfigError
        If ``searcher`` is not a searcher name (a str), ``budget`` is not an int
        ``>= 1``, ``seed`` is not None or an int in ``[0, 2**32)``, or
        ``searcher_kwargs`` is not a dict with str keys or holds an option the
        searcher does not take (the message lists the ones it does).
    """
    from autotile.search._factory import check_searcher_options, searcher_key
    from autotile.search._study_args import check_count, check_seed

    try:
        n = check_count("budget", budget)
    except ValueError as exc:
        raise InvalidConfigError(str(exc)) from None
    if not isinstance(searcher, str):
        got = (f"the class {searcher.__name__}" if isinstance(searcher, type)
               else f"{type(searcher).__name__} object")
        raise InvalidConfigError(
            f"autotune(): searcher must be a searcher's name (str, e.g. 'model' or 'bandit'; "
            f"its options go in searcher_kwargs=), got {got}; to "
            f"tune with a searcher object, use autotile.search.tune")
    try:
        searcher_key(searcher)
        check_seed(seed)
    except ValueError as exc:
        raise InvalidConfigError(f"autotune(): {exc}") from None
    if searcher_kwargs is not None:
        if not (isinstance(searcher_kwargs, Mapping)
                and all(isinstance(k, str) for k in searcher_kwargs)):
            raise InvalidConfigError(
                f"autotune(): searcher_kwargs must be a dict of the searcher's options "
                f"(str keys) or None, got {type(searcher_kwargs).__name__} "
                f"{searcher_kwargs!r}")
        try:
            check_searcher_options(searcher, searcher_kwargs)
        except TypeError as exc:
            raise InvalidConfigError(f"autotune(): {exc}") from None
    return n


def check_candidates(kernel: str, arg_names: Sequence[str], configs: Any, space: Any,
                     convert: Callable[[Any], LaunchConfig]) -> list[LaunchConfig]:
    """Check ``@autotune``'s ``configs`` or ``space`` against the kernel's parameters.

    Checked at decoration, so a misspelt knob name is reported once, naming
    it, instead of failing every candidate at the first call.

    Parameters
    ----------
    kernel : str
        The kernel's name, for the messages.
    arg_names : sequence of str
        The kernel's parameter names.
    configs : sequence of configs or None
        Each a :class:`LaunchConfig`, a ``triton.Config`` or a flat mapping.
    space : autotile.space.Space, callable or None
        The space to search instead (a callable ``space(args) -> Space`` is
        checked when it is called).
    convert : callable
        Turns one element of ``configs`` into a :class:`LaunchConfig`.

    Returns
    -------
    list of LaunchConfig
        ``configs`` converted, a repeated config kept once (empty when
        ``configs`` is None or empty).

    Raises
    ------
    InvalidConfigError
        If ``configs`` is a single config or a str rather than a list of
        them, an element cannot be converted, a config sets a name that is
        not a parameter of the kernel, ``space`` is neither a
        :class:`~autotile.space.Space` nor a callable, or one of its knobs is
        neither a kernel parameter nor a launch option (``num_warps``, ...).

    Warns
    -----
    UserWarning
        For a config equal to an earlier one (same meta-parameters, launch
        options and ``pre_hook``): it is dropped, so it is not tuned twice.
    """
    from autotile.space import Space

    params = list(arg_names)
    where = f"@autotune of {kernel!r}"
    if configs is not None and (isinstance(configs, (str, bytes, Mapping, LaunchConfig))
                                or hasattr(configs, "all_kwargs")
                                or not isinstance(configs, Iterable)):
        raise InvalidConfigError(
            f"{where}: configs must be a list of configs, got {type(configs).__name__} "
            f"{_short(configs)}; write configs=[...] even for one config")
    out: list[LaunchConfig] = []
    for i, c in enumerate(configs or []):
        try:
            cfg = convert(c)
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"{where}: configs[{i}]: {exc}") from None
        unknown = [k for k in cfg.kwargs if k not in params]
        if unknown:
            raise InvalidConfigError(
                f"{where}: configs[{i}] sets {', '.join(map(repr, unknown))}, not a "
                f"parameter of the kernel (parameters: {params}); got configs[{i}]={cfg}")
        if cfg in out:
            warnings.warn(
                f"{where}: configs[{i}] repeats configs[{out.index(cfg)}] ({cfg}); it is "
                f"tuned once", UserWarning, stacklevel=4)
            continue
        out.append(cfg)
    if space is not None:
        if not isinstance(space, Space) and not callable(space):
            raise InvalidConfigError(
                f"{where}: space must be an autotile.space.Space (e.g. "
                f"Space([PowerOfTwo('BLOCK', 16, 256)])) or space(args) -> Space, got "
                f"{type(space).__name__} {_short(space)}")
        if isinstance(space, Space):
            check_space_knobs(kernel, params, space)
    return out


def check_space_knobs(kernel: str, arg_names: Sequence[str], space: Any) -> None:
    """Check that every knob of ``space`` is a kernel parameter or a launch option.

    Parameters
    ----------
    kernel : str
        The kernel's name, for the message.
    arg_names : sequence of str
        The kernel's parameter names.
    space : autotile.space.Space
        The space whose knobs are checked.

    Raises
    ------
    InvalidConfigError
        If a knob is neither a parameter of the kernel nor one of
        :data:`LAUNCH_KNOBS`.
    """
    unknown = [k.name for k in space.knobs if k.name not in arg_names
               and k.name not in LAUNCH_KNOBS]
    if unknown:
        raise InvalidConfigError(
            f"@autotune of {kernel!r}: space knob(s) {', '.join(map(repr, unknown))} are not "
            f"parameters of the kernel (parameters: {list(arg_names)}) nor launch options "
            f"{LAUNCH_KNOBS}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _plain(value: Any) -> Any:
    """NumPy scalars become Python scalars and lists become tuples (hashable)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


@dataclass(frozen=True, eq=False)
class LaunchConfig:
    """One kernel configuration for :func:`autotune` to try (``triton.Config``).

    Parameters
    ----------
    kwargs : mapping of str to value
        Meta-parameters passed to the kernel as keyword arguments, named as
        its ``tl.constexpr`` parameters, e.g. ``{"BLOCK_M": 128}``. Stored as
        a read-only mapping; values must be hashable (lists become tuples).
    num_warps : int, default=4
        Warps per program (a power of two); a launch option the GPU model
        reads (the interpreter runs programs sequentially either way).
    num_stages : int, default=3
        Software-pipelining stages, ``>= 1``; read by the GPU model.
    num_ctas : int, default=1
        Programs per cluster (accepted for Triton compatibility).
    maxnreg : int, optional
        Register cap per thread (accepted for Triton compatibility).
    pre_hook : callable, optional
        ``pre_hook(kwargs)`` called before each launch with this config,
        ``kwargs`` being every kernel argument and meta-parameter by name.

    Raises
    ------
    InvalidConfigError
        If a key is not a str, names a launch option, a value is not
        hashable, ``num_warps`` is not a positive power of two,
        ``num_stages``/``num_ctas`` is below 1 or ``maxnreg`` is neither None
        nor an int >= 1.

    Notes
    -----
    Equality and hashing use :meth:`all_kwargs` and ``pre_hook``, as in
    Triton; the key order of ``kwargs`` does not matter.

    Examples
    --------
    >>> cfg = LaunchConfig({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8)
    >>> str(cfg)
    'BLOCK_M: 128, BLOCK_N: 64, num_warps: 8, num_stages: 3'
    >>> cfg.all_kwargs()["num_warps"]
    8
    """

    kwargs: Mapping[str, Any] = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None
    pre_hook: Callable[[dict[str, Any]], Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kwargs, Mapping):
            raise InvalidConfigError(
                f"LaunchConfig kwargs must be a mapping of str to value, "
                f"got {type(self.kwargs).__name__}")
        items = {}
        for k, v in self.kwargs.items():
            if not isinstance(k, str):
                raise InvalidConfigError(f"LaunchConfig kwargs keys must be str, got {k!r}")
            if k in LAUNCH_KNOBS:
                raise InvalidConfigError(
                    f"{k} is a launch option: pass LaunchConfig(..., {k}=...) instead of "
                    f"kwargs[{k!r}]")
            items[k] = _plain(v)
        try:
            hash(tuple(items.items()))
        except TypeError:
            raise InvalidConfigError(
                f"LaunchConfig kwargs values must be hashable, got {items!r}") from None
        object.__setattr__(self, "kwargs", MappingProxyType(items))
        nw = _plain(self.num_warps)
        if isinstance(nw, bool) or not isinstance(nw, int) or nw < 1 or nw & (nw - 1):
            raise InvalidConfigError(
                f"num_warps must be a positive power of two, got num_warps={nw!r}")
        object.__setattr__(self, "num_warps", nw)
        for name in ("num_stages", "num_ctas"):
            v = _plain(getattr(self, name))
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidConfigError(f"{name} must be an int >= 1, got {name}={v!r}")
            object.__setattr__(self, name, v)
        mr = _plain(self.maxnreg)
        if mr is not None and (isinstance(mr, bool) or not isinstance(mr, int) or mr < 1):
            raise InvalidConfigError(f"maxnreg must be None or an int >= 1 (registers per "
                                     f"thread), got maxnreg={mr!r}")
        object.__setattr__(self, "maxnreg", mr)
        if self.pre_hook is not None and not callable(self.pre_hook):
            raise InvalidConfigError(
                f"pre_hook must be callable or None, got {type(self.pre_hook).__name__}")

    # -- Triton's API -----------------------------------------------------------------
    def all_kwargs(self) -> dict[str, Any]:
        """Return the meta-parameters plus the launch options that are set.

        Returns
        -------
        dict
            ``kwargs`` then ``num_warps``, ``num_ctas``, ``num_stages`` and
            ``maxnreg`` (left out when None): what the kernel launch receives.
        """
        launch = {"num_warps": self.num_warps, "num_ctas": self.num_ctas,
                  "num_stages": self.num_stages, "maxnreg": self.maxnreg}
        return {**self.kwargs, **{k: v for k, v in launch.items() if v is not None}}

    def _identity(self) -> tuple[Any, ...]:
        return (frozenset(self.all_kwargs().items()), self.pre_hook)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LaunchConfig):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __str__(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_stages: {self.num_stages}"]
        if self.num_ctas != 1:
            parts.append(f"num_ctas: {self.num_ctas}")
        if self.maxnreg is not None:
            parts.append(f"maxnreg: {self.maxnreg}")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"LaunchConfig({self})"

    # -- conversions ------------------------------------------------------------------
    @classmethod
    def from_knobs(cls, values: Mapping[str, Any]) -> LaunchConfig:
        """Build a config from one flat mapping (e.g. an autotile space config).

        Parameters
        ----------
        values : mapping of str to value
            Knob name -> value; ``num_warps``, ``num_stages``, ``num_ctas``
            and ``maxnreg`` become launch options, the rest ``kwargs``.

        Returns
        -------
        LaunchConfig
        """
        launch = {k: values[k] for k in LAUNCH_KNOBS if k in values}
        return cls({k: v for k, v in values.items() if k not in LAUNCH_KNOBS}, **launch)

    def to_json(self) -> str:
        """Return a JSON object text (``pre_hook`` is not written).

        Returns
        -------
        str
            ``{"kwargs": {...}, "num_warps": 4, "num_stages": 3, "num_ctas": 1,
            "maxnreg": null}``.
        """
        return json.dumps({"kwargs": {k: _jsonable(v) for k, v in self.kwargs.items()},
                           "num_warps": self.num_warps, "num_stages": self.num_stages,
                           "num_ctas": self.num_ctas, "maxnreg": self.maxnreg})

    @classmethod
    def from_json(cls, data: str | Mapping[str, Any]) -> LaunchConfig:
        """Inverse of :meth:`to_json` (JSON lists become tuples).

        Parameters
        ----------
        data : str or mapping
            JSON text or its parsed dict.

        Returns
        -------
        LaunchConfig
        """
        d = json.loads(data) if isinstance(data, str) else dict(data)
        return cls(dict(d.get("kwargs", {})), num_warps=d.get("num_warps", 4),
                   num_stages=d.get("num_stages", 3), num_ctas=d.get("num_ctas", 1),
                   maxnreg=d.get("maxnreg"))


#: Triton's name for :class:`LaunchConfig` (``triton.Config``), so that code written
#: for ``triton.autotune`` runs unchanged. ``autotile.space.Config`` is a different
#: thing: one value per knob of a :class:`~autotile.space.Space`.
Config = LaunchConfig


def _estimate(value: Any, config: LaunchConfig) -> float:
    """``perf_model``'s estimate for ``config`` as a float; raise on NaN or a non-number.

    NaN would make the sort that picks the ``top_k`` configs arbitrary, so
    the pruning would keep configs silently at random.
    """
    v = _plain(value)
    if hasattr(v, "item") and getattr(v, "size", None) == 1:  # a 0-d or 1-element array/tensor
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        raise InvalidConfigError(
            f"prune_configs_by's perf_model must return an estimated time (a real number, "
            f"inf for a config that cannot run), got {type(value).__name__} {value!r} for "
            f"config {config}")
    return float(v)


def prune_config_list(configs: Sequence[LaunchConfig], nargs: dict[str, Any],
                      kwargs: dict[str, Any], early_config_prune: Any, perf_model: Any,
                      top_k: Any, convert: Any = None) -> list[LaunchConfig]:
    """Triton's ``prune_configs_by``: ``early_config_prune``, then ``perf_model``/``top_k``.

    Parameters
    ----------
    configs : sequence of LaunchConfig
    nargs, kwargs : dict
        The call's arguments by name, and its extra keyword arguments.
    early_config_prune : callable or None
        ``f(configs, nargs, **kwargs) -> configs``.
    perf_model : callable or None
        ``f(**nargs, **kwargs, **config.all_kwargs()) -> estimated time``.
    top_k : int or float
        How many configs the perf model keeps (a float ``<= 1``: a fraction).
    convert : callable, optional
        Applied to each config ``early_config_prune`` returns (a ``triton.Config``
        becomes a :class:`LaunchConfig`).

    Returns
    -------
    list of LaunchConfig

    Raises
    ------
    MeasureError
        If ``early_config_prune`` returns no config.
    InvalidConfigError
        If ``top_k`` is neither an int ``>= 1`` nor a float in ``(0, 1]``, or
        ``perf_model`` returns NaN or something other than a real number
        (``inf`` is accepted: the config ranks last).
    """
    from autotile.errors import MeasureError

    pruned = list(configs)
    if early_config_prune is not None:
        pruned = list(early_config_prune(list(configs), nargs, **kwargs))
        if convert is not None:
            pruned = [convert(c) for c in pruned]
        if not pruned:
            raise MeasureError("No valid autotuner configs after pruning: "
                               "early_config_prune must return at least one config")
    if perf_model is not None:
        if isinstance(top_k, float) and 0.0 < top_k <= 1.0:
            top_k = max(1, int(len(pruned) * top_k))
        elif isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise InvalidConfigError(f"top_k must be an int >= 1 or a float in (0, 1], got "
                                     f"top_k={top_k!r}")
        if len(pruned) > top_k:
            est = {c: _estimate(perf_model(**{**nargs, **kwargs, **c.all_kwargs()}), c)
                   for c in pruned}
            pruned = sorted(pruned, key=lambda c: est[c])[:top_k]
    return pruned
