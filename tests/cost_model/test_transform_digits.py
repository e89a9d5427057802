"""Featurizing configs from knob positions gives the rows of ``transform``."""

from __future__ import annotations

import numpy as np

from autotile.cost_model import KnobFeaturizer, featurizer_for
from autotile.search._codec import IndexCodec
from autotile.space import gemm_space


def test_transform_digits_equals_transform_on_gemm_spaces():
    for n in (16, 64):
        space = gemm_space(n)
        codec = IndexCodec(space)
        idx = np.random.default_rng(n).integers(len(space), size=300)
        for feat in (featurizer_for(space), KnobFeaturizer(space)):
            a = feat.transform(codec.configs(idx))
            b = feat.transform_digits(codec.digits(idx))
            assert a.shape == b.shape == (300, feat.n_features_out_)
            assert np.array_equal(a, b)


def test_gemm_rows_do_not_depend_on_batching():
    # the line-count tables fill lazily, once per missing entry of a batch
    space = gemm_space(32)
    codec = IndexCodec(space)
    idx = np.random.default_rng(1).integers(len(space), size=400)
    whole = featurizer_for(space).transform_digits(codec.digits(idx))
    feat = featurizer_for(space)
    parts = np.vstack([feat.transform_digits(codec.digits(idx[i:i + 7]))
                       for i in range(0, idx.size, 7)])
    assert np.array_equal(whole, parts)
    assert np.array_equal(whole, feat.transform(codec.configs(idx)))
