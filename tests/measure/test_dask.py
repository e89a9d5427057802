"""Sweep, compare and @autotune scoring on a Dask LocalCluster give the joblib results (issue 14).

One LocalCluster of 2 single-threaded worker processes serves every test of
this module (a ``distributed.Client`` is a valid ``scheduler=``); one test
also starts its own with ``scheduler="local"``.
"""

from __future__ import annotations

import numpy as np
import pytest

from autotile.measure import ReplayMeasurer, ScheduleMeasurer, parallel_map, sweep
from autotile.space import gemm_canonical_key, gemm_space

distributed = pytest.importorskip("distributed", reason="pip install 'autotile[dask]'")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _key8(c):
    return gemm_canonical_key(c, 8)


def test_sweep_on_dask_equals_joblib(tmp_path, client):
    space = gemm_space(8)
    kw = dict(key=_key8, chunk_size=5, progress=False, n_jobs=2, limit=3000)
    a = sweep(space, ScheduleMeasurer(space), tmp_path / "joblib.npz", **kw)
    b = sweep(space, ScheduleMeasurer(space), tmp_path / "dask.npz", scheduler=client, **kw)
    assert len(a) == len(b) == 3000 and b.meta["n_unique"] == a.meta["n_unique"] == 46
    np.testing.assert_array_equal(a.status, b.status)
    for m in a.metrics:
        np.testing.assert_array_equal(a.values[m], b.values[m])
    assert b.meta["fingerprint"] == a.meta["fingerprint"]
    assert not (tmp_path / "dask.npz.parts").exists()


def test_compare_on_dask_equals_joblib(client):
    from autotile.measure import GroundTruth
    from autotile.search import compare
    from autotile.space import Divisors, Permutation, Space

    space = Space([Divisors("a", 64), Divisors("b", 64), Permutation("p", ("x", "y", "z"))],
                  name="toy")
    cost = (np.arange(len(space)) * 7919 % 1009).astype(np.float64)
    m = ReplayMeasurer(space, GroundTruth({"cost": cost}, np.zeros(len(space), np.int8), {}))
    kw = dict(budget=30, seeds=2, progress=False, n_jobs=2)
    a = compare(space, m, ["random", "evolutionary"], **kw)
    b = compare(space, m, ["random", "evolutionary"], scheduler=client, **kw)
    for label in ("random", "evolutionary"):
        np.testing.assert_array_equal(a.histories[label], b.histories[label])
    assert np.isfinite(b.histories["random"]).all()


def test_autotune_scores_candidates_on_dask(client):
    from autotile.tuner import Config, autotune
    from tests.tuner._kernels import double_kernel, grid_1d, time_by_block

    cfgs = [Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 32, 64)]
    x = np.arange(96, dtype=np.float32) - 7
    runs = {}
    for name, sched in (("local", None), ("dask", client)):
        k = autotune(configs=cfgs, key=["n"], scorer=time_by_block, scheduler=sched,
                     disk_cache=False)(double_kernel)
        out = np.zeros(96, np.float32)
        k[grid_1d](x, out, 96)
        np.testing.assert_array_equal(out, 2 * x)
        runs[name] = [(r.config, r.status, r.time_s) for r in k.history]
    assert runs["dask"] == runs["local"]
    assert runs["dask"][2] == (cfgs[2], "ok", pytest.approx(1e-3 / 64))


def test_local_scheduler_starts_its_own_cluster():
    assert list(parallel_map(pow, [1, 2, 3], shared=(2,), n_jobs=2, scheduler="local")) == [
        2, 4, 8]


def test_bad_scheduler_is_refused():
    with pytest.raises(ValueError, match=r"scheduler must be 'local' .* got scheduler='nowhere'"):
        list(parallel_map(abs, [1], scheduler="nowhere"))
