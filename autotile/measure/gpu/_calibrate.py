"""Calibrate the GPU time model's free parameters on measured matmul times.

The traffic model's :class:`~autotile.measure.gpu._l2sim.L2Model` is fitted
to ncu DRAM bytes by :func:`fit_l2_stagger` (one parameter, a grid search)
and checked on held-out configs by :func:`l2_stagger_holdout`.

The time model (``docs/gpu_model.md`` eqs. 4-8, :func:`estimate_time`) has
free parameters in :class:`GpuModelParams`: the tensor-core efficiencies,
the bandwidth efficiency and the pipelining overlap. The L2 simulation that
feeds it (HBM bytes, resident programs) does not depend on them, so it is
run once per config (:class:`MatmulObservations` holds its outputs) and the
time formula is re-evaluated, vectorised, for every parameter vector
(:func:`predict_matmul_time`, equal to :class:`KernelModelMeasurer`'s
``time_s`` to rounding).

:func:`fit_gpu_model` is a bounded robust least-squares fit of
``log(predicted) - log(measured)`` (``scipy.optimize.least_squares``, trust
region reflective, soft-L1 loss) with a small ridge pull towards the
starting values, which keeps directions the data do not constrain where
they were. :func:`calibrate_matmul` splits the configs into a fitting and a
held-out set and reports the model's accuracy on the held-out set before
and after (:func:`rank_accuracy`: Spearman and Kendall rank correlations,
median absolute relative error).
"""

from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.errors import MeasureError
from autotile.kernels._spaces import DTYPE_ITEMSIZE
from autotile.measure.gpu._hardware import HardwareProfile
from autotile.measure.gpu._time_model import GpuModelParams, matmul_smem_step_bytes, smooth_max

__all__ = [
    "MatmulObservations",
    "CalibrationReport",
    "DEFAULT_FIT",
    "H200_FIT",
    "H200_FIT_STARTS",
    "predict_matmul_time",
    "fit_gpu_model",
    "rank_accuracy",
    "calibrate_matmul",
    "matmul_observations_from_csv",
    "TrafficObservations",
    "ncu_observations_from_csv",
    "predict_read_bytes",
    "traffic_accuracy",
    "fit_l2_stagger",
    "l2_stagger_holdout",
]

FloatArray = npt.NDArray[np.float64]

#: Parameters :func:`fit_gpu_model` fits by default. ``warp_efficiency[w]`` is the
#: factor of ``num_warps = w``.
DEFAULT_FIT = ("peak_efficiency", "tile_overhead_elems", "k_overhead_elems",
               "warp_efficiency[2]", "warp_efficiency[4]", "warp_efficiency[8]",
               "mma_fallback_efficiency", "bandwidth_efficiency", "overlap_decay")

#: The recipe of the shipped parameters (:data:`~autotile.measure.H200_FITTED_PARAMS`):
#: :data:`DEFAULT_FIT` plus the software-pipeline term (eq. 5b: ``pipeline_latency_s``,
#: ``sm_load_bytes_per_s``) and the shared-memory port (eq. 5c:
#: ``smem_bytes_per_s_per_sm``), fitted from :data:`H200_FIT_STARTS`. Earlier and later
#: calibration versions (v2, v6, v7) live in ``benchmarks/h200/h200_fit_versions.py``.
H200_FIT = (*DEFAULT_FIT, "pipeline_latency_s", "sm_load_bytes_per_s",
            "smem_bytes_per_s_per_sm")

#: Starting points of :data:`H200_FIT`: eqs. 5b and 5c are maxima of terms, so the cost
#: has several basins and one start from the defaults (terms off) stays in the one
#: without them. ``pipeline_latency_s`` in 0.25-2 us (an unloaded L2 hit is a few
#: hundred cycles: Luo et al. 2024, arXiv:2402.13499), ``sm_load_bytes_per_s`` 50-200
#: GB/s per SM (6.6-26 TB/s over 132 SMs, around the ~5.5-10 TB/s L2 bandwidth those
#: sources measure on the H100), ``smem_bytes_per_s_per_sm`` 150-234 GB/s (234 is the
#: 128 B/clk port of docs/gpu_model.md [7] at 1.83 GHz).
H200_FIT_STARTS = tuple({"pipeline_latency_s": lat, "sm_load_bytes_per_s": bw,
                         "smem_bytes_per_s_per_sm": b}
                        for lat in (0.25e-6, 0.5e-6, 1e-6, 2e-6) for bw in (50e9, 100e9, 200e9)
                        for b in (150e9, 200e9, 234e9))

