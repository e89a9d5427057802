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
