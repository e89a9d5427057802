"""Time-model parameters fitted on a real GPU, shipped so tuning can use them without a GPU.

:data:`H200_MEASURED_L2` is the H200 profile with the L2 size the device
reports (``torch.cuda.get_device_properties(0).L2_cache_size`` = 62,914,560
bytes, 60 MiB, on the lent H200; the datasheet's 50 MB is what
:data:`~autotile.measure.H200` keeps). :data:`H200_FITTED_PARAMS` is the
"v5" calibration of ``docs/results/h200.md`` (the H200 validation,
history in git): the eleven parameters of eqs. 4-8, 5b and 5c fitted on 379
matmul configs at three shapes (``benchmarks/h200/h200_analyze.py --smem-only``,
``H200_FIT`` from ``H200_FIT_STARTS``), plus the power-cap term of eq. 9,
``power_cap_s_per_byte``,
fitted on the energy probe (``--power-only``). The values are copied from
``benchmarks/h200/data/h200_calibrated_params_v5.csv`` (a test checks they
match). Held out, the fit ranks matmul configs with Spearman 0.886 at
8192^3 (0.962 pooled over three shapes); tuning on it with the
model-guided searcher picked configs measured at a median 98.3% of cuBLAS
(``torch.matmul``) at 8192^3 fp16.

Use::

    from autotile.measure import H200_FITTED_PARAMS, H200_MEASURED_L2, KernelModelMeasurer
    m = KernelModelMeasurer("matmul", {"M": 8192, "N": 8192, "K": 8192},
                            hardware=H200_MEASURED_L2, params=H200_FITTED_PARAMS)

Measured with Triton 3.6.0, PyTorch 2.11 (CUDA 13.0) and driver 580.159.04 at
the card's 700 W power limit; other software or power limits move the
fitted efficiencies.
"""

from __future__ import annotations

import dataclasses

from autotile.measure.gpu._hardware import H200
from autotile.measure.gpu._time_model import GpuModelParams

__all__ = ["H200_MEASURED_L2", "H200_FITTED_PARAMS"]

#: The H200 SXM profile with the device-reported 60 MiB L2 (62,914,560 bytes).
H200_MEASURED_L2 = dataclasses.replace(H200, name="H200-SXM-141GB-60MiB", l2_bytes=62_914_560)

#: ``GpuModelParams`` fitted on the lent H200 (model "v5"; units as in
#: :class:`~autotile.measure.GpuModelParams`: seconds, bytes per second, s/B).
H200_FITTED_PARAMS = GpuModelParams(
    peak_efficiency=0.9999819554347966,
    tile_overhead_elems=36.91683757838046,
    k_overhead_elems=1.6371767348871662,
    warp_efficiency=((1, 0.3), (2, 0.5602689173461266), (4, 0.9996615527574408),
                     (8, 0.9999015869339972), (16, 0.95)),
    mma_fallback_efficiency=0.8108295924129763,
    bandwidth_efficiency=0.9000000002044602,
    overlap_decay=3.27281314460377e-13,
    reg_base_per_thread=40,
    count_writes=True,
    pipeline_latency_s=7.979129896216969e-07,
    sm_load_bytes_per_s=72474559680.91406,
    smem_bytes_per_s_per_sm=178937173285.87903,
    power_cap_s_per_byte=4.7560019149858295e-14,
    clock_exponent=0.0,  # fitted without eq. 5e (the wave-tail clock); keeps its numbers
    # fitted before A's address registers (eq. 2) and the partial-wave term (eq. 5') of
    # session 11 and B's address registers (eq. 2) of session 13; keeps its numbers
    scalar_a_extra_regs=0.0,
    tail_rate_exponent=0.0,
    scalar_b_extra_regs=0.0,
)
