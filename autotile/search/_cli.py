"""``autotile compare``: the command-line convergence report."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["compare_main", "DEFAULT_GEMM_BUDGET", "DEFAULT_CLI_SEEDS", "DEFAULT_OUT"]

#: Trials per run on the GEMM space when ``--budget`` is not given.
DEFAULT_GEMM_BUDGET = 500
#: Seeds per searcher when ``--seeds`` is not given.
DEFAULT_CLI_SEEDS = 5
#: Where the report goes when ``--out`` is not given.
DEFAULT_OUT = "autotile-results/compare"
_PROG = "autotile compare"


class _UsageError(Exception):
    """Bad command-line input: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=_PROG,
        description="Run searchers for a budget x several seeds on a replayed space and "
                    "write a convergence report (table, CSV, JSON, PNG, HTML).")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--space", default=None, choices=["gemm64"],
                     help="autotile's 246,960-config GEMM schedule space, replayed from its "
                          "shipped ground-truth table (default)")
    src.add_argument("--kernel-tuner", metavar="PATH", default=None,
                     help="a Kernel Tuner cache or T4 file (.json or .json.gz) to replay")
    p.add_argument("--objective", default=None,
                   help="metric to compare on: misses or est_cycles (gemm64, default misses), "
                        "any numeric field of a Kernel Tuner file (default its objective, "
                        "usually time)")
    p.add_argument("--direction", default=None, choices=["minimize", "maximize"],
                   help="whether smaller or larger objective values are better (default: "
                        "from the objective's name; throughputs such as GFLOP/s or GB/s "
                        "are maximised, times and counts minimised)")
    p.add_argument("--searchers", default="grid,random,model,evolutionary,tpe",
                   help="comma-separated searcher names (default: %(default)s)")
    p.add_argument("--budget", type=int, default=None,
                   help=f"trials per run (default: {DEFAULT_GEMM_BUDGET} on gemm64, the "
                        "methodology budget on Kernel Tuner files)")
    p.add_argument("--seeds", type=int, default=DEFAULT_CLI_SEEDS,
                   help="seeds per searcher (default: %(default)s)")
    p.add_argument("--out", default=None,
                   help="output folder, created if missing; its parent folder must exist "
                        f"(default: {DEFAULT_OUT}, created with its parent)")
    p.add_argument("--n-jobs", type=int, default=-1,
                   help="parallel runs (joblib; default -1 = all cores)")
    p.add_argument("--scheduler", default=None,
                   help="run the (searcher, seed) runs on a Dask cluster: a scheduler address "
                        "(tcp://host:8786) or 'local' (a LocalCluster of --n-jobs workers); "
                        "default: joblib on this machine")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def _gemm64(objective: str | None) -> tuple[Any, Any, str, int]:
    """The GEMM space and a replay measurer over the shipped table."""
    from autotile.measure import GroundTruth, ReplayMeasurer
    from autotile.space import gemm_space

    path = Path(__file__).resolve().parents[1] / "data" / "gemm64_truth.npz"
    if not path.is_file():
        raise _UsageError(f"the GEMM ground-truth table {path} is missing; reinstall autotile "
                          "or pass --kernel-tuner PATH")
    truth = GroundTruth.load(path)
    space = gemm_space(64)
    objective = objective or "misses"
    if objective not in truth.metrics:
        raise _UsageError(f"unknown objective {objective!r} for gemm64; choose from "
                          f"{', '.join(truth.metrics)}")
    return space, ReplayMeasurer(space, truth, objective), objective, DEFAULT_GEMM_BUDGET


def _kernel_tuner(path: str, objective: str | None) -> tuple[Any, Any, str, int | None]:
    from autotile.errors import MeasureError
    from autotile.measure._kernel_tuner import load_kernel_tuner

    try:
        rec = load_kernel_tuner(path)
    except FileNotFoundError:
        raise _UsageError(f"no such file: {path}") from None
    except MeasureError as exc:
        raise _UsageError(str(exc)) from None
    objective = objective or rec.objective
    if objective not in rec.truth.metrics:
        raise _UsageError(f"unknown objective {objective!r} for {path}; choose from "
                          f"{', '.join(rec.truth.metrics)}")
    return rec.space, rec.measurer(objective), objective, None


