"""Ground-truth tables: columns of one length, finite "ok" objectives only."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from autotile.errors import MeasureError
from autotile.measure import GroundTruth, Measurer, MeasureResult, RecordedSpace, sweep
from autotile.space import Divisors, Space


def test_columns_of_different_lengths_are_refused():
    with pytest.raises(MeasureError) as info:
        GroundTruth({"time": np.ones(3), "flops": np.ones(2)}, np.zeros(3, np.int8), {})
    assert str(info.value) == ("a ground-truth table needs one value per config in every column "
                               "(status has 3 rows), got column 'flops' with 2")
    with pytest.raises(MeasureError, match=r"\(status has 4 rows\), got column 'time' with 3"):
        GroundTruth({"time": np.ones(3)}, np.zeros(4, np.int8), {})
    with pytest.raises(MeasureError, match=r"got column 'time' of shape \(3, 1\)"):
        GroundTruth({"time": np.ones((3, 1))}, np.zeros(3, np.int8), {})


def test_an_npz_table_with_ragged_columns_names_the_file(tmp_path):
    path = tmp_path / "ragged.npz"
    np.savez(path, status=np.zeros(5, np.int8), m_time=np.ones(5), m_flops=np.ones(4),
             meta=np.array(json.dumps({})))
    with pytest.raises(MeasureError) as info:
        GroundTruth.load(path)
    assert str(info.value) == (
        f"{path}: a ground-truth table needs one value per config in every column (status has "
        f"5 rows), got column 'flops' with 4")


def test_a_recorded_space_must_have_one_row_per_config():
    space = Space([Divisors("a", 4)])  # 3 configs
    truth = GroundTruth({"time": np.ones(4)}, np.zeros(4, np.int8), {})
    with pytest.raises(MeasureError, match="RecordedSpace needs one table row per config of its "
                                           "space: the space has 3 configs, the table 4 rows"):
        RecordedSpace(space, truth, {})


class _Timed(Measurer):
    metrics = ("time_s", "aux")
    objective = "time_s"

    def __init__(self, space, bad):
        self.space = space
        self.bad = bad

    def _measure(self, config):
        a = config["a"]
        t = self.bad if a == 2 else float(a)
        return MeasureResult(str(config), "ok", {"time_s": t, "aux": 1.0})


@pytest.mark.parametrize("bad", [-math.inf, math.inf, math.nan])
def test_sweep_records_a_non_finite_objective_as_failed(tmp_path, bad):
    space = Space([Divisors("a", 8)])  # 1, 2, 4, 8
    truth = sweep(space, _Timed(space, bad), tmp_path / "t.npz", n_jobs=1, progress=False)
    assert truth.status.tolist() == [0, 1, 0, 0]
    assert np.isnan(truth.column("time_s")[1])
    assert truth.optimum("time_s") == 1.0
    assert truth.result(1).status == "failed"


def test_optimum_ignores_non_finite_ok_values():
    truth = GroundTruth({"t": np.array([3.0, -np.inf, np.nan, 2.0, np.inf])},
                        np.array([0, 0, 1, 0, 0], np.int8), {})
    assert truth.optimum("t") == 2.0
