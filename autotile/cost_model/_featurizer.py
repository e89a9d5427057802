"""Featurizers: turn configs into the feature matrix ``X`` of a cost model.

:class:`KnobFeaturizer` is the knob encoding of any space
(:meth:`autotile.space.Space.encode`); :class:`LoopFeaturizer` appends the
loop-structure features of the config's lowered schedule (see
:mod:`autotile.cost_model._loop_features`). :func:`featurizer_for` picks one.

Featurizers are stateless transformers: ``transform`` works without
``fit`` (``fit`` only sets ``feature_names_`` and ``n_features_out_``, which
``transform`` also sets on first use).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.cost_model._gemm_features import GemmLoopFeatures
from autotile.cost_model._loop_features import loop_feature_names, loop_nest_features
from autotile.errors import InvalidConfigError
from autotile.space import Config, Space

__all__ = ["KnobFeaturizer", "LoopFeaturizer", "featurizer_for", "is_gemm_space"]

_GEMM_KNOBS = ("i_factor", "j_factor", "k_factor", "order")
_METHODS = ("auto", "analytic", "lower")


def is_gemm_space(space: Space) -> bool:
    """Whether ``space`` has the knobs of :func:`autotile.space.gemm_space`.

    Parameters
    ----------
    space : Space
        Any space.

    Returns
    -------
    bool
        True if it has knobs ``i_factor``, ``j_factor``, ``k_factor`` and
        ``order`` and no knobs other than ``pack_tile`` and ``row_width``.
    """
    names = set(space.names)
    return set(_GEMM_KNOBS) <= names and names <= set(_GEMM_KNOBS) | {"pack_tile", "row_width"}


def _as_configs(space: Space, configs: Mapping[str, Any] | Iterable[Mapping[str, Any]]
                ) -> list[Config]:
    items = [configs] if isinstance(configs, Mapping) else list(configs)
    return [c if isinstance(c, Config) else space.validate(c) for c in items]


class KnobFeaturizer:
    """Features = the space's knob encoding, for any space.

    Parameters
    ----------
    space : Space
        The space whose configs are featurized (e.g. a Kernel Tuner replay
        space).

    Attributes
    ----------
    feature_names_ : list of str
        ``space.feature_names``.
    n_features_out_ : int
        ``len(feature_names_)``.

    Examples
    --------
    >>> from autotile.space import gemm_space
    >>> space = gemm_space(64)
    >>> KnobFeaturizer(space).transform(space.sample(0, 3)).shape
    (3, 9)
    """

    def __init__(self, space: Space) -> None:
        self.space = space

    def fit(self, configs: Iterable[Mapping[str, Any]] | None = None, y: Any = None,
            ) -> KnobFeaturizer:
        """Set ``feature_names_``; the configs are not used. Returns self."""
        self.feature_names_ = list(self.space.feature_names)
        self.n_features_out_ = len(self.feature_names_)
        return self

    def transform(self, configs: Mapping[str, Any] | Iterable[Mapping[str, Any]]
                  ) -> npt.NDArray[np.float64]:
        """Encode configs.

        Parameters
        ----------
        configs : Config, Mapping or iterable of them
            Configs of ``space``; plain mappings are validated.

        Returns
        -------
        ndarray of shape (n_configs, n_features), dtype float64
            Columns named by ``feature_names_``.

        Raises
        ------
        InvalidConfigError
            If a plain mapping is not a valid config of ``space``.
        """
        if not hasattr(self, "feature_names_"):
            self.fit()
        cfgs = _as_configs(self.space, configs)
        return np.asarray(self.space.encode(cfgs), dtype=np.float64).reshape(
            len(cfgs), self.n_features_out_)

    def transform_digits(self, digits: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Encode configs given as knob value positions (vectorised).

        Equal to :meth:`transform` of the configs, without building them:
        searchers keep configs as index arrays.

        Parameters
        ----------
        digits : ndarray of shape (n_configs, n_knobs), int
            Position of each knob's value in ``space.knobs[j].values``.

        Returns
        -------
        ndarray of shape (n_configs, n_features), dtype float64
        """
        if not hasattr(self, "feature_names_"):
            self.fit()
        if not hasattr(self, "_knob_tables"):
            self._knob_tables = [
                np.array([k.encode(v) for v in k.values], dtype=np.float64).reshape(
                    len(k), k.n_features) for k in self.space.knobs]
        d = np.asarray(digits, dtype=np.int64).reshape(-1, len(self.space.knobs))
        cols = [t[d[:, j]] for j, t in enumerate(self._knob_tables)]
        return np.hstack(cols) if cols else np.zeros((d.shape[0], 0))

    def fit_transform(self, configs: Iterable[Mapping[str, Any]], y: Any = None,
                      ) -> npt.NDArray[np.float64]:
        """``fit(configs).transform(configs)``."""
        return self.fit(configs).transform(configs)

    def get_feature_names_out(self) -> npt.NDArray[np.object_]:
        """``feature_names_`` as an object array (scikit-learn convention)."""
        if not hasattr(self, "feature_names_"):
            self.fit()
        return np.asarray(self.feature_names_, dtype=object)

    def clear_cache(self) -> None:
        """Nothing is cached; present for interface symmetry."""


