"""``GpuAutotuner``: ``@autotune`` with real GPU timings (Triton's contract, plus a model prior).

The protocol of one tuning (one key), in order:

1. Triton's ``prune_configs_by`` (``early_config_prune``, ``perf_model`` /
   ``top_k``).
2. The disk cache: every candidate measured before for this kernel, key,
   GPU and Triton version keeps its record and is not measured again.
3. The GPU model ranks the rest (:func:`~autotile.tuner._gpu_protocol.rank_by_model`):
   a candidate it finds infeasible, or predicts slower than ``prune_factor``
   times its best, is pruned and never compiled.
   The ranking may cost at most
   :func:`~autotile.tuner._gpu_protocol.prior_cost_cap_s` (what timing the
   whole list costs, and ``model_budget_s``); a ranking that cannot finish
   within it stops. The prior is skipped before any prediction when the
   list's predictions would not fit at the cost per prediction an earlier
   tuning measured (this process, else the disk cache) or, before any was
   measured, at the model's ``cost_hint_s`` (1 ms for a spec's analytic
   model, 0.5 s for the records model; :meth:`GpuAutotuner.predict`).
4. The model's first ``min_measured`` survivors compile ahead, in one batch (all of
   them when none has a finite prediction, the prior skipped say: the early stop then
   cannot stop, and every one will be measured; later ones otherwise compile when the
   early stop reaches them). The first compiles in this process (in a thread,
   under ``compile_timeout_s``); if it takes at most
   :data:`~autotile.tuner._gpu_session.IN_PROCESS_PROBE_S`, all compile here, each
   under the same limit, and the workers (if started) are stopped. The
   ``n_compile_jobs`` workers (:class:`~autotile.tuner.CompilePool`) start once the
   first compile has run :data:`~autotile.tuner._gpu_session.POOL_START_AFTER_S`
   (0.5 s), so a fast first compile starts none. A slower one shares the rest of its
   batch (``compile_mode`` ``"shared"``): this process compiles it in order once the
   first compile ends, and a worker takes the last config nobody has taken only once
   it is ready; when nothing is left to take, this process waits at most
   :data:`~autotile.tuner._gpu_session.TAKE_OVER_AFTER_S` (0.25 s) for the workers'
   running compiles, then compiles again those still running, so the batch ends at
   most that much later than compiling it all here would
   (:meth:`GpuSession._share`). After a compile here past the
   limit, the workers compile the rest (``"pool"``).
5. In model order, each candidate is checked (one run on the call's tensors,
   compared with ``reference`` or the first valid candidate) and timed once
   with ``do_bench``, until the early-stop rule
   (:func:`~autotile.tuner._gpu_protocol.worth_measuring`) says the rest cannot
   pay. Each of these first-pass timings gets
   :data:`~autotile.tuner._gpu_protocol.FIRST_PASS_SHARE` (a quarter) of
   ``warmup`` and ``rep``: it only chooses what is re-timed.
6. The ``retime_top`` fastest (less those more than
   :data:`~autotile.tuner._gpu_protocol.RETIME_GAP` slower than the fastest;
   the two fastest always) are re-timed in ``retime_rounds`` interleaved
   rounds, each with ``1 / retime_rounds`` of the share
   :func:`~autotile.tuner._gpu_protocol.bench_share` of ``warmup`` and ``rep``
   (the share that would keep first pass and re-time, at that share each, within
   ``triton.autotune``'s own timing budget over the list, ``len(list) * (warmup +
   rep)``; with the cheaper first pass they cost less);
   the winner has the lowest median. A measured candidate whose time
   (taken at another moment) beats the winner's fastest round is re-timed
   against the winner in the same way; the pick is the winner of the last
   rounds (or a better cached record), never a time taken at another moment
   (:meth:`GpuAutotuner._retime`).

The wall time of each step is kept in :attr:`GpuAutotuner.phase_s`
(:data:`~autotile.tuner._gpu_session.PHASES`).
"""

from __future__ import annotations

import inspect
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from autotile.errors import InvalidConfigError, MeasureError
from autotile.measure import HardwareProfile
from autotile.tuner import _gpu_protocol, _gpu_session
from autotile.tuner._autotuner import PRINT_ENV, TunerCommon, _n_programs, _names, _tolerance
from autotile.tuner._compile_ahead import CompilePool
from autotile.tuner._config import (
    LaunchConfig,
    check_bench_budgets,
    check_cache_dir,
    check_space_search,
)
from autotile.tuner._disk_cache import source_hash
from autotile.tuner._gpu_backend import GpuBackend, is_triton_jit
from autotile.tuner._gpu_cache import ConfigRecordCache, record_from_json
from autotile.tuner._gpu_check import GpuChecker
from autotile.tuner._gpu_prior import ModelPrior, model_prior
from autotile.tuner._gpu_protocol import (
    Prediction,
    bench_share,
    diversity_probe,
    prior_cost_cap_s,
    rank_by_model,
    retime_leaders,
    worth_measuring,
)
from autotile.tuner._gpu_session import GpuSession
from autotile.tuner._record import TuningRecord

