"""Diagnostics on the H200 for what the records model and the GPU tuner miss.

Two parts, each a plain measurement (no prediction is checked here):

``--part launch --kernel K --config JSON --set vN`` runs one config of a
records-model check (``records_model_h200.py``'s cases) once after a warm-up,
for ``ncu`` to profile. Used to see why near-tied configs differ on the
device (achieved occupancy, DRAM bytes, warp stall reasons)::

    ncu --clock-control none --section SpeedOfLight --section Occupancy \
        --section WarpStateStats --section MemoryWorkloadAnalysis --csv \
        --launch-skip 1 --launch-count 1 \
        python benchmarks/h200/diag_records.py --part launch --kernel rms_norm \
        --config '{"BLOCK": 2048, "num_warps": 4}' --set v5

``--part compile`` splits the GPU tuner's compile cost (issue #13): the time
for ``CompilePool`` workers to start (import Triton and PyTorch, create a
CUDA context), the time of each compile in a worker, and the time of the same
compiles in this process, each from its own empty Triton cache, for the
library's fused softmax (tutorial 02's config list). Prints one line per
measurement.

``--part reduce`` times the latency of one block reduction in a program's
dependent chain, by ``num_warps`` (:func:`reduce_latency`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def launch(args: argparse.Namespace) -> None:
    import torch

    from autotile.measure import TritonMeasurer
    from benchmarks.h200.records_model_h200 import SETS

    spec, shape, dtype = SETS[args.set][args.kernel]
    m = TritonMeasurer(spec, shape, dtype=dtype)
    fn = m.launcher(json.loads(args.config))
    fn()  # compile and warm up: ncu skips this launch (--launch-skip 1)
    torch.cuda.synchronize()
    fn()
    torch.cuda.synchronize()


def compile_split(args: argparse.Namespace) -> None:
    import triton

    from autotile.tuner._compile_ahead import CompilePool
    from autotile.tuner._gpu_backend import TritonBackend, _compile_in_worker, _worker_init
    from benchmarks.h200.autotune_kernels_gpu import Case

    case = Case("softmax", {"M": 8192, "N": 4096}, "float32", None)
    case.build()
    backend = TritonBackend()
    kern = backend.kernel(case.fn())
    configs = case.configs
    print(f"triton {triton.__version__}, {len(configs)} configs", flush=True)

    def fresh_cache() -> None:
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="diag_cache_")

    # in this process, one after another (what triton.autotune does)
    fresh_cache()
    for c in configs:
        t0 = time.perf_counter()
        kern.warmup(*case.args, grid=case.grid, **case.extra, **c.all_kwargs())
        print(f"in-process compile {c}: {time.perf_counter() - t0:.3f} s", flush=True)
    # worker start-up and compiles in workers
    for n in (1, len(configs)):
        fresh_cache()
        jobs = [backend.compile_job(kern, case.args, case.extra, case.grid, c)
                for c in configs]
        t0 = time.perf_counter()
        pool = CompilePool(_compile_in_worker, n_jobs=n, init_fn=_worker_init)
        pool.start(n)
        out = pool.run(jobs[:n])
        t1 = time.perf_counter()
        print(f"pool of {n}: start + first {n} compiles {t1 - t0:.3f} s; worker compile_s "
              f"{[round(o.compile_s, 3) for o in out]}", flush=True)
        out = pool.run(jobs)
        print(f"pool of {n}: all {len(jobs)} again (cached) {time.perf_counter() - t1:.3f} s",
              flush=True)
        pool.close()
    # import cost alone, in a fresh interpreter
    import subprocess

    for stmt in ("import torch", "import torch, triton",
                 "import torch, triton; torch.cuda.init(); torch.empty(1, device='cuda')"):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", stmt], check=True)
        print(f"fresh python -c {stmt!r}: {time.perf_counter() - t0:.3f} s", flush=True)


def reduce_latency(args: argparse.Namespace) -> None:
    """Cycles of one block reduction in a program's dependent chain, by ``num_warps``.

    One program per SM (grid = number of SMs) runs ``ITERS`` reductions, each
    feeding the next (``x = x - max(x) * 0.5``); the time of ``ITERS`` = 2048
    minus that of ``ITERS`` = 0, over 2048, at the SM clock ncu reported
    for these runs, is the latency of one reduction plus one subtract.
    """
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def chain(x_ptr, out_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr, SUM: tl.constexpr):
        pid = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        for _ in range(ITERS):
            if SUM:
                s = tl.sum(x, axis=0)
            else:
                s = tl.max(x, axis=0)
            x = x - s * 0.5
        tl.store(out_ptr + pid * BLOCK + offs, x)

    n_sm = torch.cuda.get_device_properties(0).multi_processor_count
    for per_thread in (4, 16):
        for nw in (1, 2, 4, 8, 16, 32):
            block = 32 * nw * per_thread
            x = torch.rand(block, device="cuda", dtype=torch.float32)
            out = torch.empty(n_sm * block, device="cuda", dtype=torch.float32)
            for red in (0, 1):
                ts = {}
                for iters in (0, 2048):
                    fn = lambda: chain[(n_sm,)](x, out, ITERS=iters, BLOCK=block, SUM=red,  # noqa: E731
                                                num_warps=nw)
                    fn()
                    ts[iters] = triton.testing.do_bench(fn, warmup=20, rep=100,
                                                        return_mode="median") * 1e-3
                per = (ts[2048] - ts[0]) / 2048
                print(f"reduce {'sum' if red else 'max'} num_warps {nw:2d} elems/thread "
                      f"{per_thread:2d}: {per * 1e9:.1f} ns per reduction step "
                      f"({per * 1.98e9:.0f} cycles at 1.98 GHz)", flush=True)


def sass(args: argparse.Namespace) -> None:
    """Global loads per loop iteration in the SASS of a records-check config (unrolling).

    Compiles ``--kernel``/``--config`` of ``--set`` with Triton and prints the
    SASS lines of its loads (``LDG``) and branches, so whether ptxas unrolled a
    loop (several loads of consecutive iterations before the branch back) shows.
    """
    from autotile.measure import TritonMeasurer
    from benchmarks.h200.records_model_h200 import SETS

    spec, shape, dtype = SETS[args.set][args.kernel]
    m = TritonMeasurer(spec, shape, dtype=dtype)
    cfg = json.loads(args.config)
    for la in m._launches(cfg, m.data()):
        k = m._port(la.kernel).warmup(*la.positional(), grid=la.grid, **dict(la.meta),
                                      num_warps=la.num_warps, num_stages=la.num_stages)
        text = k.asm.get("sass", "")
        if not text and "cubin" in k.asm:  # Triton 3.6 keeps the cubin, not the SASS
            import subprocess
            import tempfile

            with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
                f.write(k.asm["cubin"])
            text = subprocess.run(["nvdisasm", "-c", f.name], capture_output=True,
                                  text=True).stdout
        lines = [ln.strip() for ln in text.splitlines()
                 if "LDG" in ln or "BRA" in ln or "STG" in ln or "SHFL" in ln or "BAR" in ln]
        print(f"{args.kernel} {cfg}: {len(lines)} load/store/branch lines")
        for ln in lines:
            print("   ", ln[:120])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", required=True, choices=("launch", "compile", "reduce", "sass"))
    ap.add_argument("--kernel")
    ap.add_argument("--config")
    ap.add_argument("--set", default="v5")
    args = ap.parse_args()
    {"launch": launch, "compile": compile_split, "reduce": reduce_latency,
     "sass": sass}[args.part](args)


if __name__ == "__main__":
    main()