class LoopFeaturizer(KnobFeaturizer):
    """Knob encoding plus AutoTVM-style loop features of the lowered schedule.

    Per loop level (outer to inner, padded to ``max_depth``): log2 extent;
    per buffer: stride in bytes, bytes and cache lines touched under the
    level, and reuse ratio; then the log2 number of loop steps. Exact
    definitions: :mod:`autotile.cost_model._loop_features`.

    Parameters
    ----------
    space : Space
        A schedule space. For :func:`autotile.space.gemm_space` spaces no
        ``schedule_fn`` is needed.
    n : int, optional
        GEMM size; default ``space["i_factor"].n``. Used only for GEMM spaces
        with the default ``schedule_fn``.
    schedule_fn : callable, optional
        ``schedule_fn(config)`` returns an :mod:`autotile.te` schedule, or a
        tuple whose first item is one (as :func:`autotile.space.gemm_schedule`
        does). Default: ``gemm_schedule(config, n)``.
    max_depth : int, optional
        Loop levels in the features; default the depth of the schedule of
        ``space.config_at(0)`` (6 for GEMM).
    line_bytes : int, default=64
        Cache line size in bytes for the ``touched_lines`` features.
    method : {"auto", "analytic", "lower"}, default="auto"
        ``"lower"`` lowers every config with :func:`autotile.te.lower` (rows
        are cached per config); ``"analytic"`` computes GEMM features
        vectorised from the knob values (GEMM spaces with the default
        ``schedule_fn`` only); ``"auto"`` picks ``"analytic"`` when it
        applies. Both give the same numbers (tested).

    Attributes
    ----------
    feature_names_ : list of str
        ``space.feature_names`` then the loop feature names
        (``"L{level}.extent:log2"``, ``"L{level}.{buffer}.{kind}"``,
        ``"n_loop_steps:log2"``).
    n_features_out_ : int
        ``len(feature_names_)``; 9 + 6 * 13 + 1 = 88 for ``gemm_space(64)``.
    method_ : str
        The method in use, ``"analytic"`` or ``"lower"``.

    Raises
    ------
    ValueError
        From ``fit``/``transform``: if ``method`` is unknown, ``"analytic"``
        is asked for a space it does not apply to, there is no
        ``schedule_fn`` for a non-GEMM space, or ``line_bytes < 1``.

    References
    ----------
    T. Chen et al., "Learning to Optimize Tensor Programs", NeurIPS 2018,
    §4 and Appendix (itervar features); TVM ``autotvm/feature.py``.

    Examples
    --------
    >>> from autotile.space import gemm_space
    >>> space = gemm_space(64)
    >>> LoopFeaturizer(space).transform(space.sample(0, 2)).shape
    (2, 88)
    """

    def __init__(self, space: Space, n: int | None = None,
                 schedule_fn: Callable[[Config], Any] | None = None,
                 max_depth: int | None = None, line_bytes: int = 64,
                 method: str = "auto") -> None:
        self.space = space
        self.n = n
        self.schedule_fn = schedule_fn
        self.max_depth = max_depth
        self.line_bytes = line_bytes
        self.method = method

    # -- helpers ----------------------------------------------------------------------
    def _n(self) -> int:
        if self.n is not None:
            return int(self.n)
        return int(getattr(self.space["i_factor"], "n"))

    def _lower(self, config: Mapping[str, Any]) -> Any:
        from autotile import te

        if self.schedule_fn is None:
            from autotile.space import gemm_schedule

            sched: Any = gemm_schedule(config, self._n())
        else:
            sched = self.schedule_fn(config)  # type: ignore[arg-type]
        if isinstance(sched, tuple):
            sched = sched[0]
        return te.lower(sched)

    def fit(self, configs: Iterable[Mapping[str, Any]] | None = None, y: Any = None,
            ) -> LoopFeaturizer:
        """Check the parameters and set ``feature_names_``. Returns self.

        Parameters
        ----------
        configs, y : ignored
            Present for scikit-learn compatibility.

        Returns
        -------
        LoopFeaturizer
            self.

        Raises
        ------
        ValueError
            See the class docstring.
        """
        if self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got method={self.method!r}")
        if int(self.line_bytes) < 1:
            raise ValueError(f"line_bytes must be >= 1, got line_bytes={self.line_bytes!r}")
        gemm = is_gemm_space(self.space)
        if self.schedule_fn is None and not gemm:
            raise ValueError(
                f"space {self.space!r} is not a GEMM schedule space (knobs {_GEMM_KNOBS}); "
                "pass schedule_fn, or use KnobFeaturizer")
        analytic_ok = gemm and self.schedule_fn is None
        if self.method == "analytic" and not analytic_ok:
            raise ValueError("method='analytic' needs a GEMM space and schedule_fn=None")
        self.method_ = "analytic" if (self.method != "lower" and analytic_ok) else "lower"
        nest = self._lower(self.space.config_at(0))
        depth = len(nest.loops) if self.max_depth is None else int(self.max_depth)
        if self.method_ == "analytic" and depth != 6:
            raise ValueError(f"GEMM nests have 6 loops; got max_depth={depth}")
        self.max_depth_ = depth
        self._buffer_names = [b.name for b in nest.buffers]
        self.feature_names_ = list(self.space.feature_names) + loop_feature_names(
            self._buffer_names, depth)
        self.n_features_out_ = len(self.feature_names_)
        self._gemm = (GemmLoopFeatures(self._n(), self._lower, int(self.line_bytes))
                      if self.method_ == "analytic" else None)
        self._rows: dict[Config, npt.NDArray[np.float64]] = {}
        return self

    def clear_cache(self) -> None:
        """Empty the per-config row cache and the GEMM line tables."""
        if hasattr(self, "_rows"):
            self._rows.clear()
        if getattr(self, "_gemm", None) is not None:
            self._gemm.clear_cache()  # type: ignore[union-attr]

    def loop_features(self, configs: Mapping[str, Any] | Iterable[Mapping[str, Any]]
                      ) -> npt.NDArray[np.float64]:
        """Only the loop-structure columns (no knob encoding).

        Parameters
        ----------
        configs : Config, Mapping or iterable of them
            Configs of ``space``.

        Returns
        -------
        ndarray of shape (n_configs, n_loop_features), dtype float64
        """
        if not hasattr(self, "feature_names_"):
            self.fit()
        cfgs = _as_configs(self.space, configs)
        if self._gemm is not None:
            return self._gemm.features(cfgs)
        n_loop = self.n_features_out_ - self.space.n_features
        out = np.empty((len(cfgs), n_loop), dtype=np.float64)
        for r, cfg in enumerate(cfgs):
            row = self._rows.get(cfg)
            if row is None:
                row = loop_nest_features(self._lower(cfg), self.max_depth_,
                                         int(self.line_bytes))
                self._rows[cfg] = row
            out[r] = row
        return out

    def transform_digits(self, digits: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Featurize configs given as knob value positions.

        Equal to :meth:`transform` of the configs. With the analytic method
        the split factors and loop orders are gathered from the knobs'
        values by position, so no config is built; otherwise the configs
        are built and featurized one by one.

        Parameters
        ----------
        digits : ndarray of shape (n_configs, n_knobs), int
            Position of each knob's value in ``space.knobs[j].values``.

        Returns
        -------
        ndarray of shape (n_configs, ``n_features_out_``), dtype float64
        """
        if not hasattr(self, "feature_names_"):
            self.fit()
        d = np.asarray(digits, dtype=np.int64).reshape(-1, len(self.space.knobs))
        knobs = self.space.knobs
        if self._gemm is None:
            cfgs = [Config._trusted(tuple((k.name, k.values[int(i)]) for k, i in zip(knobs, row)))
                    for row in d]
            return self.transform(cfgs)
        if not hasattr(self, "_value_tables"):
            pos = {k.name: j for j, k in enumerate(knobs)}
            self._value_tables = (
                [(pos[a], np.asarray(knobs[pos[a]].values, dtype=np.int64))
                 for a in ("i_factor", "j_factor", "k_factor")],
                (pos["order"], np.array([self._gemm.order_ids(v) for v in
                                         knobs[pos["order"]].values], dtype=np.int64)),
                [j for j, k in enumerate(knobs) if k.name not in _GEMM_KNOBS])
        factors, (jo, order_tab), extra_cols = self._value_tables
        f = np.stack([vals[d[:, j]] for j, vals in factors], axis=1)
        ids = order_tab[d[:, jo]]
        groups: dict[tuple[tuple[str, Any], ...], list[int]] = {}
        if extra_cols:
            combos, inverse = np.unique(d[:, extra_cols], axis=0, return_inverse=True)
            for c, combo in enumerate(combos):
                key = tuple((knobs[j].name, knobs[j].values[int(v)])
                            for j, v in zip(extra_cols, combo))
                groups[key] = np.flatnonzero(inverse.reshape(-1) == c).tolist()
        else:
            groups[()] = list(range(d.shape[0]))
        if d.shape[0] == 0:
            return np.zeros((0, self.n_features_out_), dtype=np.float64)
        return np.hstack([KnobFeaturizer.transform_digits(self, d),
                          self._gemm.features_of(f, ids, groups)])

    def transform(self, configs: Mapping[str, Any] | Iterable[Mapping[str, Any]]
                  ) -> npt.NDArray[np.float64]:
        """Featurize configs.

        Parameters
        ----------
        configs : Config, Mapping or iterable of them
            Configs of ``space``; plain mappings are validated.

        Returns
        -------
        ndarray of shape (n_configs, ``n_features_out_``), dtype float64
            Knob encoding, then loop features; columns named by
            ``feature_names_``.

        Raises
        ------
        InvalidConfigError
            If a plain mapping is not a valid config of ``space``.
        """
        if not hasattr(self, "feature_names_"):
            self.fit()
        cfgs = _as_configs(self.space, configs)
        if not cfgs:
            return np.zeros((0, self.n_features_out_), dtype=np.float64)
        return np.hstack([np.asarray(self.space.encode(cfgs), dtype=np.float64),
                          self.loop_features(cfgs)])


def featurizer_for(space: Space, **kwargs: Any) -> KnobFeaturizer:
    """Return a fitted featurizer suited to ``space``.

    Parameters
    ----------
    space : Space
        Any space.
    **kwargs
        Passed to :class:`LoopFeaturizer` (``n``, ``line_bytes``, ...);
        ignored for non-GEMM spaces unless ``schedule_fn`` is given.

    Returns
    -------
    KnobFeaturizer or LoopFeaturizer
        :class:`LoopFeaturizer` for GEMM schedule spaces (knobs
        ``i_factor``, ``j_factor``, ``k_factor``, ``order``) or when
        ``schedule_fn`` is given; :class:`KnobFeaturizer` otherwise.

    Raises
    ------
    InvalidConfigError
        If ``space`` is not an :class:`autotile.space.Space`.
    """
    if not isinstance(space, Space):
        raise InvalidConfigError(f"space must be an autotile Space, got {type(space).__name__}")
    if is_gemm_space(space) or kwargs.get("schedule_fn") is not None:
        return LoopFeaturizer(space, **kwargs).fit()
    return KnobFeaturizer(space).fit()
