"""Where :func:`~autotile.search.compare` keeps its runs: one Optuna study per (searcher, seed).

A run is measured in memory (each trial is a table lookup, so storage would be
most of its cost) and written to the storage in one transaction when it
ends, as a study named ``<prefix>:<searcher>:seed<seed>`` whose user
attribute ``"autotile:compare"`` records the settings and ``"complete":
True``. A comparison started again with the same settings loads the complete
runs instead of running them, so an interrupted ``compare`` resumes, and a
finished one can be reported again. The stored study has the objective's own
direction and units and its name (:meth:`optuna.Study.set_metric_names`), so
optuna-dashboard shows it as it is.
"""

from __future__ import annotations

import datetime
import json
import math
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import optuna
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState

from autotile.search._methodology import FloatArray

__all__ = ["RunResult", "open_storage", "run_study_name", "write_run", "read_run",
           "ATTR"]

#: The stored study's user attribute holding the run's settings.
ATTR = "autotile:compare"


class RunResult(NamedTuple):
    """One (searcher, seed) run of a comparison.

    Attributes
    ----------
    label : str
        The searcher's label.
    seed : int
        Its seed.
    history : ndarray of shape (budget,), float64
        The objective of every trial in the objective's units; the worst
        infinity for a failed, infeasible or missing trial.
    best_config : str or None
        The config of the first trial reaching the run's best value
        (``None`` if no trial was ``"ok"``, or for a custom searcher).
    run_time_s : float
        Seconds the run took in its worker.
    trials : list of FrozenTrial or None
        The study's trials, to store (``None`` once stored, or for a custom
        searcher).
    stored : bool
        Whether the run was loaded from the storage instead of run.
    """

    label: str
    seed: int
    history: FloatArray
    best_config: str | None
    run_time_s: float
    trials: list[FrozenTrial] | None = None
    stored: bool = False


def open_storage(storage: str | BaseStorage) -> BaseStorage:
    """An Optuna storage for ``storage``: a URL, an SQLite file path, ``":memory:"`` or a storage.

    URLs and paths are checked as :func:`~autotile.search.create_study` checks them.
    """
    from autotile.search._study_args import resolve_storage, storage_driver_error

    resolved = resolve_storage(storage)
    if isinstance(resolved, BaseStorage):
        return resolved
    from sqlalchemy import exc as sa_exc

    try:
        return optuna.storages.RDBStorage(resolved)
    except ImportError as exc:
        better = storage_driver_error(resolved, exc)
        if better is None:
            raise
        raise better from exc
    except sa_exc.OperationalError as exc:
        from autotile.search._storage import unopenable_sqlite, unreachable_storage

        if not resolved.startswith("sqlite:"):
            raise unreachable_storage(resolved, exc) from None
        if "unable to open database file" not in str(exc):
            raise
        raise unopenable_sqlite(repr(resolved)) from None


def run_study_name(prefix: str, label: str, seed: int) -> str:
    """The stored study's name: ``"<prefix>:<searcher>:seed<seed>"``."""
    return f"{prefix}:{label}:seed{seed}"


def _rdb(storage: BaseStorage) -> Any:
    """The ``RDBStorage`` behind ``storage`` (Optuna wraps it in a cache), or None."""
    backend = getattr(storage, "_backend", storage)
    return backend if isinstance(backend, optuna.storages.RDBStorage) else None


def _utc(when: datetime.datetime | None) -> datetime.datetime | None:
    return None if when is None else when.astimezone(datetime.timezone.utc).replace(tzinfo=None)


def _bulk_insert(rdb: Any, study_id: int, trials: Sequence[FrozenTrial]) -> None:
    """Insert finished trials in one transaction (Optuna's ``add_trials`` makes one each).

    Writes the rows ``RDBStorage._create_new_trial`` would write, with SQLAlchemy
    Core ``executemany``: about 100 times faster than ``add_trials`` for the
    500-trial runs of the default comparison (0.2 s against 16 s on SQLite).
    """
    from optuna.distributions import distribution_to_json
    from optuna.storages._rdb import models
    from sqlalchemy import select

    value_model = models.TrialValueModel
    with rdb.engine.begin() as conn:
        _insert_rows(conn, models.TrialModel.__table__, [
            {"number": t.number, "study_id": study_id, "state": t.state,
             "datetime_start": _utc(t.datetime_start),
             "datetime_complete": _utc(t.datetime_complete)} for t in trials])
        ids = dict(conn.execute(select(models.TrialModel.number, models.TrialModel.trial_id)
                                .where(models.TrialModel.study_id == study_id)).all())
        params, values, user, system = [], [], [], []
        dist_json: dict[Any, str] = {}  # equal distributions are one JSON text
        for t in trials:
            tid = ids[t.number]
            for name, value in t.params.items():
                dist = t.distributions[name]
                text = dist_json.get(dist)
                if text is None:
                    text = dist_json[dist] = distribution_to_json(dist)
                params.append({"trial_id": tid, "param_name": name,
                               "param_value": dist.to_internal_repr(value),
                               "distribution_json": text})
            if t.values is not None:
                for objective, v in enumerate(t.values):
                    stored, kind = value_model.value_to_stored_repr(v)
                    values.append({"trial_id": tid, "objective": objective, "value": stored,
                                   "value_type": kind})
            user += [{"trial_id": tid, "key": k, "value_json": json.dumps(v)}
                     for k, v in t.user_attrs.items()]
            system += [{"trial_id": tid, "key": k, "value_json": json.dumps(v)}
                       for k, v in t.system_attrs.items()]
        for model, rows in ((models.TrialParamModel, params), (value_model, values),
                            (models.TrialUserAttributeModel, user),
                            (models.TrialSystemAttributeModel, system)):
            if rows:
                _insert_rows(conn, model.__table__, rows)


