"""H200 validation: autotile's kernels under Triton on a real GPU, raw results as CSV.

Runs on the lent H200 machine (Triton, PyTorch, ncu); writes raw results to
``--out`` (``$OUT`` there). The model's predictions, the calibration and the
report are made afterwards on the CPU from those CSVs
(``benchmarks/h200/h200_analyze.py``), so no GPU is needed to reuse them.

Parts (one device call each)::

    python benchmarks/h200/bench_h200.py --part probe    --out $OUT   # versions, ncu, compile cost
    python benchmarks/h200/bench_h200.py --part main     --out $OUT   # sweeps, cuBLAS, ncu, tuning
    python benchmarks/h200/bench_h200.py --part sim2real --out $OUT \
        --configs benchmarks/h200/data/h200_sim2real_configs.csv      # time chosen configs
    python benchmarks/h200/bench_h200.py --part ncu --out $OUT \
        --ncu-configs benchmarks/h200/data/h200_ncu_validation_configs.csv  # ncu bytes of a list
        [--ncu-name ncu_traffic_v2_measured]                          # output CSV basename
    python benchmarks/h200/bench_h200.py --part rounds --out $OUT \
        --rounds-configs benchmarks/h200/data/h200_sim2real_rounds_configs.csv \
        --tune-budget 100                       # GPU-direct tuning, then interleaved rounds

``main`` measures matmul fp16 at 8192^3, 4096^3 and 8192x8192x2048 (Triton
tutorial 03's 16 configs plus 130 configs sampled from the 8192^3 space),
fused softmax (float32, 3 shapes x 6 num_warps), flash attention (fp16, 2
shapes, 28 configs each), cuBLAS / torch references, ncu DRAM bytes of 40
matmul launches, and GPU-direct tuning (random and model-guided, budget 40).

``rounds`` (sim-to-real, second protocol) first tunes 8192^3 on the GPU
(``tune(space, TritonMeasurer(...), searcher=..., budget=B)`` for
``--tune-searchers``, library defaults, each stopped after
``--tune-timeout-s``), then times every listed config, the GPU-direct
winners and cuBLAS in ``--rounds`` rounds: in each round every config once
and cuBLAS twice, in a fresh random order, so the ratio to cuBLAS is taken
within a round. Rows are written after each round.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.h200.h200_configs import (  # noqa: E402
    MATMUL_SHAPES,
    config_key,
    flash_plan,
    matmul_plan,
    sampled_configs,
    softmax_plan,
    tutorial_configs,
)

WARMUP_MS, REP_MS = 10.0, 50.0
TUNE_BUDGET = 40
N_NCU = {(8192, 8192, 8192): 24, (4096, 4096, 4096): 8, (8192, 8192, 2048): 8}


def log(*a: Any) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    log(f"wrote {path} ({len(rows)} rows)")


def gpu_ready(*modules: str) -> bool:
    """Whether torch, triton, ``modules`` and a CUDA device are there; prints SKIPPED if not.

    The H200 scripts exit 0 with a ``SKIPPED`` line on a machine without them, so
    they can be run (and listed) anywhere.
    """
    import importlib

    try:
        for name in ("torch", "triton", *modules):
            importlib.import_module(name)
    except ImportError as exc:
        print(f"SKIPPED: needs torch, triton{''.join(', ' + m for m in modules)} "
              f"with a CUDA GPU ({exc})")
        return False
    import torch

    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA device")
        return False
    return True


def env_info() -> dict[str, Any]:
    import torch
    import triton

    p = torch.cuda.get_device_properties(0)
    info: dict[str, Any] = {
        "python": platform.python_version(), "torch": torch.__version__,
        "triton": triton.__version__, "gpu": p.name, "n_sms": p.multi_processor_count,
        "l2_bytes": getattr(p, "L2_cache_size", None), "total_memory": p.total_memory,
        "cuda": torch.version.cuda,
    }
    for cmd in (["ncu", "--version"], ["nvidia-smi", "--query-gpu=driver_version,clocks.sm,"
                                       "clocks.max.sm,clocks.mem,power.limit",
                                       "--format=csv"]):
        try:
            info[cmd[0]] = subprocess.run(cmd, capture_output=True, text=True,
                                          timeout=60).stdout.strip()
        except Exception as exc:  # noqa: BLE001
            info[cmd[0]] = f"{type(exc).__name__}: {exc}"
    try:
        import numba

        info["numba"] = numba.__version__
    except ImportError:
        info["numba"] = None
    return info


def cublas_rows(shapes: Any, tag: str) -> list[dict[str, Any]]:
    import torch
    import triton

    rows = []
    for M, N, K in shapes:
        g = torch.Generator(device="cuda")
        g.manual_seed(0)
        a = torch.randn(M, K, device="cuda", generator=g).half()
        b = torch.randn(K, N, device="cuda", generator=g).half()
        q = triton.testing.do_bench(lambda: torch.matmul(a, b), warmup=WARMUP_MS, rep=REP_MS,
                                    quantiles=[0.5, 0.2, 0.8])
        t = q[0] * 1e-3
        rows.append({"tag": tag, "M": M, "N": N, "K": K, "time_s": t,
                     "tflops": 2.0 * M * N * K / t / 1e12, "time_p20_s": q[1] * 1e-3,
                     "time_p80_s": q[2] * 1e-3})
        log(f"cuBLAS {M}x{N}x{K}: {rows[-1]['tflops']:.1f} TFLOP/s")
    return rows


def result_row(base: dict[str, Any], cfg: dict[str, Any], res: Any) -> dict[str, Any]:
    row = {**base, **cfg, "config": config_key(cfg), "status": res.status}
    for k in ("time_s", "tflops", "time_p20_s", "time_p80_s", "rel_error", "first_call_s"):
        row[k] = res.metrics.get(k, "")
    row["wall_time_s"] = round(res.wall_time_s, 4)
    row["error"] = (res.error or "").replace("\n", " ")[:300]
    return row


def measure_plan(kernel: str, plan: list[Any], shape_keys: str, n_jobs: int
                 ) -> list[dict[str, Any]]:
    from autotile.measure.gpu._triton_measurer import TritonMeasurer

    rows: list[dict[str, Any]] = []
    shapes = list(dict.fromkeys(p[0] for p in plan))
    for shp in shapes:
        shape = dict(zip(shape_keys, shp))
        m = TritonMeasurer(kernel, shape, warmup_ms=WARMUP_MS, rep_ms=REP_MS)
        cfgs = [p for p in plan if p[0] == shp]
        if n_jobs > 1:
            t0 = time.perf_counter()
            errs = m.precompile([c for _, _, c in cfgs], n_jobs=n_jobs)
            log(f"{kernel} {shp}: precompiled {len(cfgs)} configs in "
                f"{time.perf_counter() - t0:.1f} s ({sum(e is not None for e in errs)} errors)")
        t0 = time.perf_counter()
        for _, src, c in cfgs:
            res = m.measure(c)
            rows.append(result_row({"kernel": kernel, **shape, "source": src}, c, res))
        ok = [r for r in rows[-len(cfgs):] if r["status"] == "ok"]
        best = max(ok, key=lambda r: r["tflops"]) if ok else None
        log(f"{kernel} {shp}: {len(cfgs)} configs in {time.perf_counter() - t0:.1f} s, "
            f"{len(ok)} ok, best {best['tflops'] if best else 0:.1f} TFLOP/s "
            f"({best['config'] if best else '-'})")
        del m
        import torch

        torch.cuda.empty_cache()
    return rows


# --------------------------------------------------------------------------------------
def part_probe(out: Path) -> None:
    import inspect

    import torch
    import triton

    from autotile.measure.gpu._triton_measurer import TritonMeasurer

    info = env_info()
    info["do_bench_signature"] = str(inspect.signature(triton.testing.do_bench))
    log(json.dumps(info, indent=1))
    m = TritonMeasurer("matmul", {"M": 4096, "N": 4096, "K": 4096}, warmup_ms=WARMUP_MS,
                       rep_ms=REP_MS)
    info["warmup_signature"] = str(inspect.signature(m._kernel.warmup))
    cfgs = sampled_configs()
    rows = []
    t0 = time.perf_counter()
    for c in cfgs[:10]:  # sequential: compile + check + time
        r = m.measure(c)
        rows.append(result_row({"phase": "sequential"}, c, r))
        log(r.status, round(r.wall_time_s, 2), r.metrics.get("tflops"),
            r.metrics.get("first_call_s"), (r.error or "")[:200])
    info["sequential_10_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    errs = m.precompile(cfgs[10:26], n_jobs=8)
    info["precompile_16_s"] = time.perf_counter() - t0
    info["precompile_errors"] = errs
    t0 = time.perf_counter()
    for c in cfgs[10:26]:
        r = m.measure(c)
        rows.append(result_row({"phase": "precompiled"}, c, r))
        log(r.status, round(r.wall_time_s, 2), r.metrics.get("tflops"),
            r.metrics.get("first_call_s"), (r.error or "")[:200])
    info["measure_16_precompiled_s"] = time.perf_counter() - t0
    for c in tutorial_configs()[:3]:
        r = m.measure(c)
        rows.append(result_row({"phase": "tutorial"}, c, r))
        log("tutorial", c, r.status, r.metrics.get("tflops"), (r.error or "")[:200])
    # softmax and flash: one or two configs each
    sm = TritonMeasurer("softmax_fused", {"M": 8192, "N": 4096})
    r = sm.measure({"num_warps": 8, "ROWS_PER_PROGRAM": 1})
    log("softmax", r.status, r.metrics, r.error)
    rows.append(result_row({"phase": "softmax"}, {"num_warps": 8}, r))
    fa = TritonMeasurer("flash_attention", {"N": 4096, "d": 128, "heads": 16})
    for c in ({"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3},
              {"BLOCK_M": 256, "BLOCK_N": 128, "num_warps": 8, "num_stages": 4}):
        r = fa.measure(c)
        log("flash", c, r.status, r.metrics, (r.error or "")[:300])
        rows.append(result_row({"phase": "flash"}, c, r))
    info["cublas"] = cublas_rows([(4096, 4096, 4096), (8192, 8192, 8192)], "probe")
    # ncu on 2 configs
    plan = [{"shape": [4096, 4096, 4096], "config": c} for c in tutorial_configs()[:2]]
    info["ncu"] = run_ncu(plan, out, "probe")
    write_csv(out / "h200_probe.csv", rows)
    (out / "h200_probe_env.json").write_text(json.dumps(info, indent=1, default=str))
    del torch


def run_ncu(plan: list[dict[str, Any]], out: Path, tag: str) -> list[dict[str, Any]]:
    from benchmarks.h200.h200_ncu import parse_ncu_csv

    pj, lj, raw = out / f"ncu_plan_{tag}.json", out / f"ncu_launched_{tag}.json", \
        out / f"ncu_raw_{tag}.csv"
    pj.write_text(json.dumps(plan))
    cmd = ["ncu", "--clock-control", "none", "--metrics",
           "dram__bytes_read.sum,dram__bytes_write.sum", "--csv", "--log-file", str(raw),
           "-k", "regex:matmul_kernel", sys.executable,
           str(Path(__file__).with_name("h200_ncu.py")), "--plan", str(pj),
           "--launched", str(lj)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=400,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (
                           str(Path(__file__).resolve().parents[2]),
                           os.environ.get("PYTHONPATH", ""))))})
    log(f"ncu ({len(plan)} launches): rc={p.returncode} in {time.perf_counter() - t0:.1f} s")
    if p.returncode != 0:
        log(p.stdout[-3000:], p.stderr[-3000:])
    text = raw.read_text() if raw.exists() else ""
    kernels = parse_ncu_csv(text)
    launched = json.loads(lj.read_text()) if lj.exists() else []
    rows = []
    for i, k in enumerate(kernels):
        src = launched[i] if i < len(launched) else {"shape": [0, 0, 0], "config": {}}
        rows.append({"tag": tag, "M": src["shape"][0], "N": src["shape"][1],
                     "K": src["shape"][2], "dtype": src.get("dtype", "float16"),
                     **src["config"], "config": config_key(src["config"]),
                     "ncu_id": k["id"], "kernel": k["kernel"][:40],
                     "dram_read_bytes": k.get("dram__bytes_read.sum", ""),
                     "dram_write_bytes": k.get("dram__bytes_write.sum", ""),
                     "unit": k.get("dram__bytes_read.sum.unit", "")})
    if len(kernels) != len(launched):
        log(f"WARNING: {len(kernels)} profiled kernels, {len(launched)} launched configs")
    for f in (pj, lj, raw):
        f.unlink(missing_ok=True)
    return rows


def pick_ncu_plan(mm_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per shape: the ok tutorial configs, then ok sampled configs spread over TFLOP/s."""
    plan = []
    for shp, n in N_NCU.items():
        ok = [r for r in mm_rows if (r["M"], r["N"], r["K"]) == shp and r["status"] == "ok"]
        tut = [r for r in ok if r["source"] == "tutorial"][: n // 3]
        smp = sorted((r for r in ok if r["source"] == "sampled"), key=lambda r: r["tflops"])
        k = n - len(tut)
        pick = [smp[int(i * (len(smp) - 1) / max(1, k - 1))] for i in range(k)] if smp else []
        for r in tut + pick:
            cfg = {key: int(r[key]) for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M",
                                                "num_warps", "num_stages")}
            plan.append({"shape": list(shp), "config": cfg})
    return plan


