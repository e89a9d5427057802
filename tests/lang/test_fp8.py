"""fp8 dtypes: the formats' grids, nearest-even rounding, saturation, kernels on fp8 buffers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autotile.lang as tl
from autotile.lang import jit

# (dtype, exponent bits, mantissa bits, bias, largest finite, smallest subnormal): OCP OFP8
# rev. 1.0 for e4m3fn/e5m2; Triton's fp8e4b15 (bias 15, 0x7F NaN as in Triton's test_core
# reference decoder); the FNUZ formats (bias 8 / 16)
SPECS = [
    (tl.float8e4nv, 4, 3, 7, 448.0, 2.0**-9),
    (tl.float8e5, 5, 2, 15, 57344.0, 2.0**-16),
    (tl.float8e4b15, 4, 3, 15, 1.75, 2.0**-17),
    (tl.float8e4b8, 4, 3, 8, 240.0, 2.0**-10),
    (tl.float8e5b16, 5, 2, 16, 57344.0, 2.0**-17),
]


def _grid(ebits, mbits, bias, top):
    """Non-negative finite values by the formula m * 2**(e - bias - mbits), up to ``top``."""
    vals = []
    for e in range(2**ebits):
        for m in range(2**mbits):
            if e == 0:
                v = m * 2.0 ** (1 - bias - mbits)
            else:
                v = (2**mbits + m) * 2.0 ** (e - bias - mbits)
            if v <= top:
                vals.append((v, m))
    return vals


def _nearest_even(x, grid, top):
    """Reference rounding: nearest grid value, ties to an even mantissa, saturating."""
    a = min(abs(x), top)
    best = min(grid, key=lambda vm: (abs(vm[0] - a), vm[1] % 2))
    return np.copysign(best[0], x)


@pytest.mark.parametrize("dt,ebits,mbits,bias,top,tiny", SPECS)
def test_format_extremes(dt, ebits, mbits, bias, top, tiny):
    assert tl.fp8_to_float32(tl.fp8_array([1e30, -1e30, np.inf], dt)).tolist() == \
        [top, -top, top]  # saturating, as cvt.rn.satfinite
    assert tl.fp8_to_float32(tl.fp8_array([tiny, tiny * 0.5, tiny * 0.51], dt)).tolist() == \
        [tiny, 0.0, tiny]  # half the smallest subnormal ties to even (0)
    assert dt.is_fp8() and dt.primitive_bitwidth == 8 and dt.itemsize == 1


@settings(max_examples=60, deadline=None)
@given(spec=st.sampled_from(SPECS), x=st.floats(-600.0, 600.0, allow_nan=False, width=32))
def test_rounding_matches_a_brute_force_reference(spec, x):
    dt, ebits, mbits, bias, top, _ = spec
    grid = _grid(ebits, mbits, bias, top)
    got = float(tl.fp8_to_float32(tl.fp8_array([x], dt))[0])
    assert got == _nearest_even(float(x), grid, top)


@pytest.mark.parametrize("dt", [s[0] for s in SPECS])
def test_every_finite_code_round_trips(dt):
    codes = np.arange(256, dtype=np.uint8)
    vals = tl.fp8_to_float32(codes, dt)
    finite = np.isfinite(vals)
    back = tl.fp8_array(vals[finite], dt).view(np.uint8)
    same = (back == codes[finite]) | (vals[finite] == 0)  # -0.0 is +0.0 in the FNUZ formats
    assert same.all()


def test_nan_codes():
    nan = np.array([np.nan])
    assert tl.fp8_array(nan, tl.float8e4nv).view(np.uint8)[0] == 0x7F
    assert tl.fp8_array(nan, tl.float8e5).view(np.uint8)[0] == 0x7F
    assert tl.fp8_array(nan, tl.float8e4b8).view(np.uint8)[0] == 0x80
    assert tl.fp8_array(nan, tl.float8e4b15).view(np.uint8)[0] == 0x7F


@pytest.mark.parametrize("dt", [tl.float8e4nv, tl.float8e5, tl.float8e4b15])
def test_kernel_loads_computes_and_stores_fp8(dt):
    @jit
    def k(x_ptr, y_ptr, s_ptr, f_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        x = tl.load(x_ptr + offs)
        y = tl.load(y_ptr + offs)
        tl.static_assert(x.dtype == y.dtype)
        s = x + y  # same fp8 type: computed exactly, rounded back to the format
        tl.static_assert(s.dtype == x.dtype)
        tl.store(s_ptr + offs, s)
        tl.store(f_ptr + offs, tl.abs(x).to(tl.float32))

    rng = np.random.default_rng(3)
    scale = 1.0 if dt is tl.float8e4b15 else 50.0
    xv, yv = rng.uniform(-scale, scale, (2, 32))
    x, y = tl.fp8_array(xv, dt), tl.fp8_array(yv, dt)
    s = tl.fp8_array(np.zeros(32), dt)
    f = np.zeros(32, np.float32)
    k[(1,)](x, y, s, f, N=32)
    xd, yd = tl.fp8_to_float32(x), tl.fp8_to_float32(y)
    ref = tl.fp8_to_float32(tl.fp8_array(xd + yd, dt))
    np.testing.assert_array_equal(tl.fp8_to_float32(s), ref)
    np.testing.assert_array_equal(f, np.abs(xd))


def test_reinterpret_views_raw_bytes_and_casts_round():
    raw = np.array([0x38, 0x40, 0xC4, 0x7E], np.uint8)  # e4m3fn: 1, 2, -3, 448

    @jit
    def k(x_ptr, o_ptr, h_ptr):
        x = tl.load(x_ptr + tl.arange(0, 4))
        tl.store(o_ptr + tl.arange(0, 4), x.to(tl.float32))
        tl.store(h_ptr + tl.arange(0, 4), (x.to(tl.float32) * 1.1).to(tl.float8e4nv))

    o = np.zeros(4, np.float32)
    h = tl.fp8_array(np.zeros(4), tl.float8e4nv)
    k[(1,)](tl.reinterpret(raw, tl.float8e4nv), o, h)
    assert o.tolist() == [1.0, 2.0, -3.0, 448.0]
    assert tl.fp8_to_float32(h).tolist() == [1.125, 2.25, -3.25, 448.0]


@settings(max_examples=40, deadline=None)
@given(spec=st.sampled_from(SPECS[:3]),
       xs=st.lists(st.floats(-1e5, 1e5, allow_nan=False, width=32), min_size=8, max_size=8),
       batch=st.booleans())
def test_in_kernel_casts_round_to_the_grid_and_saturate(spec, xs, batch):
    dt, ebits, mbits, bias, top, _ = spec

    @jit
    def k(x_ptr, o_ptr, f_ptr, FP8: tl.constexpr):
        offs = tl.program_id(0) * 8 + tl.arange(0, 8)
        y = tl.load(x_ptr + offs).to(FP8)
        tl.static_assert(y.dtype == FP8)
        tl.store(o_ptr + offs, y.to(tl.float32))
        tl.store(f_ptr + offs, y)  # an fp8 buffer holds the same codes

    x = np.tile(np.asarray(xs, np.float32), 4)
    o = np.zeros(32, np.float32)
    f = tl.fp8_array(np.zeros(32), dt)
    k[(4,)](x, o, f, FP8=dt, batch_programs=batch)
    grid = _grid(ebits, mbits, bias, top)
    ref = [_nearest_even(float(v), grid, top) for v in x]
    np.testing.assert_array_equal(o, ref)
    np.testing.assert_array_equal(tl.fp8_to_float32(f), ref)
