from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

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


@pytest.fixture(scope="session")
def gemm_data() -> GemmData:
    """N_TRAIN + N_TEST distinct random configs of gemm_space(64), measured exactly.

    The values come from the shipped ground-truth table (exact simulation of every
    schedule; tests/measure/test_measurer.py checks it against live measurement).
    """
    from autotile.measure import gemm_ground_truth

    space = gemm_space(64)
    truth = gemm_ground_truth(64)
    idx = np.random.default_rng(SEED).choice(len(space), N_TRAIN + N_TEST, replace=False)
    configs = [space.config_at(int(i)) for i in idx]
    X = LoopFeaturizer(space).transform(configs)
    return GemmData(space, configs, X, truth.column("misses")[idx],
                    truth.column("est_cycles")[idx])