_BOUNDS = {"peak_efficiency": (0.05, 1.0), "tile_overhead_elems": (0.0, 512.0),
           "k_overhead_elems": (0.0, 512.0), "mma_fallback_efficiency": (0.02, 1.0),
           "bandwidth_efficiency": (0.05, 1.0), "overlap_decay": (0.0, 0.99),
           "pipeline_latency_s": (0.0, 5e-6), "sm_load_bytes_per_s": (20e9, 500e9),
           "smem_bytes_per_s_per_sm": (50e9, 253e9),
           # eq. 9: up to 1e-12 s/B, 430 pJ/B at the H200's ~430 W above idle (HBM
           # costs a few pJ per bit; the probe measured 21 pJ/B)
           "power_cap_s_per_byte": (0.0, 1e-12)}
_WARP_BOUNDS = (0.01, 1.0)

_FIELDS = ("M", "N", "K", "block_m", "block_n", "block_k", "num_warps", "num_stages",
           "blocks_per_sm", "hbm_read_bytes", "hbm_write_bytes", "time_s")


@dataclass(frozen=True)
class MatmulObservations:
    """Measured matmul launches with the simulator's per-config outputs.

    Every attribute is an ndarray of shape (n_obs,), float64.

    Attributes
    ----------
    M, N, K : ndarray
        Problem shape.
    block_m, block_n, block_k, num_warps, num_stages : ndarray
        The config's knobs.
    blocks_per_sm : ndarray
        Resident programs per SM (model eq. 3), >= 1.
    hbm_read_bytes, hbm_write_bytes : ndarray
        HBM traffic from the L2 simulator, bytes.
    time_s : ndarray
        Measured kernel time, seconds (> 0).
    groups : tuple of str
        A label per observation (e.g. the config's text) that
        :func:`calibrate_matmul` keeps on one side of the split.

    Raises
    ------
    MeasureError
        If the arrays differ in length, a time is not positive or
        ``blocks_per_sm < 1``.
    """

    M: FloatArray
    N: FloatArray
    K: FloatArray
    block_m: FloatArray
    block_n: FloatArray
    block_k: FloatArray
    num_warps: FloatArray
    num_stages: FloatArray
    blocks_per_sm: FloatArray
    hbm_read_bytes: FloatArray
    hbm_write_bytes: FloatArray
    time_s: FloatArray
    groups: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n = None
        for f in _FIELDS:
            a = np.asarray(getattr(self, f), np.float64).reshape(-1)
            object.__setattr__(self, f, a)
            if n is None:
                n = a.shape[0]
            elif a.shape[0] != n:
                raise MeasureError(f"all arrays must have one length, got {f} of length "
                                   f"{a.shape[0]} and M of length {n}")
        groups = tuple(str(g) for g in self.groups) or tuple(str(i) for i in range(n or 0))
        if len(groups) != n:
            raise MeasureError(f"groups must have one label per observation, got "
                               f"{len(groups)} for {n}")
        object.__setattr__(self, "groups", groups)
        if n and not np.all(self.time_s > 0):
            raise MeasureError("time_s must be > 0 for every observation")
        if n and not np.all(self.blocks_per_sm >= 1):
            raise MeasureError("blocks_per_sm must be >= 1 (infeasible configs cannot be "
                               "fitted)")

    def __len__(self) -> int:
        return int(self.M.shape[0])

    def subset(self, index: Sequence[int] | npt.NDArray[np.integer[Any]]) -> MatmulObservations:
        """The observations at ``index`` (an integer array)."""
        idx = np.asarray(index, dtype=np.int64)
        kw: dict[str, Any] = {f: getattr(self, f)[idx] for f in _FIELDS}
        return MatmulObservations(**kw, groups=tuple(self.groups[i] for i in idx))


def _smem_step_bytes(bm: FloatArray, bn: FloatArray, bk: FloatArray, nw: FloatArray,
                     itemsize: int) -> FloatArray:
    keys = list(zip(*(a.astype(int).tolist() for a in (bm, bn, bk, nw))))
    table = {(m, n, k, w): matmul_smem_step_bytes(m, n, k, w, itemsize)
             for m, n, k, w in set(keys)}
    return np.array([table[k] for k in keys], np.float64)


