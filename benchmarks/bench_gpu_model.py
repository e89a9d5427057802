"""Benchmark the GPU model: seed §4.3 traffic, scoring time per config, best configs, Pareto.

Run: ``python benchmarks/bench_gpu_model.py [--n-timed 40] [--n-sample 200]``.
Prints Markdown tables. Wall times on a shared machine are noisy, so CPU
(process) time is printed next to them.
"""

from __future__ import annotations

import argparse
import statistics
import time

from autotile.measure._hardware import H100_SXM
from autotile.measure._kernel_measurer import (
    KernelModelMeasurer,
    flash_attention_pareto,
    matmul_tile_schedule,
)
from autotile.measure._l2sim import simulate_l2

SHAPE = {"M": 8192, "N": 8192, "K": 8192}


def seed_traffic() -> None:
    print("## Seed §4.3: 8192^3 fp16, 128x128x64, 50 MB L2 (3,051 tiles), 132 programs\n")
    print("| GROUP_M | HBM read GB | compulsory GB | C writes GB | L2 hit rate | probe s "
          "| sim ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for g in (1, 8, 16, 64):
        t0 = time.perf_counter()
        sched, _ = matmul_tile_schedule(8192, 8192, 8192, 128, 128, 64, g)
        t1 = time.perf_counter()
        st = simulate_l2(sched, l2_bytes=H100_SXM.l2_bytes, n_concurrent=132)
        t2 = time.perf_counter()
        print(f"| {g} | {st.hbm_read_bytes / 1e9:.3f} | {st.compulsory_read_bytes / 1e9:.3f} "
              f"| {st.hbm_write_bytes / 1e9:.3f} | {st.l2_hit_rate:.3f} | {t1 - t0:.2f} "
              f"| {(t2 - t1) * 1e3:.1f} |")
    print()


def timed(m: KernelModelMeasurer, cfg: object) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    r = m.measure(cfg)
    return time.perf_counter() - w, time.process_time() - c, r


def scoring_time(n: int, seed: int) -> None:
    m = KernelModelMeasurer("matmul", SHAPE)
    cfgs = m.space.sample(rng=seed, n=n)
    cold = [timed(m, c) for c in cfgs]
    warm = [timed(m, c) for c in cfgs]
    ok = [i for i, (_, _, r) in enumerate(warm) if r.ok]  # type: ignore[attr-defined]
    print(f"## Scoring time per matmul config at 8192^3 ({n} random configs, seed {seed}; "
          f"{len(ok)} feasible)\n")
    print("| pass | median wall ms | median CPU ms | p90 wall ms | max wall ms |")
    print("|---|---:|---:|---:|---:|")
    for name, rows in (("cold (probe + schedule + sim)", cold), ("warm (cached schedule)", warm)):
        ws = sorted(rows[i][0] * 1e3 for i in ok)
        cs = [rows[i][1] * 1e3 for i in ok]
        print(f"| {name} | {statistics.median(ws):.1f} | {statistics.median(cs):.1f} "
              f"| {ws[int(0.9 * (len(ws) - 1))]:.1f} | {ws[-1]:.1f} |")
    print()


def best_configs(n: int, seed: int) -> None:
    m = KernelModelMeasurer("matmul", SHAPE, max_probe_programs=512)
    cfgs = m.space.sample(rng=seed, n=n)
    res = [r for r in (m.measure(c) for c in cfgs) if r.ok]
    res.sort(key=lambda r: r.metrics["time_s"])
    n_mem = sum(r.metrics["bound"] for r in res)
    print(f"## Where the model puts the matmul configs ({n} sampled, {len(res)} feasible; "
          f"{int(n_mem)} memory-bound)\n")
    print("| rank | config | TFLOP/s | compute ms | memory ms | HBM GB | L2 hit | blocks/SM "
          "| bound |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for i in list(range(min(10, len(res)))) + [len(res) // 2, len(res) - 1]:
        r = res[i]
        x = r.metrics
        print(f"| {i + 1} | {r.config} | {x['tflops']:.0f} | {x['compute_s'] * 1e3:.3f} "
              f"| {x['memory_s'] * 1e3:.3f} | {x['hbm_bytes'] / 1e9:.2f} "
              f"| {x['l2_hit_rate']:.3f} | {x['blocks_per_sm']:.0f} "
              f"| {'memory' if x['bound'] else 'compute'} |")
    top = res[: max(1, len(res) // 10)]
    print(f"\nTop decile: {sum(r.metrics['bound'] for r in top):.0f} of {len(top)} "
          "memory-bound.\n")


def pareto() -> None:
    print("## Flash attention Pareto front, N = 4096, d = 128, fp16 (exact, by enumeration)\n")
    print("| BLOCK_M | BLOCK_N | HBM MiB | on-chip KiB | programs |")
    print("|---:|---:|---:|---:|---:|")
    for p in flash_attention_pareto(4096, 128):
        print(f"| {p['BLOCK_M']} | {p['BLOCK_N']} | {p['hbm_bytes'] / 2**20:.1f} "
              f"| {p['onchip_bytes'] / 1024:.0f} | {p['n_programs']} |")
    print()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-timed", type=int, default=40)
    ap.add_argument("--n-sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    seed_traffic()
    scoring_time(a.n_timed, a.seed)
    best_configs(a.n_sample, a.seed + 1)
    pareto()


if __name__ == "__main__":
    main()
