"""What the logged pool tunings would have cost with the shared compile rule (CPU, in-sample).

Up to session 11, a tuning whose first compile (in this process) ran past
``IN_PROCESS_PROBE_S`` (2 s) gave the rest of its batch to the compile pool's workers
(``compile_mode`` "pool"); since then the rest is shared (``compile_mode`` "shared"):
this process compiles it in order once the first compile ends, a worker takes a
config from the end of the batch only once it is ready, and this process never waits
on a worker (:meth:`autotile.tuner._gpu_session.GpuSession._share`).

This reads the v3, v4 and v5 kernels runs' ``autotune_kernels_tuning.csv`` and, for
every case that used the pool, estimates from its logged numbers:

* ``serial_s``: the compile phase had every config compiled in this process: the
  first compile ``T1`` plus the rest's in-process compile time ``R``. ``R`` was not
  logged (the rest ran in the workers): it is taken from ``triton.autotune``'s wall
  time over the same list, which compiled all of it in one process, less ``T1`` and
  less Triton's timing overhead (``--triton-overhead``, seconds: 0.9-1.25 s over the
  compile times in the v4 and v5 "here" layer-norm cases: Triton's wall minus
  autotile's summed compiles). Each rest config's share of ``R`` is proportional to
  its logged compile time in the worker.
* ``pool_ready_s``: when the workers could take a job. Inferred from the pool cases'
  own phases: the compile phase ended when the last worker job did, so a worker was
  ready no later than ``compile phase - longest worker job``; with workers started at
  ``POOL_START_AFTER_S`` (0.5 s) that is a start-up of 5.1 s (layer norm 1408 x 7600)
  and 6.6 s (6656 x 3700) in v5, against 3.3-3.5 s for a worker started alone
  (``diag_records.py --part compile``). ``--startup`` gives the values tried.
* ``shared_s``: an event simulation of the new rule: this process compiles the rest
  in order after ``T1`` (in-process times as above); from ``pool_ready_s`` each of up
  to 5 workers takes the last untaken config and needs its logged worker compile
  time; once nothing is left to take, this process waits at most 0.25 s
  (``TAKE_OVER_AFTER_S``) for the workers, then compiles any config a worker still
  runs. The compile phase ends when this process is done.

The wall estimate is the logged wall less the logged compile phase plus
``shared_s`` (v3 logged no phases: its compile phase is taken as its summed compile
times, as that run's pool compiled after the first compile). These are in-sample
estimates on the logs that motivated the rule, not measurements.

    python benchmarks/h200/compile_share_estimate.py            # the three runs
    python benchmarks/h200/compile_share_estimate.py --v5 PATH  # another v5 CSV
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RUNS = {"v3": DATA / "autotune_kernels_v3" / "call1" / "autotune_kernels_tuning.csv",
        "v4": DATA / "autotune_kernels_v4" / "autotune_kernels_tuning.csv",
        "v5": DATA / "autotune_kernels_v5" / "autotune_kernels_tuning.csv"}
POOL_START_AFTER_S = 0.5
TAKE_OVER_AFTER_S = 0.25
N_WORKERS = 5


def compile_order(row: dict[str, str]) -> list[tuple[str, float]]:
    """``(config, compile_s)`` in the order the tuning compiled them (model order if ranked)."""
    times = json.loads(row["autotile_times"])
    model = json.loads(row.get("model_times") or "{}")
    configs = list(times)
    if model and "skipped" not in row.get("prior_note", ""):
        configs.sort(key=lambda c: model[c] if model.get(c) is not None else float("inf"))
    return [(c, float(times[c]["compile_s"])) for c in configs]


def simulate(t1: float, here_s: list[float], pool_s: list[float], ready_s: float,
             n_workers: int = N_WORKERS, later_s: list[float] | None = None,
             take_over_s: float = TAKE_OVER_AFTER_S) -> tuple[float, list[str]]:
    """End of the compile phase under the shared rule, and where each rest config compiled.

    ``here_s[j]`` and ``pool_s[j]``: config ``j``'s compile time in this process and in a
    worker as that worker's first job; ``later_s[j]``: in a worker that already ran a job
    (None: ``pool_s``, every job priced as a first one); ``ready_s``: when every worker
    can take its first job; ``take_over_s``: the one wait for the workers' running
    compiles before this process compiles them again (seconds).
    """
    later = pool_s if later_s is None else later_s
    n = len(here_s)
    front, back = 0, n - 1
    where = ["" for _ in range(n)]
    done_at = [0.0] * n
    free = [ready_s] * n_workers  # when each worker can take its next job
    first = [True] * n_workers
    now = t1  # this process is busy until then
    waited = False
    while True:
        # a worker free before this process's next take gets the last untaken config
        while front <= back and min(free) <= now:
            k = free.index(min(free))
            cost = pool_s[back] if first[k] else later[back]
            first[k] = False
            where[back], done_at[back] = "pool", free[k] + cost
            free[k] = done_at[back]
            back -= 1
        if front <= back:
            where[front] = "here"
            now += here_s[front]
            front += 1
            continue
        running = [j for j in range(n) if where[j] == "pool" and done_at[j] > now]
        if running and not waited:  # one wait of at most take_over_s
            waited = True
            now = min(max(done_at[j] for j in running), now + take_over_s)
            continue
        if not running:
            break
        j = min(running)
        where[j] = "here"  # taken over: compiled again here
        now += here_s[j]
    end = max([now] + [done_at[j] for j in range(n) if where[j] == "pool"])
    return end, where


def simulate_pool(t1: float, pool_s: list[float], ready_s: float,
                  n_workers: int = N_WORKERS) -> float:
    """End of the compile phase under the session-11 rule: the workers compile all the rest.

    They take the configs in order from ``ready_s``; the phase ends with the last of
    them or with the first compile, whichever is later.
    """
    free = [ready_s] * n_workers
    for s in pool_s:
        k = free.index(min(free))
        free[k] += s
    return max([t1] + free)


def estimate(run: str, path: Path, overheads: list[float], startups: list[float]
             ) -> list[dict[str, object]]:
    """One row per pool case of ``path`` and per (overhead, start-up) pair."""
    rows = list(csv.DictReader(path.open()))
    out = []
    for a in rows:
        if a["tuner"] != "autotile" or a["compile_mode"] != "pool":
            continue
        t = next(r for r in rows if r["case"] == a["case"] and r["tuner"] == "triton")
        order = compile_order(a)
        t1, rest = order[0][1], [s for _, s in order[1:]]
        phases = json.loads(a["phase_s"]) if a.get("phase_s") else None
        compile_logged = phases["compile"] if phases else sum(s for _, s in order)
        wall = float(a["wall_s"])
        for ov in overheads:
            r_serial = max(0.0, float(t["wall_s"]) - t1 - ov)
            here_s = [r_serial * s / sum(rest) for s in rest]
            for su in startups:
                end, where = simulate(t1, here_s, rest, POOL_START_AFTER_S + su)
                old = simulate_pool(t1, rest, POOL_START_AFTER_S + su)
                out.append({"run": run, "case": a["case"], "T1_s": t1,
                            "worker_s": rest, "triton_wall_s": float(t["wall_s"]),
                            "triton_overhead_s": ov, "startup_s": su,
                            "R_serial_s": r_serial, "serial_s": t1 + r_serial,
                            "compile_logged_s": compile_logged, "shared_s": end, "pool_s": old,
                            "n_by_pool": where.count("pool"), "wall_logged_s": wall,
                            "wall_est_s": wall - compile_logged + end})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for run, path in RUNS.items():
        ap.add_argument(f"--{run}", type=Path, default=path)
    ap.add_argument("--triton-overhead", type=float, nargs="+", default=[0.9, 1.25])
    ap.add_argument("--startup", type=float, nargs="+", default=[3.4, 5.1, 6.6])
    args = ap.parse_args()
    sus = ", ".join(f"{s:g}" for s in args.startup)
    print(f"| run | case | T1 s | worker compile_s (rest, in order) | R serial s | serial s | "
          f"compile phase logged s | old rule s (start-up {sus}) | new rule s (start-up "
          f"{sus}) | wall logged s | wall est. s | Triton wall s |")
    print("|" + "---|" * 12)
    for run in RUNS:
        rows = estimate(run, getattr(args, run), args.triton_overhead, args.startup)
        for case in dict.fromkeys(r["case"] for r in rows):
            rs = [r for r in rows if r["case"] == case]
            r0 = rs[0]

            def span(key: str, rs: list[dict[str, object]] = rs) -> str:
                vs = [float(r[key]) for r in rs]  # type: ignore[arg-type]
                lo, hi = min(vs), max(vs)
                return f"{lo:.2f}" if hi - lo < 0.005 else f"{lo:.2f}-{hi:.2f}"

            def per_startup(key: str, rs: list[dict[str, object]] = rs) -> str:
                return "; ".join(span(key, [r for r in rs if r["startup_s"] == su])
                                 for su in args.startup)

            n_pool = "/".join(str(max(int(r["n_by_pool"]) for r in rs if r["startup_s"] == su))
                              for su in args.startup)
            print(f"| {run} | {case} | {r0['T1_s']:.2f} | "
                  f"{', '.join(f'{s:.2f}' for s in r0['worker_s'])} | "  # type: ignore[union-attr]
                  f"{span('R_serial_s')} | {span('serial_s')} | {r0['compile_logged_s']:.2f} | "
                  f"{per_startup('pool_s')} | {per_startup('shared_s')} (at most {n_pool} by "
                  f"workers) | {r0['wall_logged_s']:.2f} | {span('wall_est_s')} | "
                  f"{r0['triton_wall_s']:.2f} |")

if __name__ == "__main__":
    main()
