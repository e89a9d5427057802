"""``autotile compare``'s run folders: never overwrite a report, resume an interrupted run.

Without ``--out`` every comparison gets a new folder
``autotile-results/compare/<YYYYmmdd-HHMMSS>/`` (and ``latest`` points to the
newest), unless an interrupted run with the same settings is there: then
that one is resumed. ``--out DIR`` names the folder itself: a finished
report there is kept unless ``--force`` is given, an interrupted run with
the same settings is resumed, one with other settings is refused. The
folder's ``run.json`` records the command, the settings, the storage and
whether the run finished; a database password in the storage URL is stored
masked (``***``), so resuming such a run needs ``--storage`` again.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

__all__ = ["RunFolder", "open_run_folder", "REPORT_FILES"]

#: Files a finished report leaves in its folder (a folder holding any is a report).
REPORT_FILES = ("report.html", "summary.txt", "summary.csv", "result.json", "curves.png",
                "curves.csv", "index.html", "summary.md")
_STORE = "studies.db"


class RunFolder:
    """One comparison's folder and its ``run.json``.

    Attributes
    ----------
    path : Path
        The folder.
    resumed : bool
        Whether an interrupted run in it is being resumed.
    record : dict
        The contents of ``run.json``.
    """

    def __init__(self, path: Path, record: dict[str, Any], resumed: bool,
                 url: str | None = None) -> None:
        self.path = path
        self.record = record
        self.resumed = resumed
        self._url = url

    @property
    def storage(self) -> str:
        """The storage URL of the run's studies (with its password: never written)."""
        return self._url or str(self.record["storage"])

    def save(self) -> None:
        """Write ``run.json`` (atomically)."""
        tmp = self.path / "run.json.tmp"
        tmp.write_text(json.dumps(self.record, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, self.path / "run.json")

    def finish(self) -> None:
        """Mark the run done."""
        self.record["status"] = "done"
        self.record["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        self.save()


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _mask(url: Any) -> str:
    from autotile.search._study_args import _hide_password

    return _hide_password(str(url))


def _masked_command(command: list[str]) -> list[str]:
    """``command`` with the password of every ``--storage`` URL masked."""
    out, after_storage = [], False
    for arg in command:
        if after_storage:
            arg, after_storage = _mask(arg), False
        elif arg == "--storage":
            after_storage = True
        elif arg.startswith("--storage="):
            arg = "--storage=" + _mask(arg[len("--storage="):])
        out.append(arg)
    return out


def _same_storage(storage: str | None, old: dict[str, Any]) -> bool:
    """Whether ``--storage`` (None: not given) can resume a run recorded as ``old``."""
    recorded = str(old.get("storage"))
    if storage is None:  # the recorded URL must be usable as it is: no masked password
        return ":***@" not in recorded
    return _mask(storage) == recorded


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    keys = sorted(set(old) | set(new))
    return [f"{k}={old.get(k)!r} then, {new.get(k)!r} now" for k in keys
            if old.get(k) != new.get(k)]


def _new(path: Path, settings: dict[str, Any], storage: str | None,
         command: list[str]) -> RunFolder:
    path.mkdir(parents=True, exist_ok=True)
    url = storage or f"sqlite:///{(path / _STORE).absolute()}"
    record = {"command": _masked_command(command), "settings": settings,
              "storage": _mask(url), "status": "running",
              "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    folder = RunFolder(path, record, resumed=False, url=url)
    folder.save()
    return folder


def _link_latest(base: Path, target: Path) -> None:
    link = base / "latest"
    try:
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target.name, target_is_directory=True)
    except OSError:
        pass  # a file system without symlinks: the folder name is printed anyway


def open_run_folder(out: str | None, default_base: str, settings: dict[str, Any],
                    storage: str | None, command: list[str], force: bool = False,
                    resume: bool = True) -> RunFolder:
    """Create or reopen the folder a comparison writes to.

    Parameters
    ----------
    out : str or None
        ``--out``: the folder itself; None for a new timestamped folder under
        ``default_base``.
    default_base : str
        Where timestamped folders go.
    settings : dict
        What makes two runs the same run (sources, objective, searchers,
        budget, seeds, direction).
    storage : str or None
        ``--storage``; None for ``studies.db`` in the folder.
    command : list of str
        The command line, recorded.
    force : bool, default=False
        Replace a finished report (or another run) in ``out``.
    resume : bool, default=True
        Resume an interrupted run with the same settings.

    Returns
    -------
    RunFolder
        The folder, ``resumed`` when an interrupted run goes on.

    Raises
    ------
    ValueError
        If ``out`` holds a finished report or another run and ``force`` is not
        given (the message says what is there and what to pass).
    """
    if out is not None:
        path = Path(out)
        old = _read(path) if path.is_dir() else None
        if old is not None and not force:
            diffs = _differences(old.get("settings") or {}, settings)
            if old.get("status") != "done" and not diffs and resume and _same_storage(
                    storage, old):
                folder = RunFolder(path, old, resumed=True, url=storage)
                folder.record["command"] = _masked_command(command)
                folder.save()
                return folder
            other = not _same_storage(storage, old)
            where = (f"not in --storage {_mask(storage)!r}" if storage is not None else
                     "whose password is not recorded: pass that --storage again to resume it")
            what = ("a finished report" if old.get("status") == "done" else
                    "an interrupted run with other settings (" + "; ".join(diffs) + ")"
                    if diffs else f"an interrupted run stored in {_mask(old.get('storage'))!r}, "
                    f"{where}" if other else
                    "an interrupted run")
            raise ValueError(
                f"--out {out!r} holds {what} from {old.get('started', 'an earlier run')}; "
                f"pass --force to replace it, or another --out (without --out every run gets "
                f"a new folder)")
        if old is None and path.is_dir() and any((path / f).exists() for f in REPORT_FILES):
            if not force:
                raise ValueError(f"--out {out!r} holds a report; pass --force to replace it, "
                                 f"or another --out")
        if force and path.is_dir():
            for name in (*REPORT_FILES, _STORE, "run.json"):
                (path / name).unlink(missing_ok=True)
            for child in path.iterdir():
                if child.is_dir() and (child / "report.html").exists():
                    shutil.rmtree(child)
        return _new(path, settings, storage, command)
    base = Path(default_base)
    base.mkdir(parents=True, exist_ok=True)
    if resume:
        runs = sorted((p for p in base.iterdir() if p.is_dir() and not p.is_symlink()),
                      reverse=True)
        for p in runs:
            old = _read(p)
            if (old is not None and old.get("status") != "done"
                    and not _differences(old.get("settings") or {}, settings)
                    and _same_storage(storage, old)):
                folder = RunFolder(p, old, resumed=True, url=storage)
                folder.record["command"] = _masked_command(command)
                folder.save()
                _link_latest(base, p)
                return folder
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = base / stamp
    k = 2
    while path.exists():
        path = base / f"{stamp}-{k}"
        k += 1
    folder = _new(path, settings, storage, command)
    _link_latest(base, path)
    return folder
