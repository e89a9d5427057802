"""Accuracy metrics of cost models on held-out configs."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats
from sklearn.base import clone

__all__ = ["spearman", "top_k_recall", "evaluate"]


def _check_pair(y_true: Any, y_pred: Any) -> tuple[npt.NDArray[np.float64],
                                                    npt.NDArray[np.float64]]:
    t = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(y_pred, dtype=np.float64)
    if t.ndim != 1 or t.shape != p.shape:
        raise ValueError(
            f"y_true and y_pred must be 1-D of equal length, got shapes {t.shape} and {p.shape}")
    if t.size < 2:
        raise ValueError(f"need at least 2 configs, got {t.size}")
    return t, p


def spearman(y_true: Any, y_pred: Any) -> float:
    """Spearman rank correlation of true and predicted costs.

    Parameters
    ----------
    y_true : array-like of shape (n_configs,)
        True costs.
    y_pred : array-like of shape (n_configs,)
        Predicted costs (any monotone score, lower is better).

    Returns
    -------
    float
        In [-1, 1]; 0.0 if either input is constant (undefined correlation).

    Raises
    ------
    ValueError
        If the shapes differ, are not 1-D, or hold fewer than 2 configs.

    References
    ----------
    :func:`scipy.stats.spearmanr` (ties get average ranks).
    """
    t, p = _check_pair(y_true, y_pred)
    if np.all(t == t[0]) or np.all(p == p[0]):
        return 0.0
    return float(stats.spearmanr(t, p).statistic)


def top_k_recall(y_true: Any, y_pred: Any, k: int) -> float:
    """Fraction of the true best ``k`` configs among the predicted best ``k``.

    The predicted top-k are the ``k`` configs of lowest ``y_pred`` (ties
    broken by position). A predicted pick counts as a hit if its true cost is
    at most the ``k``-th lowest true cost, so configs tied with the true
    top-k are not penalised for the arbitrary tie order; without ties this
    is ``|true top-k ∩ predicted top-k| / k``.

    Parameters
    ----------
    y_true : array-like of shape (n_configs,)
        True costs, lower is better.
    y_pred : array-like of shape (n_configs,)
        Predicted costs, lower is better.
    k : int
        ``1 <= k <= n_configs``.

    Returns
    -------
    float
        In [0, 1].

    Raises
    ------
    ValueError
        If ``k`` is out of range or the shapes differ.

    Examples
    --------
    >>> top_k_recall([1, 2, 3, 4], [4, 3, 2, 1], k=2)
    0.0
    >>> top_k_recall([1, 2, 3, 4], [1, 3, 2, 4], k=2)
    0.5
    """
    t, p = _check_pair(y_true, y_pred)
    k = int(k)
    if not 1 <= k <= t.size:
        raise ValueError(f"k must satisfy 1 <= k <= n_configs={t.size}, got k={k}")
    threshold = np.partition(t, k - 1)[k - 1]
    picked = np.argsort(p, kind="stable")[:k]
    return float(np.count_nonzero(t[picked] <= threshold)) / k


def evaluate(model: Any, X_train: Any, y_train: Any, X_test: Any, y_test: Any,
             ks: Sequence[int] = (1, 10, 50)) -> dict[str, float]:
    """Fit a clone of ``model`` on the training configs and score held-out ones.

    Parameters
    ----------
    model : BaseCostModel
        An unfitted or fitted cost model; it is cloned, not modified.
    X_train : array-like of shape (n_train, n_features)
    y_train : array-like of shape (n_train,)
        Training costs (non-finite = failed, see the model's ``failed``).
    X_test : array-like of shape (n_test, n_features)
    y_test : array-like of shape (n_test,)
        Held-out costs; non-finite ones are left out of the metrics.
    ks : sequence of int, default=(1, 10, 50)
        ``k`` of the top-k recalls; each is capped at the number of finite
        held-out costs.

    Returns
    -------
    dict of str to float
        ``"spearman"``, ``"recall@{k}"`` for each ``k``, ``"n_train"``,
        ``"n_test"`` and ``"fit_s"`` (seconds spent in ``fit``, wall clock).
    """
    est = clone(model)
    t0 = time.perf_counter()
    est.fit(X_train, y_train)
    fit_s = time.perf_counter() - t0
    y = np.asarray(y_test, dtype=np.float64)
    pred = est.predict(X_test)
    ok = np.isfinite(y)
    out: dict[str, float] = {"spearman": spearman(y[ok], pred[ok])}
    for k in ks:
        out[f"recall@{k}"] = top_k_recall(y[ok], pred[ok], min(int(k), int(ok.sum())))
    out["n_train"] = float(np.asarray(y_train).shape[0])
    out["n_test"] = float(y.shape[0])
    out["fit_s"] = fit_s
    return out
