"""``Autotuner``: Triton's autotuner, scored by the GPU model and checked in the interpreter."""

from __future__ import annotations

import inspect
import json
import os
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from autotile.errors import InvalidConfigError, MeasureError
from autotile.lang import JITFunction
from autotile.lang._semantic import check_grid
from autotile.measure import H100_SXM, HardwareProfile
from autotile.measure._fingerprint import canonical, jsonable
from autotile.measure._parallel import parallel_map
from autotile.space import Space
from autotile.tuner._check import arrays_of, call_small_args, n_elems
from autotile.tuner._config import (
    LaunchConfig,
    check_bench_budgets,
    check_cache_dir,
    check_candidates,
    check_space_knobs,
    check_space_search,
    prune_config_list,
)
from autotile.tuner._disk_cache import (
    DiskCache,
    default_cache_dir,
    digest,
    scorer_hash,
    source_hash,
)
from autotile.tuner._evaluate import CandidateMeasurer, Evaluator, Scorer, score_candidate
from autotile.tuner._library import KernelModelScorer, default_scorer, library_small_args
from autotile.tuner._record import TuningRecord

__all__ = ["Autotuner", "PRINT_ENV"]

#: Set to ``1`` to print every tuning: each candidate, the winner, the time taken.
PRINT_ENV = "AUTOTILE_PRINT_AUTOTUNING"


