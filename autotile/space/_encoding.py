"""Feature encoding of configs for cost models: one row of floats per config.

:class:`SpaceEncoding` is the part of :class:`~autotile.space.Space` that
cost models use. Each knob encodes its own values (:meth:`Knob.encode
<autotile.space.Knob.encode>`: log2, value, one-hot or item positions); a
knob of at most ``_TABLE_LIMIT`` values is encoded through a cached table
indexed by value index (cleared by ``Space.clear_cache``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from autotile.errors import InvalidConfigError
from autotile.space._knob import Knob

__all__ = ["SpaceEncoding"]

_TABLE_LIMIT = 1 << 16


class SpaceEncoding:
    """Feature encoding of a :class:`~autotile.space.Space` (a mixin of ``Space``)."""

    if TYPE_CHECKING:  # provided by Space
        _knobs: tuple[Knob, ...]
        _tables: dict[str, npt.NDArray[np.float64]]

    @property
    def n_features(self) -> int:
        """Total number of encoded features."""
        return sum(k.n_features for k in self._knobs)

    @property
    def feature_names(self) -> list[str]:
        """Names of the encoded features, knob by knob."""
        return [f for k in self._knobs for f in k.feature_names]

    def _table(self, knob: Knob) -> npt.NDArray[np.float64]:
        if knob.name not in self._tables:
            self._tables[knob.name] = np.array(
                [knob.encode(v) for v in knob.values], dtype=np.float64
            ).reshape(len(knob), knob.n_features)
        return self._tables[knob.name]

    def encode(
        self, configs: Mapping[str, Any] | Iterable[Mapping[str, Any]]
    ) -> npt.NDArray[np.float64]:
        """Encode configs as a feature matrix for cost models.

        Parameters
        ----------
        configs : Config or iterable of Config
            Configs (or mappings) whose values lie in the knobs; constraints
            are not checked.

        Returns
        -------
        ndarray of shape (n_configs, n_features), dtype float64
            Columns named by ``feature_names``: log2 for :class:`PowerOfTwo`
            and :class:`Divisors`, the value for :class:`IntRange` and
            :class:`Boolean`, one-hot for :class:`Choice`, item positions
            for :class:`Permutation`.
        """
        cfgs = [configs] if isinstance(configs, Mapping) else list(configs)
        cols = []
        for knob in self._knobs:
            try:
                vals = [c[knob.name] for c in cfgs]
            except KeyError:
                raise InvalidConfigError(f"missing knob {knob.name!r}") from None
            if len(knob) <= _TABLE_LIMIT:
                idx = np.fromiter((knob.index(v) for v in vals), dtype=np.int64, count=len(vals))
                cols.append(self._table(knob)[idx])
            else:
                cols.append(
                    np.array([knob.encode(v) for v in vals], dtype=np.float64).reshape(
                        len(vals), knob.n_features
                    )
                )
        if not cols:
            return np.zeros((len(cfgs), 0))
        return np.hstack(cols)
