"""Every schedule of the 246,960-config GEMM space computes A @ B (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile import te
from autotile.space import gemm_schedule, gemm_space

SPACE = gemm_space(64)
SPACE_PACKED = gemm_space(64, pack_b=True, pad=True)
RNG = np.random.default_rng(0)
A = RNG.standard_normal((64, 64))
B = RNG.standard_normal((64, 64))
REF = A @ B


def _rel_err(cfg) -> float:
    sched, _ = gemm_schedule(cfg, n=64)
    c = te.build(sched)(A, B)
    assert c.dtype == np.float64
    return float(np.abs(c - REF).max() / np.abs(REF).max())


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(0, len(SPACE) - 1))
def test_any_schedule_matches_numpy(index):
    assert len(SPACE) == 246_960
    assert _rel_err(SPACE.config_at(index)) <= 1e-12


@settings(max_examples=20, deadline=None, derandomize=True)
@given(st.integers(0, len(SPACE_PACKED) - 1))
def test_any_schedule_with_layouts_matches_numpy(index):
    assert _rel_err(SPACE_PACKED.config_at(index)) <= 1e-12