def _warp_table(params: GpuModelParams, num_warps: FloatArray) -> FloatArray:
    return np.array([params.warp_factor(int(w)) for w in num_warps], np.float64)


def predict_matmul_time(obs: MatmulObservations, params: GpuModelParams,
                        hardware: HardwareProfile, dtype: str = "float16") -> FloatArray:
    """Model time of every observation (eqs. 4-8), vectorised.

    The same arithmetic as :class:`KernelModelMeasurer` for ``"matmul"``
    (non-persistent) given its ``blocks_per_sm`` and traffic: efficiency
    (eq. 4, :func:`matmul_efficiency`), compute with wave quantization over
    the SMs (eq. 5), the clock of a wave tail under the power cap (eq. 5e), the
    partial wave after full waves (eq. 5', ``params.tail_rate_exponent``),
    tiles Triton loads with scalar loads (eq. 5d, from ``M, N, K`` with
    row-major operands, :func:`~autotile.kernels.matmul_access`), the
    software-pipeline operand feed (eq. 5b,
    ``cdiv(K, BLOCK_K)`` steps of ``(BLOCK_M + BLOCK_N) * BLOCK_K * itemsize``
    bytes; off with the default parameters), the shared-memory port (eq. 5c,
    :func:`~autotile.measure.gpu._time_model.matmul_smem_step_bytes` per step; off
    when ``smem_bytes_per_s_per_sm`` is ``inf``), HBM time (eq. 6, writes counted
    when ``params.count_writes``), overlap (eq. 7), total (eq. 8) and the
    power cap (eq. 9, off when ``power_cap_s_per_byte`` is 0); the port and the
    compute time combine by :func:`~autotile.measure.gpu._time_model.smooth_max`
    (eq. 5c', ``max`` with the default ``smem_overlap_norm = inf``).

    Parameters
    ----------
    obs : MatmulObservations
    params : GpuModelParams
    hardware : HardwareProfile
    dtype : str, default="float16"
        Selects the tensor peak.

    Returns
    -------
    ndarray of shape (n_obs,)
        Predicted seconds.
    """
    bm, bn, bk, nw = obs.block_m, obs.block_n, obs.block_k, obs.num_warps
    eff = params.peak_efficiency / (1.0 + params.tile_overhead_elems * (1.0 / bm + 1.0 / bn))
    eff = eff / (1.0 + params.k_overhead_elems / bk) * _warp_table(params, nw)
    eff = np.where(bm < 16 * nw, eff * params.mma_fallback_efficiency, eff)
    n_prog = np.ceil(obs.M / bm) * np.ceil(obs.N / bn)
    rounds = np.ceil(n_prog / hardware.n_sms)
    flops_prog = 2.0 * bm * bn * np.ceil(obs.K / bk) * bk
    peak_sm = hardware.tensor_flops_per_s(dtype) / hardware.n_sms
    compute = rounds * flops_prog / (peak_sm * eff)
    if params.clock_exponent > 0:  # eq. 5e
        busy = n_prog / (rounds * hardware.n_sms)
        compute = compute / np.minimum(busy ** -params.clock_exponent, params.max_clock_boost)
    tensor = compute
    g = params.tail_rate_exponent
    if g > 0:  # eq. 5': a partial wave after full ones runs below the SM's full rate
        bps = obs.blocks_per_sm
        full = np.floor(n_prog / (hardware.n_sms * bps))
        k_tail = np.ceil((n_prog - full * hardware.n_sms * bps) / hardware.n_sms)
        tail = (full >= 1) & (k_tail > 0) & (k_tail < bps)
        k_safe = np.where(tail, k_tail, 1.0)
        units = full * bps + k_safe * (bps / k_safe) ** g
        compute = np.where(tail, compute * units / rounds, compute)
    x = (bm + bn) * bk * DTYPE_ITEMSIZE[dtype] / params.sm_load_bytes_per_s
    in_flight = np.minimum(obs.blocks_per_sm, rounds) * np.maximum(obs.num_stages - 1.0, 1.0)
    feed = rounds * np.ceil(obs.K / bk) * np.maximum(x, (params.pipeline_latency_s + x)
                                                     / in_flight)
    compute = np.maximum(compute, feed)
    if math.isfinite(params.smem_bytes_per_s_per_sm):
        smem = _smem_step_bytes(bm, bn, bk, nw, DTYPE_ITEMSIZE[dtype])
        compute = smooth_max(compute, rounds * np.ceil(obs.K / bk) * smem
                             / params.smem_bytes_per_s_per_sm, params.smem_overlap_norm)
    rate = params.scalar_elems_per_s_per_sm
    if math.isfinite(rate):  # eq. 5d: tiles Triton loads with scalar loads
        isz = DTYPE_ITEMSIZE[dtype]
        vmax = max(1, 16 // isz)
        vec_a = np.where(obs.K % 16 == 0, vmax, 1)
        vec_b = np.where(obs.N % 16 == 0, vmax, 1)
        # A's elements weigh scalar_a_weight (eq. 5d), as in the kernel measurer
        e = (params.scalar_a_weight * np.where(vec_a * isz >= 4, 0.0, bm * bk)
             + np.where(vec_b * isz >= 4, 0.0, bk * bn))
        e_c = np.where(vec_b == 1, bm * bn, 0.0)
        steps = np.ceil(obs.K / bk)
        compute = np.maximum(compute, rounds * (steps * e + e_c) / rate)
        # the chains run in waves of resident programs, each with one program's tensor time
        waves = np.ceil(n_prog / (hardware.n_sms * obs.blocks_per_sm))
        chain = waves * (steps * (params.unpipelined_latency_s + e / rate) + tensor / rounds)
        compute = np.where(e > 0, np.maximum(compute, chain), compute)
    hbm = obs.hbm_read_bytes + (obs.hbm_write_bytes if params.count_writes else 0.0)
    memory = hbm / (hardware.hbm_bytes_per_s * params.bandwidth_efficiency)
    o = 1.0 - params.overlap_decay ** (obs.num_stages * obs.blocks_per_sm - 1.0)
    t: FloatArray = (np.maximum(compute, memory) + (1.0 - o) * np.minimum(compute, memory)
                     + hardware.launch_overhead_s)
    if params.power_cap_s_per_byte > 0:
        t = np.maximum(t, compute + params.power_cap_s_per_byte * hbm
                       + hardware.launch_overhead_s)
    return t


def _get(params: GpuModelParams, name: str) -> float:
    if name.startswith("warp_efficiency["):
        return params.warp_factor(int(name[len("warp_efficiency["):-1]))
    return float(getattr(params, name))


def _with(params: GpuModelParams, names: Sequence[str], values: Iterable[float]
          ) -> GpuModelParams:
    table = dict(params.warp_efficiency)
    plain: dict[str, Any] = {}
    for name, v in zip(names, values):
        if name.startswith("warp_efficiency["):
            table[int(name[len("warp_efficiency["):-1])] = float(v)
        else:
            plain[name] = float(v)
    return dataclasses.replace(params, warp_efficiency=tuple(sorted(table.items())), **plain)


def _bounds(name: str) -> tuple[float, float]:
    if name.startswith("warp_efficiency["):
        return _WARP_BOUNDS
    if name not in _BOUNDS:
        raise MeasureError(f"cannot fit {name!r}: fittable parameters are "
                           f"{sorted(_BOUNDS)} and 'warp_efficiency[<num_warps>]'")
    return _BOUNDS[name]


def fit_gpu_model(obs: MatmulObservations, hardware: HardwareProfile,
                  params0: GpuModelParams | None = None, *, fit: Sequence[str] = DEFAULT_FIT,
                  loss: str = "soft_l1", f_scale: float = 0.2, ridge: float = 0.01,
                  dtype: str = "float16", starts: Sequence[Mapping[str, float]] = ()
                  ) -> tuple[GpuModelParams, Any]:
    """Fit ``fit`` parameters of the time model to measured times.

    Minimises ``sum rho((log t_pred - log t_meas)^2) + ridge^2 * sum(((x - x0) / s)^2)``
    with ``scipy.optimize.least_squares`` (method ``"trf"``, bounds per
    parameter), where ``rho`` is ``loss`` with scale ``f_scale`` and ``s``
    a parameter's bound width. Working on log time makes the fit care
    about ratios: a 2x miss on a 20 ms config weighs as much as on a 2 ms
    one.

    Parameters
    ----------
    obs : MatmulObservations
        Fitting set.
    hardware : HardwareProfile
    params0 : GpuModelParams, optional
        Starting point and source of the parameters not fitted (default
        ``GpuModelParams()``).
    fit : sequence of str, default=DEFAULT_FIT
        Names of :class:`GpuModelParams` fields, or ``"warp_efficiency[w]"``.
    loss : str, default="soft_l1"
        ``least_squares``' robust loss (``"linear"`` for plain least squares).
    f_scale : float, default=0.2
        Residual scale of the robust loss, in log time (0.2 ~ 20%).
    ridge : float, default=0.01
        Weight of the pull towards ``params0``, relative to one observation.
    dtype : str, default="float16"
    starts : sequence of mapping, default=()
        Further starting points (values of some fitted names; the others
        start at ``params0``). The solver runs from ``params0`` and from
        each, and the lowest cost wins; the ridge always pulls towards
        ``params0``.

    Returns
    -------
    params : GpuModelParams
        ``params0`` with the fitted values.
    result : scipy.optimize.OptimizeResult
        The solver's result (``cost``, ``nfev``, ``status``, ...).

    Raises
    ------
    MeasureError
        If ``obs`` has fewer observations than fitted parameters or a name
        cannot be fitted.

    References
    ----------
    Branch, Coleman, Li, "A subspace, interior, and conjugate gradient
    method for large-scale bound-constrained minimization problems", SIAM J.
    Sci. Comput. 21(1), 1999 (the ``trf`` method); SciPy
    ``scipy.optimize.least_squares``.
    """
    from scipy.optimize import least_squares

    p0 = GpuModelParams() if params0 is None else params0
    names = tuple(fit)
    if len(obs) < len(names):
        raise MeasureError(f"need at least as many observations as fitted parameters, got "
                           f"{len(obs)} observations for {len(names)} parameters")
    lo, hi = np.array([_bounds(n) for n in names], np.float64).T
    x0 = np.clip(np.array([_get(p0, n) for n in names], np.float64), lo, hi)
    width = hi - lo
    log_meas = np.log(obs.time_s)

    def residuals(x: FloatArray) -> FloatArray:
        p = _with(p0, names, x)
        r = np.log(predict_matmul_time(obs, p, hardware, dtype)) - log_meas
        return np.concatenate([r, ridge * (x - x0) / width])

    best: Any = None
    for start in ({}, *starts):
        bad = set(start) - set(names)
        if bad:
            raise MeasureError(f"a start may only set fitted parameters, got {sorted(bad)} "
                               f"not in fit={list(names)}")
        xs = np.clip(np.array([start.get(n, v) for n, v in zip(names, x0)], np.float64),
                     lo, hi)
        res = least_squares(residuals, xs, bounds=(lo, hi), loss=loss, f_scale=f_scale,
                            method="trf", x_scale=width, max_nfev=2000)
        if best is None or res.cost < best.cost:
            best = res
    return _with(p0, names, best.x), best


def _rankdata(x: FloatArray) -> FloatArray:
    from scipy.stats import rankdata

    return np.asarray(rankdata(x), np.float64)


def rank_accuracy(predicted: npt.ArrayLike, measured: npt.ArrayLike) -> dict[str, float]:
    """How well predicted times order and match measured ones.

    Parameters
    ----------
    predicted, measured : array-like of shape (n,)
        Seconds, one per config.

    Returns
    -------
    dict
        ``spearman`` and ``kendall`` rank correlations (ties averaged;
        NaN below 3 points), ``median_abs_rel_error`` = median of
        ``|pred / meas - 1|``, ``geo_mean_ratio`` = exp(mean log(pred /
        meas)), and ``n``.
    """
    from scipy.stats import kendalltau, spearmanr

    p = np.asarray(predicted, np.float64)
    m = np.asarray(measured, np.float64)
    if p.shape != m.shape:
        raise MeasureError(f"predicted and measured must have one shape, got {p.shape} and "
                           f"{m.shape}")
    n = int(p.shape[0])
    if n < 3:
        sp = kt = math.nan
    else:
        sp = float(spearmanr(p, m).statistic)
        kt = float(kendalltau(p, m).statistic)
    ratio = p / m
    return {"spearman": sp, "kendall": kt,
            "median_abs_rel_error": float(np.median(np.abs(ratio - 1.0))) if n else math.nan,
            "geo_mean_ratio": float(np.exp(np.mean(np.log(ratio)))) if n else math.nan,
            "n": float(n)}


@dataclass(frozen=True)
class CalibrationReport:
    """Result of :func:`calibrate_matmul`.

    Attributes
    ----------
    params, params0 : GpuModelParams
        Fitted and starting parameters.
    hardware : HardwareProfile
    train_index, test_index : tuple of int
        Observations used for the fit and held out.
    before, after : dict
        :func:`rank_accuracy` on the held-out observations with ``params0``
        and ``params``.
    before_train, after_train : dict
        The same on the fitting observations.
    cost : float
        Final value of the solver's objective.
    """

    params: GpuModelParams
    params0: GpuModelParams
    hardware: HardwareProfile
    train_index: tuple[int, ...]
    test_index: tuple[int, ...]
    before: dict[str, float]
    after: dict[str, float]
    before_train: dict[str, float]
    after_train: dict[str, float]
    cost: float


def calibrate_matmul(obs: MatmulObservations, hardware: HardwareProfile,
                     params0: GpuModelParams | None = None, *, test_fraction: float = 0.3,
                     seed: int = 0, fit: Sequence[str] = DEFAULT_FIT,
                     **fit_kwargs: Any) -> CalibrationReport:
    """Split by group, fit on one part, report accuracy on the held-out part.

    A seeded permutation of the distinct ``obs.groups`` puts
    ``round(test_fraction * n_groups)`` groups in the held-out set: with
    the config text as group, a held-out config is held out at every shape.

    Parameters
    ----------
    obs : MatmulObservations
    hardware : HardwareProfile
    params0 : GpuModelParams, optional
    test_fraction : float, default=0.3
        In ``(0, 1)``.
    seed : int, default=0
        Seed of the split.
    fit : sequence of str, default=DEFAULT_FIT
    **fit_kwargs
        Passed to :func:`fit_gpu_model`.

    Returns
    -------
    CalibrationReport

    Raises
    ------
    MeasureError
        If ``test_fraction`` is outside ``(0, 1)``.
    """
    if not 0.0 < test_fraction < 1.0:
        raise MeasureError(f"test_fraction must be in (0, 1), got {test_fraction}")
    p0 = GpuModelParams() if params0 is None else params0
    labels = sorted(set(obs.groups))
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(labels))
    n_test = max(1, int(round(test_fraction * len(labels))))
    test_labels = {labels[i] for i in perm[:n_test]}
    test = np.array([i for i, g in enumerate(obs.groups) if g in test_labels], np.int64)
    train = np.array([i for i, g in enumerate(obs.groups) if g not in test_labels], np.int64)
    tr, te = obs.subset(train), obs.subset(test)
    params, res = fit_gpu_model(tr, hardware, p0, fit=fit, **fit_kwargs)
    return CalibrationReport(
        params=params, params0=p0, hardware=hardware,
        train_index=tuple(int(i) for i in train), test_index=tuple(int(i) for i in test),
        before=rank_accuracy(predict_matmul_time(te, p0, hardware), te.time_s),
        after=rank_accuracy(predict_matmul_time(te, params, hardware), te.time_s),
        before_train=rank_accuracy(predict_matmul_time(tr, p0, hardware), tr.time_s),
        after_train=rank_accuracy(predict_matmul_time(tr, params, hardware), tr.time_s),
        cost=float(res.cost))


_KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


def matmul_observations_from_csv(measured: str | Path, model: str | Path, *,
                                 l2_bytes: int | None = None,
                                 shapes: Iterable[tuple[int, int, int]] | None = None
                                 ) -> MatmulObservations:
    """Join measured times with the simulator's outputs, one row per ok config.

    Parameters
    ----------
    measured : path
        CSV with ``M, N, K``, the six matmul knobs, ``status`` and ``time_s``
        (``benchmarks/h200/data/h200_matmul.csv``).
    model : path
        CSV with ``M, N, K``, the knobs, ``l2_bytes``, ``model_status``,
        ``model_blocks_per_sm``, ``model_hbm_read_bytes`` and
        ``model_hbm_bytes`` (reads + writes;
        ``benchmarks/h200/data/h200_matmul_model.csv``).
    l2_bytes : int, optional
        Which modelled L2 capacity to take (default: the first in the file).
    shapes : iterable of (M, N, K), optional
        Keep only these problem shapes.

    Returns
    -------
    MatmulObservations
        Rows that are ``"ok"`` both on the GPU and in the model; ``groups``
        is the config text (knobs only), so one config is one group.

    Raises
    ------
    MeasureError
        If no row is left.
    """
    def key(r: Mapping[str, str]) -> tuple[int, ...]:
        return tuple(int(r[k]) for k in ("M", "N", "K", *_KNOBS))

    with open(model, newline="") as f:
        mrows = list(csv.DictReader(f))
    if l2_bytes is None and mrows:
        l2_bytes = int(mrows[0]["l2_bytes"])
    mod = {key(r): r for r in mrows if int(r["l2_bytes"]) == l2_bytes}
    keep = None if shapes is None else {tuple(int(x) for x in s) for s in shapes}
    cols: dict[str, list[float]] = {f: [] for f in _FIELDS}
    groups: list[str] = []
    with open(measured, newline="") as f:
        for r in csv.DictReader(f):
            k = key(r)
            if r["status"] != "ok" or k not in mod or mod[k]["model_status"] != "ok":
                continue
            if keep is not None and k[:3] not in keep:
                continue
            m = mod[k]
            read = float(m["model_hbm_read_bytes"])
            vals: dict[str, float] = dict(zip(
                ("M", "N", "K", "block_m", "block_n", "block_k"), k[:6]))
            vals.update(num_warps=k[7], num_stages=k[8],
                        blocks_per_sm=float(m["model_blocks_per_sm"]), hbm_read_bytes=read,
                        hbm_write_bytes=float(m["model_hbm_bytes"]) - read,
                        time_s=float(r["time_s"]))
            for f_ in _FIELDS:
                cols[f_].append(float(vals[f_]))
            groups.append(";".join(f"{n}={v}" for n, v in zip(_KNOBS, k[3:])))
    if not groups:
        raise MeasureError(f"no row is ok in both {measured} and {model} "
                           f"(l2_bytes={l2_bytes})")
    arrays: dict[str, Any] = {f_: np.array(v, np.float64) for f_, v in cols.items()}
    return MatmulObservations(**arrays, groups=tuple(groups))


