"""The ``@autotune`` disk cache is keyed on the whole hardware profile and the model params."""

from __future__ import annotations

import dataclasses

import numpy as np

import autotile.lang as tl
from autotile.kernels import matmul_kernel
from autotile.measure import H200, GpuModelParams
from autotile.tuner import Config, KernelModelScorer, autotune

M, N, K = 128, 96, 64
GOOD = [Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 1}, num_warps=2,
               num_stages=3),
        Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2}, num_warps=2,
               num_stages=2)]


def _launch(kernel):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    kernel[lambda m: (tl.cdiv(m["M"], m["BLOCK_M"]) * tl.cdiv(m["N"], m["BLOCK_N"]),)](
        a, b, c, M, N, K, K, 1, N, 1, N, 1, PID_ORDER="grouped")
    return kernel.cache_source


def test_a_profile_changed_under_the_same_name_is_tuned_again(tmp_path):
    small_l2 = dataclasses.replace(H200, l2_bytes=1 << 20)
    assert small_l2.name == H200.name
    modified = autotune(GOOD, key=["M", "N", "K"], cache_dir=tmp_path,
                        hardware=small_l2)(matmul_kernel)
    assert _launch(modified) == "tuned"
    stock = autotune(GOOD, key=["M", "N", "K"], cache_dir=tmp_path, hardware=H200)(matmul_kernel)
    assert _launch(stock) == "tuned"
    assert len(list(tmp_path.glob("matmul_kernel-*.json"))) == 2
    # the same profile (an equal copy) still hits the disk cache
    same = autotune(GOOD, key=["M", "N", "K"], cache_dir=tmp_path,
                    hardware=dataclasses.replace(H200))(matmul_kernel)
    assert _launch(same) == "disk"


def test_scorer_params_are_part_of_the_key(tmp_path):
    def tuned(params: GpuModelParams) -> str | None:
        scorer = KernelModelScorer("matmul", H200, params=params)
        return _launch(autotune(GOOD, key=["M", "N", "K"], cache_dir=tmp_path,
                                scorer=scorer)(matmul_kernel))

    assert tuned(GpuModelParams()) == "tuned"
    assert tuned(GpuModelParams(power_cap_s_per_byte=1e-9)) == "tuned"
    assert tuned(GpuModelParams(power_cap_s_per_byte=1e-9)) == "disk"
    scorer = KernelModelScorer("matmul", H200, params=GpuModelParams())
    other = KernelModelScorer("matmul", dataclasses.replace(H200, l2_bytes=1 << 20),
                              params=GpuModelParams())
    assert scorer.cache_tag != other.cache_tag
