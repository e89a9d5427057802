"""Analyse the H200 runs on the CPU: model vs measured time, calibration, ncu traffic.

Reads ``benchmarks/data/h200_*.csv`` (raw GPU results and
``h200_matmul_model.csv`` from ``h200_predict.py``), prints the Markdown
tables of ``benchmarks/RESULTS.md`` ("Real hardware: H200 validation") and
writes ``benchmarks/data/h200_calibrated_params.csv`` (parameters fitted on
every config, for ``h200_sim2real.py --stage calibrated``).

Usage::

    python benchmarks/h200_analyze.py [--l2-scan]
"""

from __future__ import annotations

import csv
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autotile.measure import H200, GpuModelParams, KernelModelMeasurer  # noqa: E402
from autotile.measure._calibrate import (  # noqa: E402
    calibrate_matmul,
    fit_gpu_model,
    matmul_observations_from_csv,
    predict_matmul_time,
    rank_accuracy,
)

DATA = Path(__file__).resolve().parent / "data"
L2_SIZES = (50_000_000, 62_914_560)
SHAPES = ((8192, 8192, 8192), (4096, 4096, 4096), (8192, 8192, 2048))
KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


def rows(name: str) -> list[dict[str, str]]:
    with (DATA / name).open() as f:
        return list(csv.DictReader(f))


def fmt(acc: dict[str, float]) -> str:
    return (f"{acc['spearman']:.3f} | {acc['kendall']:.3f} | "
            f"{100 * acc['median_abs_rel_error']:.1f}% | {acc['geo_mean_ratio']:.2f} | "
            f"{int(acc['n'])}")


def shape_mask(obs: Any, shp: tuple[int, int, int]) -> np.ndarray:
    return (obs.M == shp[0]) & (obs.N == shp[1]) & (obs.K == shp[2])