# --------------------------------------------------------------------------------------
# traffic: L2Model stagger against ncu DRAM bytes
@dataclass(frozen=True, eq=False)
class TrafficObservations:
    """ncu DRAM bytes of single matmul launches (cold L2).

    Attributes
    ----------
    shapes : tuple of (int, int, int)
        ``(M, N, K)`` per launch.
    configs : tuple of dict
        The six matmul knobs per launch.
    read_bytes, write_bytes : ndarray of shape (n_launches,)
        ``dram__bytes_read.sum`` and ``dram__bytes_write.sum``, bytes.
    """

    shapes: tuple[tuple[int, int, int], ...]
    configs: tuple[dict[str, int], ...]
    read_bytes: FloatArray
    write_bytes: FloatArray

    def __len__(self) -> int:
        return len(self.shapes)


def ncu_observations_from_csv(path: str | Path) -> TrafficObservations:
    """Read ``benchmarks/h200/data/h200_ncu.csv`` (``M, N, K``, the knobs, ``dram_*_bytes``)."""
    shapes, configs, rd, wr = [], [], [], []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            shapes.append((int(r["M"]), int(r["N"]), int(r["K"])))
            configs.append({k: int(r[k]) for k in _KNOBS})
            rd.append(float(r["dram_read_bytes"]))
            wr.append(float(r["dram_write_bytes"]))
    return TrafficObservations(tuple(shapes), tuple(configs), np.array(rd), np.array(wr))


