"""Optuna's multivariate TPE on the knob positions of a space, as one vectorised proposal."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from autotile.search._base import History
from autotile.search._codec import IndexCodec

__all__ = ["multivariate_parzen", "tpe_gamma", "tpe_weights", "N_STARTUP"]

#: Finite trials before :func:`multivariate_parzen` is used by the bandit's Parzen arm
#: (Optuna's ``n_startup_trials``); before them the arm keeps the per-knob estimator.
N_STARTUP = 10

#: Candidates drawn from ``l(x)`` per proposal (Optuna's ``n_ei_candidates``).
N_EI_CANDIDATES = 24
#: Draws per candidate kept: draws that are invalid or already measured are replaced.
_DRAWS_PER_CANDIDATE = 8


def tpe_gamma(n: int) -> int:
    """Size of the "good" set of ``n`` finished trials: ``min(ceil(0.1 n), 25)``.

    Optuna's ``optuna.samplers._tpe.sampler.default_gamma``.
    """
    return min(math.ceil(0.1 * n), 25)


def tpe_weights(n: int) -> npt.NDArray[np.float64]:
    """Kernel weights of ``n`` trials in trial order, shape (n,), float64.

    Optuna's ``default_weights``: 1 for the last 25 trials, a ramp from
    ``1/n`` up to 1 for the older ones.
    """
    if n < 25:
        return np.ones(n)
    return np.concatenate([np.linspace(1.0 / n, 1.0, num=n - 25), np.ones(25)])


def _kernels(digits: npt.NDArray[np.int64], weights: npt.NDArray[np.float64],
             radices: list[int]) -> tuple[npt.NDArray[np.float64], list[npt.NDArray[np.float64]]]:
    """Mixture weights, shape (k + 1,), and per-knob kernel tables, each (k + 1, r).

    One kernel per observation plus the prior (uniform) kernel last, with
    Optuna's categorical kernel: ``1 / (k + 1)`` on every value, plus 1 on
    the observed one, normalised; the prior kernel's weight is 1.
    """
    k = digits.shape[0]
    mix = np.append(weights, 1.0)
    mix = mix / mix.sum()
    tables = []
    for j, r in enumerate(radices):
        t = np.full((k + 1, r), 1.0 / (k + 1))
        t[np.arange(k), digits[:, j]] += 1.0
        tables.append(t / t.sum(axis=1, keepdims=True))
    return mix, tables


def _log_density(digits: npt.NDArray[np.int64], mix: npt.NDArray[np.float64],
                 tables: list[npt.NDArray[np.float64]]) -> npt.NDArray[np.float64]:
    """Log density of the mixture at each row of ``digits`` (n, n_knobs), shape (n,)."""
    lp = np.repeat(np.log(mix)[None, :], digits.shape[0], axis=0)
    for j, t in enumerate(tables):
        lp += np.log(t[:, digits[:, j]].T)
    top = lp.max(axis=1)
    return top + np.log(np.exp(lp - top[:, None]).sum(axis=1))


def multivariate_parzen(codec: IndexCodec, history: History,
                        rng: np.random.Generator) -> int | None:
    """One proposal of Optuna's multivariate TPE over the knobs (categorical kernels).

    The finished trials with a finite value are split by value: the best
    ``tpe_gamma(n)`` are "good", the rest "bad" (failed trials are left
    out of both, as Optuna leaves out failed trials). Each set is a
    mixture of product kernels, one per trial (weights
    :func:`tpe_weights` in trial order) plus a uniform prior kernel of
    weight 1; a trial's kernel puts ``1 / (k + 1)`` on every value of a
    knob and 1 more on its own value, normalised (``k`` trials in the
    set). Candidates are drawn from the good mixture ``l(x)`` (a kernel,
    then every knob from it, so knob values that were good *together*
    are drawn together); the first :data:`N_EI_CANDIDATES` distinct ones
    that are valid configs and not yet in the study are scored by
    ``log l(x) - log g(x)`` and the highest is proposed (ties at random).

    Unlike the per-knob estimator (:meth:`BanditSearcher._parzen`), whose
    candidates take each knob's value independently, this keeps the
    interactions of the good configs: on Kernel Tuner's pnpoly file
    (RTX 3090) the best configs need ``tile_size`` 20 together with
    ``between_method`` 0 and ``use_method`` 0.

    Parameters
    ----------
    codec : IndexCodec
        The space's codec; must be ``fast`` (an enumerable space).
    history : History
        The study's finished trials (``indices``, ``values``; ``inf`` for
        failed ones), in trial order.
    rng : numpy.random.Generator
        Source of the draws.

    Returns
    -------
    int or None
        A space index not in ``history.taken``; None when fewer than 2
        trials have finite values, the codec is not ``fast``, or no draw
        is a valid, unmeasured config.

    References
    ----------
    J. Bergstra et al., "Algorithms for Hyper-Parameter Optimization",
    NeurIPS 2011; S. Falkner et al., "BOHB", ICML 2018 (multivariate
    kernel density); Optuna's ``TPESampler(multivariate=True)``
    (``optuna/samplers/_tpe/parzen_estimator.py``), the default for one
    objective since Optuna 5.
    """
    vals = history.value_array()
    fin = np.flatnonzero(np.isfinite(vals))
    if not codec.fast or fin.size < 2:
        return None
    idx = np.asarray(history.indices, dtype=np.int64)
    ranked = fin[np.lexsort((fin, vals[fin]))]  # by value, ties by trial order
    n_good = tpe_gamma(int(fin.size))
    good, bad = np.sort(ranked[:n_good]), np.sort(ranked[n_good:])
    radices = codec.radices.tolist()
    mix_l, tab_l = _kernels(codec.digits(idx[good]), np.ones(good.size), radices)
    mix_g, tab_g = _kernels(codec.digits(idx[bad]), tpe_weights(int(bad.size)), radices)
    n_draws = N_EI_CANDIDATES * _DRAWS_PER_CANDIDATE
    comp = np.minimum(np.searchsorted(np.cumsum(mix_l), rng.random(n_draws) * mix_l.sum()),
                      mix_l.size - 1)
    digits = np.empty((n_draws, len(radices)), dtype=np.int64)
    for j, r in enumerate(radices):
        cdf = np.cumsum(tab_l[j][comp], axis=1)
        u = rng.random(n_draws)[:, None] * cdf[:, -1:]
        digits[:, j] = np.minimum((cdf < u).sum(axis=1), r - 1)
    cand, ok = codec.from_product(codec.compose(digits))
    if history.taken:
        ok &= ~np.isin(cand, np.fromiter(history.taken, np.int64, len(history.taken)))
    keep = np.flatnonzero(ok)
    if keep.size == 0:
        return None
    _, first = np.unique(cand[keep], return_index=True)
    keep = keep[np.sort(first)][:N_EI_CANDIDATES]
    score = _log_density(digits[keep], mix_l, tab_l) - _log_density(digits[keep], mix_g, tab_g)
    best = keep[score == score.max()]
    return int(cand[best[int(rng.integers(best.size))]])
