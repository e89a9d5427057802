from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from autotile.errors import MeasureError
from autotile.measure._kernel_tuner import RecordedSpace, load_kernel_tuner

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def pnpoly() -> RecordedSpace:
    return load_kernel_tuner(DATA / "pnpoly__RTX_3090.json.gz")


def test_kt_tiny_plain_json() -> None:
    rec = load_kernel_tuner(DATA / "kt_tiny.json")
    space, truth = rec.space, rec.truth
    assert space.names == ("block_size_x", "tile", "use_shmem", "unroll")
    assert space["unroll"].values == (1,)
    assert len(space) == 14 and space.product_size == 18
    assert rec.meta["format"] == "kernel_tuner"
    assert rec.meta["device_name"] == "Test GPU" and rec.meta["kernel_name"] == "tiny_kernel"
    assert rec.meta["problem_size"] == [1024, 1024]
    assert rec.meta["n_valid"] == 11 and rec.meta["n_failed"] == 3
    assert rec.meta["failures"] == {"RuntimeFailedConfig": 1, "CompilationFailedConfig": 1,
                                    "time=1e+20": 1}
    assert truth.metrics[0] == "time" and "GFLOP/s" in truth.metrics
    assert "timestamp" not in truth.metrics and "times" not in truth.metrics
    assert truth.optimum("time") == 1.0
    # rows follow the space's bijection
    for i in range(len(space)):
        cfg = space.config_at(i)
        raw = json.loads((DATA / "kt_tiny.json").read_text())["cache"][rec.key(cfg)]["time"]
        if isinstance(raw, str) or raw >= 1e20:
            assert truth.status[i] == 1 and np.isnan(truth.values["time"][i])
        else:
            assert truth.status[i] == 0 and truth.values["time"][i] == raw
    # configs absent from the file violate the (unrecorded) constraints
    assert not space.is_valid({"block_size_x": 128, "tile": 4, "use_shmem": 0, "unroll": 1})


def test_kt_tiny_replay() -> None:
    rec = load_kernel_tuner(DATA / "kt_tiny.json")
    m = rec.measurer()
    assert m.objective == "time"
    best = m.measure({"block_size_x": 64, "tile": 2, "use_shmem": 0, "unroll": 1})
    assert best.ok and best.metrics["time"] == 1.0 and best.metrics["GFLOP/s"] == 100.0
    failed = m.measure({"block_size_x": 64, "tile": 2, "use_shmem": 1, "unroll": 1})
    assert failed.status == "failed"
    absent = m.measure({"block_size_x": 128, "tile": 4, "use_shmem": 1, "unroll": 1})
    assert absent.status == "infeasible"
    assert rec.measurer("GFLOP/s").objective == "GFLOP/s"


def test_t4_tiny_gzip() -> None:
    rec = load_kernel_tuner(DATA / "t4_tiny.json.gz")
    assert rec.meta["format"] == "t4"
    assert rec.space.names == ("bs", "method")
    assert rec.space["bs"].values == (4, 8, 16, 32)  # domains sorted
    assert rec.space["method"].values == ("a", "b")
    assert len(rec.space) == 6
    assert rec.meta["n_valid"] == 5 and rec.meta["failures"] == {"runtime": 1}
    assert rec.truth.optimum("time") == 2.0
    assert set(rec.truth.metrics) >= {"time", "compile_time", "framework_time"}
    m = rec.measurer()
    assert m.measure({"bs": 16, "method": "a"}).status == "failed"
    assert m.measure({"bs": 16, "method": "b"}).metrics["time"] == 2.0
    assert m.measure({"bs": 4, "method": "a"}).status == "infeasible"


