"""Where a short list's tuning wall goes: compile paths and both tuners, same process (H200).

The v4 kernels run (``autotune_kernels_gpu.py --part time --cases v4``) had
``autotile.autotune`` slower than ``triton.autotune`` on all six short lists
(6 configs), with its compile phase alone (1.0-2.8 s) longer than Triton's
whole tuning of the same list on the softmax cases. This times, for one
softmax and one layer-norm case of that run, in one process and in rotating
order (each from a fresh ``TRITON_CACHE_DIR`` and a freshly ported kernel):

* ``port``: :func:`autotile.measure.gpu.port_to_triton` alone;
* ``warmup_main``: ``kernel.warmup(...)`` of the 6 configs in the main thread;
* ``warmup_thread``: the same, each in a thread (as the tuner's "here" mode);
* ``first_call``: the first launch of each config (what ``triton.autotune``
  compiles through);
* ``autotile`` and ``triton``: the two tuners as the benchmark runs them.

    python benchmarks/h200/diag_compile_cost.py --out $OUT   # H200, about 60 s

Writes ``diag_compile_cost.csv`` (case, mode, repeat, wall_s, detail).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("akg", HERE / "autotune_kernels_gpu.py")
akg = importlib.util.module_from_spec(_spec)
sys.modules["akg"] = akg
_spec.loader.exec_module(akg)  # type: ignore[union-attr]

CASES = [("softmax", {"M": 18432, "N": 1792}, "float32"),
         ("layer_norm", {"M": 12288, "N": 1800}, "float16")]


def _port(case: Any) -> Any:
    from autotile.measure.gpu import port_to_triton

    fn = case.fn()
    return getattr(port_to_triton([fn]), fn.__name__)


def _meta(c: Any) -> dict[str, Any]:
    return {**c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages}


def run_mode(case: Any, mode: str) -> tuple[float, str]:
    import torch

    akg.fresh_triton_cache()
    torch.cuda.synchronize()
    if mode in ("autotile", "triton"):
        out = akg.CsvOut(Path("/tmp/diag_tuning.csv"))
        t0 = time.perf_counter()
        if mode == "autotile":
            akg.tune_autotile(case, out)
        else:
            akg.tune_triton(case, out)
        return time.perf_counter() - t0, ""
    t0 = time.perf_counter()
    kern = _port(case)
    t_port = time.perf_counter() - t0
    if mode == "port":
        return t_port, ""
    each = []
    for c in case.configs:
        t1 = time.perf_counter()
        if mode == "warmup_main":
            kern.warmup(*case.args, grid=case.grid, **case.extra, **_meta(c))
        elif mode == "warmup_thread":
            th = threading.Thread(target=lambda c=c: kern.warmup(
                *case.args, grid=case.grid, **case.extra, **_meta(c)))
            th.start()
            th.join()
        else:  # first_call
            kern[case.grid](*case.args, **case.extra, **_meta(c))
            torch.cuda.synchronize()
        each.append(round(time.perf_counter() - t1, 4))
    return time.perf_counter() - t0, json.dumps({"port_s": round(t_port, 4), "each_s": each})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    modes = ["port", "warmup_main", "warmup_thread", "first_call", "autotile", "triton"]
    with open(args.out / "diag_compile_cost.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "mode", "repeat", "wall_s", "detail"])
        for kernel, shape, dtype in CASES:
            case = akg.Case(kernel, shape, dtype, None)
            case.build()
            for r in range(args.repeats):
                order = modes[r % len(modes):] + modes[:r % len(modes)]
                if r % 2:
                    order = order[::-1]
                for mode in order:
                    wall, detail = run_mode(case, mode)
                    w.writerow([case.id, mode, r, f"{wall:.4f}", detail])
                    f.flush()
                    print(f"{case.id} {mode} r{r}: {wall:.3f} s {detail}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