def _insert_rows(conn: Any, table: Any, rows: list[dict[str, Any]]) -> None:
    """``conn.execute(table.insert(), rows)``, with SQLite's driver called directly.

    SQLAlchemy Core processes every parameter of every row in Python (about
    two thirds of the parent's storing CPU in the README's job); on SQLite the
    rows go to the driver's ``executemany`` instead, each value converted by
    its column type's own bind processor (the same stored values). Other
    databases take the Core path.
    """
    dialect = conn.dialect
    if dialect.name != "sqlite" or dialect.paramstyle != "qmark":
        conn.execute(table.insert(), rows)
        return
    names = list(rows[0])
    procs = [table.c[n].type.dialect_impl(dialect).bind_processor(dialect) for n in names]
    columns = []
    for n, proc in zip(names, procs):
        col = [r[n] for r in rows]
        if proc is not None:
            col = [None if v is None else proc(v) for v in col]
        columns.append(col)
    quote = dialect.identifier_preparer.quote
    sql = (f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) "
           f"VALUES ({', '.join('?' * len(names))})")
    conn.exec_driver_sql(sql, list(zip(*columns)))


def _stored_trials(trials: Sequence[FrozenTrial], objective: str,
                   maximize: bool) -> list[FrozenTrial]:
    """The run's trials as stored: the objective in its own units, no worker attributes.

    The trials were validated by the study that ran them; they are rebuilt as
    :class:`FrozenTrial` without ``optuna.trial.create_trial``'s checks, which
    convert and compare every distribution again (the parent's CPU in the
    README's 12,500-trial job fell from 5.3 to 4.9 s, one run each).
    """
    out = []
    for t in trials:
        if t.state not in (TrialState.COMPLETE, TrialState.FAIL):
            continue
        ua = dict(t.user_attrs)
        metrics = {k: v for k, v in (ua.get("metrics") or {}).items()
                   if not (maximize and k == f"-{objective}")}
        ua["metrics"] = metrics
        value = None
        if t.state == TrialState.COMPLETE and t.value is not None:
            value = -t.value if maximize else t.value
        out.append(FrozenTrial(
            number=t.number, state=t.state, value=value, datetime_start=t.datetime_start,
            datetime_complete=t.datetime_complete, params=dict(t.params),
            distributions=dict(t.distributions), user_attrs=ua, system_attrs={},
            intermediate_values={}, trial_id=-1))
    return out


def write_run(storage: BaseStorage, name: str, run: RunResult, objective: str,
              direction: str, settings: dict[str, Any]) -> None:
    """Write one finished run as a study; ``settings`` go into its ``ATTR`` user attribute.

    An incomplete study of the same name (a write cut short) is replaced.
    """
    from autotile.search._optimize import quiet_optuna

    assert run.trials is not None
    with quiet_optuna():
        _write_run(storage, name, run, objective, direction, settings)


def _write_run(storage: BaseStorage, name: str, run: RunResult, objective: str,
               direction: str, settings: dict[str, Any]) -> None:
    assert run.trials is not None
    try:
        old = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        old = None
    if old is not None:
        optuna.delete_study(study_name=name, storage=storage)
    study = optuna.create_study(storage=storage, study_name=name,
                                direction="maximize" if direction == "maximize" else "minimize")
    with warnings.catch_warnings():  # experimental before Optuna 4.x
        warnings.simplefilter("ignore")
        study.set_metric_names([objective])
    trials = _stored_trials(run.trials, objective, direction == "maximize")
    rdb = _rdb(storage)
    if rdb is None:
        study.add_trials(trials)
    else:
        _bulk_insert(rdb, study._study_id, trials)
    study.set_user_attr(ATTR, {**settings, "searcher": run.label, "seed": run.seed,
                               "run_time_s": run.run_time_s, "n_trials": len(trials),
                               "complete": True})


def read_run(storage: BaseStorage, name: str, settings: dict[str, Any],
             budget: int, direction: str) -> RunResult | None:
    """Load a complete stored run made with ``settings``; None if there is none.

    Raises
    ------
    ValueError
        If a complete study of this name was made with other settings (another
        table, space or measurer): its trials would be reported as this run's.
    """
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        return None
    attrs = study.user_attrs.get(ATTR)
    if not isinstance(attrs, dict) or not attrs.get("complete"):
        return None  # cut short while written: run again
    diffs = [f"{k}={attrs.get(k)!r} (stored) vs {v!r} (now)" for k, v in settings.items()
             if attrs.get(k) != v]
    if diffs:
        raise ValueError(
            f"the storage holds a run {name!r} made with other settings: {'; '.join(diffs)}; "
            f"pass another --storage (or storage=) to compare with these settings")
    worst = -math.inf if direction == "maximize" else math.inf
    h = np.full(budget, worst)
    best, best_config = worst, None
    sign = -1.0 if direction == "maximize" else 1.0
    for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        if t.number >= budget:
            break
        if t.state == TrialState.COMPLETE and t.value is not None and not math.isnan(t.value):
            h[t.number] = t.value
            if sign * t.value < sign * best:
                best, best_config = t.value, t.user_attrs.get("config")
    return RunResult(str(attrs.get("searcher")), int(attrs.get("seed", 0)), h, best_config,
                     float(attrs.get("run_time_s", math.nan)), None, True)
