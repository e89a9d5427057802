"""The sweep's resume check: a table or chunks of another sweep are refused, never reused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from autotile.errors import MeasureError
from autotile.measure import (
    CacheConfig,
    CpuCostModel,
    GroundTruth,
    ScheduleMeasurer,
    gemm_ground_truth,
    sweep,
)
from autotile.space import gemm_canonical_key, gemm_space

LIMIT = 300


def _sweep(space, measurer, out, **kw):
    kw = {"key": gemm_canonical_key, "n_jobs": 1, "progress": False, "limit": LIMIT, **kw}
    return sweep(space, measurer, out, **kw)


def _kill_before_the_table(monkeypatch, *args, **kw):
    """Run a sweep that is killed after its chunks, before the table is written."""
    def killed(self, path):
        raise KeyboardInterrupt

    with monkeypatch.context() as mp:
        mp.setattr(GroundTruth, "save", killed)
        with pytest.raises(KeyboardInterrupt):
            _sweep(*args, **kw)


def test_finished_table_of_another_cache_is_refused(tmp_path):
    # the bug: the second sweep returned the 8 KB cache's misses (12 at row 1000 of
    # gemm_space(8)) and recorded the 256-byte cache in the metadata
    space = gemm_space(8)
    out = tmp_path / "cc.npz"
    first = _sweep(space, ScheduleMeasurer(space), out, limit=1200)
    small = ScheduleMeasurer(space, cache=CacheConfig(256, 1, 64))
    with pytest.raises(MeasureError, match=r"cc.npz holds a table of a different sweep: "
                                           r"measurer_settings.cache.size_bytes: 8192 \(then\) "
                                           r"vs 256 \(now\); measurer_settings.cache.ways: 4 "
                                           r"\(then\) vs 1 \(now\); delete it or pass "
                                           r"resume=False"):
        _sweep(space, small, out, limit=1200)
    np.testing.assert_array_equal(GroundTruth.load(out).column("misses"),
                                  first.column("misses"))  # left as it was
    fresh = _sweep(space, small, out, limit=1200, resume=False)
    assert fresh.result(1000).metrics["misses"] == 1232
    assert small.measure(space.config_at(1000)).metrics["misses"] == 1232
    assert GroundTruth.load(out).meta["measurer_settings"]["cache"]["size_bytes"] == 256


def test_finished_table_of_another_problem_size_is_refused(tmp_path):
    out = tmp_path / "a.npz"
    _sweep(gemm_space(16), ScheduleMeasurer(gemm_space(16)), out, limit=50)
    with pytest.raises(MeasureError, match=r"a different sweep: measurer_settings.n: 16 "
                                           r"\(then\) vs 32 \(now\); .*space.knobs\[0\].n: 16 "
                                           r"\(then\) vs 32 \(now\);"):
        _sweep(gemm_space(32), ScheduleMeasurer(gemm_space(32)), out, limit=50)
    t = _sweep(gemm_space(32), ScheduleMeasurer(gemm_space(32)), out, limit=50, resume=False)
    assert (t.column("accesses") == 3 * 32**3).all()


@pytest.mark.parametrize("change, message", [
    (lambda: ScheduleMeasurer(gemm_space(8), cost=CpuCostModel(l2_cycles=20.0)),
     r"measurer_settings.cost.l2_cycles: 14.0 \(then\) vs 20.0 \(now\)"),
    (lambda: ScheduleMeasurer(gemm_space(8), cache=CacheConfig(8192, 4, 32)),
     r"measurer_settings.cache.line_bytes: 64 \(then\) vs 32 \(now\)"),
    (lambda: ScheduleMeasurer(gemm_space(16)), r"measurer_settings.n: 8 \(then\) vs 16 \(now\)"),
])
def test_chunks_of_another_sweep_are_refused(tmp_path, monkeypatch, change, message):
    # the bug: the chunk digest covered only the representatives, count and metric names
    space = gemm_space(8)
    out = tmp_path / "p.npz"
    _kill_before_the_table(monkeypatch, space, ScheduleMeasurer(space), out, chunk_size=3)
    assert len(list((tmp_path / "p.npz.parts").glob("chunk_*.npz"))) > 1
    other = change()
    with pytest.raises(MeasureError, match=r"p.npz.parts holds chunks of a different sweep: "
                                           r".*" + message):
        _sweep(other.space, other, out, chunk_size=3)


def test_table_meta_records_the_space_and_n(tmp_path):
    space = gemm_space(8)
    t = _sweep(space, ScheduleMeasurer(space), tmp_path / "m.npz", limit=40)
    meta = GroundTruth.load(tmp_path / "m.npz").meta
    assert meta == t.meta
    assert meta["measurer_settings"] == {
        "objective": "misses", "n": 8, "dtype": "float32", "itemsize_bytes": 4,
        "cache": {"size_bytes": 8192, "ways": 4, "line_bytes": 64},
        "cost": {"body_cycles": 1.0, "loop_cycles": 1.0, "l2_cycles": 14.0,
                 "dram_cycles": 200.0}}
    assert meta["space"]["name"] == "gemm_n8" and meta["space"]["size"] == 46_080
    assert meta["space"]["knobs"][0] == {"kind": "Divisors", "name": "i_factor", "n": 8}
    assert meta["fingerprint"]["n_configs"] == 40
    assert meta["fingerprint"]["reps"]["n_unique"] == meta["n_unique"]


def test_finished_sweep_removes_its_parts_only_after_the_table_is_written(tmp_path, monkeypatch):
    space = gemm_space(4)
    out = tmp_path / "t.npz"
    parts = tmp_path / "t.npz.parts"

    def disk_full(self, path):
        raise OSError("No space left on device")

    with monkeypatch.context() as mp:
        mp.setattr(GroundTruth, "save", disk_full)
        with pytest.raises(OSError, match="No space left"):
            _sweep(space, ScheduleMeasurer(space), out, chunk_size=2)
    assert not out.exists() and len(list(parts.glob("chunk_*.npz"))) > 1
    _sweep(space, ScheduleMeasurer(space), out, chunk_size=2)
    assert out.is_file() and not parts.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.npz"]


def test_tables_and_chunks_without_a_fingerprint(tmp_path, monkeypatch):
    # Tables written before the fingerprint still load, but a sweep cannot check them, so
    # it refuses to reuse them unless told not to resume. (The shipped table was re-swept
    # and has one.)
    shipped = gemm_ground_truth(64)
    assert len(shipped) == 246_960 and "fingerprint" in shipped.meta
    space = gemm_space(4)
    t = _sweep(space, ScheduleMeasurer(space), tmp_path / "old.npz", limit=30)
    legacy = GroundTruth(t.values, t.status, {k: v for k, v in t.meta.items()
                                              if k not in ("fingerprint", "space")})
    legacy.save(tmp_path / "old.npz")
    assert len(GroundTruth.load(tmp_path / "old.npz")) == 30
    with pytest.raises(MeasureError, match=r"old.npz holds a table of a sweep that recorded no "
                                           r"fingerprint \(written by an older autotile\)"):
        _sweep(space, ScheduleMeasurer(space), tmp_path / "old.npz", limit=30)
    again = _sweep(space, ScheduleMeasurer(space), tmp_path / "old.npz", limit=30, resume=False)
    np.testing.assert_array_equal(again.column("misses"), t.column("misses"))
    # an old manifest (digest and chunk_size only)
    out = tmp_path / "k.npz"
    _kill_before_the_table(monkeypatch, space, ScheduleMeasurer(space), out, limit=30)
    manifest = tmp_path / "k.npz.parts" / "manifest.json"
    old = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({k: old[k] for k in ("digest", "chunk_size", "n")}))
    with pytest.raises(MeasureError, match=r"k.npz.parts holds chunks of a sweep that "
                                           r"recorded no fingerprint"):
        _sweep(space, ScheduleMeasurer(space), out, limit=30)


def test_renamed_space_is_the_same_sweep(tmp_path):
    from autotile.space import Space

    space = gemm_space(4)
    out = tmp_path / "r.npz"
    t = _sweep(space, ScheduleMeasurer(space), out, limit=30)
    renamed = Space(space.knobs, name="my label")
    again = _sweep(renamed, ScheduleMeasurer(renamed), out, limit=30)
    np.testing.assert_array_equal(again.column("misses"), t.column("misses"))
