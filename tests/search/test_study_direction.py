"""Studies minimise: a higher-is-better objective is refused, not silently minimised."""

from __future__ import annotations

import pytest

import autotile
from autotile.measure import KernelModelMeasurer, matmul_space
from autotile.search._compare import objective_direction


def test_tune_refuses_a_throughput_objective_and_names_cost_metrics() -> None:
    space = matmul_space(256, 256, 256)
    m = KernelModelMeasurer("matmul", {"M": 256, "N": 256, "K": 256})
    with pytest.raises(ValueError, match=r"objective='tflops' is higher-is-better.*'time_s'"):
        autotile.tune(space, m, objective="tflops", budget=2, seed=0, storage=None)
    with pytest.raises(ValueError, match="objective='l2_hit_rate' is higher-is-better"):
        autotile.create_study(space, m, objective="l2_hit_rate", storage=None)


@pytest.mark.parametrize(("metric", "direction"), [
    ("tflops", "maximize"), ("GFLOP/s", "maximize"), ("l2_hit_rate", "maximize"),
    ("time_s", "minimize"), ("hbm_bytes", "minimize"), ("misses", "minimize"),
    ("-GFLOP/s", "minimize"), ("-time_s", "maximize")])
def test_objective_direction_reads_the_name(metric: str, direction: str) -> None:
    assert objective_direction(metric) == direction
