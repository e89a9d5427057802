"""``@autotune`` of the library matmul on a problem smaller than every block."""

import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import MeasureError
from autotile.kernels import matmul, matmul_kernel
from autotile.measure import matmul_space
from autotile.tuner import Config, KernelModelScorer, autotune


def grid(meta):
    return (tl.cdiv(meta["M"], meta["BLOCK_M"]) * tl.cdiv(meta["N"], meta["BLOCK_N"]),)


def _cfg(bm, bn, group_m=4, num_warps=4):
    return Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 32, "GROUP_M": group_m,
                   "PID_ORDER": "grouped"}, num_warps=num_warps, num_stages=3)


def _launch(k, a, b, c):
    m, kk = a.shape
    n = b.shape[1]
    k[grid](a, b, c, m, n, kk, kk, 1, n, 1, n, 1)


def test_oversize_blocks_are_scored_and_launched_on_a_1x1x1_matmul():
    k = autotune(configs=[_cfg(32, 32), _cfg(64, 64)], key=["M", "N", "K"],
                 disk_cache=False)(matmul_kernel)
    a = np.array([[3.0]], np.float16)
    b = np.array([[-2.5]], np.float16)
    c = np.zeros((1, 1), np.float16)
    _launch(k, a, b, c)
    assert c[0, 0] == np.float16(-7.5)
    np.testing.assert_array_equal(c, matmul(a, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32))
    assert [r.status for r in k.history] == ["ok", "ok"]
    # the model charges the whole padded tile: the 64x64 block moves and computes more
    t32, t64 = (r.time_s for r in k.history)
    assert t32 < t64
    assert k.history[0].metrics["hbm_bytes"] < k.history[1].metrics["hbm_bytes"]
    assert k.best_config == _cfg(32, 32)


def test_padding_rules_stay_in_the_search_space():
    space = matmul_space(1, 1, 1)
    assert {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1, "num_warps": 2,
            "num_stages": 2} not in space
    assert max(c["BLOCK_M"] for c in space) == 16


def test_other_constraints_still_skip_a_config_and_show_group_m_as_written():
    # 4 warps need >= 512 outputs; a 16x16 block has 256 (warps_fit_tile)
    k = autotune(configs=[_cfg(16, 16, group_m=4), _cfg(16, 16, group_m=8)],
                 key=["M", "N", "K"], disk_cache=False)(matmul_kernel)
    a = np.ones((1, 1), np.float16)
    with pytest.raises(MeasureError, match="warps_fit_tile") as exc:
        _launch(k, a, a, np.zeros((1, 1), np.float16))
    msg = str(exc.value)
    assert "block_m_le_padded_m" not in msg
    assert "violated by BLOCK_M=16, BLOCK_N=16, BLOCK_K=32, GROUP_M=4, num_warps=4" in msg
    assert "violated by BLOCK_M=16, BLOCK_N=16, BLOCK_K=32, GROUP_M=8, num_warps=4" in msg
    assert "GROUP_M=1," not in msg
    assert "GROUP_M=4 was scored as the equivalent GROUP_M=1" in msg
    assert "cdiv(M, BLOCK_M)=1" in msg


def test_scorer_message_unchanged_when_group_m_is_not_canonicalised():
    scorer = KernelModelScorer("matmul")
    res = scorer(_cfg(16, 16, group_m=1), {"a_ptr": np.ones((1, 1), np.float16),
                                           "M": 1, "N": 1, "K": 1})
    assert res.status == "infeasible"
    assert res.error == ("constraint 'warps_fit_tile' is violated by BLOCK_M=16, BLOCK_N=16, "
                         "BLOCK_K=32, GROUP_M=1, num_warps=4, num_stages=3")
