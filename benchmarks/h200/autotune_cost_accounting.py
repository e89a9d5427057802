"""Where ``@autotune``'s and ``triton.autotune``'s tuning wall time went (CPU, logged data).

Reads a run's ``autotune_kernels_tuning.csv`` (``benchmarks/h200/autotune_kernels_gpu.py
--part time``) and splits each case's wall time into what the run logged and what the
protocol implies:

* compile: the sum of autotile's logged per-config ``compile_s`` (wall time when it
  compiled in this process, ``compile_mode`` "here"; with the pool the compiles ran in
  parallel and the sum exceeds their wall time);
* timing: ``do_bench`` calls times their budget. A call with ``warmup`` and ``rep``
  milliseconds runs the kernel for about ``warmup + rep`` ms (the first pass: 25 + 100;
  each of ``retime_rounds`` rounds: a third of each), so the first pass costs 0.125 s a
  config and re-timing a candidate 0.125 s in all. The re-timed candidates and their
  rounds are in ``autotile_times``;
* rest: the wall time left, which holds the model prior's ranking (``model_times``
  tells how many configs it ranked), the result checks and the pool's start and stop.

``triton.autotune`` is split the same way: 6 ``do_bench(25, 100)`` calls, the rest is
compiles and Triton's own overhead. The "new protocol" column gives what the timings
cost now, from the same logged counts: each first-pass timing ``FIRST_PASS_SHARE`` of
a ``do_bench(25, 100)``, each re-timed leader ``bench_share`` of one over its rounds.

The first table's first-pass and re-time columns assume full budgets (the v3
protocol); a run that logged ``phase_s`` (v4 on) gets a second table from the logged phases
(:func:`logged_phases`): time before the first compile, the compile phase against
the configs' own compile times, the first compile against the others, and the rest.

Usage::

    python benchmarks/h200/autotune_cost_accounting.py \
        benchmarks/h200/data/autotune_kernels_v3/call1/autotune_kernels_tuning.csv
    python benchmarks/h200/autotune_cost_accounting.py \
        benchmarks/h200/data/autotune_kernels_v4/autotune_kernels_tuning.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


BENCH_S = 0.125  # do_bench(warmup=25, rep=100): about 125 ms of device time


def account(path: Path) -> list[dict[str, object]]:
    """One row per case with both tuners: the split of each one's wall time, seconds."""
    from autotile.tuner._gpu_protocol import FIRST_PASS_SHARE, bench_share, retime_leaders

    rows = list(csv.DictReader(path.open()))
    out = []
    for case in dict.fromkeys(r["case"] for r in rows):
        a = next((r for r in rows if r["case"] == case and r["tuner"] == "autotile"), None)
        t = next((r for r in rows if r["case"] == case and r["tuner"] == "triton"), None)
        if a is None or t is None or not a.get("autotile_times"):
            continue
        times = json.loads(a["autotile_times"])
        model = json.loads(a["model_times"] or "{}")
        n_list = len(model)
        n_first = len(times)
        n_retimed = sum(1 for v in times.values() if v["n_retimes"])
        n_rounds = max((len(v["retime_s"]) for v in times.values()), default=0)
        compile_s = sum(v["compile_s"] or 0.0 for v in times.values())
        first_s = n_first * BENCH_S
        retime_s = sum(v["n_retimes"] for v in times.values()) * BENCH_S
        wall = float(a["wall_s"])
        n_ranked = sum(1 for v in model.values() if v is not None)
        n_pruned = int(a["n_pruned"] or 0)
        # the new protocol on the same counts: the re-time set by the gap rule
        leaders = retime_leaders({k: v["first_s"] for k, v in times.items()}, 3)
        share = bench_share(n_list, n_list - n_pruned, min(3, n_list - n_pruned))
        new_timing = (n_first * FIRST_PASS_SHARE + len(leaders) * share) * BENCH_S
        t_wall = float(t["wall_s"])
        out.append({
            "case": case, "compile_mode": a["compile_mode"], "autotile_wall_s": wall,
            "compile_s": compile_s,
            "first_pass_s": first_s, "retime_s": retime_s,
            "rest_s": wall - compile_s - first_s - retime_s,
            "n_list": n_list, "n_ranked": n_ranked, "n_timed": n_first,
            "n_retimed": n_retimed, "n_rounds": n_rounds,
            "triton_wall_s": t_wall, "triton_timing_s": n_list * BENCH_S,
            "triton_compile_and_rest_s": t_wall - n_list * BENCH_S,
            "new_share": share, "new_timing_s": new_timing,
            "timing_saved_s": first_s + retime_s - new_timing})
    return out


