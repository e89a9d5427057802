"""Cost-model plumbing shared by the model-guided and evolutionary searchers."""

from __future__ import annotations

import heapq
import math
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.search._base import History
from autotile.search._codec import IndexCodec
from autotile.space import Space

__all__ = ["make_cost_model", "make_featurizer", "ModelScorer", "FeatureRows",
           "clear_feature_cache", "TopK", "best_first", "trials_since_improvement",
           "local_candidates", "spread_ties"]

_MODEL_NAMES = ("xgb", "xgb-rank", "xgb-reg", "rf")
# Boosting rounds of the searchers' XGBoost models: half XGBCostModel's 200. A searcher
# only uses the ranking; on the 246,960-config GEMM space seeds 0-4 of the model-guided
# and evolutionary searchers propose the same configs as with 200 rounds, at half the
# fit time.
_SEARCH_ROUNDS = 100
_MAX_ROW_TABLE = 1 << 24  # configs up to which feature rows are found through an array


def make_cost_model(spec: Any, seed: int) -> Any:
    """Return a fresh cost model from a name or an estimator.

    Parameters
    ----------
    spec : None, str or estimator
        ``None``, ``"xgb"`` or ``"xgb-rank"``: ``XGBCostModel("rank")``;
        ``"xgb-reg"``: ``XGBCostModel("reg")`` (both with 100 boosting
        rounds: the searchers use only the ranking); ``"rf"``:
        ``RandomForestCostModel``; an object with ``fit``/``predict`` is
        cloned (``sklearn.base.clone``) and its ``random_state``, if unset,
        is set to ``seed``.
    seed : int
        ``random_state`` of the model.

    Returns
    -------
    object
        A model with ``fit(X, y)`` and ``predict(X)`` (lower is better).

    Raises
    ------
    ValueError
        If ``spec`` is an unknown name or has no ``fit``/``predict``.
    """
    if spec is None or isinstance(spec, str):
        from autotile.cost_model import RandomForestCostModel, XGBCostModel

        name = spec or "xgb"
        if name in ("xgb", "xgb-rank"):
            return XGBCostModel(objective="rank", n_estimators=_SEARCH_ROUNDS,
                                random_state=seed, n_jobs=1)
        if name == "xgb-reg":
            return XGBCostModel(objective="reg", n_estimators=_SEARCH_ROUNDS,
                                random_state=seed, n_jobs=1)
        if name == "rf":
            return RandomForestCostModel(random_state=seed, n_jobs=1)
        raise ValueError(f"cost_model must be one of {_MODEL_NAMES} or an estimator, got {spec!r}")
    if not (hasattr(spec, "fit") and hasattr(spec, "predict")):
        raise ValueError(
            f"cost_model must have fit(X, y) and predict(X), got {type(spec).__name__}"
        )
    from sklearn.base import clone

    try:
        model = clone(spec)
    except TypeError:
        return spec
    params = model.get_params() if hasattr(model, "get_params") else {}
    if "random_state" in params and params["random_state"] is None:
        model.set_params(random_state=seed)
    return model


def make_featurizer(spec: Any, space: Space) -> Any:
    """Return a featurizer: ``"auto"`` (``featurizer_for(space)``), ``"knob"`` or an object.

    Parameters
    ----------
    spec : str or object
        ``"auto"`` (or ``None``): :func:`autotile.cost_model.featurizer_for`
        (loop features for GEMM spaces); ``"knob"``: the knob encoding only;
        an object with ``transform(configs)``.
    space : Space
        The space.

    Returns
    -------
    object
        Has ``transform(configs) -> ndarray of shape (n_configs, n_features)``.

    Raises
    ------
    ValueError
        If ``spec`` is neither.
    """
    from autotile.cost_model import KnobFeaturizer, featurizer_for

    if spec is None or spec == "auto":
        return featurizer_for(space)
    if spec == "knob":
        return KnobFeaturizer(space).fit()
    if hasattr(spec, "transform"):
        return spec
    raise ValueError(
        f"featurizer must be 'knob', 'auto' or have transform(configs), got {spec!r}")


