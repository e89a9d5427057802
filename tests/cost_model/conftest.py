from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from joblib import Parallel, delayed

from autotile.cost_model import LoopFeaturizer
from autotile.space import Config, Space, gemm_space

N_TRAIN = 1000
N_TEST = 800
SEED = 0


@dataclass(frozen=True)
class GemmData:
    space: Space
    configs: list[Config]
    X: np.ndarray  # (N_TRAIN + N_TEST, 88)
    misses: np.ndarray
    est_cycles: np.ndarray


def _measure_chunk(indices: np.ndarray) -> list[tuple[float, float]]:
    from autotile.measure import ScheduleMeasurer

    space = gemm_space(64)
    m = ScheduleMeasurer(space)
    out = []
    for i in indices:
        r = m.measure(space.config_at(int(i))).metrics
        out.append((float(r["misses"]), float(r["est_cycles"])))
    return out


@pytest.fixture(scope="session")
def gemm_data() -> GemmData:
    """N_TRAIN + N_TEST distinct random configs of gemm_space(64), measured exactly."""
    space = gemm_space(64)
    idx = np.random.default_rng(SEED).choice(len(space), N_TRAIN + N_TEST, replace=False)
    parts = Parallel(n_jobs=2)(delayed(_measure_chunk)(c) for c in np.array_split(idx, 2))
    y = np.array([r for part in parts for r in part])
    configs = [space.config_at(int(i)) for i in idx]
    X = LoopFeaturizer(space).transform(configs)
    return GemmData(space, configs, X, y[:, 0], y[:, 1])
