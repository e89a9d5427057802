"""Live searcher comparison on the 958,320-schedule ``gemm_space(1024)`` (issue 16).

Every trial is measured live by :class:`~autotile.measure.ScheduleMeasurer` (the
exact periodic fast path); curves are scored by
:func:`autotile.search.compare_sampled` against the shipped sampled table
(``autotile/data/gemm1024_sample.npz``, made by ``sample_truth.py``): the reference
is the best *known* value (over the sample and every trial), not a proven optimum.

Usage::

    python benchmarks/gemm/bench_compare1024.py [--budget 200] [--seeds 5] [--n-jobs 2]
        [--searchers model,evolutionary,tpe,random] [--sample PATH]
        [--out autotile-results/compare1024]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from autotile.measure import SampledTruth, ScheduleMeasurer
from autotile.search import compare_sampled
from autotile.space import gemm_space

SAMPLE = Path(__file__).resolve().parents[2] / "autotile" / "data" / "gemm1024_sample.npz"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--searchers", default="model,evolutionary,tpe,random")
    ap.add_argument("--sample", default=str(SAMPLE))
    ap.add_argument("--out", default="autotile-results/compare1024")
    a = ap.parse_args()
    space = gemm_space(1024)
    sample = SampledTruth.load(a.sample)
    t0 = time.perf_counter()
    res = compare_sampled(space, ScheduleMeasurer(space), sample, a.searchers.split(","),
                          budget=a.budget, seeds=a.seeds, n_jobs=a.n_jobs,
                          meta={"space": "gemm1024"})
    print(res.table())
    print(f"wall {time.perf_counter() - t0:.0f} s; report in {res.write(a.out)['html']}")


if __name__ == "__main__":
    main()