def matmul_section() -> dict[str, Any]:
    meas = rows("h200_matmul.csv")
    model = rows("h200_matmul_model.csv")
    out: dict[str, Any] = {}
    print("### Matmul: feasibility, GPU vs model\n")
    mkey = {(r["M"], r["N"], r["K"], *(r[k] for k in KNOBS), r["l2_bytes"]): r for r in model}
    both = gpu_only = model_only = neither = 0
    reasons: dict[str, int] = {}
    for r in meas:
        m = mkey.get((r["M"], r["N"], r["K"], *(r[k] for k in KNOBS), str(L2_SIZES[0])))
        if m is None:
            continue
        g_ok, m_ok = r["status"] == "ok", m["model_status"] == "ok"
        both += g_ok and m_ok
        gpu_only += g_ok and not m_ok
        model_only += m_ok and not g_ok
        neither += (not g_ok) and not m_ok
        if g_ok and not m_ok:
            reason = m["model_error"].split(" ")[0:3]
            reasons[" ".join(reason)] = reasons.get(" ".join(reason), 0) + 1
    print(f"ok on both: {both}; ok on the GPU, infeasible in the model: {gpu_only} "
          f"({reasons}); ok in the model only: {model_only}; neither: {neither}\n")
    out["feasibility"] = dict(both=both, gpu_only=gpu_only, model_only=model_only,
                              neither=neither)

    print("### Matmul: predicted vs measured time (all configs ok on both)\n")
    print("| model | shape | Spearman | Kendall | median abs rel err | geo-mean pred/meas | n |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    p0 = GpuModelParams()
    for l2 in L2_SIZES:
        obs = matmul_observations_from_csv(DATA / "h200_matmul.csv",
                                           DATA / "h200_matmul_model.csv", l2_bytes=l2)
        hw = dataclasses.replace(H200, l2_bytes=l2)
        pred = predict_matmul_time(obs, p0, hw)
        for shp in SHAPES:
            mk = shape_mask(obs, shp)
            print(f"| default, L2 {l2 / 1e6:.1f} MB | {'x'.join(map(str, shp))} | "
                  f"{fmt(rank_accuracy(pred[mk], obs.time_s[mk]))} |")
        print(f"| default, L2 {l2 / 1e6:.1f} MB | pooled | "
              f"{fmt(rank_accuracy(pred, obs.time_s))} |")

    print("\n### Matmul: calibration, held-out configs (30%, seed 0; a config is held out "
          "at every shape)\n")
    print("| L2 modelled | set | params | shape | Spearman | Kendall | median abs rel err | "
          "geo-mean pred/meas | n |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    reps = {}
    for l2 in L2_SIZES:
        obs = matmul_observations_from_csv(DATA / "h200_matmul.csv",
                                           DATA / "h200_matmul_model.csv", l2_bytes=l2)
        hw = dataclasses.replace(H200, l2_bytes=l2)
        rep = calibrate_matmul(obs, hw, test_fraction=0.3, seed=0)
        reps[l2] = (rep, obs, hw)
        te = obs.subset(np.array(rep.test_index))
        for label, params in (("default", rep.params0), ("calibrated", rep.params)):
            pred = predict_matmul_time(te, params, hw)
            for shp in SHAPES:
                mk = shape_mask(te, shp)
                print(f"| {l2 / 1e6:.1f} MB | held out | {label} | {'x'.join(map(str, shp))} | "
                      f"{fmt(rank_accuracy(pred[mk], te.time_s[mk]))} |")
            print(f"| {l2 / 1e6:.1f} MB | held out | {label} | pooled | "
                  f"{fmt(rank_accuracy(pred, te.time_s))} |")
        print(f"| {l2 / 1e6:.1f} MB | fitting set | calibrated | pooled | "
              f"{fmt(rep.after_train)} |")
        print(f"|  | | | solver cost | {rep.cost:.3f} | | | | |")
    best_l2 = min(L2_SIZES, key=lambda l2: reps[l2][0].cost)
    rep, obs, hw = reps[best_l2]
    print(f"\nL2 capacity chosen by the fitting-set cost: {best_l2} B")
    print("calibrated (held-out split) params:", json.dumps(rep.params.to_json()))
    out["held_out"] = {"l2": best_l2, "before": rep.before, "after": rep.after}
    # top pick of the calibrated model among held-out configs, per shape
    te = obs.subset(np.array(rep.test_index))
    pred = predict_matmul_time(te, rep.params, hw)
    for shp in SHAPES:
        mk = np.flatnonzero(shape_mask(te, shp))
        i_pred = mk[np.argmin(pred[mk])]
        i_best = mk[np.argmin(te.time_s[mk])]
        flops = 2.0 * shp[0] * shp[1] * shp[2]
        print(f"held-out {shp}: model's pick {te.groups[i_pred]} measures "
              f"{flops / te.time_s[i_pred] / 1e12:.0f} TFLOP/s; best held-out "
              f"{te.groups[i_best]} {flops / te.time_s[i_best] / 1e12:.0f} TFLOP/s")
    # refit on every config for sim-to-real tuning
    params_all, res = fit_gpu_model(obs, hw)
    acc_all = rank_accuracy(predict_matmul_time(obs, params_all, hw), obs.time_s)
    print(f"\nfit on all {len(obs)} observations: Spearman {acc_all['spearman']:.3f}, "
          f"median abs rel err {100 * acc_all['median_abs_rel_error']:.1f}%")
    print("params (all):", json.dumps(params_all.to_json()))
    with (DATA / "h200_calibrated_params.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "value"])
        w.writerow(["l2_bytes", best_l2])
        w.writerow(["params_json", json.dumps(params_all.to_json())])
        for k, v in params_all.to_json().items():
            w.writerow([k, json.dumps(v)])
    out["params_all"] = params_all
    return out


def ncu_section() -> None:
    print("\n### ncu DRAM bytes vs the simulator's HBM traffic (cold L2, one launch)\n")
    model = rows("h200_matmul_model.csv")
    mkey = {(r["M"], r["N"], r["K"], *(r[k] for k in KNOBS), r["l2_bytes"]): r for r in model}
    print("| shape | config | ncu read MB | sim read MB (50 MB L2) | sim read MB (60 MiB) | "
          "ncu write MB | sim write MB |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    ratios: dict[int, list[float]] = {l2: [] for l2 in L2_SIZES}
    wratios: list[float] = []
    comp_ratio = []
    for r in rows("h200_ncu.csv"):
        ms = [mkey.get((r["M"], r["N"], r["K"], *(r[k] for k in KNOBS), str(l2)))
              for l2 in L2_SIZES]
        if any(m is None or m["model_status"] != "ok" for m in ms):
            continue
        rd, wr = float(r["dram_read_bytes"]), float(r["dram_write_bytes"])
        sims = [float(m["model_hbm_read_bytes"]) for m in ms]  # type: ignore[index]
        sw = float(ms[0]["model_hbm_bytes"]) - sims[0]  # type: ignore[index]
        for l2, s in zip(L2_SIZES, sims):
            ratios[l2].append(s / rd)
        wratios.append(sw / wr)
        M, N, K = int(r["M"]), int(r["N"]), int(r["K"])
        comp_ratio.append(rd / (2.0 * (M * K + K * N)))
        print(f"| {M}x{N}x{K} | {r['config'].replace(';', ' ')} | {rd / 1e6:.0f} | "
              f"{sims[0] / 1e6:.0f} | {sims[1] / 1e6:.0f} | {wr / 1e6:.0f} | {sw / 1e6:.0f} |")
    print()
    for l2 in L2_SIZES:
        a = np.array(ratios[l2])
        print(f"reads, L2 {l2}: sim/ncu median {np.median(a):.3f}, within 10%: "
              f"{np.mean(np.abs(a - 1) <= 0.10) * 100:.0f}% of {len(a)}, within 25%: "
              f"{np.mean(np.abs(a - 1) <= 0.25) * 100:.0f}%, range {a.min():.2f}-{a.max():.2f}")
    w = np.array(wratios)
    print(f"writes: sim/ncu median {np.median(w):.3f}, range {w.min():.2f}-{w.max():.2f}")
    print(f"ncu reads / compulsory (A + B once): median {np.median(comp_ratio):.2f}, range "
          f"{min(comp_ratio):.2f}-{max(comp_ratio):.2f}")


def other_kernels_section() -> None:
    print("\n### Fused softmax and flash attention: model vs measured\n")
    for fname, kernel, keys in (("h200_softmax.csv", "softmax_fused", ("M", "N")),
                                ("h200_flash.csv", "flash_attention", ("N", "d", "heads"))):
        data = [r for r in rows(fname) if r["kernel"] == kernel and r["status"] == "ok"]
        print(f"| {kernel} shape | configs | measured best TFLOP/s | Spearman (default) | "
              f"median pred/meas | reference (torch) TFLOP/s |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        refs = {tuple(r[k] for k in keys): float(r["tflops"]) for r in rows(fname)
                if r["source"] == "reference"}
        for shp in dict.fromkeys(tuple(r[k] for k in keys) for r in data):
            sub = [r for r in data if tuple(r[k] for k in keys) == shp]
            m = KernelModelMeasurer(kernel, {k: int(v) for k, v in zip(keys, shp)},
                                    hardware=H200)
            pred, meas = [], []
            for r in sub:
                cfg = {k: int(r[k]) for k in ("num_warps", "ROWS_PER_PROGRAM", "BLOCK_M",
                                              "BLOCK_N", "num_stages") if r.get(k, "") != ""}
                res = m.measure(cfg)
                if res.ok:
                    pred.append(res.metrics["time_s"])
                    meas.append(float(r["time_s"]))
            acc = rank_accuracy(pred, meas)
            print(f"| {'x'.join(shp)} | {len(sub)} ({len(pred)} feasible in the model) | "
                  f"{max(float(r['tflops']) for r in sub):.1f} | {acc['spearman']:.2f} | "
                  f"{np.median(np.array(pred) / np.array(meas)):.2f} | {refs.get(shp, 0):.1f} |")
        print()


def l2_scan(sizes: tuple[float, ...] = (20e6, 25e6, 30e6, 35e6, 40e6)) -> None:
    """Re-simulate the ncu configs with smaller effective L2 capacities (slow: minutes)."""
    print("\n### ncu reads vs simulated reads, by modelled L2 capacity\n")
    print("| L2 modelled | median sim/ncu | within 10% | within 25% | n |")
    print("| --- | ---: | ---: | ---: | ---: |")
    ncu = rows("h200_ncu.csv")
    for l2 in sizes:
        hw = dataclasses.replace(H200, l2_bytes=int(l2))
        meas: dict[tuple[int, ...], KernelModelMeasurer] = {}
        rat = []
        for r in ncu:
            shp = (int(r["M"]), int(r["N"]), int(r["K"]))
            if shp not in meas:
                meas[shp] = KernelModelMeasurer("matmul", dict(zip("MNK", shp)), hardware=hw)
            res = meas[shp].measure({k: int(r[k]) for k in KNOBS})
            if res.ok:
                rat.append(res.metrics["hbm_read_bytes"] / float(r["dram_read_bytes"]))
        a = np.array(rat)
        print(f"| {l2 / 1e6:.0f} MB | {np.median(a):.3f} | {np.mean(np.abs(a - 1) <= 0.1):.0%} | "
              f"{np.mean(np.abs(a - 1) <= 0.25):.0%} | {len(a)} |")


def sim2real_section() -> None:
    print("\n### Sim-to-real at 8192^3 (median of 3 interleaved repeats, rep=200 ms)\n")
    data = [r for r in rows("h200_sim2real.csv") if r["status"] == "ok"]
    cub = float(np.median([float(r["tflops"]) for r in data if r["label"] == "cuBLAS"]))
    print("| config | knobs | TFLOP/s | % of cuBLAS |")
    print("| --- | --- | ---: | ---: |")
    for label in dict.fromkeys(r["label"] for r in data):
        sub = [r for r in data if r["label"] == label]
        t = float(np.median([float(r["tflops"]) for r in sub]))
        knobs = sub[0].get("config", "").replace(";", " ") if label != "cuBLAS" else "-"
        print(f"| {label} | {knobs} | {t:.0f} | {100 * t / cub:.1f}% |")


def main() -> int:
    matmul_section()
    ncu_section()
    other_kernels_section()
    sim2real_section()
    if "--l2-scan" in sys.argv:
        l2_scan()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
