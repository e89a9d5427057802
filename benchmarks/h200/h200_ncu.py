"""ncu driver and parser for the H200 validation: DRAM bytes of single matmul launches.

Driver (run under ncu on the device machine)::

    ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum \
        --csv --log-file ncu.csv -k regex:matmul_kernel \
        python benchmarks/h200/h200_ncu.py --plan plan.json --launched launched.json

``plan.json`` is a list of ``{"shape": [M, N, K], "config": {...}}``, with an
optional ``"dtype"`` (operand dtype, default ``"float16"``)
(:func:`plan_from_csv` builds it from a CSV of ``M, N, K``, the six
matmul knobs and an optional ``dtype`` column, e.g.
``benchmarks/h200/data/h200_ncu_validation_configs.csv``;
``--configs CSV`` takes such a CSV instead of ``--plan``). Every
config is compiled first (no launch), then each is launched exactly once, in
order; the configs actually launched are written to ``--launched`` so the
k-th profiled ``matmul_kernel`` maps to the k-th entry. ncu's default cache
control flushes the L2 before each profiled kernel, so the bytes are those
of a cold L2, as in the simulator.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """Rows of ``ncu --csv`` output to one dict per kernel launch.

    Returns
    -------
    list of dict
        ``id``, ``kernel``, and one float per metric name, by launch id.
    """
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    by_id: dict[int, dict[str, Any]] = {}
    for r in rows:
        i = int(r["ID"])
        d = by_id.setdefault(i, {"id": i, "kernel": r.get("Kernel Name", "")})
        val = r["Metric Value"].replace(",", "")
        unit = r.get("Metric Unit", "")
        scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3,
                 "MB": 1e6, "GB": 1e9}.get(unit, 1)
        try:
            d[r["Metric Name"]] = float(val) * scale
        except ValueError:
            d[r["Metric Name"]] = float("nan")
        d[r["Metric Name"] + ".unit"] = unit
    return [by_id[i] for i in sorted(by_id)]


KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


def plan_from_csv(path: str | Path) -> list[dict[str, Any]]:
    """ncu plan from a CSV with ``M, N, K`` and the six matmul knobs, in file order.

    An optional ``dtype`` column (``float16`` or ``bfloat16``) gives the operand
    dtype of each row; without it every row is ``float16``. Other columns
    (e.g. the model's predictions) are ignored.

    Returns
    -------
    list of dict
        ``{"shape": [M, N, K], "dtype": str, "config": {knob: int}}`` per row.
    """
    with Path(path).open(newline="") as f:
        return [{"shape": [int(r["M"]), int(r["N"]), int(r["K"])],
                 "dtype": r.get("dtype") or "float16",
                 "config": {k: int(r[k]) for k in KNOBS}} for r in csv.DictReader(f)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--plan", help="JSON list of {shape, config}")
    src.add_argument("--configs", help="CSV with M, N, K and the six knobs")
    ap.add_argument("--launched", required=True)
    args = ap.parse_args()
    from autotile.measure.gpu._triton_measurer import TritonMeasurer

    plan = (json.loads(Path(args.plan).read_text()) if args.plan
            else plan_from_csv(args.configs))
    meas: dict[tuple[Any, ...], TritonMeasurer] = {}
    fns = []
    for p in plan:
        shp = tuple(p["shape"])
        key = (*shp, p.get("dtype", "float16"))
        if key not in meas:
            meas[key] = TritonMeasurer("matmul", dict(zip("MNK", shp)), check=False,
                                       dtype=key[-1])
        m = meas[key]
        try:
            m.compile(p["config"])
            fns.append((p, m.launcher(p["config"])))
        except Exception as exc:  # noqa: BLE001
            print(f"skip {p}: {type(exc).__name__}: {exc}", file=sys.stderr)
    import torch

    launched = []
    for p, fn in fns:
        try:
            fn()
            torch.cuda.synchronize()
            launched.append(p)
        except Exception as exc:  # noqa: BLE001
            print(f"launch failed {p}: {type(exc).__name__}: {exc}", file=sys.stderr)
    Path(args.launched).write_text(json.dumps(launched))
    print(f"launched {len(launched)} of {len(plan)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
