"""``BanditSearcher``: an AUC bandit over model-guided, Parzen and random proposals."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from autotile.search._base import History, SpaceSearcher
from autotile.search._codec import IndexCodec
from autotile.search._model import ModelScorer, best_first, local_candidates, spread_ties
from autotile.search._parzen import N_STARTUP, multivariate_parzen
from autotile.search._prior import Prior, Source
from autotile.space import Config, Space

__all__ = ["BanditSearcher", "ARMS", "PARZEN_ESTIMATORS"]

#: The Parzen arm's estimators (``BanditSearcher(parzen=...)``).
PARZEN_ESTIMATORS = ("independent", "multivariate")

#: The techniques :class:`BanditSearcher` chooses between.
ARMS = ("model", "evolutionary", "local", "global", "parzen", "random", "prior", "descent")

#: Arms whose proposals do not depend on the history: the descent's model learns from them.
_UNBIASED_ARMS = ("random", "prior")


def _check_arms(arms: Any) -> tuple[str, ...]:
    """Return ``arms`` as a tuple of known, distinct arm names, else raise ValueError."""
    if isinstance(arms, str):
        raise ValueError(f"arms must be a sequence of arm names, not one str: "
                         f"got arms={arms!r}; pass arms=({arms!r},)")
    try:
        items = tuple(arms)
    except TypeError:
        raise ValueError(f"arms must be a non-empty sequence of {ARMS}, got "
                         f"{type(arms).__name__} arms={arms!r}") from None
    if not items:
        raise ValueError(f"arms must be a non-empty sequence of {ARMS}, got arms={items!r}")
    bad = [a for a in items if not isinstance(a, str) or a not in ARMS]
    if bad:
        raise ValueError(f"arms must be a non-empty sequence of {ARMS}, got arms={items!r} "
                         f"(unknown: {', '.join(repr(a) for a in bad)})")
    names = tuple(str(a) for a in items)
    dups = sorted({a for a in names if names.count(a) > 1})
    if dups:
        raise ValueError(f"arms must not repeat an arm, got arms={names!r} "
                         f"(repeated: {', '.join(repr(a) for a in dups)})")
    return names


class BanditSearcher(SpaceSearcher):
    """A portfolio of techniques chosen per trial by OpenTuner's AUC bandit.

    No single technique wins on every landscape: a cost model ranking the
    neighbourhood of the best configs is fastest on smooth spaces but can
    sit on a plateau; a Parzen estimator over single knobs (TPE's
    categorical model) finds needles that hide in one knob value; random
    sampling is never trapped. Each trial, the bandit picks one technique
    (an *arm*), which proposes one config:

    * ``"model"``: the next config of a :class:`ModelGuidedSearcher` kept
      by the bandit (its plan, restarts and tabu list);
    * ``"evolutionary"``: the next config of an
      :class:`EvolutionarySearcher` kept by the bandit (a population on the
      measured values, its offspring ranked by the cost model): the family
      of Kernel Tuner's genetic algorithm, differential evolution and PSO;
    * ``"local"``: the unmeasured neighbours (``space.neighbours``) of the
      ``n_centres`` best configs, ranked by the cost model, ties spread
      (as :class:`ModelGuidedSearcher`'s local pool);
    * ``"global"``: ``n_global`` random unmeasured configs plus as many
      random moves (``space.mutate``) of the 16 best ones, ranked by the
      cost model (one vectorised model call instead of annealing);
    * ``"parzen"``: TPE's categorical estimator on every knob: the best
      ``gamma`` share of the trials against the rest, 24 candidates drawn
      from the good knob distributions, the one with the highest ratio
      ``l(x) / g(x)`` taken;
    * ``"random"``: a uniformly random unmeasured config;
    * ``"prior"``: the next config of :attr:`Prior.ranked` (only with
      ``prior``);
    * ``"descent"`` (not in the default portfolio, see ``arms``): a
      first-improvement local search from a random config (with several
      workers it cannot propose while its start runs). Each trial it
      proposes the unmeasured neighbour (``space.neighbours``) of its
      current config (the *centre*) that the cost model ranks best (ties
      spread); a neighbour with a lower value becomes the centre. After
      ``descent_patience`` of its own proposals in a row without
      improving on the centre, the centre is a local minimum: its value
      is remembered and a new descent starts from a uniformly random
      unmeasured config. A descent whose centre reaches a value at which
      an earlier descent stopped is abandoned at once (a tabu list of
      local minima, as in iterated local search). Its cost model is
      fitted on the trials that do not depend on the history (the first
      ``n_init``, the ``"random"`` and ``"prior"`` arms', every descent's
      start) and on the current descent's trials, and refitted when a
      descent starts or those trials have grown by ``refit_growth``: a
      model fitted on the other arms' and earlier descents' trials, which
      gather in the basins already found, ranks those basins' configs
      first and leads every new descent back to them.

    The first ``n_init`` trials are the best configs of ``prior`` when one
    is given, else random. Then each trial takes the arm with the highest
    score ``auc + C * sqrt(2 * log2(n) / uses)`` (an arm never used first,
    in random order), where over the last ``window`` bandit trials ``n``
    is their number, ``uses`` the arm's, and ``auc`` the area under the
    arm's curve of successes, recent ones weighing more (OpenTuner's
    ``AUCBanditMetaTechnique``, with its defaults ``C=0.05`` and
    ``window=500``). A trial is a success when it improved on the best
    value so far (OpenTuner's credit) or, for ``"descent"``, on its
    descent's centre: with the best value alone as credit no arm scores
    once the first local minimum is found, and the choice falls back to
    round robin, which gives a new descent a fraction of the trials. An
    arm that cannot propose (the model arms before two trials have
    values, ``prior`` once its list is used up) is skipped.

    The cost model (XGBoost rank, loop features on GEMM spaces, see
    :class:`ModelGuidedSearcher`) is refitted when the trials have grown by
    more than ``refit_growth`` since the last fit (Ansor's schedule); a
    proposal otherwise costs one model call on a few hundred configs.
    Configs already in the study are never proposed. See
    :class:`SpaceSearcher` for the sampler contract.

    Parameters
    ----------
    space : Space
        The space.
    seed : int, optional
        Seed of the searcher and its cost model.
    arms : sequence of str, default=("model", "parzen", "random")
        Techniques in the portfolio, from :data:`ARMS`; ``"prior"`` is
        added when ``prior`` is given. ``("descent", "parzen", "random")``
        halved the median trials to the optimum on ``gemm_space(64)``'s
        shipped table (misses, budget 200, seeds 0-19: 57.5 against 105)
        but lowered mean P(t) on 10 of the 11 spaces of
        ``benchmarks/kernel_tuner/bench_default_searcher.py`` (seeds 0-9);
        it is not the default. Adding ``"evolutionary"`` raised mean P(t)
        on 8 of those 11 spaces on seeds 100-119 but lowered it on 7 of 11
        on seeds 0-9, and cost a quarter more CPU per trial; it is not in
        the default either (``docs/results/searchers.md``).
    prior : Prior or sequence of sources, optional
        Earlier tables or studies of the same kernel (see :class:`Prior`):
        their best configs are tried first and stay an arm of the bandit.
    n_init : int, default=4
        Trials before the bandit starts (prior configs, else random).
    C : float, default=0.05
        Weight of the exploration term.
    window : int, default=500
        Bandit trials the scores look back on.
    cost_model : None, str or estimator, default=None
        See :class:`ModelGuidedSearcher`.
    featurizer : "auto", "knob" or object, default="auto"
        See :class:`ModelGuidedSearcher`.
    refit_growth : float, default=0.2
        Refit the model when the trials have grown by more than this share
        (Ansor retrains at +20 %). With 0.1 on ``gemm_space(64)`` (budget
        200, seeds 0-19) and the RTX 3090 gemm file (budget 1411, seeds
        0-9) the mean P(t) was the same (-0.34 and 0.962 against -0.07 and
        0.964) for about a quarter more CPU per trial.
    n_centres : int, default=4
        Best configs whose neighbourhoods the ``"local"`` arm ranks.
    n_global : int, default=256
        Random configs (and random moves) the ``"global"`` arm ranks.
    gamma : float, default=0.15
        Share of the trials that is "good" for the ``"parzen"`` arm, in
        (0, 1).
    descent_patience : int, default=8
        Proposals of the ``"descent"`` arm in a row without improving on
        its centre after which the centre is taken as a local minimum (a
        GEMM config has about 30 neighbours). Chosen between 6 and 8 on
        development seeds of ``gemm_space(64)``'s table only.
    bridge : bool, default=False
        Whether neighbourhoods (the model arm's local pool, ``"local"``,
        ``"descent"``) also cross one invalid step
        (``IndexCodec(space, bridge=True)``): on a space with constraints or
        an explicit valid set, a one-knob step that lands on an invalid
        config is followed by a second one. On Kernel Tuner's dedispersion
        files the fastest configs have ``tile_size_x`` 1 and
        ``tile_stride_x`` 0, and ``(tile_size_x 1, tile_stride_x 1)`` is not
        a config: from ``tile_size_x`` 2, ``tile_stride_x`` 1 no single
        step leads there. No effect on spaces without invalid configs
        (``gemm_space``), nor on constrained spaces too large to
        enumerate. Chosen on development seeds 100-109 of the dataset files;
        on the check seeds 0-9 it raised mean P(t) on six of the eight files
        it changes (dedispersion W6600 0.563 to 0.724, above the best
        anchor) but lowered convolution A4000 (0.640 to 0.594), so it is not
        the default (``docs/results/searchers.md``).
    parzen : {"independent", "multivariate"}, default="independent"
        The ``"parzen"`` arm's estimator: ``"independent"``, TPE's per-knob
        estimator (above, with ``gamma``); ``"multivariate"``, Optuna's
        multivariate TPE (:func:`autotile.search._parzen.multivariate_parzen`:
        one product kernel per trial, Optuna's ``gamma`` and weights, failed
        trials left out), whose candidates keep the good configs' knob
        values together; before 10 finite values (Optuna's
        ``n_startup_trials``) the per-knob one. Chosen on development seeds
        100-139; on the check seeds 0-9 of
        ``benchmarks/kernel_tuner/bench_default_searcher.py`` it raised mean
        P(t) on 8 of the 11 spaces (pnpoly 0.557 to 0.726, dedispersion
        MI250X 0.539 to 0.719, W6600 0.563 to 0.716, above its best anchor),
        left convolution W6600 (budget 9) unchanged, and lowered the
        246,960 table's two objectives (budgets 15 and 20: 0.415 to 0.404,
        0.357 to 0.315), so it is not the default
        (``docs/results/searchers.md``).

    Raises
    ------
    ValueError
        If ``arms`` is a single str, not a sequence, empty, or names an
        unknown or repeated arm, or ``"prior"`` without ``prior``; if a
        count (``n_init``, ``n_centres``, ``n_global``, ``window``,
        ``descent_patience``) is not an int >= 1, ``C`` or ``refit_growth``
        is negative, ``gamma`` is outside (0, 1), ``bridge`` is not a
        bool, or ``parzen`` is not one of :data:`PARZEN_ESTIMATORS`.

    References
    ----------
    J. Ansel et al., "OpenTuner: An Extensible Framework for Program
    Autotuning", PACT 2014 (AUC bandit; ``opentuner/search/bandittechniques.py``).
    J. Bergstra et al., "Algorithms for Hyper-Parameter Optimization",
    NeurIPS 2011 (TPE). T. Chen et al., "Learning to Optimize Tensor
    Programs", NeurIPS 2018 (cost model, transfer from history).
    L. Zheng et al., "Ansor", OSDI 2020 (retraining schedule).
    """

    def __init__(
        self,
        space: Space,
        seed: int | None = None,
        arms: Sequence[str] = ("model", "parzen", "random"),
        prior: Prior | Sequence[Source] | None = None,
        n_init: int = 4,
        C: float = 0.05,
        window: int = 500,
        cost_model: Any = None,
        featurizer: Any = "auto",
        refit_growth: float = 0.2,
        n_centres: int = 4,
        n_global: int = 256,
        gamma: float = 0.15,
        descent_patience: int = 8,
        bridge: bool = False,
        parzen: str = "independent",
    ) -> None:
        super().__init__(space, seed)
        arms = _check_arms(arms)
        for name, v in (("n_init", n_init), ("n_centres", n_centres), ("n_global", n_global),
                        ("window", window), ("descent_patience", descent_patience)):
            if (not isinstance(v, numbers.Real) or isinstance(v, bool)
                    or not math.isfinite(v) or int(v) != v or v < 1):
                raise ValueError(f"{name} must be an int >= 1, got {name}={v!r}")
        if not C >= 0:
            raise ValueError(f"C must be >= 0, got C={C!r}")
        if not 0.0 < gamma < 1.0:
            raise ValueError(f"gamma must be in (0, 1), got gamma={gamma!r}")
        if parzen not in PARZEN_ESTIMATORS:
            raise ValueError(f"parzen must be one of {PARZEN_ESTIMATORS}, got parzen={parzen!r}")
        if not refit_growth >= 0.0:
            raise ValueError(f"refit_growth must be >= 0, got refit_growth={refit_growth!r}")
        if prior is None and "prior" in arms:
            raise ValueError(f"the 'prior' arm needs prior= (earlier tables or studies), "
                             f"got arms={arms!r} and prior=None")
        if prior is not None and not isinstance(prior, Prior):
            prior = Prior(space, prior)
        if prior is not None and "prior" not in arms:
            arms = (*arms, "prior")
        self.arms = arms
        self.prior = prior
        self.n_init = int(n_init)
        self.C = float(C)
        self.window = int(window)
        self.cost_model = cost_model
        self.featurizer = featurizer
        self.refit_growth = float(refit_growth)
        self.n_centres = int(n_centres)
        self.n_global = int(n_global)
        self.gamma = float(gamma)
        self.descent_patience = int(descent_patience)
        self.parzen = parzen
        self._codec = IndexCodec(space, bridge=bridge)
        self.bridge = self._codec.bridge
        self._scorer = ModelScorer(space, cost_model, featurizer, self._codec)
        # the arms proposed here, by name (a mapping, no chain of name tests)
        self._proposers = {
            "random": self._random_arm, "prior": self._prior_arm,
            "parzen": {"independent": self._parzen, "multivariate": self._parzen_mv}[parzen],
            "descent": self._descent, "local": self._local_arm, "global": self._global_arm}
        # whole searchers as arms: each keeps its own plan in its own memory
        self._subs: dict[str, SpaceSearcher] = {}
        if "model" in arms:
            from autotile.search._model_guided import ModelGuidedSearcher

            self._subs["model"] = ModelGuidedSearcher(
                space, seed=seed, cost_model=cost_model, featurizer=featurizer,
                refit_growth=refit_growth, epsilon=0.0, bridge=self.bridge)
        if "evolutionary" in arms:
            from autotile.search._evolutionary import EvolutionarySearcher

            self._subs["evolutionary"] = EvolutionarySearcher(
                space, seed=seed, cost_model=cost_model or "xgb", featurizer=featurizer,
                refit_growth=refit_growth, epsilon=0.0)

    # -- the bandit -------------------------------------------------------------------
    def _propose(self, history: History, number: int, memory: dict[str, Any]) -> Config:
        rng = self._trial_rng(number)
        arm_of: dict[int, str] = memory.setdefault("arm_of", {})
        i: int | None = None
        if len(history.taken) < self.n_init:  # the start: prior configs, else random
            i = self._arm("prior", history, rng, memory) if self.prior is not None else None
        else:
            for arm in self._ranked_arms(history, arm_of, rng, memory):
                i = self._arm(arm, history, rng, memory)
                if i is not None:
                    arm_of[i] = arm
                    break
        if i is None:
            picked = self._random_untaken(history.taken, rng)
            return self.space.config_at(picked[0]) if picked else self._fallback(number)
        return self.space.config_at(i)

    def _ranked_arms(self, history: History, arm_of: dict[int, str],
                     rng: np.random.Generator, memory: dict[str, Any]) -> list[str]:
        """Arms, highest bandit score first (unused ones first, in random order).

        The (arm, improved the best so far) pairs of the finished trials are
        kept in ``memory`` and extended by the trials finished since the last
        call, as long as the history before them is unchanged (with several
        workers a trial may finish before a lower-numbered one: then they
        are read again from the start).
        """
        vals = history.value_array()
        local_wins: set[int] = (self._descent_state(history, memory)["wins"]
                                if "descent" in self.arms else set())
        log = memory.get("arm_log")
        n_old = 0 if log is None else log[0]
        if log is None or n_old > vals.size or (n_old and (
                history.indices[n_old - 1] != log[1] or vals[n_old - 1] != log[2])):
            n_old, used_all, best = 0, [], math.inf
        else:
            used_all, best = log[3], log[4]
        for i, v in zip(history.indices[n_old:], vals[n_old:].tolist()):
            if i in arm_of:
                used_all.append((arm_of[i], v < best or i in local_wins))
            best = min(best, v)
        if vals.size:
            memory["arm_log"] = (vals.size, history.indices[-1], float(vals[-1]), used_all, best)
        used = used_all[-self.window:]
        total = len(used)
        scores = {}
        for arm in self.arms:
            wins = [w for a, w in used if a == arm]
            u = len(wins)
            if u == 0:
                scores[arm] = math.inf
                continue
            auc = sum((k + 1) * w for k, w in enumerate(wins)) * 2.0 / (u * (u + 1))
            scores[arm] = auc + self.C * math.sqrt(2.0 * math.log2(max(total, 1)) / u)
        order = rng.permutation(len(self.arms))
        arms = [self.arms[k] for k in order]
        return sorted(arms, key=lambda a: -scores[a])

    def _arm(self, arm: str, history: History, rng: np.random.Generator,
             memory: dict[str, Any]) -> int | None:
        """One config proposed by ``arm`` (a space index), or None if it cannot propose."""
        if arm in self._subs:
            sub_memory = memory.setdefault(f"{arm}_memory", {})
            cfg = self._subs[arm]._propose(history, int(rng.integers(2**31)), sub_memory)
            i = self.space.index_of(cfg)
            return None if i in history.taken else i
        return self._proposers[arm](history, rng, memory)

    def _random_arm(self, history: History, rng: np.random.Generator,
                    memory: dict[str, Any]) -> int | None:
        picked = self._random_untaken(history.taken, rng)
        return picked[0] if picked else None

    def _prior_arm(self, history: History, rng: np.random.Generator,
                   memory: dict[str, Any]) -> int | None:
        assert self.prior is not None
        ranked = self.prior.ranked
        k = memory.get("prior_at", 0)
        while k < ranked.size and int(ranked[k]) in history.taken:
            k += 1
        memory["prior_at"] = k
        return int(ranked[k]) if k < ranked.size else None

    def _local_arm(self, history: History, rng: np.random.Generator,
                   memory: dict[str, Any]) -> int | None:
        """The model's best unmeasured neighbour of the ``n_centres`` best configs."""
        if not self._model_ready(history, memory):
            return None
        cand = local_candidates(self._codec, best_first(history, rng), history.taken,
                                self.n_centres, 1)
        return self._model_pick(cand, rng)

    def _global_arm(self, history: History, rng: np.random.Generator,
                    memory: dict[str, Any]) -> int | None:
        """The model's best of ``n_global`` mutants of the best 16 and as many random."""
        if not self._model_ready(history, memory):
            return None
        top = best_first(history, rng)[:16]
        moves = self._codec.mutate(np.resize(top, self.n_global), rng)
        fresh = np.asarray(self._random_untaken(history.taken, rng, self.n_global),
                           dtype=np.int64)
        cand = np.unique(np.concatenate([moves, fresh]))
        if history.taken:
            cand = cand[~np.isin(cand, np.fromiter(history.taken, np.int64,
                                                   len(history.taken)))]
        return self._model_pick(cand, rng)

    def _model_pick(self, cand: np.ndarray, rng: np.random.Generator) -> int | None:
        if cand.size == 0:
            return None
        return spread_ties(cand, self._scorer.predict(cand), rng)[0]

    def _model_ready(self, history: History, memory: dict[str, Any]) -> bool:
        n = history.n_finished
        if memory.get("model_checked_at") == n:
            if memory.get("model_ok"):  # the descent's model may have been used since
                self._scorer.model = memory["model"]
            return bool(memory.get("model_ok"))
        seed = int(self._trial_rng(n, stream=1).integers(2**31 - 1))
        ok = self._scorer.refit(history, seed, self.refit_growth, memory)
        memory["model_checked_at"], memory["model_ok"] = n, ok
        return ok

    def _parzen(self, history: History, rng: np.random.Generator,
                memory: dict[str, Any] | None = None) -> int | None:
        """TPE's categorical estimator over the knobs: the best candidate of 24."""
        codec = self._codec
        vals = history.value_array()
        if not codec.fast or vals.size < 2:
            return None
        idx = np.asarray(history.indices, dtype=np.int64)
        order = np.lexsort((rng.random(vals.size), vals))
        n_good = max(1, math.ceil(self.gamma * int(np.isfinite(vals).sum())))
        good, bad = idx[order[:n_good]], idx[order[n_good:]]
        dg, db = codec.digits(good), codec.digits(bad)
        n_cand, tries = 24, 8
        digits = np.empty((n_cand * tries, len(codec.radices)), dtype=np.int64)
        log_ratio = np.zeros(n_cand * tries)
        for j, r in enumerate(codec.radices.tolist()):
            lw = (np.bincount(dg[:, j], minlength=r) + 1.0 / r) / (dg.shape[0] + 1.0)
            gw = (np.bincount(db[:, j], minlength=r) + 1.0 / r) / (db.shape[0] + 1.0)
            digits[:, j] = np.minimum(np.searchsorted(np.cumsum(lw), rng.random(digits.shape[0])
                                                      * lw.sum()), r - 1)
            log_ratio += np.log(lw[digits[:, j]]) - np.log(gw[digits[:, j]])
        cand, ok = codec.from_product(codec.compose(digits))
        if history.taken:
            ok &= ~np.isin(cand, np.fromiter(history.taken, np.int64, len(history.taken)))
        if not ok.any():
            return None
        # the first n_cand valid candidates, as TPE draws n_ei_candidates from l(x)
        keep = np.flatnonzero(ok)[:n_cand]
        best = keep[log_ratio[keep] == log_ratio[keep].max()]
        return int(cand[best[int(rng.integers(best.size))]])

    def _parzen_mv(self, history: History, rng: np.random.Generator,
                   memory: dict[str, Any] | None = None) -> int | None:
        """Optuna's multivariate TPE over the knobs (:func:`multivariate_parzen`).

        Before :data:`N_STARTUP` finite values (Optuna's TPE is still random
        there) the per-knob estimator (:meth:`_parzen`) proposes, so the
        first trials are those of ``parzen="independent"``.
        """
        if int(np.isfinite(history.value_array()).sum()) < N_STARTUP:
            return self._parzen(history, rng, memory)
        return multivariate_parzen(self._codec, history, rng)

    # -- the descent ------------------------------------------------------------------
    def _descent_state(self, history: History, memory: dict[str, Any]) -> dict[str, Any]:
        """The descent's state, advanced by its own proposals finished since the last call.

        Keys: ``centre`` (space index or None before a start), ``val`` (its
        value), ``fails`` (own proposals since the centre last improved),
        ``minima`` (values at which descents stopped), ``pending`` (own
        proposals not finished yet), ``path`` (the current descent's
        proposals), ``starts`` and ``own`` (every descent's starts and
        proposals), ``wins`` (own proposals that improved on their centre)
        and ``seen`` (finished trials read). A trial that finishes before a
        lower-numbered one (several workers) is read only if it finished
        after the last call's history end; one missed stays pending and
        never moves the centre.
        """
        st = memory.get("descent")
        if st is None:
            st = memory["descent"] = {
                "centre": None, "val": math.inf, "fails": 0, "minima": set(),
                "pending": set(), "path": set(), "starts": set(), "own": set(),
                "wins": set(), "seen": 0}
        pending: set[int] = st["pending"]
        if st["seen"] > len(history.indices):
            st["seen"] = 0
        if pending:
            for i, v in zip(history.indices[st["seen"]:], history.values[st["seen"]:]):
                if i not in pending:
                    continue
                pending.discard(i)
                if st["centre"] is None or v < st["val"]:
                    if st["centre"] is not None:
                        st["wins"].add(i)
                    st["centre"], st["val"], st["fails"] = i, v, 0
                else:
                    st["fails"] += 1
        st["seen"] = len(history.indices)
        return st

    def _descent(self, history: History, rng: np.random.Generator,
                 memory: dict[str, Any]) -> int | None:
        """The descent's next proposal: the model's best neighbour of its centre, or a new start."""
        st = self._descent_state(history, memory)
        c = st["centre"]
        if c is None and st["pending"] & st["path"]:
            # its start has not finished (several workers): a second start now would
            # finish as if it were a neighbour of the first
            return None
        cand = np.zeros(0, dtype=np.int64)
        if c is not None and st["fails"] < self.descent_patience and st["val"] not in st["minima"]:
            cand = self._codec.neighbours(np.array([c], dtype=np.int64))
            if history.taken and cand.size:
                cand = cand[~np.isin(cand, np.fromiter(history.taken, np.int64,
                                                       len(history.taken)))]
        if cand.size == 0:  # a local minimum (or no start yet): a new descent
            if c is not None and math.isfinite(st["val"]):
                st["minima"].add(st["val"])
            picked = self._random_untaken(history.taken, rng)
            if not picked:
                return None
            i = picked[0]
            st["centre"], st["val"], st["fails"] = None, math.inf, 0
            st["path"] = set()
            st["starts"].add(i)
        elif self._descent_model(history, st, memory):
            i = spread_ties(cand, self._scorer.predict(cand), rng)[0]
        else:
            i = int(cand[int(rng.integers(cand.size))])
        st["pending"].add(i)
        st["path"].add(i)
        st["own"].add(i)
        return i

    def _descent_model(self, history: History, st: dict[str, Any],
                       memory: dict[str, Any]) -> bool:
        """Fit (on schedule) the descent's model; return whether one is ready.

        Its data: every trial but the other arms' history-dependent ones and
        the earlier descents' (their starts kept); refitted when a descent
        starts or the data has grown by more than ``refit_growth``.
        """
        dm = memory.setdefault("descent_model", {})
        n = history.n_finished
        if dm.get("checked_at") == n:
            if dm.get("ok"):
                self._scorer.model = dm["model"]
            return bool(dm.get("ok"))
        if dm.get("descent") != len(st["starts"]):
            dm.pop("model_n_fitted", None)
            dm["descent"] = len(st["starts"])
        own, starts, path = st["own"], st["starts"], st["path"]
        arm_of: dict[int, str] = memory.get("arm_of", {})
        keep = [k for k, i in enumerate(history.indices)
                if ((i in path or i in starts) if i in own
                    else arm_of.get(i, "random") in _UNBIASED_ARMS)]
        data = History(indices=[history.indices[k] for k in keep],
                       values=[history.values[k] for k in keep],
                       configs=[history.configs[k] for k in keep])
        seed = int(self._trial_rng(n, stream=1).integers(2**31 - 1))
        ok = self._scorer.refit(data, seed, self.refit_growth, dm)
        dm["checked_at"], dm["ok"] = n, ok
        return ok
