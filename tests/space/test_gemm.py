from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from autotile.errors import InvalidConfigError
from autotile.space import (
    Choice,
    Divisors,
    Permutation,
    gemm_canonical_key,
    gemm_schedule,
    gemm_space,
)

te = pytest.importorskip("autotile.te")

ORDER = ("io", "jo", "ko", "ki", "ii", "ji")


def test_template_knobs_and_sizes():
    s = gemm_space()
    assert s.knobs == (
        Divisors("i_factor", 64),
        Divisors("j_factor", 64),
        Divisors("k_factor", 64),
        Permutation("order", ("io", "ii", "jo", "ji", "ko", "ki")),
    )
    assert s.size == 246_960
    assert gemm_space(1024).size == 958_320
    packed = gemm_space(pack_b=True)
    assert packed["pack_tile"] == Choice("pack_tile", (0, 1, 2, 4, 8, 16, 32, 64))
    assert packed.size == 246_960 * 8
    padded = gemm_space(pad=True)
    assert padded["row_width"].values == (64, 65, 68, 80)
    assert gemm_space(pack_b=True, pad=True).size == 246_960 * 8 * 4
    with pytest.raises(InvalidConfigError, match="n must be a positive int, got n=0"):
        gemm_space(0)


def test_dropped_only_key_count_matches_formula():
    s = gemm_space()
    formula = sum(math.comb(3, t) * 2**t * 5 ** (3 - t) * math.factorial(6 - t) for t in range(4))
    assert formula == 109_488
    keys = {gemm_canonical_key(c, 64, merge=False) for c in s}
    assert len(keys) == 109_488
    merged = {gemm_canonical_key(c, 64) for c in s}
    assert len(merged) == 59_376


def test_canonical_key_examples():
    cfg = {
        "i_factor": 1,
        "j_factor": 64,
        "k_factor": 4,
        "order": ("io", "ii", "jo", "ji", "ko", "ki"),
    }
    assert gemm_canonical_key(cfg, 64, merge=False) == (
        ("io", 64, 1),
        ("ji", 64, 1),
        ("ko", 16, 4),
        ("ki", 4, 1),
    )
    # ko directly followed by ki merges too
    assert gemm_canonical_key(cfg, 64) == (("i", 64, 1), ("j", 64, 1), ("k", 64, 1))
    kfirst = {**cfg, "order": ("io", "ii", "jo", "ji", "ki", "ko")}
    assert gemm_canonical_key(kfirst, 64) == (("i", 64, 1), ("j", 64, 1), ("k", 4, 1), ("k", 16, 4))
    # io directly followed by ii merges into the unsplit loop
    tiled = {
        "i_factor": 8,
        "j_factor": 64,
        "k_factor": 64,
        "order": ("io", "ii", "jo", "ji", "ko", "ki"),
    }
    assert gemm_canonical_key(tiled, 64) == (("i", 64, 1), ("j", 64, 1), ("k", 64, 1))
    # but ii before io does not
    swapped = {**tiled, "order": ("ii", "io", "jo", "ji", "ko", "ki")}
    assert gemm_canonical_key(swapped, 64) == (("i", 8, 1), ("i", 8, 8), ("j", 64, 1), ("k", 64, 1))
    extra = {**cfg, "pack_tile": 16}
    assert gemm_canonical_key(extra, 64)[-1] == ("pack_tile", 16)


def test_equal_keys_give_equal_traces():
    n = 8
    s = gemm_space(n)
    groups = defaultdict(list)
    for c in s.sample(0, n=3000):
        groups[gemm_canonical_key(c, n)].append(c)
    multi = [g for g in groups.values() if len(g) > 1]
    assert len(multi) > 20
    checked = 0
    for g in multi[:25]:
        traces = [te.lower(gemm_schedule(c, n)[0]).byte_trace() for c in g[:3]]
        for t in traces[1:]:
            np.testing.assert_array_equal(t, traces[0])
            checked += 1
    assert checked >= 25
    # different dropped-only keys in one merged group: e.g. factor 1 vs factor n
    a = {"i_factor": 1, "j_factor": 2, "k_factor": 8, "order": ("io", "ii", "jo", "ji", "ko", "ki")}
    b = {**a, "i_factor": 8, "k_factor": 1}
    assert gemm_canonical_key(a, n) == gemm_canonical_key(b, n)
    assert gemm_canonical_key(a, n, merge=False) != gemm_canonical_key(b, n, merge=False)
    ta = te.lower(gemm_schedule(a, n)[0]).byte_trace()
    tb = te.lower(gemm_schedule(b, n)[0]).byte_trace()
    np.testing.assert_array_equal(ta, tb)


def test_schedule_lowers_in_config_order_and_computes_gemm():
    cfg = {"i_factor": 16, "j_factor": 16, "k_factor": 4, "order": ORDER}
    s, (A, B, C) = gemm_schedule(cfg)
    nest = te.lower(s)
    assert [(loop.name, loop.extent) for loop in nest.loops] == [
        ("i_o", 4),
        ("j_o", 4),
        ("k_o", 16),
        ("k_i", 4),
        ("i_i", 16),
        ("j_i", 16),
    ]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    small = {
        "i_factor": 4,
        "j_factor": 2,
        "k_factor": 8,
        "order": ("ki", "jo", "ii", "io", "ko", "ji"),
    }
    fn = te.build(gemm_schedule(small, 16)[0])
    np.testing.assert_allclose(fn(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_schedule_layouts():
    cfg = {
        "i_factor": 16,
        "j_factor": 16,
        "k_factor": 4,
        "order": ORDER,
        "pack_tile": 16,
        "row_width": 68,
    }
    s, _ = gemm_schedule(cfg)
    assert isinstance(s.layouts["B"], te.PackedLayout) and s.layouts["B"].tile == 16
    assert isinstance(s.layouts["A"], te.PaddedLayout) and s.layouts["A"].width == 68
    s2, _ = gemm_schedule({**cfg, "pack_tile": 0})
    assert s2.layouts["B"].width == 68
    s3, _ = gemm_schedule({**cfg, "pack_tile": 0, "row_width": 64})
    assert all(isinstance(layout, te.RowMajor) for layout in s3.layouts.values())
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    c16 = {
        "i_factor": 4,
        "j_factor": 4,
        "k_factor": 2,
        "order": ORDER,
        "pack_tile": 4,
        "row_width": 20,
    }
    np.testing.assert_allclose(
        te.build(gemm_schedule(c16, 16)[0])(a, b), a @ b, rtol=1e-4, atol=1e-4
    )


def test_schedule_rejects_bad_config():
    with pytest.raises(InvalidConfigError, match="i_factor=5 is not a divisor of 64"):
        gemm_schedule({"i_factor": 5, "j_factor": 16, "k_factor": 4, "order": ORDER})
    with pytest.raises(InvalidConfigError, match="pack_tile=3 is not one of"):
        gemm_schedule(
            {"i_factor": 4, "j_factor": 16, "k_factor": 4, "order": ORDER, "pack_tile": 3}
        )