def gpu_tuning(out_rows: list[dict[str, Any]]) -> None:
    """Tune 8192^3 directly on the GPU with autotile.search.tune (random, model-guided)."""
    try:
        from autotile.search import tune
    except Exception as exc:  # noqa: BLE001 - optuna may be missing on the device
        log(f"GPU tuning skipped: {type(exc).__name__}: {exc}")
        return
    from autotile.measure.gpu._triton_measurer import TritonMeasurer

    m = TritonMeasurer("matmul", {"M": 8192, "N": 8192, "K": 8192}, warmup_ms=WARMUP_MS,
                       rep_ms=REP_MS)
    for name, kw in (("random", {}), ("model", {"plan_size": 10, "cost_model": "rf"})):
        t0 = time.perf_counter()
        st = tune(m.space, m, searcher=name, budget=TUNE_BUDGET, seed=0, storage=":memory:",
                  progress=False, searcher_kwargs=kw or None)
        wall = time.perf_counter() - t0
        for tr in st.trials:
            out_rows.append({"searcher": name, "trial": tr.number, "config": str(tr.config),
                             "status": tr.status, "value": tr.metrics.get("time_s", ""),
                             "wall_s": wall})
        best = st.best_config
        log(f"GPU-direct {name} budget {TUNE_BUDGET}: best {best} "
            f"({2 * 8192**3 / st.best_value / 1e12:.1f} TFLOP/s) in {wall:.0f} s")
        out_rows.append({"searcher": name, "trial": "best", "config": str(best),
                         "status": "best", "value": st.best_value, "wall_s": wall})