def predict_read_bytes(obs: TrafficObservations, hardware: HardwareProfile,
                       l2_model: Any = None) -> FloatArray:
    """HBM read bytes of :class:`KernelModelMeasurer` per launch (NaN where infeasible).

    Parameters
    ----------
    obs : TrafficObservations
    hardware : HardwareProfile
        Its ``l2_bytes`` is the capacity before ``l2_model.partitions``.
    l2_model : L2Model, optional
        Default: the lockstep seed model.

    Returns
    -------
    ndarray of shape (n_launches,)
        Bytes.
    """
    from autotile.measure.gpu._model_measurer import KernelModelMeasurer

    meas: dict[tuple[int, int, int], Any] = {}
    out = np.full(len(obs), np.nan)
    for i, (shp, cfg) in enumerate(zip(obs.shapes, obs.configs)):
        if shp not in meas:
            meas[shp] = KernelModelMeasurer("matmul", dict(zip("MNK", shp)), hardware=hardware,
                                            l2_model=l2_model)
        res = meas[shp].measure(cfg)
        if res.ok:
            out[i] = res.metrics["hbm_read_bytes"]
    return out


def traffic_accuracy(predicted: npt.ArrayLike, measured: npt.ArrayLike) -> dict[str, float]:
    """Shares of predictions within 10% and 25% of the measured bytes.

    Returns
    -------
    dict
        ``within_10`` and ``within_25`` (fractions of ``n``), ``median_ratio``
        (predicted / measured), ``mean_abs_log_ratio`` and ``n``.
    """
    ratio = np.asarray(predicted, np.float64) / np.asarray(measured, np.float64)
    if ratio.size == 0:
        return {"within_10": float("nan"), "within_25": float("nan"),
                "median_ratio": float("nan"), "mean_abs_log_ratio": float("nan"), "n": 0.0}
    return {"within_10": float(np.mean(np.abs(ratio - 1) <= 0.10)),
            "within_25": float(np.mean(np.abs(ratio - 1) <= 0.25)),
            "median_ratio": float(np.median(ratio)),
            "mean_abs_log_ratio": float(np.mean(np.abs(np.log(ratio)))), "n": float(ratio.size)}


