"""The ``autotile`` command line (``main``); its help text is :data:`_HELP`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]

_HELP = """\
usage: autotile {compare,schedule,sweep,tune,worker} [options]
       autotile --version
       autotile <command> --help    (options of one command)

commands:
  autotile compare   compare searchers on a space (convergence report; the main job)
  autotile schedule  step through the TVM CPU matrix-multiplication tutorial's schedules
                     (reorder, blocking, loop permutation, array packing) at 64x64,
                     with exact cache miss counts
  autotile sweep     measure every config of the GEMM schedule space into a table
  autotile tune      start (or resume) a tuning study in a storage and run it
  autotile worker    join a study started by `autotile tune`, from any machine
"""


def _version() -> str:
    """The installed distribution's version, else ``autotile.__version__``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("autotile")
    except PackageNotFoundError:
        import autotile

        return str(getattr(autotile, "__version__", "unknown"))


def _schedule(argv: Sequence[str]) -> int:
    from autotile._walkthrough import run_walkthrough

    ap = argparse.ArgumentParser(
        prog="autotile schedule",
        allow_abbrev=False,
        description="Step through the TVM CPU matrix-multiplication tutorial's schedules "
                    "(default loop order, reorder, blocking, loop permutation, array packing) "
                    "at 64x64, and the default order at 65x65: lower each one, check it "
                    "against NumPy and count its misses in an 8 KB, 4-way, 64-byte-line "
                    "cache and in a fully associative cache of the same size (the "
                    "difference is the conflict misses).")
    ap.add_argument("--no-ir", action="store_true", help="don't print the lowered loop nests")
    args = ap.parse_args(argv)
    run_walkthrough(show_ir=not args.no_ir)
    return 0


def _sweep(argv: Sequence[str]) -> int:
    from autotile.errors import MeasureError, SchedulerConnectionError
    from autotile.measure import ScheduleMeasurer, sweep
    from autotile.measure._table import write_problem
    from autotile.search._cli import missing_parent
    from autotile.space import gemm_canonical_key, gemm_space

    ap = argparse.ArgumentParser(
        prog="autotile sweep",
        allow_abbrev=False,
        description="Measure every schedule of the n x n GEMM schedule space (split factors "
                    "of i, j, k and the loop order) by cache simulation into a table. An "
                    "interrupted sweep resumes from OUT.parts/; a finished one is returned "
                    "as is. Both are checked against n and the measurer settings.")
    ap.add_argument("--n", type=int, default=64,
                    help="matrix size: the space is the schedules of an n x n x n GEMM "
                         "(default 64). Each config simulates 3n^3 memory accesses (about "
                         "0.5 s at n=256 and 35 s at n=1024 per core) and its cache "
                         "simulator needs about 3.4 n^2 bytes (1.4 GB at n=20000) per "
                         "worker; sizes whose workers would not fit in memory are refused. "
                         "A full sweep is practical up to n of a few hundred; use --limit "
                         "beyond that")
    ap.add_argument("--out", default=None,
                    help="output file; must end in .npz (a name without a suffix gets "
                         ".npz appended), created with OUT.parts/ next to it; its folder "
                         "must exist (default gemm<n>_truth.npz)")
    ap.add_argument("--n-jobs", type=int, default=2,
                    help="parallel workers (joblib; -1 = all cores; default 2)")
    ap.add_argument("--limit", type=int, default=None, help="only the first LIMIT configs")
    ap.add_argument("--no-resume", action="store_true",
                    help="discard an earlier run's chunks or table at OUT and measure again")
    ap.add_argument("--scheduler", default=None,
                    help="run the chunks on a Dask cluster: a scheduler address "
                         "(tcp://host:8786) or 'local' (a LocalCluster of --n-jobs workers); "
                         "default: joblib on this machine")
    args = ap.parse_args(argv)
    try:
        if args.limit is not None and args.limit < 1:
            raise ValueError(f"--limit must be >= 1, got {args.limit}")
        if args.n_jobs == 0:
            raise ValueError("--n-jobs must be a non-zero int (-1: all cores), got 0")
        space = gemm_space(args.n)
    except ValueError as exc:
        print(f"autotile sweep: error: {exc}", file=sys.stderr)
        return 2
    if args.out is not None and not args.out.strip():
        print(f"autotile sweep: error: --out must name an .npz file, got --out {args.out!r} "
              f"(leave it out for gemm{args.n}_truth.npz)", file=sys.stderr)
        return 2
    out = args.out or f"gemm{args.n}_truth.npz"
    suffix = Path(out).suffix
    if suffix and suffix != ".npz":
        print(f"autotile sweep: error: --out must name an .npz file, got {out!r} (suffix "
              f"{suffix!r}); the table is a NumPy .npz archive: pass e.g. "
              f"{str(Path(out).with_suffix('.npz'))!r}", file=sys.stderr)
        return 2
    if not suffix:
        out += ".npz"  # as sweep() names the file; the messages below name it
    measurer = ScheduleMeasurer(space)
    n_configs = len(space) if args.limit is None else min(args.limit, len(space))
    too_big = _memory_problem(args.n, measurer.settings(), args.n_jobs, n_configs)
    if too_big is not None:
        print(f"autotile sweep: error: {too_big}", file=sys.stderr)
        return 2
    missing = missing_parent(Path(out))
    if missing is not None:
        print(f"autotile sweep: error: --out {out!r} cannot be created: its folder "
              f"{str(missing)!r} does not exist; create it first or choose another --out",
              file=sys.stderr)
        return 2
    folder = Path(out).absolute().parent
    why = write_problem(folder)
    if why is not None:
        print(f"autotile sweep: error: --out {out!r} cannot be written: no file can be "
              f"created in {str(folder)!r} ({why}); choose another --out", file=sys.stderr)
        return 2
    before = _mtime_ns(out)
    try:
        truth = sweep(space, measurer, out, n_jobs=args.n_jobs,
                      limit=args.limit, resume=not args.no_resume,
                      key=lambda c: gemm_canonical_key(c, args.n), scheduler=args.scheduler)
    except (ValueError, ImportError) as exc:
        print(f"autotile sweep: error: {exc}", file=sys.stderr)
        return 2
    except SchedulerConnectionError as exc:
        print(f"autotile sweep: error: --scheduler: {exc}", file=sys.stderr)
        return 1
    except MeasureError as exc:
        msg = str(exc).replace("pass resume=False", "pass --no-resume")
        print(f"autotile sweep: error: {msg}", file=sys.stderr)
        return 2
    counts = f"{truth.meta['n_configs']} configs ({truth.meta['n_unique']} distinct traces)"
    if before is not None and _mtime_ns(out) == before:
        print(f"{out} already holds this sweep: {counts}; nothing measured")
    else:
        print(f"wrote {out}: {counts} in {truth.meta['wall_time_s']:.1f} s")
    return _report_failures(truth, space, measurer, out)


