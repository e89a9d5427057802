"""``autotile sweep`` says when measurements failed and refuses sizes that cannot fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from autotile.__main__ import _memory_problem, main
from autotile.measure import GroundTruth, ScheduleMeasurer

_SETTINGS = {"itemsize_bytes": 4, "cache": {"line_bytes": 64}}


def test_all_failed_exits_1_with_the_first_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: ScheduleMeasurer, config: object) -> None:
        raise MemoryError("Allocation failed (probably too large).")

    monkeypatch.setattr(ScheduleMeasurer, "_measure", boom)
    out = tmp_path / "big.npz"
    assert main(["sweep", "--n", "4", "--limit", "20", "--n-jobs", "1", "--out", str(out)]) == 1
    cap = capsys.readouterr()
    assert f"wrote {out}: 20 configs" in cap.out
    assert cap.err.splitlines()[-1] + "\n" == (  # after the progress bar
        f"autotile sweep: error: all 20 configs failed, so {out} holds no measurement; the "
        f"first, i_factor=1, j_factor=1, k_factor=1, order=(io,ii,jo,ji,ko,ki), failed with: "
        f"MemoryError: Allocation failed (probably too large).\n")
    assert (GroundTruth.load(out).status == 1).all()
    # the finished table is returned as is on a second call: still an error
    assert main(["sweep", "--n", "4", "--limit", "20", "--n-jobs", "1", "--out", str(out)]) == 1
    assert "all 20 configs failed" in capsys.readouterr().err


def test_some_failed_are_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    real = ScheduleMeasurer._measure

    def flaky(self: ScheduleMeasurer, config: object) -> object:
        if config["order"][0] == "ii":  # type: ignore[index]
            raise RuntimeError("simulator crashed")
        return real(self, config)

    monkeypatch.setattr(ScheduleMeasurer, "_measure", flaky)
    out = tmp_path / "s.npz"
    assert main(["sweep", "--n", "2", "--no-resume", "--n-jobs", "1", "--out", str(out)]) == 0
    truth = GroundTruth.load(out)
    n_bad = int((truth.status == 1).sum())
    assert 0 < n_bad < len(truth)
    assert n_bad == sum(truth.result(i).status == "failed" for i in range(len(truth)))
    err = capsys.readouterr().err.splitlines()[-1]  # after the progress bar
    assert err.startswith(f"autotile sweep: warning: {n_bad} of {len(truth)} configs failed "
                          f"(status 'failed', NaN metrics in {out}); the first, ")
    assert err.endswith("failed with: RuntimeError: simulator crashed")
    assert np.isnan(truth.column("misses")[truth.status == 1]).all()


def test_sizes_that_cannot_fit_are_refused(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # 18 bytes per 64-byte line of three n x n float32 matrices: 3.4 n^2 bytes per worker
    monkeypatch.setattr("autotile.__main__._memory_bytes", lambda: 16 * 2**30)
    assert _memory_problem(64, _SETTINGS, 2, 100) is None
    why = _memory_problem(100_000, _SETTINGS, 1, 1)
    assert why is not None and why.startswith(
        "--n 100000 needs about 31.4 GiB of cache-simulator state per worker (1 worker: "
        "31.4 GiB), more than the 16.0 GiB of memory available")
    # 2 workers of 9.1 GiB (n = 54000) do not fit; one does
    assert _memory_problem(54_000, _SETTINGS, 2, 10) is not None
    assert _memory_problem(54_000, _SETTINGS, 1, 10) is None
    assert _memory_problem(54_000, _SETTINGS, 2, 1) is None  # one config: one worker
    out = tmp_path / "big.npz"
    assert main(["sweep", "--n", "100000", "--limit", "1", "--n-jobs", "1",
                 "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("autotile sweep: error: --n 100000 needs about")
    assert not list(tmp_path.iterdir())


def test_tune_refuses_a_live_size_that_cannot_fit(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # a fresh user's `autotile tune --n 100000` grew past 24 GB and was killed
    monkeypatch.setattr("autotile.measure.cpu._schedule_measurer.memory_bytes",
                        lambda: 16 * 2**30)
    db = tmp_path / "s.db"
    assert main(["tune", "--n", "100000", "--budget", "1", "--storage", str(db)]) == 2
    err = capsys.readouterr().err
    assert "--n 100000 needs about 31.4 GiB of cache-simulator state" in err
    assert "more than the 16.0 GiB of memory available" in err
