"""``@autotune`` argument checks from the new-user test: no candidates, negative
tolerances and a ``cache_dir`` that is a file."""

from __future__ import annotations

import numpy as np
import pytest

from autotile.errors import InvalidConfigError
from autotile.kernels import matmul_kernel
from autotile.tuner import Config, autotune
from tests.tuner._kernels import double_kernel, grid_1d, time_by_block

CONFIGS = [Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 32)]


@pytest.mark.parametrize("configs", [None, []])
def test_autotune_without_configs_or_space_raises_at_decoration(configs):
    with pytest.raises(InvalidConfigError, match="needs candidates.*configs=.*space="):
        autotune(configs, key=["M"])(matmul_kernel)


def test_autotune_with_only_key_raises_at_decoration():
    with pytest.raises(InvalidConfigError, match="matmul_kernel"):
        autotune(key=["M"])(matmul_kernel)


@pytest.mark.parametrize("name", ["rtol", "atol"])
@pytest.mark.parametrize("value", [-1, -1e-9, float("nan"), float("inf"), "0.1", True])
def test_autotune_rejects_bad_tolerances(name, value):
    with pytest.raises(InvalidConfigError, match=rf"{name}.*{name}="):
        autotune(CONFIGS, key=["n"], scorer=time_by_block, disk_cache=False,
                 **{name: value})(double_kernel)


def test_autotune_accepts_zero_and_numpy_tolerances():
    k = autotune(CONFIGS, key=["n"], scorer=time_by_block, disk_cache=False, rtol=0,
                 atol=np.float32(1e-3))(double_kernel)
    assert (k.rtol, k.atol) == (0.0, pytest.approx(1e-3))
    x = np.arange(40, dtype=np.float32)
    out = np.zeros_like(x)
    k[grid_1d](x, out, 40)
    np.testing.assert_array_equal(out, 2 * x)


def test_autotune_cache_dir_that_is_a_file_raises(tmp_path):
    f = tmp_path / "not_a_dir"
    f.write_text("x")
    with pytest.raises(InvalidConfigError, match=r"cache_dir must be a directory.*not_a_dir"):
        autotune(CONFIGS, key=["n"], scorer=time_by_block, cache_dir=f)(double_kernel)
    # with the disk cache off, the path is never used
    autotune(CONFIGS, key=["n"], scorer=time_by_block, cache_dir=f,
             disk_cache=False)(double_kernel)


def test_autotune_unwritable_cache_warns_with_the_path(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    k = autotune(CONFIGS, key=["n"], scorer=time_by_block, cache_dir=f / "sub")(double_kernel)
    x = np.arange(40, dtype=np.float32)
    out = np.zeros_like(x)
    with pytest.warns(RuntimeWarning, match=r"could not write the disk cache.*file"):
        k[grid_1d](x, out, 40)
    np.testing.assert_array_equal(out, 2 * x)
    assert k.cache_source == "tuned"
