"""ncu DRAM read bytes, fourth held-out check (v5) of issue #13's traffic target (CPU only).

Issue #13, "Traffic": ncu DRAM read bytes within 15% of the prediction on >= 80%
of at least 30 launches across >= 3 shapes, half of them with ``GROUP_M >= 8``.

What it does (on the CPU, no GPU):

* ``--write-configs-v5``: writes ``data/ncu_traffic_v5_configs.csv``, the v5
  device list (:data:`V5_PLAN`: 36 fp16 configs on four shapes that no
  committed ncu file holds, 19 with ``GROUP_M >= 8``). The list is committed
  before the predictions, and the predictions before the device run.
* ``--write-predictions-v5``: writes ``data/ncu_traffic_v5_predictions.csv``
  with the read bytes of the models of :data:`MODELS_V5` for every config of
  the list. Both writers refuse to overwrite their file (``--force`` does).
* Compares ``data/ncu_traffic_v5_measured.csv`` with the committed predictions
  once it exists (nothing re-simulated).

v5 device command (one call: parallel compiles, then one ncu run; v4's 36
launches took 56 s)::

    python benchmarks/h200/bench_h200.py --part ncu --out $OUT \\
        --ncu-configs benchmarks/h200/data/ncu_traffic_v5_configs.csv \\
        --ncu-name ncu_traffic_v5_measured

Usage::

    python benchmarks/h200/h200_traffic_v5.py \
        [--write-configs-v5 | --write-predictions-v5 [--force]]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from h200_traffic_v2 import DATA, KNOBS  # noqa: E402

#: The v5 device list (issue #13, fourth held-out check), fixed before any v5
#: prediction was written: four fp16 shapes that no committed ncu file holds, 9
#: configs each, 19 of 36 with GROUP_M >= 8 and GROUP_M 1, 2 or 4 on every shape:
#: a square problem smaller than 8192^3 whose A and B (63 MB each) exceed the L2
#: (5632^3), M >> N with B (4.7 MB) far under the L2 (20480 x 768 x 3072; GROUP_M 64
#: with BLOCK_M 256 spans 64 of the 80 tile rows), small M and wide N (384 x 13824 x
#: 5120; B 142 MB; GROUP_M above the tile rows runs as written) and a deep K on a
#: small grid (2304 x 4352 x 19456). No committed data file (ncu or timing) holds
#: these shapes.
V5_PLAN: dict[tuple[int, int, int, str], tuple[tuple[int, ...], ...]] = {
    (5632, 5632, 5632, "float16"): (
        (128, 256, 64, 8, 8, 3), (128, 128, 64, 16, 4, 4), (64, 128, 32, 8, 4, 4),
        (256, 64, 64, 32, 4, 3), (64, 64, 64, 8, 4, 4), (128, 128, 64, 1, 4, 3),
        (64, 256, 32, 2, 4, 4), (128, 64, 64, 4, 4, 4), (32, 128, 64, 1, 4, 4)),
    (20480, 768, 3072, "float16"): (
        (128, 128, 64, 8, 4, 3), (256, 128, 64, 16, 8, 3), (64, 128, 64, 32, 4, 4),
        (128, 64, 64, 8, 4, 4), (64, 64, 32, 1, 4, 4), (128, 256, 64, 1, 8, 3),
        (128, 128, 32, 2, 4, 4), (64, 128, 64, 4, 4, 4), (256, 64, 64, 64, 4, 3)),
    (384, 13824, 5120, "float16"): (
        (64, 128, 64, 8, 4, 4), (32, 128, 64, 16, 4, 4), (128, 128, 64, 8, 4, 3),
        (64, 64, 64, 16, 4, 4), (128, 256, 64, 1, 8, 3), (32, 64, 64, 1, 2, 4),
        (64, 128, 32, 2, 4, 4), (64, 256, 64, 4, 8, 3), (16, 128, 64, 8, 4, 4)),
    (2304, 4352, 19456, "float16"): (
        (128, 128, 64, 8, 4, 3), (64, 128, 64, 8, 4, 4), (128, 256, 64, 16, 8, 3),
        (128, 64, 64, 32, 4, 4), (64, 64, 32, 4, 4, 4), (128, 128, 64, 1, 4, 3),
        (64, 128, 32, 1, 4, 4), (32, 64, 64, 2, 2, 4), (256, 128, 64, 2, 8, 3)),
}
CONFIGS_FILE_V5 = DATA / "ncu_traffic_v5_configs.csv"
PRED_FILE_V5 = DATA / "ncu_traffic_v5_predictions.csv"
MEASURED_FILE_V5 = DATA / "ncu_traffic_v5_measured.csv"


def write_configs(force: bool, path: Path = CONFIGS_FILE_V5) -> None:
    """Write the v5 device list (``M, N, K, dtype`` and the six knobs, one row per config).

    Raises
    ------
    SystemExit
        If ``path`` exists and ``force`` is false.
    """
    if path.exists() and not force:
        raise SystemExit(f"{path} exists (the list is fixed before the predictions); "
                         "--force overwrites it")
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["M", "N", "K", "dtype", *KNOBS])
        for (M, N, K, dtype), cfgs in V5_PLAN.items():
            for c in cfgs:
                w.writerow([M, N, K, dtype, *c])
    n = sum(len(c) for c in V5_PLAN.values())
    n8 = sum(c[3] >= 8 for cfgs in V5_PLAN.values() for c in cfgs)
    print(f"wrote {path} ({n} configs, {len(V5_PLAN)} shapes, {n8} with GROUP_M >= 8)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-configs-v5", action="store_true",
                    help=f"write {CONFIGS_FILE_V5.name} (the v5 device list, V5_PLAN)")
    ap.add_argument("--force", action="store_true", help="overwrite the file written")
    args = ap.parse_args()
    if args.write_configs_v5:
        write_configs(args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
