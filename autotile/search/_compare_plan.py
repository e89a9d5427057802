"""The plan of a comparison: checked arguments, optimum, budget, expected time, header.

:func:`plan_comparison` checks what :func:`~autotile.search.compare` is given
and works out what it needs before the first trial: the table's optimum, the
methodology's budget, and the expected time from reference timings of each
searcher; :meth:`ComparisonPlan.header` prints them.
"""

from __future__ import annotations

import copy
import math
import numbers
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autotile.search._compare_run import SearcherFn
from autotile.search._comparison import DIRECTIONS
from autotile.search._methodology import FloatArray, methodology_budget
from autotile.search._study_args import check_count, check_measurer_space, check_seeds, short_repr

__all__ = ["ComparisonPlan", "plan_comparison", "objective_direction", "DEFAULT_SEARCHERS",
           "P_MEANING", "machine_load"]

#: The searchers :func:`compare` runs by default.
DEFAULT_SEARCHERS = ("grid", "random", "model", "evolutionary", "tpe")
_KNOWN_SEARCHERS = ("grid", "random", "model", "evolutionary", "bandit", "tpe", "cmaes", "gp",
                    "nsga2", "qmc")
#: What P(t) means, in one line: every report prints it next to the score.
P_MEANING = ("P(t): 1 = found the optimum, 0 = as good as random search, < 0 = worse than "
             "random (methodology score of Willemsen et al. 2024)")

# Seconds a run of B trials takes on a replayed table, a*B + c*B^2: CPU seconds of 5 runs of
# 500 trials on the gemm64 table, one process, a 2-core x86_64 box with the other core
# nearly free (load 1.1; benchmarks/gemm/bench_compare_cost.py, 2026-12-02: grid 0.28 s,
# random 0.30, model 3.6, evolutionary 2.5, tpe 3.1 per run; bandit from
# bench_searcher_cpu.py, 3.9 ms per trial). Searcher cost dominates a replay; a live
# measurer adds its own time per trial.
_RUN_COST = {"grid": (5e-4, 1e-7), "random": (5.5e-4, 1e-7), "tpe": (2e-3, 8.4e-6),
             "evolutionary": (4.5e-3, 1e-6), "model": (6.7e-3, 1e-6), "bandit": (3.9e-3, 1e-6),
             "nsga2": (4e-3, 1e-6), "qmc": (4e-3, 1e-6), "cmaes": (6e-3, 1e-6),
             "gp": (0.3, 1e-4)}
_START_S = 3.0  # worker processes, imports
# Per run, on top of _RUN_COST: worker hand-off and progress messages (CPU seconds, measured
# as the difference between compare()'s CPU time and its runs' on the box above).
_RUN_OVERHEAD_S = 0.15
# Per trial kept in a storage (the CLI always keeps them): sent back by its worker and
# written to SQLite by the main process while the workers run; the CLI's CPU time minus
# compare()'s, 10,000 trials, measured under load (load 8-10).
_TRIAL_KEEP_S = 5e-4
# Writing the report (CSV, JSON, PNG plot, HTML): 2 CPU seconds measured as above.
_REPORT_S = 2.5

#: Metric names that are throughputs (larger is better): ``GFLOP/s``, ``GB/s``,
#: ``TFLOPS``, ``bytes_per_s``, ``throughput``, ``bandwidth``...
_THROUGHPUT = re.compile(
    r"(/\s*(s|sec|second)$)|([_ ]per[_ ](s|sec|second)$)"
    r"|((^|[^a-z])[kmgtpe]?(flops|iops|bps)$)"
    r"|((^|[_ ])(throughput|bandwidth|speedup|occupancy|efficiency|hit_rate|hits)($|[_ ]))",
    re.IGNORECASE)


def objective_direction(metric: str) -> str:
    """The direction in which ``metric`` improves, from its name.

    Throughputs are maximised: names ending in a per-second unit (``GFLOP/s``,
    ``TFLOP/s``, ``GB/s``, ``items/sec``, ``bytes_per_s``), the units
    ``FLOPS``, ``IOPS`` or ``bps`` with an optional SI prefix (``GFLOPS``,
    ``Gbps``), and names with the word ``throughput``, ``bandwidth``,
    ``speedup``, ``occupancy``, ``efficiency``, ``hit_rate`` or ``hits``.
    Everything else (``time``, ``misses``, ``est_cycles``, ``energy``...) is
    minimised. A leading ``-`` (a negated metric) flips the direction. Pass
    ``direction=`` to :func:`compare` where the name misleads.

    Parameters
    ----------
    metric : str
        The objective's name.

    Returns
    -------
    {"minimize", "maximize"}

    Examples
    --------
    >>> objective_direction("GFLOP/s"), objective_direction("time")
    ('maximize', 'minimize')
    """
    name = str(metric).strip()
    if name.startswith("-"):
        return "minimize" if objective_direction(name[1:]) == "maximize" else "maximize"
    return "maximize" if _THROUGHPUT.search(name) else "minimize"


