"""A throwaway local PostgreSQL server for the multi-worker tests and benchmarks.

    python benchmarks/workers/_postgres.py start DIR  # prints export AUTOTILE_TEST_POSTGRES_URL=...
    python benchmarks/workers/_postgres.py stop DIR

``start`` runs ``initdb`` in ``DIR/data`` (trust authentication, superuser
``autotile``), starts the server on 127.0.0.1 at a free port and creates the
database ``autotile``. As root the server runs as the ``postgres`` user.
The binaries are found on PATH or in ``/usr/lib/postgresql/*/bin`` (Debian's
``apt-get install postgresql``). ``.ci/run`` and ``tests/search/conftest.py``
use it.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

ENV_VAR = "AUTOTILE_TEST_POSTGRES_URL"


def bindir() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``createdb``, or None."""
    found = shutil.which("initdb")
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    if found:
        candidates.append(str(Path(found).parent))
    for d in candidates:
        if all(os.path.exists(os.path.join(d, b)) for b in ("initdb", "pg_ctl", "createdb")):
            return Path(d)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(cmd: list[str], as_postgres: bool, **kw: object) -> subprocess.CompletedProcess[str]:
    if as_postgres:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120, **kw)


def start(directory: str | os.PathLike[str]) -> str:
    """Start a server with its files in ``directory``; return its SQLAlchemy URL.

    Raises
    ------
    RuntimeError
        If the binaries are missing or the server does not start (the
        message says why).
    """
    bins = bindir()
    if bins is None:
        raise RuntimeError("PostgreSQL is not installed (no initdb/pg_ctl on PATH or in "
                           "/usr/lib/postgresql/*/bin; `apt-get install postgresql`)")
    root = os.geteuid() == 0
    d = Path(directory).resolve()
    d.mkdir(parents=True, exist_ok=True)
    if root:
        try:
            shutil.chown(d, "postgres", "postgres")
        except (LookupError, PermissionError) as exc:
            raise RuntimeError(f"running as root but cannot hand {d} to the postgres user: "
                               f"{exc}") from None
    port = _free_port()
    try:
        _run([str(bins / "initdb"), "-D", str(d / "data"), "-A", "trust", "-U", "autotile",
              "--no-sync", "-E", "UTF8"], root)
        _run([str(bins / "pg_ctl"), "-D", str(d / "data"), "-l", str(d / "server.log"), "-w",
              "-o", f"-h 127.0.0.1 -p {port} -k {d} -c fsync=off -c max_connections=200",
              "start"], root)
        _run([str(bins / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "autotile",
              "autotile"], root)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, FileNotFoundError) as exc:
        detail = getattr(exc, "stderr", "") or ""
        raise RuntimeError(f"PostgreSQL did not start in {d}: {exc} {detail.strip()[-300:]}") \
            from None
    return f"postgresql+psycopg2://autotile@127.0.0.1:{port}/autotile"


def stop(directory: str | os.PathLike[str]) -> None:
    """Stop the server whose files are in ``directory`` (nothing if none runs there)."""
    bins = bindir()
    data = Path(directory).resolve() / "data"
    if bins is None or not (data / "postmaster.pid").exists():
        return
    subprocess.run([*(["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []),
                    str(bins / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                   capture_output=True, timeout=60)


if __name__ == "__main__":
    what, where = sys.argv[1], sys.argv[2]
    if what == "start":
        print(f"export {ENV_VAR}={start(where)}")
    else:
        stop(where)
