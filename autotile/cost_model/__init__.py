"""autotile.cost_model: features of configs and learned models that rank them.

Data flow: a featurizer turns configs into ``X`` (:class:`LoopFeaturizer`
for GEMM schedule spaces: knob encoding plus AutoTVM-style loop features;
:class:`KnobFeaturizer` for any space; :func:`featurizer_for` picks), a
cost model is fitted on measured costs ``y`` (lower is better) and
``predict`` orders unmeasured configs (:class:`XGBCostModel` with a ranking
or regression objective, :class:`RandomForestCostModel`), and
:func:`spearman`, :func:`top_k_recall` and :func:`evaluate` score it on
held-out configs.

Examples
--------
>>> import numpy as np
>>> from autotile.space import gemm_space
>>> space = gemm_space(64)
>>> feat = featurizer_for(space)
>>> X = feat.transform(space.sample(0, 100))
>>> X.shape
(100, 88)
"""

from __future__ import annotations

from autotile.cost_model._base import BaseCostModel
from autotile.cost_model._featurizer import (
    KnobFeaturizer,
    LoopFeaturizer,
    featurizer_for,
    is_gemm_space,
)
from autotile.cost_model._forest import RandomForestCostModel
from autotile.cost_model._loop_features import loop_feature_names, loop_nest_features
from autotile.cost_model._metrics import evaluate, spearman, top_k_recall
from autotile.cost_model._xgb import XGBCostModel

__all__ = [
    "KnobFeaturizer",
    "LoopFeaturizer",
    "featurizer_for",
    "is_gemm_space",
    "loop_nest_features",
    "loop_feature_names",
    "BaseCostModel",
    "XGBCostModel",
    "RandomForestCostModel",
    "spearman",
    "top_k_recall",
    "evaluate",
]
