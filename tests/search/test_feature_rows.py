"""Feature rows shared by the searchers of one space (``autotile.search._model``)."""

from __future__ import annotations

import numpy as np

from autotile.cost_model import featurizer_for
from autotile.search._codec import IndexCodec, neighbour_positions
from autotile.search._model import _MAX_SHARED, _SHARED_ROWS, ModelScorer, clear_feature_cache
from autotile.space import Permutation, gemm_space


def test_default_featurizer_rows_are_shared_per_space_and_exact():
    clear_feature_cache()
    space = gemm_space(16)
    a = ModelScorer(space, "xgb", "auto", IndexCodec(space))
    b = ModelScorer(space, "xgb", None, IndexCodec(space))
    assert a._store is b._store
    idx = np.array([5, 0, 5, 17, len(space) - 1], dtype=np.int64)
    want = featurizer_for(space).transform([space.config_at(int(i)) for i in idx])
    np.testing.assert_array_equal(a.features(idx), want)
    assert a._store._n_rows == 4                      # 5 appears twice: one row
    np.testing.assert_array_equal(b.features(idx[::-1]), want[::-1])
    assert b._store._n_rows == 4                      # b reused a's rows
    other = gemm_space(16)                            # an equal but distinct space
    c = ModelScorer(other, "xgb", "auto", IndexCodec(other))
    assert c._store is not a._store
    knob = ModelScorer(space, "xgb", "knob", IndexCodec(space))
    assert knob._store is None
    np.testing.assert_array_equal(knob.features(idx), space.encode(
        [space.config_at(int(i)) for i in idx]))


def test_shared_rows_keep_the_last_spaces_only():
    clear_feature_cache()
    spaces = [gemm_space(8) for _ in range(_MAX_SHARED + 2)]
    for s in spaces:
        ModelScorer(s, "xgb", "auto", IndexCodec(s))
    assert len(_SHARED_ROWS) == _MAX_SHARED
    assert [v[0] for v in _SHARED_ROWS.values()] == spaces[2:]
    clear_feature_cache()
    assert not _SHARED_ROWS


def test_neighbour_positions_match_the_knob():
    knob = Permutation("order", ("a", "b", "c", "d"))
    table = neighbour_positions(knob)
    assert len(table) == 24
    for v, row in zip(knob.values, table):
        assert [knob.values[i] for i in row] == knob.neighbours(v)
    assert len(table[0]) == 9                         # (n - 1) ** 2 for n = 4
    assert neighbour_positions(Permutation("order", ("a", "b", "c", "d"))) is table
