"""The rules of a GPU tuning: model prior, early stop and interleaved re-timing.

Pure bookkeeping, no device: :func:`rank_by_model` orders and prunes the
candidates with the GPU model's predictions, :func:`worth_measuring` is the
early-stop rule, :func:`bench_share` sizes the timings so that they cost no
more device time than ``triton.autotune`` over the same list,
:func:`retime_leaders` chooses whom to re-time, :func:`interleaved_retime`
re-times them in rounds of fresh random order and :func:`median` picks by the
median. :func:`prior_cost_cap_s` bounds what the model prior may cost. The GPU
tuner (:mod:`autotile.tuner._gpu_tuner`) applies them in that order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from autotile.tuner._config import LaunchConfig

__all__ = ["Prediction", "rank_by_model", "worth_measuring", "diversity_probe",
           "interleaved_retime", "median", "bench_share", "retime_leaders",
           "prior_cost_cap_s", "RETIME_GAP", "FIRST_PASS_SHARE"]

C = TypeVar("C", bound=Hashable)

#: A measured candidate whose first-pass time is more than ``1 + RETIME_GAP``
#: times the fastest first-pass time is not re-timed (the two fastest always
#: are). A choice, not fitted: on the H200 v3 run (benchmarks/h200/data/
#: autotune_kernels_v3/call1) a first-pass time and the same config's re-timed
#: median differed by 0.9 % at most, and the slow spell seen in the v2 run
#: inflated a few consecutive timings by 4-56 %; 10 % is ten times the former,
#: and a spell larger than the gap can hide a candidate from the re-time with
#: or without this rule (it then is not among the top ``retime_top`` either).
RETIME_GAP = 0.10

#: Fraction of ``warmup`` and ``rep`` a first-pass timing gets (``do_bench(25, 100)``:
#: 6.25 and 25 ms). The first pass only chooses what is re-timed (the leaders within
#: :data:`RETIME_GAP`) and the pick is decided in the re-time rounds, whose budgets
#: :func:`bench_share` sets as before. A choice, not fitted, from the H200 runs
#: (softmax and layer norm, in-sample for this choice): the benchmark's own timings
#: with ``do_bench(5, 25)`` varied between rounds by a median of 0.35-0.58 % (90th
#: percentile 0.8-1.0 %) per config in the v2, v3 and v4 runs, no more than the
#: tuner's re-time rounds of 28-42 ms (0.03-1.0 %), and the first passes of 83 ms (v4)
#: and 125 ms (v3) read within 1.2 % of the final medians either way: the noise is
#: the device's drift between timings, not the number of runs in one. A quarter of
#: the budget is about the benchmark's ``do_bench(5, 25)``; on a six-config list it
#: saves 6 x (83 - 31) ms, 0.31 s of a 1.3-3.3 s ``triton.autotune`` tuning.
FIRST_PASS_SHARE = 0.25


@dataclass(frozen=True)
class Prediction:
    """The model's word on one candidate.

    Attributes
    ----------
    time_s : float or None
        Predicted time in seconds; None when the model could not score the
        candidate (it raised): such a candidate is kept and measured last.
    infeasible : str or None
        Why the model says the candidate cannot launch (shared memory,
        registers, ...); None when it can.
    """

    time_s: float | None
    infeasible: str | None = None


def rank_by_model(candidates: Sequence[C], predictions: Mapping[C, Prediction],
                  prune_factor: float | None) -> tuple[list[C], dict[C, str]]:
    """Order candidates by predicted time and prune the hopeless ones.

    Parameters
    ----------
    candidates : sequence of hashable
        The configs, in the user's order.
    predictions : mapping of config to Prediction
        The model's prediction of each (a missing one counts as unknown).
    prune_factor : float or None
        A candidate predicted slower than ``prune_factor`` times the best
        prediction is pruned; None: only infeasible ones are.

    Returns
    -------
    order : list
        Feasible candidates, fastest prediction first (ties and unknown
        predictions keep the user's order; unknown ones go last).
    pruned : dict of config to str
        Each pruned candidate and the reason.

    Notes
    -----
    When no candidate has a finite prediction the model says nothing useful
    (it cannot run this kernel): nothing is pruned, not even for
    infeasibility, and the order is the user's.
    """
    preds = {c: predictions.get(c, Prediction(None)) for c in candidates}
    finite = [p.time_s for p in preds.values()
              if p.infeasible is None and p.time_s is not None and math.isfinite(p.time_s)]
    if not finite:
        return list(candidates), {}
    best = min(finite)
    pruned: dict[C, str] = {}
    kept: list[tuple[float, int, C]] = []
    for i, c in enumerate(candidates):
        p = preds[c]
        if p.infeasible is not None:
            pruned[c] = f"the GPU model says it cannot launch: {p.infeasible}"
        elif p.time_s is None or not math.isfinite(p.time_s):
            kept.append((math.inf, i, c))
        elif prune_factor is not None and p.time_s > prune_factor * best:
            pruned[c] = (f"the GPU model predicts {p.time_s:.4g} s, {p.time_s / best:.2f}x its "
                         f"best candidate ({best:.4g} s) > prune_factor={prune_factor:g}")
        else:
            kept.append((p.time_s, i, c))
    kept.sort(key=lambda t: (t[0], t[1]))
    return [c for _, _, c in kept], pruned


def worth_measuring(predicted_s: float | None, measured: Sequence[tuple[float, float]],
                    best_s: float, n_measured: int, min_measured: int) -> bool:
    """Return whether the next candidate (in model order) is worth measuring: the early stop.

    Each measured candidate gives a ratio ``r = measured / predicted``. The
    median ratio ``r_mid`` corrects the model's scale; the spread
    ``max(r) / min(r)`` is its observed error (1 for a model that ranks
    perfectly). The next candidate's optimistic time is its prediction,
    scaled by ``r_mid`` and divided by the spread; measuring goes on while
    that could beat the best measured time::

        n_measured < min_measured  or  predicted * r_mid / spread < best_s

    Candidates come in ascending prediction, so a later candidate has no
    better chance than this one: tuning stops at the first for which this is
    False. A model that ranks perfectly stops right after its
    ``min_measured`` top candidates; a poor one measures on.

    Parameters
    ----------
    predicted_s : float or None
        The next candidate's predicted time, seconds (None: unknown, always
        measured).
    measured : sequence of (predicted_s, measured_s)
        Every candidate measured so far that has a finite prediction.
    best_s : float
        Best measured time so far, seconds (``inf`` when none).
    n_measured : int
        Candidates measured so far (whatever their outcome).
    min_measured : int
        The model's top candidates that are always measured.

    Returns
    -------
    bool

    Examples
    --------
    A model off by a constant factor 2 ranks perfectly: stop after the top 2.

    >>> worth_measuring(1.2, [(1.0, 2.0), (1.1, 2.2)], 2.0, 2, 2)
    False

    A model whose error varies (ratios 1.2 and 0.95) keeps measuring.

    >>> worth_measuring(1.1, [(1.0, 1.2), (1.05, 0.9975)], 0.9975, 2, 2)
    True
    """
    if n_measured < min_measured or predicted_s is None or not math.isfinite(best_s):
        return True
    ratios = [m / p for p, m in measured if p > 0 and math.isfinite(m) and math.isfinite(p)]
    if not ratios:
        return True
    spread = max(ratios) / min(ratios)
    return predicted_s * median(ratios) / spread < best_s


def diversity_probe(remaining: Sequence[LaunchConfig], measured: Sequence[LaunchConfig]
                    ) -> int | None:
    """Index of the remaining candidate least like every measured one (the probe).

    The early stop (:func:`worth_measuring`) judges the model's error on what
    it measured, which is the model's own top: candidates alike (the same tile
    shape, say). A model biased against a whole family of configs looks
    consistent there and stops before reaching that family (flash attention
    at N = 2048, d = 128 on the H200: the model's top was every 128-row tile,
    measured 1.5-2.7x its predictions; the best config, a 64-row tile, ran
    at 0.7x). Before the stop ends a tuning, the candidate whose nearest
    measured config differs in the most knobs (meta-parameters, ``num_warps``,
    ``num_stages``; ties go to the model's order) is measured once; its ratio
    enters the stop rule's spread.

    Parameters
    ----------
    remaining : sequence of LaunchConfig
        Unmeasured candidates, in model order.
    measured : sequence of LaunchConfig
        Candidates measured so far.

    Returns
    -------
    int or None
        Index into ``remaining``; None when either is empty.

    Examples
    --------
    >>> from autotile.tuner import LaunchConfig as C
    >>> diversity_probe([C({"BM": 128}, num_warps=8), C({"BM": 64}, num_warps=4)],
    ...                 [C({"BM": 128}, num_warps=4)])
    0
    >>> diversity_probe([C({"BM": 128}, num_warps=4, num_stages=2), C({"BM": 64}, num_warps=8)],
    ...                 [C({"BM": 128}, num_warps=4, num_stages=3)])
    1
    """
    if not remaining or not measured:
        return None

    seen = [c.all_kwargs() for c in measured]
    best_i, best_d = None, -1
    for i, c in enumerate(remaining):
        k = c.all_kwargs()
        d = min(sum(1 for n in set(k) | set(m) if k.get(n) != m.get(n)) for m in seen)
        if d > best_d:
            best_i, best_d = i, d
    return best_i


def median(values: Sequence[float]) -> float:
    """The median of a non-empty sequence of times (the mean of the middle two when even)."""
    return float(np.median(np.asarray(values, dtype=float)))


def interleaved_retime(calls: Mapping[C, Callable[[], float]], n_rounds: int,
                       rng: np.random.Generator) -> tuple[dict[C, list[float]], list[list[C]]]:
    """Time each candidate once per round, in a fresh random order each round.

    Interleaving spreads slow drifts of the device (clocks, temperature,
    other tenants) over every candidate instead of charging them to the one
    timed last.

    Parameters
    ----------
    calls : mapping of config to callable
        ``calls[c]()`` times candidate ``c`` once and returns seconds
        (``inf`` when the run failed).
    n_rounds : int
        Rounds, ``>= 1``.
    rng : numpy.random.Generator
        Draws each round's order.

    Returns
    -------
    times : dict of config to list of float
        The ``n_rounds`` times of each candidate, in round order.
    orders : list of list
        The order of each round.
    """
    keys: list[Any] = list(calls)
    times: dict[C, list[float]] = {c: [] for c in keys}
    orders: list[list[C]] = []
    for _ in range(n_rounds):
        order = [keys[i] for i in rng.permutation(len(keys))]
        orders.append(order)
        for c in order:
            times[c].append(float(calls[c]()))
    return times, orders


def bench_share(n_list: int, n_first_pass: int, n_retime: int) -> float:
    """Fraction of ``warmup`` and ``rep`` each timing gets: Triton's timing budget, shared.

    ``triton.autotune`` times each of the ``n_list`` configs once with
    ``do_bench(warmup, rep)``: ``n_list * (warmup + rep)`` of device time.
    autotile times at most ``n_first_pass`` candidates once and re-times
    ``n_retime`` of them (a re-timing costs ``share * (warmup + rep)`` in all,
    :meth:`~autotile.tuner._gpu_session.GpuSession.retime`). With every timing
    given ``share * (warmup, rep)``, the first pass and the re-time together
    would cost at most Triton's budget::

        share = min(1, n_list / (n_first_pass + n_retime))

    The first pass takes less: each of its timings gets
    ``FIRST_PASS_SHARE * (warmup, rep)`` (:data:`FIRST_PASS_SHARE`, whatever the
    share), so only the re-time uses the share.

    Only a challenger's extra rounds (:data:`~autotile.tuner._gpu_tuner.MAX_CHALLENGES`,
    run only when a time taken at another moment beats the re-timed winner)
    can exceed it. The share is at least 1/2 whenever ``n_first_pass <=
    n_list`` and ``n_retime <= n_first_pass``.

    Parameters
    ----------
    n_list : int
        Candidates Triton would time (the list after the disk cache), ``>= 0``.
    n_first_pass : int
        Candidates autotile may time once (those the model did not prune).
    n_retime : int
        Candidates that will be re-timed (``min(retime_top, n_first_pass)``, 0
        when fewer than two are timed).

    Returns
    -------
    float
        In ``(0, 1]``; 1.0 when nothing is timed.

    Raises
    ------
    ValueError
        If a count is negative.

    Examples
    --------
    Six configs, none pruned, the top three re-timed: each timing gets 2/3.

    >>> bench_share(6, 6, 3)
    0.6666666666666666
    >>> bench_share(16, 5, 3)
    1.0
    """
    for name, v in (("n_list", n_list), ("n_first_pass", n_first_pass),
                    ("n_retime", n_retime)):
        if v < 0:
            raise ValueError(f"{name} must be >= 0, got {name}={v}")
    if n_first_pass + n_retime == 0 or n_list == 0:
        return 1.0
    return min(1.0, n_list / (n_first_pass + n_retime))


def retime_leaders(first_s: Mapping[C, float], retime_top: int,
                   gap: float = RETIME_GAP) -> list[C]:
    """The candidates to re-time: the fastest ``retime_top`` within ``1 + gap`` of the best.

    The two fastest are always kept (the pick is decided between candidates
    timed in the same rounds); a third or later one is dropped when its
    first-pass time is more than ``(1 + gap)`` times the fastest.

    Parameters
    ----------
    first_s : mapping of config to float
        First-pass time of each measured candidate, seconds.
    retime_top : int
        Most candidates re-timed, ``>= 1``.
    gap : float, default=RETIME_GAP
        Relative gap, ``>= 0``.

    Returns
    -------
    list
        Fastest first; empty when fewer than two candidates were measured.

    Examples
    --------
    >>> retime_leaders({"a": 1.0, "b": 1.12, "c": 1.13, "d": 1.5}, 3)
    ['a', 'b']
    >>> retime_leaders({"a": 1.0, "b": 1.01, "c": 1.05, "d": 1.06}, 3)
    ['a', 'b', 'c']
    """
    if len(first_s) < 2:
        return []
    ranked = sorted(first_s, key=lambda c: first_s[c])
    best = first_s[ranked[0]]
    return [c for i, c in enumerate(ranked[:retime_top])
            if i < 2 or first_s[c] <= (1.0 + gap) * best]


def prior_cost_cap_s(n_candidates: int, warmup_ms: float, rep_ms: float,
                     model_budget_s: float | None) -> float | None:
    """Most seconds the model prior may spend ranking ``n_candidates``.

    The prior pays only by saving measurements, so its ranking must not cost
    more than timing the whole list (``n_candidates * (warmup_ms + rep_ms)``,
    what ``triton.autotune`` spends in ``do_bench`` alone, compiles left out),
    nor more than ``model_budget_s``.

    Parameters
    ----------
    n_candidates : int
        Candidates to rank.
    warmup_ms, rep_ms : float
        ``do_bench``'s budgets of one config as ``triton.autotune`` times it,
        milliseconds.
    model_budget_s : float or None
        The absolute cap, seconds; None: no cap at all.

    Returns
    -------
    float or None
        Seconds; None when ``model_budget_s`` is None.

    Examples
    --------
    >>> prior_cost_cap_s(6, 25.0, 100.0, 3.0)
    0.75
    >>> prior_cost_cap_s(40, 25.0, 100.0, 3.0)
    3.0
    """
    if model_budget_s is None:
        return None
    return min(float(model_budget_s), n_candidates * (warmup_ms + rep_ms) * 1e-3)
