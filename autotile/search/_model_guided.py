"""``ModelGuidedSearcher``: the model ranks the best configs' neighbourhoods and annealing finds."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.search._base import History, SpaceSearcher
from autotile.search._codec import IndexCodec
from autotile.search._model import (
    ModelScorer,
    TopK,
    best_first,
    local_candidates,
    spread_ties,
    trials_since_improvement,
)
from autotile.space import Config, Space

__all__ = ["ModelGuidedSearcher"]


def _best_value(history: History) -> float:
    """Lowest finite value of ``history`` (``inf`` if none)."""
    v = history.value_array()
    v = v[np.isfinite(v)]
    return float(v.min()) if v.size else math.inf


class ModelGuidedSearcher(SpaceSearcher):
    """Cost-model-guided search in the style of AutoTVM's ``XGBTuner``.

    Until ``plan_size`` trials have finished, configs are drawn uniformly
    at random. Then, each time ``plan_size`` more trials have finished, a
    new plan of ``plan_size`` configs is made. The cost model is refitted
    on every finished trial (failed ones count as the worst cost) before
    the plan when the trials have grown by more than ``refit_growth`` since
    the last fit (Ansor's schedule; ``refit_growth=0`` refits at every
    plan, as AutoTVM does). The plan comes from two candidate pools, both
    ranked by the model:

    * **local**: the unmeasured neighbours (``space.neighbours``: one knob
      moved to an adjacent value, or one loop moved in a permutation; with
      ``bridge``, also two such moves through an invalid config) of the
      ``n_centres`` best measured configs (ties broken at random; more
      centres while there are fewer than ``plan_size`` candidates);
    * **annealing**: parallel simulated annealing on the model's prediction
      (AutoTVM's ``SimulatedAnnealingOptimizer``). ``n_parallel`` chains
      start from the best measured configs, the chains' end points of the
      previous plan, and random configs; each step draws ``n_moves`` random
      moves of every chain (``space.mutate``), all scored in one model
      call; the chain's best candidate is accepted with probability
      ``exp(min(0, (cost - new_cost) / (scale * T)))``, ``scale`` being the
      spread of the predicted costs and ``T`` cooling linearly from
      ``temperature[0]`` to ``temperature[1]``; annealing stops after
      ``n_sa_iters`` steps, or ``early_stop`` steps without a change of its
      best ``plan_size`` unmeasured configs.

    The plan is the ``plan_size - n_sa_picks`` best local candidates, then
    the ``n_sa_picks`` best annealing candidates, then the remaining ones
    (local first). The annealing share keeps the search from walking a
    plateau for hundreds of trials: ties of the measured values and of the
    predictions are broken at random, but a tree model never predicts a
    config better than the best it was fitted on, so without it a seed may
    stay in one basin.

    Restarts: once ``patience`` trials have finished without improving on
    the best value since the last restart, the next plan is ``plan_size``
    random configs, and the centres and annealing starts come only from the
    trials since then (a new local search; the model still learns from every
    trial). With ``tabu`` (the default), a local search is also abandoned
    as soon as its best value equals the value at which an earlier one was
    abandoned: it has fallen into a basin already known to be a dead end
    (a tabu list of local optima, as in iterated local search), so waiting
    ``patience`` trials there again is wasted.

    Why: on the GEMM miss-count objective 1,538 configs share the local
    optimum of 2,560 misses (``i_factor`` 8 with ``io`` outermost, any
    ``k_factor``), and steepest descent from a random config ends there
    about as often as at the optimum (1,536 misses, ``k_factor`` 16 with
    ``ko`` outermost). A model fitted while a search sits there ranks that
    plateau first, so neither the neighbourhood nor annealing leaves it.
    With ``patience`` 48 and no tabu list, 2 of 10 seeds stayed there for
    300-400 trials (mean P(t) 0.25 over 500 trials); with ``patience`` 24
    and the tabu list every seed reaches the optimum within 140 trials
    (``docs/results.md``).

    Why local candidates: a tree model fitted on a few dozen trials ranks
    configs near the measured good ones well, but not the whole space: on
    the 246,960-config GEMM space an exhaustive ranking by a model refitted
    every 64 trials finds the optimum no sooner than random sampling, while
    the model-ranked neighbourhood of the best configs does so several
    times sooner.

    Trials take the plan's configs best first, skipping any that another
    trial took meanwhile; with probability ``epsilon`` a trial takes a
    uniformly random unmeasured config instead (epsilon-greedy). Configs
    already in the study are never proposed. See :class:`SpaceSearcher`
    for the sampler contract.

    Parameters
    ----------
    space : Space
        The space.
    seed : int, optional
        Seed of the searcher, the annealing and the cost model.
    cost_model : None, str or estimator, default=None
        ``None``/``"xgb"``: :class:`autotile.cost_model.XGBCostModel` with the
        ranking objective; ``"xgb-reg"``, ``"rf"``
        (:class:`~autotile.cost_model.RandomForestCostModel`), or any
        estimator with ``fit(X, y)``/``predict(X)`` (lower is better), cloned
        at every refit.
    featurizer : "auto", "knob" or object, default="auto"
        ``"auto"``: :func:`autotile.cost_model.featurizer_for` (knob
        encoding plus AutoTVM-style loop features for GEMM spaces, the knob
        encoding elsewhere; rows cached per config); ``"knob"``: the knob
        encoding only (on the GEMM space the loop features find the optimum
        about 3x sooner); or an object with ``transform(configs)``.
    plan_size : int, default=8
        Random trials first, then trials between refits and configs per plan.
    n_centres : int, default=4
        Best measured configs whose neighbourhoods are candidates.
    n_sa_picks : int, default=1
        Plan slots for annealing candidates.
    patience : int, default=24
        Trials without improvement after which the local search restarts.
    tabu : bool, default=True
        Also restart a local search as soon as its best value equals one at
        which an earlier local search was abandoned.
    epsilon : float, default=0.05
        Share of random proposals, in [0, 1].
    n_sa_iters : int, default=20
        Maximum annealing steps per plan.
    n_parallel : int, default=16
        Annealing chains.
    early_stop : int, default=10
        Stop annealing after this many steps without a change of the plan.
    temperature : tuple of float, default=(1.0, 0.0)
        Start and end temperature (relative to the spread of predictions).
    n_moves : int, default=4
        Candidate moves per chain and step. AutoTVM uses 1 move and up to
        500 steps; scoring 4 per step in one call reaches the same plans in
        far fewer model calls (each call has a fixed overhead).
    refit_growth : float, default=0.1
        Refit the model before a plan only when the finished trials have
        grown by more than this fraction since the last fit (Ansor retrains
        at +20 %); 0 refits before every plan. On the 246,960-config GEMM
        space this cuts the fits over 500 trials from 62 to 18.
    bridge : bool, default=False
        Whether the local pool also holds the valid configs two knob steps
        away through an invalid one (``IndexCodec(space, bridge=True)``):
        on a space with constraints a one-knob step can otherwise not leave
        some basins. No effect on spaces without constraints, nor on
        constrained spaces too large to enumerate (a product above
        ``2**27``), whose neighbours are not vectorised.

    Raises
    ------
    ValueError
        If a count is < 1 (``n_sa_picks`` < 0), ``epsilon`` is outside
        [0, 1], ``bridge`` is not a bool, or ``temperature`` is not a pair of
        finite numbers >= 0.

    References
    ----------
    T. Chen et al., "Learning to Optimize Tensor Programs", NeurIPS 2018;
    TVM ``python/tvm/autotvm/tuner/model_based_tuner.py`` and
    ``sa_model_optimizer.py``.
    """

    def __init__(
        self,
        space: Space,
        seed: int | None = None,
        cost_model: Any = None,
        featurizer: Any = "auto",
        plan_size: int = 8,
        n_centres: int = 4,
        n_sa_picks: int = 1,
        patience: int = 24,
        tabu: bool = True,
        epsilon: float = 0.05,
        n_sa_iters: int = 20,
        n_parallel: int = 16,
        early_stop: int = 10,
        temperature: tuple[float, float] = (1.0, 0.0),
        n_moves: int = 4,
        refit_growth: float = 0.1,
        bridge: bool = False,
    ) -> None:
        super().__init__(space, seed)
        for name, v in (("plan_size", plan_size), ("n_centres", n_centres),
                        ("patience", patience), ("n_sa_iters", n_sa_iters),
                        ("n_parallel", n_parallel), ("early_stop", early_stop),
                        ("n_moves", n_moves)):
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {name}={v!r}")
        if int(n_sa_picks) != n_sa_picks or n_sa_picks < 0:
            raise ValueError(f"n_sa_picks must be an int >= 0, got n_sa_picks={n_sa_picks!r}")
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got epsilon={epsilon!r}")
        if not refit_growth >= 0.0:
            raise ValueError(f"refit_growth must be >= 0, got refit_growth={refit_growth!r}")
        self.refit_growth = float(refit_growth)
        self.cost_model = cost_model
        self.featurizer = featurizer
        self.plan_size = int(plan_size)
        self.n_centres = int(n_centres)
        self.n_sa_picks = int(n_sa_picks)
        self.patience = int(patience)
        self.tabu = bool(tabu)
        self.epsilon = float(epsilon)
        self.n_sa_iters = int(n_sa_iters)
        self.n_parallel = int(n_parallel)
        self.early_stop = int(early_stop)
        self.temperature = _temperature_pair(temperature)
        self.n_moves = int(n_moves)
        self._codec = IndexCodec(space, bridge=bridge)
        self.bridge = self._codec.bridge
        self._scorer = ModelScorer(space, cost_model, featurizer, self._codec)

    def _propose(self, history: History, number: int, memory: dict[str, Any]) -> Config:
        n = history.n_finished
        if n >= self.plan_size and n >= memory.get("fitted_at", -math.inf) + self.plan_size:
            memory["fitted_at"] = n
            seed = int(self._trial_rng(number, stream=1).integers(2**31 - 1))
            # a new local search learns from its random start at once
            restarted = memory.get("restart_at", -1) >= memory.get("model_n_fitted", 0)
            growth = 0.0 if restarted else self.refit_growth
            if self._scorer.refit(history, seed, growth, memory):
                rng = self._trial_rng(number, stream=2)
                start = memory.get("restart_at", 0)
                seg = History(indices=history.indices[start:], values=history.values[start:],
                              configs=history.configs[start:])
                seg_best = _best_value(seg)
                abandoned: set[float] = memory.setdefault("abandoned", set())
                if (trials_since_improvement(seg) >= self.patience
                        or (self.tabu and start > 0 and seg_best in abandoned)):
                    # stuck, or back on a plateau an earlier local search was stuck on:
                    # a new local search from random configs
                    if math.isfinite(seg_best):
                        abandoned.add(seg_best)
                    memory["restart_at"] = n
                    memory["plan"] = self._random_untaken(history.taken, rng, self.plan_size)
                else:
                    seg.taken = history.taken
                    memory["plan"] = self._plan(seg, rng, memory)
        rng = self._trial_rng(number)
        plan: list[int] = memory.get("plan", [])
        if rng.random() >= self.epsilon:
            while plan:
                i = plan.pop(0)
                if i not in history.taken:
                    return self.space.config_at(i)
        picked = self._random_untaken(history.taken, rng)
        return self.space.config_at(picked[0]) if picked else self._fallback(number)

    def _plan(self, history: History, rng: np.random.Generator,
              memory: dict[str, Any]) -> list[int]:
        """The next plan (space indices, in proposal order)."""
        ranked = best_first(history, rng)
        candidates = local_candidates(self._codec, ranked, history.taken, self.n_centres,
                                      self.plan_size)
        local = spread_ties(candidates, self._scorer.predict(candidates), rng)
        n_sa = self.n_sa_picks
        sa = self._anneal(history, ranked, rng, memory) if n_sa else []
        n_local = self.plan_size - min(n_sa, len(sa))
        plan = local[:n_local]
        chosen = set(plan)
        for i in sa[:n_sa] + local[n_local:] + sa[n_sa:]:
            if i not in chosen:
                chosen.add(i)
                plan.append(i)
        return plan[:max(self.plan_size, n_local)]

    def _anneal(self, history: History, ranked: npt.NDArray[np.int64],
                rng: np.random.Generator, memory: dict[str, Any]) -> list[int]:
        """Parallel simulated annealing on the model; its best unmeasured configs, best first."""
        space = self.space
        n_chains = min(self.n_parallel, len(space))
        starts = ranked[:max(1, n_chains // 4)].tolist()
        for i in memory.get("points", []):
            if len(starts) >= n_chains:
                break
            starts.append(int(i))
        starts.extend(self._random_untaken(set(starts), rng, n_chains - len(starts)))
        points = np.asarray(starts[:n_chains], dtype=np.int64)
        costs = self._scorer.predict(points)
        scale = float(np.std(costs)) or 1.0
        top = TopK(self.plan_size, history.taken)
        top.push(points, costs)
        t0, t1 = self.temperature
        quiet = 0
        for it in range(self.n_sa_iters):
            temp = t0 + (t1 - t0) * it / self.n_sa_iters
            cand = self._codec.mutate(np.repeat(points, self.n_moves), rng)
            cand_costs = self._scorer.predict(cand)
            top.push(cand, cand_costs)
            pick = (np.arange(points.size) * self.n_moves
                    + cand_costs.reshape(-1, self.n_moves).argmin(axis=1))
            new, new_costs = cand[pick], cand_costs[pick]
            gain = (costs - new_costs) / (scale * max(temp, 1e-5))
            accept = rng.random(points.size) < np.exp(np.minimum(gain, 0.0))
            points = np.where(accept, new, points)
            costs = np.where(accept, new_costs, costs)
            quiet = 0 if top.changed() else quiet + 1
            if quiet >= self.early_stop:
                break
        memory["points"] = points.tolist()
        return top.best()


def _temperature_pair(temperature: Any) -> tuple[float, float]:
    """``(start, end)`` as floats; ValueError naming the value unless two finite numbers >= 0.

    A NaN start made every annealing step reject its move (``rng < exp(NaN)``
    is False) without a word; a bare number failed with "'float' object is not
    subscriptable".
    """
    ok = (isinstance(temperature, (tuple, list)) and len(temperature) == 2
          and all(isinstance(t, numbers.Real) and not isinstance(t, bool)
                  and math.isfinite(t) and t >= 0 for t in temperature))
    if not ok:
        raise ValueError(f"temperature must be a pair (start, end) of finite numbers >= 0, "
                         f"got temperature={temperature!r}")
    return float(temperature[0]), float(temperature[1])
