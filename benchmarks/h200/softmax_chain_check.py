"""The row softmax model's zero-shot pick on every fp32 softmax shape timed on the H200 (CPU).

For each shape of ``data/autotune_kernels`` (v1), ``data/autotune_kernels_v2/call1``
(v2) and ``data/h200_softmax.csv`` (``source == "grid"``, one row a program): the
model's time of ``num_warps`` in {1, 2, 4, 8, 16, 32} with the tutorial's block, its
pick (ties go to the list order, as ``@autotune``'s ranking), the pick's measured %
of the best and the Spearman rank correlation. All nine shapes were used to choose
the model's form (in-sample); no constant is fitted on them.

    python benchmarks/h200/softmax_chain_check.py
"""

from __future__ import annotations

import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "benchmarks" / "h200" / "data"
WARPS = (1, 2, 4, 8, 16, 32)


def measured_us() -> dict[tuple[int, int], dict[int, float]]:
    """Median time (us) of each (M, N) and num_warps, from the three data files."""
    out: dict[tuple[int, int], dict[int, float]] = defaultdict(dict)
    for d in (DATA / "autotune_kernels", DATA / "autotune_kernels_v2" / "call1"):
        for r in csv.DictReader(open(d / "autotune_kernels_summary.csv")):
            if r["case"].startswith("softmax") and r["name"].startswith("cfg_"):
                M, N = (int(x[1:]) for x in r["case"].split(":")[1].split("x"))
                out[(M, N)][int(r["config"].split()[1][1:])] = float(r["median_ms"]) * 1e3
    for r in csv.DictReader(open(DATA / "h200_softmax.csv")):
        if r["source"] == "grid" and r["ROWS_PER_PROGRAM"] == "1" and r["status"] == "ok":
            out[(int(r["M"]), int(r["N"]))][int(r["num_warps"])] = float(r["time_s"]) * 1e6
    return out


def predicted_us(M: int, N: int) -> dict[int, float]:
    """The model's time (us) of each num_warps, as ``@autotune``'s prior scores it."""
    from autotile.kernels import softmax_kernel
    from autotile.measure.gpu import H200_MEASURED_L2
    from autotile.tuner import LaunchConfig
    from autotile.tuner._library import default_scorer

    scorer = default_scorer(softmax_kernel, H200_MEASURED_L2)
    x = np.zeros((M, N), np.float32)
    named = {"output_ptr": x, "input_ptr": x, "input_row_stride": N,
             "output_row_stride": N, "n_cols": N}
    out = {}
    for w in WARPS:
        c = LaunchConfig({"BLOCK_SIZE": 1 << (N - 1).bit_length()}, num_warps=w, num_stages=1)
        r = scorer(c, named)
        out[w] = float(r.metrics["time_s"]) * 1e6 if r.ok else math.inf
    return out


def _ranks(v: list[float]) -> np.ndarray:
    return np.argsort(np.argsort(np.asarray(v)))


def main() -> int:
    picks = []
    print("| M x N | pick | % of best | Spearman | predicted (us) | measured (us) |")
    print("|---|---|---|---|---|---|")
    for (M, N), m in sorted(measured_us().items()):
        p = predicted_us(M, N)
        zero = min(WARPS, key=lambda w: p[w])  # min keeps the first of ties: list order
        pct = 100.0 * min(m.values()) / m[zero]
        picks.append(pct)
        rho = float(np.corrcoef(_ranks([p[w] for w in m]), _ranks(list(m.values())))[0, 1])
        print(f"| {M} x {N} | w{zero} | {pct:.1f}% | {rho:.2f} | "
              + " ".join(f"{p[w]:.1f}" for w in m) + " | "
              + " ".join(f"{m[w]:.1f}" for w in m) + " |")
    print(f"zero-shot median {np.median(picks):.1f}%, minimum {min(picks):.1f}% "
          f"({len(picks)} shapes, in-sample)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
