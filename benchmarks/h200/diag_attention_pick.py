"""Diagnostic (H200): why ``autotile.autotune`` picked a 26 % slower attention config.

Session 9's held-out run (``autotune_kernels_gpu.py --cases v2``) timed, at 96 heads,
N = 512, d = 64 fp16, autotile's pick (64x128, 2 stages, 37.8 us) against the best
config (64x64, 3 stages, 30.1 us), which autotile itself had measured. This script
tunes that case ``--repeats`` times from a cold Triton cache and writes every
record of the tuner's history (status, first-pass and re-timed times, compile
seconds, the model's time) to ``$OUT/diag_attention_pick.csv``; then it times the two
configs with ``do_bench`` alone and while another config compiles in a thread of the
same process (``$OUT/diag_attention_overlap.csv``).

Usage (H200)::

    python benchmarks/h200/diag_attention_pick.py --out $OUT [--repeats 3]
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from autotune_kernels_gpu import Case, config_text, fresh_triton_cache  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    import torch
    import triton
    import triton.testing

    from autotile.measure.gpu import port_to_triton
    from autotile.tuner import autotune

    args.out.mkdir(parents=True, exist_ok=True)
    case = Case("attention", {"heads": 96, "N": 512, "d": 64}, "float16", None)
    case.build()
    rows = []
    for rep in range(args.repeats):
        fresh_triton_cache()
        tuner = autotune(configs=case.configs, key=case.key, backend="gpu",
                         cache_dir=tempfile.mkdtemp(prefix="autotile_cache_"))(case.fn())
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        tuner[case.grid](*case.args, **case.extra)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        for i, r in enumerate(tuner.history):
            rows.append({"repeat": rep, "order": i, "config": config_text(r.config),
                         "status": r.status, "time_s": r.time_s,
                         "metrics": json.dumps(r.metrics), "reason": (r.reason or "")[:200],
                         "pick": config_text(tuner.best_config), "wall_s": wall,
                         "compile_mode": tuner.compile_mode})
        print(f"repeat {rep}: {wall:.2f} s, pick {config_text(tuner.best_config)}, "
              f"mode {tuner.compile_mode}", flush=True)
        for r in tuner.history:
            if r.status == "ok":
                shown = {k: round(v * 1e6, 2) if k.endswith("_s") and k != "compile_s"
                         else round(v, 3) for k, v in r.metrics.items()}
                print("   ", config_text(r.config), shown, flush=True)
    with open(args.out / "diag_attention_pick.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

    # the two configs alone, and while a compile runs in a thread of this process
    fn = case.fn()
    kern = getattr(port_to_triton([fn]), fn.__name__)
    by_text = {config_text(c): c for c in case.configs}
    pair = [by_text["BLOCK_M=64 BLOCK_N=64 w4 s3"], by_text["BLOCK_M=64 BLOCK_N=128 w4 s2"]]
    others = [c for c in case.configs if c not in pair]

    def launcher(c):
        def call() -> None:
            kern[case.grid](*case.args, **case.extra, **c.kwargs, num_warps=c.num_warps,
                            num_stages=c.num_stages)
        return call

    out = []
    for rnd in range(3):
        for mode in ("alone", "compile_thread"):
            for c in pair:
                th = None
                if mode == "compile_thread":
                    fresh_triton_cache()
                    oc = others[(rnd * 2 + pair.index(c)) % len(others)]
                    th = threading.Thread(target=lambda oc=oc: kern.warmup(
                        *case.args, grid=(1, 1), **case.extra, **oc.kwargs,
                        num_warps=oc.num_warps, num_stages=oc.num_stages), daemon=True)
                    launcher(c)()  # compiled before the thread starts
                    torch.cuda.synchronize()
                    th.start()
                t = float(triton.testing.do_bench(launcher(c), warmup=10, rep=50))
                busy = th.is_alive() if th is not None else False
                if th is not None:
                    th.join()
                out.append({"round": rnd, "mode": mode, "config": config_text(c), "ms": t,
                            "thread_alive_after": busy})
                print(rnd, mode, config_text(c), f"{t * 1e3:.1f} us", busy, flush=True)
    with open(args.out / "diag_attention_overlap.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)


if __name__ == "__main__":
    main()