def logged_phases(path: Path) -> list[dict[str, object]]:
    """One row per case whose autotile tuning logged ``phase_s`` (v4 on): where its wall went.

    Besides the phases, seconds: ``before_compile_s`` (the prior's ranking and the
    pool's phase: in v4, everything before the first compile; from v5 the pool's phase
    also holds a start during the first compile, and, after session 11's review, the
    close after a fast one), ``compile_sum_s`` (the configs' own compile times),
    ``compile_excess_s`` (the compile phase less that sum: thread start-ups; in v4 and
    v5 also the pool's close after a fast first compile in "here" mode, and in v5 a
    pool start during the first compile, counted in both phases then),
    ``probe_s`` (the first compile: the model's first config, else the list's first)
    and ``others_median_s`` (the median compile time of the other configs), and
    Triton's wall split as in :func:`account`.
    """
    rows = list(csv.DictReader(path.open()))
    out = []
    for case in dict.fromkeys(r["case"] for r in rows):
        a = next((r for r in rows if r["case"] == case and r["tuner"] == "autotile"), None)
        t = next((r for r in rows if r["case"] == case and r["tuner"] == "triton"), None)
        if a is None or t is None or not a.get("phase_s"):
            continue
        ph = json.loads(a["phase_s"])
        times = json.loads(a["autotile_times"] or "{}")
        model = json.loads(a["model_times"] or "{}")
        comp = {k: float(v["compile_s"]) for k, v in times.items() if v.get("compile_s")}
        ranked = sorted((k for k, v in model.items() if v is not None), key=lambda k: model[k])
        probe = ranked[0] if ranked else next(iter(model), None)
        others = sorted(v for k, v in comp.items() if k != probe)
        n_list = len(model)
        out.append({
            "case": case, "compile_mode": a["compile_mode"], "autotile_wall_s": float(a["wall_s"]),
            **{f"{k}_s": float(v) for k, v in ph.items()},
            "before_compile_s": float(ph.get("model", 0.0)) + float(ph.get("pool", 0.0)),
            "compile_sum_s": sum(comp.values()),
            "compile_excess_s": float(ph.get("compile", 0.0)) - sum(comp.values()),
            "probe": probe, "probe_s": comp.get(probe, float("nan")),
            "others_median_s": others[len(others) // 2] if others else float("nan"),
            "n_bench": int(a["n_bench"] or 0), "prior_note": a.get("prior_note", ""),
            "triton_wall_s": float(t["wall_s"]),
            "triton_compile_and_rest_s": float(t["wall_s"]) - n_list * BENCH_S})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tuning_csv", type=Path, nargs="+")
    args = ap.parse_args()
    print("| case | autotile wall | compile (logged) | first pass | re-time | rest (model, "
          "checks, pool) | ranked | triton wall | triton do_bench | triton compile + rest |"
          " timing now (first pass x FIRST_PASS_SHARE, re-time x share) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in args.tuning_csv:
        for r in account(path):
            par = " (pool: summed over parallel workers, not wall)" \
                if r["compile_mode"] in ("pool", "shared") else ""
            print(f"| {r['case']} | {r['autotile_wall_s']:.2f} | {r['compile_s']:.2f}{par} | "
                  f"{r['first_pass_s']:.2f} ({r['n_timed']}) | {r['retime_s']:.2f} "
                  f"({r['n_retimed']} x {r['n_rounds']} rounds) | {r['rest_s']:.2f} | "
                  f"{r['n_ranked']} of {r['n_list']} | {r['triton_wall_s']:.2f} | "
                  f"{r['triton_timing_s']:.2f} | {r['triton_compile_and_rest_s']:.2f} | "
                  f"{r['new_timing_s']:.2f} (share {r['new_share']:.2f}) |")
    logged = [r for path in args.tuning_csv for r in logged_phases(path)]
    if not logged:
        return
    print()
    print("Logged phases (seconds; tunings with phase_s):")
    print()
    print("| case | mode | autotile wall | before compile (model + pool) | compile phase | "
          "configs' compile sum | compile phase - sum | first compile (probe) | others' "
          "median | check | first pass + re-time | other | triton wall | triton compile "
          "+ rest |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in logged:
        print(f"| {r['case']} | {r['compile_mode']} | {r['autotile_wall_s']:.2f} | "
              f"{r['before_compile_s']:.2f} ({r['model_s']:.2f} + {r['pool_s']:.2f}) | "
              f"{r['compile_s']:.2f} | {r['compile_sum_s']:.2f} | "
              f"{r['compile_excess_s']:.2f} | {r['probe_s']:.2f} ({r['probe']}) | "
              f"{r['others_median_s']:.2f} | {r['check_s']:.2f} | "
              f"{r['first_pass_s'] + r['retime_s']:.2f} ({r['n_bench']} do_bench) | "
              f"{r['other_s']:.2f} | {r['triton_wall_s']:.2f} | "
              f"{r['triton_compile_and_rest_s']:.2f} |")


if __name__ == "__main__":
    main()
