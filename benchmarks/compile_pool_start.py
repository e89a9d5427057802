"""How long the compile pool's workers take to start: ``"spawn"`` against a fork server.

Starts ``--workers`` workers of :class:`autotile.tuner.CompilePool` and runs one no-op
job on each (``CompilePool.run``), ``--repeats`` times per start method, a fresh pool
each time; prints each wall time (seconds). With ``"forkserver"`` the first repeat also
starts the server (its ``preload`` imports), the later ones fork from it.

``--triton`` (a CUDA host): the workers run the Triton backend's ``worker_init``
(import PyTorch and Triton, create a CUDA context) and the server preloads its
``worker_preload``, as a GPU tuning's workers do. Without it (any host): no init, and
the server preloads ``autotile.tuner``, the heavy import a worker does here.

    python benchmarks/compile_pool_start.py                          # CPU
    python benchmarks/compile_pool_start.py --triton --workers 5     # H200
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def noop(job: object) -> None:
    """A compile job that does nothing."""


def main() -> None:
    """Parse the command line, start the pools and print their start-up wall times."""
    from autotile.tuner import CompilePool

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--triton", action="store_true")
    ap.add_argument("--modes", nargs="+", default=["spawn", "forkserver"],
                    choices=("spawn", "forkserver", "fork"))
    args = ap.parse_args()
    if args.workers < 1 or args.repeats < 1:
        ap.error(f"--workers and --repeats must be >= 1, got {args.workers} and "
                 f"{args.repeats}")
    init = None
    preload: tuple[str, ...] = ("autotile.tuner",)
    if args.triton:
        from autotile.tuner._gpu_backend import TritonBackend

        init, preload = TritonBackend.worker_init, TritonBackend.worker_preload
    for mode in args.modes:
        walls = []
        for _ in range(args.repeats):
            pool = CompilePool(noop, n_jobs=args.workers, timeout_s=None, init_fn=init,
                               mp_context=mode, preload=preload)
            t0 = time.perf_counter()
            out = pool.run([None] * args.workers)
            walls.append(time.perf_counter() - t0)
            pool.close()
            assert all(o.status == "ok" for o in out), out
        print(f"{mode}: {args.workers} workers ready and one job each: "
              + ", ".join(f"{w:.2f}" for w in walls) + " s")


if __name__ == "__main__":
    main()