def test_gzip_is_sniffed_not_named(tmp_path: Path) -> None:
    plain = tmp_path / "cache.json.gz"  # misleading name, plain content
    plain.write_text((DATA / "kt_tiny.json").read_text())
    assert len(load_kernel_tuner(plain).space) == 14
    packed = tmp_path / "cache.json"  # gzip content without the suffix
    packed.write_bytes(gzip.compress((DATA / "kt_tiny.json").read_bytes()))
    assert len(load_kernel_tuner(packed).space) == 14


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_kernel_tuner(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(MeasureError, match="neither a Kernel Tuner cache"):
        load_kernel_tuner(bad)
    bad.write_text("not json")
    with pytest.raises(MeasureError, match="not valid JSON"):
        load_kernel_tuner(bad)
    with pytest.raises(ValueError, match="objective"):
        load_kernel_tuner(DATA / "kt_tiny.json", objective="watts")


def test_pnpoly_statistics(pnpoly: RecordedSpace) -> None:
    # The numbers of the dataset README (benchmark_hub pnpoly on the RTX 3090).
    rec = pnpoly
    assert rec.meta["device_name"] == "NVIDIA GeForce RTX 3090"
    assert rec.meta["kernel_name"] == "cn_pnpoly"
    assert rec.meta["problem_size"] == 20000000
    assert len(rec.space) == 4092 == rec.space.product_size
    assert rec.space.names == ("between_method", "block_size_x", "tile_size", "use_method")
    assert rec.meta["n_valid"] == 3774
    assert rec.meta["failures"] == {"RuntimeFailedConfig": 318}
    time = rec.truth.column("time")[rec.truth.status == 0]
    best = time.min()
    assert round(best, 4) == 8.7142
    within = [int(np.count_nonzero(time <= best * (1 + p / 100))) for p in (1, 5, 10)]
    assert within == [9, 33, 111]


def test_pnpoly_keys_round_trip(pnpoly: RecordedSpace) -> None:
    with gzip.open(DATA / "pnpoly__RTX_3090.json.gz", "rt") as fh:
        cache = json.load(fh)["cache"]
    for i in range(0, len(pnpoly.space), 97):
        cfg = pnpoly.space.config_at(i)
        rec = cache[pnpoly.key(cfg)]
        if pnpoly.truth.status[i] == 0:
            assert pnpoly.truth.values["time"][i] == rec["time"]
        else:
            assert rec["time"] == "RuntimeFailedConfig"


def _tiny() -> dict:
    return json.loads((DATA / "kt_tiny.json").read_text())


def test_truncated_or_corrupt_gzip_raises_measure_error(tmp_path: Path) -> None:
    packed = gzip.compress((DATA / "kt_tiny.json").read_bytes())
    trunc = tmp_path / "trunc.json.gz"
    trunc.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(MeasureError, match=r"trunc\.json\.gz is not gzip/JSON: .*truncated"):
        load_kernel_tuner(trunc)
    corrupt = tmp_path / "corrupt.json.gz"
    corrupt.write_bytes(packed[:10] + bytes(range(256)) * 4)
    with pytest.raises(MeasureError, match=r"corrupt\.json\.gz is not gzip/JSON"):
        load_kernel_tuner(corrupt)
    garbage = tmp_path / "garbage.json.gz"
    garbage.write_bytes(np.random.default_rng(0).integers(128, 256, 100, np.uint8).tobytes())
    with pytest.raises(MeasureError, match=r"garbage\.json\.gz is not gzip/JSON: not UTF-8"):
        load_kernel_tuner(garbage)
    inner = tmp_path / "inner.json.gz"  # valid gzip, not JSON inside
    inner.write_bytes(gzip.compress(b"\x00\x01 hello"))
    with pytest.raises(MeasureError, match=r"inner\.json\.gz is not valid JSON"):
        load_kernel_tuner(inner)


def test_malformed_files_raise_measure_error_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    d = _tiny()
    d["cache"] = list(d["cache"].values())
    bad.write_text(json.dumps(d))
    with pytest.raises(MeasureError, match=r"bad\.json: .*'cache' must be an object.*list"):
        load_kernel_tuner(bad)
    d = _tiny()
    d["cache"]["32,1,0,1"] = 3.0
    bad.write_text(json.dumps(d))
    with pytest.raises(MeasureError, match=r"bad\.json: cache record '32,1,0,1' must be"):
        load_kernel_tuner(bad)
    d = _tiny()
    d["tune_params"] = [1, 2]
    bad.write_text(json.dumps(d))
    with pytest.raises(MeasureError, match=r"bad\.json: .*'tune_params' must map"):
        load_kernel_tuner(bad)
    d = _tiny()
    d["cache"]["32,1,0,1"]["block_size_x"] = 12345
    bad.write_text(json.dumps(d))
    with pytest.raises(MeasureError, match=r"bad\.json: value block_size_x=12345"):
        load_kernel_tuner(bad)
    bad.write_text(json.dumps({"results": [{"no_configuration": 1}]}))
    with pytest.raises(MeasureError, match=r"bad\.json is not a well-formed T4"):
        load_kernel_tuner(bad)
    bad.write_text("[1, 2, 3]")
    with pytest.raises(MeasureError, match="neither a Kernel Tuner cache"):
        load_kernel_tuner(bad)


def test_empty_or_all_failed_cache_raises(tmp_path: Path) -> None:
    f = tmp_path / "failed.json"
    d = _tiny()
    for rec in d["cache"].values():
        rec["time"] = "RuntimeFailedConfig"
    f.write_text(json.dumps(d))
    with pytest.raises(MeasureError, match=r"no valid \(finite\) objective values in .*failed\.json"
                                           r": all 14 configs failed"):
        load_kernel_tuner(f)
    d["cache"] = {}
    f.write_text(json.dumps(d))
    with pytest.raises(MeasureError, match=r"no configs in .*failed\.json"):
        load_kernel_tuner(f)


@pytest.mark.parametrize("bad_time", [-5.0, 0.0, 0])
def test_non_positive_time_is_a_failed_config(tmp_path: Path, bad_time: float) -> None:
    ref = load_kernel_tuner(DATA / "kt_tiny.json")
    d = _tiny()
    d["cache"]["32,1,0,1"]["time"] = bad_time
    f = tmp_path / "neg.json"
    f.write_text(json.dumps(d))
    rec = load_kernel_tuner(f)
    assert rec.meta["n_valid"] == ref.meta["n_valid"] - 1
    assert rec.meta["failures"]["non-positive time"] == 1
    row = rec.space.index_of({"block_size_x": 32, "tile": 1, "use_shmem": 0, "unroll": 1})
    assert rec.truth.status[row] == 1
    assert np.isnan(rec.truth.values["time"][row])
    assert rec.truth.optimum("time") == ref.truth.optimum("time") > 0