def _known_searchers() -> tuple[str, ...]:
    import autotile.search as search

    for attr in ("SEARCHERS", "SEARCHER_NAMES"):
        names = getattr(search, attr, None)
        if names:
            return tuple(names)
    return _KNOWN_SEARCHERS


@dataclass
class ComparisonPlan:
    """A checked comparison, ready to run (:func:`plan_comparison`, :func:`run_comparison`).

    Attributes
    ----------
    space, measurer : Space, Measurer
        What is searched and how configs are scored (the measurer scores
        ``objective``).
    items : list of (str, str or callable)
        Searcher labels and names (or custom functions).
    seeds : tuple of int
        Seeds per searcher.
    budget : int
        Trials per run.
    objective, direction : str
        The metric compared and whether it is minimised or maximised.
    optimum : float
        ``f_opt``.
    values : ndarray or None
        Every valid value of the table, best first.
    n_configs : int or None
        Rows of the table.
    meta : dict
        Report labels: ``space``, ``space_size``, ``unit``, and whatever the
        caller passed (``source``, ``device``...).
    """

    space: Any
    measurer: Any
    items: list[tuple[str, str | SearcherFn]]
    seeds: tuple[int, ...]
    budget: int
    objective: str
    direction: str
    optimum: float
    values: FloatArray | None
    n_configs: int | None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        """Searcher labels, in order."""
        return [label for label, _ in self.items]

    @property
    def n_runs(self) -> int:
        """(searcher, seed) runs."""
        return len(self.items) * len(self.seeds)

    def run_seconds(self, label: str) -> float:
        """Expected seconds of one run of ``label`` (NaN for a custom function)."""
        name = dict(self.items)[label]
        if not isinstance(name, str) or name not in _RUN_COST:
            return math.nan
        a, c = _RUN_COST[name]
        return a * self.budget + c * self.budget ** 2

    def expected_seconds(self, n_workers: int, stored: bool = False,
                         report: bool = False) -> float:
        """Expected wall time on ``n_workers`` parallel workers with free cores (NaN if unknown).

        From reference CPU timings of each searcher on a replayed table, plus
        the start of the workers and each run's hand-off; a measurer that
        really measures adds its own time per trial, and a busy machine
        takes longer.

        Parameters
        ----------
        n_workers : int
            Parallel workers (>= 1).
        stored : bool, default=False
            Every trial is kept in a storage (about 0.5 ms each, written by
            the main process while the workers run).
        report : bool, default=False
            The report files are written after the runs (about 2.5 s).

        Returns
        -------
        float
            Seconds.
        """
        runs = [self.run_seconds(label) + _RUN_OVERHEAD_S
                for label in self.labels for _ in self.seeds]
        if any(math.isnan(r) for r in runs):
            return math.nan
        keep = _TRIAL_KEEP_S * self.budget * self.n_runs if stored else 0.0
        # the main process stores trials while the workers run
        return (_START_S + max(sum(runs) / max(n_workers, 1), max(runs, default=0.0), keep)
                + (_REPORT_S if report else 0.0))

    def header(self, n_workers: int, stored: bool = False, report: bool = False,
               load: tuple[float, int] | None = None) -> list[str]:
        """The lines printed before the first trial: space, objective, budget, time.

        Parameters
        ----------
        n_workers : int
            Parallel workers.
        stored, report : bool, default=False
            As for :meth:`expected_seconds`; they change the expected time and
            what it is said to cover.
        load : (float, int), optional
            The machine's load average and its number of cores
            (:func:`machine_load`); when the other processes leave fewer free
            cores than ``n_workers``, a line says the time will be longer.

        Returns
        -------
        list of str
        """
        unit = self.meta.get("unit")
        n_valid = None if self.values is None else int(self.values.shape[0])
        space = (f"space: {self.meta.get('space')} ({self.meta.get('space_size'):,} configs"
                 + (f", {n_valid:,} valid" if n_valid is not None else "") + ")")
        if self.meta.get("source"):
            space += (", " if self.meta.get("live") else ", replayed from ") + self.meta["source"]
        lines = [space]
        if self.meta.get("device"):
            lines.append(f"device: {self.meta['device']}")
        optimal = ""
        if self.values is not None:
            s = -1.0 if self.direction == "maximize" else 1.0
            k = int(np.count_nonzero(s * self.values <= s * self.optimum))
            optimal = (f" ({k:,} sampled config{'s' if k != 1 else ''} at it)"
                       if self.meta.get("optimum_label") else
                       f" ({k:,} optimal config{'s' if k != 1 else ''})")
        done = "maximised" if self.direction == "maximize" else "minimised"
        lines.append(f"objective: {self.objective}" + (f" in {unit}" if unit else "")
                     + f" ({done}), {self.meta.get('optimum_label', 'optimum')} "
                     f"{self.optimum:.8g}{optimal}")
        seeds = self.seeds
        seed_text = (f"seeds {seeds[0]}..{seeds[-1]}" if seeds == tuple(
            range(seeds[0], seeds[0] + len(seeds))) else f"seeds {', '.join(map(str, seeds))}")
        lines.append(f"budget: {self.budget:,} trials per run x {len(seeds)} seeds ({seed_text})"
                     f" x {len(self.items)} searchers ({', '.join(self.labels)}) = "
                     f"{self.budget * self.n_runs:,} trials")
        est = self.expected_seconds(n_workers, stored, report)
        parts = ["the runs", *(["storing them"] if stored else []),
                 *(["the report"] if report else [])]
        covers = " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)
        if getattr(self.measurer, "truth", None) is None:  # not a replay: trials cost time
            covers += ", not counting the measurer's own time per trial"
        lines.append("expected time: " + (
            "unknown (custom searchers)" if math.isnan(est) else
            f"about {_duration(est)} on {n_workers} worker{'s' if n_workers > 1 else ''} "
            f"if the cores are free ({covers})"))
        if load is not None and load[0] + n_workers > load[1] + 0.5:
            lines.append(f"  this machine is busy (load average {load[0]:.1f} on {load[1]} "
                         f"core{'s' if load[1] != 1 else ''}), so expect it to take longer")
        return lines


