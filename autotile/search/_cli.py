"""``autotile compare``: the command-line convergence report."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from autotile.measure._table import write_problem
from autotile.search._cli_sources import (
    DEFAULT_GEMM_BUDGET,
    DEFAULT_LIVE_BUDGET,
    Source,
    UsageError,
    gemm64,
    gemm1024,
    kernel_tuner,
    sweep_table,
)

__all__ = ["compare_main", "DEFAULT_GEMM_BUDGET", "DEFAULT_CLI_SEEDS", "DEFAULT_OUT"]

#: Seeds per searcher when ``--seeds`` is not given.
DEFAULT_CLI_SEEDS = 5
#: Where timestamped run folders go when ``--out`` is not given.
DEFAULT_OUT = "autotile-results/compare"
_PROG = "autotile compare"
_UsageError = UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=_PROG,
        allow_abbrev=False,
        description="Run searchers for a budget x several seeds on a replayed table (or "
                    "live, --space gemm1024) and "
                    "write a convergence report (table, best configs, CSV, JSON, PNG, HTML). "
                    "Every finished run is kept as an Optuna study (SQLite in the run folder "
                    "by default, or --storage), so an interrupted comparison resumes when "
                    "the same command is run again, and optuna-dashboard can open it.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--space", default=None, choices=["gemm64", "gemm1024"],
                     help="gemm64: autotile's 246,960-config GEMM schedule space, replayed "
                          "from its shipped ground-truth table (default); gemm1024: the "
                          "958,320-config space at n = 1024, every trial simulated live and "
                          "scored against the best known value of a shipped sample (not a "
                          "proven optimum)")
    src.add_argument("--table", metavar="FILE", nargs="+", default=None,
                     help="tables written by `autotile sweep` (any --n) to replay; one "
                          "report each, plus a summary")
    src.add_argument("--kernel-tuner", metavar="FILE", nargs="+", default=None,
                     help="Kernel Tuner cache or T4 files (.json or .json.gz) to replay; one "
                          "report each, plus a summary")
    p.add_argument("--objective", default=None,
                   help="metric to compare on: misses or est_cycles (GEMM tables, default "
                        "misses), any numeric field of a Kernel Tuner file (default its "
                        "objective, usually time in ms)")
    p.add_argument("--direction", default=None, choices=["minimize", "maximize"],
                   help="whether smaller or larger objective values are better (default: "
                        "from the objective's name; throughputs such as GFLOP/s or GB/s "
                        "are maximised, times and counts minimised)")
    p.add_argument("--searchers", default="grid,random,model,evolutionary,tpe",
                   help="comma-separated searcher names (default: %(default)s)")
    p.add_argument("--budget", type=int, default=None,
                   help=f"trials per run (default: {DEFAULT_GEMM_BUDGET} on GEMM tables, the "
                        "methodology budget on Kernel Tuner files)")
    p.add_argument("--seeds", type=int, default=DEFAULT_CLI_SEEDS,
                   help="seeds per searcher (default: %(default)s)")
    p.add_argument("--out", default=None,
                   help="the report's folder, created if missing (its parent folder must "
                        "exist); a finished report there is kept unless --force is given. "
                        f"Default: a new folder {DEFAULT_OUT}/<date-time>/ per run, "
                        f"{DEFAULT_OUT}/latest pointing to the newest")
    p.add_argument("--storage", default=None, metavar="URL",
                   help="Optuna storage URL (or SQLite file path) that keeps every finished "
                        "run as a study (default: sqlite:///<out>/studies.db); runs already "
                        "there with the same settings are loaded, not run again")
    p.add_argument("--force", action="store_true",
                   help="replace the report (and its stored runs) in --out")
    p.add_argument("--no-resume", action="store_true",
                   help="start afresh even if an interrupted run with the same settings "
                        "exists")
    p.add_argument("--n-jobs", type=int, default=-1,
                   help="parallel runs (joblib; default -1 = all cores)")
    p.add_argument("--scheduler", default=None,
                   help="run the (searcher, seed) runs on a Dask cluster: a scheduler address "
                        "(tcp://host:8786) or 'local' (a LocalCluster of --n-jobs workers); "
                        "default: joblib on this machine")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


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
    why = write_problem(parent)
    if why is not None:
        raise _UsageError(f"--out {out!r} cannot be written: no file can be created in "
                          f"{str(parent)!r} ({why}); choose another --out")


def _sources(args: argparse.Namespace) -> list[Source]:
    if args.kernel_tuner:
        return [kernel_tuner(f, args.objective) for f in args.kernel_tuner]
    if args.table:
        return [sweep_table(f, args.objective) for f in args.table]
    if args.space == "gemm1024":
        return [gemm1024(args.objective)]
    return [gemm64(args.objective)]


def _settings(args: argparse.Namespace, names: list[str]) -> dict[str, Any]:
    """What makes a run the same run (compared to resume one)."""
    files = args.kernel_tuner or args.table
    sources = [str(Path(f).absolute()) for f in files] if files else [args.space or "gemm64"]
    return {"sources": sources, "objective": args.objective, "direction": args.direction,
            "searchers": names, "budget": args.budget, "seeds": args.seeds}


def _check_args(args: argparse.Namespace, names: list[str]) -> None:
    from autotile.search._compare_plan import _known_searchers

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
    if args.out is not None and not args.out.strip():
        raise _UsageError(f"--out must name a folder, got --out {args.out!r} (leave it out "
                          f"for a new folder under {DEFAULT_OUT}/)")
    _check_out(args.out or DEFAULT_OUT, default=args.out is None)
    for group in (args.kernel_tuner, args.table):
        stems = [Path(f).name for f in group or []]
        twice = sorted({n for n in stems if stems.count(n) > 1})
        if twice:
            raise _UsageError(f"each file must have its own name, got {twice[0]!r} twice "
                              "(the name labels its report)")
    if args.storage is not None:
        from autotile.search._storage import open_storage

        try:  # before the run folder is made: an unwritable or unreachable storage
            open_storage(args.storage, heartbeat_interval=None)
        except (TypeError, ValueError, ImportError) as exc:
            raise _UsageError(f"--storage: {exc}") from None


def _count_stored(storage: str, prefixes: Sequence[str]) -> int | None:
    """Finished runs in ``storage`` stored under one of the study ``prefixes``.

    None when the storage cannot be read (only for messages).
    """
    from autotile.search._compare_store import ATTR, open_storage

    try:
        studies = open_storage(storage).get_all_studies()
    except Exception:  # noqa: BLE001 - only for the message
        return None
    return sum(1 for s in studies if (s.user_attrs.get(ATTR) or {}).get("complete")
               and any(s.study_name.startswith(f"{p}:") for p in prefixes))


def _resume_note(storage: str, prefixes: Sequence[str]) -> str:
    """What reopening an unfinished run folder means, from what its storage holds."""
    n = _count_stored(storage, prefixes)
    if n is None:
        return (" (an earlier run with these settings stopped here; its storage cannot be "
                "read, see below)")
    if n == 0:
        return (" (an earlier run with these settings stopped here before any run was "
                "stored: every run starts afresh)")
    return (f" (resuming an interrupted run: {n} finished run{'s are' if n != 1 else ' is'} "
            f"stored and will be loaded, the rest run)")


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
        a file, whose parent folder does not exist, that cannot be
        created, or that holds a finished report without ``--force``),
        after printing a one-line ``autotile compare: error: ...`` to
        stderr; 1 if the report cannot be written or the ``--scheduler``
        does not answer (the message names its address); 130 when interrupted
        (Ctrl-C), after saying how many runs are kept and how to resume.

    Examples
    --------
    ``autotile compare`` (gemm64, misses, five searchers),
    ``autotile compare --space gemm1024 --searchers model,evolutionary,tpe,random``
    (live trials, scored against the shipped sample's best known value), or
    ``autotile compare --kernel-tuner a.json.gz b.json.gz --searchers random,tpe --seeds 10``.
    """
    from autotile.search._compare import plan_comparison, run_comparison
    from autotile.search._compare_sampled import plan_sampled, score_against_sample
    from autotile.search._run_folder import open_run_folder

    t0 = time.perf_counter()
    raw = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(raw)
        names = [s.strip() for s in args.searchers.split(",") if s.strip()]
        _check_args(args, names)
        sources = _sources(args)
        try:
            plans = [plan_comparison(src.space, src.measurer, names,
                                     args.budget or src.budget, args.seeds, src.objective,
                                     direction=args.direction, meta=src.meta)
                     if src.sample is None else
                     plan_sampled(src.space, src.measurer, src.sample, names,
                                  args.budget or src.budget or DEFAULT_LIVE_BUDGET,
                                  args.seeds, src.objective, direction=args.direction,
                                  meta=src.meta)
                     for src in sources]
        except ValueError as exc:  # e.g. a budget whose histories cannot fit in memory
            raise _UsageError(str(exc)) from None
        try:
            folder = open_run_folder(args.out, DEFAULT_OUT, _settings(args, names),
                                     args.storage, ["autotile", "compare", *raw],
                                     force=args.force, resume=not args.no_resume)
        except ValueError as exc:
            raise _UsageError(str(exc)) from None
    except _UsageError as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return 2
    from autotile.errors import SchedulerConnectionError
    from autotile.search._compare import _workers
    from autotile.search._compare_plan import machine_load
    from autotile.search._study_args import _hide_password

    storage = folder.storage
    prefixes = [f"compare:{src.name}:{plan.objective}:{plan.direction}:budget{plan.budget}"
                for src, plan in zip(sources, plans)]
    print(f"run folder: {folder.path}" + (_resume_note(storage, prefixes)
                                          if folder.resumed else ""))
    print(f"storage: {_hide_password(storage)}  (inspect with: optuna-dashboard "
          f"{_hide_password(storage, '<password>')})")
    results = {}
    try:
        for src, plan, prefix in zip(sources, plans, prefixes):
            print()
            print("\n".join(plan.header(_workers(args.n_jobs, plan.n_runs), stored=True,
                                        report=True, load=machine_load())), flush=True)
            res = run_comparison(plan, args.n_jobs, progress=not args.no_progress,
                                 storage=storage, study_prefix=prefix,
                                 scheduler=args.scheduler)
            if src.sample is not None:
                res = score_against_sample(res, src.sample)
            outdir = folder.path if len(sources) == 1 else folder.path / src.name
            paths = res.write(outdir)
            results[src.name] = res
            print()
            print(res.table(settings=False))  # the plan's header is printed above
            print(f"\nreport: {paths['html']}")
        if len(sources) > 1:
            from autotile.search._overview import write_overview

            paths = write_overview(results, folder.path)
            print()
            print(Path(paths["txt"]).read_text(encoding="utf-8").rstrip())
            print(f"\nsummary: {paths['html']}")
        folder.finish()
    except KeyboardInterrupt:
        n = _count_stored(storage, prefixes) or 0
        print(f"\n{_PROG}: interrupted; {n} finished run{'s are' if n != 1 else ' is'} kept in "
              f"{_hide_password(storage)}. Run the same command again to resume.",
              file=sys.stderr)
        return 130
    except SchedulerConnectionError as exc:  # an OSError, but no file is at fault
        print(f"{_PROG}: error: --scheduler: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"{_PROG}: error: could not write the report to {str(folder.path)!r}: {exc}",
              file=sys.stderr)
        return 1
    except ValueError as exc:  # a stored run made with other settings
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return 2
    print(f"({time.perf_counter() - t0:.1f} s)")
    return 0
