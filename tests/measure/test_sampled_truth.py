"""``SampledTruth``: a uniform sample's exact values, and the best known value."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autotile.errors import CorruptFileError, MeasureError
from autotile.measure import SampledTruth


def test_round_trip_and_best_known(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = SampledTruth(np.array([5, 1, 9]), {"misses": np.array([30.0, np.nan, 12.0])},
                     np.array([0, 1, 0], np.int8), {"seed": 0, "n": 8})
    t.save(tmp_path / "s.npz")
    u = SampledTruth.load(tmp_path / "s.npz")
    np.testing.assert_array_equal(u.index, [5, 1, 9])
    np.testing.assert_array_equal(u.ok_values("misses"), [30.0, 12.0])
    assert u.meta == {"seed": 0, "n": 8}
    assert u.best_known("misses") == 12.0
    assert u.best_known("misses", [11.0, math.inf]) == 11.0
    assert u.best_known("misses", direction="maximize") == 30.0
    assert len(u) == 3


def test_with_visited_keeps_random_rows_apart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = SampledTruth(np.array([5, 1, 9]), {"misses": np.array([30.0, np.nan, 12.0])},
                     np.array([0, 1, 0], np.int8), {"seed": 0})
    u = t.with_visited([9, 4, 4, 7, 2], {"misses": np.array([12.0, 3.0, 3.0, np.nan, 20.0]),
                                         "other": np.zeros(5)},
                       np.array([0, 0, 0, 1, 0], np.int8))
    np.testing.assert_array_equal(u.index, [5, 1, 9, 4, 7, 2])   # new ones, once, in order
    np.testing.assert_array_equal(u.source, [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(u.status, [0, 1, 0, 0, 1, 0])
    assert (u.n_random, u.meta["n_random"], u.meta["n_visited"]) == (3, 3, 3)
    np.testing.assert_array_equal(u.random_values("misses"), [30.0, 12.0])
    np.testing.assert_array_equal(u.ok_values("misses"), [30.0, 12.0, 3.0, 20.0])
    assert u.best_known("misses") == 3.0 and t.best_known("misses") == 12.0
    assert u.label() == "best known (sampled, 6 configs), not a proven optimum"
    u.save(tmp_path / "v.npz")
    w = SampledTruth.load(tmp_path / "v.npz")
    np.testing.assert_array_equal(w.source, u.source)
    np.testing.assert_array_equal(w.column("misses"), u.column("misses"))
    with pytest.raises(MeasureError, match="missing"):
        t.with_visited([2], {"x": np.zeros(1)}, np.zeros(1, np.int8))


def test_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(MeasureError, match="one value per row"):
        SampledTruth(np.arange(3), {"m": np.zeros(2)}, np.zeros(3, np.int8), {})
    (tmp_path / "bad.npz").write_bytes(b"nope")
    with pytest.raises(CorruptFileError, match="not a readable sampled table"):
        SampledTruth.load(tmp_path / "bad.npz")
    with pytest.raises(KeyError, match="unknown metric"):
        SampledTruth(np.arange(1), {"m": np.zeros(1)}, np.zeros(1, np.int8), {}).ok_values("x")


def test_load_errors_name_the_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    def write(name, **arrays):  # type: ignore[no-untyped-def]
        p = tmp_path / name
        np.savez(p, **{"status": np.zeros(3, np.int8), "meta": np.array("{}"),
                       "index": np.arange(3), "m_misses": np.zeros(3), **arrays})
        return p

    short = write("short.npz", m_misses=np.zeros(2))  # a column one row short
    with pytest.raises(MeasureError) as err:
        SampledTruth.load(short)
    assert str(err.value) == (f"{short}: a sampled table needs one value per row in every "
                              "column (index has shape (3,)), got {'misses': (2,)}")
    floats = write("floats.npz", index=np.array([0.5, 1.0, 2.0]))
    with pytest.raises(CorruptFileError) as err2:
        SampledTruth.load(floats)
    assert str(err2.value) == (f"{str(floats)!r} is not a readable sampled table (its 'index' "
                               "column must hold integers, got dtype float64)")
    src = write("source.npz", source=np.array(["a", "b", "c"]))
    with pytest.raises(CorruptFileError, match=r"source\.npz.*'source' column must hold "
                                               r"integers, got dtype <U1"):
        SampledTruth.load(src)
    meta = write("meta.npz", meta=np.array("[1, 2]"))
    with pytest.raises(CorruptFileError, match=r"meta\.npz.*'meta' must be a JSON object, "
                                               r"got list"):
        SampledTruth.load(meta)
    no_index = tmp_path / "no_index.npz"
    np.savez(no_index, status=np.zeros(1, np.int8), meta=np.array("{}"))
    with pytest.raises(CorruptFileError) as err3:
        SampledTruth.load(no_index)
    assert str(err3.value) == (f"{str(no_index)!r} is not a readable sampled table (it lacks "
                               "the array(s) ['index']; it holds ['meta', 'status'])")
    with pytest.raises(FileNotFoundError, match="absent\\.npz"):
        SampledTruth.load(tmp_path / "absent.npz")


def test_shipped_n1024_sample() -> None:
    from autotile.measure import gemm_sampled_truth

    t = gemm_sampled_truth(1024)
    assert t.n_random == 20_000 and t.meta["seed"] == 0 and t.meta["n_configs"] == 958_320
    np.testing.assert_array_equal(  # the uniform rows first, in the seeded order
        t.index[:20_000], np.random.default_rng(0).permutation(958_320)[:20_000])
    np.testing.assert_array_equal(t.source[:20_000], 0)
    np.testing.assert_array_equal(t.source[20_000:], 1)
    assert len(t) == 23_838 and t.meta["n_visited"] == 3_838    # + the searchers' visits
    assert np.unique(t.index).shape == (len(t),)
    assert t.best_known("misses") == 35_972_096.0
    assert float(t.random_values("misses").min()) == 35_972_096.0
    assert t.label() == "best known (sampled, 23,838 configs), not a proven optimum"
    from autotile.measure import ScheduleMeasurer
    from autotile.space import gemm_space

    space = gemm_space(1024)
    m = ScheduleMeasurer(space)
    for r in (0, 1, 19_999, len(t) - 1):  # rows match live measurement
        res = m.measure(space.config_at(int(t.index[r])))
        assert res.metrics["misses"] == t.values["misses"][r]
        assert res.metrics["conflict_misses"] == t.values["conflict_misses"][r]
