"""What the logged slow-compile tunings of v5 and v6 would have cost under session 12's rules.

CPU only, in-sample: the v5 and v6 kernels runs' ``autotune_kernels_tuning.csv`` (the
logs this change was designed on). For every autotile tuning whose first compile ran
past ``IN_PROCESS_PROBE_S`` (2 s: "pool" in v5, "shared" in v6; all layer norm), an
event simulation of the compile phase under three rules:

* ``v6 rule``: the shared rule of the v6 run (the first four configs one batch, the
  5th and 6th here after it), as a check of the simulation on v6 (it gives 6.55 and
  10.69 s for the logged 6.58 and 10.71 s); on v5, which ran the older "pool" rule,
  what the v6 rule would have done;
* ``one batch``: the v6 rule with all six configs in one batch (the prior was skipped,
  so the early stop cannot stop; before, the 5th and 6th compiled here one by one after
  the batch);
* ``one batch + fork server``: the same with workers forked from a fork server, ready
  ``--fork-ready`` seconds after their start (0.2: the server is up, a later tuning
  of the process; 3.5: the tuning that starts the server, whose imports cost about
  what a worker spawned alone needs, 3.3-3.5 s on the H200).

What each simulation takes from the logs, and what it assumes:

* ``T1``: the first compile, here (logged).
* ``here_s``: each other config's compile time in this process: logged where it
  compiled here; for a config only a worker compiled, its worker time less the
  worker's first-job cost ``--first-job`` (Triton's one-time costs in a fresh process:
  the harness's own warm-up of the main process took 2.0 s in v6; the v6 workers took
  2.1-2.2 s for configs that compile in 0.4-0.9 s here: about 1.2 s).
* a worker's job takes ``here_s`` plus ``--first-job`` on its first job.
* spawned workers are ready (all of them) at the time inferred from each case's log:
  v6 1792 x 6800: 7.9 s (its 4- and 8-warp jobs, 2.1 s each, ended just after 9.96 s,
  when this process had compiled 1 and 2 warps); v6 7168 x 3900: the workers took
  nothing from a 6.58 s compile phase, so at least 6.6 s (7.1 used); v5: 5.6 and 7.1 s
  (``compile_share_estimate.py``'s start-ups of 5.1 and 6.6 s after 0.5 s).
* shared rule: this process compiles from the front once the first compile ends; from
  ``IN_PROCESS_PROBE_S`` on, each ready worker takes the last untaken config; with
  nothing left to take, this process waits at most ``TAKE_OVER_AFTER_S`` (0.25 s) for
  the running jobs, then compiles (again) the first still running.

The wall estimate is the logged wall less the logged compile phase plus the simulated
one. Triton's wall is what ``triton.autotune`` took on the same case in the same run.

    python benchmarks/h200/compile_fork_estimate.py
    python benchmarks/h200/compile_fork_estimate.py --first-job 0.5 1.2 --fork-ready 0.2 3.5
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import compile_share_estimate as share

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RUNS = {"v5": DATA / "autotune_kernels_v5" / "autotune_kernels_tuning.csv",
        "v6": DATA / "autotune_kernels_v6" / "autotune_kernels_tuning.csv"}
#: when the spawned workers were ready, seconds after the tuning's start (see above)
SPAWN_READY_S = {"layer_norm:M1792xN6800:float16": 7.9, "layer_norm:M7168xN3900:bfloat16": 7.1,
                 "layer_norm:M1408xN7600:float16": 5.6, "layer_norm:M6656xN3700:bfloat16": 7.1}
#: The rule's constants as the v6 run used them: ``autotile.tuner._gpu_session``'s
#: ``POOL_START_AFTER_S``, ``IN_PROCESS_PROBE_S`` and ``TAKE_OVER_AFTER_S`` (seconds),
#: copied rather than imported so that the simulation stays that of the logged runs if
#: the library's values change.
POOL_START_AFTER_S = 0.5
IN_PROCESS_PROBE_S = 2.0
TAKE_OVER_AFTER_S = 0.25
#: Compile workers of the v5 and v6 tunings (five: docs/results/autotune_gpu.md, "The
#: workers were not ready"; as ``compile_share_estimate.py``).
N_WORKERS = 5
#: ``min_measured`` of ``autotile.autotune`` (default 4): the v6 rule's first batch.
MIN_MEASURED = 4


def simulate(t1: float, here_s: list[float], first_job_s: float, ready_s: float,
             n_workers: int = N_WORKERS) -> tuple[float, list[str]]:
    """End of a shared batch's compile phase, and where each config after the first compiled.

    ``here_s[j]``: config ``j``'s compile time in this process (a worker needs
    ``first_job_s`` more for its first job); the workers are all ready at ``ready_s`` and
    take jobs from ``max(ready_s, IN_PROCESS_PROBE_S)`` on (the hand-off).
    """
    return share.simulate(t1, here_s, [h + first_job_s for h in here_s],
                          max(ready_s, IN_PROCESS_PROBE_S), n_workers, later_s=here_s,
                          take_over_s=TAKE_OVER_AFTER_S)


def case_times(row: dict[str, str], first_job_s: float) -> tuple[list[str], list[float]]:
    """The configs in compile order (the user's: the prior was skipped) and their here times."""
    times = json.loads(row["autotile_times"])
    configs = list(times)
    here = []
    for c in configs:
        d = times[c]
        s = float(d["compile_s"])
        by = d.get("compiled_by") or ("here" if c == configs[0] else "pool")
        here.append(s if by == "here" else max(0.05, s - first_job_s))
    return configs, here


def estimate(run: str, row: dict[str, str], triton_wall: float, first_job_s: float,
             fork_ready: list[float]) -> dict[str, object]:
    """One logged tuning's compile phase and wall under the three rules (seconds).

    Parameters
    ----------
    run : str
        ``"v5"`` or ``"v6"``.
    row : dict of str to str
        The tuning's row of ``autotune_kernels_tuning.csv`` (``case`` must be a key of
        :data:`SPAWN_READY_S`).
    triton_wall : float
        ``triton.autotune``'s wall on the same case, seconds.
    first_job_s : float
        A worker's extra time on its first job, seconds.
    fork_ready : list of float
        Fork-server workers' ready times after their start, seconds.

    Returns
    -------
    dict
        ``old`` (v6 rule), ``one`` (one batch), ``fork`` (ready time -> end) compile
        phases, the logged ``wall`` and ``base`` (wall less the logged compile phase),
        ``triton`` and the configs compiled by workers (``n_pool_one``, ``n_pool_fork``).

    Raises
    ------
    KeyError
        If the case has no entry in :data:`SPAWN_READY_S`.
    """
    configs, here = case_times(row, first_job_s)
    t1, rest = here[0], here[1:]
    ready = SPAWN_READY_S[row["case"]]
    # the run's rule: the first MIN_MEASURED were the batch, the rest compiled here after
    head = rest[:MIN_MEASURED - 1]
    old_end, _ = simulate(t1, head, first_job_s, ready)
    old = old_end + sum(rest[MIN_MEASURED - 1:])
    one, where_one = simulate(t1, rest, first_job_s, ready)
    fork = {r: simulate(t1, rest, first_job_s, POOL_START_AFTER_S + r) for r in fork_ready}
    phases = json.loads(row["phase_s"])
    wall = float(row["wall_s"])
    base = wall - float(phases["compile"])
    return {"run": run, "case": row["case"], "first_job_s": first_job_s, "T1": t1,
            "logged_compile": float(phases["compile"]), "old": old, "one": one,
            "fork": {r: e for r, (e, _) in fork.items()}, "wall": wall, "base": base,
            "triton": triton_wall,
            "n_pool_one": where_one.count("pool"),
            "n_pool_fork": {r: w.count("pool") for r, (_, w) in fork.items()}}


def main() -> None:
    """Print the markdown table of every slow-compile tuning of v5 and v6."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--first-job", type=float, nargs="+", default=[0.5, 1.2])
    ap.add_argument("--fork-ready", type=float, nargs="+", default=[0.2, 3.5])
    args = ap.parse_args()
    if min(args.first_job + args.fork_ready) < 0:
        ap.error(f"--first-job and --fork-ready must be >= 0 s, got {args.first_job} and "
                 f"{args.fork_ready}")
    fr = ", ".join(f"{r:g}" for r in args.fork_ready)
    print(f"| run | case | first-job s | T1 s | compile logged s | v6 rule s | one batch "
          f"s (by workers) | + fork server s, ready {fr} s | wall logged s | wall est. one "
          f"batch s | wall est. + fork s | Triton wall s |")
    print("|" + "---|" * 12)
    for run, path in RUNS.items():
        rows = list(csv.DictReader(path.open()))
        for a in rows:
            if a["tuner"] != "autotile" or a["compile_mode"] not in ("pool", "shared"):
                continue
            t = next(r for r in rows if r["case"] == a["case"] and r["tuner"] == "triton")
            for fj in args.first_job:
                e = estimate(run, a, float(t["wall_s"]), fj, args.fork_ready)
                fork = "; ".join(f"{e['fork'][r]:.2f} ({e['n_pool_fork'][r]})"  # type: ignore[index]
                                 for r in args.fork_ready)
                fork_wall = "; ".join(f"{e['base'] + e['fork'][r]:.2f}"  # type: ignore[index,operator]
                                      for r in args.fork_ready)
                print(f"| {run} | {e['case']} | {fj:g} | {e['T1']:.2f} | "
                      f"{e['logged_compile']:.2f} | {e['old']:.2f} | {e['one']:.2f} "
                      f"({e['n_pool_one']}) | {fork} | {e['wall']:.2f} | "
                      f"{e['base'] + e['one']:.2f} | {fork_wall} | {e['triton']:.2f} |")  # type: ignore[operator]


if __name__ == "__main__":
    main()
