"""The records GPU model against an H200, on kernels it was never fitted on.

Five kernels whose GPU model is ``"records"`` (the cost derived from a reduced
interpreter run): the four user kernels of ``examples/user_kernels.py`` (GELU,
RMS norm, transpose, online softmax) and the library's layer norm. For each,
every config of its space at one real shape (>= 30 configs) is

1. ``--part predict`` (CPU, here): scored by ``KernelModelMeasurer(spec, shape,
   H200_MEASURED_L2)`` with default ``GpuModelParams()``: nothing was fitted on
   these kernels. Writes ``benchmarks/h200/data/records_model_<set>_predictions.csv``,
   committed before the device run;
2. ``--part time`` (the H200): timed with ``TritonMeasurer(spec, shape)``
   (correctness checked against the spec's NumPy reference, ``do_bench`` with
   an L2 flush), then re-timed in ``--rounds`` interleaved rounds (each round
   every config once, in a fresh random order). Writes ``records_model_h200.csv``
   to ``--out``;
3. ``--part report`` (CPU): per kernel, Spearman's rho between predicted and
   median measured time over the configs that ran, and the measured time of
   the model's top pick over the best measured config.

    python benchmarks/h200/records_model_h200.py --set v2 --part predict
    python benchmarks/h200/records_model_h200.py --set v2 --part time --out $OUT  # on the H200
    python benchmarks/h200/records_model_h200.py --set v2 --part report

``--set v1`` is the first check (its predictions and timings are in
``benchmarks/h200/data/records_model_v1_*.csv``; the model has changed since).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autotile.kernels import KERNELS  # noqa: E402
from examples.user_kernels import USER_SPECS  # noqa: E402

DATA = ROOT / "benchmarks" / "h200" / "data"

#: Kernel -> (spec, shape, dtype) of the first check (model v1). Sizes fill the chip
#: and are several times the L2.
CASES_V1 = {
    "gelu": (USER_SPECS["gelu"], {"n": 1 << 26}, "float16"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 16384, "N": 4096}, "float16"),
    "transpose": (USER_SPECS["transpose"], {"M": 8192, "N": 8192}, "float16"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 8192, "N": 8192}, "float16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 8192, "N": 8192}, "float16"),
}

#: The second check (model v2, changed after the v1 timings of gelu, rms_norm and
#: transpose): online softmax and layer norm were never timed; the other three at
#: shapes the v1 check did not use.
CASES_V2 = {
    "gelu": (USER_SPECS["gelu"], {"n": 36_700_160}, "float16"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 8192, "N": 8192}, "float16"),
    "transpose": (USER_SPECS["transpose"], {"M": 4096, "N": 16384}, "float16"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 8192, "N": 8192}, "float16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 8192, "N": 8192}, "float16"),
}
#: The third check (model v3): every kernel at a shape that no earlier check
#: timed and nothing was fitted on (the v3 constants were fitted on v1 and v2).
CASES_V3 = {
    "gelu": (USER_SPECS["gelu"], {"n": 50_000_000}, "float16"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 4096, "N": 16384}, "float16"),
    "transpose": (USER_SPECS["transpose"], {"M": 6144, "N": 12288}, "float16"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 16384, "N": 4096}, "float16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 4096, "N": 16384}, "float16"),
}
#: The fourth check (model v4: v3 plus the L2 share spread, a change made after
#: seeing the v3 layer norm timings): shapes that no check timed before.
CASES_V4 = {
    "gelu": (USER_SPECS["gelu"], {"n": 80_000_000}, "float16"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 12288, "N": 6144}, "float16"),
    "transpose": (USER_SPECS["transpose"], {"M": 10240, "N": 5120}, "float16"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 8192, "N": 12288}, "float16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 8192, "N": 12288}, "float16"),
}
#: The fifth check (model v5: v4 plus the compute floor of a program's chain, a
#: change made after seeing the v4 online softmax timings): shapes that no check
#: timed before, fixed before the v5 model was predicted.
CASES_V5 = {
    "gelu": (USER_SPECS["gelu"], {"n": 100_000_000}, "float16"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 16384, "N": 5120}, "float16"),
    "transpose": (USER_SPECS["transpose"], {"M": 7168, "N": 9216}, "float16"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 4096, "N": 20480}, "float16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 16384, "N": 6144}, "float16"),
}
#: The sixth check (model v6: v5 with the liveness fix and the register floor, changes
#: made after an ncu look at the v5 RMS norm and online softmax misses): shapes that no
#: check timed before, fixed before the v6 model was predicted.
CASES_V6 = {
    "gelu": (USER_SPECS["gelu"], {"n": 60_000_000}, "float16"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 10240, "N": 7168}, "float16"),
    "transpose": (USER_SPECS["transpose"], {"M": 5120, "N": 11264}, "float16"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 6144, "N": 14336}, "float16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 20480, "N": 3072}, "float16"),
}
#: The seventh check (model v7: v6 plus ptxas's unrolling of loops without tl.dot,
#: the reduction latency of a program's chain and the latencies refitted with them,
#: changes made after the v6 timings): shapes that no check timed before, fixed
#: before the v7 model was predicted.
CASES_V7 = {
    "gelu": (USER_SPECS["gelu"], {"n": 90_000_000}, "float16"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 6144, "N": 10240}, "float16"),
    "transpose": (USER_SPECS["transpose"], {"M": 12288, "N": 4608}, "float16"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 12288, "N": 5120}, "float16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 28672, "N": 2048}, "float16"),
}
#: The eighth check (model v8), fixed after the v7 timings and before the v8 model was
#: predicted: shapes that no check timed before and no data file of the repository
#: holds: GELU at 120 M elements (the largest yet), RMS norm with short rows (6 KB),
#: transpose 14336 x 6144, online softmax with few long rows (3072 x 24576: 23
#: programs per SM, fewer than the slots of 1- and 2-warp programs) and layer norm at
#: N = 5120, a row length no layer norm check used (10 KB rows: 32 resident 1-warp rows
#: per SM hold 43 MB, between the v6 and v5 checks' 26 and 52 MB).
CASES_V8 = {
    "gelu": (USER_SPECS["gelu"], {"n": 120_000_000}, "float16"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 24576, "N": 3072}, "float16"),
    "transpose": (USER_SPECS["transpose"], {"M": 14336, "N": 6144}, "float16"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 3072, "N": 24576}, "float16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 20480, "N": 5120}, "float16"),
}
#: The ninth check, fixed after the v8 timings and before the v9 predictions: shapes
#: that no check timed before and no data file of the repository holds. Layer norm
#: at N = 4096 (8 KB rows: 32 resident 1-warp rows per SM hold 35 MB, between the
#: 29 MB that kept their re-reads in L2 at v5 and the 43 MB that lost them at v8);
#: RMS norm with 16 KB rows (16 resident 4-warp rows per SM: 35 MB); online softmax
#: 10240 x 8192; transpose 9216 x 7168; GELU at 105 M elements.
CASES_V9 = {
    "gelu": (USER_SPECS["gelu"], {"n": 105_000_000}, "float16"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 12288, "N": 8192}, "float16"),
    "transpose": (USER_SPECS["transpose"], {"M": 9216, "N": 7168}, "float16"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 10240, "N": 8192}, "float16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 24576, "N": 4096}, "float16"),
}
#: The tenth check, fixed after the v9 timings and before the v10 predictions: shapes
#: that no check timed before and no data file of the repository holds, and the first
#: dtypes other than fp16: GELU at 85 M bf16 elements; RMS norm in fp32 with 22 KB rows
#: of 5632 columns (not a power of two: the 8192 block masks 31% of its lanes);
#: transpose in fp32 (64-byte pieces of 16 elements, where fp16 moved 32 bytes);
#: online softmax 9216 x 10240 in bf16; layer norm 13312 x 7168 in fp16 (14 KB rows).
#: The largest block is the spaces' own (8192 elements; GELU 16384).
CASES_V10 = {
    "gelu": (USER_SPECS["gelu"], {"n": 85_000_000}, "bfloat16"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 10240, "N": 5632}, "float32"),
    "transpose": (USER_SPECS["transpose"], {"M": 5632, "N": 8704}, "float32"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 9216, "N": 10240}, "bfloat16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 13312, "N": 7168}, "float16"),
}
#: The eleventh check, fixed after the v10 timings and before any v11 prediction: shapes
#: and dtypes that no check timed before and no data file of the repository holds,
#: and two transposes (the v10 miss was fp32): GELU at 72 M fp32 elements; RMS norm in
#: bf16 with 13 KB rows of 6656 columns (the 8192 block masks 19% of its lanes);
#: transpose 7680 x 6656 in fp32 and 12800 x 7424 in bf16 (``transpose_bf16``: the
#: same spec, a second entry); online softmax 7168 x 9728 in fp32 (38 KB rows);
#: layer norm 18432 x 3584 in bf16 (7 KB rows).
CASES_V11 = {
    "gelu": (USER_SPECS["gelu"], {"n": 72_000_000}, "float32"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 14336, "N": 6656}, "bfloat16"),
    "transpose": (USER_SPECS["transpose"], {"M": 7680, "N": 6656}, "float32"),
    "transpose_bf16": (USER_SPECS["transpose"], {"M": 12800, "N": 7424}, "bfloat16"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 7168, "N": 9728}, "float32"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 18432, "N": 3584}, "bfloat16"),
}
#: The twelfth check, fixed after the v11 timings and model v11 (the span drain), before
#: any v12 prediction: shapes and dtypes that no check timed before and no data file of
#: the repository holds, one entry a kernel (181 configs, about 330 s of timing at v11's
#: 1.9 s a config): GELU at 96 M fp32 elements (the v11 miss was fp32 GELU; 384 MB
#: each way); RMS norm 11264 x 7680 in bf16 (15 KB rows; the 8192 block masks 6 % of
#: its lanes); transpose 9728 x 5632 in fp32; online softmax 8704 x 11776 in bf16
#: (23 KB rows); layer norm 15360 x 4608 in fp32, the first fp32 layer norm (18 KB rows).
CASES_V12 = {
    "gelu": (USER_SPECS["gelu"], {"n": 96_000_000}, "float32"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 11264, "N": 7680}, "bfloat16"),
    "transpose": (USER_SPECS["transpose"], {"M": 9728, "N": 5632}, "float32"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 8704, "N": 11776}, "bfloat16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 15360, "N": 4608}, "float32"),
}
#: The thirteenth check, fixed after the v12 timings and model v12 (the soft maximum's
#: exponent 6: docs/results/records_model.md, "Model v12"), before any v13
#: prediction: shapes that no check timed before and no data file of the repository
#: holds, one entry a kernel (181 configs, about 340 s of timing at v12's pace), with the
#: classes the v12 check missed again: layer norm 14848 x 5376 in fp32 (21 KB rows; v12's
#: fp32 layer norm missed both targets) and online softmax 7936 x 12544 in bf16 (25 KB
#: rows; v12's bf16 online softmax missed its pick). GELU at 78 M bf16 elements; RMS norm
#: 8960 x 6912 in fp32 (27 KB rows; the 8192 block masks 16 % of its lanes); transpose
#: 8448 x 7936 in bf16.
CASES_V13 = {
    "gelu": (USER_SPECS["gelu"], {"n": 78_000_000}, "bfloat16"),
    "rms_norm": (USER_SPECS["rms_norm"], {"M": 8960, "N": 6912}, "float32"),
    "transpose": (USER_SPECS["transpose"], {"M": 8448, "N": 7936}, "bfloat16"),
    "online_softmax": (USER_SPECS["online_softmax"], {"M": 7936, "N": 12544}, "bfloat16"),
    "layer_norm": (KERNELS["layer_norm"], {"M": 14848, "N": 5376}, "float32"),
}
SETS = {"v1": CASES_V1, "v2": CASES_V2, "v3": CASES_V3, "v4": CASES_V4, "v5": CASES_V5,
        "v6": CASES_V6, "v7": CASES_V7, "v8": CASES_V8, "v9": CASES_V9,
        "v10": CASES_V10, "v11": CASES_V11, "v12": CASES_V12, "v13": CASES_V13}
CASES = CASES_V2


def _predict_kernel(name: str, set_name: str) -> list[dict[str, object]]:
    from autotile.measure import H200_MEASURED_L2, KernelModelMeasurer

    spec, shape, dtype = SETS[set_name][name]
    m = KernelModelMeasurer(spec, shape, H200_MEASURED_L2, dtype=dtype)
    t0 = time.perf_counter()
    rows: list[dict[str, object]] = []
    for i in range(m.space.size):
        cfg = dict(m.space.config_at(i))
        r = m.measure(cfg)
        rows.append({"kernel": name, "shape": json.dumps(shape), "dtype": dtype,
                     "config": json.dumps(cfg), "status": r.status,
                     "pred_time_s": r.metrics.get("time_s", ""),
                     "pred_hbm_bytes": r.metrics.get("hbm_bytes", ""),
                     "reason": r.error or "",
                     "metrics": json.dumps({k: float(v) for k, v in r.metrics.items()})})
    print(f"{name}: {m.space.size} configs, {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def predict(args: argparse.Namespace) -> None:
    from joblib import Parallel, delayed

    names = [n for n in CASES if not args.kernels or n in args.kernels]
    parts = Parallel(n_jobs=args.jobs)(delayed(_predict_kernel)(n, args.set) for n in names)
    rows = [r for part in parts for r in part]
    DATA.mkdir(parents=True, exist_ok=True)
    with open(args.predictions, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {len(rows)} rows to {args.predictions}")


def time_on_gpu(args: argparse.Namespace) -> None:
    import torch
    import triton

    from autotile.measure import TritonMeasurer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    preds = list(csv.DictReader(open(args.predictions)))
    print("torch", torch.__version__, "triton", triton.__version__,
          torch.cuda.get_device_name(0), flush=True)
    rows: list[dict[str, object]] = []
    rng = random.Random(0)
    for name, (spec, shape, dtype) in CASES.items():
        if args.kernels and name not in args.kernels:
            continue
        cfgs = [json.loads(p["config"]) for p in preds if p["kernel"] == name]
        m = TritonMeasurer(spec, shape, dtype=dtype, warmup_ms=10, rep_ms=50)
        t0 = time.perf_counter()
        m.precompile(cfgs, n_jobs=args.compile_jobs)  # fill Triton's cache in parallel
        first = {}
        for c in cfgs:
            r = m.measure(c)
            first[json.dumps(c)] = r
        ok = [c for c in cfgs if first[json.dumps(c)].ok]
        fns = {json.dumps(c): m.launcher(c) for c in ok}
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(args.rounds):
            order = list(fns)
            rng.shuffle(order)
            for k in order:
                times[k].append(float(triton.testing.do_bench(
                    fns[k], warmup=10, rep=50, return_mode="median")) * 1e-3)
        for c in cfgs:
            k = json.dumps(c)
            r = first[k]
            ts = times.get(k, [])
            rows.append({"kernel": name, "shape": json.dumps(shape), "dtype": dtype,
                         "config": k, "status": r.status,
                         "first_time_s": r.metrics.get("time_s", ""),
                         "rounds_time_s": json.dumps(ts),
                         "median_time_s": float(np.median(ts)) if ts else "",
                         "rel_error": r.metrics.get("rel_error", ""),
                         "error": (r.error or "")[:300]})
        print(f"{name}: {len(ok)}/{len(cfgs)} ok, {time.perf_counter() - t0:.1f} s", flush=True)
        with open(out / "records_model_h200.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


def report(args: argparse.Namespace) -> None:
    from scipy.stats import spearmanr

    for path, what in ((args.predictions, "--part predict"),
                       (args.measured, "--part time (on the GPU)")):
        if not Path(path).is_file():
            raise SystemExit(f"no file {path!r}: run {what} for --set {args.set} first, "
                             f"or pass its path")
    preds = {(p["kernel"], p["config"]): p for p in csv.DictReader(open(args.predictions))}
    meas = list(csv.DictReader(open(args.measured)))
    print(f"{'kernel':16s} {'configs':>7s} {'timed':>5s} {'Spearman':>8s} "
          f"{'pick/best':>9s}  model pick -> measured best")
    for name in CASES:
        rows = [r for r in meas if r["kernel"] == name and r["median_time_s"]]
        if not rows:
            continue
        both = [(float(preds[(name, r["config"])]["pred_time_s"]), float(r["median_time_s"]),
                 r["config"]) for r in rows if preds[(name, r["config"])]["pred_time_s"]]
        p = np.array([b[0] for b in both])
        t = np.array([b[1] for b in both])
        rho = float(spearmanr(p, t).statistic)
        pick = int(np.argmin(p))
        best = int(np.argmin(t))
        n_all = sum(1 for r in meas if r["kernel"] == name)
        print(f"{name:16s} {n_all:7d} {len(both):5d} {rho:8.3f} {t[pick] / t[best]:9.3f}  "
              f"{both[pick][2]} -> {both[best][2]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", required=True, choices=("predict", "time", "report"))
    ap.add_argument("--set", choices=tuple(SETS), default="v13",
                    help="which check: its cases and default file names")
    ap.add_argument("--predictions", default=None)
    ap.add_argument("--measured", default=None)
    ap.add_argument("--out", default="records_model_out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kernels", nargs="*", default=None)
    ap.add_argument("--jobs", type=int, default=2, help="processes for --part predict")
    ap.add_argument("--compile-jobs", type=int, default=16,
                    help="compile processes for --part time (TritonMeasurer.precompile)")
    args = ap.parse_args()
    global CASES
    CASES = SETS[args.set]
    args.predictions = args.predictions or str(DATA / f"records_model_{args.set}_predictions.csv")
    args.measured = args.measured or str(DATA / f"records_model_{args.set}_h200.csv")
    {"predict": predict, "time": time_on_gpu, "report": report}[args.part](args)


if __name__ == "__main__":
    main()
