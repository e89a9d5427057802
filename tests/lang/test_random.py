"""Philox random numbers (``tl.randint``, ``tl.rand``, ``tl.randn``): Triton's numbers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit

_M = 0xFFFFFFFF


def philox4x32(c, key, rounds=10):
    """Reference Philox-4x32 in NumPy uint64 (Salmon et al. 2011; Random123's constants)."""
    c0, c1, c2, c3 = (np.asarray(x, np.uint64) for x in c)
    k0, k1 = (np.asarray(x, np.uint64) for x in key)
    for _ in range(rounds):
        p0 = np.uint64(0xD2511F53) * c0  # < 2**64: exact
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & np.uint64(_M),
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & np.uint64(_M))
        k0 = (k0 + np.uint64(0x9E3779B9)) & np.uint64(_M)
        k1 = (k1 + np.uint64(0xBB67AE85)) & np.uint64(_M)
    return [x.astype(np.uint32) for x in (c0, c1, c2, c3)]


def ref_randint4x(seed, offsets):
    off = np.asarray(offsets, np.int64)
    lo = (off & _M).astype(np.uint64)
    hi = ((off >> 32) & _M).astype(np.uint64)
    s = seed % 2**64
    zero = np.zeros_like(lo)
    return philox4x32((lo, hi, zero, zero), (s & _M, s >> 32))


def ref_uniform(i):
    s = np.asarray(i, np.uint32).view(np.int32)
    s = np.where(s < 0, ~s, s)
    return s.astype(np.float32) * np.float32(4.6566127342e-10)


def test_reference_matches_random123_known_answers():
    # Random123 kat_vectors, philox4x32 with 10 rounds
    assert [int(x) for x in philox4x32((0, 0, 0, 0), (0, 0))] == \
        [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert [int(x) for x in philox4x32((_M,) * 4, (_M, _M))] == \
        [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert [int(x) for x in philox4x32((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
                                       (0xA4093822, 0x299F31D0))] == \
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def test_philox_gives_the_known_answers():
    @jit
    def k(o_ptr, SEED: tl.constexpr, C0: tl.constexpr, C1: tl.constexpr, C2: tl.constexpr,
          C3: tl.constexpr):
        c = tl.full((1,), 0, tl.uint32)
        r0, r1, r2, r3 = tl.philox(SEED, c + C0, c + C1, c + C2, c + C3)
        tl.store(o_ptr + tl.arange(0, 1), r0)
        tl.store(o_ptr + 1 + tl.arange(0, 1), r1)
        tl.store(o_ptr + 2 + tl.arange(0, 1), r2)
        tl.store(o_ptr + 3 + tl.arange(0, 1), r3)

    o = np.zeros(4, np.uint32)
    k[(1,)](o, SEED=(0x299F31D0 << 32) | 0xA4093822, C0=0x243F6A88, C1=0x85A308D3,
            C2=0x13198A2E, C3=0x03707344)
    assert [int(x) for x in o] == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


@jit
def _randint_kernel(x_ptr, n, seed, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(x_ptr.dtype.element_ty)
    offset = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offset, tl.randint(seed, offset), mask=offset < n)


@jit
def _randint_const_seed(x_ptr, n, seed: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(x_ptr.dtype.element_ty)
    offset = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offset, tl.randint(seed, offset), mask=offset < n)


@pytest.mark.parametrize("seed", [0, 42, 124, 54, 0xFFFFFFFF, 0x0000000FCAFEB0BA])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("const_seed", [True, False])
def test_randint_is_philox_of_the_offsets(seed, dtype, const_seed):
    # Triton's test_randint: the offsets' dtype sets the offset type
    n = 300
    x = np.zeros(n, dtype)
    kern = _randint_const_seed if const_seed else _randint_kernel
    kern[(3,)](x, n, seed, BLOCK=128)
    ref = ref_randint4x(seed, np.arange(n))[0]
    np.testing.assert_array_equal(x.astype(f"u{dtype}"), ref.astype(f"u{dtype}"))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(-(2**31), 2**31 - 1), base=st.integers(0, 2**40))
def test_randint4x_and_rand4x_with_int64_offsets(seed, base):
    @jit
    def k(o_ptr, f_ptr, seed, base):
        offs = base + tl.arange(0, 64).to(tl.int64)
        i1, i2, i3, i4 = tl.randint4x(seed, offs)
        u1, u2, u3, u4 = tl.rand4x(seed, offs)
        for j, (i, u) in enumerate([(i1, u1), (i2, u2), (i3, u3), (i4, u4)]):
            tl.store(o_ptr + j * 64 + tl.arange(0, 64), i)
            tl.store(f_ptr + j * 64 + tl.arange(0, 64), u)

    o, f = np.zeros(256, np.uint32), np.zeros(256, np.float32)
    k[(1,)](o, f, seed, base)
    ref = ref_randint4x(seed, base + np.arange(64))
    np.testing.assert_array_equal(o, np.concatenate(ref))
    np.testing.assert_array_equal(f, np.concatenate([ref_uniform(r) for r in ref]))
    assert ((f >= 0) & (f < 1)).all()


def test_rand_and_randn_follow_tritons_conversions():
    @jit
    def k(u_ptr, n_ptr, seed, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(u_ptr + offs, tl.rand(seed, offs))
        tl.store(n_ptr + offs, tl.randn(seed, offs))

    n = 1 << 14
    u, z = np.zeros(n, np.float32), np.zeros(n, np.float32)
    k[(n // 1024,)](u, z, 7, BLOCK=1024)
    i1, i2, _, _ = ref_randint4x(7, np.arange(n))
    np.testing.assert_array_equal(u, ref_uniform(i1))  # bit-exact
    u1 = np.maximum(np.float32(1e-7), ref_uniform(i1))
    th = np.float32(6.283185307179586) * ref_uniform(i2)
    ref = np.sqrt(np.float32(-2.0) * np.log(u1)) * np.cos(th)
    np.testing.assert_allclose(z, ref, rtol=1e-6, atol=1e-6)
    assert abs(z.mean()) < 3e-2 and abs(z.std() - 1) < 3e-2
    assert abs(u.mean() - 0.5) < 1e-2


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_uniform_float_limits(dtype):
    # Triton's test_rand_limits: the extreme integers map to the same value just below 1
    @jit
    def k(x_ptr, o_ptr):
        tl.store(o_ptr + tl.arange(0, 2), tl.random.uint_to_uniform_float(
            tl.load(x_ptr + tl.arange(0, 2))))

    info = np.iinfo(dtype)
    o = np.zeros(2, np.float32)
    k[(1,)](np.array([info.min, info.max], dtype), o)
    assert o[0] == o[1]
    assert 1.0 - np.finfo(np.float32).eps <= o[0] < 1.0


def test_float_seed_is_refused():
    @jit
    def k(o_ptr, seed):
        tl.store(o_ptr + tl.arange(0, 1), tl.rand(seed, tl.arange(0, 1)))

    with pytest.raises(LangError, match="seed of a Philox generator must be an integer"):
        k[(1,)](np.zeros(1, np.float32), 2.3)