__all__ = ["GpuAutotuner", "as_launch_config", "MAX_CHALLENGES"]

#: Most extra re-timing rounds' sets one tuning spends on challengers (a measured
#: candidate whose time beats the re-timed winner's, timed at another moment). A
#: bound, not fitted: each set costs ``bench_share * (warmup + rep)`` per candidate.
MAX_CHALLENGES = 3


def _finite_prediction(p: Prediction | None) -> bool:
    """Whether ``p`` is a prediction the early stop can act on (a finite time)."""
    return p is not None and p.time_s is not None and math.isfinite(p.time_s)


def _verbose() -> bool:
    return os.environ.get(PRINT_ENV, "").strip().lower() not in ("", "0", "false", "no")


def as_launch_config(c: Any) -> LaunchConfig:
    """A :class:`LaunchConfig` from a LaunchConfig, a ``triton.Config`` or a flat mapping.

    A ``triton.Config`` (anything with ``kwargs``, ``num_warps`` and
    ``num_stages``) keeps its ``num_ctas``, ``maxnreg`` and ``pre_hook``.
    """
    if isinstance(c, LaunchConfig):
        return c
    if isinstance(c, Mapping):
        return LaunchConfig.from_knobs(c)
    if hasattr(c, "kwargs") and hasattr(c, "num_warps") and hasattr(c, "num_stages"):
        return LaunchConfig(dict(c.kwargs), num_warps=c.num_warps, num_stages=c.num_stages,
                            num_ctas=getattr(c, "num_ctas", 1) or 1,
                            maxnreg=getattr(c, "maxnreg", None),
                            pre_hook=getattr(c, "pre_hook", None))
    raise InvalidConfigError(f"a config must be a LaunchConfig, a triton.Config or a mapping, "
                             f"got {type(c).__name__}")


