import dataclasses

import pytest

from autotile.errors import MeasureError
from autotile.measure.gpu._hardware import H100_SXM, H200, HARDWARE, HardwareProfile


def test_h100_constants_and_seed_tile_count():
    assert H100_SXM.n_sms == 132
    assert H100_SXM.l2_bytes // (128 * 64 * 2) == 3051  # seed §4.3: 3,051 tiles of 16 KB
    peak = 132 * 4096 * H100_SXM.clock_hz
    assert H100_SXM.fp16_tensor_flops_per_s == pytest.approx(peak, rel=1e-4)
    assert H100_SXM.smem_per_block_bytes == 232_448 and H100_SXM.max_regs_per_thread == 255
    assert H200.hbm_bytes_per_s / H100_SXM.hbm_bytes_per_s == pytest.approx(4.8 / 3.35)
    assert HARDWARE["h100_sxm"] is H100_SXM


@pytest.mark.parametrize("hw", [H100_SXM, H200])
def test_json_round_trip(hw):
    assert HardwareProfile.from_json(hw.to_json()) == hw
    assert hash(HardwareProfile.from_json(hw.to_json())) == hash(hw)


def test_user_profile_and_validation():
    mine = dataclasses.replace(H100_SXM, name="H100-50MiB", l2_bytes=50 * 2**20)
    assert mine.l2_bytes // 16384 == 3200
    with pytest.raises(MeasureError, match="n_sms must be a positive int, got n_sms=0"):
        dataclasses.replace(H100_SXM, n_sms=0)
    with pytest.raises(MeasureError, match="smem_per_block_bytes <= smem_per_sm_bytes"):
        dataclasses.replace(H100_SXM, smem_per_block_bytes=300 * 1024)
    with pytest.raises(MeasureError, match="hbm_bytes_per_s must be a positive finite"):
        dataclasses.replace(H100_SXM, hbm_bytes_per_s=float("nan"))
    with pytest.raises(MeasureError, match="missing"):
        HardwareProfile.from_json({"name": "x"})
    with pytest.raises(MeasureError, match="dtype must be one of"):
        H100_SXM.tensor_flops_per_s("int8")
