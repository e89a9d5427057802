"""Stress test: several worker processes on one study, some killed, resumed from another host.

    python benchmarks/workers/bench_workers.py [--runs 10] [--workers 4] [--budget 80]
                                        [--storages sqlite,journal,postgresql]

Each run starts ``--workers`` processes that all call ``autotile.tune`` with
the same storage and study name. In every second run one random worker is
SIGKILLed at a random moment. When the others have returned, the study is
resumed by one more worker whose hostname differs (``unshare --uts``, as
root; otherwise ``socket.gethostname`` is patched in that process). Each
measurement appends its config to the worker's log only once it is
complete. A run is checked for

* crashes: workers (other than the killed one) that exit non-zero;
* repeats: configs whose measurement completed more than once;
* lost trials: trials of the study (abandoned ones aside) not finished;
* budget: the number of counted trials, which must equal ``--budget``.

PostgreSQL runs on a throwaway local server (``benchmarks/workers/_postgres.py``),
or on ``$AUTOTILE_TEST_POSTGRES_URL``. The searchers rotate over
``random``, ``model``, ``tpe`` and ``evolutionary``. The short version of
this test is ``tests/search/test_workers.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


REPO = Path(__file__).resolve().parents[2]

WORKER = r'''
import os, socket, sys, time
if len(sys.argv) > 8 and sys.argv[8]:
    socket.gethostname = lambda: sys.argv[8]   # a second "host" without unshare
from autotile.measure import Measurer, MeasureResult
from autotile.search import open_storage, tune
from autotile.space import Divisors, Permutation, Space

space = Space([Divisors("a", 64), Divisors("b", 64), Divisors("c", 64),
               Permutation("order", ("x", "y", "z"))], name="stress")
log = open(sys.argv[4], "a")

class Sleepy(Measurer):
    metrics = ("cost",)
    objective = "cost"
    space = space
    def _measure(self, config):
        time.sleep(float(sys.argv[6]))
        cost = float(space.index_of(config) * 7919 % 1009)
        log.write(str(config) + "\n"); log.flush()   # only once the measurement is complete
        return MeasureResult(str(config), "ok", {"cost": cost})

storage = open_storage(sys.argv[1], heartbeat_interval=1, grace_period=int(sys.argv[7]))
tune(space, Sleepy(), sys.argv[5], budget=int(sys.argv[3]), seed=0, progress=False,
     storage=storage, study_name=sys.argv[2])
'''

SEARCHERS = ("random", "model", "tpe", "evolutionary")


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _worker_cmd(script: Path, url: str, study: str, budget: int, log: Path, searcher: str,
                sleep_s: float, grace_s: int, host: str = "") -> list[str]:
    return [sys.executable, str(script), url, study, str(budget), str(log), searcher,
            str(sleep_s), str(grace_s), host]


def _other_host(cmd: list[str], host: str) -> list[str]:
    """``cmd`` run under another hostname: ``unshare --uts`` if allowed, else a patched one."""
    probe = subprocess.run(["unshare", "--uts", "true"], capture_output=True) \
        if shutil.which("unshare") else None
    if probe is not None and probe.returncode == 0:
        return ["unshare", "--uts", "sh", "-c",
                f"hostname {host} && exec \"$@\"", "sh", *cmd[:-1], ""]
    return [*cmd[:-1], host]


def check_study(url: str, study: str, budget: int, logs: list[Path],
                victim_log: Path | None = None) -> dict[str, Any]:
    """Read the study back and count repeats, lost trials and the budget.

    A config measured by the killed worker whose trial was abandoned (killed
    after the measurement, before its result was stored) and measured again
    by the trial's retry is counted as ``remeasured_after_kill``, not as a
    repeat: its first result died with the process.
    """
    import optuna

    from autotile.search import open_storage
    from autotile.search._optimize import FINISHED, counted_trials
    from autotile.search._params import trial_config_text

    st = optuna.load_study(study_name=study, storage=open_storage(url))
    trials = st.get_trials(deepcopy=False)
    counted = counted_trials(trials)
    abandoned = {trial_config_text(t) for t in trials if t not in counted}
    measured: Counter[str] = Counter()
    for log in logs:
        if log.exists():
            measured.update(line for line in log.read_text().splitlines() if line)
    by_victim = set(victim_log.read_text().splitlines()) if victim_log is not None \
        and victim_log.exists() else set()
    killed = {c for c, n in measured.items() if n > 1 and c in abandoned and c in by_victim}
    configs = Counter(t.user_attrs.get("config") for t in counted if "cached_from"
                      not in t.user_attrs)
    return {
        "abandoned_by": sorted({str(t.system_attrs.get("autotile:worker", "?")).rpartition(
            ":")[2] for t in trials if t not in counted}),
        "n_trials": len(trials),
        "n_counted": len(counted),
        "n_abandoned": len(trials) - len(counted),
        "lost": sum(t.state not in FINISHED for t in counted),
        "budget_exact": len(counted) == budget,
        "repeats": sum(n - 1 - (c in killed) for c, n in measured.items() if n > 1),
        "remeasured_after_kill": len(killed),
        "config_in_two_trials": sum(n - 1 for c, n in configs.items() if c and n > 1),
        "n_measured": sum(measured.values()),
    }


def one_run(url: str, workdir: Path, run: int, n_workers: int, budget: int, kill: bool,
            searcher: str, sleep_s: float = 0.02, grace_s: int = 10,
            rng: random.Random | None = None) -> dict[str, Any]:
    """One run: ``n_workers`` workers, maybe one killed, then a resume from another host."""
    rng = rng or random.Random(run)
    script = workdir / "worker.py"
    script.write_text(WORKER)
    study = f"stress-{run}-{uuid.uuid4().hex[:8]}"
    logs = [workdir / f"{study}-w{i}.log" for i in range(n_workers + 1)]
    t0 = time.perf_counter()
    procs = [subprocess.Popen(_worker_cmd(script, url, study, budget, logs[i], searcher,
                                          sleep_s, grace_s),
                              env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for i in range(n_workers)]
    victim = None
    if kill:
        victim = rng.randrange(n_workers)
        # a random moment while the study runs: after 1-60 % of the trials are measured
        target = rng.randint(max(1, budget // 100), max(2, budget * 6 // 10))
        deadline = time.time() + 120
        while time.time() < deadline and procs[victim].poll() is None:
            done = sum(len(p.read_text().splitlines()) for p in logs if p.exists())
            if done >= target:
                break
            time.sleep(0.005)
        procs[victim].send_signal(signal.SIGKILL)
    outputs = []
    crashes = 0
    for i, p in enumerate(procs):
        out, _ = p.communicate(timeout=600)
        outputs.append(out.decode(errors="replace"))
        if i != victim and p.returncode != 0:
            crashes += 1
    t_workers = time.perf_counter() - t0
    resume = _other_host(_worker_cmd(script, url, study, budget, logs[-1], searcher, sleep_s,
                                     grace_s, "other-host"), "other-host")
    r = subprocess.run(resume, env=_env(), capture_output=True, text=True, timeout=600)
    crashes += r.returncode != 0
    out = check_study(url, study, budget, logs,
                      logs[victim] if victim is not None else None)
    out.update(run=run, searcher=searcher, killed=victim is not None, crashes=crashes,
               victim_pid=str(procs[victim].pid) if victim is not None else None,
               wall_s=round(time.perf_counter() - t0, 2), workers_s=round(t_workers, 2),
               resumed_measured=len(logs[-1].read_text().splitlines()) if logs[-1].exists()
               else 0)
    if crashes:
        out["errors"] = [o[-600:] for o in outputs + [r.stdout + r.stderr] if "Error" in o]
    return out


def storage_url(kind: str, workdir: Path, pg_url: str | None) -> str:
    """A fresh storage of ``kind`` for one run (a new file, or a shared server)."""
    if kind == "sqlite":
        return f"sqlite:///{workdir / f'studies-{uuid.uuid4().hex[:6]}.db'}"
    if kind == "journal":
        return f"journal://{workdir / f'studies-{uuid.uuid4().hex[:6]}.log'}"
    assert pg_url is not None
    return pg_url


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--budget", type=int, default=80)
    ap.add_argument("--storages", default="sqlite,journal,postgresql")
    ap.add_argument("--sleep", type=float, default=0.1, help="seconds per measurement")
    ap.add_argument("--json", default=None, help="write every run's figures here")
    args = ap.parse_args()
    sys.path[:0] = [str(REPO), str(REPO / "benchmarks" / "workers")]  # this checkout's autotile
    import _postgres

    workdir = Path(tempfile.mkdtemp(prefix="autotile-workers-"))
    pg_url = os.environ.get(_postgres.ENV_VAR)
    pg_dir = None
    kinds = args.storages.split(",")
    if "postgresql" in kinds and not pg_url:
        pg_dir = Path(tempfile.mkdtemp(prefix="autotile-pg-"))  # not under workdir (0700)
        pg_url = _postgres.start(pg_dir)
    rows = []
    try:
        for kind in kinds:
            for run in range(args.runs):
                searcher = SEARCHERS[run % len(SEARCHERS)]
                url = storage_url(kind, workdir, pg_url)
                row = one_run(url, workdir, run, args.workers, args.budget, kill=run % 2 == 1,
                              searcher=searcher, sleep_s=args.sleep)
                row["storage"] = kind
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "errors"}), flush=True)
                for e in row.get("errors", []):
                    print("   ", e.replace("\n", "\n    "))
    finally:
        if pg_dir is not None:
            _postgres.stop(pg_dir)
            shutil.rmtree(pg_dir, ignore_errors=True)
    print(f"\nmachine: {platform.platform()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}")
    print(f"{'storage':<11} {'runs':>4} {'killed':>6} {'crashes':>7} {'repeats':>7} "
          f"{'lost':>4} {'at budget':>9} {'abandoned':>9} {'re-kill':>7} {'mean s':>6}")
    for kind in kinds:
        rs = [r for r in rows if r["storage"] == kind]
        print(f"{kind:<11} {len(rs):>4} {sum(r['killed'] for r in rs):>6} "
              f"{sum(r['crashes'] for r in rs):>7} {sum(r['repeats'] for r in rs):>7} "
              f"{sum(r['lost'] for r in rs):>4} {sum(r['budget_exact'] for r in rs):>6}/"
              f"{len(rs):<2} {sum(r['n_abandoned'] for r in rs):>9} "
              f"{sum(r['remeasured_after_kill'] for r in rs):>7} "
              f"{sum(r['wall_s'] for r in rs) / max(len(rs), 1):>6.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