class GpuAutotuner(TunerCommon):
    """A kernel that picks its best config per key by timing it on the GPU.

    Built by :func:`~autotile.tuner.autotune` when the GPU backend is chosen;
    :func:`~autotile.tuner.autotune` documents the parameters. Launch it like
    the kernel: ``kernel[grid](*args, **kwargs)`` with device tensors.

    Attributes
    ----------
    fn : object
        The wrapped kernel (an autotile ``@jit`` kernel or a ``triton.jit`` function).
    kernel : object or None
        What runs on the device (``fn`` itself, or its ``triton.jit`` port).
    backend : GpuBackend
    configs, keys, cache, best_config, configs_timings, history, histories, study,
    n_tuned, cache_hit, cache_source, bench_time
        As :class:`~autotile.tuner.Autotuner`; ``configs_timings`` holds measured
        seconds (the re-timed median for the leaders).
    n_compiled, n_timed : int
        Configs compiled and first-pass timings of the latest tuning.
    retime_orders : list of list of LaunchConfig
        The order of each interleaved re-timing round of the latest tuning.
    compile_mode : str
        Where the latest tuning compiled: ``"here"`` (this process, after a
        fast first compile), ``"shared"`` (after a slow first compile: this
        process compiled in order while the ready workers took configs from
        the end), ``"pool"`` (worker processes, after a compile here ran past
        ``compile_timeout_s``) or ``"probe"`` (it compiled nothing with the
        pool on, or ran without one).
    compiled_by : dict of LaunchConfig to str
        Where each config of the latest tuning was compiled: ``"here"`` or
        ``"pool"``.
    predictions : dict of LaunchConfig to Prediction
        The model's predictions of the latest tuning.
    prior_note : str
        What the model prior did in the latest tuning (ranked how many in how
        long, skipped and why: the model's cost hint or an earlier tuning's
        measured cost, or no model).
    phase_s : dict of str to float
        Wall seconds of the latest tuning per phase
        (:data:`~autotile.tuner._gpu_session.PHASES`); they sum to
        ``bench_time``.
    bench_share : float
        The share of ``warmup`` and ``rep`` each re-timed candidate of the latest
        tuning got over its rounds
        (:func:`~autotile.tuner._gpu_protocol.bench_share`; each first-pass timing
        got :data:`~autotile.tuner._gpu_protocol.FIRST_PASS_SHARE`).
    n_bench : int
        ``do_bench`` calls of the latest tuning (first pass and re-time rounds).
    bench_ms : float
        The ``warmup + rep`` budgets of those calls, summed, milliseconds.
    """

    _convert = staticmethod(as_launch_config)

    def __init__(self, fn: Any, backend: GpuBackend, configs: Sequence[Any] | None,
                 key: Sequence[str], reset_to_zero: Sequence[str] | None = None,
                 restore_value: Sequence[str] | None = None,
                 pre_hook: Callable[..., Any] | None = None,
                 post_hook: Callable[..., Any] | None = None,
                 prune_configs_by: Mapping[str, Any] | None = None, warmup: Any = None,
                 rep: Any = None, *, space: Any = None, searcher: str = "random",
                 budget: int = 50, seed: int | None = 0,
                 searcher_kwargs: Mapping[str, Any] | None = None, scorer: Any = None,
                 hardware: HardwareProfile | None = None,
                 reference: Callable[[dict[str, Any]], Any] | None = None, check: bool = True,
                 rtol: float | None = None, atol: float | None = None,
                 cache_dir: str | os.PathLike[str] | None = None, disk_cache: bool = True,
                 model_prior: bool = True, prune_factor: float | None = 3.0,
                 min_measured: int = 4, early_stop: bool = True, retime_top: int = 3,
                 retime_rounds: int = 3, compile_ahead: bool = True,
                 n_compile_jobs: int | None = None, compile_timeout_s: float | None = 60.0,
                 model_budget_s: float | None = 3.0, **ignored: Any) -> None:
        from autotile.lang import JITFunction

        if not (isinstance(fn, JITFunction) or is_triton_jit(fn)):
            raise InvalidConfigError(f"@autotune must sit above @jit or @triton.jit: it wraps a "
                                     f"kernel, got {type(fn).__name__}")
        self.fn, self.backend = fn, backend
        self.base_fn = fn.fn
        self.__name__ = getattr(fn, "__name__", fn.fn.__name__)
        self.__doc__ = fn.fn.__doc__
        self.arg_names = list(fn.arg_names)
        self._constexprs = {self.arg_names[i] for i in getattr(fn, "constexprs", [])}
        self.configs = self._candidates(configs, space, prune_configs_by, as_launch_config)
        self.space, self.searcher, self.seed = space, searcher, seed
        self.budget = check_space_search(searcher, budget, seed, searcher_kwargs)
        self.searcher_kwargs = dict(searcher_kwargs or {})
        self.keys = self._names("key", key)
        self.reset_to_zero = self._buffers("reset_to_zero", reset_to_zero)
        self.restore_value = self._buffers("restore_value", restore_value)
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
        self.warmup_ms = 25.0 if warmup is None else float(warmup)
        self.rep_ms = 100.0 if rep is None else float(rep)
        if hardware is not None and not isinstance(hardware, HardwareProfile):
            raise TypeError(f"@autotune of {self.__name__!r}: hardware must be a "
                            f"HardwareProfile, got {type(hardware).__name__}")
        self.hardware = hardware
        self.scorer = scorer
        self.reference, self.check = reference, bool(check)
        self.rtol, self.atol = _tolerance("rtol", rtol), _tolerance("atol", atol)
        self.cache_dir, self.disk_cache = cache_dir, bool(disk_cache)
        check_cache_dir(cache_dir, self.disk_cache)
        self.model_prior = bool(model_prior)
        if prune_factor is not None and not (isinstance(prune_factor, (int, float))
                                             and prune_factor >= 1):
            raise InvalidConfigError(f"prune_factor must be a number >= 1 or None, got "
                                     f"prune_factor={prune_factor!r}")
        self.prune_factor = None if prune_factor is None else float(prune_factor)
        for name, v, lo in (("min_measured", min_measured, 1), ("retime_top", retime_top, 1),
                            ("retime_rounds", retime_rounds, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise InvalidConfigError(f"{name} must be an int >= {lo}, got {name}={v!r}")
        self.min_measured, self.early_stop = min_measured, bool(early_stop)
        self.retime_top, self.retime_rounds = retime_top, retime_rounds
        self.compile_ahead = bool(compile_ahead) and backend.worker_fn is not None
        n_jobs = n_compile_jobs if n_compile_jobs is not None else min(8, os.cpu_count() or 1)
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
            raise InvalidConfigError(f"n_compile_jobs must be an int >= 1, got "
                                     f"n_compile_jobs={n_compile_jobs!r}")
        self.n_compile_jobs = n_jobs
        if compile_timeout_s is not None and not compile_timeout_s > 0:
            raise InvalidConfigError(f"compile_timeout_s must be > 0 seconds or None, got "
                                     f"compile_timeout_s={compile_timeout_s!r}")
        self.compile_timeout_s = compile_timeout_s
        if model_budget_s is not None and (isinstance(model_budget_s, bool) or not isinstance(
                model_budget_s, (int, float)) or not model_budget_s >= 0):
            raise InvalidConfigError(f"model_budget_s must be a number of seconds >= 0 or None, "
                                     f"got model_budget_s={model_budget_s!r}")
        self.model_budget_s = None if model_budget_s is None else float(model_budget_s)
        self.kernel: Any = None
        self.cache: dict[tuple[Any, ...], LaunchConfig] = {}
        self.histories: dict[tuple[Any, ...], list[TuningRecord]] = {}
        self.history: list[TuningRecord] = []
        self.configs_timings: dict[LaunchConfig, float] = {}
        self.predictions: dict[LaunchConfig, Prediction] = {}
        self.best_config: LaunchConfig | None = None
        self.study: Any = None
        self.n_tuned = self.n_compiled = self.n_timed = 0
        self.retime_orders: list[list[LaunchConfig]] = []
        self.compile_mode = "probe"
        self.compiled_by: dict[LaunchConfig, str] = {}
        self.phase_s: dict[str, float] = {}
        self.bench_share = 1.0
        self.n_bench = 0
        self.bench_ms = 0.0
        self.prior_note = ""
        self._model_s_per_prediction: float | None = None
        self._n_rankings = 0
        self.cache_hit = False
        self.cache_source: str | None = None
        self.bench_time = 0.0
        self._restore_copies: dict[str, Any] = {}
        self._source_hash = source_hash(self.base_fn)
        self._tuned_names: set[str] = set().union(*(c.all_kwargs() for c in self.configs))

    def __repr__(self) -> str:
        form = f"space={self.space!r}" if self.space is not None else f"{len(self.configs)} configs"
        return f"GpuAutotuner({self.__name__!r}, {form}, key={self.keys}, backend={self.backend!r})"

    def _names(self, what: str, names: Sequence[str] | str | None) -> list[str]:
        return _names(what, names, self.arg_names)

    def _buffers(self, what: str, names: Sequence[str] | None) -> list[str]:
        out = self._names(what, names)
        for n in out:
            if n in self._constexprs:
                raise InvalidConfigError(
                    f"{what} must name tensor (pointer) arguments of kernel {self.__name__!r}, "
                    f"got {n!r}, a tl.constexpr parameter")
        return out

    # -- hooks (Triton's defaults, on device tensors) ----------------------------------
    def pre_hook(self, kwargs: dict[str, Any], reset_only: bool = False) -> None:
        """The user's ``pre_hook``, else zero ``reset_to_zero`` and save ``restore_value``."""
        if self.user_pre_hook is not None:
            if not reset_only:
                self.user_pre_hook(kwargs)
            elif "reset_only" in inspect.signature(self.user_pre_hook).parameters:
                self.user_pre_hook(kwargs, reset_only=True)
            return
        for name in self.reset_to_zero:
            if kwargs.get(name) is not None:
                self.backend.zero_(kwargs[name])
        if not reset_only:
            self._restore_copies = {n: self.backend.clone(kwargs[n]) for n in self.restore_value
                                    if kwargs.get(n) is not None}

    def post_hook(self, kwargs: dict[str, Any], exception: BaseException | None) -> None:
        """The user's ``post_hook``, else copy the saved ``restore_value`` tensors back."""
        if self.user_post_hook is not None:
            self.user_post_hook(kwargs, exception)
            return
        for name, saved in self._restore_copies.items():
            self.backend.copy_(kwargs[name], saved)
        self._restore_copies = {}

    # -- launch -----------------------------------------------------------------------
    def __getitem__(self, grid: Any) -> Callable[..., None]:
        def launcher(*args: Any, **kwargs: Any) -> None:
            self.run(*args, grid=grid, **kwargs)

        return launcher

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        named = dict(zip(self.arg_names, args))
        named.update({k: v for k, v in kwargs.items() if k in self.arg_names})
        for p in inspect.signature(self.base_fn).parameters.values():
            if p.name not in named and p.default is not inspect.Parameter.empty:
                named[p.name] = p.default
        return named

    def tuning_key(self, named: Mapping[str, Any]) -> tuple[Any, ...]:
        """The ``key`` values, then ``str(dtype)`` of every argument with a dtype (as Triton)."""
        k: list[Any] = [named[n] for n in self.keys if n in named]
        k += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return tuple(k)

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> None:
        """Tune on a new key (GPU timings), then launch the best config.

        Raises
        ------
        InvalidConfigError
            If a keyword argument is also a tuned meta-parameter, or an
            argument named by ``reset_to_zero``/``restore_value`` is not a tensor.
        MeasureError
            If no candidate is valid (the message lists each reason).
        """
        if self.kernel is None:
            self.kernel = self.backend.kernel(self.fn)
        named = self._bind(args, kwargs)
        # the names the call gives, by keyword or position (Triton's own launcher would
        # fail on a positional one with "got multiple values for argument")
        conflicts = sorted((set(kwargs) | set(self.arg_names[:len(args)])) & self._tuned_names)
        if conflicts:
            raise InvalidConfigError(
                f"Conflicting meta-parameters: {', '.join(conflicts)}. Make sure that you "
                f"don't re-define auto-tuned symbols.")
        for what, names in (("reset_to_zero", self.reset_to_zero),
                            ("restore_value", self.restore_value)):
            for n in names:
                if n in named and named[n] is not None and not self.backend.is_tensor(named[n]):
                    raise InvalidConfigError(
                        f"{what} must name tensor (pointer) arguments of kernel "
                        f"{self.__name__!r}, got {n!r} = {named[n]!r} "
                        f"({type(named[n]).__name__})")
        key = self.tuning_key(named)
        config = self.cache.get(key)
        self.cache_hit = config is not None
        self.cache_source = "memory" if config is not None else None
        if config is None:
            config = self._tune(key, named, grid, args, kwargs)
        self.best_config = config
        if config.pre_hook is not None:
            config.pre_hook({**named, **config.all_kwargs()})
        self.backend.launch(self.kernel, grid, args, {**kwargs, **config.all_kwargs()})

    # -- candidates -------------------------------------------------------------------
    def predict(self, candidates: Sequence[LaunchConfig], named: Mapping[str, Any],
                grid: Any) -> dict[LaunchConfig, Prediction]:
        """The model's prediction of each candidate at the call's shape (no device use).

        See :meth:`model`; empty when ``model_prior=False`` or no model applies.
        The ranking may cost at most
        :func:`~autotile.tuner._gpu_protocol.prior_cost_cap_s` seconds (timing
        the whole list, and ``model_budget_s``; the model's construction
        counts). The prior is skipped before any prediction when ``n *
        s_per_prediction`` exceeds the cap, ``s_per_prediction`` being, in
        this order:

        1. the cost an earlier tuning of this kernel measured: in this
           process (another key), else kept in the disk cache (same kernel
           source, model, GPU and Triton version) by an earlier process; a
           first tuning that stopped after its single prediction is not
           evidence enough (that one may be one-time costs);
        2. else the model's ``cost_hint_s``, a low estimate known before any
           prediction (:class:`~autotile.tuner._gpu_prior.ModelPrior`): 1 ms
           for a spec's analytic model, 0.5 s for the records model
           (:data:`~autotile.tuner._library.RECORDS_COST_HINT_S`, where it
           was measured); a user's ``scorer`` without a ``cost_hint_s``
           attribute has none, and is not skipped by this rule.

        Otherwise candidates are predicted in order; the ranking stops,
        leaving the rest unknown, once the time spent exceeds the cap or, from
        the second prediction on, the time spent plus the latest prediction's
        time for each remaining candidate would exceed it (the first
        prediction also pays one-time costs, so it does not project).
        :attr:`prior_note` says what happened.
        """
        t0 = time.perf_counter()
        n = len(candidates)
        cap = prior_cost_cap_s(n, self.warmup_ms, self.rep_ms, self.model_budget_s)

        def skip_note(per: float | None, source: str) -> str | None:
            """Why the prior is skipped at ``per`` seconds a prediction; None: it is not."""
            if cap is None or per is None or n * per <= cap:
                return None
            return (f"skipped: {n} predictions at {per:.3g} s each ({source}) would exceed "
                    f"the prior's cap of {cap:.3g} s")

        per, source = self._model_s_per_prediction, "an earlier tuning"
        if per is None and cap is not None:
            per = self._records_cache().load_prior_cost(self._prior_tag())
            source = "an earlier tuning, kept in the disk cache"
            if per is not None:
                self._model_s_per_prediction = per
        note = skip_note(per, source)
        if note is not None:
            self.prior_note = note
            return {}
        model = self.model(named, grid)
        if model is None:
            self.prior_note = "no model"
            return {}
        if per is None:
            note = skip_note(getattr(model, "cost_hint_s", None), "the model's cost hint")
            if note is not None:
                self.prior_note = note
                return {}
        out: dict[LaunchConfig, Prediction] = {}
        last = None
        for i, c in enumerate(candidates):
            # the prior must cost less than the measuring it saves (prior_cost_cap_s)
            spent = time.perf_counter() - t0
            if cap is not None and out and (spent > cap or (
                    len(out) >= 2 and last is not None and spent + last * (n - i) > cap)):
                break
            t1 = time.perf_counter()
            out[c] = model(c)
            last = time.perf_counter() - t1
        # remember a prediction's cost for the next key: the latest one, unless it was
        # the only one of this tuner's first ranking (one-time costs, e.g. imports and
        # the interpreter's caches, may be all of it; the next key then predicts one again)
        if last is not None and (len(out) >= 2 or self._n_rankings > 0):
            self._model_s_per_prediction = last
            self._records_cache().store_prior_cost(self._prior_tag(), last)
        if out:
            self._n_rankings += 1
        self.prior_note = (f"ranked {len(out)} of {n} in {time.perf_counter() - t0:.3g} s"
                           + (f" (cap {cap:.3g} s)" if cap is not None else ""))
        return out

    def _prior_tag(self) -> str:
        """Which prior a stored cost belongs to: the default model, or the user's scorer."""
        s = self.scorer
        if s is None:
            return "default-model"
        tag = getattr(s, "cache_tag", None)
        if isinstance(tag, str):
            return f"scorer:{tag}"
        owner = s if callable(s) and hasattr(s, "__qualname__") else type(s)
        return f"scorer:{getattr(owner, '__module__', '')}.{owner.__qualname__}"

    def model(self, named: Mapping[str, Any], grid: Any) -> ModelPrior | None:
        """The prior of one tuning (:func:`~autotile.tuner._gpu_prior.model_prior`), or None.

        None when ``model_prior=False`` or no model can be built for the kernel.
        """
        if not self.model_prior:
            return None
        return model_prior(self.fn, self.scorer, self.hardware, self.backend.device_name(),
                           named, grid, verbose=_verbose())

    # -- disk cache -------------------------------------------------------------------
    def _records_cache(self) -> ConfigRecordCache:
        return ConfigRecordCache(
            self.__name__, self._source_hash, self.backend.device_name(), self.backend.version(),
            f"check={self.check},reference={self.reference is not None},rtol={self.rtol},"
            f"atol={self.atol}", self.cache_dir, self.disk_cache)

    # -- tuning -----------------------------------------------------------------------
    def _session(self, named: dict[str, Any], grid: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> GpuSession:
        checker = GpuChecker(self.backend, named, self.reference, self.rtol, self.atol) \
            if self.check else None
        return GpuSession(self.backend, self.kernel, grid, args, kwargs, named, self.pre_hook,
                          self.post_hook, checker, self.warmup_ms, self.rep_ms)

    def _pool(self) -> CompilePool | None:
        if not self.compile_ahead:
            return None
        assert self.backend.worker_fn is not None
        return CompilePool(self.backend.worker_fn, n_jobs=self.n_compile_jobs,
                           timeout_s=self.compile_timeout_s, init_fn=self.backend.worker_init,
                           mp_context=self.backend.mp_context,
                           preload=self.backend.worker_preload)

    def _tune(self, key: tuple[Any, ...], named: dict[str, Any], grid: Any,
              args: tuple[Any, ...], kwargs: dict[str, Any]) -> LaunchConfig:
        t0 = time.perf_counter()
        if self.space is None:
            candidates = self.prune_configs(dict(zip(self.arg_names, args)), kwargs)
            if len(candidates) == 1:  # as Triton: a single config is not tuned
                self.cache[key] = candidates[0]
                self.cache_source = "single"
                return candidates[0]
            if all(_n_programs(grid, named, c) == 0 for c in candidates):
                self.cache_source = "empty"
                return candidates[0]
        records_cache = self._records_cache()
        known = records_cache.load(key)
        session = self._session(named, grid, args, kwargs)
        if self.space is None:
            history = self._tune_list(candidates, known, named, grid, session)
        else:
            history = self._tune_space(known, named, grid, session)
        if session.checker is not None:
            session.checker.restore()
        self.bench_time = time.perf_counter() - t0
        self.n_tuned += 1
        self.n_compiled, self.n_timed = session.n_compiled, session.n_timed
        self.phase_s = dict(session.phase_s)
        self.phase_s["other"] = max(0.0, self.bench_time - sum(
            v for k, v in self.phase_s.items() if k != "other"))
        self.bench_share, self.n_bench = session.bench_share, session.n_bench
        self.bench_ms = session.bench_ms
        self.retime_orders = session.retime_orders
        self.compile_mode = session.compile_mode
        self.compiled_by = dict(session.compiled_by)
        self.history = history
        self.histories[key] = history
        self.configs_timings = {r.config: r.time_s for r in history if r.status != "pruned"}
        ok = [r for r in history if r.status == "ok"]
        if not ok:
            lines = "\n".join(f"  {r.describe()}" for r in history)
            raise MeasureError(f"no valid config for kernel {self.__name__!r} with key {key} "
                               f"on {self.backend.device_name()}; every candidate was "
                               f"skipped:\n{lines}")
        # the re-timing's winner is the only fresh candidate that can be picked (a time
        # taken at another moment never decides against it); cached records compete
        if session.winner is not None:
            ok = [r for r in ok if r.config == session.winner or r.metrics.get("from_cache")]
        best = min(ok, key=lambda r: r.time_s).config
        self.cache[key] = best
        fresh = [r for r in history if not r.metrics.get("from_cache")]
        self.cache_source = "tuned" if fresh and any(r.status != "pruned" for r in fresh) \
            else "disk"
        self.cache_hit = self.cache_source == "disk"
        # as Triton: zero the reset_to_zero tensors once more before the real launch
        self.pre_hook({**named, **best.all_kwargs()}, reset_only=True)
        records_cache.store(key, history)
        if _verbose():
            for r in history:
                print(f"autotile autotuning {self.__name__}: {r.describe()}")
            print(f"autotile autotuning for function {self.__name__} on "
                  f"{self.backend.device_name()}, key {key}: {self.bench_time:.2f}s, "
                  f"{session.n_compiled} compiled, {session.n_timed} timed; best config {best}")
        return best

    def _baseline(self, known: Mapping[str, Mapping[str, Any]],
                  candidates: Sequence[LaunchConfig]) -> LaunchConfig | None:
        """The cached best config, run once as the check's baseline (no reference given)."""
        if self.reference is not None or not self.check:
            return None
        ok = [(float(d["time_s"]), d) for d in known.values()
              if d.get("status") == "ok" and d.get("time_s") is not None]
        if not ok:
            return None
        best = LaunchConfig.from_json(min(ok, key=lambda t: t[0])[1]["config"])
        by_text = {str(c): c for c in candidates}
        return by_text.get(str(best), best)

    def _tune_list(self, candidates: list[LaunchConfig], known: Mapping[str, Any],
                   named: dict[str, Any], grid: Any, session: GpuSession) -> list[TuningRecord]:
        records: dict[LaunchConfig, TuningRecord] = {}
        for c in candidates:
            if c.pre_hook is None and str(c) in known:
                records[c] = record_from_json(c, known[str(c)])
        todo = [c for c in candidates if c not in records]
        pool = self._pool() if todo else None
        self.prior_note = ""
        try:
            session.pool_workers = min(len(todo), self.min_measured) + 1
            if pool is not None and _gpu_session.POOL_START_AFTER_S <= 0:
                # the workers start up while the model ranks; by default they start
                # only once the first compile has run POOL_START_AFTER_S (their start-up
                # slowed a fast first compile on the H200: GpuSession._compile_here)
                with session.phase("pool"):
                    pool.start(session.pool_workers)
            with session.phase("model"):
                preds = self.predict(todo, named, grid) if todo else {}
            self.predictions = preds
            order, pruned = rank_by_model(todo, preds, self.prune_factor)
            # the timings share triton.autotune's budget over the same list (bench_share)
            n_retime = min(self.retime_top, len(order)) if len(order) >= 2 else 0
            session.bench_share = bench_share(len(todo), len(order), n_retime)
            for c, why in pruned.items():
                records[c] = TuningRecord(c, "pruned", reason=why,
                                          metrics={} if preds[c].time_s is None else
                                          {"model_time_s": float(preds[c].time_s or 0.0)})
            baseline = self._baseline(known, candidates) if order else None
            # compile ahead (in parallel) only what will surely be measured: the model's
            # first min_measured; later candidates compile when the early-stop rule
            # reaches them, so a candidate it stops before is never compiled. Without a
            # finite prediction the rule cannot stop (worth_measuring measures every
            # unknown candidate): all will be measured, so all compile ahead in one batch
            # (shared with the workers) rather than one by one here after the head
            head = order[:self.min_measured] if self.early_stop and any(
                _finite_prediction(preds.get(c)) for c in order) else order
            to_compile = ([baseline] if baseline is not None else []) + head
            failed = session.compile_ahead(to_compile, pool) if to_compile else {}
            compiled = set(to_compile)
            if baseline is not None and baseline not in failed and session.checker is not None:
                # its outputs are what the new candidates are compared with (not timed)
                with session.phase("check"):
                    session.checker.check(*session.check_parts(baseline))
            pairs = [(float(r.metrics["model_time_s"]), r.time_s) for r in records.values()
                     if r.status == "ok" and "model_time_s" in r.metrics]
            best_s = min([r.time_s for r in records.values() if r.status == "ok"],
                         default=math.inf)
            measured: list[TuningRecord] = []
            n_measured = 0
            queue = list(order)
            probed = False
            while queue:
                c = queue[0]
                pred = preds[c].time_s if c in preds else None
                stop = self.early_stop and not worth_measuring(pred, pairs, best_s, n_measured,
                                                               self.min_measured)
                if stop and not probed:
                    # before the stop ends the tuning, measure the candidate least like
                    # those measured: its error enters the stop rule (diversity_probe)
                    probed = True
                    j = diversity_probe(queue, [r.config for r in measured])
                    if j is not None:
                        queue.insert(0, queue.pop(j))
                        c = queue[0]
                        pred = preds[c].time_s if c in preds else None
                        stop = False
                if stop:
                    for rest in queue:
                        records[rest] = failed.get(rest) or TuningRecord(
                            rest, "pruned", reason=f"early stop after {n_measured} measured: "
                            f"the model's remaining candidates, corrected by its observed "
                            f"error, cannot beat the best measured {best_s:.4g} s",
                            metrics={} if preds.get(rest) is None or preds[rest].time_s is None
                            else {"model_time_s": float(preds[rest].time_s or 0.0)})
                    break
                queue.pop(0)
                if c not in compiled:
                    failed.update(session.compile_ahead([c], pool))
                    compiled.add(c)
                if c in failed:
                    records[c] = failed[c]
                    continue
                rec = session.measure(c, pred)
                n_measured += 1
                records[c] = rec
                if rec.status == "ok":
                    measured.append(rec)
                    best_s = min(best_s, rec.time_s)
                    if pred is not None:
                        pairs.append((pred, rec.time_s))
        finally:
            if pool is not None:
                with session.phase("pool"):
                    pool.close()
        self._retime(session, measured, records)
        return [records[c] for c in candidates if c in records]

    def _retime(self, session: GpuSession, measured: Sequence[TuningRecord],
                records: dict[LaunchConfig, TuningRecord]) -> None:
        """Re-time the leaders; then re-time every challenger against the winner.

        The ``retime_top`` fastest of the first pass are re-timed in
        interleaved rounds. A first-pass time and a re-timed median were
        taken at different moments: a slow spell of the host or device during
        the re-time (seen on the H200 as launch-bound 30 us kernels timed up
        to 1.5x slower for a few hundred milliseconds) inflates the leaders'
        medians, and a candidate never re-timed would then win with its
        first-pass time (the 96 x 512 x 64 attention case of the v2 run: the
        4th of the first pass, 26% slower than the best, was picked). So the
        winner is only ever decided between candidates timed in the same
        rounds: while a measured candidate outside the latest rounds has a
        time below the winner's fastest round (beyond the winner's own
        round-to-round noise), it is re-timed together with the winner (at
        most ``len(measured)`` times; :data:`MAX_CHALLENGES`).

        The leaders are the ``retime_top`` fastest of the first pass, less
        those more than :data:`~autotile.tuner._gpu_protocol.RETIME_GAP`
        slower than the fastest (the two fastest always are re-timed;
        :func:`~autotile.tuner._gpu_protocol.retime_leaders`).
        """
        if len(measured) < 2:
            return
        by_config = {r.config: r for r in measured}
        top = [by_config[c] for c in retime_leaders({r.config: r.time_s for r in measured},
                                                    self.retime_top, _gpu_protocol.RETIME_GAP)]
        rng = np.random.default_rng(self.seed)
        group = session.retime(top, self.retime_rounds, rng)
        for r in group:
            records[r.config] = r
        fresh = {r.config for r in measured}
        for _ in range(min(MAX_CHALLENGES, len(measured))):
            winner = min(group, key=lambda r: r.time_s)
            bar = min(winner.time_s, winner.metrics.get("retime_min_s", winner.time_s))
            in_group = {r.config for r in group}
            challengers = sorted((records[c] for c in fresh if c not in in_group
                                  and records[c].status == "ok" and records[c].time_s < bar),
                                 key=lambda r: r.time_s)
            if not challengers:
                break
            group = session.retime([winner, *challengers[:self.retime_top]],
                                   self.retime_rounds, rng)
            for r in group:
                records[r.config] = r
        session.winner = min(group, key=lambda r: r.time_s).config

    def _tune_space(self, known: Mapping[str, Any], named: dict[str, Any], grid: Any,
                    session: GpuSession) -> list[TuningRecord]:
        from autotile.tuner._gpu_space import search_space

        return search_space(self, known, named, grid, session)
