from __future__ import annotations

import numpy as np
import pytest

from autotile import te
from autotile.cost_model import (
    KnobFeaturizer,
    LoopFeaturizer,
    featurizer_for,
    is_gemm_space,
    loop_feature_names,
    loop_nest_features,
)
from autotile.errors import InvalidConfigError, ScheduleError
from autotile.space import Choice, IntRange, Space, gemm_schedule, gemm_space


def test_gemm_feature_shape_and_names() -> None:
    space = gemm_space(64)
    feat = LoopFeaturizer(space).fit()
    assert feat.method_ == "analytic"
    # 9 knob columns + 6 levels * (1 extent + 3 buffers * 4) + n_loop_steps
    assert feat.n_features_out_ == 9 + 6 * 13 + 1 == 88
    names = feat.feature_names_
    assert names[:9] == space.feature_names
    assert names[9] == "L0.extent:log2"
    assert names[10:14] == ["L0.A.stride_bytes:log2p1", "L0.A.touched_bytes:log2",
                            "L0.A.touched_lines:log2", "L0.A.reuse:log2"]
    assert names[-1] == "n_loop_steps:log2"
    assert len(set(names)) == len(names)
    X = feat.transform(space.sample(0, 7))
    assert X.shape == (7, 88) and X.dtype == np.float64
    assert list(feat.get_feature_names_out()) == names


def test_known_values_row_major_ijk() -> None:
    # i_factor=64 etc.: outer loops have extent 1, inner loops are i, j, k (extent 64)
    space = gemm_space(64)
    cfg = space.validate({"i_factor": 64, "j_factor": 64, "k_factor": 64,
                          "order": ("io", "jo", "ko", "ii", "ji", "ki")})
    feat = LoopFeaturizer(space).fit()
    row = dict(zip(feat.feature_names_, feat.transform([cfg])[0]))
    assert row["L0.extent:log2"] == 0.0 and row["L3.extent:log2"] == 6.0
    assert row["L0.A.stride_bytes:log2p1"] == 0.0  # extent-1 loop
    assert row["L5.A.stride_bytes:log2p1"] == np.log2(1 + 4)  # k: A[i, k] contiguous
    assert row["L5.B.stride_bytes:log2p1"] == np.log2(1 + 256)  # k: B[k, j] row stride
    assert row["L5.C.stride_bytes:log2p1"] == 0.0  # C does not depend on k
    assert row["L5.A.touched_bytes:log2"] == np.log2(64 * 4)  # one row of A
    assert row["L5.A.touched_lines:log2"] == np.log2(4)  # 256 B = 4 lines
    assert row["L5.B.touched_lines:log2"] == np.log2(64)  # a column: one line per row
    assert row["L5.C.reuse:log2"] == 6.0  # C[i, j] reused over 64 k
    assert row["L3.A.touched_bytes:log2"] == np.log2(64 * 64 * 4)
    assert row["L0.C.reuse:log2"] == 6.0
    steps = 1 + 1 + 1 + 64 + 64**2 + 64**3
    assert row["n_loop_steps:log2"] == pytest.approx(np.log2(steps))


@pytest.mark.parametrize("kwargs", [{}, {"pack_b": True, "pad": True}])
def test_analytic_equals_lowered(kwargs: dict[str, bool]) -> None:
    space = gemm_space(64, **kwargs)
    configs = space.sample(np.random.default_rng(1), 40)
    fast = LoopFeaturizer(space, method="analytic").transform(configs)
    slow = LoopFeaturizer(space, method="lower").transform(configs)
    np.testing.assert_array_equal(fast, slow)
    # and the lowered path equals loop_nest_features of te.lower directly
    nest = te.lower(gemm_schedule(configs[0], 64)[0])
    np.testing.assert_array_equal(slow[0, space.n_features:], loop_nest_features(nest))


def test_analytic_equals_lowered_small_n_and_line_size() -> None:
    space = gemm_space(12)
    configs = space.sample(np.random.default_rng(2), 30)
    fast = LoopFeaturizer(space, line_bytes=32).transform(configs)
    slow = LoopFeaturizer(space, line_bytes=32, method="lower").transform(configs)
    np.testing.assert_array_equal(fast, slow)


