"""autotile.search: searchers, tuning studies and convergence reports.

Searchers are Optuna samplers over an autotile :class:`~autotile.space.Space`
(:class:`SpaceSearcher` documents the contract): :class:`GridSearcher`,
:class:`RandomSearcher`, :class:`ModelGuidedSearcher` (AutoTVM-style cost
model + simulated annealing), :class:`EvolutionarySearcher`
(Ansor-style) and :class:`BanditSearcher` (OpenTuner's AUC bandit over
model-guided, Parzen and random proposals; warm-started from earlier
tables or studies through a :class:`Prior`). :func:`make_searcher` builds
them, or Optuna's own samplers, by name. An objective gets its config with :func:`suggest_config`.
:func:`create_study` and :func:`tune` run a resumable :class:`Study`
(Optuna storage, parallel measurement, progress bar); any number of workers
share one study through :func:`open_storage` (heartbeats, an exact budget,
no config measured twice). :func:`compare` runs
searchers for a budget x several seeds and reports best-so-far curves,
trials to the optimum and Kernel Tuner's methodology score P(t).
"""

from __future__ import annotations

from autotile.search._bandit import BanditSearcher
from autotile.search._base import History, SpaceSearcher
from autotile.search._compare import DEFAULT_SEARCHERS, compare, objective_direction
from autotile.search._compare_sampled import compare_sampled
from autotile.search._comparison import ComparisonResult
from autotile.search._create import DEFAULT_STORAGE, create_study, tune
from autotile.search._evolutionary import EvolutionarySearcher
from autotile.search._factory import DEFAULT_SEARCHER, SEARCHERS, encoding_for, make_searcher
from autotile.search._flash_study import flash_attention_study
from autotile.search._grid import GridSearcher
from autotile.search._methodology import (
    expected_best_random,
    expected_trials_to_hit,
    methodology_budget,
    methodology_score,
    random_trials_quantile,
    trials_to_target,
)
from autotile.search._model_guided import ModelGuidedSearcher
from autotile.search._params import (
    ENCODINGS,
    config_from_params,
    knob_distribution,
    space_distributions,
    suggest_config,
)
from autotile.search._prior import Prior
from autotile.search._random import RandomSearcher
from autotile.search._storage import open_storage
from autotile.search._study import Study, TrialRecord

__all__ = [
    "compare_sampled",
    "flash_attention_study",
    "SpaceSearcher",
    "History",
    "GridSearcher",
    "RandomSearcher",
    "ModelGuidedSearcher",
    "EvolutionarySearcher",
    "BanditSearcher",
    "Prior",
    "DEFAULT_SEARCHER",
    "make_searcher",
    "SEARCHERS",
    "encoding_for",
    "suggest_config",
    "knob_distribution",
    "space_distributions",
    "config_from_params",
    "ENCODINGS",
    "Study",
    "TrialRecord",
    "create_study",
    "tune",
    "DEFAULT_STORAGE",
    "open_storage",
    "compare",
    "objective_direction",
    "ComparisonResult",
    "DEFAULT_SEARCHERS",
    "expected_best_random",
    "expected_trials_to_hit",
    "methodology_budget",
    "methodology_score",
    "random_trials_quantile",
    "trials_to_target",
]