def machine_load() -> tuple[float, int] | None:
    """Return the machine's 1-minute load average and number of cores (None where unknown)."""
    try:
        avg = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on every platform
        return None
    return avg, os.cpu_count() or 1


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(5, 5 * round(seconds / 5)):.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _items(searchers: Any) -> list[tuple[str, str | SearcherFn]]:
    known = _known_searchers()
    if isinstance(searchers, str) or (
            isinstance(searchers, tuple) and len(searchers) == 2
            and isinstance(searchers[0], str) and callable(searchers[1])):
        searchers = [searchers]  # one name, or one (label, fn) pair
    items: list[tuple[str, str | SearcherFn]] = []
    for s in searchers:
        if isinstance(s, str):
            if s not in known:
                raise ValueError(f"unknown searcher {s!r}; choose from {', '.join(known)}")
            items.append((s, s))
        elif isinstance(s, tuple) and len(s) == 2:
            label, fn = s
            if not callable(fn):
                raise ValueError(f"searcher {label!r} must be a name or (label, callable), "
                                 f"got {fn!r}")
            items.append((str(label), fn))
        else:
            raise ValueError(f"each searcher must be a name or a (label, callable) pair, got "
                             f"{short_repr(s)}")
    labels = [label for label, _ in items]
    if len(set(labels)) != len(labels):
        raise ValueError(f"searcher labels must be distinct, got {labels}")
    if not items:
        raise ValueError("compare needs at least one searcher")
    return items


#: float64 arrays of ``budget`` values held per run: the comparison's history row, the
#: run's own history and the copy a study's ``history()`` builds.
_HISTORY_ARRAYS = 3


