"""ScheduleMeasurer, the CPU cost model, the sweep and replay."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from autotile.errors import MeasureError
from autotile.measure import (
    CpuCostModel,
    GroundTruth,
    MeasureResult,
    ReplayMeasurer,
    ScheduleMeasurer,
    sweep,
)
from autotile.space import gemm_canonical_key, gemm_space

DEFAULT_ORDER = ("io", "ii", "jo", "ji", "ko", "ki")


@pytest.fixture(scope="module")
def space64():
    return gemm_space(64)


def test_default_schedule_metrics(space64):
    m = ScheduleMeasurer(space64)
    res = m.measure({"i_factor": 64, "j_factor": 64, "k_factor": 64, "order": DEFAULT_ORDER})
    assert res.status == "ok" and res.error is None
    assert res.metrics["misses"] == 266_760
    assert res.metrics["fa_misses"] == 16_896
    assert res.metrics["compulsory_misses"] == 768 == res.metrics["lines"]
    assert res.metrics["conflict_misses"] == 266_760 - 16_896
    assert res.metrics["capacity_misses"] == 16_896 - 768
    assert res.metrics["accesses"] == 3 * 64**3
    assert res.metrics["hits"] + res.metrics["misses"] == 3 * 64**3
    # est_cycles = iters + loop steps + (misses - compulsory) * 14 + compulsory * 200;
    # the six loops io(1) ii(64) jo(1) ji(64) ko(1) ki(64) simplify to i, j, k of 64
    steps = 64 + 64**2 + 64**3
    assert res.metrics["est_cycles"] == 64**3 + steps + (266_760 - 768) * 14 + 768 * 200
    assert res.wall_time_s > 0
    assert res.value("misses") == 266_760


def test_invalid_config_is_an_infeasible_result(space64):
    # as ReplayMeasurer and KernelModelMeasurer report it (it used to be "failed")
    m = ScheduleMeasurer(space64)
    res = m.measure({"i_factor": 5, "j_factor": 64, "k_factor": 64, "order": DEFAULT_ORDER})
    assert res.status == "infeasible"
    assert res.error == "i_factor=5 is not a divisor of 64"
    assert math.isinf(res.value("misses")) and res.metrics == {}
    res = m.measure({"i_factor": 4, "j_factor": 4, "k_factor": 4,
                     "order": ("io", "io", "jo", "ji", "ko", "ki")})
    assert res.status == "infeasible" and "permutation" in res.error
    res = m.measure({"i_factor": 4, "j_factor": 4, "k_factor": 4, "order": DEFAULT_ORDER,
                     "bogus": 1})
    assert res.status == "infeasible" and "bogus" in res.error
    res = m.measure(5)
    assert res.status == "infeasible"
    assert res.error == "config must be a mapping from knob name to value, got int 5"
    replay = ReplayMeasurer(gemm_space(4), GroundTruth(
        {"misses": np.zeros(len(gemm_space(4)))}, np.zeros(len(gemm_space(4)), np.int8), {}))
    bad = {"i_factor": 3, "j_factor": 1, "k_factor": 1, "order": DEFAULT_ORDER}
    assert (ScheduleMeasurer(gemm_space(4)).measure(bad).status == replay.measure(bad).status
            == "infeasible")


def test_error_while_measuring_a_valid_config_is_still_failed(space64):
    class Broken(ScheduleMeasurer):
        def nest(self, config):
            raise RuntimeError("lowering broke")

    res = Broken(space64).measure({"i_factor": 4, "j_factor": 4, "k_factor": 4,
                                   "order": DEFAULT_ORDER})
    assert res.status == "failed" and res.error == "RuntimeError: lowering broke"


@pytest.mark.parametrize("space, kind", [([1, 2], "list [1, 2]"), ("gemm", "str 'gemm'"),
                                         (None, "NoneType None")])
def test_schedule_measurer_needs_a_space(space, kind):
    # used to construct, then fail in measure() with "list indices must be integers ..."
    with pytest.raises(TypeError, match=rf"space must be an autotile.space.Space \(e.g. "
                                        rf"gemm_space\(64\)\), got {re.escape(kind)}$"):
        ScheduleMeasurer(space)


def test_schedule_measurer_needs_a_gemm_space():
    from autotile.space import Choice, Space

    with pytest.raises(ValueError, match=r"GEMM schedule space .* got knobs \['a'\]"):
        ScheduleMeasurer(Space([Choice("a", (1, 2))]))


def test_unknown_objective(space64):
    with pytest.raises(ValueError, match="objective"):
        ScheduleMeasurer(space64, objective="speed")


def test_cost_model_validation():
    with pytest.raises(ValueError, match="l2_cycles=-1"):
        CpuCostModel(l2_cycles=-1)
    assert CpuCostModel.n_loop_steps((4, 16)) == 4 + 64


def test_measure_result_json_roundtrip():
    r = MeasureResult("a=1", "ok", {"misses": 3.0}, 0.5)
    assert MeasureResult.from_json(r.to_json()) == r
    assert hash(r) == hash(MeasureResult.from_json(r.to_json()))
    with pytest.raises(ValueError, match="status"):
        MeasureResult("a=1", "great")


def test_measure_turns_a_non_result_into_a_failed_result():
    from autotile.measure import Measurer

    class FloatMeasurer(Measurer):
        metrics = ("time",)
        objective = "time"

        def _measure(self, config):
            return 1.5

    res = FloatMeasurer().measure({"a": 1})
    assert res.status == "failed" and res.metrics == {}
    assert res.error == "FloatMeasurer._measure must return a MeasureResult, got float 1.5"
    assert res.config == "{'a': 1}" and res.wall_time_s >= 0.0


class CountingMeasurer(ScheduleMeasurer):
    calls = 0

    def _measure(self, config):
        CountingMeasurer.calls += 1
        return super()._measure(config)


def test_sweep_dedup_resume_and_replay(tmp_path, monkeypatch):
    space = gemm_space(4)
    key = lambda c: gemm_canonical_key(c, 4)  # noqa: E731
    m = CountingMeasurer(space)
    out = tmp_path / "truth.npz"
    CountingMeasurer.calls = 0
    truth = sweep(space, m, out, key=key, n_jobs=1, chunk_size=7, progress=False, limit=3000)
    assert not (tmp_path / "truth.npz.parts").exists()  # removed once the table is written
    n_unique = truth.meta["n_unique"]
    assert CountingMeasurer.calls == n_unique < 3000
    # every config's row equals a direct measurement (dedup is exact), on a sample
    rng = np.random.default_rng(0)
    for i in rng.choice(3000, 40, replace=False):
        direct = m.measure(space.config_at(int(i)))
        for metric in ("misses", "fa_misses", "est_cycles"):
            assert truth.column(metric)[i] == direct.metrics[metric]
    # the same sweep again returns the finished table without measuring
    CountingMeasurer.calls = 0
    same = sweep(space, m, out, key=key, n_jobs=1, chunk_size=7, progress=False, limit=3000)
    assert CountingMeasurer.calls == 0
    np.testing.assert_array_equal(same.column("misses"), truth.column("misses"))
    # resume: a sweep killed while writing the table keeps its chunks; delete two chunks,
    # only they are re-measured
    out2 = tmp_path / "killed.npz"

    def killed(self, path):
        raise KeyboardInterrupt

    with monkeypatch.context() as mp:
        mp.setattr(GroundTruth, "save", killed)
        with pytest.raises(KeyboardInterrupt):
            sweep(space, m, out2, key=key, n_jobs=1, chunk_size=7, progress=False, limit=3000)
    assert not out2.exists()
    parts = tmp_path / "killed.npz.parts"
    chunks = sorted(parts.glob("chunk_*.npz"))
    assert len(chunks) == -(-n_unique // 7)
    chunks[0].unlink()
    chunks[3].unlink()
    # a different sweep into the same parts folder is refused
    with pytest.raises(MeasureError, match=r"killed.npz.parts holds chunks of a different "
                                           r"sweep: chunk_size 7 \(then\) vs 5 \(now\)"):
        sweep(space, m, out2, key=key, n_jobs=1, chunk_size=5, progress=False, limit=3000)
    CountingMeasurer.calls = 0
    again = sweep(space, m, out2, key=key, n_jobs=1, chunk_size=7, progress=False, limit=3000)
    assert CountingMeasurer.calls == 14
    assert not parts.exists()
    np.testing.assert_array_equal(again.column("misses"), truth.column("misses"))
    loaded = GroundTruth.load(out2)
    np.testing.assert_array_equal(loaded.column("est_cycles"), truth.column("est_cycles"))


def test_replay_agrees_with_live_measurement(tmp_path):
    space = gemm_space(4)
    truth = sweep(space, ScheduleMeasurer(space), tmp_path / "t.npz",
                  key=lambda c: gemm_canonical_key(c, 4), n_jobs=1, progress=False)
    live = ScheduleMeasurer(space)
    replay = ReplayMeasurer(space, truth, objective="misses")
    rng = np.random.default_rng(1)
    for cfg in space.sample(rng, 30):
        assert replay.measure(cfg).metrics == live.measure(cfg).metrics
    bad = replay.measure({"i_factor": 3, "j_factor": 1, "k_factor": 1, "order": DEFAULT_ORDER})
    assert bad.status == "infeasible" and "i_factor=3" in bad.error
    assert replay.optimum() == truth.column("misses").min()
    with pytest.raises(ValueError, match=r"made for another space: knob 'i_factor' is "
                                         r"\{'kind': 'Divisors', 'name': 'i_factor', 'n': 4\}"):
        ReplayMeasurer(gemm_space(8), truth)


def test_shipped_table_agrees_with_live_measurement(space64):
    from autotile.measure import gemm_ground_truth

    truth = gemm_ground_truth(64)
    assert len(truth) == 246_960 and (truth.status == 0).all()
    replay = ReplayMeasurer(space64, truth, objective="misses")
    live = ScheduleMeasurer(space64)
    for cfg in space64.sample(np.random.default_rng(2026), 25):
        assert replay.measure(cfg).metrics == live.measure(cfg).metrics
    misses = truth.column("misses")
    # the optimum and its multiplicity: uniform random sampling without replacement
    # needs (N + 1) / (k + 1) trials in expectation to hit one of k optimal configs
    k = int((misses == misses.min()).sum())
    assert (misses.min(), k) == (1536, 1262)
    assert round((246_960 + 1) / (k + 1)) == 196
    with pytest.raises(ValueError, match="n=32"):
        gemm_ground_truth(32)