def part_main(out: Path, n_jobs: int, skip: set[str]) -> None:
    info = env_info()
    (out / "h200_env.json").write_text(json.dumps(info, indent=1, default=str))
    log(json.dumps(info))
    if "matmul" not in skip:
        from autotile.measure.gpu._triton_measurer import TritonMeasurer

        plan = matmul_plan()
        # every config compiles once for all shapes (M, N, K are not constexpr)
        uniq = list({config_key(c): c for _, _, c in plan}.values())
        m = TritonMeasurer("matmul", {"M": 8192, "N": 8192, "K": 8192})
        t0 = time.perf_counter()
        errs = m.precompile(uniq, n_jobs=n_jobs)
        log(f"precompiled {len(uniq)} matmul configs in {time.perf_counter() - t0:.1f} s "
            f"({sum(e is not None for e in errs)} errors)")
        del m
        rows = measure_plan("matmul", plan, "MNK", n_jobs=1)
        rows_cb = cublas_rows(MATMUL_SHAPES, "main")
        write_csv(out / "h200_matmul.csv", rows)
        write_csv(out / "h200_cublas.csv", rows_cb)
        if "ncu" not in skip:
            ncu = run_ncu(pick_ncu_plan(rows), out, "main")
            write_csv(out / "h200_ncu.csv", ncu)
    if "softmax" not in skip:
        rows = measure_plan("softmax_fused", softmax_plan(), "MN", n_jobs=1)
        import torch
        import triton

        for M, N in dict.fromkeys(p[0] for p in softmax_plan()):
            x = torch.randn(M, N, device="cuda")
            t = triton.testing.do_bench(lambda: torch.softmax(x, dim=1), warmup=WARMUP_MS,
                                        rep=REP_MS, quantiles=[0.5, 0.2, 0.8])[0] * 1e-3
            rows.append({"kernel": "torch.softmax", "M": M, "N": N, "source": "reference",
                         "status": "ok", "time_s": t, "tflops": 5.0 * M * N / t / 1e12})
        write_csv(out / "h200_softmax.csv", rows)
    if "flash" not in skip:
        rows = measure_plan("flash_attention", flash_plan(), ("N", "d", "heads"),
                            n_jobs=n_jobs)
        import torch
        import triton

        for n, d, h in dict.fromkeys(p[0] for p in flash_plan()):
            q, k, v = (torch.randn(1, h, n, d, device="cuda").half() for _ in range(3))
            t = triton.testing.do_bench(
                lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
                warmup=WARMUP_MS, rep=REP_MS, quantiles=[0.5, 0.2, 0.8])[0] * 1e-3
            rows.append({"kernel": "torch.sdpa", "N": n, "d": d, "heads": h,
                         "source": "reference", "status": "ok", "time_s": t,
                         "tflops": 4.0 * n * n * d * h / t / 1e12})
        write_csv(out / "h200_flash.csv", rows)
    if "tune" not in skip:
        rows = []
        gpu_tuning(rows)
        write_csv(out / "h200_gpu_tuning.csv", rows)


