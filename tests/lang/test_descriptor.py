import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit


@jit
def copy_desc_kernel(src, dst, M, N, stride_s, stride_d, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    s = tl.make_tensor_descriptor(src, shape=[M, N], strides=[stride_s, 1], block_shape=[BM, BN])
    d = tl.make_tensor_descriptor(dst, shape=[M, N], strides=[stride_d, 1], block_shape=[BM, BN])
    blk = s.load([pid_m * BM, pid_n * BN])
    d.store([pid_m * BM, pid_n * BN], blk * 2.0)


def test_descriptor_copy_with_ragged_edges():
    M, N, BM, BN = 37, 45, 16, 16
    src = np.arange(M * N, dtype=np.float32).reshape(M, N)
    dst = np.full((M, N), -1.0, np.float32)
    copy_desc_kernel[(tl.cdiv(M, BM), tl.cdiv(N, BN))](src, dst, M, N, N, N, BM=BM, BN=BN)
    np.testing.assert_array_equal(dst, 2 * src)
    rec = copy_desc_kernel.last_record
    assert rec.total_elems_read("src") == M * N
    assert rec.total_elems_written("dst") == M * N
    assert rec.summary()["masked_lanes"] == 2 * (3 * 3 * BM * BN - M * N)


def test_descriptor_oob_reads_zero_and_is_not_written():
    @jit
    def k(src, out, BM: tl.constexpr):
        d = tl.make_tensor_descriptor(src, shape=[4, 4], strides=[4, 1], block_shape=[BM, BM])
        blk = d.load([2, -2])
        o = tl.make_tensor_descriptor(out, shape=[BM, BM], strides=[BM, 1],
                                      block_shape=[BM, BM])
        o.store([0, 0], blk)
        d.store([3, 3], tl.full((BM, BM), 100.0, tl.float32))

    src = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = np.full((4, 4), -1.0, np.float32)
    ref = np.zeros((4, 4), np.float32)
    ref[:2, 2:] = src[2:, :2]
    k[(1,)](src, out, BM=4)
    np.testing.assert_array_equal(out, ref)
    assert src[3, 3] == 100.0 and (src.reshape(-1)[:15] == np.arange(15)).all()


def test_host_tensor_descriptor_argument():
    @jit
    def k(desc, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
        blk = desc.load([tl.program_id(0) * BM, 0])
        tl.store(out_ptr + tl.program_id(0), tl.sum(tl.sum(blk, axis=1), axis=0))

    a = np.ones((10, 8), np.float16)
    out = np.zeros(3, np.float32)
    k[(3,)](tl.TensorDescriptor.from_tensor(a, [4, 8]), out, BM=4, BN=8)
    assert out.tolist() == [32.0, 32.0, 16.0]


def test_descriptor_requires_unit_last_stride():
    @jit
    def k(src):
        tl.make_tensor_descriptor(src, shape=[4, 4], strides=[1, 4], block_shape=[2, 2])

    with pytest.raises(LangError, match="contiguous"):
        k[(1,)](np.zeros(16, np.float32))


def test_block_pointer_boundary_check():
    @jit
    def k(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
        p = tl.make_block_ptr(src, shape=(M, N), strides=(N, 1), offsets=(0, 0),
                              block_shape=(BM, BN), order=(1, 0))
        p = tl.advance(p, (2, 0))
        blk = tl.load(p, boundary_check=(0, 1), padding_option="zero")
        q = tl.make_block_ptr(dst, shape=(BM, BN), strides=(BN, 1), offsets=(0, 0),
                              block_shape=(BM, BN), order=(1, 0))
        tl.store(q, blk, boundary_check=(0, 1))

    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    dst = np.full((2, 8), -1.0, np.float32)
    k[(1,)](src, dst, 3, 4, BM=2, BN=8)
    ref = np.zeros((2, 8), np.float32)
    ref[0, :4] = src[2]
    np.testing.assert_array_equal(dst, ref)


def test_descriptor_store_to_read_only_array_names_the_argument():
    src = np.ones((16, 16), np.float32)
    dst = np.zeros((16, 16), np.float32)
    dst.flags.writeable = False
    with pytest.raises(LangError, match="store to read-only argument 'dst' in kernel "
                                        "'copy_desc_kernel'"):
        copy_desc_kernel[(2, 2)](src, dst, 16, 16, 16, 16, BM=8, BN=8)
    # a read-only source is fine
    src.flags.writeable = False
    out = np.zeros((16, 16), np.float32)
    copy_desc_kernel[(2, 2)](src, out, 16, 16, 16, 16, BM=8, BN=8)
    np.testing.assert_array_equal(out, 2.0)


def test_descriptor_block_rows_must_span_16_bytes():
    @jit
    def k(src):
        d = tl.make_tensor_descriptor(src, shape=[128, 128], strides=[128, 1], block_shape=[1, 2])
        d.load([0, 0])

    with pytest.raises(LangError, match=r"Descriptor block shape must have at least 16 bytes in "
                                        r"the last dimension, but got 2 \* 4 = 8 bytes"):
        k[(1,)](np.zeros((128, 128), np.int32))
