"""``autotile.autotune`` on a GPU against ``triton.autotune``: tutorial 03's matmul, H200.

For each shape (``--shapes``), from a cold Triton cache each time (a fresh
``TRITON_CACHE_DIR`` and a freshly ported ``triton.jit`` function per tuner
run, so no compiled kernel is reused in memory or on disk):

(a) tune the library matmul kernel (``autotile.kernels.matmul_kernel``, the
    tutorial's kernel written in ``autotile.lang``, run under ``triton.jit``)
    over tutorial 03's 16 configs, once with ``autotile.autotune`` (default
    settings, ``backend="gpu"``, an empty autotile disk cache) and once with
    ``triton.autotune``: tuning wall time of the first call, configs
    compiled / timed, the picked config;
(b) time both picks, each of the 16 configs and ``torch.matmul`` (cuBLAS) in
    ``--rounds`` interleaved rounds (a fresh random order each round), each
    timing a ``triton.testing.do_bench`` median (L2 flushed).

Writes to ``--out`` (the device's ``$OUT``), row by row as results arrive:
``autotune_gpu_tuning.csv`` (one row per tuner run), ``autotune_gpu_history.csv``
(every autotile candidate's record), ``autotune_gpu_rounds.csv`` (every timing),
``autotune_gpu_summary.csv`` (per shape and candidate: median, TFLOP/s, % of the
best tutorial config, % of cuBLAS) and ``autotune_gpu_env.json``. A failed shape
is logged and skipped; the script stops starting new work past ``--deadline-s``.
Needs torch and triton (and a CUDA device), not optuna::

    python benchmarks/h200/autotune_gpu.py --out $OUT
    python benchmarks/h200/autotune_gpu.py --out $OUT --shapes 4096x4096x4096:float16 --rounds 7
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.h200.h200_configs import TUTORIAL_CONFIGS  # noqa: E402

#: Default problems: (M, N, K, dtype). Square, small M with N >> M, deep K in bf16, and
#: sizes that are not multiples of 128.
DEFAULT_SHAPES = "4096x4096x4096:float16,512x8192x8192:float16," \
                 "4096x4096x16384:bfloat16,3000x5000x2000:float16"

#: The second run's eight shapes (issue #13: small M <= 512, deep K >= 16384, N >> M,
#: M >> N, sizes that are not multiples of 128, fp16 and bf16), none of them a shape the
#: matmul model was calibrated on (8192^3): ``--shapes eight``.
EIGHT_SHAPES = "4096x4096x4096:float16,512x8192x8192:float16,4096x4096x16384:bfloat16," \
               "3000x5000x2000:float16,256x12288x4096:bfloat16,16384x1024x4096:float16," \
               "2000x3000x16384:bfloat16,8192x768x3072:float16"

#: The four of the eight where autotile tuned slower than triton.autotune, re-run after the
#: compile pool stopped waiting for its workers to exit: ``--shapes slower4``.
SLOWER4_SHAPES = "4096x4096x4096:float16,512x8192x8192:float16,16384x1024x4096:float16," \
                 "8192x768x3072:float16"

#: The third run's eight shapes, fixed (with the model's zero-shot predictions,
#: ``benchmarks/h200/data/autotune_gpu_v3_predictions.csv``) before it: none timed
#: before, none a calibration shape; small M, deep K, N >> M, M >> N, N or K not a
#: multiple of 16 (Triton's unvectorised loads), fp16 and bf16: ``--shapes eight_v3``.
EIGHT_V3_SHAPES = "384x10240x6144:float16,448x4096x20480:bfloat16,6144x6144x6144:bfloat16," \
                  "12288x1536x8192:float16,2500x7000x3000:float16,1800x2400x20000:bfloat16," \
                  "1024x16384x2048:float16,3100x3300x4100:bfloat16"

#: The fourth run's eight shapes, fixed (with the model's zero-shot predictions,
#: ``benchmarks/h200/data/autotune_gpu_v4_predictions.csv``) before it: none in an earlier
#: data file; small M (320, 480), deep K (16384, 24000), N >> M, M >> N, no size a
#: multiple of 128 in five of them, K not a multiple of 16 (A, and at N = 4600 also B,
#: loaded unvectorised), a partial last wave at deep K, fp16 and bf16:
#: ``--shapes eight_v4``.
EIGHT_V4_SHAPES = "4000x4600x2600:float16,320x6144x16384:bfloat16," \
                  "3600x2800x3000:bfloat16,10000x704x4096:float16," \
                  "1700x2800x24000:bfloat16,480x12000x8192:float16," \
                  "14000x960x6000:bfloat16,5200x4800x4000:float16"

#: The fifth run's eight shapes, fixed (with the model's zero-shot predictions,
#: ``benchmarks/h200/data/autotune_gpu_v5_predictions.csv``) before it: none in an earlier
#: data file; small M (240, 288), deep K (16400-30000, one bf16 at 20800), N >> M, M >> N,
#: most sizes not multiples of 128, only A unvectorised at 3000 x 3520 x 2900 (K % 16 = 4),
#: only B at 288 x 9000 x 8192 (N % 16 = 8), fp16 and bf16; 764 GFLOP in all:
#: ``--shapes eight_v5``.
EIGHT_V5_SHAPES = "288x9000x8192:float16,1500x2208x20800:bfloat16," \
                  "3000x3520x2900:float16,12000x720x5040:bfloat16," \
                  "4800x3600x3600:float16,240x10000x16400:float16," \
                  "900x1200x30000:bfloat16,6000x2000x6960:bfloat16"

#: The sixth run's eight shapes, fixed (with the model's zero-shot predictions,
#: ``benchmarks/h200/data/autotune_gpu_v6_predictions.csv``) before it, after the model
#: change of session 11: none in an earlier data file; small M (352, 400), deep K
#: (18000-28000; M = 400 with K = 18000), N >> M, M >> N, most sizes not multiples of
#: 128, only A unvectorised at 2700 x 3344 x 3100 (K % 16 = 12), only B at 352 x 11000 x
#: 6992 (N % 16 = 8), fp16 and bf16; 745 GFLOP in all: ``--shapes eight_v6``.
EIGHT_V6_SHAPES = "400x7056x18000:bfloat16,2700x3344x3100:bfloat16," \
                  "1300x2000x26000:float16,16000x656x4000:bfloat16," \
                  "704x14000x4000:float16,352x11000x6992:float16," \
                  "1000x1360x28000:bfloat16,4600x3920x4400:float16"

#: The seventh run's eight shapes, fixed (with the model's zero-shot predictions,
#: ``benchmarks/h200/data/autotune_gpu_v7_predictions.csv``) before it, after the model
#: change of session 13 (B's address registers, eq. 2): none in an earlier data file;
#: small M (320, 448, 496), deep K (17600-32080), N >> M, M >> N (18000 x 560, 7000 x
#: 1208), no size a multiple of 128, only B unvectorised at 320 x 9800 x 8000 and 1200 x
#: 2600 x 17600 (N % 16 = 8), A and B at 7000 x 1208 x 2600 (N % 16 = K % 16 = 8), fp16
#: and bf16; 669 GFLOP in all: ``--shapes eight_v7``.
EIGHT_V7_SHAPES = "320x9800x8000:float16,800x1680x32080:float16," \
                  "18000x560x4800:bfloat16,1200x2600x17600:bfloat16," \
                  "448x12880x6000:bfloat16,7000x1208x2600:float16," \
                  "3760x4240x3440:float16,496x5200x20000:bfloat16"

#: The eighth run's eight shapes, fixed (with the model's zero-shot predictions,
#: ``benchmarks/h200/data/autotune_gpu_v8_predictions.csv``) before it, after the model
#: change of session 13 after v7 (eq. 5c's port at the capped clock, eq. 4's c_mn = 24):
#: none in an earlier data file; small M (272, 400, 480), deep K (16800-24000), N >> M,
#: M >> N (20000 x 600, 14400 x 880), no size a multiple of 128, only B unvectorised at
#: 20000 x 600 x 4400 and 1100 x 3000 x 19040 (N % 16 = 8), A and B at 4600 x 2920 x 3400
#: (N % 16 = K % 16 = 8), fp16 and bf16; 831 GFLOP in all: ``--shapes eight_v8``.
EIGHT_V8_SHAPES = "400x11200x7200:float16,272x6000x24000:bfloat16," \
                  "20000x600x4400:float16,14400x880x5600:bfloat16," \
                  "1100x3000x19040:float16,480x8800x16800:bfloat16," \
                  "4600x2920x3400:bfloat16,2200x6640x2800:float16"

T0 = time.perf_counter()


def log(*parts: Any) -> None:
    print(f"[{time.perf_counter() - T0:7.1f}s]", *parts, flush=True)


def parse_shapes(text: str) -> list[tuple[int, int, int, str]]:
    if text == "eight":
        text = EIGHT_SHAPES
    elif text == "slower4":
        text = SLOWER4_SHAPES
    elif text == "eight_v3":
        text = EIGHT_V3_SHAPES
    elif text == "eight_v4":
        text = EIGHT_V4_SHAPES
    elif text == "eight_v5":
        text = EIGHT_V5_SHAPES
    elif text == "eight_v6":
        text = EIGHT_V6_SHAPES
    elif text == "eight_v7":
        text = EIGHT_V7_SHAPES
    elif text == "eight_v8":
        text = EIGHT_V8_SHAPES
    out = []
    for item in text.split(","):
        dims, _, dtype = item.strip().partition(":")
        m, n, k = (int(v) for v in dims.lower().split("x"))
        out.append((m, n, k, dtype or "float16"))
    return out


class CsvOut:
    """A CSV file written row by row (header from the first row's keys)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fields: list[str] | None = None

    def write(self, row: dict[str, Any]) -> None:
        new = self.fields is None
        if new:
            self.fields = list(row)
        with self.path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.fields, extrasaction="ignore")
            if new:
                w.writeheader()
            w.writerow(row)


