"""Kernel shapes: NumPy integer sizes are accepted, a tuple shape is refused clearly."""

from __future__ import annotations

import numpy as np
import pytest

from autotile.errors import InvalidConfigError
from autotile.measure import (
    KernelModelMeasurer,
    flash_attention_space,
    matmul_space,
    persistent_matmul_space,
    softmax_space,
)
from autotile.measure.gpu._triton_measurer import TritonMeasurer

SHAPE = {"M": 64, "N": 64, "K": 64}


def test_shape_tuple_is_refused_with_the_mapping_form():
    with pytest.raises(TypeError, match=r"shape must be a mapping .*'M': 1024.*got tuple "
                       r"shape=\(64, 64, 64\)"):
        KernelModelMeasurer("matmul", (64, 64, 64))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="TritonMeasurer: shape must be a mapping"):
        TritonMeasurer("matmul", (64, 64, 64))  # type: ignore[arg-type]  # no GPU needed


def test_numpy_integer_sizes_are_accepted_as_ints():
    i = np.int64(64)
    assert matmul_space(i, np.int32(64), 64).name == "matmul[64x64x64,float16]"
    assert len(matmul_space(i, i, i)) == len(matmul_space(64, 64, 64))
    assert len(persistent_matmul_space(i, i, i)) == len(persistent_matmul_space(64, 64, 64))
    assert len(softmax_space(np.uint16(8), i)) == len(softmax_space(8, 64))
    assert len(flash_attention_space(i, np.int8(32))) == len(flash_attention_space(64, 32))
    m = KernelModelMeasurer("matmul", {"M": i, "N": i, "K": i})
    assert m.shape == SHAPE and all(type(v) is int for v in m.shape.values())
    ref = KernelModelMeasurer("matmul", SHAPE)
    cfg = m.space.config_at(0)
    assert m.measure(cfg).metrics == ref.measure(cfg).metrics
    assert m.fingerprint() == ref.fingerprint()


@pytest.mark.parametrize("bad", [True, 64.0, "64", 0, np.int64(-1)])
def test_non_integral_or_non_positive_sizes_are_still_refused(bad):
    with pytest.raises(InvalidConfigError, match=r"M must be a positive int, got M="):
        matmul_space(bad, 64, 64)