def part_sim2real(out: Path, configs_path: Path) -> None:
    """Time listed configs (sim-tuned, tutorial best, GPU-direct) 3x each, plus cuBLAS 3x.

    ``configs_path`` is a CSV with ``label``, ``M``, ``N``, ``K`` and the six
    matmul knobs (``benchmarks/h200/h200_sim2real.py`` writes it).
    """
    from autotile.measure.gpu._triton_measurer import TritonMeasurer

    knobs = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
    with configs_path.open() as f:
        spec = list(csv.DictReader(f))
    info = env_info()
    rows = []
    meas: dict[tuple[int, ...], Any] = {}
    for rep in range(3):  # interleaved repeats: drift hits every config alike
        for item in spec:
            shp = (int(item["M"]), int(item["N"]), int(item["K"]))
            if shp not in meas:
                meas[shp] = TritonMeasurer("matmul", dict(zip("MNK", shp)), warmup_ms=25.0,
                                           rep_ms=200.0)
            cfg = {k: int(item[k]) for k in knobs}
            res = meas[shp].measure(cfg)
            rows.append(result_row({"label": item["label"], "M": shp[0], "N": shp[1],
                                    "K": shp[2], "repeat": rep}, cfg, res))
            log(rep, item["label"], res.status, res.metrics.get("tflops"), res.error)
        for r in cublas_rows(sorted({(int(i["M"]), int(i["N"]), int(i["K"])) for i in spec}),
                             "sim2real"):
            rows.append({"label": "cuBLAS", **r, "repeat": rep, "status": "ok"})
    write_csv(out / "h200_sim2real.csv", rows)
    (out / "h200_sim2real_env.json").write_text(json.dumps(info, indent=1, default=str))