def _report_failures(truth: Any, space: Any, measurer: Any, out: str) -> int:
    """Say how many configs of a finished sweep failed; 1 if all did, else 0.

    The table keeps only the status, so the first failed config is measured
    again for its error message.
    """
    import numpy as np

    from autotile.measure._ground_truth import _STATUS_CODE

    bad = np.flatnonzero(np.asarray(truth.status) == _STATUS_CODE["failed"])
    if bad.shape[0] == 0:
        return 0
    first = space.config_at(int(bad[0]))
    res = measurer.measure(first)
    why = (res.error if res.status != "ok" else
           "it succeeded when measured again (the failure did not repeat)")
    n, k = len(truth), int(bad.shape[0])
    if k == n:
        every = "the only config" if n == 1 else f"all {n} configs"
        print(f"autotile sweep: error: {every} failed, so {out} holds no "
              f"measurement; the first, {first}, failed with: {why}", file=sys.stderr)
        return 1
    print(f"autotile sweep: warning: {k} of {n} configs failed (status 'failed', NaN "
          f"metrics in {out}); the first, {first}, failed with: {why}", file=sys.stderr)
    return 0


def _memory_problem(n: int, settings: dict[str, Any], n_jobs: int, n_configs: int) -> str | None:
    """Why workers of an ``n`` sweep would not fit in memory, or None if they would.

    One simulator state lives in each worker
    (``autotile.measure.cpu._schedule_measurer.memory_problem``).
    """
    from autotile.measure.cpu._schedule_measurer import memory_problem

    cores = os.cpu_count() or 1
    workers = min(cores if n_jobs < 0 else n_jobs, max(n_configs, 1))
    why = memory_problem(n, settings, workers, _memory_bytes())
    return None if why is None else why + " or fewer --n-jobs"


def _memory_bytes() -> int | None:
    """:func:`~autotile.measure.cpu._schedule_measurer.memory_bytes` (patchable in tests)."""
    from autotile.measure.cpu._schedule_measurer import memory_bytes

    return memory_bytes()


def _mtime_ns(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``autotile`` command line; return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"schedule": _schedule, "sweep": _sweep}
    if not argv or argv[0] in ("-h", "--help"):
        print(_HELP, end="")
        return 0
    if argv[0] in ("-V", "--version"):
        print(f"autotile {_version()}")
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "compare":
        from autotile.search._cli import compare_main

        return int(compare_main(rest))
    if cmd in ("tune", "worker"):
        from autotile.search import _cli_tune

        return int((_cli_tune.tune_main if cmd == "tune" else _cli_tune.worker_main)(rest))
    if cmd not in commands:
        print(f"autotile: error: unknown command {cmd!r}; choose from "
              f"{['compare', *commands, 'tune', 'worker']}", file=sys.stderr)
        return 2
    return commands[cmd](rest)


if __name__ == "__main__":
    sys.exit(main())
