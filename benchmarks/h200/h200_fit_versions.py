"""Recipes of every H200 calibration version (v2-v7), kept out of the library.

The library ships one parameter set (``autotile.measure.H200_FITTED_PARAMS``,
"v5") and its recipe (``autotile.measure.gpu._calibrate.H200_FIT`` and
``H200_FIT_STARTS``). The other versions' recipes are history: they are kept
here so that ``benchmarks/h200_analyze.py`` and the tests that reproduce the
reported figures can rebuild them.
"""

from __future__ import annotations

import sys
from pathlib import Path

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotile.measure.gpu._calibrate import DEFAULT_FIT, H200_FIT, H200_FIT_STARTS  # noqa: E402

__all__ = ["DEFAULT_FIT", "PIPELINE_FIT", "PIPELINE_STARTS", "SMEM_FIT", "SMEM_STARTS",
           "POWER_FIT", "POWER_STARTS", "SMEM_OVERLAP_NORM_H200"]

#: :data:`DEFAULT_FIT` plus the two parameters of the software-pipeline term
#: (eq. 5b, ``docs/gpu_model.md`` §3.5).
PIPELINE_FIT = (*DEFAULT_FIT, "pipeline_latency_s", "sm_load_bytes_per_s")

#: ``pipeline_latency_s`` up to 5 us (~10,000 cycles at 1.98 GHz; an unloaded L2
#: hit is a few hundred cycles: Luo et al. 2024, arXiv:2402.13499; Chips and
#: Cheese, "Nvidia's H100: Funny L2, and Tons of Bandwidth", 2023).
#: ``sm_load_bytes_per_s`` 20-500 GB/s per SM: 2.6-66 TB/s over 132 SMs,
#: around the ~5.5-10 TB/s L2 bandwidth those sources measure on the H100.
#: Starting points of ``(pipeline_latency_s, sm_load_bytes_per_s)`` for
#: :func:`fit_gpu_model` with :data:`PIPELINE_FIT`: eq. 5b is a ``max`` of
#: terms, so the cost has several basins and one start from the defaults
#: (term off) stays in the one without the term.
PIPELINE_STARTS = tuple({"pipeline_latency_s": lat, "sm_load_bytes_per_s": bw}
                        for lat in (0.25e-6, 0.5e-6, 1e-6, 2e-6) for bw in (50e9, 100e9, 200e9))

#: :data:`PIPELINE_FIT` plus ``smem_bytes_per_s_per_sm`` (eq. 5c, the SM's
#: shared-memory port), bounded by 50 GB/s and the 128 B/clk port [7] of
#: ``docs/gpu_model.md`` at the H200's 1.98 GHz maximum SM clock (253 GB/s).
SMEM_FIT = H200_FIT
assert SMEM_FIT == (*PIPELINE_FIT, "smem_bytes_per_s_per_sm")

#: :data:`PIPELINE_STARTS` crossed with ``smem_bytes_per_s_per_sm`` of 150, 200
#: and 234 GB/s (the last is 128 B/clk at 1.83 GHz).
SMEM_STARTS = H200_FIT_STARTS
assert SMEM_STARTS == tuple({**st, "smem_bytes_per_s_per_sm": b}
                            for st in PIPELINE_STARTS for b in (150e9, 200e9, 234e9))

#: :data:`SMEM_FIT` plus ``power_cap_s_per_byte`` (eq. 9, the power line under the
#: board's power cap), fitted jointly on timings alone.
POWER_FIT = (*SMEM_FIT, "power_cap_s_per_byte")

#: :data:`SMEM_STARTS` with ``power_cap_s_per_byte`` = 5e-14 s/B (about what the
#: H200 energy probe measured, ``docs/results/h200.md``).
POWER_STARTS = tuple({**st, "power_cap_s_per_byte": 5e-14} for st in SMEM_STARTS)

#: The norm ``q`` of eq. 5c' (:func:`~autotile.measure.gpu._time_model.smooth_max`) that
#: the H200 calibration uses: of ``inf, 8, 4, 3, 2, 1.5, 1`` (:data:`POWER_FIT` refitted
#: at each on the 70% split), 2 gives the lowest training cost
#: (``benchmarks/h200_analyze.py --power-only``). Held fixed, not fitted: ``q`` and
#: ``smem_bytes_per_s_per_sm`` trade off against each other.
SMEM_OVERLAP_NORM_H200 = 2.0
