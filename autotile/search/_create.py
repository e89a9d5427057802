"""``create_study`` and ``tune``: build (or resume) a :class:`~autotile.search.Study`.

:func:`create_study` checks the space, measurer, objective, seed and
storage, builds the searcher by name (:func:`~autotile.search.make_searcher`)
and creates or loads the Optuna study, refusing one created for another
objective, space, searcher, seed or measurer settings. :func:`tune` is
``create_study`` followed by :meth:`Study.optimize <autotile.search.Study.optimize>`.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from typing import Any

import optuna
from optuna.samplers import BaseSampler
from optuna.storages import BaseStorage

from autotile.measure import Measurer
from autotile.measure._fingerprint import differences, digest_of, jsonable
from autotile.search._factory import build_searcher, encoding_for, searcher_key
from autotile.search._lock import StudyLock
from autotile.search._optimize import optimize, quiet_optuna
from autotile.search._params import MAX_CATEGORICAL_ORDERS, space_distributions
from autotile.search._storage import open_storage
from autotile.search._study import Study
from autotile.search._study_args import (
    DEFAULT_STORAGE,
    check_count,
    check_measurer,
    check_n_jobs,
    check_seed,
    check_timeout,
)
from autotile.space import Space

__all__ = ["create_study", "tune", "DEFAULT_STORAGE"]


def _searcher_key(label: Any) -> str:
    """The searcher's canonical name (``"xgb"`` and ``"Model"`` both mean ``"model"``).

    A label that names no searcher is kept as given (a user's own sampler).
    """
    try:
        return searcher_key(str(label))
    except ValueError:
        return str(label)


def file_stem(path: str) -> str:
    """``path``'s file name without ``.json``, ``.json.gz``, ``.gz`` or ``.npz``.

    Parameters
    ----------
    path : str
        A file path (a Kernel Tuner cache, a T4 file or an ``autotile sweep``
        table); only its last component is used, and the file need not exist.

    Returns
    -------
    str
        The file name with those suffixes stripped (``"a/gemm.json.gz"`` ->
        ``"gemm"``); a name that is only a suffix (``".npz"``) is kept as is.
    """
    name = os.path.basename(path)
    for suffix in (".gz", ".json", ".npz"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[:-len(suffix)]
    return name


def default_study_name(space: Space, searcher: Any, objective: str, seed: int | None,
                       file: str | None = None) -> str:
    """The study name :func:`create_study` gives when ``study_name`` is None.

    Parameters
    ----------
    space : Space
        The study's space; its ``name`` (``"space"`` when it has none).
    searcher : str or object
        The searcher's label, as given.
    objective : str
        The objective's metric name.
    seed : int or None
        The searcher's seed.
    file : str, optional
        The recorded file the measurer replays; its :func:`file_stem` goes first,
        so two files of one kernel (e.g. two GPUs) get two studies.

    Returns
    -------
    str
        ``"[<file>-]<space name>-<searcher>-<objective>-seed<seed>"``.
    """
    name = f"{space.name or 'space'}-{searcher}-{objective}-seed{seed}"
    return f"{file_stem(file)}-{name}" if file else name


def _check_same_run(study_name: str, old: dict[str, Any], label: Any, seed: int | None) -> None:
    """Refuse to resume a study with another searcher or seed than the one it was created with.

    Mixing them would silently make the study's trials come from two searchers (or two
    random streams) while its attributes still name the first.
    """
    if "autotile:searcher" in old and _searcher_key(old["autotile:searcher"]) != _searcher_key(
            label):
        raise ValueError(
            f"study {study_name!r} was created with searcher={old['autotile:searcher']!r}, "
            f"got searcher={str(label)!r}; resuming must use the same searcher: pass "
            f"searcher={old['autotile:searcher']!r} to resume it, or another study_name")
    if "autotile:seed" in old and old["autotile:seed"] != seed:
        raise ValueError(
            f"study {study_name!r} was created with seed={old['autotile:seed']!r}, got "
            f"seed={seed!r}; resuming must use the same seed: pass "
            f"seed={old['autotile:seed']!r} to resume it, or another study_name")


def _check_same_measurer(study_name: str, old: dict[str, Any], ident: dict[str, Any],
                         fingerprint: str) -> bool:
    """Refuse to resume a study with a measurer whose settings differ from its creator's.

    Its stored trials are reused as results, so another hardware profile, model,
    cache or shape would silently return the first measurer's numbers. A study
    created before fingerprints were recorded cannot be checked: warn and return
    True (the caller records this measurer's fingerprint).
    """
    stored = old.get("autotile:measurer_fingerprint")
    if stored is None:
        warnings.warn(
            f"study {study_name!r} records no measurer fingerprint (it was created by an "
            f"older autotile), so its stored results cannot be checked against this "
            f"{ident['measurer']}; resuming it and recording this measurer's settings. If "
            f"it was measured with other settings, pass another study_name or storage",
            UserWarning, stacklevel=4)
        return True
    if stored == fingerprint:
        return False
    then = old.get("autotile:measurer")
    diffs = differences(then, ident) if isinstance(then, dict) else []
    what = "; ".join(diffs) if diffs else f"fingerprint {stored} (then) vs {fingerprint} (now)"
    raise ValueError(
        f"study {study_name!r} was created with another measurer: {what}; its stored "
        f"results would be returned as this measurer's. Pass another study_name or "
        f"storage to measure with these settings, or the original measurer to resume it")


def create_study(
    space: Space,
    measurer: Measurer,
    *,
    searcher: str | BaseSampler = "random",
    objective: str | None = None,
    storage: str | BaseStorage | None = None,
    study_name: str | None = None,
    seed: int | None = None,
    load_if_exists: bool = True,
    searcher_kwargs: dict[str, Any] | None = None,
) -> Study:
    """Create (or load) a tuning study of ``space`` scored by ``measurer``.

    Parameters
    ----------
    space : Space
        The space.
    measurer : Measurer
        Scores configs.
    searcher : str or optuna.samplers.BaseSampler, default="random"
        A name for :func:`make_searcher` (``"grid"``, ``"random"``,
        ``"model"``, ``"evolutionary"``, ``"tpe"``, ``"cmaes"``, ``"gp"``,
        ``"nsga2"``, ``"qmc"``) or any Optuna sampler.
    objective : str, optional
        Metric to minimise; default ``measurer.objective``. An ``"ok"``
        result whose objective is not a finite number (NaN, ``inf`` or
        ``-inf``) or is missing becomes a failed trial naming the value, so
        it can never be the best: a measurer reports a config that timed
        out or cannot run as ``"failed"``/``"infeasible"``, not as ``inf``.
    storage : str, path-like or optuna.storages.BaseStorage, optional
        Where trials are kept. Default: the SQLite file
        ``autotile_studies.db`` in the current directory
        (:data:`DEFAULT_STORAGE`). Any Optuna storage URL (``"sqlite:///"
        "file.db"``, ``"postgresql://..."``) or storage object is accepted;
        a path without ``://`` ending in ``.db``, ``.sqlite`` or
        ``.sqlite3`` names an SQLite file (``"runs.db"`` means
        ``"sqlite:///runs.db"``), one ending in ``.log`` or ``.journal`` an
        Optuna journal file (for NFS); ``":memory:"`` keeps the study in
        memory. A string is opened by :func:`open_storage` (heartbeat every
        5 s, a trial abandoned after 20 s without one); call it yourself for
        other heartbeat settings. Several workers (processes or machines)
        may run the same study on one storage at once.
    study_name : str, optional
        Non-empty. Default ``"<space name>-<searcher>-<objective>-seed<seed>"``,
        after ``"<file>-"`` for a measurer replaying a recorded file (a Kernel
        Tuner cache: its ``truth.meta["source"]``, named without
        ``.json``/``.json.gz``), so running the same call again resumes the
        same study and two files of one kernel get two studies.
    seed : int, optional
        Seed of the searcher, ``0 <= seed < 2**32`` (NumPy's seed range).
    load_if_exists : bool, default=True
        Load the study if one with this name exists (resume); otherwise
        Optuna raises ``DuplicatedStudyError``. A resumed study must be
        called with the objective, space, searcher, ``searcher_kwargs`` (when
        JSON-able), seed and measurer settings (:meth:`Measurer.fingerprint
        <autotile.measure.Measurer.fingerprint>`) it was created with (a
        loaded study that differs is refused; there is no option to mix
        them: pass another ``study_name`` instead).
    searcher_kwargs : dict, optional
        Extra arguments for :func:`make_searcher`.

    Returns
    -------
    Study
        The study; call :meth:`Study.optimize`.

    Raises
    ------
    TypeError
        If ``space`` is not a ``Space``, ``measurer`` is not a ``Measurer``
        (e.g. a plain function), ``storage`` has an unsupported type,
        ``study_name`` is neither None nor a str, or ``searcher_kwargs`` is
        neither None nor a mapping.
    ValueError
        If ``objective`` is not one of ``measurer.metrics`` (or there is no
        objective at all) or is higher-is-better by its name
        (:func:`~autotile.search.objective_direction`, e.g. ``"tflops"``:
        studies minimise), the measurer's ``space`` is not the same space as
        ``space`` (other knobs, knob values, constraints or size; a measurer
        without a ``space`` attribute is not checked), ``seed`` is not None
        or an int with ``0 <= seed < 2**32``, ``storage`` is a string that
        is neither a URL nor an SQLite file path, or a loaded study was
        created for another objective, space, searcher, searcher options or
        seed, or with a
        measurer of another class or other :meth:`Measurer.settings
        <autotile.measure.Measurer.settings>` (the message lists what differs),
        or ``study_name`` is an empty or blank str.
    ImportError
        If ``storage`` is a database URL whose SQLAlchemy driver is not
        installed (e.g. ``"postgresql://..."`` without ``psycopg``): the
        message names the module and the ``pip install`` command; Optuna's
        error is chained as ``__cause__``.

    Examples
    --------
    >>> from autotile.space import gemm_space
    >>> from autotile.measure import ScheduleMeasurer
    >>> space = gemm_space(8)
    >>> study = create_study(space, ScheduleMeasurer(space), storage=":memory:", seed=0)
    """
    check_measurer(space, measurer)
    check_seed(seed)
    if study_name is not None and not isinstance(study_name, str):
        raise TypeError(f"study_name must be a non-empty str or None, got "
                        f"{type(study_name).__name__} {study_name!r}")
    if study_name is not None and not study_name.strip():
        raise ValueError(f"study_name must be a non-empty str or None, got "
                         f"study_name={study_name!r}")
    if searcher_kwargs is not None and not isinstance(searcher_kwargs, Mapping):
        raise TypeError(f"searcher_kwargs must be a dict of the searcher's options or None, "
                        f"got {type(searcher_kwargs).__name__} {searcher_kwargs!r}")
    ident = measurer.identity()
    fingerprint = digest_of(ident)
    storage_arg = open_storage(storage)
    objective = objective or measurer.objective
    if not objective:
        raise ValueError(
            f"objective must name a metric, got objective={objective!r}: pass objective= or "
            f"set {type(measurer).__name__}.objective")
    if measurer.metrics and objective not in measurer.metrics:
        raise ValueError(
            f"objective must be one of the measurer's metrics {tuple(measurer.metrics)}, "
            f"got objective={objective!r}"
        )
    from autotile.search._compare_plan import objective_direction

    # a "-name" metric is a negation made to be minimised (compare's maximised objectives)
    if not objective.startswith("-") and objective_direction(objective) == "maximize":
        lower = [m for m in measurer.metrics if objective_direction(m) == "minimize"]
        costs = [m for m in lower if re.search(r"time|_s$|bytes|cycles|misses|energy", m)]
        hint = costs or lower
        raise ValueError(
            f"studies minimise their objective, but objective={objective!r} is higher-is-better "
            f"(a throughput, rate or efficiency by its name); minimise a cost metric instead"
            + (f", e.g. one of {tuple(hint)}" if hint else ""))
    if isinstance(searcher, BaseSampler):
        sampler, label = searcher, type(searcher).__name__
    else:
        sampler, label = build_searcher(searcher, space, seed, searcher_kwargs or {}), searcher
    if study_name is None:
        source = (getattr(getattr(measurer, "truth", None), "meta", None) or {}).get("source")
        study_name = default_study_name(space, label, objective, seed,
                                        source if isinstance(source, str) else None)
    with StudyLock(storage_arg, study_name), quiet_optuna():
        # under the study lock: workers starting at once create it once and agree on it
        ost = optuna.create_study(storage=storage_arg, sampler=sampler,
                                  study_name=study_name, direction="minimize",
                                  load_if_exists=load_if_exists)
        options = None if isinstance(searcher, BaseSampler) else jsonable(
            dict(searcher_kwargs or {}))
        _record_or_check(ost, study_name, space, objective, label, seed, ident, fingerprint,
                         encoding_for(sampler), options)
        if list(ost.metric_names or []) != [objective]:
            with warnings.catch_warnings():  # experimental before Optuna 4.x
                warnings.simplefilter("ignore")
                ost.set_metric_names([objective])  # optuna-dashboard shows it by name
    return Study(ost, space, measurer, objective, encoding_for(sampler))


def _record_or_check(ost: optuna.Study, study_name: str, space: Space, objective: str,
                     label: Any, seed: int | None, ident: dict[str, Any],
                     fingerprint: str, encoding: Any = "categorical",
                     options: dict[str, Any] | None = None) -> None:
    """Record a new study's settings, or check a loaded one's against them.

    ``options`` are the searcher's ``searcher_kwargs`` as JSON data (None when
    not JSON-able, e.g. an estimator object, or for a sampler object: then
    they are neither recorded nor checked).
    """
    meta = {"autotile:objective": objective, "autotile:knobs": list(space.names),
            "autotile:space_size": len(space)}
    old = ost.user_attrs
    if "autotile:objective" in old:
        if old["autotile:objective"] != objective:
            raise ValueError(
                f"study {study_name!r} minimises {old['autotile:objective']!r}, "
                f"got objective={objective!r}; pass another study_name"
            )
        if old.get("autotile:knobs") != list(space.names) or old.get(
                "autotile:space_size") != len(space):
            raise ValueError(
                f"study {study_name!r} was created for knobs {old.get('autotile:knobs')} "
                f"(size {old.get('autotile:space_size')}), got knobs {list(space.names)} "
                f"(size {len(space)}); pass another study_name"
            )
        _check_same_run(study_name, old, label, seed)
        stored = old.get("autotile:searcher_kwargs")
        if stored is not None and options is not None and stored != options:
            raise ValueError(
                f"study {study_name!r} was created with searcher_kwargs={stored!r}, got "
                f"searcher_kwargs={options!r}; resuming must use the same searcher options "
                f"(else its trials would come from two searchers): pass the first ones to "
                f"resume it, or another study_name")
        if _check_same_measurer(study_name, old, ident, fingerprint):
            ost.set_user_attr("autotile:measurer", ident)
            ost.set_user_attr("autotile:measurer_fingerprint", fingerprint)
        _check_same_distributions(ost, space, encoding)
    else:
        for k, v in {**meta, "autotile:searcher": str(label), "autotile:seed": seed,
                     "autotile:searcher_kwargs": options, "autotile:measurer": ident,
                     "autotile:measurer_fingerprint": fingerprint}.items():
            ost.set_user_attr(k, v)


def _check_same_distributions(ost: optuna.Study, space: Space, encoding: Any) -> None:
    """Refuse to resume a study whose stored parameters have another kind of distribution.

    Optuna itself would fail on the first trial ("Cannot set different distribution
    kind to the same parameter name"); a study written by an older autotile stored a
    long permutation as categorical choices, which is now an integer rank.
    """
    trials = ost.get_trials(deepcopy=False)
    if not trials:
        return
    want = space_distributions(space, encoding)
    for t in trials[:1] + trials[-1:]:
        for name, dist in t.distributions.items():
            if name in want and type(dist) is not type(want[name]):
                raise ValueError(
                    f"study {ost.study_name!r} stores knob {name!r} as a "
                    f"{type(dist).__name__}, this autotile suggests it as a "
                    f"{type(want[name]).__name__} (a permutation with more than "
                    f"{MAX_CATEGORICAL_ORDERS} orders is stored by its rank since autotile 0.1); "
                    f"pass another study_name or storage")


def tune(
    space: Space,
    measurer: Measurer,
    searcher: str | BaseSampler = "random",
    budget: int = 100,
    seed: int | None = None,
    storage: str | BaseStorage | None = None,
    n_jobs: int = 1,
    progress: bool = True,
    *,
    objective: str | None = None,
    study_name: str | None = None,
    searcher_kwargs: dict[str, Any] | None = None,
    timeout: float | None = None,
    load_if_exists: bool = True,
) -> Study:
    """Create (or resume) a study and run it to ``budget`` finished trials.

    ``create_study(...)`` followed by ``Study.optimize(budget, ...)``; see
    both for the parameters.

    Parameters
    ----------
    space : Space
        The space.
    measurer : Measurer
        Scores configs.
    searcher : str or optuna.samplers.BaseSampler, default="random"
        See :func:`create_study`.
    budget : int, default=100
        Total number of trials, ``>= 1``.
    seed : int, optional
        Seed of the searcher, ``0 <= seed < 2**32``.
    storage : str, path-like or optuna.storages.BaseStorage, optional
        See :func:`create_study` (default: ``autotile_studies.db``; a
        plain ``"file.db"`` path is an SQLite file).
    n_jobs : int, default=1
        Parallel measurements; capped at ``budget`` (see :meth:`Study.optimize`).
    progress : bool, default=True
        Show the progress bar.
    objective, study_name, searcher_kwargs, load_if_exists
        See :func:`create_study`.
    timeout : float, optional
        See :meth:`Study.optimize`.

    Returns
    -------
    Study
        The finished study.

    Raises
    ------
    TypeError, ValueError
        See :func:`create_study`; also if ``budget`` is not an int ``>= 1``,
        ``n_jobs`` is not a non-zero int or ``timeout <= 0``.
    MeasureError
        If no trial could be attempted (the space has no valid config).

    Warns
    -----
    RuntimeWarning
        If every trial of this run failed or was infeasible (the warning
        quotes the first few distinct errors).
    """
    budget = check_count("budget", budget)
    n_jobs = check_n_jobs(n_jobs)
    check_timeout(timeout)
    study = create_study(space, measurer, searcher=searcher, objective=objective,
                         storage=storage, study_name=study_name, seed=seed,
                         load_if_exists=load_if_exists, searcher_kwargs=searcher_kwargs)
    return optimize(study, budget, n_jobs, progress, timeout)
