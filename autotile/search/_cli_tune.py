"""``autotile tune`` and ``autotile worker``: start a study, and join it from any machine.

``autotile tune`` creates (or resumes) a study of a space, a measurer and a
searcher in a storage, records how it was built in the study (user
attribute ``"autotile:cli"``), and runs it as the first worker.
``autotile worker --storage URL --study-name NAME`` rebuilds the same space,
measurer and searcher from that record and joins the study, on this machine
or another one that reaches the storage (PostgreSQL or MySQL across
machines; SQLite or a journal file on one machine, or a journal file on
NFS). Every worker stops when the study holds its budget of trials.
``--timeout`` and Ctrl-C stop a worker cleanly: its unfinished trials go
back to the study as WAITING, and any worker resumes them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["tune_main", "worker_main", "CLI_ATTR"]

#: Study user attribute holding what ``autotile worker`` needs to rebuild the study.
CLI_ATTR = "autotile:cli"


class _UsageError(Exception):
    """Bad command-line input: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _worker_options(p: argparse.ArgumentParser) -> None:
    from autotile.search._storage import DEFAULT_GRACE_PERIOD, DEFAULT_HEARTBEAT_INTERVAL

    p.add_argument("--n-jobs", type=int, default=1,
                   help="trials this worker measures in parallel (joblib; default 1)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds after which this worker takes no new trial; the study "
                        "stays resumable")
    p.add_argument("--heartbeat-interval", type=int, default=DEFAULT_HEARTBEAT_INTERVAL,
                   help="seconds between heartbeats of a running trial (default "
                        "%(default)s)")
    p.add_argument("--grace-period", type=int, default=DEFAULT_GRACE_PERIOD,
                   help="seconds without a heartbeat after which a trial is abandoned and "
                        "queued again (default %(default)s)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _tune_parser() -> argparse.ArgumentParser:
    from autotile.search._factory import SEARCHERS

    p = _Parser(allow_abbrev=False, prog="autotile tune",
                description="Create or resume a tuning study and run it as its first worker. "
                            "More workers join with `autotile worker`.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--space", default="gemm", choices=["gemm"],
                     help="the GEMM schedule space of an n x n x n matmul (default)")
    src.add_argument("--kernel-tuner", metavar="FILE", default=None,
                     help="a Kernel Tuner cache or T4 file (.json or .json.gz), replayed")
    src.add_argument("--table", metavar="FILE.npz", default=None,
                     help="a ground-truth table made by `autotile sweep`, replayed")
    p.add_argument("--n", type=int, default=None,
                   help="GEMM size for --space gemm (default 64); not with --table or "
                        "--kernel-tuner, whose file fixes the space")
    p.add_argument("--measurer", choices=["live", "replay"], default=None,
                   help="live: simulate each GEMM schedule (ScheduleMeasurer); replay: look "
                        "it up in a table (default: replay where a table ships, i.e. gemm "
                        "n=64, --table and --kernel-tuner; live otherwise)")
    p.add_argument("--objective", default=None,
                   help="metric to minimise (default: the measurer's, misses for GEMM)")
    p.add_argument("--searcher", default="model", choices=sorted(SEARCHERS),
                   help="searcher (default %(default)s)")
    p.add_argument("--budget", type=int, default=100,
                   help="total trials of the study, over all workers (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="searcher seed (default %(default)s)")
    p.add_argument("--storage", default="autotile_studies.db",
                   help="SQLite file or sqlite:/// URL (default %(default)s), "
                        "postgresql://user:password@host/db or mysql://... for several "
                        "machines, or a journal file (.log, journal:///path) for NFS")
    p.add_argument("--study-name", default=None,
                   help="default: <space>-<searcher>-<objective>-seed<seed>, after "
                        "<file>- (the file's name without .json/.json.gz/.npz) with "
                        "--kernel-tuner or --table")
    _worker_options(p)
    return p


def _check_memory(n: int, measurer: Any) -> None:
    """Refuse a live GEMM size whose simulator state would not fit in this machine's memory."""
    from autotile.measure.cpu._schedule_measurer import memory_bytes, memory_problem

    why = memory_problem(n, measurer.settings(), 1, memory_bytes())
    if why is not None:
        raise _UsageError(why)


def _worker_parser() -> argparse.ArgumentParser:
    p = _Parser(allow_abbrev=False, prog="autotile worker",
                description="Join a study started by `autotile tune`: rebuild its space, "
                            "measurer and searcher from the study and run trials until it "
                            "holds its budget.")
    p.add_argument("--storage", required=True, help="the study's storage (as given to tune)")
    p.add_argument("--study-name", default=None,
                   help="the study (default: the storage's only study)")
    _worker_options(p)
    return p


def _gemm_n(recorded: dict[str, Any]) -> int | None:
    """``n`` if a table's recorded space is ``gemm_space(n)``, else None."""
    from autotile.space import gemm_space

    knobs = recorded.get("knobs") or []
    n = knobs[0].get("n") if knobs and isinstance(knobs[0], dict) else None
    if not isinstance(n, int):
        return None
    from autotile.measure._ground_truth import space_difference

    return n if space_difference(recorded, gemm_space(n)) is None else None


def build(spec: dict[str, Any]) -> tuple[Any, Any]:
    """The space and measurer described by a recorded ``autotile tune`` spec.

    Raises
    ------
    _UsageError
        If a file is missing or unreadable, the measurer does not fit the
        space, or the objective is unknown.
    """
    from autotile.errors import CorruptFileError, MeasureError
    from autotile.measure import GroundTruth, ReplayMeasurer, ScheduleMeasurer
    from autotile.measure._replay import SHIPPED_TABLES, gemm_ground_truth
    from autotile.space import gemm_space

    kind, objective = spec["space"], spec.get("objective")
    measurer: Any
    if kind == "kernel-tuner":
        from autotile.measure._kernel_tuner import load_kernel_tuner

        try:
            rec = load_kernel_tuner(spec["path"])
        except FileNotFoundError:
            raise _UsageError(f"no such file: {spec['path']}") from None
        except (MeasureError, CorruptFileError) as exc:
            raise _UsageError(str(exc)) from None
        if spec.get("measurer") == "live":
            raise _UsageError("--measurer live needs --space gemm; a Kernel Tuner file is "
                              "replayed")
        space, measurer = rec.space, rec.measurer(objective or rec.objective)
    elif kind == "table":
        try:
            truth = GroundTruth.load(spec["path"])
        except FileNotFoundError:
            raise _UsageError(f"no such file: {spec['path']}") from None
        except CorruptFileError as exc:
            raise _UsageError(str(exc)) from None
        n = _gemm_n(truth.meta.get("space") or {})
        if n is None:
            raise _UsageError(f"{spec['path']} is not a GEMM sweep table that records its "
                              f"space (made by `autotile sweep`); re-create it with "
                              f"`autotile sweep`")
        space = gemm_space(n)
        if spec.get("measurer") == "live":
            measurer = ScheduleMeasurer(space, objective=objective or "misses")
        else:
            measurer = ReplayMeasurer(space, truth, objective or truth.metrics[0])
    else:
        n = int(spec["n"])
        if n < 1:
            raise _UsageError(f"--n must be >= 1, got {n}")
        space = gemm_space(n)
        replay = spec.get("measurer") == "replay" or (spec.get("measurer") is None
                                                       and n in SHIPPED_TABLES)
        if replay:
            if n not in SHIPPED_TABLES:
                raise _UsageError(f"no table ships for --n {n} (shipped: "
                                  f"{sorted(SHIPPED_TABLES)}): use --measurer live, or "
                                  f"`autotile sweep --n {n}` and --table")
            measurer = ReplayMeasurer(space, gemm_ground_truth(n), objective or "misses")
        else:
            measurer = ScheduleMeasurer(space, objective=objective or "misses")
            _check_memory(n, measurer)
    metrics = tuple(getattr(measurer, "metrics", ()) or ())
    if objective is not None and metrics and objective not in metrics:
        raise _UsageError(f"unknown objective {objective!r}; choose from {', '.join(metrics)}")
    return space, measurer


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _run(spec: dict[str, Any], args: argparse.Namespace, storage_arg: str,
         study_name: str | None, prog: str) -> int:
    """Build the study and run this worker; print what to do next."""
    from autotile.search import create_study, open_storage
    from autotile.search._optimize import quiet_optuna
    from autotile.search._study_args import _hide_password

    space, measurer = build(spec)
    if study_name is None and spec.get("path"):
        # two files of one kernel (e.g. two GPUs) share the space's name: add the file's
        from autotile.search._create import default_study_name

        study_name = default_study_name(space, spec["searcher"],
                                        spec.get("objective") or measurer.objective,
                                        spec.get("seed"), spec["path"])
    storage = open_storage(storage_arg, heartbeat_interval=args.heartbeat_interval,
                           grace_period=args.grace_period)
    study = create_study(space, measurer, searcher=spec["searcher"],
                         objective=spec.get("objective"), storage=storage,
                         study_name=study_name, seed=spec.get("seed"))
    ost = study.optuna_study
    with quiet_optuna():
        old = ost.user_attrs.get(CLI_ATTR)
        if not isinstance(old, dict) or (prog == "autotile tune"
                                         and old.get("budget") != spec["budget"]):
            ost.set_user_attr(CLI_ATTR, spec)  # a rerun of tune sets the workers' budget
        if not ost.metric_names:
            ost.set_metric_names([study.objective])
    shown = _hide_password(storage_arg, "<password>")  # a command to copy: no password
    join = (f"autotile worker --storage {_quote(shown)} "
            f"--study-name {_quote(study.study_name)}")
    print(f"study {study.study_name!r} in {_hide_password(storage_arg)} ({len(space)} "
          f"configs, budget {spec['budget']}, searcher {spec['searcher']}, "
          f"objective {study.objective})")
    print(f"  join from any machine that reaches the storage:  {join}")
    t0 = time.perf_counter()
    from autotile.search._optimize import _n_finished

    n_before = _n_finished(study)
    if n_before >= spec["budget"]:
        print(f"  the study already holds {n_before} finished trials >= its budget "
              f"{spec['budget']}: nothing to run"
              + (f" (pass --budget > {n_before} to run more)" if prog == "autotile tune"
                 else ""))
        if n_before:
            print(f"  best {study.objective} = {study.best_value:.6g}: {study.best_config}")
        return 0
    try:
        study.optimize(spec["budget"], n_jobs=args.n_jobs, progress=not args.no_progress,
                       timeout=args.timeout)
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted after {time.perf_counter() - t0:.1f} s; this worker's "
              f"unfinished trials went back to the study. Resume with:\n  {join}",
              file=sys.stderr)
        return 130
    n_done = len([t for t in study.trials if t.status not in ("running", "waiting",
                                                              "abandoned")])
    why = {"timeout": ", stopped at --timeout",
           "exhausted": ", stopped: every config of the space is measured"}.get(
        str(study.stop_reason), "")
    print(f"{n_done} of {spec['budget']} trials finished ({time.perf_counter() - t0:.1f} s"
          f"{why}); best {study.objective} = {study.best_value:.6g}: {study.best_config}")
    if n_done < spec["budget"] and study.stop_reason != "exhausted":
        print(f"  resume with:  {join}")
    inspect = (f"python -c \"import optuna; from autotile.search import open_storage; "
               f"s = optuna.load_study(study_name={study.study_name!r}, "
               f"storage=open_storage({shown!r})); "
               f"print(len(s.trials), s.best_value)\"")
    print(f"  inspect:  {inspect}")
    return 0


def _check_worker_args(args: argparse.Namespace) -> None:
    if args.n_jobs == 0:
        raise _UsageError("--n-jobs must be a non-zero int (-1: all cores), got 0")
    if args.timeout is not None and not args.timeout > 0:
        raise _UsageError(f"--timeout must be > 0 seconds, got {args.timeout}")


def tune_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``autotile tune``.

    Returns
    -------
    int
        0 once the study holds its budget (or ``--timeout`` passed), 2 on bad
        input (one ``autotile tune: error: ...`` line on stderr), 130 on
        Ctrl-C (the study stays resumable).
    """
    prog = "autotile tune"
    try:
        args = _tune_parser().parse_args(argv)
        _check_worker_args(args)
        if args.budget < 1:
            raise _UsageError(f"--budget must be >= 1, got {args.budget}")
        if args.n is not None and (args.table or args.kernel_tuner):
            flag, file = ("--table", args.table) if args.table else \
                ("--kernel-tuner", args.kernel_tuner)
            raise _UsageError(f"--n sets the size of --space gemm; {flag} {file} replays the "
                              f"space recorded in its file, so --n cannot be used with it, got "
                              f"--n {args.n} (drop --n)")
        if args.kernel_tuner:
            spec: dict[str, Any] = {"space": "kernel-tuner",
                                    "path": os.path.abspath(args.kernel_tuner)}
        elif args.table:
            spec = {"space": "table", "path": os.path.abspath(args.table)}
        else:
            spec = {"space": "gemm", "n": 64 if args.n is None else args.n}
        spec.update(measurer=args.measurer, objective=args.objective, searcher=args.searcher,
                    seed=args.seed, budget=args.budget)
        return _run(spec, args, args.storage, args.study_name, prog)
    except (_UsageError, ValueError, TypeError, ImportError) as exc:
        print(f"{prog}: error: {_as_flags(str(exc))}", file=sys.stderr)
        return 2


def _as_flags(message: str) -> str:
    """A library error about ``seed``/``objective``/heartbeats worded with the command's flags."""
    for name in ("seed", "objective"):
        if message.startswith(f"{name} must"):
            message = f"--{name}" + message[len(name):]
            message = message.replace(f"got {name}=", f"got --{name} ").replace(
                "must be None or an int", "must be an int")
    if message.startswith(("heartbeat_interval ", "grace_period ")):  # from open_storage
        message = message.replace(" or None,", ",")
        for name in ("heartbeat_interval", "grace_period"):
            flag = "--" + name.replace("_", "-")
            message = message.replace(f"{name}=", f"{flag} ").replace(name, flag)
    return message


def _check_storage_file_exists(storage: str) -> None:
    """Refuse an SQLite or journal file that does not exist (opening it would create it).

    A worker joins a study that ``autotile tune`` started; a missing file
    is a wrong path, and opening it would leave an empty storage behind.
    """
    from autotile.search._study_args import resolve_storage

    url = resolve_storage(storage)
    if not isinstance(url, str):
        return
    path = None
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):].partition("?")[0]
    elif url.startswith("journal://"):
        path = url[len("journal://"):]
    if path and path != ":memory:" and not os.path.exists(path):
        raise _UsageError(
            f"--storage {storage!r}: no such file {os.path.abspath(path)!r}; a worker joins "
            f"a study that `autotile tune --storage {storage}` started, so the file must "
            f"exist (nothing was created)")


