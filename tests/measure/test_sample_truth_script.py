"""``benchmarks/gemm/sample_truth.py`` measures and writes chunks with the sweep's code."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from autotile.measure import SCHEDULE_METRICS, MeasureResult, SampledTruth, ScheduleMeasurer
from autotile.measure._ground_truth import _save_chunk
from autotile.space import gemm_space

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gemm" / "sample_truth.py"


@pytest.fixture
def script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("sample_truth_script", SCRIPT)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


class _InfFirst(ScheduleMeasurer):
    """The real measurer, except that its first result is "ok" with every metric +inf."""

    calls = 0

    def measure(self, config):  # type: ignore[no-untyped-def]
        _InfFirst.calls += 1
        if _InfFirst.calls == 1:
            return MeasureResult(str(config), "ok", {k: math.inf for k in SCHEDULE_METRICS})
        return super().measure(config)


def test_non_finite_is_failed_and_parts_are_whole(script, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    _InfFirst.calls = 0
    monkeypatch.setattr(script, "ScheduleMeasurer", _InfFirst)
    out = tmp_path / "s.npz"
    monkeypatch.setattr(sys, "argv", ["sample_truth.py", "--n", "64", "--samples", "6",
                                      "--chunk", "3", "--n-jobs", "1", "--out", str(out)])
    with contextlib.redirect_stdout(io.StringIO()):
        script.main()
    t = SampledTruth.load(out)
    idx = np.random.default_rng(0).permutation(len(gemm_space(64)))[:6]
    np.testing.assert_array_equal(t.index, idx)
    np.testing.assert_array_equal(t.status, [1, 0, 0, 0, 0, 0])  # +inf recorded as failed
    assert math.isnan(t.column("misses")[0])
    space = gemm_space(64)
    live = ScheduleMeasurer(space)
    for r in range(1, 6):
        assert t.column("misses")[r] == live.measure(space.config_at(int(idx[r]))).metrics["misses"]
    parts = out.with_name(out.name + ".parts")
    assert sorted(p.name for p in parts.iterdir()) == ["00000.npz", "00001.npz"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.npz", "s.npz.parts"]
    with np.load(parts / "00000.npz") as z:
        np.testing.assert_array_equal(z["status"], [1, 0, 0])
        assert float(z["cpu_s"]) >= 0.0


def test_save_chunk_leaves_no_part_when_writing_fails(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    def half_write(file, **arrays):  # type: ignore[no-untyped-def]
        Path(file).write_bytes(b"PK\x03\x04 truncated")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", half_write)
    out = tmp_path / "00003.npz"
    with pytest.raises(OSError, match="disk full"):
        _save_chunk(out, np.zeros((2, 1)), np.zeros(2, np.int8), cpu_s=1.0)
    assert list(tmp_path.iterdir()) == []  # neither the part nor its temporary file
    monkeypatch.undo()
    _save_chunk(out, np.ones((2, 1)), np.array([0, 1], np.int8), cpu_s=2.5)
    with np.load(out) as z:
        np.testing.assert_array_equal(z["values"], [[1.0], [1.0]])
        np.testing.assert_array_equal(z["status"], [0, 1])
        assert float(z["cpu_s"]) == 2.5
    assert [p.name for p in tmp_path.iterdir()] == ["00003.npz"]
