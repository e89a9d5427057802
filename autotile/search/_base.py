"""``SpaceSearcher``: the Optuna sampler contract shared by autotile's searchers."""

from __future__ import annotations

import abc
import math
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from autotile.errors import InvalidConfigError
from autotile.search._params import CONFIG_ATTR, config_from_params, param_of, trial_config_text
from autotile.search._storage import RetriedScan
from autotile.search._study_args import check_seed
from autotile.space import Config, Space

__all__ = ["SpaceSearcher", "History"]

_FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)


@dataclass
class History:
    """What a searcher knows about a study when it chooses the next config.

    Attributes
    ----------
    taken : set of int
        Space indices of every config already in the study, whatever the
        trial's state (waiting, running, complete, failed), except the trial
        being sampled; running trials of other workers included (as Optuna's
        constant liar sees them). Searchers without repeats never propose one
        of these. Trials abandoned by a dead worker are left out (their
        retry holds the config).
    indices : list of int
        Space indices of the finished trials with a config of this space,
        in trial-number order.
    configs : list of Config
        Their configs.
    values : list of float
        Their objective values, to minimise (negated for a ``maximize``
        study); ``inf`` for a failed or pruned trial.
    """

    taken: set[int] = field(default_factory=set)
    indices: list[int] = field(default_factory=list)
    configs: list[Config] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    @property
    def n_finished(self) -> int:
        """Number of finished trials with a config of the space."""
        return len(self.indices)

    def value_array(self) -> npt.NDArray[np.float64]:
        """``values`` as a float64 array of shape (n_finished,)."""
        return np.asarray(self.values, dtype=np.float64)

    def best(self, k: int) -> list[Config]:
        """The ``k`` best configs with a finite value, best first (ties by trial order)."""
        vals = self.value_array()
        order = np.argsort(vals, kind="stable")
        return [self.configs[i] for i in order[:k] if math.isfinite(vals[i])]


@dataclass
class _StudyState:
    chosen: dict[int, Config] = field(default_factory=dict)
    finished: dict[int, tuple[int, Config, float] | None] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    retried: RetriedScan = field(default_factory=RetriedScan)
    # (n settled trials, their History, the retried numbers it was built with)
    prefix: tuple[int, History, frozenset[int]] | None = None


