"""``EvolutionarySearcher``: mutation and crossover from the best measured configs."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.search._base import History, SpaceSearcher
from autotile.search._codec import IndexCodec
from autotile.search._model import ModelScorer, TopK, best_first
from autotile.space import Config, Space

__all__ = ["EvolutionarySearcher"]

_MAX_TRIES = 20


class EvolutionarySearcher(SpaceSearcher):
    """Evolutionary search in the style of Ansor / MetaSchedule.

    Configs are proposed in rounds of ``batch_size``. The first round, and
    any round before two trials have an objective value, is uniformly
    random. Then each round:

    * **With a cost model** (the default, ``cost_model="xgb"``), the model
      is refitted on every finished trial when the trials have grown by
      more than ``refit_growth`` since the last fit (Ansor's schedule;
      the round's model otherwise), and a population of
      ``population`` configs (the best measured ones, ``init_measured_ratio``
      of it, ties broken at random, plus random configs) evolves for
      ``n_generations`` generations on the *predicted* cost, with the
      tournament, crossover and mutation below; the round measures the
      ``batch_size`` configs with the lowest predicted cost seen during the
      evolution that are not in the study (MetaSchedule's
      ``EvolutionarySearch``; ties broken at random).
    * **Without a cost model** (``cost_model=None``), the parents are the
      ``population`` best measured configs. Each child comes from two
      parents picked by binary tournament and recombined
      (``space.crossover``: per-knob uniform, order crossover for
      permutations) with probability ``crossover_prob``, otherwise from one
      parent; it is then mutated (``space.mutate``: another value of one
      split factor, or a loop moved in the order) with probability
      ``mutation_prob``, and always if it is already in the study.

    Small rounds matter: the model is only trusted near the measured good
    configs, and the population's measured half keeps the evolution there.
    On the 246,960-config GEMM space rounds of 16 to 64 configs and a
    population seeded mostly at random find the optimum no sooner than
    random sampling; rounds of 8 with half the population from the best
    measured configs find it several times sooner.

    With probability ``epsilon`` a trial takes a uniformly random
    unmeasured config instead (epsilon-greedy). Configs already in the
    study are never proposed. See :class:`SpaceSearcher` for the sampler
    contract.

    Parameters
    ----------
    space : Space
        The space.
    seed : int, optional
        Seed.
    population : int, default=64
        Parents kept (no model) or configs evolved (model).
    batch_size : int, default=8
        Configs proposed per round.
    n_generations : int, default=4
        Generations evolved on the model per round (model only).
    mutation_prob : float, default=0.85
        Probability that a child is mutated.
    crossover_prob : float, default=0.3
        Probability that a child has two parents.
    cost_model : None, str or estimator, default="xgb"
        ``None``: evolve on measured values only. Otherwise see
        :class:`ModelGuidedSearcher`.
    featurizer : "auto", "knob" or object, default="auto"
        See :class:`ModelGuidedSearcher` (model only).
    epsilon : float, default=0.05
        Share of random proposals, in [0, 1].
    init_measured_ratio : float, default=0.5
        Share of the model-evolved population seeded from the best measured
        configs.
    refit_growth : float, default=0.1
        Refit the model only when the finished trials have grown by more
        than this fraction since the last fit (Ansor retrains at +20 %); 0
        refits every round.

    Raises
    ------
    ValueError
        If a count is < 1 or a probability is outside [0, 1].

    References
    ----------
    L. Zheng et al., "Ansor: Generating High-Performance Tensor Programs for
    Deep Learning", OSDI 2020; TVM
    ``src/meta_schedule/search_strategy/evolutionary_search.cc``.
    """

    def __init__(
        self,
        space: Space,
        seed: int | None = None,
        population: int = 64,
        batch_size: int = 8,
        n_generations: int = 4,
        mutation_prob: float = 0.85,
        crossover_prob: float = 0.3,
        cost_model: Any = "xgb",
        featurizer: Any = "auto",
        epsilon: float = 0.05,
        init_measured_ratio: float = 0.5,
        refit_growth: float = 0.1,
    ) -> None:
        super().__init__(space, seed)
        for name, v in (("population", population), ("batch_size", batch_size),
                        ("n_generations", n_generations)):
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {name}={v!r}")
        for name, p in (("mutation_prob", mutation_prob), ("crossover_prob", crossover_prob),
                        ("epsilon", epsilon), ("init_measured_ratio", init_measured_ratio)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {name}={p!r}")
        if not refit_growth >= 0.0:
            raise ValueError(f"refit_growth must be >= 0, got refit_growth={refit_growth!r}")
        self.refit_growth = float(refit_growth)
        self.population = int(population)
        self.batch_size = int(batch_size)
        self.n_generations = int(n_generations)
        self.mutation_prob = float(mutation_prob)
        self.crossover_prob = float(crossover_prob)
        self.cost_model = cost_model
        self.featurizer = featurizer
        self.epsilon = float(epsilon)
        self.init_measured_ratio = float(init_measured_ratio)
        self._codec = IndexCodec(space)
        self._scorer = (None if cost_model is None
                        else ModelScorer(space, cost_model, featurizer, self._codec))

    def _propose(self, history: History, number: int, memory: dict[str, Any]) -> Config:
        plan: list[int] = memory.setdefault("plan", [])
        rng = self._trial_rng(number)
        if rng.random() >= self.epsilon:
            while True:
                while plan:
                    i = plan.pop(0)
                    if i not in history.taken:
                        return self.space.config_at(i)
                if memory.get("planned_at") == history.n_finished:
                    break  # nothing new to learn from: fall back to random
                memory["planned_at"] = history.n_finished
                plan.extend(self._round(history, self._trial_rng(number, stream=1), memory))
                if not plan:
                    break
        picked = self._random_untaken(history.taken, rng)
        return self.space.config_at(picked[0]) if picked else self._fallback(number)

    # -- one round --------------------------------------------------------------------
    def _round(self, history: History, rng: np.random.Generator,
               memory: dict[str, Any]) -> list[int]:
        vals = history.value_array()
        if int(np.isfinite(vals).sum()) < 2:
            return self._random_untaken(history.taken, rng, self.batch_size)
        if self._scorer is None:
            return self._children(history, rng)
        seed = int(rng.integers(2**31 - 1))
        if not self._scorer.refit(history, seed, self.refit_growth, memory):
            return self._random_untaken(history.taken, rng, self.batch_size)
        return self._evolve_on_model(history, rng)

    def _tournament(self, fitness: npt.NDArray[np.float64], rng: np.random.Generator) -> int:
        a, b = rng.integers(fitness.size, size=2)
        return int(a if fitness[a] <= fitness[b] else b)

    def _offspring(self, parents: list[Config], fitness: npt.NDArray[np.float64],
                   rng: np.random.Generator) -> Config:
        a = parents[self._tournament(fitness, rng)]
        if len(parents) > 1 and rng.random() < self.crossover_prob:
            b = parents[self._tournament(fitness, rng)]
            child = self.space.crossover(a, b, rng)
        else:
            child = a
        if child is a or rng.random() < self.mutation_prob:
            child = self.space.mutate(child, rng)
        return child

    def _children(self, history: History, rng: np.random.Generator) -> list[int]:
        """A generation bred from the best measured configs (no model)."""
        parents = history.best(self.population)
        measured = {c: v for c, v in zip(history.configs, history.values)}
        fitness = np.array([measured[c] for c in parents])
        out: list[int] = []
        seen = set(history.taken)
        for _ in range(self.batch_size):
            for _ in range(_MAX_TRIES):
                child = self._offspring(parents, fitness, rng)
                for _ in range(3):
                    i = self.space.index_of(child)
                    if i not in seen:
                        break
                    child = self.space.mutate(child, rng)
                if i not in seen:
                    seen.add(i)
                    out.append(i)
                    break
        return out

    def _evolve_on_model(self, history: History, rng: np.random.Generator) -> list[int]:
        """Evolve a population on predicted cost; the best unmeasured configs seen."""
        assert self._scorer is not None
        n_pop = min(self.population, len(self.space))
        ranked = best_first(history, rng)
        start = ranked[:max(1, int(round(self.init_measured_ratio * n_pop)))].tolist()
        start += self._random_untaken(set(start), rng, n_pop - len(start))
        pop = np.asarray(start, dtype=np.int64)
        top = TopK(self.batch_size, history.taken)
        for _ in range(self.n_generations):
            cost = self._scorer.predict(pop)
            order = rng.permutation(pop.size)  # random ties among equal predictions
            top.push(pop[order], cost[order])
            parents = self._codec.configs(pop)
            children = [self._offspring(parents, cost, rng) for _ in range(n_pop)]
            pop = self._codec.index(children)
        order = rng.permutation(pop.size)
        top.push(pop[order], self._scorer.predict(pop)[order])
        return top.best()
