"""Launcher meta-parameters are checked up front, with the parameter's name in the error
(new-user test: ``matmul(a, b, GROUP_M=2.5)`` failed deep in the interpreter)."""

from __future__ import annotations

import numpy as np
import pytest

import autotile.kernels as K

RNG = np.random.default_rng(0)
A = RNG.standard_normal((32, 32)).astype(np.float16)
B = RNG.standard_normal((32, 32)).astype(np.float16)
X = RNG.standard_normal((4, 64)).astype(np.float32)
Q = RNG.standard_normal((32, 16)).astype(np.float16)

CALLS = {
    "matmul": lambda **kw: K.matmul(A, B, **kw),
    "matmul_persistent": lambda **kw: K.matmul_persistent(A, B, **kw),
    "flash_attention": lambda **kw: K.flash_attention(Q, Q, Q, **kw),
    "softmax_fused": lambda **kw: K.softmax_fused(X, **kw),
    "softmax_naive": lambda **kw: K.softmax_naive(X, **kw),
    "layer_norm": lambda **kw: K.layer_norm(X, np.ones(64, np.float32),
                                            np.zeros(64, np.float32), **kw),
    "l2_norm": lambda **kw: K.l2_norm(X, **kw),
    "add": lambda **kw: K.add(X[0], X[1], **kw),
}


@pytest.mark.parametrize("fn,name,value", [
    ("matmul", "GROUP_M", 2.5),
    ("matmul", "GROUP_M", "8"),
    ("matmul", "GROUP_M", True),
    ("matmul", "BLOCK_M", 32.0),
    ("matmul", "BLOCK_K", "32"),
    ("matmul_persistent", "NUM_SMS", 2.5),
    ("matmul_persistent", "GROUP_M", 1.5),
    ("flash_attention", "BLOCK_M", 32.0),
    ("flash_attention", "BLOCK_N", 16.5),
    ("softmax_fused", "BLOCK_SIZE", 64.0),
    ("softmax_naive", "BLOCK_SIZE", 16.5),
    ("layer_norm", "BLOCK_SIZE", "64"),
    ("l2_norm", "BLOCK", 64.7),
    ("add", "BLOCK_SIZE", 16.0),
])
def test_non_int_meta_parameter_raises_type_error_naming_it(fn, name, value):
    with pytest.raises(TypeError, match=rf"{name} must be an int >= 1, got {name}={value!r}"):
        CALLS[fn](**{name: value})


@pytest.mark.parametrize("fn,name,value,rule", [
    ("matmul", "GROUP_M", 0, "GROUP_M must be an int >= 1"),
    ("matmul_persistent", "NUM_SMS", 0, "NUM_SMS must be an int >= 1"),
    ("softmax_naive", "BLOCK_SIZE", 48, "BLOCK_SIZE must be a power of two"),
    ("add", "BLOCK_SIZE", 0, "BLOCK_SIZE must be an int >= 1"),
    ("add", "BLOCK_SIZE", 24, "BLOCK_SIZE must be a power of two"),
])
def test_bad_meta_parameter_value_raises_value_error_naming_it(fn, name, value, rule):
    with pytest.raises(ValueError, match=rule):
        CALLS[fn](**{name: value})


def test_numpy_integer_meta_parameters_are_accepted():
    c = K.matmul(A, B, BLOCK_M=np.int64(16), BLOCK_N=16, BLOCK_K=np.int32(16),
                 GROUP_M=np.int64(2))
    np.testing.assert_allclose(c.astype(np.float32), K.matmul_reference(A, B, np.float32),
                               rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(K.add(X[0], X[1], BLOCK_SIZE=np.int64(16)), X[0] + X[1])
