"""Random-forest cost model (scikit-learn) on log cost."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.cost_model._base import BaseCostModel

__all__ = ["RandomForestCostModel"]


class RandomForestCostModel(BaseCostModel):
    """A random forest regressing ``log(y)``, behind the cost-model interface.

    Wraps :class:`sklearn.ensemble.RandomForestRegressor`; ``predict``
    returns ``exp`` of the forest's mean prediction, a cost in the units of
    ``y`` (lower is better).

    Parameters
    ----------
    n_estimators : int, default=100
        Trees.
    max_depth : int, optional
        Maximum tree depth; None grows trees until leaves are pure or hold
        ``min_samples_leaf`` configs.
    min_samples_leaf : int, default=1
        Minimum configs per leaf.
    max_features : float, int or str, default=0.5
        Features considered per split (scikit-learn semantics).
    random_state : int, optional
        Seed of the bootstrap and feature sampling.
    n_jobs : int, optional
        Parallel jobs of the forest (scikit-learn semantics).
    failed : {"penalize", "drop"}, default="penalize"
        How to treat failed (non-finite) costs; see :class:`BaseCostModel`.

    Attributes
    ----------
    model_ : sklearn.ensemble.RandomForestRegressor
        The fitted forest.
    n_features_in_ : int
        Features seen in ``fit``.
    n_failed_ : int
        Failed costs seen in ``fit``.

    References
    ----------
    L. Breiman, "Random Forests", Machine Learning 45(1), 2001.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((200, 3)); y = 1 + X[:, 0]
    >>> model = RandomForestCostModel(n_estimators=20, random_state=0).fit(X, y)
    >>> model.predict(X).shape
    (200,)
    """

    def __init__(self, n_estimators: int = 100, max_depth: int | None = None,
                 min_samples_leaf: int = 1, max_features: float | int | str = 0.5,
                 random_state: int | None = None, n_jobs: int | None = None,
                 failed: str = "penalize") -> None:
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.failed = failed

    def _fit(self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> None:
        from sklearn.ensemble import RandomForestRegressor

        forest: Any = RandomForestRegressor(
            n_estimators=self.n_estimators, max_depth=self.max_depth,
            min_samples_leaf=self.min_samples_leaf, max_features=self.max_features,
            random_state=self.random_state, n_jobs=self.n_jobs)
        self.model_ = forest.fit(X, np.log(y))

    def _predict(self, X: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.exp(np.asarray(self.model_.predict(X), dtype=np.float64))
