"""XGBoost cost model with a pairwise ranking or a log-cost regression objective."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.cost_model._base import BaseCostModel

__all__ = ["XGBCostModel"]

_OBJECTIVES = ("rank", "reg")


class XGBCostModel(BaseCostModel):
    """Gradient-boosted trees (XGBoost) as a cost model, AutoTVM style.

    ``objective="rank"`` trains XGBoost's pairwise ranking objective
    (``rank:pairwise``) on one query group holding all training configs,
    with relevance ``min(y) / y`` in (0, 1] (the best config is most
    relevant; AutoTVM normalises throughput the same way); ``predict``
    returns the negated ranking score, so lower is better and only the
    order is meaningful. ``objective="reg"`` regresses ``log(y)``
    (``reg:squarederror``) and ``predict`` returns ``exp`` of the
    prediction, a cost in the units of ``y``.

    Booster defaults follow AutoTVM's ``XGBoostCostModel`` (``max_depth=3``,
    ``eta=0.3``, ``gamma=1e-4``, ``min_child_weight=1``, ``subsample=1``,
    ``lambda=1``, ``alpha=0``). AutoTVM boosts up to 8000 rounds with early
    stopping on the training top-k recall; here a fixed ``n_estimators``
    keeps fits deterministic and cheap. For ranking, pairs are drawn with
    ``lambdarank_pair_method="mean"`` (random pairs over the whole list, as
    ``rank:pairwise`` did before XGBoost 2.0) rather than XGBoost's default
    ``"topk"``, because a searcher needs the whole order, not just the head.

    Parameters
    ----------
    objective : {"rank", "reg"}, default="rank"
        Training objective.
    n_estimators : int, default=200
        Boosting rounds.
    max_depth : int, default=3
        Maximum tree depth.
    learning_rate : float, default=0.3
        Shrinkage ``eta``.
    random_state : int, optional
        Seed of XGBoost's sampling (ranking pairs, subsampling). None draws
        a seed from fresh OS entropy at ``fit``.
    n_jobs : int, optional
        XGBoost threads (``nthread``); None uses XGBoost's default.
    failed : {"penalize", "drop"}, default="penalize"
        How to treat failed (non-finite) costs; see :class:`BaseCostModel`.
    **xgb_params
        Extra XGBoost booster parameters (``subsample``, ``gamma``,
        ``lambdarank_num_pair_per_sample``, ...); they override the defaults
        above and are returned by ``get_params``.

    Attributes
    ----------
    model_ : xgboost.Booster
        The trained booster.
    n_features_in_ : int
        Features seen in ``fit``.
    n_failed_ : int
        Failed costs seen in ``fit``.
    params_ : dict
        The booster parameters used.

    Raises
    ------
    ValueError
        From ``fit``: if ``objective`` is unknown, ``n_estimators < 1`` or
        ``max_depth < 1``.

    References
    ----------
    T. Chen et al., "Learning to Optimize Tensor Programs", NeurIPS 2018,
    §3.2 (rank loss); TVM ``autotvm/tuner/xgboost_cost_model.py``.
    T. Chen and C. Guestrin, "XGBoost: A Scalable Tree Boosting System",
    KDD 2016.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((200, 3)); y = 1 + X[:, 0] + 0.1 * X[:, 1]
    >>> model = XGBCostModel(objective="reg", random_state=0).fit(X, y)
    >>> round(model.score(X, y), 2) > 0.9
    True
    """

    def __init__(self, objective: str = "rank", n_estimators: int = 200, max_depth: int = 3,
                 learning_rate: float = 0.3, random_state: int | None = None,
                 n_jobs: int | None = None, failed: str = "penalize",
                 **xgb_params: Any) -> None:
        self.objective = objective
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.failed = failed
        self.xgb_params = xgb_params

    # scikit-learn sees **xgb_params as ordinary parameters (as xgboost.XGBModel does)
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters, ``**xgb_params`` included."""
        params = super().get_params(deep=deep)
        params.update(self.xgb_params)
        return params  # type: ignore[no-any-return]

    def set_params(self, **params: Any) -> XGBCostModel:
        """Set parameters; unknown names go to ``xgb_params``. Returns self."""
        own = set(super().get_params(deep=False))
        for key, value in params.items():
            if key in own:
                setattr(self, key, value)
            else:
                self.xgb_params[key] = value
        return self

    def _check_params(self) -> None:
        super()._check_params()
        if self.objective not in _OBJECTIVES:
            raise ValueError(
                f"objective must be one of {_OBJECTIVES}, got objective={self.objective!r}")
        if int(self.n_estimators) < 1:
            raise ValueError(f"n_estimators must be >= 1, got n_estimators={self.n_estimators}")
        if int(self.max_depth) < 1:
            raise ValueError(f"max_depth must be >= 1, got max_depth={self.max_depth}")

    def _fit(self, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> None:
        import xgboost as xgb

        seed = (int(self.random_state) if self.random_state is not None
                else int(np.random.default_rng().integers(2**31)))
        params: dict[str, Any] = {
            "max_depth": int(self.max_depth),
            "eta": float(self.learning_rate),
            "gamma": 1e-4,
            "min_child_weight": 1,
            "subsample": 1.0,
            "lambda": 1.0,
            "alpha": 0.0,
            "seed": seed,
            "verbosity": 0,
        }
        if self.n_jobs is not None:
            params["nthread"] = int(self.n_jobs)
        # the DMatrix gets the booster's thread count too: with XGBoost's default (every
        # core) building it costs about 25 ms of CPU however small X is
        nthread = -1 if self.n_jobs is None else int(self.n_jobs)
        if self.objective == "rank":
            params.update(objective="rank:pairwise", lambdarank_pair_method="mean",
                          lambdarank_num_pair_per_sample=32)
            dtrain = xgb.DMatrix(X, label=float(y.min()) / y, qid=np.zeros(len(y), np.int64),
                                 nthread=nthread)
        else:
            params["objective"] = "reg:squarederror"
            dtrain = xgb.DMatrix(X, label=np.log(y), nthread=nthread)
        params.update(self.xgb_params)
        self.params_ = params
        self.model_ = xgb.train(params, dtrain, num_boost_round=int(self.n_estimators))

    def _predict(self, X: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        # inplace_predict skips building a DMatrix (the searchers predict often).
        raw = np.asarray(self.model_.inplace_predict(X), dtype=np.float64)
        return -raw if self.objective == "rank" else np.exp(raw)