def _verbose() -> bool:
    return os.environ.get(PRINT_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _options_key(options: Mapping[str, Any]) -> str | None:
    """Canonical JSON text of searcher options for the disk-cache key, or None.

    Parameters
    ----------
    options : Mapping[str, Any]
        ``searcher_kwargs``.

    Returns
    -------
    str or None
        Independent of the options' order; arrays count by every value (their
        ``repr`` elides values past 1,000 elements). None when a value is not
        data (a callable, an estimator or ``Prior`` object): such options have
        no identity that is stable across processes, so the tuning is not
        disk-cached.
    """
    def plain(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    data = jsonable(plain(dict(options)))
    return None if data is None else canonical(data)


def _hardware_key(hardware: Any) -> str:
    """Every field of a hardware profile as canonical JSON (its name alone is not enough).

    ``dataclasses.replace(H200, l2_bytes=...)`` keeps the name, so keying the cache on
    the name would reuse a tuning made for another L2 size.
    """
    if isinstance(hardware, HardwareProfile):
        return "hardware:" + canonical(jsonable(hardware))
    return "hardware:" + str(getattr(hardware, "name", hardware))


def _key_value(v: Any) -> Any:
    """A key value as a plain Python scalar (a NumPy scalar or 0-d array is one)."""
    return v.item() if isinstance(v, np.generic) or (isinstance(v, np.ndarray)
                                                      and v.ndim == 0) else v


def _dtype_tag(a: Any) -> str:
    from autotile.lang import BFloat16Array

    return "bfloat16" if isinstance(a, BFloat16Array) else str(a.dtype)


def _as_launch_config(c: Any) -> LaunchConfig:
    """A :class:`LaunchConfig` from a LaunchConfig or a flat mapping of knob values."""
    if isinstance(c, LaunchConfig):
        return c
    if isinstance(c, Mapping):
        return LaunchConfig.from_knobs(c)
    raise InvalidConfigError(f"a config must be a LaunchConfig (autotile.tuner.Config) or a "
                             f"mapping of knob values, got {type(c).__name__} {c!r}")


def _names(what: str, names: Sequence[str] | str | None, arg_names: list[str]) -> list[str]:
    if names is not None and not isinstance(names, str) and (
            not isinstance(names, Iterable) or not all(isinstance(n, str) for n in names)):
        raise InvalidConfigError(f"{what} must be a list of kernel parameter names (str), got "
                                 f"{type(names).__name__} {names!r}")
    out = [names] if isinstance(names, str) else list(names or [])  # key="n" is one name
    bad = [n for n in out if n not in arg_names]
    if bad:
        raise InvalidConfigError(f"{what} must name kernel parameters {arg_names}, got {bad}")
    return out


def _buffer_names(what: str, names: Sequence[str] | None, fn: JITFunction) -> list[str]:
    """Check ``reset_to_zero``/``restore_value``: kernel parameters that are not constexpr."""
    out = _names(what, names, fn.arg_names)
    for n in out:
        if fn.arg_names.index(n) in fn.constexprs:
            raise InvalidConfigError(
                f"{what} must name array (pointer) arguments of kernel {fn.__name__!r}, got "
                f"{n!r}, a tl.constexpr parameter")
    return out


def _check_buffers(what: str, names: Sequence[str], named: Mapping[str, Any],
                   kernel: str) -> None:
    """Check that each argument named by ``reset_to_zero``/``restore_value`` is an array."""
    for n in names:
        if n not in named or isinstance(named[n], np.ndarray):
            continue
        v = named[n]
        kind = ("a scalar argument" if isinstance(v, (bool, int, float, np.generic))
                else "not an array")
        raise InvalidConfigError(
            f"{what} must name array (pointer) arguments of kernel {kernel!r}, got {n!r} = "
            f"{_short(v)}, {kind} ({type(v).__name__})")


def _short(v: Any, limit: int = 40) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _tolerance(name: str, value: Any) -> float | None:
    """Check ``rtol``/``atol``: None, or a finite real number >= 0."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                     np.floating)):
        raise InvalidConfigError(f"{name} must be a real number >= 0 or None, got "
                                 f"{name}={value!r} ({type(value).__name__})")
    if not np.isfinite(value) or value < 0:
        raise InvalidConfigError(f"{name} must be a finite number >= 0, got {name}={value!r}")
    return float(value)


#: Interpreter launch options of a call that its check launches get too.
_INTERPRETER_OPTIONS = ("sanitize_overflow", "batch_programs")

#: Largest space whose configs are all checked for an empty launch grid.
_MAX_EMPTY_GRID_CHECK = 4096


def _n_programs(grid: Any, named: Mapping[str, Any], config: LaunchConfig) -> int | None:
    """Programs the launch of ``config`` would run, or None when the grid cannot be computed."""
    try:
        g = grid({**named, **config.all_kwargs()}) if callable(grid) else grid
        g0, g1, g2 = check_grid(g, None)
    except Exception:  # noqa: BLE001 - the real launch reports a bad grid
        return None
    return g0 * g1 * g2


class TunerCommon:
    """What the interpreter's and the GPU's autotuner share: caches, spaces, pruning.

    A subclass sets ``cache``, ``histories``, ``space``, ``configs``,
    ``early_config_prune``, ``perf_model`` and ``configs_top_k``;
    ``_convert`` turns what a Triton ``prune_configs_by`` hook returns into
    :class:`LaunchConfig` (None: keep it as it is).
    """

    __name__: str
    arg_names: list[str]
    cache: dict[Any, Any]
    histories: dict[Any, Any]
    space: Any
    configs: list[LaunchConfig]
    early_config_prune: Any
    perf_model: Any
    configs_top_k: Any
    _convert: Callable[[Any], LaunchConfig] | None = None

    def clear_cache(self) -> None:
        """Forget the in-memory tunings (the disk cache stays)."""
        self.cache.clear()
        self.histories.clear()

    def _candidates(self, configs: Any, space: Any, prune_configs_by: Any,
                    convert: Callable[[Any], LaunchConfig]) -> list[LaunchConfig]:
        """``@autotune``'s ``configs`` as a checked list (:func:`check_candidates`).

        Needs ``__name__`` and ``arg_names`` set.

        Raises
        ------
        InvalidConfigError
            If both ``configs`` and ``space`` are given, ``prune_configs_by``
            is given with ``space``, neither gives a candidate (``configs``
            empty or None without ``space``), or :func:`check_candidates`
            refuses them.
        """
        if space is not None and configs:
            raise InvalidConfigError("pass either configs= or space=, not both")
        if space is not None and prune_configs_by:
            raise InvalidConfigError("prune_configs_by applies to a config list; with space= "
                                     "put the rules in the space's constraints")
        out = check_candidates(self.__name__, self.arg_names, configs, space, convert)
        if space is None and not out:
            raise InvalidConfigError(
                f"@autotune of {self.__name__!r} needs candidates: pass a non-empty configs= "
                f"list or space=, got configs={configs!r} and space=None")
        return out

    def _space_for(self, named: Mapping[str, Any]) -> Space:
        assert self.space is not None
        sp = self.space if isinstance(self.space, Space) else self.space(dict(named))
        if not isinstance(sp, Space):
            raise InvalidConfigError(f"space(args) must return a Space, got {type(sp).__name__}")
        check_space_knobs(self.__name__, self.arg_names, sp)
        return sp

    def prune_configs(self, nargs: dict[str, Any], kwargs: dict[str, Any]) -> list[LaunchConfig]:
        """Apply ``early_config_prune`` then ``perf_model``/``top_k``, as in Triton.

        :func:`~autotile.tuner._config.prune_config_list` on this tuner's
        configs and hooks; it documents the errors raised.
        """
        convert = type(self)._convert
        return prune_config_list(self.configs, nargs, kwargs, self.early_config_prune,
                                 self.perf_model, self.configs_top_k, convert=convert)


class Autotuner(TunerCommon):
    """A kernel that picks its best config per key before it runs (``triton.Autotuner``).

    Built by :func:`autotune`, which documents the parameters. Launch it like
    the kernel: ``kernel[grid](*args, **kwargs)``.

    Attributes
    ----------
    fn : JITFunction
        The wrapped kernel.
    configs : list of LaunchConfig
        The candidate list (empty in the space form).
    keys : list of str
        The ``key`` argument names.
    cache : dict
        Tuning key -> best :class:`LaunchConfig`, in memory (clear with
        :meth:`clear_cache`).
    best_config : LaunchConfig or None
        The config of the latest launch.
    configs_timings : dict of LaunchConfig to float
        Scored ``time_s`` of each candidate of the latest tuning (``inf``
        for a skipped one), as Triton's ``configs_timings``.
    history : list of TuningRecord
        Every candidate of the latest tuning with its status, time and reason.
    histories : dict
        Tuning key -> history, for every tuning of this process.
    study : autotile.search.Study or None
        The study of the latest space-form tuning.
    n_tuned : int
        Tunings run by this object (cache hits excluded).
    cache_hit : bool
        Whether the latest launch reused a tuning (memory or disk).
    cache_source : {"memory", "disk", "tuned", "single", "empty"} or None
        Where the latest launch's config came from (``"empty"``: the launch
        grid had no program, see :meth:`run`).
    bench_time : float
        Seconds the latest tuning took.
    """

    def __init__(self, fn: JITFunction, arg_names: list[str],
                 configs: Sequence[LaunchConfig] | None,
                 key: Sequence[str], reset_to_zero: Sequence[str] | None = None,
                 restore_value: Sequence[str] | None = None,
                 pre_hook: Callable[..., Any] | None = None,
                 post_hook: Callable[..., Any] | None = None,
                 prune_configs_by: Mapping[str, Any] | None = None, warmup: Any = None,
                 rep: Any = None, *, space: Space | Callable[[dict[str, Any]], Space] | None = None,
                 searcher: str = "random", budget: int = 50, seed: int | None = 0,
                 searcher_kwargs: Mapping[str, Any] | None = None,
                 scorer: Scorer | None = None, hardware: HardwareProfile = H100_SXM,
                 small_args: Callable[..., Any] | None = None,
                 reference: Callable[[dict[str, Any]], Any] | None = None, check: bool = True,
                 check_max_elems: int = 1 << 16, rtol: float | None = None,
                 atol: float | None = None, cache_dir: str | os.PathLike[str] | None = None,
                 disk_cache: bool = True, scheduler: Any = None) -> None:
        from autotile.measure._parallel import check_scheduler

        check_scheduler(scheduler)
        self.scheduler = scheduler
        if not isinstance(fn, JITFunction):
            raise InvalidConfigError(f"@autotune must sit above @jit: it wraps a JITFunction, "
                                     f"got {type(fn).__name__}")
        self.fn = fn
        self.base_fn = fn.fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.arg_names = list(arg_names)
        self.configs = self._candidates(configs, space, prune_configs_by, _as_launch_config)
        self.space = space
        self.searcher = searcher
        self.budget = check_space_search(searcher, budget, seed, searcher_kwargs)
        self.seed = seed
        self.searcher_kwargs = dict(searcher_kwargs or {})
        self.keys = _names("key", key, self.arg_names)
        self.reset_to_zero = _buffer_names("reset_to_zero", reset_to_zero, fn)
        self.restore_value = _buffer_names("restore_value", restore_value, fn)
        pc = dict(prune_configs_by or {})
        unknown = set(pc) - {"perf_model", "top_k", "early_config_prune"}
        if unknown:
            raise InvalidConfigError(f"prune_configs_by takes 'perf_model', 'top_k' and "
                                     f"'early_config_prune', got {sorted(unknown)}")
        self.perf_model = pc.get("perf_model")
        self.configs_top_k = pc.get("top_k", 1.0)
        self.early_config_prune = pc.get("early_config_prune")
        self.user_pre_hook, self.user_post_hook = pre_hook, post_hook
        check_bench_budgets(warmup, rep)
        self.warmup, self.rep = warmup, rep  # accepted for Triton compatibility; unused
        if not isinstance(hardware, HardwareProfile):
            raise TypeError(
                f"@autotune of {fn.__name__!r}: hardware must be a HardwareProfile (e.g. "
                f"autotile.measure.H100_SXM), got {type(hardware).__name__} "
                f"hardware={hardware!r}")
        for what, value in (("scorer", scorer), ("small_args", small_args),
                            ("reference", reference)):
            if value is not None and not callable(value):  # else every candidate fails later
                raise InvalidConfigError(
                    f"@autotune of {fn.__name__!r}: {what} must be a callable or None, got "
                    f"{type(value).__name__} {what}={value!r}")
        if scorer is None:
            scorer = default_scorer(fn, hardware)
        self.scorer = scorer
        self.hardware = getattr(scorer, "hardware", hardware)
        self.small_args = small_args if small_args is not None else library_small_args(fn)
        self._small_args_is_default = small_args is None and self.small_args is not None
        self.reference, self.check = reference, bool(check)
        cme = check_max_elems.item() if isinstance(check_max_elems, np.integer) \
            else check_max_elems
        if isinstance(cme, bool) or not isinstance(cme, int) or cme < 0:
            raise InvalidConfigError(
                f"@autotune of {fn.__name__!r}: check_max_elems must be an int >= 0 (array "
                f"elements), got check_max_elems={check_max_elems!r}")
        self.check_max_elems = cme
        self.rtol, self.atol = _tolerance("rtol", rtol), _tolerance("atol", atol)
        self.cache_dir, self.disk_cache = cache_dir, bool(disk_cache)
        check_cache_dir(cache_dir, self.disk_cache)
        self.cache: dict[tuple[Any, ...], LaunchConfig] = {}
        self.histories: dict[tuple[Any, ...], list[TuningRecord]] = {}
        self.history: list[TuningRecord] = []
        self.configs_timings: dict[LaunchConfig, float] = {}
        self.best_config: LaunchConfig | None = None
        self.study: Any = None
        self.n_tuned = 0
        self.cache_hit = False
        self.cache_source: str | None = None
        self.bench_time = 0.0
        self._restore_copies: dict[str, Any] = {}
        self._source_hash = source_hash(fn.fn)
        self._tuned_names: set[str] = set().union(*(c.all_kwargs() for c in self.configs))

    def __repr__(self) -> str:
        form = f"space={self.space!r}" if self.space is not None else f"{len(self.configs)} configs"
        return f"Autotuner({self.fn.__name__!r}, {form}, key={self.keys})"

    # -- hooks (Triton's defaults) ------------------------------------------------------
    def pre_hook(self, kwargs: dict[str, Any], reset_only: bool = False) -> None:
        """Run before each candidate launch with every argument by name.

        The user's ``pre_hook`` when given (it replaces the default, as in
        Triton); otherwise zero the ``reset_to_zero`` buffers and, unless
        ``reset_only``, save copies of the ``restore_value`` buffers.
        """
        if self.user_pre_hook is not None:
            if not reset_only:
                self.user_pre_hook(kwargs)
            elif "reset_only" in inspect.signature(self.user_pre_hook).parameters:
                self.user_pre_hook(kwargs, reset_only=True)
            return
        for name in self.reset_to_zero:
            if isinstance(kwargs.get(name), np.ndarray):
                kwargs[name][...] = 0
        if not reset_only:
            self._restore_copies = {n: kwargs[n].copy() for n in self.restore_value
                                    if isinstance(kwargs.get(n), np.ndarray)}

    def post_hook(self, kwargs: dict[str, Any], exception: BaseException | None) -> None:
        """Run after each candidate launch: the user's ``post_hook``, else restore buffers."""
        if self.user_post_hook is not None:
            self.user_post_hook(kwargs, exception)
            return
        for name, saved in self._restore_copies.items():
            np.copyto(kwargs[name], saved)
        self._restore_copies = {}

    # -- launch -------------------------------------------------------------------------
    def __getitem__(self, grid: Any) -> Callable[..., None]:
        def launcher(*args: Any, **kwargs: Any) -> None:
            self.run(*args, grid=grid, **kwargs)

        return launcher

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call as a device function (the plain kernel)."""
        return self.fn(*args, **kwargs)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        named = dict(zip(self.arg_names, args))
        named.update({k: v for k, v in kwargs.items() if k in self.arg_names})
        for p in self.fn.params:
            if p.name not in named and p.default is not inspect.Parameter.empty:
                named[p.name] = p.default
        return named

    def tuning_key(self, named: Mapping[str, Any]) -> tuple[Any, ...]:
        """Return the cache key of a call: the ``key`` values, then every array's dtype.

        Raises
        ------
        InvalidConfigError
            If a ``key`` argument receives an array (key on its size instead).
        """
        for n in self.keys:
            v: Any = named.get(n)
            if (isinstance(v, np.ndarray) and v.ndim > 0) or (
                    not isinstance(v, (np.ndarray, np.generic))
                    and hasattr(v, "__array_interface__")):
                raise InvalidConfigError(
                    f"@autotune of {self.fn.__name__!r}: key names {n!r}, which received an "
                    f"array of shape {tuple(getattr(v, 'shape', ()))}; key on scalar "
                    f"arguments (sizes, flags) - every array's dtype is part of the key already")
        k: list[Any] = [_key_value(named[n]) for n in self.keys if n in named]
        k += [_dtype_tag(a) for a in arrays_of(named).values()]
        return tuple(k)

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> None:
        """Tune on a new key, then launch the best config (``kernel[grid](...)``).

        A call whose grid has no program for every candidate (e.g. a matmul
        with ``M=0`` or ``N=0`` under ``cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)``)
        is not tuned: as a plain ``@jit`` launch on an empty grid (and
        Triton's launcher), it is a no-op that leaves the (empty) outputs as
        they are. It launches the first config (``cache_source="empty"``),
        runs no scorer, check or ``prune_configs_by`` function and caches
        nothing. The space form applies this only to a space of at most
        4096 configs.

        Raises
        ------
        InvalidConfigError
            If an argument of the call (by keyword or position) is also a tuned
            meta-parameter, an argument
            named by ``reset_to_zero``/``restore_value`` is not an array, or the
            default GPU-model scorer of a library kernel gets a call with a
            problem dimension ``< 1`` whose grid is not empty (e.g. a matmul
            with ``K=0``; pass ``scorer=`` or a single config to launch it).
        MeasureError
            If no candidate is valid (the message lists each reason).
        """
        named = self._bind(args, kwargs)
        # the names the call itself gives (positionally too; not the parameters' defaults)
        given = {**dict.fromkeys(self.arg_names[:len(args)]), **kwargs}
        self._check_conflicts(given, self._tuned_names)
        _check_buffers("reset_to_zero", self.reset_to_zero, named, self.fn.__name__)
        _check_buffers("restore_value", self.restore_value, named, self.fn.__name__)
        key = self.tuning_key(named)
        config = self.cache.get(key)
        self.cache_hit = config is not None
        self.cache_source = "memory" if config is not None else None
        if config is None:
            space = self._space_for(named) if self.space is not None else None
            if space is not None:
                self._check_conflicts(given, set(space.names))
            config = self._empty_launch_config(named, grid, space)
            if config is not None:
                self.cache_source = "empty"
            else:
                dig = self._digest(key, space)
                config = self._load(key, dig)
                if config is None:
                    config = self._tune(key, named, grid, args, kwargs, space, dig)
        self.best_config = config
        full = {**named, **config.all_kwargs()}
        if config.pre_hook is not None:
            config.pre_hook(full)
        self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())

    def _empty_launch_config(self, named: Mapping[str, Any], grid: Any,
                             space: Space | None) -> LaunchConfig | None:
        """Return the first candidate when every candidate's grid has no program, else None."""
        if space is None:
            candidates: Sequence[LaunchConfig] = self.configs
        elif space.product_size <= _MAX_EMPTY_GRID_CHECK:
            candidates = [LaunchConfig.from_knobs(space.config_at(i)) for i in range(space.size)]
        else:
            return None
        if not candidates or any(_n_programs(grid, named, c) != 0 for c in candidates):
            return None
        return candidates[0]

    @staticmethod
    def _check_conflicts(kwargs: Mapping[str, Any], tuned: set[str]) -> None:
        conflicts = sorted(set(kwargs) & tuned)
        if conflicts:
            raise InvalidConfigError(
                f"Conflicting meta-parameters: {', '.join(conflicts)}. Make sure that you "
                f"don't re-define auto-tuned symbols.")

    # -- candidates ---------------------------------------------------------------------
    def _identity(self, sp: Space | None) -> str:
        if sp is not None:
            try:
                text = sp.to_json()
            except (TypeError, ValueError):
                text = repr(sp)
            opts = _options_key(self.searcher_kwargs) if self.searcher_kwargs else None
            return (f"space:{text}|{self.searcher}|{self.budget}|{self.seed}"
                    + (f"|{opts}" if opts is not None else ""))
        return "configs:" + "\n".join(str(c) for c in self.configs)

    def _digest(self, key: tuple[Any, ...], space: Space | None) -> str:
        tag = getattr(self.scorer, "cache_tag", None) or scorer_hash(self.scorer)
        return digest(self._source_hash, repr(key), self._identity(space),
                      _hardware_key(self.hardware), str(tag),
                      f"check={self.check},reference={self.reference is not None}")

    def _disk(self) -> DiskCache | None:
        if not self.disk_cache:
            return None
        if self.space is not None and self.searcher_kwargs and _options_key(
                self.searcher_kwargs) is None:
            return None  # options with no stable identity (a callable, an object)
        return DiskCache(Path(self.cache_dir) if self.cache_dir is not None
                         else default_cache_dir())

    def _load(self, key: tuple[Any, ...], dig: str) -> LaunchConfig | None:
        if len(self.configs) == 1 and self.space is None:
            return None
        disk = self._disk()
        if disk is None:
            return None
        entry = disk.load(self.fn.__name__, dig)
        if entry is None:
            return None
        idx = entry.get("best_index")
        config: LaunchConfig
        if idx is not None and 0 <= idx < len(self.configs) and \
                str(self.configs[idx]) == entry.get("best_str"):
            config = self.configs[idx]
        elif self.space is not None:
            config = LaunchConfig.from_json(entry["best"])
        else:
            return None
        self.cache[key] = config
        self.cache_hit, self.cache_source = True, "disk"
        if _verbose():
            print(f"autotile autotuning for {self.fn.__name__}, key {key}: cache hit "
                  f"({disk.path(self.fn.__name__, dig)}), best config "
                  f"{config}")
        return config

    def _check_args(self, named: dict[str, Any], grid: Any) -> dict[str, Any] | None:
        if not self.check:
            return None
        if self.small_args is not None and (callable(grid) or not self._small_args_is_default):
            return call_small_args(self.small_args, named, self.arg_names)
        if n_elems(named) <= self.check_max_elems:
            return named
        raise InvalidConfigError(
            f"cannot check candidates of {self.fn.__name__!r}: its arrays hold "
            f"{n_elems(named)} elements > check_max_elems={self.check_max_elems}; pass "
            f"small_args= (a small instance; use a callable grid), raise check_max_elems "
            f"or pass check=False")

    def _tune(self, key: tuple[Any, ...], named: dict[str, Any], grid: Any,
              args: tuple[Any, ...], kwargs: dict[str, Any], space: Space | None,
              dig: str) -> LaunchConfig:
        nargs = dict(zip(self.arg_names, args))
        if space is None:
            candidates = self.prune_configs(nargs, kwargs)
            if len(candidates) == 1:  # as Triton: a single config is not tuned
                self.cache[key] = candidates[0]
                self.cache_source = "single"
                return candidates[0]
        if self.scorer is None:
            raise InvalidConfigError(f"kernel {self.fn.__name__!r} has several candidates and "
                                     f"no scorer: pass scorer=")
        if isinstance(self.scorer, KernelModelScorer):
            shape, _ = self.scorer.shape_of(named)
            bad = {d: v for d, v in shape.items() if v < 1}
            if bad:
                raise InvalidConfigError(
                    f"cannot tune {self.fn.__name__!r}: the {self.scorer.kernel_name} GPU model "
                    f"needs every problem dimension >= 1, got "
                    f"{', '.join(f'{d}={v}' for d, v in bad.items())} with a non-empty grid; "
                    f"pass scorer= (a scorer that handles it) or a single config to launch "
                    f"this call")
        verbose = _verbose()
        t0 = time.perf_counter()
        ev = Evaluator(self.fn, grid, named, self._check_args(named, grid), self.scorer,
                       self.pre_hook, self.post_hook, self.reference, self.rtol, self.atol,
                       {k: v for k, v in kwargs.items() if k in _INTERPRETER_OPTIONS})
        if space is None:
            pruned = [TuningRecord(c, "pruned", reason="prune_configs_by")
                      for c in self.configs if c not in set(candidates)]
            if self.scheduler is not None and len(candidates) > 1:
                # score every candidate on the cluster; checks stay here, in order
                ev.scores = dict(zip(candidates, parallel_map(
                    score_candidate, candidates, shared=(self.scorer, named, ev.scorer_extra()),
                    n_jobs=len(candidates), scheduler=self.scheduler)))
            for c in candidates:
                rec = ev.evaluate(c)
                if verbose:
                    print(f"autotile autotuning {self.fn.__name__}: {rec.describe()}")
            history = ev.majority() + pruned
        else:
            history = self._search(ev, space, verbose)
        self.bench_time = time.perf_counter() - t0
        self.n_tuned += 1
        self.history = history
        self.histories[key] = history
        self.configs_timings = {r.config: r.time_s for r in history if r.status != "pruned"}
        ok = [r for r in history if r.status == "ok"]
        if not ok:
            lines = "\n".join(f"  {r.describe()}" for r in history)
            raise MeasureError(f"no valid config for kernel {self.fn.__name__!r} with key "
                               f"{key}; every candidate was skipped:\n{lines}")
        best_rec = min(ok, key=lambda r: r.time_s)
        best = best_rec.config
        self.cache[key] = best
        self.cache_source = "tuned"
        # as Triton: zero the reset_to_zero buffers once more before the real launch
        self.pre_hook({**named, **best.all_kwargs()}, reset_only=True)
        self._store(key, dig, best, history)
        if verbose:
            print(f"autotile autotuning for function {self.fn.__name__},\nwith key as {key},\n"
                  f"finished after {self.bench_time:.2f}s ({len(history)} candidates, "
                  f"{len(ok)} valid),\nbest config selected: {best}; "
                  f"time_s={best_rec.time_s:.4g}")
        return best

    def _search(self, ev: Evaluator, space: Space, verbose: bool) -> list[TuningRecord]:
        from autotile.search import tune

        measurer = CandidateMeasurer(ev)
        with warnings.catch_warnings():
            # tune() warns when every trial failed; _tune raises a MeasureError that
            # lists each candidate's reason instead.
            warnings.filterwarnings("ignore", r"study .*: all \d+ trials of this run failed",
                                    RuntimeWarning)
            study = tune(space, measurer, searcher=self.searcher, budget=self.budget,
                         seed=self.seed, searcher_kwargs=self.searcher_kwargs,
                         storage=":memory:", progress=False,
                         study_name=f"autotune-{self.fn.__name__}")
        self.study = study
        history: list[TuningRecord] = []
        for t in sorted(study.optuna_study.get_trials(deepcopy=False), key=lambda t: t.number):
            ua = t.user_attrs
            if "cached_from" in ua or "config" not in ua:
                continue
            rec = measurer.by_text.get(str(ua["config"]))
            if rec is None:  # the study rejected it against the space's constraints
                rec = TuningRecord(self._parse(space, str(ua["config"])), "infeasible",
                                   reason=str(ua.get("error")))
            history.append(rec)
            if verbose:
                print(f"autotile autotuning {self.fn.__name__}: {rec.describe()}")
        return history

    @staticmethod
    def _parse(space: Space, text: str) -> LaunchConfig:
        values: dict[str, Any] = {}
        for part in text.split(", "):
            k, _, v = part.partition("=")
            try:
                values[k] = space[k].parse_value(v)
            except (KeyError, InvalidConfigError, ValueError):
                values[k] = v
        return LaunchConfig.from_knobs(values)

    def _store(self, key: tuple[Any, ...], dig: str, best: LaunchConfig,
               history: list[TuningRecord]) -> None:
        disk = self._disk()
        if disk is None:
            return
        idx = self.configs.index(best) if self.space is None else None
        if idx is None and best.pre_hook is not None:
            return
        entry = {"kernel": self.fn.__name__, "key": [repr(k) for k in key],
                 "hardware": str(getattr(self.hardware, "name", self.hardware)),
                 "best": json.loads(best.to_json()), "best_str": str(best),
                 "best_index": idx, "tuning_s": self.bench_time,
                 "history": [r.to_json() for r in history]}
        try:
            disk.store(self.fn.__name__, dig, entry)
        except OSError as exc:
            warnings.warn(f"autotune of {self.fn.__name__!r}: could not write the disk cache "
                          f"file {str(disk.path(self.fn.__name__, dig))!r} (cache_dir="
                          f"{str(disk.directory)!r}): {exc}; the tuning is kept in memory only",
                          RuntimeWarning, stacklevel=2)

