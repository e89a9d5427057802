"""``reset_to_zero``/``restore_value`` must name array (pointer) arguments of the kernel."""

import numpy as np
import pytest

from autotile.errors import InvalidConfigError
from autotile.tuner import Config, autotune
from tests.tuner._kernels import grid_1d, inc_kernel, sum_kernel, time_by_block

N = 96
CFGS = [Config({"BLOCK": b}) for b in (16, 32)]


@pytest.mark.parametrize("what", ["reset_to_zero", "restore_value"])
def test_a_scalar_argument_is_refused_at_launch_naming_it_and_its_kind(what):
    k = autotune(CFGS, key=["n"], scorer=time_by_block, **{what: ["n"]})(sum_kernel)
    out = np.full(1, 5.0, np.float32)
    with pytest.raises(InvalidConfigError) as info:
        k[grid_1d](np.ones(N, np.float32), out, N)
    assert str(info.value) == (
        f"{what} must name array (pointer) arguments of kernel 'sum_kernel', got 'n' = 96, "
        f"a scalar argument (int)")
    assert out[0] == 5.0 and k.n_tuned == 0  # refused before anything ran


@pytest.mark.parametrize("what", ["reset_to_zero", "restore_value"])
def test_a_constexpr_parameter_is_refused_at_decoration(what):
    with pytest.raises(InvalidConfigError, match=(
            f"{what} must name array \\(pointer\\) arguments of kernel 'inc_kernel', got "
            f"'BLOCK', a tl.constexpr parameter")):
        autotune(CFGS, key=["n"], scorer=time_by_block, **{what: ["BLOCK"]})(inc_kernel)


def test_an_unknown_name_is_still_refused():
    with pytest.raises(InvalidConfigError, match="reset_to_zero must name kernel parameters"):
        autotune(CFGS, key=["n"], scorer=time_by_block, reset_to_zero=["y"])(sum_kernel)


def test_array_arguments_are_accepted():
    k = autotune(CFGS, key=["n"], scorer=time_by_block, reset_to_zero=["out_ptr"],
                 restore_value=["x_ptr"])(sum_kernel)
    x, out = np.ones(N, np.float32), np.full(1, 5.0, np.float32)
    k[grid_1d](x, out, N)
    assert out[0] == N and [r.status for r in k.history] == ["ok", "ok"]

