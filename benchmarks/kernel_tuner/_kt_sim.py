"""Kernel Tuner's own strategies in simulation mode on the tables autotile replays.

The anchor of ``bench_default_searcher.py``: the same table autotile's
searchers replay is written as a Kernel Tuner cache file
(:func:`cache_document`), and Kernel Tuner 1.5's ``tune_kernel(...,
simulation_mode=True, cache=..., strategy=..., strategy_options={"max_fevals":
budget})`` runs one of its strategies on it (:func:`run_strategy`). The
restriction handed to Kernel Tuner admits exactly the configs in the table,
failed ones included, so both tuners search the same space: a failed config
costs Kernel Tuner a function evaluation as it costs autotile a trial.

Kernel Tuner charges only *distinct* configs against ``max_fevals`` (a
config served again from its cache is free); :func:`distinct_trajectory`
turns its result list into that accounting: one value per distinct config,
in first-evaluation order, failed configs as ``inf``.

Kernel Tuner's strategies draw from the global ``random`` and
``numpy.random`` generators (``tune_kernel``'s ``seed=`` reaches only the
pymoo strategies), so :func:`run_strategy` seeds both. The Latin hypercube
of its searchspace (``diff_evo``'s first population) comes from
``scipy.stats.qmc.LatinHypercube`` with fresh OS entropy; during a run the
harness hands it a generator derived from the seed instead, so every
strategy's run is a function of its seed.

Only this module imports ``kernel_tuner`` (``pip install autotile[kt]``), and
only inside :func:`run_strategy`.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: Kernel Tuner's marker for a config that failed at run time (its ``time`` field).
FAILED = "RuntimeFailedConfig"
_VALUE_TYPES = (int, float)
_DOCS: dict[str, tuple[str, list[str], dict[str, list[Any]], frozenset[tuple[Any, ...]]]] = {}


def kt_values(domain: Sequence[Any]) -> list[Any]:
    """Kernel Tuner's values for one knob: numbers as they are, anything else by position.

    Kernel Tuner snaps proposals to the nearest value with ``abs(v - x)``, so
    a knob whose values are not all numbers (the GEMM loop orders, tuples)
    is handed to it as positions ``0 .. n-1``.
    """
    vals = list(domain)
    if all(isinstance(v, _VALUE_TYPES) and not isinstance(v, bool) for v in vals):
        return vals
    return list(range(len(vals)))


def cache_document(names: Sequence[str], domains: Mapping[str, Sequence[Any]],
                   configs: Iterable[Mapping[str, Any]], values: Iterable[float], *,
                   kernel_name: str = "autotile_replay",
                   device_name: str = "replay") -> dict[str, Any]:
    """A Kernel Tuner cache (the pre-1.0 schema of the dataset's files) for a replayed table.

    Parameters
    ----------
    names : sequence of str
        Knob names; Kernel Tuner's ``tune_params_keys`` (key order).
    domains : mapping of str to sequence
        Each knob's values, in order.
    configs : iterable of mapping
        Every config of the table (knob name -> value, values from ``domains``).
    values : iterable of float
        The objective of each config in ``configs`` (ms for the dataset's
        files); NaN or infinite marks a failed config.
    kernel_name, device_name : str
        Header fields Kernel Tuner checks against the run.

    Returns
    -------
    dict
        ``device_name``, ``kernel_name``, ``tune_params_keys``,
        ``tune_params``, ``objective`` (``"time"``) and ``cache`` (last,
        as Kernel Tuner's reader expects): key -> record with the knob values
        and ``time`` (a float, or :data:`FAILED`).
    """
    names = list(names)
    tune_params = {n: kt_values(domains[n]) for n in names}
    index = {n: {v: i for i, v in enumerate(domains[n])} for n in names}
    cache: dict[str, dict[str, Any]] = {}
    for cfg, v in zip(configs, values, strict=True):
        kv = [tune_params[n][index[n][cfg[n]]] for n in names]
        rec: dict[str, Any] = dict(zip(names, kv))
        v = float(v)
        rec["time"] = v if math.isfinite(v) else FAILED
        cache[",".join(str(x) for x in kv)] = rec
    return {"device_name": device_name, "kernel_name": kernel_name, "tune_params_keys": names,
            "tune_params": tune_params, "objective": "time", "cache": cache}


def space_document(space: Any, values: Sequence[float], **header: str) -> dict[str, Any]:
    """:func:`cache_document` of every config of an autotile space, row ``i`` = ``config_at(i)``."""
    names = list(space.names)
    domains = {k.name: list(k.values) for k in space.knobs}
    configs = (space.config_at(i) for i in range(len(space)))
    return cache_document(names, domains, configs, values, **header)


def write_cache(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Write a cache document where Kernel Tuner reads it as a closed, finished cache.

    Kernel Tuner appends ``}\\n}`` to a file that does not end in ``}}}`` or
    ``}\\n}``; compact JSON with ``cache`` last ends in ``}}}``.
    """
    path = Path(path)
    if path.suffix != ".json":
        raise ValueError(f"Kernel Tuner reads caches named *.json, got {path.name}")
    if list(doc)[-1] != "cache":
        raise ValueError(f"'cache' must be the last key of the document, got {list(doc)}")
    text = json.dumps(doc, separators=(",", ":"))
    path.write_text(text)
    return path


def distinct_trajectory(results: Iterable[Mapping[str, Any] | None], names: Sequence[str],
                        objective: str = "time") -> tuple[list[str], list[float]]:
    """Kernel Tuner's accounting of a run: the objective of each distinct config, in order.

    Parameters
    ----------
    results : iterable of dict or None
        ``tune_kernel``'s result list, in evaluation order. ``None`` (budget
        exhausted) and configs outside the space (``__error__`` an
        ``InvalidConfig``: no function evaluation) are skipped, as are repeats.
    names : sequence of str
        ``tune_params_keys``.
    objective : str, default="time"

    Returns
    -------
    keys : list of str
        Cache keys of the distinct configs, first evaluation first.
    values : list of float
        Their objective; ``inf`` for a failed config.
    """
    seen: set[str] = set()
    keys: list[str] = []
    vals: list[float] = []
    for r in results:
        if r is None:
            continue
        err = r.get("__error__")
        if err is not None and type(err).__name__ == "InvalidConfig":
            continue
        key = ",".join(str(r[n]) for n in names)
        if key in seen:
            continue
        seen.add(key)
        keys.append(key)
        v = r.get(objective)
        ok = err is None and isinstance(v, (int, float)) and math.isfinite(float(v))
        vals.append(float(v) if ok else math.inf)
    return keys, vals


def _read(path: str) -> tuple[str, list[str], dict[str, list[Any]], frozenset[tuple[Any, ...]]]:
    if path not in _DOCS:  # one parse per process and file (explicit cache)
        doc = json.loads(Path(path).read_text())
        names = list(doc["tune_params_keys"])
        allowed = frozenset(tuple(r[n] for n in names) for r in doc["cache"].values())
        _DOCS[path] = (doc["kernel_name"], names, doc["tune_params"], allowed)
    return _DOCS[path]


@contextlib.contextmanager
def _seeded_latin_hypercube(seed: int) -> Iterator[None]:
    """Within the block, ``scipy.stats.qmc.LatinHypercube`` draws from ``default_rng(seed)``."""
    from scipy.stats import qmc

    original = qmc.LatinHypercube
    rng = np.random.default_rng([int(seed), 17])

    class Seeded(original):  # type: ignore[misc, valid-type]
        def __init__(self, d: int, **kwargs: Any) -> None:
            if kwargs.get("rng") is None and kwargs.get("seed") is None:
                kwargs["rng"] = rng
            super().__init__(d, **kwargs)

    qmc.LatinHypercube = Seeded
    try:
        yield
    finally:
        qmc.LatinHypercube = original


def run_strategy(cache_path: str | Path, strategy: str, seed: int, budget: int,
                 options: Mapping[str, Any] | None = None) -> tuple[list[str], list[float], float]:
    """Run one Kernel Tuner strategy in simulation mode on a cache file.

    Parameters
    ----------
    cache_path : str or Path
        A file written by :func:`write_cache`.
    strategy : str
        A name of ``kernel_tuner.interface.strategy_map`` (``"pso"``, ...).
    seed : int
        Seeds ``random`` and ``numpy.random`` before the run.
    budget : int
        ``max_fevals``: distinct configs.
    options : mapping, optional
        More ``strategy_options`` (the strategy's defaults otherwise).

    Returns
    -------
    keys, values : list
        :func:`distinct_trajectory` of the run (may be shorter than
        ``budget`` when the strategy stops on its own, e.g. after its
        ``maxiter`` generations).
    cpu_s : float
        ``time.process_time`` of the ``tune_kernel`` call.
    """
    import kernel_tuner
    from constraint import FunctionConstraint

    path = str(Path(cache_path).resolve())
    kernel_name, names, tune_params, allowed = _read(path)

    def in_table(*vals: Any) -> bool:
        return vals in allowed

    opts = {"max_fevals": int(budget), **(options or {})}
    random.seed(seed)
    np.random.seed(seed)
    c0 = time.process_time()
    with warnings.catch_warnings(), _seeded_latin_hypercube(seed):
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            kernel_name, "", (1,), [], tune_params,
            restrictions=[FunctionConstraint(in_table)], cache=path, simulation_mode=True,
            strategy=strategy, strategy_options=opts, quiet=True, verbose=False)
    cpu = time.process_time() - c0
    keys, vals = distinct_trajectory(results, names)
    return keys[:budget], vals[:budget], cpu