def test_rows_depend_on_order_not_batch() -> None:
    space = gemm_space(64)
    configs = space.sample(3, 20)
    feat = LoopFeaturizer(space)
    X = feat.transform(configs)
    np.testing.assert_array_equal(feat.transform(configs[::-1]), X[::-1])
    np.testing.assert_array_equal(feat.transform(configs[5]), X[5:6])
    feat.clear_cache()
    np.testing.assert_array_equal(feat.transform(configs), X)
    assert feat.transform([]).shape == (0, 88)


def test_plain_mapping_is_validated() -> None:
    space = gemm_space(64)
    feat = LoopFeaturizer(space)
    good = {"i_factor": 8, "j_factor": 8, "k_factor": 8,
            "order": ("io", "ii", "jo", "ji", "ko", "ki")}
    assert feat.transform(good).shape == (1, 88)
    with pytest.raises(InvalidConfigError):
        feat.transform({**good, "i_factor": 3})


def test_knob_featurizer_and_featurizer_for() -> None:
    other = Space([Choice("block", (16, 32, 64)), IntRange("warps", 1, 4)])
    assert not is_gemm_space(other)
    feat = featurizer_for(other)
    assert isinstance(feat, KnobFeaturizer) and not isinstance(feat, LoopFeaturizer)
    X = feat.transform(other.sample(0, 5))
    assert X.shape == (5, other.n_features)
    assert feat.feature_names_ == other.feature_names
    gemm = gemm_space(16)
    assert isinstance(featurizer_for(gemm), LoopFeaturizer)
    assert featurizer_for(gemm).n_features_out_ == 88
    with pytest.raises(InvalidConfigError):
        featurizer_for("gemm")  # type: ignore[arg-type]


def test_loop_featurizer_errors() -> None:
    other = Space([Choice("block", (16, 32))])
    with pytest.raises(ValueError, match="schedule_fn"):
        LoopFeaturizer(other).fit()
    with pytest.raises(ValueError, match="method"):
        LoopFeaturizer(gemm_space(8), method="fast").fit()
    with pytest.raises(ValueError, match="line_bytes"):
        LoopFeaturizer(gemm_space(8), line_bytes=0).fit()


def test_custom_schedule_fn_uses_lowering() -> None:
    # a 1-D space whose schedule is a tiled GEMM of size 8: goes through te.lower
    space = Space([Choice("tile", (1, 2, 4, 8))])

    def schedule(cfg):  # type: ignore[no-untyped-def]
        return gemm_schedule({"i_factor": cfg["tile"], "j_factor": cfg["tile"], "k_factor": 1,
                              "order": ("io", "jo", "ko", "ii", "ji", "ki")}, 8)

    feat = featurizer_for(space, schedule_fn=schedule)
    assert isinstance(feat, LoopFeaturizer) and feat.method_ == "lower"
    X = feat.transform(list(space))
    assert X.shape == (4, space.n_features + 6 * 13 + 1)
    assert np.all(np.isfinite(X))


def test_loop_nest_features_padding_and_errors(gemm_nest_4) -> None:  # type: ignore[no-untyped-def]
    nest = gemm_nest_4
    f = loop_nest_features(nest, max_depth=6)
    names = loop_feature_names([b.name for b in nest.buffers], 6)
    assert f.shape == (len(names),)
    assert np.all(f[4 * 13:6 * 13] == 0.0)  # padded levels
    with pytest.raises(ScheduleError, match="max_depth"):
        loop_nest_features(nest, max_depth=3)
    with pytest.raises(ValueError, match="line_bytes"):
        loop_nest_features(nest, line_bytes=0)


@pytest.fixture
def gemm_nest_4() -> te.LoopNest:
    n = 16
    A = te.placeholder((n, n), dtype="float32", name="A")
    B = te.placeholder((n, n), dtype="float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    (kk,) = s[C].op.reduce_axis
    ko, ki = s[C].split(kk, factor=4)
    s[C].reorder(i, ko, j, ki)
    return te.lower(s)
