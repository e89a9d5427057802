"""The cost-model contract shared by every model in :mod:`autotile.cost_model`.

A cost model learns, from measured configs, to order unmeasured ones.
Subclasses implement ``_fit(X, y)`` and ``_predict(X)``; this base class
validates inputs at the public boundary, handles failed measurements and
guards ``predict`` with :class:`~autotile.errors.NotFittedError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator

from autotile.errors import NotFittedError

__all__ = ["BaseCostModel", "check_X", "check_is_fitted"]

_FAILED = ("penalize", "drop")

#: Factor applied to the largest finite cost to score a failed config.
FAILED_COST_FACTOR = 2.0


def check_X(X: Any, n_features: int | None = None) -> npt.NDArray[np.float64]:
    """Validate a feature matrix.

    Parameters
    ----------
    X : array-like of shape (n_configs, n_features)
        Features; must be finite.
    n_features : int, optional
        Required number of columns.

    Returns
    -------
    ndarray of shape (n_configs, n_features), dtype float64

    Raises
    ------
    ValueError
        If ``X`` is not 2-D, has the wrong number of columns, or holds
        non-finite values.
    """
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"X must be 2-D of shape (n_configs, n_features), got shape {arr.shape}")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(
            f"X has {arr.shape[1]} features, but the model was fitted with {n_features} "
            f"(X.shape={arr.shape})")
    if not np.all(np.isfinite(arr)):
        raise ValueError("X must be finite, got NaN or inf values")
    return arr


def check_is_fitted(model: Any, attribute: str = "model_") -> None:
    """Raise :class:`~autotile.errors.NotFittedError` unless ``model`` is fitted.

    Raises
    ------
    NotFittedError
        If ``model`` has no ``attribute``.
    """
    if not hasattr(model, attribute):
        raise NotFittedError(
            f"{type(model).__name__} is not fitted yet; call fit(X, y) before using it")


class BaseCostModel(BaseEstimator):  # type: ignore[misc]
    """Base class of cost models: ``fit(X, y)``, then ``predict(X)``; lower is better.

    Contract for subclasses:

    * ``__init__`` stores its keyword arguments unchanged (``sklearn.clone``
      relies on it); validation happens in ``fit``.
    * ``_fit(X, y)`` gets ``X`` of shape (n_configs, n_features), float64,
      finite, and ``y`` of shape (n_configs,), float64, finite and > 0 (failed
      configs already handled, see ``failed``); it sets ``model_``.
    * ``_predict(X)`` gets a validated ``X`` and returns shape (n_configs,)
      float64 scores where *lower is better*. Regression models return
      predicted costs in the units of ``y``; ranking models return scores
      whose order alone is meaningful.

    Failed measurements: a cost of ``inf`` or ``NaN`` marks a failed config
    (Triton's convention). With ``failed="penalize"`` it is replaced by
    ``FAILED_COST_FACTOR`` (2) times the largest finite cost, so the model
    learns to avoid the region; with ``failed="drop"`` it is left out.

    Attributes
    ----------
    model_ : object
        The fitted underlying model (set by ``fit``).
    n_features_in_ : int
        Number of features seen in ``fit``.
    n_failed_ : int
        Non-finite costs seen in ``fit``.
    """

    failed: str

    def _fit(self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> None:
        raise NotImplementedError

    def _predict(self, X: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        raise NotImplementedError

    def _check_params(self) -> None:
        """Validate hyper-parameters; subclasses extend it."""
        if self.failed not in _FAILED:
            raise ValueError(f"failed must be one of {_FAILED}, got failed={self.failed!r}")

    def fit(self, X: Any, y: Any) -> BaseCostModel:
        """Fit the model to measured configs.

        Parameters
        ----------
        X : array-like of shape (n_configs, n_features)
            Features of the measured configs (finite).
        y : array-like of shape (n_configs,)
            Measured costs, lower is better; finite costs must be > 0;
            ``inf``/``NaN`` mark failed configs.

        Returns
        -------
        BaseCostModel
            self.

        Raises
        ------
        ValueError
            If shapes disagree, a hyper-parameter is invalid, a finite cost
            is <= 0, or fewer than 2 finite costs remain.
        """
        self._check_params()
        X_arr = check_X(X)
        y_arr = np.asarray(y, dtype=np.float64)
        if y_arr.ndim != 1 or y_arr.shape[0] != X_arr.shape[0]:
            raise ValueError(
                f"y must have shape (n_configs,) = ({X_arr.shape[0]},) to match X.shape="
                f"{X_arr.shape}, got y.shape={y_arr.shape}")
        ok = np.isfinite(y_arr)
        if int(ok.sum()) < 2:
            raise ValueError(f"need at least 2 finite costs to fit, got {int(ok.sum())}")
        if np.any(y_arr[ok] <= 0):
            bad = float(y_arr[ok][y_arr[ok] <= 0][0])
            raise ValueError(f"costs must be > 0 (lower is better), got a cost of {bad}")
        self.n_failed_ = int((~ok).sum())
        if self.n_failed_:
            if self.failed == "drop":
                X_arr, y_arr = X_arr[ok], y_arr[ok]
            else:
                y_arr = np.where(ok, y_arr, FAILED_COST_FACTOR * float(y_arr[ok].max()))
        self.n_features_in_ = X_arr.shape[1]
        self._fit(X_arr, y_arr)
        return self

    def predict(self, X: Any) -> npt.NDArray[np.float64]:
        """Predict costs (lower is better).

        Parameters
        ----------
        X : array-like of shape (n_configs, n_features)
            Features, same columns as in ``fit``.

        Returns
        -------
        ndarray of shape (n_configs,), dtype float64
            Predicted cost (regression) or negated ranking score (ranking);
            either way lower means better.

        Raises
        ------
        NotFittedError
            If called before ``fit``.
        ValueError
            If ``X`` is not 2-D with ``n_features_in_`` columns.
        """
        check_is_fitted(self)
        X_arr = check_X(X, self.n_features_in_)
        return np.asarray(self._predict(X_arr), dtype=np.float64).reshape(-1)

    def score(self, X: Any, y: Any) -> float:
        """Spearman rank correlation between ``y`` and ``predict(X)``.

        Configs with non-finite ``y`` are ignored. Higher is better (1 is a
        perfect order), unlike ``predict``.

        Parameters
        ----------
        X : array-like of shape (n_configs, n_features)
        y : array-like of shape (n_configs,)
            True costs.

        Returns
        -------
        float
            In [-1, 1].
        """
        from autotile.cost_model._metrics import spearman

        y_arr = np.asarray(y, dtype=np.float64)
        pred = self.predict(X)
        ok = np.isfinite(y_arr)
        return spearman(y_arr[ok], pred[ok])
