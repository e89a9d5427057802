"""tl.live_values: block values live across loads and reductions (register pressure)."""

from __future__ import annotations

import numpy as np
import pytest

import autotile.lang as tl
from autotile.lang._tensor import tensor


@tl.jit
def _scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    t = x * 2.0 + 1.0
    tl.store(y_ptr + offs, t * x, mask=mask)


@tl.jit
def _row_sum(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < N, other=0.0)
    tl.store(y_ptr, tl.sum(acc, axis=0))


@tl.jit
def _softmax_row(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + cols, e / tl.sum(e, axis=0), mask=cols < N)


@tl.jit
def _int_row_sum(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < N, other=0)
    tl.store(y_ptr, tl.sum(acc, axis=0))


@tl.jit
def _copy_twice(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    pos = x > 0                       # an int1 block computed from loaded data
    tl.store(y_ptr + offs, x)
    offs2 = BLOCK + tl.arange(0, BLOCK)  # affine: created after a store of data
    z = tl.load(x_ptr + offs2)
    tl.store(y_ptr + offs2, tl.where(pos, z, 0))


@pytest.mark.parametrize("block", [64, 256])
def test_element_wise_program_holds_only_the_loaded_block(block):
    x = np.ones(block, np.float16)
    with tl.live_values() as lv:
        _scale[(1,)](x, np.zeros_like(x), block, BLOCK=block)
    # one float16 block comes in; offsets, mask and the element-wise chain need none
    assert lv.peak_bytes == 2 * block
    assert lv.n_points == 1


@pytest.mark.parametrize("block,n", [(128, 1024), (512, 4096)])
def test_loop_accumulator_is_live_across_every_load(block, n):
    x = np.ones(n, np.float16)
    with tl.live_values() as lv:
        _row_sum[(1,)](x, np.zeros(1, np.float32), n, BLOCK=block)
    assert lv.peak_bytes == 4 * block + 2 * block  # float32 acc + one float16 block
    assert lv.n_points == n // block + 1  # the loads and the final sum


def test_value_kept_across_a_reduction_counts():
    x = np.ones(256, np.float32)
    with tl.live_values() as lv:
        _softmax_row[(1,)](x, np.zeros_like(x), 256, BLOCK=256)
    # x (float32) is read after tl.max; e (float32) after tl.sum
    assert lv.peak_bytes == 4 * 256


def test_tracking_is_undone_and_results_are_unchanged():
    slot = tensor.__dict__["v"]
    init = tensor.__init__
    x = (np.arange(300) / 100).astype(np.float16)
    y1, y2 = np.zeros_like(x), np.zeros_like(x)
    with tl.live_values():
        _scale[(3,)](x, y1, 300, BLOCK=128)
    _scale[(3,)](x, y2, 300, BLOCK=128)
    assert tensor.__dict__["v"] is slot and tensor.__init__ is init
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_allclose(y2.astype(np.float32),
                               (x.astype(np.float32) * 2 + 1) * x.astype(np.float32), rtol=1e-3)


def test_tracking_is_undone_when_the_kernel_raises():
    slot = tensor.__dict__["v"]
    with pytest.raises(Exception):
        with tl.live_values():
            _scale[(4,)](np.ones(8, np.float16), np.zeros(8, np.float16), 1 << 20, BLOCK=64)
    assert tensor.__dict__["v"] is slot


def test_blocks_nest_and_each_sees_its_values():
    x = np.ones(1024, np.float16)
    with tl.live_values() as outer:
        _scale[(1,)](x, np.zeros_like(x), 1024, BLOCK=256)
        with tl.live_values() as inner:
            _row_sum[(1,)](x, np.zeros(1, np.float32), 1024, BLOCK=128)
    assert inner.peak_bytes == 4 * 128 + 2 * 128
    assert outer.peak_bytes == 4 * 128 + 2 * 128  # the inner launch's values are its too
    assert tensor.__dict__["v"].__class__.__name__ == "member_descriptor"


@pytest.mark.parametrize("block,n", [(128, 1024), (256, 4096)])
def test_integer_accumulator_is_live_across_every_load(block, n):
    x = np.arange(n).astype(np.int8)
    y = np.zeros(1, np.int32)
    with tl.live_values() as lv:
        _int_row_sum[(1,)](x, y, n, BLOCK=block)
    assert y[0] == x.astype(np.int64).sum()
    assert lv.peak_bytes == 4 * block + 1 * block  # int32 acc + one int8 block
    assert lv.n_points == n // block + 1


def test_data_mask_counts_and_index_blocks_do_not():
    x = np.arange(-64, 64).astype(np.int16)
    y = np.zeros_like(x)
    with tl.live_values() as lv:
        _copy_twice[(1,)](x, y, BLOCK=64)
    np.testing.assert_array_equal(y, np.r_[x[:64], np.where(x[:64] > 0, x[64:], 0)])
    # across the second load: the int1 mask (1 byte per element), not offs2; plus the block
    assert lv.peak_bytes == 1 * 64 + 2 * 64


@tl.jit
def _two_pass_norm(x_ptr, w_ptr, y_ptr, N, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + 1e-6)   # a float scalar from data
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)          # affine: made right after rstd
        mask = cols < N
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + cols, x * rstd * w, mask=mask)


@pytest.mark.parametrize("block", [64, 256])
def test_the_op_counters_reading_a_new_value_is_not_dataflow(block):
    # counting rstd's lanes reads it after it is made; that read must not mark the
    # index block and mask made next as data (they would count as live across the loads)
    n = 4 * block
    x = np.linspace(-1, 1, n).astype(np.float16)
    w = np.ones(n, np.float16)
    y = np.zeros(n, np.float16)
    with tl.live_values() as lv:
        _two_pass_norm[(1,)](x, w, y, n, BLOCK=block)
    ref = x.astype(np.float64) / np.sqrt((x.astype(np.float64) ** 2).mean() + 1e-6)
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=2e-3, atol=2e-3)
    # across a load: the float32 accumulator (first loop) or x in float32 (second
    # loop), plus one float16 block brought in; cols and mask are not counted
    assert lv.peak_bytes == 4 * block + 2 * block