def check_history_memory(budget: int, n_runs: int, memory: int | None = None) -> None:
    """Refuse a comparison whose per-run histories cannot fit in memory.

    The histories take about ``n_runs * budget * 8 * 3`` bytes (float64,
    :data:`_HISTORY_ARRAYS` arrays per run); above half of ``memory`` (default:
    the machine's physical memory or ``ulimit -v``, whichever is lower) the
    run would be killed or fail in numpy, hours in, so it is refused here.

    Raises
    ------
    ValueError
        Naming ``budget``, the estimated bytes and the memory.
    """
    if memory is None:
        from autotile.measure.cpu._schedule_measurer import memory_bytes

        memory = memory_bytes()
    if memory is None:
        return
    need = n_runs * budget * 8 * _HISTORY_ARRAYS
    if need > memory // 2:
        raise ValueError(
            f"budget={budget:,} is too large: the histories of {n_runs} runs (searchers x "
            f"seeds) x {budget:,} trials need about {need / 2**30:,.1f} GiB "
            f"({n_runs} x {budget:,} x 8 bytes x {_HISTORY_ARRAYS} arrays), more than half "
            f"of this machine's {memory / 2**30:,.1f} GiB of memory; choose a budget of at "
            f"most {max(1, memory // 2 // (n_runs * 8 * _HISTORY_ARRAYS)):,}")


def plan_comparison(
    space: Any,
    measurer: Any,
    searchers: Sequence[str | tuple[str, SearcherFn]] = DEFAULT_SEARCHERS,
    budget: int | None = None,
    seeds: int | Sequence[int] = 10,
    objective: str | None = None,
    optimum: float | None = None,
    direction: str | None = None,
    meta: dict[str, Any] | None = None,
) -> ComparisonPlan:
    """Check a comparison's arguments and work out its optimum and budget.

    The parameters are those of :func:`compare`; ``meta`` adds report labels
    (``space``, ``unit``, ``source``, ``device``...).

    Returns
    -------
    ComparisonPlan
        Pass it to :func:`run_comparison`.

    Raises
    ------
    ValueError
        As :func:`compare`.
    """
    if budget is not None:
        budget = check_count("budget", budget)
    seed_list = check_seeds(seeds)
    if optimum is not None and (not isinstance(optimum, numbers.Real) or isinstance(
            optimum, bool) or not math.isfinite(optimum)):
        raise ValueError(f"optimum must be a finite number or None, got "
                         f"optimum={short_repr(optimum)}")
    check_measurer_space(space, measurer)
    items = _items(searchers)
    metrics = tuple(getattr(measurer, "metrics", ()) or ())
    objective = objective or getattr(measurer, "objective", None)
    if not objective:
        raise ValueError("pass objective=: the measurer has no default objective")
    if metrics and objective not in metrics:
        raise ValueError(f"objective must be one of {list(metrics)}, got objective={objective!r}")
    if direction is None:
        direction = objective_direction(objective)
    elif direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS} (or None: from the "
                         f"objective's name), got direction={short_repr(direction)}")
    sign = -1.0 if direction == "maximize" else 1.0
    if objective != getattr(measurer, "objective", None):
        measurer = copy.copy(measurer)
        measurer.objective = objective
    truth = getattr(measurer, "truth", None)
    values: FloatArray | None = None
    n_configs = None
    if truth is not None:
        col = np.asarray(truth.column(objective), dtype=np.float64)
        ok = (np.asarray(truth.status) == 0) & np.isfinite(col)
        values = sign * np.sort(sign * col[ok])  # best first
        n_configs = int(col.shape[0])
    if optimum is None:
        if values is None or values.shape[0] == 0:
            raise ValueError("pass optimum=: the measurer has no ground-truth table")
        optimum = float(values[0])
    elif values is not None and values.shape[0] and sign * float(optimum) < sign * values[0]:
        side, rel = ("above", ">") if direction == "maximize" else ("below", "<")
        raise ValueError(
            f"optimum must not be {side} the table's best {objective} ({direction}d; no "
            f"config reaches it, so every score would be meaningless), got "
            f"optimum={optimum!r} {rel} {float(values[0])!r}")
    if budget is None:
        if values is None:
            raise ValueError("pass budget=: the measurer has no ground-truth table")
        budget = check_count("budget",
                             methodology_budget(sign * values, n_configs=n_configs))
    check_history_memory(budget, len(seed_list) * len(items))
    info = {"space": getattr(space, "name", None) or "space", "space_size": len(space),
            "n_configs": n_configs, "measurer": type(measurer).__name__}
    if values is None:  # no table proves it: the runs check it (run_comparison)
        info["optimum_label"] = "optimum (given, no table)"
    info.update(meta or {})
    return ComparisonPlan(space, measurer, items, seed_list, budget, objective, direction,
                          float(optimum), values, n_configs, info)