class FeatureRows:
    """Featurizer rows of a space's configs, each computed once, found by space index.

    The rows are cached in one growing array; a lookup table (an array up to
    ``2**24`` configs, a dict beyond) maps a space index to its row, so
    lookups are vectorised and a config revisited by a search is featurized
    once.

    Parameters
    ----------
    featurizer : object
        Has ``transform(configs)`` (and, used when the codec is fast,
        ``transform_digits(digits)``).
    codec : IndexCodec
        Codec of the space.
    """

    def __init__(self, featurizer: Any, codec: IndexCodec) -> None:
        self.featurizer = featurizer
        self.codec = codec
        size = len(codec.space)
        self._row: npt.NDArray[np.int64] | None = (
            np.full(size, -1, dtype=np.int64) if size <= _MAX_ROW_TABLE else None)
        self._pos: dict[int, int] = {}
        self._n_rows = 0
        self._X = np.zeros((0, 0))
        self._lock = threading.Lock()  # shared by the searchers of a space, maybe in threads

    def _rows(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Rows of ``self._X`` holding ``idx`` (-1 where not featurized yet)."""
        if self._row is not None:
            return self._row[idx]
        return np.fromiter((self._pos.get(i, -1) for i in idx.tolist()), np.int64, idx.size)

    def __call__(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Feature matrix of the configs at ``idx``, shape (n, n_features)."""
        with self._lock:
            return self._features(idx)

    def _features(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        rows = self._rows(idx)
        if (rows < 0).any():
            missing = np.unique(idx[rows < 0])
            if self.codec.fast and hasattr(self.featurizer, "transform_digits"):
                X = np.asarray(self.featurizer.transform_digits(self.codec.digits(missing)),
                               np.float64)
            else:
                X = np.asarray(self.featurizer.transform(self.codec.configs(missing)),
                               np.float64)
            n = self._n_rows
            if self._X.shape[0] < n + missing.size:
                grown = np.empty((max(2 * self._X.shape[0], n + missing.size, 1024), X.shape[1]))
                if n:
                    grown[:n] = self._X[:n]
                self._X = grown
            self._X[n:n + missing.size] = X
            new = np.arange(n, n + missing.size, dtype=np.int64)
            if self._row is not None:
                self._row[missing] = new
            else:
                self._pos.update(zip(missing.tolist(), new.tolist()))
            self._n_rows = n + missing.size
            rows = self._rows(idx)
        if idx.size == 0:
            return np.zeros((0, self._X.shape[1]))
        return self._X[rows]


#: id(space) -> (space, FeatureRows of its default featurizer ``featurizer_for(space)``),
#: shared by every searcher of the space in this process: an explicit cache
#: (clear_feature_cache) of the _MAX_SHARED spaces used last (the rows refer to their space,
#: so a weak-keyed map would never let one go).
_SHARED_ROWS: OrderedDict[int, tuple[Space, FeatureRows]] = OrderedDict()
_MAX_SHARED = 4


def clear_feature_cache() -> None:
    """Forget the feature rows shared by the searchers of each space (see :class:`ModelScorer`)."""
    _SHARED_ROWS.clear()


def _shared_rows(space: Space, codec: IndexCodec) -> FeatureRows:
    hit = _SHARED_ROWS.get(id(space))
    if hit is not None and hit[0] is space:
        _SHARED_ROWS.move_to_end(id(space))
        return hit[1]
    store = FeatureRows(make_featurizer("auto", space), codec)
    _SHARED_ROWS[id(space)] = (space, store)
    while len(_SHARED_ROWS) > _MAX_SHARED:
        _SHARED_ROWS.popitem(last=False)
    return store


class ModelScorer:
    """A cost model and a featurizer over space indices: fit on a history, predict.

    With ``featurizer="knob"`` features are gathered from per-knob tables
    (:meth:`IndexCodec.encode`); otherwise the featurizer's rows are cached
    per space index (:class:`FeatureRows`). With the default featurizer
    (``"auto"``) that cache is shared by every scorer of the same space in
    the process (the rows depend on the config alone), so the seeds of a
    comparison featurize each config once; :func:`clear_feature_cache`
    empties it.
    """

    def __init__(self, space: Space, cost_model: Any, featurizer: Any, codec: IndexCodec) -> None:
        self.space = space
        self.codec = codec
        self.cost_model_spec = cost_model
        make_cost_model(cost_model, 0)  # validate the spec now, not at the first fit
        self._knob = isinstance(featurizer, str) and featurizer == "knob"
        self._store: FeatureRows | None = None
        if not self._knob:
            shared = featurizer is None or (isinstance(featurizer, str) and featurizer == "auto")
            self._store = (_shared_rows(space, codec) if shared
                           else FeatureRows(make_featurizer(featurizer, space), codec))
        self.featurizer = None if self._store is None else self._store.featurizer
        self.model: Any = None

    def features(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Feature matrix of the configs at ``idx``, shape (n, n_features)."""
        idx = np.asarray(idx, dtype=np.int64)
        if self._store is None:
            return self.codec.encode(idx)
        return self._store(idx)

    def refit(self, history: History, seed: int, growth: float,
              memory: dict[str, Any]) -> bool:
        """Refit on Ansor's schedule; return whether a model is ready for this study.

        The model of a study is kept in its ``memory``. A fresh one is
        fitted on every finished trial when there is none yet, or when the
        trials have grown by more than ``growth`` (a fraction) since the
        last fit: with 0.2, as Ansor retrains its model, about 18 fits over
        500 trials instead of one per plan of 8. ``growth=0`` refits every
        time.

        Parameters
        ----------
        history : History
            The study's finished trials.
        seed : int
            Seed of a new model.
        growth : float
            Relative growth of the data that triggers a refit, >= 0.
        memory : dict
            The searcher's scratch state for this study.

        Returns
        -------
        bool
            False while there are fewer than 2 finite values.
        """
        n = history.n_finished
        n_fit = memory.get("model_n_fitted")
        if n_fit is not None and n <= n_fit * (1.0 + growth):
            self.model = memory["model"]
            return True
        if not self.fit(history, seed):
            return False
        memory["model"], memory["model_n_fitted"] = self.model, n
        return True

    def fit(self, history: History, seed: int) -> bool:
        """Fit a fresh model on every finished trial; return whether there was enough data."""
        y = history.value_array()
        ok = np.isfinite(y)
        if int(ok.sum()) < 2:
            return False
        lo = float(y[ok].min())
        if lo <= 0:
            y = np.where(ok, y - lo + 1.0, y)
        X = self.features(np.asarray(history.indices, dtype=np.int64))
        self.model = make_cost_model(self.cost_model_spec, seed)
        self.model.fit(X, y)
        return True

    def predict(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Predicted costs of the configs at ``idx``, shape (n,)."""
        if len(idx) == 0:
            return np.zeros(0)
        return np.asarray(self.model.predict(self.features(idx)), dtype=np.float64)


def best_first(history: History, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """Space indices of the finished trials with a finite value, best first.

    Ties (frequent: plateaus of equal miss counts, or configs that differ
    only in a loop order that does not matter) are broken at random, so a
    search that ranks by measured value does not always walk the same side
    of a plateau.
    """
    vals = history.value_array()
    ok = np.flatnonzero(np.isfinite(vals))
    order = ok[np.lexsort((rng.random(ok.size), vals[ok]))]
    return np.asarray(history.indices, dtype=np.int64)[order]


def trials_since_improvement(history: History) -> int:
    """Finished trials since the best value so far was first reached (all, if none is finite)."""
    vals = history.value_array()
    if vals.size == 0 or not np.isfinite(vals).any():
        return int(vals.size)
    return int(vals.size - 1 - int(np.argmin(vals)))


def local_candidates(codec: IndexCodec, ranked: npt.NDArray[np.int64], taken: set[int],
                     n_centres: int, n_min: int) -> npt.NDArray[np.int64]:
    """Unmeasured neighbours of the best measured configs.

    Parameters
    ----------
    codec : IndexCodec
        Codec of the space.
    ranked : ndarray of shape (n_measured,), int64
        Measured space indices, best first (see :func:`best_first`).
    taken : set of int
        Space indices already in the study (never returned).
    n_centres : int
        Neighbourhoods of the ``n_centres`` best configs are taken; more
        centres are added, in rank order, until there are ``n_min``
        candidates or no centre is left.
    n_min : int
        Minimum number of candidates wanted.

    Returns
    -------
    ndarray of shape (n_candidates,), int64
        Distinct space indices, sorted.
    """
    out = np.zeros(0, dtype=np.int64)
    start = 0
    while start < ranked.size and (start < n_centres or out.size < n_min):
        stop = max(n_centres, start + max(1, start)) if start < n_centres else 2 * start
        nb = codec.neighbours(ranked[start:stop])
        if taken:
            nb = nb[~np.isin(nb, np.fromiter(taken, np.int64, len(taken)))]
        out = np.union1d(out, nb)
        start = stop
    return out


def spread_ties(idx: npt.NDArray[np.int64], costs: npt.NDArray[np.float64],
                rng: np.random.Generator) -> list[int]:
    """Order candidates by predicted cost, one per distinct prediction first.

    A tree model predicts the same cost for every config in one leaf
    combination: on a plateau (configs that differ only in a loop order
    that does not change the objective) hundreds of candidates tie. Taking
    them in cost order would spend a whole plan on one plateau; instead the
    first pass takes one random config per distinct predicted cost, best
    first, and the remaining ones follow in cost order.

    Parameters
    ----------
    idx : ndarray of shape (n,), int64
        Candidate space indices.
    costs : ndarray of shape (n,), float64
        Their predicted costs.
    rng : numpy.random.Generator
        Breaks ties.

    Returns
    -------
    list of int
        All of ``idx``, in proposal order.
    """
    perm = rng.permutation(idx.size)
    idx, costs = idx[perm], costs[perm]
    order = np.argsort(costs, kind="stable")
    _, first = np.unique(costs[order], return_index=True)
    lead = np.zeros(order.size, dtype=bool)
    lead[first] = True
    out: list[int] = idx[np.concatenate([order[lead], order[~lead]])].tolist()
    return out


class TopK:
    """The ``k`` distinct space indices with the lowest predicted cost, excluding some."""

    def __init__(self, k: int, exclude: set[int]) -> None:
        self.k = k
        self.exclude = exclude
        self._heap: list[tuple[float, int, int]] = []  # max-heap via negated cost
        self._members: set[int] = set()
        self._tick = 0
        self._dirty = False

    def changed(self) -> bool:
        """Whether the top set changed since the last call."""
        out, self._dirty = self._dirty, False
        return out

    def push(self, idx: npt.NDArray[np.int64], costs: npt.NDArray[np.float64]) -> bool:
        """Offer candidate space indices; return whether the top set changed."""
        changed = False
        for cfg, c in zip(idx.tolist(), costs.tolist()):
            if cfg in self._members or cfg in self.exclude or math.isnan(c):
                continue
            self._tick += 1
            if len(self._heap) < self.k:
                heapq.heappush(self._heap, (-c, -self._tick, cfg))
            elif -c > self._heap[0][0]:
                _, _, old = heapq.heapreplace(self._heap, (-c, -self._tick, cfg))
                self._members.discard(old)
            else:
                continue
            self._members.add(cfg)
            changed = True
        self._dirty = self._dirty or changed
        return changed

    def best(self) -> list[int]:
        """The members, lowest predicted cost first (ties: earliest offered first)."""
        return [cfg for _, _, cfg in sorted(self._heap, key=lambda e: (-e[0], -e[1]))]
