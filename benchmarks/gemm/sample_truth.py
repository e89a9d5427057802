"""Sampled ground truth of ``gemm_space(n)``: exact counts of N random schedules (issue 16).

The n = 1024 space (958,320 schedules) is too large to sweep, so this measures a
uniform random sample of it, without replacement, with a fixed seed:

    python benchmarks/gemm/sample_truth.py [--n 1024] [--samples 20000] [--seed 0]
        [--n-jobs 2] [--out autotile/data/gemm1024_sample.npz]

Each schedule is measured by :class:`autotile.measure.ScheduleMeasurer` (the exact
periodic fast path, same cache and cost model as the shipped 64x64 table), so the
columns are the 64x64 table's (:data:`~autotile.measure.SCHEDULE_METRICS`) plus
``index`` (the row's ``space.config_at`` index). Chunks are measured with joblib
and saved in ``<out>.parts/`` as they finish, so a killed run resumes; ``--samples``
smaller than a finished run keeps its first rows (the sample order is fixed by the
seed). Chunks are measured and written by the same code as :func:`autotile.measure.sweep`
(an ``"ok"`` result whose objective is NaN or +-inf is recorded as failed; each part is
written to a temporary file and moved into place, so a killed run never leaves a
truncated part). The minimum over this table is the best *known* value, not a proven
optimum.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotile.measure import SCHEDULE_METRICS, ScheduleMeasurer  # noqa: E402
from autotile.measure._ground_truth import _measure_chunk, _save_chunk  # noqa: E402
from autotile.space import gemm_space  # noqa: E402


def sample_indices(n_configs: int, n_samples: int, seed: int) -> np.ndarray:
    """The first ``n_samples`` of a seeded random permutation of ``range(n_configs)``."""
    return np.random.default_rng(seed).permutation(n_configs)[:n_samples]


def _chunk(n: int, indices: list[int]) -> tuple[np.ndarray, np.ndarray, float]:
    """Measure one chunk in a worker (the space is built there, not pickled)."""
    space = gemm_space(n)
    m = ScheduleMeasurer(space)
    t0 = time.process_time()
    _, vals, status = _measure_chunk(m, space, SCHEDULE_METRICS, (0, indices))
    return vals, status, time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=250)
    ap.add_argument("--deadline-s", type=float, default=math.inf,
                    help="stop starting new chunks after this many wall seconds")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = Path(a.out or f"autotile/data/gemm{a.n}_sample.npz")
    parts = out.with_name(out.name + ".parts")
    parts.mkdir(parents=True, exist_ok=True)
    space = gemm_space(a.n)
    idx = sample_indices(len(space), a.samples, a.seed)
    chunks = [idx[lo:lo + a.chunk] for lo in range(0, len(idx), a.chunk)]
    t0 = time.perf_counter()
    todo = [c for c in range(len(chunks)) if not (parts / f"{c:05d}.npz").exists()]
    # batches of n_jobs chunks, so a deadline stops between batches
    for b in range(0, len(todo), a.n_jobs):
        if time.perf_counter() - t0 > a.deadline_s:
            print(f"deadline: stopping with {len(todo) - b} chunks left", flush=True)
            break
        batch = todo[b:b + a.n_jobs]
        done = Parallel(n_jobs=a.n_jobs)(
            delayed(_chunk)(a.n, [int(i) for i in chunks[c]]) for c in batch)
        for c, (vals, status, cpu) in zip(batch, done):
            _save_chunk(parts / f"{c:05d}.npz", vals, status, cpu_s=cpu)
        print(f"{b + len(batch)}/{len(todo)} chunks, {time.perf_counter() - t0:.0f} s",
              flush=True)
    have = []
    for c in range(len(chunks)):  # the finished prefix of the sample
        p = parts / f"{c:05d}.npz"
        if not p.exists():
            break
        have.append(np.load(p))
    n_rows = sum(len(h["status"]) for h in have)
    vals = np.concatenate([h["values"] for h in have]) if have else \
        np.zeros((0, len(SCHEDULE_METRICS)))
    status = np.concatenate([h["status"] for h in have]).astype(np.int8) if have else \
        np.zeros(0, np.int8)
    cpu = float(sum(float(h["cpu_s"]) for h in have))
    m = ScheduleMeasurer(space)
    meta = {
        "kind": "sample", "n": a.n, "n_configs": len(space), "n_samples": n_rows,
        "n_samples_requested": a.samples, "seed": a.seed,
        "sampling": "numpy.random.default_rng(seed).permutation(n_configs)[:n_samples]",
        "metrics": list(SCHEDULE_METRICS), "measurer": "ScheduleMeasurer",
        "measurer_settings": json.loads(json.dumps(m.settings(), default=str))
        if hasattr(m, "settings") else {},
        "cpu_s": round(cpu, 1), "wall_s_this_run": round(time.perf_counter() - t0, 1),
        "n_jobs": a.n_jobs, "python": platform.python_version(),
        "made_by": "python benchmarks/gemm/sample_truth.py",
    }
    arrays = {f"m_{k}": vals[:, j] for j, k in enumerate(SCHEDULE_METRICS)}
    tmp = out.with_name(out.stem + ".tmp.npz")  # written whole, then moved into place
    try:
        np.savez_compressed(tmp, index=idx[:n_rows].astype(np.int64), status=status,
                            meta=np.array(json.dumps(meta)), **arrays)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    ok = status == 0
    best = float(np.nanmin(vals[ok, 0])) if ok.any() else math.nan
    print(f"wrote {out}: {n_rows} schedules, {cpu:.0f} CPU s, {os.path.getsize(out)} bytes, "
          f"best known misses {best:.0f}")


if __name__ == "__main__":
    main()
