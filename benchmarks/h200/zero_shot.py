"""The GPU model's zero-shot ranking of tutorial 03's configs against H200 timings (CPU only).

For every shape of an ``autotune_gpu_summary.csv`` (written by ``autotune_gpu.py``),
rank tutorial 03's 16 configs with ``autotile.perf_model(matmul_kernel,
hardware=H200_MEASURED_L2)`` (the prior ``@autotune`` uses on an H200, default
``GpuModelParams``), on stand-ins of the call's tensors, and report

* Spearman's rho between the model's times and the measured medians over the
  configs that ran (a config the model finds infeasible ranks last, tied);
* the model's pick (its fastest config) as a percentage of the best measured
  tutorial config: ``best median / pick's median``;
* seconds to rank the 16 configs (the first shape of a fresh process includes
  the probes' and the model's first use).

Run ``python benchmarks/h200/zero_shot.py`` (about 2 s plus imports);
``--summary PATH`` reads another summary CSV.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.h200.h200_configs import TUTORIAL_CONFIGS  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"


class _DeviceTensor:
    """Shape and dtype of a device tensor, as ``perf_model`` reads them (no data)."""

    def __init__(self, shape: tuple[int, ...], dtype: str) -> None:
        self.shape, self.dtype = shape, f"torch.{dtype}"

    def data_ptr(self) -> int:
        raise AssertionError("the model must not read device memory")


def config_text(bm: int, bn: int, bk: int, g: int, s: int, w: int) -> str:
    return f"{bm}x{bn}x{bk} G{g} w{w} s{s}"


def read_summary(path: Path) -> dict[str, dict[str, float]]:
    """``{shape: {config text: median seconds}}`` of the tutorial configs that ran."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    with path.open() as f:
        for r in csv.DictReader(f):
            if r["name"].startswith("tutorial") and r["median_ms"]:
                out[r["shape"]][r["config"]] = float(r["median_ms"]) * 1e-3
    return dict(out)


def rank_shape(shape: str) -> tuple[dict[str, float], float]:
    """Model seconds per tutorial config (inf: infeasible) and the ranking's wall time."""
    import autotile
    from autotile.kernels import matmul_kernel
    from autotile.measure.gpu import H200_MEASURED_L2

    dims, dtype = shape.split(":")
    M, N, K = (int(v) for v in dims.split("x"))
    t0 = time.perf_counter()
    pm = autotile.perf_model(matmul_kernel, hardware=H200_MEASURED_L2)
    call: dict[str, Any] = dict(
        a_ptr=_DeviceTensor((M, K), dtype), b_ptr=_DeviceTensor((K, N), dtype),
        c_ptr=_DeviceTensor((M, N), dtype), M=M, N=N, K=K, stride_am=K, stride_ak=1,
        stride_bk=N, stride_bn=1, stride_cm=N, stride_cn=1, PID_ORDER="grouped")
    pred = {config_text(*c): pm(**call, BLOCK_M=c[0], BLOCK_N=c[1], BLOCK_K=c[2],
                                GROUP_M=c[3], num_stages=c[4], num_warps=c[5]) * 1e-3
            for c in TUTORIAL_CONFIGS}
    return pred, time.perf_counter() - t0


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rho with average ranks for ties (inf ties last)."""
    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2.0
            i = j + 1
        return r
    rx, ry = ranks(x), ranks(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", type=Path, default=DATA / "autotune_gpu_summary.csv")
    ap.add_argument("--predict", default=None, metavar="SHAPES",
                    help="write the model's time of every tutorial config at these shapes "
                         "(comma-separated MxNxK:dtype, or a name known to autotune_gpu.py) "
                         "to --out instead, before they are timed")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.predict:
        from benchmarks.h200.autotune_gpu import parse_shapes

        rows = []
        for M, N, K, dtype in parse_shapes(args.predict):
            shape = f"{M}x{N}x{K}:{dtype}"
            pred, wall = rank_shape(shape)
            pick = min((n for n in pred if math.isfinite(pred[n])), key=lambda n: pred[n])
            print(f"{shape}: model's pick {pick} ({pred[pick] * 1e3:.4f} ms), {wall:.2f} s")
            rows += [{"shape": shape, "config": n, "model_time_s": t if math.isfinite(t) else "",
                      "model_pick": int(n == pick)} for n, t in pred.items()]
        out = args.out or DATA / "autotune_gpu_predictions.csv"
        with out.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {out}")
        return 0
    measured = read_summary(args.summary)
    print("| shape | Spearman | model's pick | % of best | rank 16 configs |")
    print("|---|---|---|---|---|")
    pcts = []
    for shape, meas in measured.items():
        pred, wall = rank_shape(shape)
        names = list(meas)
        rho = spearman([pred[n] for n in names], [meas[n] for n in names])
        pick = min((n for n in pred if math.isfinite(pred[n])), key=lambda n: pred[n])
        pct = 100.0 * min(meas.values()) / meas[pick] if pick in meas else 0.0
        pcts.append(pct)
        print(f"| {shape} | {rho:.3f} | {pick} | {pct:.1f}% | {wall:.2f} s |")
    print(f"\nmedian {statistics.median(pcts):.1f}%, min {min(pcts):.1f}% of the best tutorial "
          "config")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