def _check_searchers(names: list[str], known: Sequence[str]) -> None:
    """Reject unknown, repeated or not installable searcher names."""
    from autotile.search._factory import _require

    bad = [s for s in names if s not in known]
    if bad or not names:
        raise _UsageError(f"unknown searcher {bad[0]!r}; choose from {', '.join(known)}"
                          if bad else "--searchers names no searcher")
    twice = sorted({s for s in names if names.count(s) > 1})
    if twice:
        raise _UsageError(f"--searchers must name each searcher once, got {twice[0]!r} "
                          f"{names.count(twice[0])} times in {','.join(names)}")
    for name in names:
        try:
            _require(name)
        except ImportError as exc:
            raise _UsageError(str(exc)) from None


def missing_parent(path: Path) -> Path | None:
    """Return the parent folder of ``path`` when it does not exist, else None.

    The command-line convention for ``--out``: the named file or folder
    is created, its parent folder is not (as ``mkdir`` without ``-p``), so a
    typo in a parent does not silently create a new tree.
    """
    parent = path.absolute().parent
    return None if parent.exists() else parent


def _check_out(out: str, default: bool = False) -> None:
    """Reject an ``--out`` that is a file, has no parent folder or cannot be written.

    ``default``: ``out`` is :data:`DEFAULT_OUT`, created with its parents.
    """
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise _UsageError(f"--out must be a folder, got {out!r}, which is an existing file")
    missing = None if default or path.exists() else missing_parent(path)
    if missing is not None:
        raise _UsageError(f"--out {out!r} cannot be created: its parent folder "
                          f"{str(missing)!r} does not exist; create it first or choose "
                          f"another --out")
    parent = path if path.exists() else next(
        (p for p in path.absolute().parents if p.exists()), None)
    if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise _UsageError(f"--out {out!r} cannot be written: {str(parent)!r} is not a "
                          "writable folder")


def compare_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``autotile compare``.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after ``compare`` (e.g. ``["--seeds", "3"]``); ``None``
        means ``sys.argv[1:]``, as in argparse.

    Returns
    -------
    int
        0 on success; 2 on bad input (unknown, repeated or not installed
        searcher, unknown objective, missing or unreadable file,
        non-positive budget or seeds, ``--n-jobs 0``, an ``--out`` that is
        a file, whose parent folder does not exist, or that cannot be
        created), after printing a one-line
        ``autotile compare: error: ...`` to stderr; 1 if the report cannot
        be written.

    Examples
    --------
    ``autotile compare`` (gemm64, misses, five searchers), or
    ``autotile compare --kernel-tuner pnpoly.json.gz --searchers random,tpe --seeds 10``.
    """
    from autotile.search._compare import _known_searchers, compare

    t0 = time.perf_counter()
    try:
        args = _parser().parse_args(argv)
        names = [s.strip() for s in args.searchers.split(",") if s.strip()]
        _check_searchers(names, _known_searchers())
        if args.seeds < 1:
            raise _UsageError(f"--seeds must be >= 1, got {args.seeds}")
        if args.budget is not None and args.budget < 1:
            raise _UsageError(f"--budget must be >= 1, got {args.budget}")
        if args.n_jobs == 0:
            raise _UsageError("--n-jobs must be a non-zero int (-1: all cores), got 0")
        try:
            from autotile.measure._parallel import check_scheduler

            check_scheduler(args.scheduler)
        except (ValueError, ImportError) as exc:
            raise _UsageError(f"--scheduler: {exc}") from None
        _check_out(args.out or DEFAULT_OUT, default=args.out is None)
        args.out = args.out or DEFAULT_OUT
        if args.kernel_tuner:
            space, measurer, objective, budget = _kernel_tuner(args.kernel_tuner, args.objective)
        else:
            space, measurer, objective, budget = _gemm64(args.objective)
    except _UsageError as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return 2
    res = compare(space, measurer, names, budget=args.budget or budget, seeds=args.seeds,
                  objective=objective, n_jobs=args.n_jobs, progress=not args.no_progress,
                  direction=args.direction, scheduler=args.scheduler)
    try:
        paths = res.write(args.out)
    except OSError as exc:
        print(f"{_PROG}: error: could not write the report to {args.out!r}: {exc}",
              file=sys.stderr)
        return 1
    print(res.table())
    print(f"\nreport: {paths['html']}  ({time.perf_counter() - t0:.1f} s)")
    return 0
