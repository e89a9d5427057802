"""Bad input from the second new-user test: a storage URL without ``://``, a
missing directory named as given, and table or Kernel Tuner files that are not
what they claim (truncated, empty, other arrays, an empty JSON object)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from autotile.errors import CorruptFileError, MeasureError
from autotile.measure import GroundTruth, load_kernel_tuner
from autotile.search import open_storage
from autotile.search._study_args import resolve_storage

TRUTH = Path(__file__).resolve().parents[2] / "autotile" / "data" / "gemm64_truth.npz"


@pytest.mark.parametrize("url", ["sqlite:/runs.db", "sqlite:runs.db",
                                 "journal:/tmp/runs.log"])
def test_url_without_double_slash_says_so(url):
    scheme = url.partition(":")[0]
    with pytest.raises(ValueError) as exc:
        resolve_storage(url)
    assert str(exc.value) == (
        f"storage {url!r} is a URL without '://' after its scheme {scheme!r}: write e.g. "
        f"'sqlite:///runs.db' (three slashes, then the path; four for an absolute path: "
        f"'sqlite:////tmp/runs.db'), 'journal:///path/runs.log' or "
        f"'postgresql://user:password@host/db'")


def test_url_without_double_slash_hides_the_password():
    with pytest.raises(ValueError, match=r"^storage 'postgresql:/tuner:\*\*\*@db-host/s' is"):
        open_storage("postgresql:/tuner:secret@db-host/s")


def test_file_name_with_a_colon_is_still_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_storage("study:1.db") == "sqlite:///study:1.db"


def test_missing_directory_names_the_storage_as_given(tmp_path):
    path = str(tmp_path / "nodir" / "x.db")
    with pytest.raises(ValueError) as exc:
        resolve_storage(path)
    assert str(exc.value) == (
        f"storage must be an SQLite file in an existing directory, got storage={path!r} "
        f"(directory {str(tmp_path / 'nodir')!r} does not exist)")


def test_truncated_table_is_called_truncated(tmp_path):
    path = tmp_path / "trunc.npz"
    path.write_bytes(TRUTH.read_bytes()[:3000])
    assert not zipfile.is_zipfile(path)
    with pytest.raises(CorruptFileError) as exc:
        GroundTruth.load(path)
    assert str(exc.value) == (
        f"{str(path)!r} is not a readable ground-truth table (a truncated or damaged .npz "
        f"archive: it starts as a zip file but has no end-of-archive record (3,000 bytes)); "
        f"re-create it with autotile sweep")


def test_empty_table_file_is_called_empty(tmp_path):
    path = tmp_path / "empty.npz"
    path.write_bytes(b"")
    with pytest.raises(CorruptFileError, match=r"\(an empty file \(0 bytes\), not a NumPy "
                                               r"\.npz archive\)"):
        GroundTruth.load(path)


def test_npz_of_other_arrays_names_what_it_lacks_and_holds(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, a=np.arange(3), b=np.zeros(2))
    with pytest.raises(CorruptFileError) as exc:
        GroundTruth.load(path)
    assert str(exc.value) == (
        f"{str(path)!r} is not a readable ground-truth table (it lacks the array(s) "
        f"['status', 'meta']; it holds ['a', 'b']); re-create it with autotile sweep")


@pytest.mark.parametrize("data, got", [({}, "a JSON object with keys []"),
                                       ({"x": 1}, "a JSON object with keys ['x']"),
                                       ([1, 2], "a JSON list")])
def test_kernel_tuner_file_of_another_shape_says_what_it_holds(tmp_path, data, got):
    path = tmp_path / "e.json"
    path.write_text(json.dumps(data))
    with pytest.raises(MeasureError) as exc:
        load_kernel_tuner(path)
    assert str(exc.value) == (
        f"{path} is neither a Kernel Tuner cache (needs 'tune_params' and 'cache') nor a T4 "
        f"file (needs a 'results' list); got {got}")


@pytest.mark.parametrize("kwargs", [[1], "plan_size=8"])
def test_searcher_kwargs_that_are_not_a_mapping_raise(kwargs):
    from autotile.measure import ScheduleMeasurer
    from autotile.search import tune
    from autotile.space import gemm_space

    space = gemm_space(4)
    with pytest.raises(TypeError) as exc:
        tune(space, ScheduleMeasurer(space), searcher="model", budget=2, storage=":memory:",
             searcher_kwargs=kwargs, progress=False)
    assert str(exc.value) == (f"searcher_kwargs must be a dict of the searcher's options or "
                              f"None, got {type(kwargs).__name__} {kwargs!r}")
