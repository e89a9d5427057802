"""Live searcher comparison on the 958,320-schedule ``gemm_space(1024)`` (issue 16).

Every trial is measured live by :class:`~autotile.measure.ScheduleMeasurer` (the
exact periodic fast path); curves are scored by
:func:`autotile.search.compare_sampled` against the shipped sampled table
(``autotile/data/gemm1024_sample.npz``, made by ``sample_truth.py``): the reference
is the best *known* value (over the sample and every trial), not a proven optimum.

Usage::

    python benchmarks/gemm/bench_compare1024.py [--budget 200] [--seeds 5] [--n-jobs 1]
        [--searchers model,evolutionary,tpe,random] [--sample PATH]
        [--out autotile-results/compare1024] [--storage PATH] [--write-sample PATH]

The runs are kept in ``--storage`` (default ``<out>/runs.db``), so a cut-short
comparison resumes. ``--write-sample PATH`` writes the sample with every schedule
the searchers visited appended (``source`` 1, :meth:`SampledTruth.with_visited`)
and scores the comparison against it; this is how the shipped table got its
visited rows.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import optuna

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotile.measure import SCHEDULE_METRICS, SampledTruth, ScheduleMeasurer  # noqa: E402
from autotile.search import compare_sampled  # noqa: E402
from autotile.search._compare_sampled import score_against_sample  # noqa: E402
from autotile.search._compare_store import open_storage  # noqa: E402
from autotile.space import gemm_space  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "autotile" / "data" / "gemm1024_sample.npz"
_STATUS = {"ok": 0, "failed": 1, "infeasible": 2}


def visited_rows(space, storage: str) -> tuple[list[int], dict[str, np.ndarray], np.ndarray]:
    """Index, metrics and status of every schedule of ``space`` measured in ``storage``."""
    store = open_storage(storage)
    index, status, rows = [], [], []
    for s in optuna.get_all_study_summaries(store, include_best_trial=False):
        study = optuna.load_study(study_name=s.study_name, storage=store)
        for t in study.get_trials(deepcopy=False):
            ua = t.user_attrs
            if ua.get("status") not in ("ok", "failed") or "config" not in ua:
                continue  # infeasible proposals are not schedules of the space
            index.append(space.index_of(space.parse(str(ua["config"]))))
            status.append(_STATUS[ua["status"]])
            m = ua.get("metrics") or {}
            rows.append([float(m.get(k, np.nan)) for k in SCHEDULE_METRICS])
    vals = np.asarray(rows, np.float64).reshape(-1, len(SCHEDULE_METRICS))
    return index, {k: vals[:, j] for j, k in enumerate(SCHEDULE_METRICS)}, \
        np.asarray(status, np.int8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--searchers", default="model,evolutionary,tpe,random")
    ap.add_argument("--sample", default=str(SAMPLE))
    ap.add_argument("--out", default="autotile-results/compare1024")
    ap.add_argument("--storage", default=None)
    ap.add_argument("--write-sample", default=None)
    a = ap.parse_args()
    space = gemm_space(1024)
    sample = SampledTruth.load(a.sample)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    storage = a.storage or str(Path(a.out) / "runs.db")
    t0 = time.perf_counter()
    res = compare_sampled(space, ScheduleMeasurer(space), sample, a.searchers.split(","),
                          budget=a.budget, seeds=a.seeds, n_jobs=a.n_jobs, storage=storage,
                          meta={"space": "gemm1024"})
    wall = time.perf_counter() - t0
    if a.write_sample:
        index, values, status = visited_rows(space, storage)
        full = sample.with_visited(index, values, status)
        full.meta["visited_by"] = (f"benchmarks/gemm/bench_compare1024.py --searchers "
                                   f"{a.searchers} --budget {a.budget} --seeds {a.seeds}")
        full.save(a.write_sample)
        print(f"wrote {a.write_sample}: {full.n_random} random + {len(full) - full.n_random} "
              f"visited schedules ({len(index)} trials measured)")
        res = score_against_sample(res, full)
    print(res.table())
    print(f"wall {wall:.0f} s; report in {res.write(a.out)['html']}")


if __name__ == "__main__":
    main()
