"""The comparison methodology's maths: random-search expectations, ``P(t)`` and budgets.

Closed forms for uniform random sampling without replacement over the valid
configs of a space (:func:`expected_best_random`,
:func:`expected_trials_to_hit`, :func:`random_trials_quantile`), Kernel
Tuner's methodology score ``P(t)`` (:func:`methodology_score`), the budget
the methodology sets for a space (:func:`methodology_budget`) and the
trials each run needed to reach a target (:func:`trials_to_target`).

References
----------
Willemsen, van Nieuwpoort & van Werkhoven, "A methodology for comparing
optimization algorithms for auto-tuning", FGCS 159 (2024).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = [
    "expected_best_random",
    "expected_trials_to_hit",
    "random_trials_quantile",
    "methodology_budget",
    "methodology_score",
    "trials_to_target",
    "FloatArray",
]

FloatArray = npt.NDArray[np.float64]
_NEGLIGIBLE = 1e-18  # dropped survival tail: absolute error < 1e-18 * (max - min)


def _finite(values: npt.ArrayLike) -> FloatArray:
    v = np.asarray(values, dtype=np.float64).ravel()
    return v[np.isfinite(v)]


def expected_best_random(values: npt.ArrayLike, budget: int | None = None) -> FloatArray:
    """Expected best-so-far of uniform random sampling without replacement.

    For the sorted values ``v_(1) <= ... <= v_(N)`` of the valid configs,
    the best of ``t`` distinct uniform draws is ``v_(i)`` with probability
    ``C(N-i, t-1) / C(N, t)``. The sum is evaluated in its survival form,
    ``E[min_t] = v_(1) + sum_{i>=2} (v_(i) - v_(i-1)) * S_i(t)`` with
    ``S_i(t) = P(min_t >= v_(i)) = C(N-i+1, t) / C(N, t)``, over the distinct
    values only. ``S_i`` is updated by the ratio
    ``S_i(t+1) / S_i(t) = (N-i+1-t) / (N-t)``: products of factors in
    [0, 1], so nothing overflows and ties cost nothing.

    Parameters
    ----------
    values : array-like of shape (n_configs,)
        Objective values (minimised). NaN and infinite entries (failed
        configs) are dropped: like the methodology's calculated baseline
        (``include_nan=False``), random search is taken to draw among the
        valid configs only.
    budget : int, optional
        Number of draws ``t = 1 .. budget``; default ``N`` (all valid configs).
        Draws past ``N`` repeat the optimum.

    Returns
    -------
    ndarray of shape (budget,), float64
        Element ``t - 1`` is ``E[min of t draws]``; element 0 is the mean and
        element ``N - 1`` the minimum.

    Raises
    ------
    ValueError
        If there is no finite value, or ``budget < 1``.

    References
    ----------
    Willemsen, van Nieuwpoort & van Werkhoven, "A methodology for comparing
    optimization algorithms for auto-tuning", FGCS 159 (2024), Sec. 4.2
    (the calculated random-search baseline); repository
    AutoTuningAssociation/autotuning_methodology,
    ``baseline.RandomSearchCalculatedBaseline``, which uses the value at the
    expected rank ``round(t (N+1) / (t+1))`` instead of the expected value
    computed here.
    """
    v = np.sort(_finite(values))
    n = v.shape[0]
    if n == 0:
        raise ValueError("expected_best_random needs at least one finite value, got none")
    budget = n if budget is None else int(budget)
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got budget={budget}")
    uniq, first = np.unique(v, return_index=True)
    if uniq.shape[0] == 1:
        return np.full(budget, uniq[0])
    steps = np.diff(uniq)                        # u_j - u_{j-1}, j = 2..K
    above = (n - first[1:]).astype(np.float64)   # a_j = #values >= u_j
    surv = np.ones_like(above)                   # S_j(0) = 1
    out = np.empty(budget)
    for t in range(min(budget, n)):
        surv *= np.maximum(above - t, 0.0) / (n - t)
        # S_j falls with j (fewer values lie above larger ones) and with t: drop the tail
        # once it is negligible, which also keeps subnormal floats (slow) out of the loop.
        k = int(np.searchsorted(-surv, -_NEGLIGIBLE))
        if k < surv.shape[0]:
            surv, steps, above = surv[:k], steps[:k], above[:k]
        out[t] = uniq[0] + float(np.vdot(steps, surv))
    out[n:] = uniq[0]
    return out


def methodology_score(best: npt.ArrayLike, random_curve: npt.ArrayLike,
                      optimum: float) -> FloatArray:
    """Kernel Tuner's methodology score ``P(t)`` of best-so-far curves.

    ``P(t) = (f_random(t) - f(t)) / (f_random(t) - f_opt)``, the issue's
    ``(f(t) - f_random(t)) / (f_opt - f_random(t))``: 0 is as good as random
    search in expectation, 1 is optimal, negative is worse than random.

    Parameters
    ----------
    best : array-like of shape (..., budget)
        Best-so-far values ``f(t)`` (minimised); a row per run is fine.
    random_curve : array-like of shape (budget,)
        ``f_random(t)``, e.g. :func:`expected_best_random`.
    optimum : float
        ``f_opt``.

    Returns
    -------
    ndarray of the shape of ``best``
        NaN where ``f_random(t) == f_opt`` (random search is optimal there and
        the score is undefined).

    References
    ----------
    Willemsen, van Nieuwpoort & van Werkhoven, FGCS 159 (2024), Eq. 3;
    ``Baseline.get_standardised_curves`` in autotuning_methodology computes
    ``(curve - random) / (optimum - random)``, the same number.
    """
    f = np.asarray(best, dtype=np.float64)
    r = np.asarray(random_curve, dtype=np.float64)
    den = r - float(optimum)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (r - f) / den
    return np.where(den > 0, p, np.nan)


def methodology_budget(values: npt.ArrayLike, cutoff: float = 0.95, margin: float = 0.1,
                       n_configs: int | None = None) -> int:
    """Budget (trials) that the comparison methodology sets for a space.

    The target is ``f_opt + (median - f_opt) * (1 - cutoff)`` over the valid
    values. With the values sorted worst first, ``i`` is the position of the
    first value at or below the target (the number of worse values), and
    random search is expected to reach it after ``ceil(i / (N + 1 - i))``
    draws (inverting the expected rank ``t (N+1) / (t+1)`` of the best of
    ``t`` draws). The budget adds ``margin`` on top, at most the space size.

    Parameters
    ----------
    values : array-like of shape (n_configs,)
        Objective values (minimised); NaN/inf entries are failed configs.
    cutoff : float, default=0.95
        The methodology's ``cutoff_percentile`` (its default is 0.95).
    margin : float, default=0.1
        The methodology's ``cutoff_margin`` (+10 % by default).
    n_configs : int, optional
        Cap; default ``len(values)`` (failed configs included).

    Returns
    -------
    int
        ``min(ceil(fevals * (1 + margin)), n_configs)``, at least 1.

    Raises
    ------
    ValueError
        If ``cutoff`` is outside (0, 1] or there is no finite value.

    References
    ----------
    autotuning_methodology: ``SearchspaceStatistics.cutoff_point`` and
    ``objective_performance_at_cutoff_point``, and
    ``experiments.calculate_budget`` for the margin.
    """
    if not 0.0 < cutoff <= 1.0:
        raise ValueError(f"cutoff must satisfy 0 < cutoff <= 1, got cutoff={cutoff}")
    raw = np.asarray(values, dtype=np.float64).ravel()
    v = np.sort(_finite(raw))
    if v.shape[0] == 0:
        raise ValueError("methodology_budget needs at least one finite value, got none")
    n = v.shape[0]
    opt, median = float(v[0]), float(np.median(v))
    target = opt + (median - opt) * (1.0 - cutoff)
    i = int(np.count_nonzero(v[::-1] > target))  # first index (worst first) with v <= target
    fevals = math.ceil(i / (n + 1 - i))
    cap = int(raw.shape[0]) if n_configs is None else int(n_configs)
    return int(max(1, min(math.ceil(fevals * (1.0 + margin)), cap)))


def trials_to_target(best: npt.ArrayLike, target: float) -> FloatArray:
    """Number of trials each run needed for its best-so-far to reach ``target``.

    Parameters
    ----------
    best : array-like of shape (n_runs, budget) or (budget,)
        Best-so-far (or raw) objective values per trial, minimised.
    target : float
        Reached at the first trial ``t`` (1-based) with value ``<= target``.

    Returns
    -------
    ndarray of shape (n_runs,) (or a 0-d array), float64
        ``t``, or ``inf`` for a run that never reached it within its budget.
    """
    b = np.asarray(best, dtype=np.float64)
    hit = b <= target
    t = np.argmax(hit, axis=-1).astype(np.float64) + 1.0
    return np.where(hit.any(axis=-1), t, np.inf)


def expected_trials_to_hit(n_configs: int, n_hits: int) -> float:
    """Expected draws of random sampling without replacement until the first hit.

    Parameters
    ----------
    n_configs : int
        ``N``, configs in the space.
    n_hits : int
        ``k >= 1``, configs that count as a hit (e.g. the optimal ones).

    Returns
    -------
    float
        ``(N + 1) / (k + 1)``.

    Raises
    ------
    ValueError
        If ``not 1 <= k <= N``.
    """
    if not 1 <= n_hits <= n_configs:
        raise ValueError(f"need 1 <= n_hits <= n_configs, got n_hits={n_hits}, "
                         f"n_configs={n_configs}")
    return (n_configs + 1) / (n_hits + 1)


def random_trials_quantile(n_configs: int, n_hits: int, q: float = 0.5) -> int:
    """Quantile of the draws random sampling without replacement needs for a first hit.

    ``P(T > t) = C(N-k, t) / C(N, t) = prod_{s<t} (N-k-s) / (N-s)``; the
    ``q``-quantile is the smallest ``t`` with ``P(T <= t) >= q``. The median
    (``q = 0.5``) is what the median trials-to-target of a searcher compares
    with; it is about ``ln 2`` times the mean :func:`expected_trials_to_hit`.

    Parameters
    ----------
    n_configs : int
        ``N``, configs in the space.
    n_hits : int
        ``k >= 1``, configs that count as a hit.
    q : float, default=0.5
        Probability level in (0, 1].

    Returns
    -------
    int
        ``t`` in ``1 .. N - k + 1``.

    Raises
    ------
    ValueError
        If ``not 1 <= k <= N`` or ``q`` is outside (0, 1].
    """
    if not 1 <= n_hits <= n_configs:
        raise ValueError(f"need 1 <= n_hits <= n_configs, got n_hits={n_hits}, "
                         f"n_configs={n_configs}")
    if not 0.0 < q <= 1.0:
        raise ValueError(f"q must satisfy 0 < q <= 1, got q={q}")
    s = np.arange(n_configs - n_hits + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_surv = np.cumsum(np.log((n_configs - n_hits - s) / (n_configs - s)))
    # log_surv[t-1] = log P(T > t); the first t with P(T > t) <= 1 - q (the last entry,
    # t = N - k + 1, is log 0 = -inf, so there always is one)
    level = math.log1p(-q) + 1e-12 if q < 1.0 else -math.inf
    return int(np.argmax(log_surv <= level)) + 1
