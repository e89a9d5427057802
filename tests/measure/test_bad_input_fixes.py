"""Bad input from the second new-user test: ``ReplayMeasurer`` with its
arguments swapped or a file path, and NumPy dtypes for a kernel's dtype."""

from __future__ import annotations

import numpy as np
import pytest

from autotile.errors import InvalidConfigError
from autotile.measure import GroundTruth, KernelModelMeasurer, ReplayMeasurer
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
