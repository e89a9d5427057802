"""Bad input from the second new-user test: ``ReplayMeasurer`` with its
arguments swapped or a file path, NumPy dtypes for a kernel's dtype, and Kernel
Tuner files whose objective or parameter values are wrong."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autotile.errors import InvalidConfigError, MeasureError
from autotile.measure import GroundTruth, KernelModelMeasurer, ReplayMeasurer, load_kernel_tuner
from autotile.space import Choice, Space


def _table():
    space = Space([Choice("a", (1, 2, 3))])
    return space, GroundTruth({"cost": np.array([3.0, 1.0, 2.0])}, np.zeros(3, np.int8), {})


def test_replay_with_swapped_arguments_says_so():
    space, truth = _table()
    with pytest.raises(TypeError) as exc:
        ReplayMeasurer(truth, space)
    assert str(exc.value) == ("ReplayMeasurer: truth must be a GroundTruth table, got Space "
                              "(the arguments are (space, truth): swapped?)")


def test_replay_with_a_path_says_to_load_it():
    space, _ = _table()
    with pytest.raises(TypeError) as exc:
        ReplayMeasurer(space, "gemm8.npz")
    assert str(exc.value) == ("ReplayMeasurer: truth must be a GroundTruth table, got str; "
                              "load a file with GroundTruth.load('gemm8.npz')")


def test_replay_without_a_space_raises():
    _, truth = _table()
    with pytest.raises(TypeError, match="^ReplayMeasurer: space must be an autotile.space.Space"
                                        ", got NoneType$"):
        ReplayMeasurer(None, truth)


def test_replay_still_scores():
    space, truth = _table()
    m = ReplayMeasurer(space, truth, "cost")
    assert m.measure(space.config_at(1)).metrics["cost"] == 1.0


@pytest.mark.parametrize("dtype", [np.float16, np.dtype("float16"), "float16"])
def test_kernel_dtype_accepts_numpy_dtypes(dtype):
    m = KernelModelMeasurer("matmul", {"M": 64, "N": 64, "K": 64}, dtype=dtype)
    assert m.settings()["dtype"] == "float16"


@pytest.mark.parametrize("dtype, shown", [("float17", "'float17'"), (np.int8, "'int8'"),
                                          (object(), "<object object")])
def test_kernel_dtype_not_accepted_names_it(dtype, shown):
    with pytest.raises(InvalidConfigError,
                       match=r"^kernel 'matmul' takes dtype in \('float16', 'bfloat16', "
                             r"'float32'\), got dtype=" + shown):
        KernelModelMeasurer("matmul", {"M": 64, "N": 64, "K": 64}, dtype=dtype)


KT_TINY = Path(__file__).resolve().parents[1] / "data" / "kt_tiny.json"


def _kt_variant(tmp_path, change):
    data = json.loads(KT_TINY.read_text())
    change(data)
    path = tmp_path / "kt.json"
    path.write_text(json.dumps(data))
    return path


def test_kernel_tuner_objective_no_record_has_is_named(tmp_path):
    path = _kt_variant(tmp_path, lambda d: d.update(objective="nope"))
    with pytest.raises(MeasureError) as exc:
        load_kernel_tuner(path)
    assert str(exc.value) == (f"{path}: the file's objective 'nope' is not a field of any "
                              f"cache record (fields: ['GFLOP/s', 'compile_time', 'time'])")


def test_kernel_tuner_repeated_parameter_value_names_file_and_parameter(tmp_path):
    def dup(d):
        d["tune_params"]["block_size_x"].append(d["tune_params"]["block_size_x"][0])
    path = _kt_variant(tmp_path, dup)
    with pytest.raises(MeasureError) as exc:
        load_kernel_tuner(path)
    assert str(exc.value) == (f"{path}: its parameter values do not form a space: Choice "
                              f"'block_size_x' values must be distinct (also as text), got "
                              f"values=(32, 64, 128, 32)")


def test_schedule_measurer_cache_must_be_a_cache_config():
    from autotile.measure import ScheduleMeasurer
    from autotile.space import gemm_space

    with pytest.raises(TypeError) as exc:
        ScheduleMeasurer(gemm_space(8), cache=8192)
    assert str(exc.value) == ("cache must be a CacheConfig (e.g. CacheConfig(size_bytes=8192, "
                              "ways=4, line_bytes=64)) or None, got int 8192")
    with pytest.raises(TypeError, match="^cost must be a CpuCostModel or None, got str 'fast'$"):
        ScheduleMeasurer(gemm_space(8), cost="fast")


@pytest.mark.parametrize("kwargs, message", [
    ({"limit": 0}, "limit must be None or an int >= 1, got limit=0"),
    ({"limit": -1}, "limit must be None or an int >= 1, got limit=-1"),
    ({"limit": 2.5}, "limit must be None or an int >= 1, got limit=2.5"),
    ({"limit": 3, "n_jobs": 0}, "n_jobs must be a non-zero int (-1: all cores), got n_jobs=0"),
    ({"limit": 3, "chunk_size": 0}, "chunk_size must be an int >= 1, got chunk_size=0"),
])
def test_sweep_arguments_are_checked_before_any_file(tmp_path, kwargs, message):
    from autotile.measure import ScheduleMeasurer, sweep
    from autotile.space import gemm_space

    space = gemm_space(4)
    with pytest.raises(ValueError) as exc:
        sweep(space, ScheduleMeasurer(space), tmp_path / "t.npz", progress=False, **kwargs)
    assert str(exc.value) == f"sweep(): {message}"
    assert list(tmp_path.iterdir()) == []
