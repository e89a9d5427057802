"""Zero-shot pick and rank correlation of the GPU model on timed attention configs (CPU).

In-sample check of the flash-attention model (``"flash_attention_io"``): its
form was chosen on these timings, so the figures are not held out. Sources:
``data/autotune_kernels`` and ``data/autotune_kernels_attention_probe`` (tutorial
06's 21 configs at 3 shapes, 2026-12-02) and ``data/h200_flash.csv`` (fixed plus
sampled configs of the whole space at 2 shapes).

    python benchmarks/h200/kernels_model_check.py
"""

from __future__ import annotations

import csv
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "benchmarks" / "h200" / "data"


def timed_configs() -> dict[tuple[str, int, int, int], list[tuple[dict[str, int], float]]]:
    """``(source, heads, N, d) -> [(config, median seconds)]`` of every timed config."""
    out: dict[tuple[str, int, int, int], list[tuple[dict[str, int], float]]] = defaultdict(list)
    names = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
    for src in ("autotune_kernels", "autotune_kernels_attention_probe"):
        for r in csv.DictReader(open(DATA / src / "autotune_kernels_summary.csv")):
            if r["case"].startswith("attention") and r["name"].startswith("cfg_") \
                    and r["median_ms"]:
                h, n, d = map(int, re.findall(r"\d+", r["case"].split(":")[1]))
                vals = map(int, re.findall(r"\d+", r["config"]))
                out[src, h, n, d].append((dict(zip(names, vals)), float(r["median_ms"]) * 1e-3))
    for r in csv.DictReader(open(DATA / "h200_flash.csv")):
        if r["kernel"] == "flash_attention" and r["status"] == "ok":
            key = ("h200_flash", int(r["heads"]), int(r["N"]), int(r["d"]))
            out[key].append(({k: int(r[k]) for k in names}, float(r["time_s"])))
    return out


def main() -> int:
    import numpy as np
    from scipy.stats import spearmanr

    from autotile.measure import H200_MEASURED_L2, KernelModelMeasurer

    print("| source | heads x N x d | configs | model's pick | % of best | Spearman |")
    print("|---|---|---|---|---|---|")
    for (src, h, n, d), rows in sorted(timed_configs().items()):
        m = KernelModelMeasurer("flash_attention", {"N": n, "d": d, "heads": h},
                                H200_MEASURED_L2, dtype="float16")
        pred = []
        for c, _ in rows:
            r = m._measure(c)
            pred.append(float(r.metrics["time_s"]) if r.ok else np.inf)
        meas = np.array([t for _, t in rows])
        p = np.array(pred)
        i = int(np.argmin(p))
        ok = np.isfinite(p)
        rho = spearmanr(meas[ok], p[ok]).correlation
        c = rows[i][0]
        print(f"| {src} | {h} x {n} x {d} | {len(rows)} | {c['BLOCK_M']}x{c['BLOCK_N']} "
              f"w{c['num_warps']} s{c['num_stages']} | {100 * meas.min() / meas[i]:.1f}% | "
              f"{rho:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
