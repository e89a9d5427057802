"""Registers, spills and shared memory that Triton gives each config (H200, compile only).

Ground truth for the records model's register estimate (docs/gpu_model.md §4.1):
every config of the records-model check's kernels at the shapes of the checks
named on the command line is compiled with ``TritonMeasurer.compile`` (no
launch is timed) and the compiled kernel's ``n_regs``, ``n_spills`` and
``metadata.shared`` are written to ``$OUT/records_regs_h200.csv``.

    python benchmarks/h200/records_regs_h200.py --sets v1 v2 --out $OUT   # on the H200
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "h200"))

from records_model_h200 import SETS  # noqa: E402


def main() -> None:
    from autotile.measure import TritonMeasurer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=["v1", "v2"])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, object]] = []
    for set_name in args.sets:
        for name, (spec, shape, dtype) in SETS[set_name].items():
            m = TritonMeasurer(spec, shape, dtype=dtype, check=False)
            t0 = time.perf_counter()
            for i in range(m.space.size):
                cfg = dict(m.space.config_at(i))
                row: dict[str, object] = {"set": set_name, "kernel": name,
                                          "shape": json.dumps(shape), "dtype": dtype,
                                          "config": json.dumps(cfg)}
                try:
                    ks = []
                    for la in m._launches(cfg, m.data()):
                        k = m._port(la.kernel).warmup(*la.positional(), grid=la.grid,
                                                      **dict(la.meta), num_warps=la.num_warps,
                                                      num_stages=la.num_stages)
                        k._init_handles()
                        ks.append(k)
                    row.update(n_regs=max(k.n_regs for k in ks),
                               n_spills=max(k.n_spills for k in ks),
                               shared=max(int(k.metadata.shared) for k in ks), error="")
                except Exception as exc:  # noqa: BLE001 - recorded
                    row.update(n_regs="", n_spills="", shared="",
                               error=f"{type(exc).__name__}: {exc}"[:300])
                rows.append(row)
            print(f"{set_name} {name}: {m.space.size} configs, {time.perf_counter() - t0:.1f} s",
                  flush=True)
            with open(out / "records_regs_h200.csv", "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)


if __name__ == "__main__":
    main()
