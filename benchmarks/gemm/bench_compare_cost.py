"""CPU of the README's main job, run by run, and a fingerprint of every run's trials.

Runs the runs of ``autotile compare`` (gemm64, misses, 500 trials, the default
searchers and seeds 0-4) one after the other in this process, as a worker runs
them, and prints each searcher's CPU seconds (``time.process_time``) and one
hash per run of its trials' configs and values. Two commits whose hashes are
equal propose the same trials::

    python benchmarks/gemm/bench_compare_cost.py > after.json
    python benchmarks/gemm/bench_compare_cost.py --searchers model,evolutionary --seeds 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

# this checkout's autotile, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autotile.search._cli_sources import gemm64  # noqa: E402
from autotile.search._compare_plan import DEFAULT_SEARCHERS  # noqa: E402
from autotile.search._compare_run import run_one  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--searchers", default=",".join(DEFAULT_SEARCHERS))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--budget", type=int, default=500)
    args = p.parse_args()
    src = gemm64(None)
    runs: dict[str, str] = {}
    cpu: dict[str, float] = {}
    for name in args.searchers.split(","):
        for seed in range(args.seeds):
            t = time.process_time()
            r = run_one(src.space, src.measurer, name, name, seed, args.budget,
                        keep_trials=True)
            cpu[name] = cpu.get(name, 0.0) + time.process_time() - t
            h = hashlib.sha256()
            for tr in r.trials or []:
                h.update(repr(sorted(tr.params.items())).encode())
                h.update(repr(tr.values).encode())
            h.update(r.history.tobytes())
            runs[f"{name}:{seed}"] = h.hexdigest()[:16]
        print(f"{name}: {cpu[name]:.2f} s CPU, {args.seeds} runs", file=sys.stderr)
    print(json.dumps({"cpu_s": {k: round(v, 2) for k, v in cpu.items()}, "runs": runs},
                     indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
