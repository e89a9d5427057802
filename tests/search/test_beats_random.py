"""Model-guided and evolutionary search against random on a swept GEMM schedule space.

gemm_space(8) (46,080 schedules) under a 256-byte, 2-way, 32-byte-line
cache: 16 schedules reach the minimum of 296 misses, so uniform random
sampling without replacement needs (N + 1) / (K + 1) = 2711 trials in
expectation to hit one.
"""

from __future__ import annotations

import numpy as np
import pytest

from autotile.search import tune

BUDGET = 400
SEEDS = range(5)


def _trials_to_optimum(space, measurer, name, seed, **kw):
    st = tune(space, measurer, name, budget=BUDGET, seed=seed, storage=":memory:",
              progress=False, searcher_kwargs=kw or None)
    best = st.best_so_far()
    hit = np.flatnonzero(best <= measurer.optimum())
    return float(hit[0] + 1) if hit.size else np.inf


@pytest.fixture(scope="module")
def random_expected(gemm8):
    _, truth, m = gemm8
    v = truth.column("misses")
    k = int((v == np.nanmin(v)).sum())
    assert (len(v), k, np.nanmin(v)) == (46080, 16, 296.0)
    return (len(v) + 1) / (k + 1)


@pytest.mark.parametrize("name", ["model", "evolutionary"])
def test_beats_random_at_equal_budget(gemm8, random_expected, name):
    space, _, m = gemm8
    ours = [_trials_to_optimum(space, m, name, s) for s in SEEDS]
    rand = [_trials_to_optimum(space, m, "random", s) for s in SEEDS]
    med = float(np.median(ours))
    # Measured: model [225, 259, 259, 78, 26], evolutionary [265, 233, 49, 273, 324];
    # random reaches the optimum within 400 trials for at most one seed.
    assert med <= 300
    assert med * 5 < random_expected
    assert sum(np.isfinite(rand)) <= 1 < sum(np.isfinite(ours))
