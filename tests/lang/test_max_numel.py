"""Blocks are limited to Triton's TRITON_MAX_TENSOR_NUMEL = 2**20 elements."""

import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit


@jit
def _arange(o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, offs, mask=offs < 4)


@jit
def _full(o_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.full((M, N), 7, tl.int32)
    tl.store(o_ptr + tl.arange(0, 4), tl.sum(tl.sum(x, axis=1), axis=0) + tl.zeros((4,), tl.int32))


@jit
def _zeros(o_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.zeros((M, N), tl.int32)
    total = tl.sum(tl.sum(x, axis=1), axis=0)
    tl.store(o_ptr + tl.arange(0, 4), total + 1 + tl.zeros((4,), tl.int32))


def test_arange_at_limit_works():
    out = np.zeros(4, np.int32)
    _arange[(1,)](out, 2**20)
    np.testing.assert_array_equal(out, [0, 1, 2, 3])


@pytest.mark.parametrize("block", [2**21, 2**30])
def test_arange_over_limit_raises(block):
    with pytest.raises(LangError, match=rf"numel \({block}\) exceeds triton maximum tensor "
                                        r"numel \(1048576\)"):
        _arange[(1,)](np.zeros(4, np.int32), block)


def test_full_zeros_at_limit_work():
    out = np.zeros(4, np.int32)
    _full[(1,)](out, 1024, 1024)
    np.testing.assert_array_equal(out, [7 * 2**20] * 4)
    _zeros[(1,)](out, 2048, 512)
    np.testing.assert_array_equal(out, [1] * 4)


@pytest.mark.parametrize("kernel", [_full, _zeros])
def test_full_zeros_over_limit_raise(kernel):
    with pytest.raises(LangError, match=r"numel \(2097152\) exceeds triton maximum tensor "
                                        r"numel \(1048576\)"):
        kernel[(1,)](np.zeros(4, np.int32), 2048, 1024)
    with pytest.raises(LangError, match=r"numel \(1073741824\) exceeds"):
        kernel[(1,)](np.zeros(4, np.int32), 2**15, 2**15)
