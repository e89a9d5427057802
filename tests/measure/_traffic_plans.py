"""Helpers shared by the ncu traffic-plan tests (``test_traffic_v2.py``, ``test_traffic_v4.py``)."""

from __future__ import annotations

import csv
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "h200" / "data"
KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


def load_bench(name: str) -> ModuleType:
    """Import ``benchmarks/h200/<name>.py`` as module ``name`` (once per session)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "h200" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)
    spec.loader.exec_module(mod)
    return mod


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of the CSV file ``path``, as ``csv.DictReader`` gives them."""
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def assert_driver_reads_plan(path: Path, rows: Sequence[Mapping[str, str]],
                             plan: Mapping[tuple, Sequence[tuple]], n: int) -> None:
    """Check that ``h200_ncu.plan_from_csv(path)`` gives ``n`` entries, in the order of
    ``rows`` (the same file read as CSV) and of the script's ``plan``
    (``{(M, N, K, dtype): [knob tuples in KNOBS order]}``)."""
    got_plan = load_bench("h200_ncu").plan_from_csv(path)
    assert len(got_plan) == n
    got = [(tuple(p["shape"]), p["dtype"], tuple(p["config"][k] for k in KNOBS)) for p in got_plan]
    assert got == [
        ((int(r["M"]), int(r["N"]), int(r["K"])), r["dtype"], tuple(int(r[k]) for k in KNOBS))
        for r in rows]
    listed = [(s, c) for s, cfgs in plan.items() for c in cfgs]
    assert [((*p["shape"], p["dtype"]), tuple(p["config"][k] for k in KNOBS))
            for p in got_plan] == [(tuple(s), c) for s, c in listed]