def tutorial_launch_configs() -> list[Any]:
    from autotile.tuner import LaunchConfig

    return [LaunchConfig({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g},
                         num_warps=w, num_stages=s)
            for bm, bn, bk, g, s, w in TUTORIAL_CONFIGS]


def config_text(c: Any) -> str:
    kw = c.kwargs
    return (f"{kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']} G{kw['GROUP_M']} "
            f"w{c.num_warps} s{c.num_stages}")


def fresh_triton_cache() -> str:
    d = tempfile.mkdtemp(prefix="triton_cache_")
    os.environ["TRITON_CACHE_DIR"] = d
    return d


def matmul_grid(meta: dict[str, Any]) -> tuple[int]:
    return (-(-meta["M"] // meta["BLOCK_M"]) * -(-meta["N"] // meta["BLOCK_N"]),)


def launch_args(a: Any, b: Any, c: Any) -> tuple[Any, ...]:
    M, K = a.shape
    N = b.shape[1]
    return (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            c.stride(0), c.stride(1))


def tune_autotile(a: Any, b: Any, c: Any, shape_id: str, tuning: CsvOut, history: CsvOut
                  ) -> Any:
    import torch

    from autotile.kernels import matmul_kernel
    from autotile.tuner import autotune

    cache = fresh_triton_cache()
    tuner = autotune(configs=tutorial_launch_configs(), key=["M", "N", "K"], backend="gpu",
                     cache_dir=tempfile.mkdtemp(prefix="autotile_cache_"))(matmul_kernel)
    c.zero_()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tuner[matmul_grid](*launch_args(a, b, c), PID_ORDER="grouped")
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    err = rel_error(c, a, b)
    counts = {s: sum(r.status == s for r in tuner.history)
              for s in ("ok", "pruned", "infeasible", "failed", "wrong")}
    best = tuner.best_config
    tuning.write({"shape": shape_id, "tuner": "autotile", "wall_s": wall,
                  "n_compiled": tuner.n_compiled, "n_timed": tuner.n_timed,
                  "n_retimed": sum(len(o) for o in tuner.retime_orders),
                  "pick": config_text(best), "pick_time_s": tuner.configs_timings.get(best),
                  "rel_error": err, **{f"n_{k}": v for k, v in counts.items()},
                  "triton_cache": cache})
    for r in tuner.history:
        history.write({"shape": shape_id, "config": config_text(r.config), "status": r.status,
                       "time_s": r.time_s if math.isfinite(r.time_s) else "",
                       "model_time_s": r.metrics.get("model_time_s", ""),
                       "first_time_s": r.metrics.get("first_time_s", ""),
                       "retime_median_s": r.metrics.get("retime_median_s", ""),
                       "compile_s": r.metrics.get("compile_s", ""),
                       "reason": (r.reason or "")[:300]})
    log(f"{shape_id} autotile: {wall:.2f}s, compiled {tuner.n_compiled}, timed "
        f"{tuner.n_timed}, pick {config_text(best)}, statuses {counts}, rel err {err:.2e}")
    return best


def tune_triton(a: Any, b: Any, c: Any, shape_id: str, tuning: CsvOut, top_k: int = 0
                ) -> tuple[Any, Any]:
    """``triton.autotune`` over the 16 configs; with ``top_k`` > 0 also
    ``prune_configs_by={"perf_model": autotile.perf_model(...), "top_k": top_k}``, so
    Triton measures only the model's ``top_k`` configs."""
    import torch
    import triton

    import autotile
    from autotile.kernels import matmul_kernel
    from autotile.measure.gpu import H200_MEASURED_L2, port_to_triton
    from autotile.tuner import LaunchConfig

    cache = fresh_triton_cache()
    kern = port_to_triton([matmul_kernel]).matmul_kernel
    configs = [triton.Config(dict(lc.kwargs), num_warps=lc.num_warps, num_stages=lc.num_stages)
               for lc in tutorial_launch_configs()]
    prune = None
    if top_k:
        # the model of the registered library kernel (the ported copy is the same source)
        prune = {"perf_model": autotile.perf_model(matmul_kernel, hardware=H200_MEASURED_L2),
                 "top_k": top_k}
    tuned = triton.autotune(configs=configs, key=["M", "N", "K"], prune_configs_by=prune)(kern)
    c.zero_()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tuned[matmul_grid](*launch_args(a, b, c), PID_ORDER="grouped")
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    err = rel_error(c, a, b)
    bc = tuned.best_config
    best = LaunchConfig(dict(bc.kwargs), num_warps=bc.num_warps, num_stages=bc.num_stages)
    timings = getattr(tuned, "configs_timings", {}) or {}
    n_inf = sum(1 for v in timings.values()
                if not math.isfinite(v[0] if isinstance(v, (list, tuple)) else v))
    name = f"triton_perf_model_top{top_k}" if top_k else "triton"
    tuning.write({"shape": shape_id, "tuner": name, "wall_s": wall,
                  "n_compiled": len(timings) if top_k else len(configs),
                  "n_timed": len(timings), "n_retimed": 0,
                  "pick": config_text(best), "pick_time_s": "", "rel_error": err,
                  "n_ok": len(timings) - n_inf, "n_pruned": len(configs) - len(timings),
                  "n_infeasible": n_inf, "n_failed": 0, "n_wrong": "", "triton_cache": cache})
    log(f"{shape_id} {name}: {wall:.2f}s, timed {len(timings)} ({n_inf} inf), pick "
        f"{config_text(best)}, rel err {err:.2e}")
    return best, kern


def rel_error(c: Any, a: Any, b: Any) -> float:
    ref = (a.float() @ b.float())
    return float((c.float() - ref).norm() / ref.norm())


def time_rounds(a: Any, b: Any, c: Any, kern: Any, picks: dict[str, Any], shape: tuple[int, ...],
                shape_id: str, n_rounds: int, warmup_ms: float, rep_ms: float, seed: int,
                rounds_out: CsvOut, summary_out: CsvOut) -> None:
    import numpy as np
    import torch
    import triton
    import triton.testing

    M, N, K = shape[:3]
    flops = 2.0 * M * N * K
    args = launch_args(a, b, c)
    items: dict[str, Any] = {}
    for i, cfg in enumerate(tutorial_launch_configs()):
        items[f"tutorial_{i:02d}"] = cfg
    for name, cfg in picks.items():
        items[name] = cfg
    fns: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name, cfg in items.items():
        def fn(cfg: Any = cfg) -> None:
            kern[matmul_grid](*args, PID_ORDER="grouped", **cfg.kwargs, num_warps=cfg.num_warps,
                              num_stages=cfg.num_stages)
        try:
            fn()
            torch.cuda.synchronize()
            fns[name] = fn
        except Exception as exc:  # noqa: BLE001 - out of resources etc.
            skipped[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
    fns["cublas"] = lambda: torch.matmul(a, b, out=c)
    rng = np.random.default_rng(seed)
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(n_rounds):
        for j in rng.permutation(len(names)):
            name = names[j]
            q = triton.testing.do_bench(fns[name], warmup=warmup_ms, rep=rep_ms,
                                        quantiles=[0.5, 0.2, 0.8])
            ms = float(q[0])
            times[name].append(ms)
            cfg = items.get(name)
            rounds_out.write({"shape": shape_id, "round": r, "name": name,
                              "config": config_text(cfg) if cfg is not None else "cuBLAS",
                              "ms": ms, "p20_ms": float(q[1]), "p80_ms": float(q[2]),
                              "tflops": flops / (ms * 1e-3) / 1e12})
        log(f"{shape_id} round {r + 1}/{n_rounds} done")
    med = {n: float(np.median(v)) for n, v in times.items()}
    tut = [med[n] for n in med if n.startswith("tutorial_")]
    best_tut = min(tut) if tut else math.nan
    for name in list(items) + ["cublas"]:
        cfg = items.get(name)
        row = {"shape": shape_id, "name": name,
               "config": config_text(cfg) if cfg is not None else "cuBLAS"}
        if name in skipped:
            summary_out.write({**row, "median_ms": "", "tflops": "",
                               "pct_of_best_tutorial": "", "pct_of_cublas": "",
                               "error": skipped[name]})
            continue
        m = med[name]
        summary_out.write({**row, "median_ms": m, "tflops": flops / (m * 1e-3) / 1e12,
                           "pct_of_best_tutorial": 100.0 * best_tut / m,
                           "pct_of_cublas": 100.0 * med["cublas"] / m, "error": ""})
    for name in picks:
        if name in med:
            log(f"{shape_id} {name}: {med[name]:.4f} ms = "
                f"{100 * best_tut / med[name]:.1f}% of the best tutorial config, "
                f"{100 * med['cublas'] / med[name]:.1f}% of cuBLAS")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out")))
    p.add_argument("--shapes", default=DEFAULT_SHAPES,
                   help="comma-separated MxNxK:dtype (dtype float16 or bfloat16)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup-ms", type=float, default=10.0)
    p.add_argument("--rep-ms", type=float, default=50.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--perf-model-top-k", type=int, default=0,
                   help="also tune with triton.autotune + autotile.perf_model and this top_k")
    p.add_argument("--deadline-s", type=float, default=270.0,
                   help="start no new shape (or part) after this many seconds")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    import torch
    import triton

    env = {"gpu": torch.cuda.get_device_name(), "triton": triton.__version__,
           "torch": torch.__version__, "cuda": torch.version.cuda, "shapes": args.shapes,
           "rounds": args.rounds, "warmup_ms": args.warmup_ms, "rep_ms": args.rep_ms,
           "n_cpus": os.cpu_count()}
    try:
        import optuna  # noqa: F401
        env["optuna"] = True
    except ImportError:
        env["optuna"] = False
    (args.out / "autotune_gpu_env.json").write_text(json.dumps(env, indent=1))
    log("env", env)
    tuning = CsvOut(args.out / "autotune_gpu_tuning.csv")
    history = CsvOut(args.out / "autotune_gpu_history.csv")
    rounds_out = CsvOut(args.out / "autotune_gpu_rounds.csv")
    summary = CsvOut(args.out / "autotune_gpu_summary.csv")
    n_failed = 0
    for i, (M, N, K, dtype) in enumerate(parse_shapes(args.shapes)):
        shape_id = f"{M}x{N}x{K}:{dtype}"
        if time.perf_counter() - T0 > args.deadline_s:
            log(f"{shape_id}: skipped, past --deadline-s={args.deadline_s:g}")
            continue
        try:
            torch.manual_seed(args.seed)
            dt = getattr(torch, dtype)
            a = torch.randn((M, K), device="cuda", dtype=dt)
            b = torch.randn((K, N), device="cuda", dtype=dt)
            c = torch.empty((M, N), device="cuda", dtype=dt)
            picks: dict[str, Any] = {}
            # the two tuners take turns going first (the GPU warms up under the first)
            order = ["autotile", "triton"] + (["perf_model"] if args.perf_model_top_k else [])
            for which in (order if i % 2 == 0 else order[::-1]):
                if which == "autotile":
                    picks["autotile_pick"] = tune_autotile(a, b, c, shape_id, tuning, history)
                elif which == "triton":
                    picks["triton_pick"], kern = tune_triton(a, b, c, shape_id, tuning)
                else:
                    picks["perf_model_pick"], _ = tune_triton(
                        a, b, c, shape_id, tuning, args.perf_model_top_k)
            if time.perf_counter() - T0 > args.deadline_s:
                log(f"{shape_id}: rounds skipped, past --deadline-s")
                continue
            time_rounds(a, b, c, kern, dict(sorted(picks.items())), (M, N, K), shape_id,
                        args.rounds,
                        args.warmup_ms, args.rep_ms, args.seed, rounds_out, summary)
        except Exception:  # noqa: BLE001 - log the shape and go on
            n_failed += 1
            log(f"{shape_id} FAILED:\n{traceback.format_exc()}")
        finally:
            torch.cuda.empty_cache()
    log(f"done; {n_failed} shape(s) failed; CSVs in {args.out}")
    return 1 if n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
