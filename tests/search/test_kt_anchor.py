"""The Kernel Tuner anchor of ``benchmarks/kernel_tuner/bench_default_searcher.py``:
cache documents, Kernel Tuner's distinct-config accounting and the shared best-so-far
curves (no kernel_tuner needed), and one simulation-mode run (skipped without it)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from autotile.measure._kernel_tuner import load_kernel_tuner

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def _module(name: str, file: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "kernel_tuner" / file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def kt():
    return _module("_kt_sim", "_kt_sim.py")


@pytest.fixture(scope="module")
def bench():
    return _module("bench_default_searcher", "bench_default_searcher.py")


def test_kt_values_keeps_numbers_and_numbers_the_rest(kt):
    assert kt.kt_values([32, 64, 128]) == [32, 64, 128]
    assert kt.kt_values([0.5, 1]) == [0.5, 1]
    assert kt.kt_values([("io", "ii"), ("ii", "io")]) == [0, 1]
    assert kt.kt_values([True, False]) == [0, 1]


def test_cache_document_round_trips_the_tiny_cache(kt, tmp_path):
    rec = load_kernel_tuner(DATA / "kt_tiny.json")
    doc = kt.space_document(rec.space, rec.truth.column("time"), kernel_name="tiny")
    assert list(doc)[-1] == "cache"
    assert doc["tune_params_keys"] == ["block_size_x", "tile", "use_shmem", "unroll"]
    assert doc["tune_params"]["block_size_x"] == [32, 64, 128]
    assert len(doc["cache"]) == 14
    # the file's keys and times; its three failure markers (two strings, 1e20) -> FAILED
    assert doc["cache"]["32,2,1,1"]["time"] == 1.5
    assert doc["cache"]["128,1,1,1"] == {"block_size_x": 128, "tile": 1, "use_shmem": 1,
                                         "unroll": 1, "time": 1.05}
    for key in ("32,4,0,1", "64,2,1,1", "64,4,0,1"):
        assert doc["cache"][key]["time"] == kt.FAILED
    path = kt.write_cache(doc, tmp_path / "tiny.json")
    text = path.read_text()
    assert text.endswith("}}}")
    assert json.loads(text) == doc
    with pytest.raises(ValueError, match=r"\*\.json"):
        kt.write_cache(doc, tmp_path / "tiny.json.gz")


def test_cache_document_has_the_dataset_files_keys(kt):
    rec = load_kernel_tuner(DATA / "pnpoly__RTX_3090.json.gz")
    doc = kt.space_document(rec.space, rec.truth.column("time"))
    keys = {rec.key(rec.space.config_at(i)) for i in range(len(rec.space))}
    assert set(doc["cache"]) == keys
    assert len(keys) == 4092
    assert sum(r["time"] == kt.FAILED for r in doc["cache"].values()) == 318


def test_distinct_trajectory_counts_like_kernel_tuner(kt):
    class InvalidConfig(str):
        pass

    class RuntimeFailedConfig(str):
        pass

    names = ["a", "b"]
    results = [
        {"a": 1, "b": 2, "time": 3.0},
        {"a": 1, "b": 2, "time": 3.0},                                   # repeat: free
        {"a": 9, "b": 9, "__error__": InvalidConfig()},                  # outside: free
        {"a": 2, "b": 2, "time": "RuntimeFailedConfig", "__error__": RuntimeFailedConfig()},
        None,                                                            # budget spent
        {"a": 2, "b": 1, "time": 0.5},
    ]
    keys, vals = kt.distinct_trajectory(results, names)
    assert keys == ["1,2", "2,2", "2,1"]
    assert vals == [3.0, math.inf, 0.5]


def test_best_so_far_is_undefined_before_the_first_valid_value(bench):
    out = bench.best_so_far([np.inf, 4.0, np.nan, 2.0, 3.0], 7)
    np.testing.assert_array_equal(out, [np.nan, 4.0, 4.0, 2.0, 2.0, 2.0, 2.0])
    np.testing.assert_array_equal(bench.best_so_far([5.0, 1.0, 0.5], 2), [5.0, 1.0])
    assert np.isnan(bench.best_so_far([], 3)).all()
    curve, n = bench.distinct_curve([5.0, 5.0, 4.0, 1.0], ["x", "x", "y", "z"], 4)
    assert n == 3
    np.testing.assert_array_equal(curve, [5.0, 4.0, 1.0, 1.0])


def test_a_kernel_tuner_strategy_replays_the_table(kt, tmp_path):
    pytest.importorskip("kernel_tuner")
    rec = load_kernel_tuner(DATA / "pnpoly__RTX_3090.json.gz")
    values = rec.truth.column("time")
    path = kt.write_cache(kt.space_document(rec.space, values, kernel_name="cn_pnpoly"),
                          tmp_path / "pnpoly.json")
    by_key = {rec.key(rec.space.config_at(i)): float(values[i]) for i in range(len(rec.space))}
    runs = [kt.run_strategy(path, s, seed=3, budget=40)
            for s in ("random_sample", "random_sample", "genetic_algorithm", "diff_evo",
                      "diff_evo")]
    (k1, v1, cpu), (k2, v2, _), (k3, v3, _), (k4, v4, _), (k5, v5, _) = runs
    assert len(k1) == len(set(k1)) == 40
    assert (k1, v1) == (k2, v2)                     # seeded: the same run twice
    assert (k4, v4) == (k5, v5)                     # also diff_evo's Latin hypercube
    from scipy.stats import qmc
    assert qmc.LatinHypercube.__name__ == "LatinHypercube"   # restored after the run
    assert k3 != k1 and len(set(k3)) == len(k3) == 40
    for keys, vals in ((k1, v1), (k3, v3)):
        for k, v in zip(keys, vals):
            want = by_key[k]
            assert v == want if math.isfinite(want) else v == math.inf
    assert cpu > 0