def worker_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``autotile worker``.

    Returns
    -------
    int
        0 once the study holds its budget (or ``--timeout`` passed), 2 on bad
        input or a study not started by ``autotile tune``, 130 on Ctrl-C.
    """
    import optuna

    from autotile.search import open_storage
    from autotile.search._study_args import _hide_password

    prog = "autotile worker"
    try:
        args = _worker_parser().parse_args(argv)
        _check_worker_args(args)
        _check_storage_file_exists(args.storage)
        storage = open_storage(args.storage, heartbeat_interval=None)
        names = [s.study_name for s in optuna.get_all_study_summaries(storage)]
        name = args.study_name
        if not names:
            raise _UsageError(f"{_hide_password(args.storage)} holds no study; start one with "
                              f"`autotile tune --storage {_hide_password(args.storage)} ...`")
        if name is None:
            if len(names) != 1:
                raise _UsageError(f"pass --study-name: {_hide_password(args.storage)} holds "
                                  f"{len(names)} studies {names[:10]}")
            name = names[0]
        if name not in names:
            raise _UsageError(f"no study {name!r} in {_hide_password(args.storage)}; "
                              f"it holds {names[:10]}")
        spec = optuna.load_study(study_name=name, storage=storage).user_attrs.get(CLI_ATTR)
        if not isinstance(spec, dict):
            raise _UsageError(f"study {name!r} was not started by `autotile tune`, so this "
                              f"worker cannot rebuild its space and measurer; run it with "
                              f"autotile.tune(..., study_name={name!r}) instead")
        if spec.get("path") and not Path(spec["path"]).exists():
            raise _UsageError(f"study {name!r} replays {spec['path']}, which is not on this "
                              f"machine; copy it to the same path")
        return _run(spec, args, args.storage, name, prog)
    except (_UsageError, ValueError, TypeError, ImportError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
