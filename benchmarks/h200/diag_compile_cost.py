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
* ``autotile`` and ``triton``: the two tuners as the benchmark runs them;
* ``warmup_thread_pool`` (session 11): ``warmup_thread`` while the tuner's compile
  pool starts 5 workers (as a tuning does before its first compile), then the
  pool's close; ``detail`` adds ``close_s``;
* ``autotile_nopool`` (session 11): the tuner with ``compile_ahead=False`` (no
  workers started at all).

The two session-11 modes test whether the workers' start-up slows the tuning's
first compile: in the v3 and v4 runs the first compile of each "here" tuning
took 0.3-0.5 s longer than the configs compiled after it (the benchmark's
``autotune_cost_accounting.py`` on ``data/autotune_kernels_v4``). ``autotile``
rows give the tuner's logged phases and compile times in ``detail``.

    python benchmarks/h200/diag_compile_cost.py --out $OUT   # H200, about 80 s

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

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


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
    if mode in ("autotile", "autotile_nopool", "triton"):
        path = Path(f"/tmp/diag_tuning_{mode}.csv")
        path.unlink(missing_ok=True)
        out = akg.CsvOut(path)
        t0 = time.perf_counter()
        if mode == "triton":
            akg.tune_triton(case, out)
            return time.perf_counter() - t0, ""
        options = {"compile_ahead": False} if mode == "autotile_nopool" else {}
        akg.tune_autotile(case, out, **options)
        wall = time.perf_counter() - t0
        row = list(csv.DictReader(path.open()))[-1]
        times = json.loads(row["autotile_times"] or "{}")
        return wall, json.dumps({"phase_s": {k: round(v, 4) for k, v in
                                             json.loads(row["phase_s"]).items()},
                                 "compile_mode": row["compile_mode"],
                                 "compile_s": {k: round(v["compile_s"] or 0.0, 4)
                                               for k, v in times.items()}})
    t0 = time.perf_counter()
    kern = _port(case)
    t_port = time.perf_counter() - t0
    if mode == "port":
        return t_port, ""
    pool = None
    if mode == "warmup_thread_pool":
        from autotile.tuner import CompilePool
        from autotile.tuner._gpu_backend import TritonBackend

        be = TritonBackend()
        pool = CompilePool(be.worker_fn, n_jobs=8, timeout_s=60.0, init_fn=be.worker_init,
                           mp_context=be.mp_context)
        pool.start(5)  # min(6 configs, min_measured 4) + 1, as the tuner asks
    each = []
    for c in case.configs:
        t1 = time.perf_counter()
        if mode == "warmup_main":
            kern.warmup(*case.args, grid=case.grid, **case.extra, **_meta(c))
        elif mode in ("warmup_thread", "warmup_thread_pool"):
            th = threading.Thread(target=lambda c=c: kern.warmup(
                *case.args, grid=case.grid, **case.extra, **_meta(c)))
            th.start()
            th.join()
        else:  # first_call
            kern[case.grid](*case.args, **case.extra, **_meta(c))
            torch.cuda.synchronize()
        each.append(round(time.perf_counter() - t1, 4))
    detail: dict[str, Any] = {"port_s": round(t_port, 4), "each_s": each}
    if pool is not None:
        t1 = time.perf_counter()
        pool.close()
        detail["close_s"] = round(time.perf_counter() - t1, 4)
    return time.perf_counter() - t0, json.dumps(detail)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    modes = ["port", "warmup_main", "warmup_thread", "first_call", "autotile", "triton",
             "warmup_thread_pool", "autotile_nopool"]
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
                    try:
                        wall, detail = run_mode(case, mode)
                    except Exception as exc:  # noqa: BLE001 - the other modes still run
                        wall, detail = float("nan"), f"FAILED: {type(exc).__name__}: {exc}"
                    w.writerow([case.id, mode, r, f"{wall:.4f}", detail])
                    f.flush()
                    print(f"{case.id} {mode} r{r}: {wall:.3f} s {detail}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
