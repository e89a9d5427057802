"""Ground-truth tables know their space; corrupt tables give one clear error (issue 14)."""

from __future__ import annotations

import hashlib
import json
import zipfile

import numpy as np
import pytest

from autotile.errors import CorruptFileError
from autotile.measure import GroundTruth, ReplayMeasurer, ScheduleMeasurer, gemm_ground_truth
from autotile.space import Divisors, Permutation, Space, gemm_space


def _reordered_gemm() -> Space:
    s = gemm_space(64)
    k = {knob.name: knob for knob in s.knobs}
    return Space([k["j_factor"], k["i_factor"], k["k_factor"], k["order"]], name="gemm64")


def test_shipped_table_records_its_space_and_replays_on_it():
    truth = gemm_ground_truth(64)
    assert [k["name"] for k in truth.meta["space"]["knobs"]] == [
        "i_factor", "j_factor", "k_factor", "order"]
    assert truth.meta["measurer_settings"]["cache"] == {"size_bytes": 8192, "ways": 4,
                                                        "line_bytes": 64}
    space = gemm_space(64)
    m = ReplayMeasurer(space, truth, objective="misses")
    cfg = space.config_at(123_456)
    assert m.measure(cfg).metrics["misses"] == truth.values["misses"][123_456]


def test_replay_on_reordered_knobs_raises_and_names_the_order():
    space = _reordered_gemm()
    assert len(space) == len(gemm_space(64))  # same size: the old length check passed
    with pytest.raises(ValueError, match=r"knobs are in another order: the table's space has "
                       r"\['i_factor', 'j_factor', 'k_factor', 'order'\], this space "
                       r"\['j_factor', 'i_factor', 'k_factor', 'order'\]"):
        ReplayMeasurer(space, gemm_ground_truth(64))


def test_replay_on_another_space_of_the_same_size_names_the_knob():
    truth = gemm_ground_truth(64)
    s = gemm_space(64)
    perm = s["order"]
    other = Space([*s.knobs[:3], Permutation("order", tuple(reversed(perm.items)))])
    assert len(other) == len(s)
    with pytest.raises(ValueError, match=r"knob 'order' is .*'io', 'ii'.* in the table's space "
                       r"but .*'ki', 'ko'.* in this space"):
        ReplayMeasurer(other, truth)


def test_table_without_space_loads_with_a_warning(tmp_path):
    space = Space([Divisors("a", 8)], name="tiny")
    old = GroundTruth({"cost": np.arange(4.0)}, np.zeros(4, np.int8), {"n_configs": 4})
    old.save(tmp_path / "old.npz")
    truth = GroundTruth.load(tmp_path / "old.npz")
    with pytest.warns(UserWarning, match=r"'.*old.npz' records no space .* re-create it"):
        m = ReplayMeasurer(space, truth)
    assert m.measure(space.config_at(2)).metrics["cost"] == 2.0


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _good_table(tmp_path):
    path = tmp_path / "t.npz"
    GroundTruth({"cost": np.arange(6.0)}, np.zeros(6, np.int8), {"n_configs": 6}).save(path)
    return path


@pytest.mark.parametrize("damage", ["random_bytes", "truncated", "empty", "no_status",
                                    "meta_not_json", "pickled"])
def test_corrupt_table_names_the_file_and_leaves_it_unchanged(tmp_path, damage):
    path = _good_table(tmp_path)
    data = path.read_bytes()
    if damage == "random_bytes":
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "no_status":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("m_cost.npy", b"")
            z.writestr("meta.npy", b"")
        np.savez(path, m_cost=np.arange(6.0), meta=np.array("{}"))
    elif damage == "meta_not_json":
        np.savez(path, m_cost=np.arange(6.0), status=np.zeros(6, np.int8),
                 meta=np.array("{not json"))
    elif damage == "pickled":
        np.savez(path, m_cost=np.array([{"a": 1}], dtype=object), status=np.zeros(1, np.int8),
                 meta=np.array(json.dumps({})))
    before = _sha(path)
    with pytest.raises(CorruptFileError, match=rf"'{path}' is not a readable ground-truth "
                                               rf"table \(\w+"):
        GroundTruth.load(path)
    assert _sha(path) == before


def test_missing_table_is_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        GroundTruth.load(tmp_path / "nope.npz")


def test_sweep_table_records_measurer_settings(tmp_path):
    from autotile.measure import sweep

    space = gemm_space(4)
    truth = sweep(space, ScheduleMeasurer(space), tmp_path / "g4.npz", n_jobs=1,
                  progress=False, limit=20)
    assert truth.meta["space"]["size"] == len(space) == 19440
    assert [k["name"] for k in truth.meta["space"]["knobs"]] == list(space.names)
    assert truth.meta["measurer"] == "ScheduleMeasurer"
