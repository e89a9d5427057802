"""The journal's write lock dies with the worker that holds it."""

import multiprocessing as mp
import os
import signal
import time

from autotile.search._storage import ProcessFileLock


def _hold_forever(path, ready):
    lock = ProcessFileLock(path)
    lock.acquire()
    ready.set()
    time.sleep(600)


def _hold_briefly(path, n, out):
    lock = ProcessFileLock(path)
    for _ in range(n):
        lock.acquire()
        with open(out, "a") as f:
            f.write(f"{os.getpid()} in\n")
            f.flush()
            time.sleep(0.001)
            f.write(f"{os.getpid()} out\n")
        lock.release()


def test_a_killed_holder_frees_the_lock_at_once(tmp_path):
    path = str(tmp_path / "study.log")
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold_forever, args=(path, ready))
    holder.start()
    assert ready.wait(60)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(10)
    lock = ProcessFileLock(path)
    t0 = time.monotonic()
    assert lock.acquire()
    # Optuna's own file locks wait a 30 s grace period here
    assert time.monotonic() - t0 < 5.0
    lock.release()


def test_two_processes_never_hold_it_together(tmp_path):
    path = str(tmp_path / "study.log")
    out = str(tmp_path / "order.txt")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_hold_briefly, args=(path, 50, out)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    lines = open(out).read().split("\n")[:-1]
    assert len(lines) == 300
    for a, b in zip(lines[::2], lines[1::2]):
        pid_a, what_a = a.split()
        pid_b, what_b = b.split()
        assert (what_a, what_b) == ("in", "out") and pid_a == pid_b


def test_release_without_holding_is_refused(tmp_path):
    lock = ProcessFileLock(str(tmp_path / "study.log"))
    try:
        lock.release()
    except RuntimeError as exc:
        assert "did not possess lock" in str(exc)
    else:
        raise AssertionError("release of an unheld lock passed")
