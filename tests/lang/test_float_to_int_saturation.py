"""Float -> int conversions saturate (NaN -> 0) in .to() and in store's implicit cast."""

import numpy as np
import pytest

import autotile.lang as tl
from autotile.lang import jit

X = np.array([np.inf, -np.inf, np.nan, 3e9, -3e9, 1e20, 2.7, -2.7], np.float32)


def _ref(dt):
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    vals = [hi, lo, 0, min(3_000_000_000, hi), max(-3_000_000_000, lo), hi, 2, max(-2, lo)]
    return np.array(vals, dt)


@jit
def _store(x_ptr, o_ptr):
    offs = tl.arange(0, 8)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs))


@jit
def _to(x_ptr, o_ptr, DT: tl.constexpr):
    offs = tl.arange(0, 8)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs).to(DT))


DTYPES = ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("batched", [False, True])
def test_store_float_into_int_buffer_saturates(dt, batched):
    out = np.zeros(8, dt)
    _store[(1,)](X, out, batch_programs=batched)
    np.testing.assert_array_equal(out, _ref(dt))


@pytest.mark.parametrize("dt", DTYPES)
def test_to_int_saturates(dt):
    out = np.zeros(8, dt)
    _to[(1,)](X, out, getattr(tl, dt))
    np.testing.assert_array_equal(out, _ref(dt))


def test_int32_store_matches_to():
    a, b = np.zeros(8, np.int32), np.zeros(8, np.int32)
    _store[(1,)](X, a)
    _to[(1,)](X, b, tl.int32)
    np.testing.assert_array_equal(a, [2147483647, -2147483648, 0, 2147483647, -2147483648,
                                      2147483647, 2, -2])
    np.testing.assert_array_equal(a, b)


def test_int64_boundary_float64():
    # float64(2**63) is the rounding of int64 max: it must saturate, not wrap; the largest
    # float64 below 2**63 converts exactly
    x = np.array([2.0**63, -2.0**63, np.nextafter(2.0**63, 0), -np.nextafter(2.0**63, 0),
                  2.0**64, np.nan, 1e300, -1e300], np.float64)
    ref = np.array([2**63 - 1, -2**63, 2**63 - 1024, -(2**63 - 1024), 2**63 - 1, 0,
                    2**63 - 1, -2**63], np.int64)
    out = np.zeros(8, np.int64)
    _to[(1,)](x, out, tl.int64)
    np.testing.assert_array_equal(out, ref)
    out = np.zeros(8, np.int64)
    _store[(1,)](x, out)
    np.testing.assert_array_equal(out, ref)


def test_uint64_boundary_float64():
    x = np.array([2.0**64, np.nextafter(2.0**64, 0), -1.0, -0.5, np.inf, np.nan, 0.9, 1e300],
                 np.float64)
    ref = np.array([2**64 - 1, 2**64 - 2048, 0, 0, 2**64 - 1, 0, 0, 2**64 - 1], np.uint64)
    out = np.zeros(8, np.uint64)
    _to[(1,)](x, out, tl.uint64)
    np.testing.assert_array_equal(out, ref)
