from __future__ import annotations

import math
from typing import Any

import pytest

from autotile.measure import Measurer, MeasureResult
from autotile.space import Boolean, Choice, Divisors, IntRange, Permutation, Space


class ToyMeasurer(Measurer):
    """Deterministic synthetic scores: fast, with a unique optimum."""

    metrics = ("cost", "aux")
    objective = "cost"

    def __init__(self, space: Space) -> None:
        self.space = space
        self.calls: list[str] = []

    def _measure(self, config: Any) -> MeasureResult:
        cfg = self.space.validate(config)
        self.calls.append(str(cfg))
        cost = float(self.space.index_of(cfg) * 7919 % 1009)
        return MeasureResult(str(cfg), "ok", {"cost": cost, "aux": math.sqrt(cost)})


def _small_constrained() -> Space:
    return Space(
        [Divisors("a", 16), Divisors("b", 16), Permutation("order", ("x", "y", "z"))],
        constraints=[lambda c: c["a"] * c["b"] <= 32],
        name="toy",
    )


@pytest.fixture
def small_space() -> Space:
    return _small_constrained()


@pytest.fixture
def mixed_space() -> Space:
    return Space(
        [Choice("layout", ("row", "col", (1, 2))), IntRange("stages", 1, 7, 2), Boolean("unroll"),
         Divisors("tile", 12), Permutation("order", ("i", "j", "k"))],
        constraints=[lambda c: not (c["unroll"] and c["tile"] == 12)],
        name="mixed",
    )


GEMM8_CACHE = dict(size_bytes=256, line_bytes=32, ways=2)


def gemm8_truth(cache_dir):
    """Ground truth of gemm_space(8) under a 256-byte, 2-way cache (misses are rare-optimal).

    13,776 canonical schedules are simulated once (~15-25 s with 2 jobs) and
    the table is kept in pytest's cache directory for later runs.
    """
    from autotile.measure import CacheConfig, GroundTruth, ScheduleMeasurer, sweep
    from autotile.space import gemm_canonical_key, gemm_space

    space = gemm_space(8)
    path = cache_dir / "gemm8_256B_truth.npz"
    if path.exists():
        truth = GroundTruth.load(path)
    else:
        measurer = ScheduleMeasurer(space, cache=CacheConfig(**GEMM8_CACHE))
        truth = sweep(space, measurer, path, key=gemm_canonical_key, n_jobs=2,
                      chunk_size=2000, progress=False)
    return space, truth


@pytest.fixture(scope="session")
def gemm8(request, tmp_path_factory):
    from autotile.measure import ReplayMeasurer

    cache = getattr(request.config, "cache", None)
    cache_dir = (cache.mkdir("autotile_search") if cache is not None
                 else tmp_path_factory.mktemp("autotile_search"))
    space, truth = gemm8_truth(cache_dir)
    return space, truth, ReplayMeasurer(space, truth, "misses")


def _load_benchmark(name: str):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "workers" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory):
    """A PostgreSQL URL: ``$AUTOTILE_TEST_POSTGRES_URL`` (set by .ci/run), else a local
    throwaway server (benchmarks/workers/_postgres.py); skips when neither is possible."""
    import os
    import tempfile

    pg = _load_benchmark("_postgres")
    url = os.environ.get(pg.ENV_VAR)
    if url:
        yield url
        return
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        pytest.skip("PostgreSQL tests need psycopg2 (pip install psycopg2-binary)")
    where = tempfile.mkdtemp(prefix="autotile-pg-")
    try:
        url = pg.start(where)
    except RuntimeError as exc:
        pytest.skip(f"no PostgreSQL server: {exc} (.ci/run installs and starts one)")
    try:
        yield url
    finally:
        pg.stop(where)
