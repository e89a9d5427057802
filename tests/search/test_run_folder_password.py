"""``run.json`` never stores a database password; resuming such a run needs ``--storage``."""

import json

import pytest

from autotile.search._run_folder import open_run_folder

URL = "postgresql://tuner:s3cret@127.0.0.1:5432/autotile"
SETTINGS = {"searchers": ["random"], "budget": 10}


def _open(tmp_path, storage, **kw):
    cmd = ["autotile", "compare", "--storage", storage or "", "--storage=" + (storage or "")]
    return open_run_folder(str(tmp_path / "run"), str(tmp_path / "base"), SETTINGS, storage,
                           cmd, **kw)


def test_password_is_masked_in_run_json_but_used_in_memory(tmp_path):
    folder = _open(tmp_path, URL)
    text = (tmp_path / "run" / "run.json").read_text()
    assert "s3cret" not in text
    record = json.loads(text)
    assert record["storage"] == "postgresql://tuner:***@127.0.0.1:5432/autotile"
    assert record["command"][3] == record["storage"]
    assert record["command"][4] == "--storage=" + record["storage"]
    assert folder.storage == URL


def test_resume_with_the_same_storage(tmp_path):
    _open(tmp_path, URL)
    again = _open(tmp_path, URL)
    assert again.resumed and again.storage == URL
    assert "s3cret" not in (tmp_path / "run" / "run.json").read_text()


def test_resume_without_storage_asks_for_it(tmp_path):
    _open(tmp_path, URL)
    with pytest.raises(ValueError, match=r"pass that --storage again to resume it"):
        _open(tmp_path, None)


def test_resume_with_another_host_is_refused(tmp_path):
    # only the masked URL is recorded: another password of the same user and host cannot
    # be told apart from the first, so the check is on what the record keeps
    _open(tmp_path, URL)
    other = URL.replace("tuner:s3cret@127.0.0.1", "tuner:s3cret@10.0.0.1")
    with pytest.raises(ValueError, match=r"not in --storage 'postgresql://tuner:\*\*\*@10\.0"):
        _open(tmp_path, other)


def test_default_folder_does_not_resume_a_run_it_cannot_reconnect(tmp_path):
    cmd = ["autotile", "compare"]
    first = open_run_folder(None, str(tmp_path / "base"), SETTINGS, URL, cmd)
    second = open_run_folder(None, str(tmp_path / "base"), SETTINGS, None, cmd)
    assert not second.resumed and second.path != first.path
    third = open_run_folder(None, str(tmp_path / "base"), SETTINGS, URL, cmd)
    assert third.resumed and third.path == first.path and third.storage == URL


def test_sqlite_default_still_resumes_without_storage(tmp_path):
    first = _open(tmp_path, None)
    again = _open(tmp_path, None)
    assert again.resumed and again.storage == first.storage
    assert again.storage.startswith("sqlite:///")