def part_ncu(out: Path, configs_path: Path, n_jobs: int,
             name: str = "h200_ncu_validation") -> None:
    """ncu DRAM bytes of every config in ``configs_path``, one launch each, in file order.

    The configs are first compiled in ``n_jobs`` processes into Triton's disk
    cache (so the profiled process only loads binaries), then profiled by
    :func:`run_ncu`; rows go to ``<name>.csv`` (columns of ``h200_ncu.csv``
    plus ``dtype``; a ``dtype`` column of the list, default float16, picks
    each row's operand dtype) and the environment to ``<name>_env.json``.
    """
    from autotile.measure.gpu._triton_measurer import TritonMeasurer
    from benchmarks.h200.h200_ncu import plan_from_csv

    plan = plan_from_csv(configs_path)
    info = env_info()
    (out / f"{name}_env.json").write_text(json.dumps(info, indent=1, default=str))
    for key in dict.fromkeys((*p["shape"], p["dtype"]) for p in plan):
        shp, dtype = key[:3], key[3]
        m = TritonMeasurer("matmul", dict(zip("MNK", shp)), dtype=dtype)
        t0 = time.perf_counter()
        errs = m.precompile([p["config"] for p in plan
                             if (*p["shape"], p["dtype"]) == key], n_jobs=n_jobs)
        log(f"precompiled {shp} {dtype} in {time.perf_counter() - t0:.1f} s "
            f"({sum(e is not None for e in errs)} errors: {[e for e in errs if e][:3]})")
        del m
    write_csv(out / f"{name}.csv", run_ncu(plan, out, "validation"))


