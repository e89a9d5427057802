"""Casts between pointers and integers (Triton's ``semantic.cast``): addresses."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit
from tests.lang._kernels import kernel_from_source


@jit
def _addresses(x_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, (x_ptr + offs).to(tl.int64))


def test_pointer_to_int64_is_base_plus_offset_times_itemsize():
    x = np.zeros(8, np.float32)
    o = np.zeros(8, np.int64)
    _addresses[(1,)](x, o, N=8)
    assert o[0] > 0
    np.testing.assert_array_equal(np.diff(o), 4)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.sampled_from([4, 16, 64]))
def test_where_on_pointers_made_from_integers(seed, n):
    # Triton's test_where with "*int32": int64 values cast to pointers, selected, stored back
    rng = np.random.default_rng(seed)
    cond = rng.random(n) > 0.5
    a = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64)
    b = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64)

    @jit
    def k(c_ptr, a_ptr, b_ptr, o_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        pa = tl.load(a_ptr + offs).to(tl.pi32_t)
        pb = tl.load(b_ptr + offs).to(tl.pi32_t)
        tl.store(o_ptr + offs, tl.where(tl.load(c_ptr + offs), pa, pb))

    o = np.zeros(n, np.int64)
    k[(1,)](cond, a, b, o, N=n)
    np.testing.assert_array_equal(o, np.where(cond, a, b))


@pytest.mark.parametrize("pick_a", [True, False])
def test_where_between_two_arguments_loads_from_the_chosen_one(pick_a):
    a = np.arange(8, dtype=np.float32)
    b = -np.arange(8, dtype=np.float32)

    @jit
    def k(a_ptr, b_ptr, o_ptr, PICK_A: tl.constexpr):
        offs = tl.arange(0, 8)
        p = tl.where(PICK_A, a_ptr, b_ptr)
        tl.store(o_ptr + offs, tl.load(p + offs))

    o = np.zeros(8, np.float32)
    k[(1,)](a, b, o, PICK_A=pick_a)
    np.testing.assert_array_equal(o, a if pick_a else b)


def test_round_trip_through_an_address_reads_the_same_elements():
    x = np.arange(32, dtype=np.int32) * 3

    @jit
    def k(x_ptr, o_ptr):
        offs = tl.arange(0, 8)
        addr = (x_ptr + 2).to(tl.int64)          # the address of x[2]
        p = addr.to(tl.pointer_type(tl.int32)) + offs * 2   # element steps, not bytes
        tl.store(o_ptr + offs, tl.load(p))
        tl.static_assert((p - x_ptr).dtype == tl.int64)
        tl.store(o_ptr + 8 + offs, (p - x_ptr).to(tl.int32))  # differences count elements

    o = np.zeros(16, np.int32)
    k[(1,)](x, o)
    np.testing.assert_array_equal(o[:8], x[2:18:2])
    np.testing.assert_array_equal(o[8:], 2 + 2 * np.arange(8))


def test_pointer_to_int1_is_non_null():
    @jit
    def k(x_ptr, o_ptr):
        tl.store(o_ptr, x_ptr.to(tl.int1))

    o = np.zeros(1, np.bool_)
    k[(1,)](np.zeros(1, np.float32), o)
    assert o[0]


def test_address_outside_every_argument_cannot_be_read():
    @jit
    def k(o_ptr):
        p = tl.full((), 16, tl.int64).to(tl.pointer_type(tl.float32))
        tl.store(o_ptr, tl.load(p))

    with pytest.raises(LangError, match="address 0x10 is in no kernel argument"):
        k[(1,)](np.zeros(1, np.float32))


@pytest.mark.parametrize("expr", ["x_ptr.to(tl.int32)", "x_ptr.to(tl.float32)",
                                  "tl.full((), 1.0, tl.float32).to(tl.pi32_t)"])
def test_casts_triton_refuses(expr):
    with pytest.raises(LangError, match="cannot cast"):
        kernel_from_source("x_ptr", f"y = {expr}")[(1,)](np.zeros(1, np.float32))


@jit
def _per_lane_select(c_ptr, a_ptr, b_ptr, o_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * N + tl.arange(0, N)
    c = tl.load(c_ptr + offs)
    p = tl.where(c == 1, a_ptr + offs, b_ptr + offs)
    m = c != 2                                    # c == 2: lane masked off
    tl.store(o_ptr + offs, tl.load(p, mask=m, other=-1.0))
    tl.store(p, tl.load(o_ptr + offs) * 10.0, mask=m)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.sampled_from([1, 4, 16]), programs=st.integers(1, 5))
def test_per_lane_where_between_arguments_reads_and_writes_each_lane_s_argument(seed, n,
                                                                                programs):
    rng = np.random.default_rng(seed)
    size = n * programs
    c = rng.integers(0, 3, size).astype(np.int32)  # 1: a, 0: b, 2: masked off
    a = rng.standard_normal(size).astype(np.float32)
    b = rng.standard_normal(size).astype(np.float32)
    a0, b0 = a.copy(), b.copy()
    o = np.zeros(size, np.float32)
    _per_lane_select[(programs,)](c, a, b, o, N=n)
    want = np.where(c == 1, a0, np.where(c == 0, b0, -1.0)).astype(np.float32)
    np.testing.assert_array_equal(o, want)
    np.testing.assert_array_equal(a, np.where(c == 1, 10 * a0, a0))
    np.testing.assert_array_equal(b, np.where(c == 0, 10 * b0, b0))
    rec = _per_lane_select.last_record
    # each load/store counted once over the block: 5 ops of `size` lanes, masked in 2 of them
    assert rec.total_lanes.sum() == 5 * size
    assert rec.masked_lanes.sum() == 2 * int(np.count_nonzero(c == 2))
    # the record reads and writes only the lanes that point into each argument
    bufs = rec.summary()["buffers"]
    assert bufs["a_ptr"]["elems_read"] == bufs["a_ptr"]["elems_written"] == np.sum(c == 1)
    assert bufs["b_ptr"]["elems_read"] == bufs["b_ptr"]["elems_written"] == np.sum(c == 0)


def test_per_lane_where_between_arguments_atomics_return_each_lane_s_old_value():
    @jit
    def k(a_ptr, b_ptr, o_ptr):
        offs = tl.arange(0, 8)
        p = tl.where(offs % 2 == 0, a_ptr + offs // 2, b_ptr + offs // 2)
        tl.store(o_ptr + offs, tl.atomic_add(p, offs + 1, mask=offs < 7))

    a = np.arange(4, dtype=np.int32) * 100
    b = np.arange(4, dtype=np.int32) * 1000
    o = np.full(8, -5, np.int32)
    k[(1,)](a, b, o)
    np.testing.assert_array_equal(o[:7], [0, 0, 100, 1000, 200, 2000, 300])
    np.testing.assert_array_equal(a, [1, 103, 205, 307])
    np.testing.assert_array_equal(b, [2, 1004, 2006, 3000])


def test_per_lane_where_between_arguments_of_another_element_size_is_refused():
    @jit
    def k(a_ptr, b_ptr, o_ptr):
        offs = tl.arange(0, 4)
        p = tl.where(offs < 2, a_ptr + offs, b_ptr.to(tl.int64).to(tl.pi32_t) + (offs - 2))
        tl.store(o_ptr + offs, tl.load(p))

    with pytest.raises(LangError, match="another element size"):
        k[(1,)](np.zeros(4, np.int32), np.zeros(4, np.int16), np.zeros(4, np.int32))
