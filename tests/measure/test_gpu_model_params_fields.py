"""Every field of GpuModelParams is checked by type and range; errors name the field."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autotile.errors import MeasureError
from autotile.measure import H200_FITTED_PARAMS, GpuModelParams


@pytest.mark.parametrize(("field", "value", "message"), [
    ("tile_overhead_elems", math.nan, "tile_overhead_elems must be finite and >= 0"),
    ("tile_overhead_elems", math.inf, "tile_overhead_elems must be finite and >= 0"),
    ("k_overhead_elems", math.nan, "k_overhead_elems must be finite and >= 0"),
    ("pipeline_latency_s", math.nan, "pipeline_latency_s must be finite and >= 0"),
    ("pipeline_latency_s", math.inf, "pipeline_latency_s must be finite and >= 0"),
    ("power_cap_s_per_byte", True, "power_cap_s_per_byte must be a real number, got bool"),
    ("peak_efficiency", "0.5", "peak_efficiency must be a real number, got str"),
    ("overlap_decay", math.nan, "overlap_decay must be a finite number"),
    ("bandwidth_efficiency", None, "bandwidth_efficiency must be a real number, got NoneType"),
    ("sm_load_bytes_per_s", math.nan, "sm_load_bytes_per_s must be a number"),
    ("smem_bytes_per_s_per_sm", "fast", "smem_bytes_per_s_per_sm must be a real number"),
    ("scalar_elems_per_s_per_sm", 0.0, "scalar_elems_per_s_per_sm must be > 0"),
    ("unpipelined_latency_s", -1e-6, "unpipelined_latency_s must be >= 0"),
    ("clock_exponent", math.nan, "clock_exponent must be finite and >= 0"),
    ("max_clock_boost", 0.5, "max_clock_boost must be >= 1"),
    ("reg_base_per_thread", math.nan, "reg_base_per_thread must be an int >= 0"),
    ("reg_base_per_thread", 40.5, "reg_base_per_thread must be an int >= 0"),
    ("reg_base_per_thread", -1, "reg_base_per_thread must be an int >= 0"),
    ("reg_base_per_thread", True, "reg_base_per_thread must be an int >= 0"),
    ("count_writes", "no", r"count_writes must be a bool, got str count_writes='no'"),
    ("count_writes", 1, "count_writes must be a bool"),
    ("warp_efficiency", (), "warp_efficiency must list at least one"),
    ("warp_efficiency", ((3, 0.5),), "powers of two >= 1.*num_warps=3"),
    ("warp_efficiency", ((-4, 0.5),), "powers of two >= 1.*num_warps=-4"),
    ("warp_efficiency", ((4, 0.5), (4, 0.9)), "each warp count once.*num_warps=4"),
    ("warp_efficiency", ((4, 1.5),), r"warp_efficiency\[4\] must be in \(0, 1\]"),
    ("warp_efficiency", ((4, "x"),), r"warp_efficiency\[4\] must be a real number"),
    ("warp_efficiency", ((4,),), r"\(num_warps, efficiency\) pairs"),
    ("warp_efficiency", "4:0.5", r"non-empty sequence of \(num_warps, efficiency\)"),
])
def test_a_bad_field_is_refused_by_name(field, value, message):
    with pytest.raises(MeasureError, match=message):
        GpuModelParams(**{field: value})


def test_documented_values_still_work_and_are_normalised():
    p = GpuModelParams(sm_load_bytes_per_s=math.inf, smem_bytes_per_s_per_sm=math.inf,
                       tile_overhead_elems=np.float32(2), reg_base_per_thread=np.int64(32),
                       count_writes=np.bool_(False), warp_efficiency=[[2, 1], (8, 0.5)],
                       power_cap_s_per_byte=0)
    assert p.sm_load_bytes_per_s == math.inf
    assert type(p.tile_overhead_elems) is float and p.tile_overhead_elems == 2.0
    assert type(p.reg_base_per_thread) is int and p.reg_base_per_thread == 32
    assert p.count_writes is False
    assert p.warp_efficiency == ((2, 1.0), (8, 0.5))
    assert p.warp_factor(4) == 1.0 and p.warp_factor(1) == 1.0
    assert GpuModelParams(**H200_FITTED_PARAMS.to_json()) == H200_FITTED_PARAMS
    assert hash(GpuModelParams()) == hash(GpuModelParams())