def fit_l2_stagger(predicted: Mapping[float, FloatArray], measured: FloatArray,
                   index: npt.ArrayLike) -> float:
    """The grid stagger that puts most fitting launches within 10% of ncu.

    Ties go to the smaller mean ``|log(pred / ncu)|``, then to the smaller
    stagger.

    Parameters
    ----------
    predicted : mapping of float to ndarray of shape (n_launches,)
        Read bytes predicted with each grid value of ``L2Model.stagger``.
    measured : ndarray of shape (n_launches,)
        ncu read bytes.
    index : array-like of int
        The fitting launches.

    Returns
    -------
    float
        The chosen stagger.

    Raises
    ------
    MeasureError
        If ``predicted`` or ``index`` is empty.
    """
    idx = np.asarray(index, np.int64)
    if not predicted or idx.size == 0:
        raise MeasureError(f"fit_l2_stagger needs a grid and fitting launches, got "
                           f"{len(predicted)} grid values and {idx.size} launches")

    def key(a: float) -> tuple[float, float, float]:
        acc = traffic_accuracy(predicted[a][idx], measured[idx])
        return (-acc["within_10"], acc["mean_abs_log_ratio"], a)

    return min(predicted, key=key)


def l2_stagger_holdout(predicted: Mapping[float, FloatArray], measured: FloatArray,
                       shapes: Sequence[tuple[int, int, int]], *, seed: int = 0
                       ) -> dict[str, Any]:
    """Fit the stagger on some launches, score the rest: a 50/50 split and leave-one-shape-out.

    Parameters
    ----------
    predicted : mapping of float to ndarray of shape (n_launches,)
        As for :func:`fit_l2_stagger`, feasible launches only.
    measured : ndarray of shape (n_launches,)
    shapes : sequence of (M, N, K)
        Problem shape of each launch.
    seed : int, default=0
        Seed of the split (``np.random.default_rng(seed).permutation``; the
        first half, rounded down, fits).

    Returns
    -------
    dict
        ``split``: ``stagger``, ``fit`` and ``held_out`` (:func:`traffic_accuracy`),
        ``fit_index``, ``test_index``; ``by_shape``: per held-out shape its
        ``stagger`` and ``held_out``; ``loso``: the pooled held-out accuracy of
        the three leave-one-shape-out folds.
    """
    n = measured.size
    perm = np.random.default_rng(seed).permutation(n)
    fit_i, test_i = np.sort(perm[: n // 2]), np.sort(perm[n // 2:])
    a = fit_l2_stagger(predicted, measured, fit_i)
    out: dict[str, Any] = {"split": {
        "stagger": a, "fit_index": fit_i, "test_index": test_i,
        "fit": traffic_accuracy(predicted[a][fit_i], measured[fit_i]),
        "held_out": traffic_accuracy(predicted[a][test_i], measured[test_i])}}
    pooled_pred = np.full(n, np.nan)
    by_shape = {}
    for shp in dict.fromkeys(shapes):
        te = np.array([i for i in range(n) if shapes[i] == shp], np.int64)
        tr = np.array([i for i in range(n) if shapes[i] != shp], np.int64)
        b = fit_l2_stagger(predicted, measured, tr)
        pooled_pred[te] = predicted[b][te]
        by_shape[shp] = {"stagger": b,
                         "held_out": traffic_accuracy(predicted[b][te], measured[te])}
    out["by_shape"] = by_shape
    out["loso"] = traffic_accuracy(pooled_pred, measured)
    return out
