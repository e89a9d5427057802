from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from autotile.cost_model import (
    RandomForestCostModel,
    XGBCostModel,
    evaluate,
    spearman,
    top_k_recall,
)
from autotile.errors import NotFittedError

MODELS = [
    lambda: XGBCostModel(objective="rank", n_estimators=30, random_state=0, n_jobs=1),
    lambda: XGBCostModel(objective="reg", n_estimators=30, random_state=0, n_jobs=1),
    lambda: RandomForestCostModel(n_estimators=20, random_state=0, n_jobs=1),
]


def _toy(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4))
    y = np.exp(2 * X[:, 0] + X[:, 1] ** 2) * 100
    return X, y


@pytest.mark.parametrize("make", MODELS)
def test_fit_predict_lower_is_better(make) -> None:  # type: ignore[no-untyped-def]
    X, y = _toy()
    model = make()
    assert model.fit(X, y) is model
    assert model.n_features_in_ == 4 and model.n_failed_ == 0
    pred = model.predict(X)
    assert pred.shape == (300,) and pred.dtype == np.float64
    assert spearman(y, pred) > 0.9
    assert model.score(X, y) == pytest.approx(spearman(y, pred))


@pytest.mark.parametrize("make", MODELS)
def test_clone_keeps_params_and_refits_identically(make) -> None:  # type: ignore[no-untyped-def]
    X, y = _toy()
    model = make()
    twin = clone(model)
    assert twin.get_params() == model.get_params()
    np.testing.assert_array_equal(model.fit(X, y).predict(X), twin.fit(X, y).predict(X))


def test_xgb_extra_params_roundtrip_through_clone() -> None:
    model = XGBCostModel(objective="reg", n_estimators=5, subsample=0.8, random_state=1)
    assert model.get_params()["subsample"] == 0.8
    twin = clone(model)
    assert twin.xgb_params == {"subsample": 0.8}
    twin.set_params(max_depth=4, gamma=0.5)
    assert twin.max_depth == 4 and twin.xgb_params == {"subsample": 0.8, "gamma": 0.5}
    X, y = _toy()
    assert twin.fit(X, y).params_["gamma"] == 0.5


@pytest.mark.parametrize("make", MODELS)
def test_not_fitted(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(NotFittedError, match="not fitted"):
        make().predict(np.zeros((2, 4)))


@pytest.mark.parametrize("make", MODELS)
def test_bad_shapes(make) -> None:  # type: ignore[no-untyped-def]
    X, y = _toy()
    model = make()
    with pytest.raises(ValueError, match=r"2-D .*shape \(300,\)"):
        model.fit(X[:, 0], y)
    with pytest.raises(ValueError, match=r"y must have shape \(n_configs,\) = \(300,\)"):
        model.fit(X, y[:-1])
    with pytest.raises(ValueError, match="finite"):
        model.fit(np.where(X > 0.99, np.nan, X), y)
    with pytest.raises(ValueError, match="> 0"):
        model.fit(X, y - y.max())
    model.fit(X, y)
    with pytest.raises(ValueError, match="fitted with 4"):
        model.predict(np.zeros((3, 5)))


def test_invalid_hyper_parameters() -> None:
    X, y = _toy()
    with pytest.raises(ValueError, match="objective"):
        XGBCostModel(objective="lambdamart").fit(X, y)
    with pytest.raises(ValueError, match="n_estimators"):
        XGBCostModel(n_estimators=0).fit(X, y)
    with pytest.raises(ValueError, match="failed"):
        RandomForestCostModel(failed="ignore").fit(X, y)


@pytest.mark.parametrize("make", MODELS)
def test_failed_costs(make) -> None:  # type: ignore[no-untyped-def]
    X, y = _toy()
    y_fail = y.copy()
    bad = X[:, 0] > 0.9  # the worst region fails
    y_fail[bad] = np.inf
    y_fail[:3] = np.nan
    model = make().fit(X, y_fail)
    assert model.n_failed_ == int((bad | (np.arange(300) < 3)).sum())
    pred = model.predict(X)
    assert np.all(np.isfinite(pred))
    # failed configs are predicted worse than the typical good config
    assert np.median(pred[bad]) > np.median(pred[X[:, 0] < 0.5])
    dropped = make().set_params(failed="drop").fit(X, y_fail)
    assert dropped.n_failed_ == model.n_failed_
    with pytest.raises(ValueError, match="at least 2 finite"):
        make().fit(X[:3], [np.inf, np.nan, 1.0])


def test_metrics() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0
    assert top_k_recall([1, 2, 3, 4, 5], [5, 4, 3, 2, 1], 2) == 0.0
    assert top_k_recall([1, 2, 3, 4, 5], [1, 3, 2, 4, 5], 2) == 0.5
    assert top_k_recall([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], 5) == 1.0
    # ties with the k-th best count as hits
    assert top_k_recall([1, 2, 2, 2, 9], [0, 5, 5, 1, 9], 2) == 1.0
    with pytest.raises(ValueError, match="k must satisfy"):
        top_k_recall([1, 2], [1, 2], 3)
    with pytest.raises(ValueError, match="equal length"):
        spearman([1, 2, 3], [1, 2])


def test_evaluate_does_not_touch_the_model() -> None:
    X, y = _toy(400)
    model = RandomForestCostModel(n_estimators=10, random_state=0, n_jobs=1)
    res = evaluate(model, X[:300], y[:300], X[300:], y[300:], ks=(1, 10))
    assert not hasattr(model, "model_")
    assert set(res) == {"spearman", "recall@1", "recall@10", "n_train", "n_test", "fit_s"}
    assert res["n_train"] == 300 and res["n_test"] == 100
    assert res["spearman"] > 0.9