def smi_state() -> str:
    """SM clock, power draw and temperature as nvidia-smi reads them (read only)."""
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"


def gpu_direct(default_budget: int, searchers: list[str], timeout_s: float, n_jobs: int = 14,
               precompile_random: bool = False
               ) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """GPU-direct tuning of 8192^3, library defaults; trial rows and each searcher's best.

    ``searchers`` items are ``"name"`` (budget ``default_budget``) or
    ``"name:budget"``; each study stops starting trials after ``timeout_s``.

    With ``precompile_random``, random search's configs (which depend on the
    seed only, not on the measurements) are first drawn by the same study on
    the simulator and compiled in ``n_jobs`` processes; the study then loads
    binaries instead of compiling one config at a time (its ``study_wall_s``
    excludes that precompile, logged separately).
    """
    from autotile.measure import H200, KernelModelMeasurer
    from autotile.measure.gpu._triton_measurer import TritonMeasurer
    from autotile.search import tune

    m = TritonMeasurer("matmul", {"M": 8192, "N": 8192, "K": 8192}, warmup_ms=WARMUP_MS,
                       rep_ms=REP_MS)
    rows: list[dict[str, Any]] = []
    best: dict[str, dict[str, int]] = {}
    knobs = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
    for item in searchers:
        name, _, b = item.partition(":")
        budget = int(b) if b else default_budget
        if name == "random" and precompile_random:
            t0 = time.perf_counter()
            sim = KernelModelMeasurer("matmul", {"M": 8192, "N": 8192, "K": 8192},
                                      hardware=H200)
            seq = [t.config for t in tune(m.space, sim, searcher="random", budget=budget,
                                          seed=0, storage=":memory:", progress=False).trials
                   if t.config is not None]
            errs = m.precompile(seq, n_jobs=n_jobs)
            log(f"random B={budget}: drew {len(seq)} configs and precompiled them in "
                f"{time.perf_counter() - t0:.1f} s ({sum(e is not None for e in errs)} errors)")
        t0 = time.perf_counter()
        st = tune(m.space, m, searcher=name, budget=budget, seed=0, storage=":memory:",
                  progress=False, timeout=timeout_s)
        wall = time.perf_counter() - t0
        elapsed = 0.0
        for rec in st.to_records():
            elapsed += float(rec.get("wall_time_s") or 0.0)
            rows.append({"searcher": name, "budget": budget, "trial": rec["number"],
                         "config": rec["config"], "status": rec["status"],
                         "time_s": rec.get("time_s", ""), "tflops": rec.get("tflops", ""),
                         "wall_time_s": rec.get("wall_time_s", ""),
                         "elapsed_measure_s": round(elapsed, 2), "study_wall_s": round(wall, 1)})
        cfg = st.best_config
        n = len(st.trials)
        if cfg is not None:
            best[name] = {k: int(cfg[k]) for k in knobs}
            log(f"GPU-direct {name} B={budget}: {n} trials in {wall:.0f} s, best "
                f"{best[name]} {2 * 8192**3 / st.best_value / 1e12:.1f} TFLOP/s")
            best[f"{name} B={budget}"] = best.pop(name)
        rows.append({"searcher": name, "budget": budget, "trial": "best",
                     "config": str(cfg), "status": f"best of {n} trials",
                     "time_s": st.best_value, "study_wall_s": round(wall, 1)})
    del m
    return rows, best


