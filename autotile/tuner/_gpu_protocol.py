"""The rules of a GPU tuning: model prior, early stop and interleaved re-timing.

Pure bookkeeping, no device: :func:`rank_by_model` orders and prunes the
candidates with the GPU model's predictions, :func:`worth_measuring` is the
early-stop rule, :func:`interleaved_retime` re-times the leaders in rounds of
fresh random order and :func:`median` picks by the median. The GPU tuner
(:mod:`autotile.tuner._gpu_tuner`) applies them in that order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from autotile.tuner._config import LaunchConfig

__all__ = ["Prediction", "rank_by_model", "worth_measuring", "diversity_probe",
           "interleaved_retime", "median"]

C = TypeVar("C", bound=Hashable)


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
