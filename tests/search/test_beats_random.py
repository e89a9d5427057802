"""Model-guided and evolutionary search against random on the shipped GEMM table.

gemm_space(64) (246,960 schedules) replayed from ``gemm_ground_truth(64)``:
1,262 schedules reach the minimum of 1,536 misses, so uniform random
sampling without replacement needs (N + 1) / (K + 1) = 195.5 trials in
expectation to hit one, and 136 at the median.
"""

from __future__ import annotations

import numpy as np
import pytest

from autotile.measure import ReplayMeasurer, gemm_ground_truth
from autotile.search import random_trials_quantile, tune
from autotile.space import gemm_space

BUDGET = 150
SEEDS = range(5)


@pytest.fixture(scope="module")
def gemm64():
    space, truth = gemm_space(64), gemm_ground_truth(64)
    return space, truth, ReplayMeasurer(space, truth, objective="misses")


def _trials_to_optimum(space, measurer, name, seed):
    st = tune(space, measurer, name, budget=BUDGET, seed=seed, storage=":memory:",
              progress=False)
    hit = np.flatnonzero(st.best_so_far() <= measurer.optimum())
    return float(hit[0] + 1) if hit.size else np.inf


def test_random_baseline(gemm64):
    _, truth, _ = gemm64
    v = truth.column("misses")
    k = int((v == np.nanmin(v)).sum())
    assert (len(v), k, np.nanmin(v)) == (246960, 1262, 1536.0)
    assert random_trials_quantile(len(v), k, 0.5) == 136


@pytest.mark.parametrize("name", ["model", "evolutionary"])
def test_beats_random_median_trials_to_optimum(gemm64, name):
    space, _, m = gemm64
    ours = [_trials_to_optimum(space, m, name, s) for s in SEEDS]
    # Measured (seeds 0-4, 500-trial runs): model [9, 17, 134, 20, 5] (before the
    # tabu restarts and patience 24: [9, 17, 345, 20, 5]), evolutionary
    # [28, 54, 28, 63, 19]; random's median is 136.
    assert np.median(ours) * 2.5 <= 136
    assert all(np.isfinite(ours)), ours
