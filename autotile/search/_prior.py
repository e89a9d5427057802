"""``Prior``: what earlier studies or tables of the same kernel say about a new space."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from autotile.search._codec import IndexCodec
from autotile.space import Space

__all__ = ["Prior"]

Source = tuple[Space, Any] | Iterable[tuple[Mapping[str, Any], float]]


def _value_map(src_values: Sequence[Any], dst_values: Sequence[Any]) -> npt.NDArray[np.int64]:
    """Position in ``dst_values`` of each of ``src_values`` (-1 where there is none).

    A value absent from the target knob maps to the nearest target value
    when both are positive numbers (nearest in log scale: split factors and
    block sizes of another problem size), else to nothing.
    """
    pos = {v: i for i, v in enumerate(dst_values)}
    out = np.full(len(src_values), -1, dtype=np.int64)
    numeric = [v for v in dst_values if isinstance(v, (int, float)) and not isinstance(v, bool)
               and v > 0]
    for i, v in enumerate(src_values):
        if v in pos:
            out[i] = pos[v]
        elif (numeric and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0):
            near = min(numeric, key=lambda w: (abs(math.log(w) - math.log(v)), w))
            out[i] = pos[near]
    return out


class Prior:
    """Configs of a new space ranked by earlier studies or tables of the same kernel.

    Each source is the kernel tuned on other hardware or another problem
    size: a brute-forced table (a Kernel Tuner cache of another GPU, a
    sweep of another size) or the trials of an earlier study. Its values
    are turned into percentiles within the source (0 = its best config,
    1 = its worst; failed configs 1), so sources with other units or
    scales (milliseconds on two GPUs, misses of two cache sizes) weigh the
    same. A config's prior score is the mean of its percentiles over the
    sources that hold it, and :attr:`ranked` orders the configs of
    ``space`` that some source holds by that score, best first (AutoTVM's
    ``load_history`` transfer, with the sources' best configs tried first).

    Configs are matched knob by knob by value; a numeric value the new
    space lacks maps to its nearest value in log scale (a split factor of
    32 from ``gemm_space(32)`` stays 32 in ``gemm_space(64)``, a block
    size of 1024 maps to the largest the new space has). A config that
    does not map to a valid config of ``space`` (a missing knob, a
    constraint) is left out.

    Parameters
    ----------
    space : Space
        The space to be searched.
    sources : sequence
        Each either ``(source_space, values)``, with ``values`` of shape
        (len(source_space),), lower is better, NaN or inf for a failed
        config (e.g. ``(rec.space, rec.truth.column("time"))``), or an
        iterable of ``(config, value)`` pairs (configs as mappings of knob
        names to values, lower is better).

    Attributes
    ----------
    ranked : ndarray of shape (n_ranked,), int64
        Space indices with a prior score, best first (ties in the order the
        sources list them).
    scores : ndarray of shape (n_ranked,), float64
        Their mean percentiles, in [0, 1].
    n_sources : int
        Number of sources.

    Raises
    ------
    ValueError
        If a source is neither form, or a ``values`` array does not have
        one value per config of its space (naming the source and the
        lengths).

    Examples
    --------
    >>> from autotile.space import Space, PowerOfTwo
    >>> space = Space([PowerOfTwo("block", 16, 256)])
    >>> Prior(space, [[({"block": 64}, 1.0), ({"block": 256}, 3.0)]]).ranked.tolist()
    [2, 4]
    """

    def __init__(self, space: Space, sources: Sequence[Source]) -> None:
        self.space = space
        codec = IndexCodec(space)
        sums = np.zeros(0)
        counts = np.zeros(0)
        order: dict[int, int] = {}  # space index -> slot
        for s, source in enumerate(sources):
            idx, pct = self._source(space, codec, s, source)
            for i, p in zip(idx.tolist(), pct.tolist()):
                slot = order.setdefault(i, len(order))
                if slot >= sums.size:
                    sums = np.concatenate([sums, np.zeros(max(1024, sums.size))])
                    counts = np.concatenate([counts, np.zeros(max(1024, counts.size))])
                sums[slot] += p
                counts[slot] += 1
        self.n_sources = len(sources)
        n = len(order)
        keys = np.fromiter(order, dtype=np.int64, count=n)
        mean = sums[:n] / np.maximum(counts[:n], 1)
        rank = np.argsort(mean, kind="stable")
        self.ranked: npt.NDArray[np.int64] = keys[rank]
        self.scores: npt.NDArray[np.float64] = mean[rank]

    @staticmethod
    def _source(space: Space, codec: IndexCodec, s: int, source: Any,
                ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Target space indices and percentiles of one source."""
        if (isinstance(source, tuple) and len(source) == 2 and isinstance(source[0], Space)):
            src, values = source
            v = np.asarray(values, dtype=np.float64).reshape(-1)
            if v.shape[0] != len(src):
                raise ValueError(f"prior source {s} needs one value per config of its space "
                                 f"({len(src)}), got {v.shape[0]} values")
            src_idx = np.arange(len(src), dtype=np.int64)
            cfgs = None
        else:
            try:
                pairs = [(c, float(v)) for c, v in source]
            except (TypeError, ValueError):
                raise ValueError(
                    f"prior source {s} must be (space, values) or an iterable of (config, "
                    f"value) pairs, got {type(source).__name__}") from None
            src, cfgs = None, [c for c, _ in pairs]
            v = np.array([x for _, x in pairs], dtype=np.float64)
            src_idx = np.arange(len(pairs), dtype=np.int64)
        v = np.where(np.isfinite(v), v, np.inf)
        # percentile within the source: 0 its best, 1 its worst (ties share the lower one)
        n = v.shape[0]
        order = np.argsort(v, kind="stable")
        pct = np.empty(n)
        sorted_v = v[order]
        first = np.searchsorted(sorted_v, sorted_v, side="left")
        pct[order] = first / max(n - 1, 1)
        pct[~np.isfinite(v)] = 1.0
        if src is not None:
            idx, ok = Prior._map_space(space, codec, src)
        else:
            idx, ok = Prior._map_configs(space, codec, cfgs or [])
        keep = ok[src_idx]
        return idx[keep], pct[keep]

    @staticmethod
    def _map_space(space: Space, codec: IndexCodec, src: Space,
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """Target index of every config of ``src``, and which map to a valid one."""
        n = len(src)
        if set(src.names) != set(space.names) or not codec.fast:
            return Prior._map_configs(space, codec, [src.config_at(i) for i in range(n)])
        src_codec = IndexCodec(src)
        if not src_codec.fast:
            return Prior._map_configs(space, codec, [src.config_at(i) for i in range(n)])
        d_src = src_codec.digits(np.arange(n, dtype=np.int64))
        d = np.empty((n, len(space.knobs)), dtype=np.int64)
        ok = np.ones(n, dtype=bool)
        for j, knob in enumerate(space.knobs):
            js = src.names.index(knob.name)
            table = _value_map(src.knobs[js].values, knob.values)
            d[:, j] = table[d_src[:, js]]
            ok &= d[:, j] >= 0
        idx, valid = codec.from_product(codec.compose(np.where(d >= 0, d, 0)))
        return idx, ok & valid

    @staticmethod
    def _map_configs(space: Space, codec: IndexCodec, cfgs: Sequence[Mapping[str, Any]],
                     ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        n = len(cfgs)
        idx = np.zeros(n, dtype=np.int64)
        ok = np.zeros(n, dtype=bool)
        tables: dict[str, dict[Any, Any]] = {}
        for r, cfg in enumerate(cfgs):
            mapped = {}
            for knob in space.knobs:
                if knob.name not in cfg:
                    break
                v = cfg[knob.name]
                if v not in knob.values:
                    memo = tables.setdefault(knob.name, {})
                    if v not in memo:
                        pos = _value_map([v], knob.values)[0]
                        memo[v] = None if pos < 0 else knob.values[int(pos)]
                    v = memo[v]
                    if v is None:
                        break
                mapped[knob.name] = v
            else:
                if space.is_valid(mapped):
                    idx[r] = space.index_of(mapped)
                    ok[r] = True
        return idx, ok
