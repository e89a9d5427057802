"""``@autotune``: the decorator that wraps a ``@jit`` kernel in an :class:`Autotuner`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from autotile.errors import InvalidConfigError
from autotile.tuner._autotuner import Autotuner
from autotile.tuner._config import LaunchConfig, check_bench_budgets
from autotile.tuner._gpu_backend import gpu_unavailable_reason, is_triton_jit, resolve_backend
from autotile.tuner._gpu_tuner import GpuAutotuner

__all__ = ["autotune", "GPU_OPTIONS"]

#: Options of the GPU backend only (ignored on the GPU-model path).
GPU_OPTIONS = ("model_prior", "prune_factor", "min_measured", "early_stop", "retime_top",
               "retime_rounds", "compile_ahead", "n_compile_jobs", "compile_timeout_s",
               "model_budget_s")


def autotune(configs: Sequence[LaunchConfig] | None = None, key: Sequence[str] = (),
             prune_configs_by: Mapping[str, Any] | None = None,
             reset_to_zero: Sequence[str] | None = None,
             restore_value: Sequence[str] | None = None,
             pre_hook: Callable[..., Any] | None = None,
             post_hook: Callable[..., Any] | None = None, warmup: Any = None, rep: Any = None,
             **options: Any) -> Callable[[Any], Autotuner | GpuAutotuner]:
    """Decorator that tunes a ``@jit`` kernel's meta-parameters per call key.

    Triton's ``triton.autotune``. Where Triton, PyTorch and a CUDA device are
    present (``backend="auto"``), it times candidates on the GPU
    (:class:`GpuAutotuner`, see "Tuning on a GPU" below); elsewhere it scores
    them with the GPU model, as described next. On a
    launch ``kernel[grid](*args, **kwargs)`` whose key is new, every
    candidate is (1) scored at the real shape by ``scorer`` (the GPU model
    for library kernels) and, when feasible, (2) run in the interpreter on a
    small instance and compared with the first candidate's output (or with
    ``reference``). A candidate that is infeasible, raises, or is wrong is
    skipped with its reason (``Autotuner.history``) and tuning goes on (the
    interpreter's launch options ``sanitize_overflow`` and ``batch_programs``
    given on the call apply to these check launches too, and
    ``sanitize_overflow`` to the records-model scorer's launches). The
    fastest valid one is cached in memory and on disk, then launched on the
    real arguments. A listed config whose block is larger than the problem
    (a library matmul with ``BLOCK_M=64`` at ``M=1``) is scored and run, not
    skipped: the kernel masks the padded rows and columns, as in Triton, and
    the GPU model charges it the whole padded tile.

    A call whose launch grid has no program for every candidate (a matmul
    with ``M=0`` or ``N=0``) is a no-op, as a plain ``@jit`` launch on an
    empty grid: it is not tuned, launches the first config and leaves the
    empty outputs as they are (``cache_source == "empty"``). A zero-size
    dimension that leaves the grid non-empty (matmul ``K=0``) cannot be
    scored by the default GPU-model scorer and raises
    :class:`~autotile.errors.InvalidConfigError` naming it.

    Parameters
    ----------
    configs : list of LaunchConfig, optional
        The candidates. Leave out to give ``space=``.
    key : list of str
        Argument names whose values, together with the dtypes of all array
        arguments, form the tuning key.
    prune_configs_by : dict, optional
        ``"early_config_prune"``: ``f(configs, named_args, **kwargs) ->
        configs``; ``"perf_model"``: ``f(**named_args, **kwargs,
        **config.all_kwargs()) -> estimated time``; ``"top_k"``: how many
        configs the perf model keeps (an int, or a float ``<= 1`` fraction).
        LaunchConfig-list form only.
    reset_to_zero : list of str, optional
        Array (pointer) arguments zeroed before each candidate runs (and
        once more before the real launch after tuning). Each must be a
        kernel parameter that is not ``tl.constexpr`` (checked here) and
        receive a NumPy array (checked at every launch).
    restore_value : list of str, optional
        Array (pointer) arguments copied before each candidate runs and
        restored after; the same rules as ``reset_to_zero``.
    pre_hook : callable, optional
        ``pre_hook(kwargs)`` before each candidate run, with every argument
        and meta-parameter by name. Replaces the ``reset_to_zero`` /
        ``restore_value`` behaviour, as in Triton.
    post_hook : callable, optional
        ``post_hook(kwargs, exception)`` after each candidate run
        (``exception`` is None on success). Replaces the ``restore_value``
        behaviour, as in Triton.
    warmup, rep : float, optional
        GPU backend: ``do_bench``'s warm-up and timing budgets in
        milliseconds (default 25 and 100, Triton's); finite, ``warmup >= 0``
        and ``rep > 0`` (checked with either backend). A first-pass timing
        gets a quarter of them, a re-timed candidate ``bench_share`` of them
        over its rounds. Ignored by the model.
    **options
        Beyond Triton (keyword-only):

        backend : {"auto", "gpu", "model"} or GpuBackend, default="auto"
            ``"auto"``: the GPU when ``import triton, torch`` succeed and
            ``torch.cuda.is_available()``, else the model; ``"gpu"``: the
            GPU or a :class:`~autotile.errors.MeasureError` naming what is
            missing; ``"model"``: the GPU model in the interpreter, as
            without a GPU. A :class:`GpuBackend` instance is used as given
            (tests pass a simulated one).

        space : Space or callable, optional
            Instead of ``configs``: a :class:`~autotile.space.Space` whose
            knobs are the kernel's constexpr names plus ``num_warps`` /
            ``num_stages``, or ``space(args_by_name) -> Space``.
        searcher : str, default="random"
            :func:`autotile.search.make_searcher` name (``"random"``,
            ``"grid"``, ``"model"``, ``"evolutionary"``, ``"tpe"``, ...).
        budget : int, default=50
            Trials of the search (space form).
        seed : int or None, default=0
            Seed of the searcher.
        searcher_kwargs : dict, optional
            Options for the searcher's constructor (space form), as
            :func:`autotile.search.make_searcher` takes them, e.g.
            ``{"n_startup_trials": 4}`` for ``"tpe"``. An option the searcher
            does not take raises :class:`~autotile.errors.InvalidConfigError`
            at decoration, listing the ones it does. They are part of the
            disk-cache key (in any order; arrays by every value); options that
            are not data (a callable, an estimator or ``Prior`` object) have no
            identity stable across processes, and such a tuning is not
            disk-cached.
        scheduler : None, "local", str or distributed.Client, default=None
            Score a config list's candidates in parallel on a Dask cluster
            (``"local"``: a ``LocalCluster``; ``"tcp://host:8786"``: a
            remote scheduler) before they are checked here one by one; the
            records are the same as without it. None scores them in this
            process.
        scorer : callable, optional
            ``scorer(config, args_by_name) -> MeasureResult`` (status and
            ``time_s`` in seconds) or a float ``time_s``. Its code is part
            of the disk-cache key (see Notes); a ``cache_tag`` string
            attribute replaces it. Default (:func:`default_scorer`): for a
            registered kernel whose spec names an analytic model (matmul,
            persistent matmul, fused softmax, flash attention),
            :class:`KernelModelScorer` on ``hardware``; for any other kernel,
            :class:`RecordsScorer`, the records GPU model on the call's own
            arguments and grid (docs/gpu_model.md §4.1).
        hardware : HardwareProfile, default=H100_SXM
            GPU of the default scorer; every field of it (not just its
            name) is part of the cache key.
        small_args : callable, optional
            ``small_args(args_by_name)`` (or ``small_args()``) returning the
            check instance as a tuple or dict of kernel arguments (names it
            leaves out come from the call). Use a callable grid that reads
            the sizes from its ``META`` argument (``META["M"]``, not a
            closure over the caller's ``M``) so the check launch gets the
            instance's own grid; a grid sized for the full problem makes the
            check fail with a reason that says so. Default: a built-in shrink
            for ``matmul_kernel``/``softmax_kernel`` (with a callable grid),
            else the call's own arguments when they hold at most
            ``check_max_elems`` elements; otherwise the launch raises
            :class:`~autotile.errors.InvalidConfigError`.
        reference : callable, optional
            ``reference(args_by_name) -> {arg name: expected array}`` on the
            check instance; default: the first candidate that runs. Any other
            return value (a number, the bare array) makes the launch raise a
            ``TypeError`` saying so.
        check : bool, default=True
            Whether to run the correctness check at all.
        check_max_elems : int, default=65536
            Largest call (total array elements) checked on its own arguments.
        rtol, atol : float, optional
            Tolerances of the comparison, finite and ``>= 0`` (default by
            dtype).
        cache_dir : str or path, optional
            Disk cache directory (created on the first write; must not be an
            existing file); default ``$AUTOTILE_CACHE_DIR`` or
            ``~/.cache/autotile/autotune``. A cache file that cannot be
            written gives a ``RuntimeWarning`` naming it.
        disk_cache : bool, default=True
            Read and write the disk cache.

        GPU backend only (see "Tuning on a GPU"):

        model_prior : bool, default=True
            Rank, prune and order the candidates with the GPU model
            (``scorer`` when given, else :func:`~autotile.perf_model` with
            ``hardware``, default the device's profile), unless it cannot pay
            (``model_budget_s``).
        prune_factor : float or None, default=3.0
            Do not compile a candidate the model predicts slower than this
            many times its best prediction (None: keep all feasible ones).
        min_measured : int, default=4
            The model's top candidates always measured before the early-stop
            rule applies.
        early_stop : bool, default=True
            Stop measuring when the model, corrected by its observed error,
            gives no remaining candidate a chance to beat the best time.
        retime_top, retime_rounds : int, default=3, 3
            Re-time the ``retime_top`` fastest in ``retime_rounds``
            interleaved rounds (fresh random order each) and pick by median;
            a third or later one more than 10 % behind the fastest first
            time is left out (``RETIME_GAP``). Each round times with ``1 /
            retime_rounds`` of a first timing's budgets: a candidate's
            re-timing costs one first timing. Every timing gets the share
            ``min(1, n_list / (n_timed + n_retimed))`` of ``warmup`` and
            ``rep`` (``bench_share``), so that the first pass and the re-time
            together cost no more device time than ``triton.autotune``
            spends timing the same list.
            A measured candidate whose time still beats the winner's fastest
            round is then re-timed against the winner in the same way (at
            most 3 times), so the pick is never decided between times taken
            at different moments.
        compile_ahead : bool, default=True
            Compile in worker processes, under ``compile_timeout_s``: the
            model's first ``min_measured`` candidates (all of them when the
            model predicts none, e.g. when the prior is skipped) in one batch
            before any is timed, each later one when the early stop reaches
            it. The first compile runs in this process: the workers start
            once it has run 0.5 s; when it takes at most 2 s, everything
            compiles here and the workers (if started) are stopped; once it
            has run 2 s, the rest of its batch is shared: this process
            compiles it in order and each worker, once ready, takes a config
            from its end. With the Triton backend the workers are forks of a
            fork server that imports PyTorch and Triton once per process
            (started by the first tuning that starts workers; it holds no
            GPU memory and lives as long as the process).
        n_compile_jobs : int, optional
            Compile workers (default ``min(8, os.cpu_count())``).
        compile_timeout_s : float or None, default=60.0
            Longest compile of one config, seconds; a slower one is stopped
            and recorded ``"failed"`` (and remembered in the disk cache).
        model_budget_s : float or None, default=3.0
            Longest time the model prior may spend ranking, seconds; the
            ranking is also capped at what timing the whole list costs
            (``n_list * (warmup + rep)``). A ranking that cannot finish within
            the cap stops, the remaining candidates unranked and measured after
            the ranked ones. The prior is skipped before any prediction when
            ``n_list`` predictions would not fit at the cost per prediction
            an earlier tuning of the kernel measured (in this process, else
            kept in the disk cache for the same kernel source, model, GPU and
            Triton version), or, before any was measured, at the model's
            ``cost_hint_s`` (a low estimate: 1 ms for a spec's analytic
            model, 0.5 s for the records model, so with the default
            ``warmup`` and ``rep`` the records model never ranks a list; a
            ``scorer`` may declare its own ``cost_hint_s`` attribute, and one
            without it is unknown until measured). None: no limit at all. A
            choice, not measured: a slow prediction (the records model's
            first prediction of layer norm took 1.2-2.8 s on the H200 host,
            while ``triton.autotune`` tuned its 6 configs in 3.3-8.6 s) must not
            cost more than the measuring it can save.

    Returns
    -------
    callable
        Turns a :class:`~autotile.lang.JITFunction` into an :class:`Autotuner`
        (model) or a :class:`GpuAutotuner` (GPU; it also takes a
        ``triton.jit`` function).

    Raises
    ------
    InvalidConfigError
        For a name in ``key``/``reset_to_zero``/``restore_value`` that is
        not a kernel parameter, a ``reset_to_zero``/``restore_value`` name
        that is a ``tl.constexpr`` parameter (or, at launch, gets a scalar
        instead of an array), both ``configs`` and ``space`` given, neither
        given (or ``configs=[]`` without ``space``), ``configs`` not a list
        (a single config), a config that sets a name which is not a kernel
        parameter, ``space`` neither a :class:`~autotile.space.Space` nor a
        callable, a space knob that is neither a kernel parameter nor a
        launch option, ``key`` not a str or list of str, a
        ``prune_configs_by`` ``perf_model`` that returns NaN or a non-number,
        ``rtol``/``atol`` negative or not a finite number,
        ``check_max_elems`` not an int ``>= 0``, or a
        ``cache_dir`` that is an existing file (with ``disk_cache=True``), or
        (at launch) a problem dimension ``< 1`` the default scorer cannot
        model on a non-empty grid.
        Also for a ``triton.jit`` function when the GPU backend is not
        available (``backend="model"``, or ``"auto"`` without a GPU).
    MeasureError
        For ``backend="gpu"`` without Triton, PyTorch or a CUDA device.
    TypeError
        If ``hardware`` is not a :class:`~autotile.measure.HardwareProfile`.

    Notes
    -----
    **Tuning on a GPU.** The arguments are device tensors (``torch``). Per
    new key: Triton's ``prune_configs_by``; candidates already measured for
    this kernel source, key, GPU name and Triton version are taken from the
    disk cache (one record per config, so adding a config to the list
    measures only it); the model prunes and orders the rest; the survivors
    compile ahead in worker processes under ``compile_timeout_s``; then, in
    model order, each is run once on the call's tensors and compared with
    ``reference`` or the first valid candidate (a mismatch is ``"wrong"``
    and never picked), and timed with ``triton.testing.do_bench`` (L2
    flushed) until the early-stop rule holds; the fastest few are re-timed in
    interleaved rounds and the lowest median wins. Out-of-resources configs
    are ``"infeasible"``, compile errors and timeouts ``"failed"``, each
    with its reason in ``history``. The hooks, ``reset_to_zero`` and
    ``restore_value`` act as in Triton around every timed run; after
    tuning (with ``check=True``), the tensors the candidates wrote are put
    back as the call gave them before the real launch. ``small_args``, ``check_max_elems`` and
    ``scheduler`` do not apply.

    The model's disk cache file is keyed by the SHA-256 of the kernel source, the
    tuning key, the candidates (config list, or space JSON + searcher +
    budget + seed), the hardware profile (every field, so a profile
    changed with ``dataclasses.replace`` that keeps the name re-tunes) and
    the scorer: its ``cache_tag`` (for :class:`KernelModelScorer` its kernel,
    hardware and measurer arguments such as ``params``)
    attribute when it has one, else its qualified name and code (source
    text, bytecode and plain closure values of a function; the class source
    of a callable object), so editing the scorer re-tunes. Code the scorer calls into is
    not hashed: give such a scorer a ``cache_tag`` that changes with it. Set
    ``AUTOTILE_PRINT_AUTOTUNING=1`` to print each candidate, the winner and
    the tuning time.

    Examples
    --------
    Every constexpr of the kernel must come from the config or the call
    (``matmul_kernel`` also takes ``PID_ORDER``). The grid callable computes
    the grid from its ``META`` argument, never from the caller's ``M``/``N``:
    the correctness check launches it on a small instance too.

    >>> import numpy as np
    >>> import autotile.lang as tl
    >>> from autotile.kernels import matmul_kernel
    >>> from autotile.tuner import LaunchConfig, autotune
    >>> mm = autotune(configs=[
    ...     LaunchConfig({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8,
    ...             "PID_ORDER": "grouped"}, num_warps=4),
    ...     LaunchConfig({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
    ...             "PID_ORDER": "grouped"}, num_warps=8),
    ... ], key=["M", "N", "K"], disk_cache=False)(matmul_kernel)
    >>> M = N = K = 256
    >>> a, b = np.ones((M, K), np.float16), np.ones((K, N), np.float16)
    >>> c = np.zeros((M, N), np.float16)
    >>> grid = lambda META: (
    ...     tl.cdiv(META["M"], META["BLOCK_M"]) * tl.cdiv(META["N"], META["BLOCK_N"]),)
    >>> mm[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1)
    >>> bool((c == K).all()), [r.status for r in mm.history]
    (True, ['ok', 'ok'])
    >>> mm.best_config.kwargs["BLOCK_M"]
    64
    """
    unknown = set(options) - {"space", "searcher", "budget", "seed", "searcher_kwargs",
                              "scorer", "hardware",
                              "small_args", "reference", "check", "check_max_elems", "rtol",
                              "atol", "cache_dir", "disk_cache", "use_cuda_graph", "do_bench",
                              "cache_results", "scheduler", "backend", *GPU_OPTIONS}
    if unknown:
        raise TypeError(f"autotune() got unexpected keyword arguments {sorted(unknown)}")
    stray = [k for k in ("searcher", "budget", "searcher_kwargs") if k in options]
    if stray and options.get("space") is None:
        raise InvalidConfigError(
            f"autotune(): {', '.join(f'{k}=' for k in stray)} appl"
            f"{'ies' if len(stray) == 1 else 'y'} to the space form (space=...); with "
            f"configs= every config is a candidate: drop {stray[0]}= or pass space=")
    check_bench_budgets(warmup, rep)
    for ignored in ("use_cuda_graph", "do_bench", "cache_results"):
        options.pop(ignored, None)
    gpu = resolve_backend(options.pop("backend", "auto"))

    def decorator(fn: Any) -> Autotuner | GpuAutotuner:
        if gpu is not None:
            return GpuAutotuner(fn, gpu, configs, key, reset_to_zero, restore_value, pre_hook,
                                post_hook, prune_configs_by, warmup, rep, **options)
        if is_triton_jit(fn):
            raise InvalidConfigError(
                f"@autotune of the triton.jit kernel {fn.fn.__name__!r} needs the GPU backend, "
                f"which is not available here ({gpu_unavailable_reason() or 'backend=model'}); "
                f"to tune it with the GPU model in the interpreter, decorate "
                f"autotile.lang.from_triton({fn.fn.__name__}) instead")
        model_options = {k: v for k, v in options.items() if k not in GPU_OPTIONS}
        return Autotuner(fn, getattr(fn, "arg_names", []), configs, key, reset_to_zero,
                         restore_value, pre_hook, post_hook, prune_configs_by, warmup, rep,
                         **model_options)

    return decorator

