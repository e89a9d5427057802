"""``@autotune(hardware=...)`` and KernelModelScorer refuse a hardware that is not a profile."""

from __future__ import annotations

import pytest

from autotile.kernels import matmul_kernel
from autotile.measure import GpuModelParams
from autotile.tuner import Config, KernelModelScorer, autotune

GOOD = [Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 1}, num_warps=2,
               num_stages=3)]


@pytest.mark.parametrize("hardware", ["h200", GpuModelParams(), None])
def test_autotune_hardware_must_be_a_profile(hardware):
    with pytest.raises(TypeError, match=r"hardware must be a HardwareProfile.*got "
                       + type(hardware).__name__):
        autotune(GOOD, key=["M", "N", "K"], hardware=hardware)(matmul_kernel)
    with pytest.raises(TypeError, match="KernelModelScorer: hardware must be a HardwareProfile"):
        KernelModelScorer("matmul", hardware)