def part_rounds(out: Path, configs_path: Path, n_rounds: int, budget: int,
                searchers: list[str], tune_timeout_s: float, n_jobs: int,
                deadline_s: float, match: str = "", precompile_random: bool = False) -> None:
    """GPU-direct tuning, then listed configs + GPU-direct winners + cuBLAS, interleaved.

    ``configs_path`` is a CSV (or several, comma-separated) with ``label``
    and the six matmul knobs at 8192^3 (``benchmarks/h200/h200_sim2real.py
    --stage rounds``). Each round
    times every distinct config once and cuBLAS twice, in a random order
    (seeded by the round), with ``do_bench`` (warmup 25 ms, rep 200 ms, L2
    flushed before every run). Stops starting rounds after ``deadline_s``.
    ``match`` (a regular expression) keeps only the listed configs whose
    label it matches.
    """
    import re

    import numpy as np
    import torch
    import triton

    from autotile.measure.gpu._triton_measurer import TritonMeasurer

    t_start = time.perf_counter()
    knobs = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
    info = env_info()
    (out / "h200_rounds_env.json").write_text(json.dumps(info, indent=1, default=str))
    spec = []
    for path in str(configs_path).split(","):
        with Path(path).open() as f:
            spec += [{"label": r["label"], "config": {k: int(r[k]) for k in knobs}}
                     for r in csv.DictReader(f) if re.search(match, r["label"])]
    m = TritonMeasurer("matmul", {"M": 8192, "N": 8192, "K": 8192}, warmup_ms=25.0,
                       rep_ms=200.0)
    t0 = time.perf_counter()
    errs = m.precompile([s["config"] for s in spec], n_jobs=n_jobs)
    log(f"precompiled {len(spec)} configs in {time.perf_counter() - t0:.1f} s "
        f"({sum(e is not None for e in errs)} errors: {[e for e in errs if e][:3]})")
    if budget > 0:
        trows, best = gpu_direct(budget, searchers, tune_timeout_s, n_jobs,
                                 precompile_random)
        write_csv(out / "h200_gpu_tuning_rounds.csv", trows)
        for name, cfg in best.items():
            lab = f"GPU-direct {name}"
            same = [s for s in spec if s["config"] == cfg]
            if same:
                same[0]["label"] += f" | {lab}"
            else:
                spec.append({"label": lab, "config": cfg})
    items: list[dict[str, Any]] = spec + [{"label": "cuBLAS", "config": None},
                                          {"label": "cuBLAS", "config": None}]
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    a = torch.randn(8192, 8192, device="cuda", generator=g).half()
    b = torch.randn(8192, 8192, device="cuda", generator=g).half()
    rows: list[dict[str, Any]] = []
    for rnd in range(n_rounds):
        if time.perf_counter() - t_start > deadline_s:
            log(f"deadline {deadline_s:.0f} s reached: stopping after {rnd} rounds")
            break
        order = np.random.default_rng(rnd).permutation(len(items))
        smi0 = smi_state()
        for pos, i in enumerate(order):
            it = items[i]
            base = {"round": rnd, "position": pos, "label": it["label"], "M": 8192,
                    "N": 8192, "K": 8192}
            if it["config"] is None:
                q = triton.testing.do_bench(lambda: torch.matmul(a, b), warmup=25.0,
                                            rep=200.0, quantiles=[0.5, 0.2, 0.8])
                t = q[0] * 1e-3
                rows.append({**base, "config": "cuBLAS", "status": "ok", "time_s": t,
                             "tflops": 2.0 * 8192**3 / t / 1e12, "time_p20_s": q[1] * 1e-3,
                             "time_p80_s": q[2] * 1e-3})
            else:
                rows.append(result_row(base, it["config"], m.measure(it["config"])))
        rows[-1]["smi_before"], rows[-1]["smi_after"] = smi0, smi_state()
        cub = [r["tflops"] for r in rows if r["round"] == rnd and r["label"] == "cuBLAS"]
        top = max((r for r in rows if r["round"] == rnd and r["label"] != "cuBLAS"
                   and r["status"] == "ok"), key=lambda r: r["tflops"])
        log(f"round {rnd}: cuBLAS {cub[0]:.0f}/{cub[1]:.0f} TFLOP/s; best {top['label']} "
            f"{top['tflops']:.0f}; smi {smi0} -> {rows[-1]['smi_after']}")
        write_csv(out / "h200_sim2real_rounds.csv", rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("probe", "main", "sim2real", "ncu", "rounds"),
                    required=True)
    ap.add_argument("--out", default=os.environ.get("OUT", "h200_out"))
    ap.add_argument("--jobs", type=int, default=14, help="compile processes")
    ap.add_argument("--skip", default="", help="comma list: matmul,ncu,softmax,flash,tune")
    ap.add_argument("--configs", default="benchmarks/h200/data/h200_sim2real_configs.csv")
    ap.add_argument("--ncu-configs",
                    default="benchmarks/h200/data/h200_ncu_validation_configs.csv")
    ap.add_argument("--ncu-name", default="h200_ncu_validation",
                    help="--part ncu: basename of the output CSV and env JSON")
    ap.add_argument("--rounds-configs",
                    default="benchmarks/h200/data/h200_sim2real_rounds_configs.csv")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tune-budget", type=int, default=100, help="0: no GPU-direct tuning")
    ap.add_argument("--tune-searchers", default="random,model",
                    help="comma list of name or name:budget")
    ap.add_argument("--tune-timeout-s", type=float, default=170.0)
    ap.add_argument("--deadline-s", type=float, default=480.0,
                    help="--part rounds: start no round after this many seconds")
    ap.add_argument("--rounds-match", default="",
                    help="--part rounds: regex; time only listed configs whose label matches")
    ap.add_argument("--precompile-random", action="store_true",
                    help="--part rounds: compile random search's configs in parallel first")
    args = ap.parse_args()
    if not gpu_ready():
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if args.part == "probe":
        part_probe(out)
    elif args.part == "main":
        part_main(out, args.jobs, set(filter(None, args.skip.split(","))))
    elif args.part == "ncu":
        part_ncu(out, Path(args.ncu_configs), args.jobs, args.ncu_name)
    elif args.part == "rounds":
        part_rounds(out, Path(args.rounds_configs), args.rounds, args.tune_budget,
                    args.tune_searchers.split(","), args.tune_timeout_s, args.jobs,
                    args.deadline_s, args.rounds_match, args.precompile_random)
    else:
        part_sim2real(out, Path(args.configs))
    log(f"done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