class SpaceSearcher(BaseSampler, abc.ABC):
    """Base class of autotile's searchers: Optuna samplers over an autotile ``Space``.

    A searcher proposes whole configs of its space. It is an
    :class:`optuna.samplers.BaseSampler`, so it runs inside any
    :class:`optuna.Study`; the objective asks for the config with
    :func:`autotile.search.suggest_config` (one Optuna parameter per knob,
    named after the knob). The contract, in the order Optuna calls it:

    1. :meth:`before_trial` (when ``study.ask()`` creates the trial, and
       again when a trial object is rebuilt for a trial that already
       exists): the searcher chooses the trial's config with
       :meth:`_propose` from a :class:`History` of the study and stores its
       text in the trial's system attribute ``"autotile:config"``. A trial
       that already carries a config (a resumed trial) keeps it.
    2. :meth:`infer_relative_search_space` and :meth:`sample_relative`
       return ``{}``: nothing is sampled relatively.
    3. :meth:`sample_independent` is called once per knob by
       ``suggest_config``; it returns that knob's value in the chosen config,
       in the form of the requested distribution (categorical choice or
       index, see :func:`autotile.search.knob_distribution`). A parameter
       that is not a knob of the space raises
       :class:`~autotile.errors.InvalidConfigError`.
    4. :meth:`after_trial` does nothing; the searcher reads finished trials
       from the study the next time it proposes.

    Because the config is chosen when the trial is created, several trials
    asked in a row (a parallel batch) see each other's configs and never
    collide. Searchers without repeats propose a config already in the
    study only when every config of the space is taken (then a random one).
    The study is minimised (a ``maximize`` study is handled by negating the
    values).

    Subclasses implement :meth:`_propose`. Randomness comes from
    :meth:`_trial_rng`, a generator derived from the searcher's seed and
    the trial number, so a seeded searcher proposes the same configs for
    the same history, including with parallel batches.

    Parameters
    ----------
    space : Space
        The space whose configs are proposed.
    seed : int, optional
        Seed of the searcher's generator; ``None`` draws fresh entropy.
    """

    #: Whether the searcher never proposes a config already in the study.
    unique: bool = True

    def __init__(self, space: Space, seed: int | None = None) -> None:
        if not isinstance(space, Space):
            raise InvalidConfigError(
                f"space must be an autotile.space.Space, got {type(space).__name__}"
            )
        check_seed(seed)
        self.space = space
        self.seed = seed
        self._seed_seq = np.random.SeedSequence(seed)
        self._rng = np.random.default_rng(self._seed_seq)
        self._lock = threading.RLock()
        self._states: weakref.WeakKeyDictionary[Any, dict[int, _StudyState]] = (
            weakref.WeakKeyDictionary()
        )

    def __str__(self) -> str:
        return type(self).__name__

    # -- randomness -------------------------------------------------------------------
    def _trial_rng(self, number: int, stream: int = 0) -> np.random.Generator:
        """A generator for trial ``number``, derived from the searcher's seed.

        Parameters
        ----------
        number : int
            Trial number (or any counter the subclass keys its randomness on).
        stream : int, default=0
            Distinguishes independent uses for the same number.

        Returns
        -------
        numpy.random.Generator
            The same generator for the same seed, number and stream.
        """
        seq = np.random.SeedSequence(self._seed_seq.entropy, spawn_key=(int(number), int(stream)))
        return np.random.default_rng(seq)

    def reseed_rng(self) -> None:
        """Do nothing: proposals are keyed on trial numbers and never collide.

        Optuna calls this before running trials in threads; an autotile
        searcher is shared by the threads (under a lock) and draws from a
        generator derived from the trial number, so reseeding is not needed
        and would break reproducibility.
        """

    # -- Optuna's contract ------------------------------------------------------------
    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        """Return ``{}``: the config is chosen in :meth:`before_trial`."""
        return {}

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        """Return ``{}``: the config is chosen in :meth:`before_trial`."""
        return {}

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Choose the trial's config (or keep the one it already has).

        Parameters
        ----------
        study : optuna.Study
            The study.
        trial : optuna.trial.FrozenTrial
            The new (or rebuilt) trial.
        """
        self._config_for(study, trial)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        """Return knob ``param_name`` of the trial's config, in ``param_distribution``'s form.

        Parameters
        ----------
        study : optuna.Study
            The study.
        trial : optuna.trial.FrozenTrial
            The trial.
        param_name : str
            A knob name of the space.
        param_distribution : optuna.distributions.BaseDistribution
            The distribution ``suggest_config`` used.

        Returns
        -------
        Any
            The categorical choice, index or integer for that knob.

        Raises
        ------
        InvalidConfigError
            If ``param_name`` is not a knob of the space.
        """
        cfg = self._config_for(study, trial)
        if param_name not in cfg:
            raise InvalidConfigError(
                f"{type(self).__name__} proposes configs of a space with knobs "
                f"{list(self.space.names)}, got a request for parameter {param_name!r}"
            )
        return param_of(self.space[param_name], cfg[param_name], param_distribution)

    # -- history ----------------------------------------------------------------------
    def _state(self, study: optuna.Study) -> _StudyState:
        """Per-study memory (chosen configs, parsed finished trials, subclass state)."""
        per = self._states.setdefault(study._storage, {})
        st = per.get(study._study_id)
        if st is None:
            st = per[study._study_id] = _StudyState()
        return st

    def _config_for(self, study: optuna.Study, trial: FrozenTrial) -> Config:
        with self._lock:
            state = self._state(study)
            cfg = state.chosen.get(trial._trial_id)
            if cfg is not None:
                return cfg
            text = trial_config_text(trial)
            if text is None:
                stored = study._storage.get_trial(trial._trial_id)
                text = trial_config_text(stored)
            if text is not None:
                cfg = self.space.parse(text)
            else:
                history = self._history(study, exclude=trial.number)
                cfg = self._propose(history, trial.number, state.extra)
                study._storage.set_trial_system_attr(trial._trial_id, CONFIG_ATTR, str(cfg))
            state.chosen[trial._trial_id] = cfg
            return cfg

    def _record(self, t: FrozenTrial) -> tuple[int, Config] | None:
        text = trial_config_text(t)
        cfg: Config | None
        if text is not None:
            try:
                cfg = self.space.parse(text)
            except InvalidConfigError:
                cfg = None
        else:
            cfg = config_from_params(self.space, t.params, t.distributions)
        if cfg is None:
            return None
        return self.space.index_of(cfg), cfg

    def _history(self, study: optuna.Study, exclude: int | None = None) -> History:
        """Read the study's trials into a :class:`History` (finished trials are cached).

        The longest run of finished trials from trial 0 on is kept as a
        ready :class:`History` prefix (finished trials never change), so
        each call reads only the trials after it: a study of ``n`` trials
        costs O(n) Python steps per proposal only for the unfinished tail.
        The prefix is rebuilt when the set of retried trials changes.
        """
        state = self._state(study)
        finished = state.finished
        sign = -1.0 if study.direction == StudyDirection.MAXIMIZE else 1.0
        trials = study.get_trials(deepcopy=False)
        retried = state.retried.update(trials)
        prefix = state.prefix
        if (prefix is None or prefix[2] != retried
                or (exclude is not None and exclude < prefix[0])):
            prefix = (0, History(), frozenset(retried))
        k, base, _ = prefix
        # extend the settled prefix
        while k < len(trials) and trials[k].state in _FINISHED and trials[k].number != exclude:
            t = trials[k]
            if t.number not in retried:
                entry = self._finished_entry(t, finished, sign)
                if entry is not None:
                    base.taken.add(entry[0])
                    base.indices.append(entry[0])
                    base.configs.append(entry[1])
                    base.values.append(entry[2])
            k += 1
        state.prefix = (k, base, frozenset(retried))
        h = History(set(base.taken), list(base.indices), list(base.configs), list(base.values))
        for t in trials[k:]:
            if t.number == exclude or t.number in retried:
                continue
            if t.state in _FINISHED:
                entry = self._finished_entry(t, finished, sign)
                if entry is not None:
                    h.taken.add(entry[0])
                    h.indices.append(entry[0])
                    h.configs.append(entry[1])
                    h.values.append(entry[2])
            else:
                rec = self._record(t)
                if rec is not None:
                    h.taken.add(rec[0])
        return h

    def _finished_entry(self, t: FrozenTrial,
                        finished: dict[int, tuple[int, Config, float] | None],
                        sign: float) -> tuple[int, Config, float] | None:
        """``(space index, config, value to minimise)`` of a finished trial (cached)."""
        if t.number not in finished:
            rec = self._record(t)
            if rec is None:
                finished[t.number] = None
            else:
                value = math.inf
                if t.state == TrialState.COMPLETE and t.values is not None:
                    value = sign * float(t.values[0])
                    if math.isnan(value):
                        value = math.inf
                finished[t.number] = (rec[0], rec[1], value)
        return finished[t.number]

    def _random_untaken(
        self, taken: set[int], rng: np.random.Generator, n: int = 1
    ) -> list[int]:
        """Up to ``n`` distinct space indices drawn uniformly outside ``taken``.

        Rejection sampling while the space is mostly free, else a draw from
        the explicit complement. Fewer than ``n`` when the space runs out.
        """
        size = len(self.space)
        free = size - len(taken)
        n = min(n, free)
        if n <= 0:
            return []
        if len(taken) + n <= size // 2:
            out: list[int] = []
            seen = set(taken)
            while len(out) < n:
                i = int(rng.integers(size))
                if i not in seen:
                    seen.add(i)
                    out.append(i)
            return out
        mask = np.ones(size, dtype=bool)
        if taken:
            mask[np.fromiter(taken, dtype=np.int64, count=len(taken))] = False
        pool = np.flatnonzero(mask)
        return [int(i) for i in rng.choice(pool, size=n, replace=False)]

    def _fallback(self, number: int) -> Config:
        """A random config, for when every config of the space is taken."""
        rng = self._trial_rng(number, stream=99)
        return self.space.config_at(int(rng.integers(len(self.space))))

    @abc.abstractmethod
    def _propose(self, history: History, number: int, memory: dict[str, Any]) -> Config:
        """Choose the config of trial ``number``.

        Parameters
        ----------
        history : History
            The study's trials (the new trial excluded).
        number : int
            The new trial's number.
        memory : dict
            Scratch state of this searcher for this study (e.g. a planned
            batch), empty at first.

        Returns
        -------
        Config
            A valid config; not in ``history.taken`` unless every config is.
        """
