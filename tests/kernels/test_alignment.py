"""Triton's divisibility-16 specialisation: which matmul loads are vectorised and pipelined."""

from __future__ import annotations

from autotile.kernels import MATMUL_KNOBS, matmul_access
from autotile.kernels._alignment import is_async_copy, specialized_divisibility, vector_elems


def test_only_multiples_of_16_are_known_divisible():
    assert [specialized_divisibility(v) for v in (16, 2000, 4096, 5000, 3000, 8, 1)] == [
        16, 16, 16, 1, 1, 1, 1]


def test_vector_is_capped_at_16_bytes_and_by_every_bound():
    assert vector_elems(2, 4096, 4096) == 8
    assert vector_elems(4, 4096) == 4
    assert vector_elems(2, 4096, 5000) == 1
    assert vector_elems(2) == 8


def test_async_copy_needs_32_bits_per_thread():
    assert not is_async_copy(1, 2)  # one fp16: 16 bits
    assert is_async_copy(1, 4)      # one fp32: 32 bits
    assert is_async_copy(8, 2)


def test_unaligned_n_makes_b_and_c_scalar_but_not_a():
    acc = matmul_access(3000, 5000, 2000, 2)
    assert (acc.a.vector_elems, acc.a.is_async) == (8, True)
    assert (acc.b.vector_elems, acc.b.is_async) == (1, False)
    assert acc.c.vector_elems == 1
    assert acc.n_buffers(3) == (3, 1)


def test_unaligned_k_makes_a_scalar():
    acc = matmul_access(64, 64, 1000, 2)
    assert (acc.a.is_async, acc.b.is_async, acc.c.vector_elems) == (False, True, 8)
    assert acc.n_buffers(4) == (1, 4)


def test_aligned_shapes_are_unchanged_and_fp32_stays_async():
    assert matmul_access(4096, 4096, 4096, 2).n_buffers(3) == (3, 3)
    assert matmul_access(2000, 3000, 16384, 4).n_buffers(4) == (4, 4)  # 1 x fp32 = 32 bits


def test_a_leading_stride_counts_too():
    assert not matmul_access(64, 4096, 4096, 2, stride_bk=4100).b.is_async
    assert matmul_access(64, 4096, 4096, 2, stride_bk=8192).b.is_async


def test_smem_fits_follows_triton_at_unaligned_n():
    cfg = dict(BLOCK_M=256, BLOCK_N=128, BLOCK_K=128, GROUP_M=8, num_warps=8, num_stages=3)
    # 3 x 64 KiB of A + 1 x 32 KiB of B = 224 KiB: Triton compiled and ran it at N = 5000
    assert MATMUL_KNOBS.is_valid(cfg, {"M": 3000, "N": 5000, "K": 2000})
    assert MATMUL_KNOBS.is_valid(cfg, {"M": 2000, "N": 3000, "K": 16384})
    # 3 x (64 + 32) KiB = 288 KiB: Triton refuses it (294,912 B > 232,448 B)
    assert MATMUL_KNOBS.violated(cfg, {"M": 4096, "N": 4096, "K": 4096}) == ("smem_fits",)
    # 4 x 64 KiB + 16 KiB = 278,528 B: refused by Triton at N = 5000 as well
    big_a = dict(cfg, BLOCK_N=64, num_warps=4, num_stages=4)
    assert MATMUL_KNOBS.violated(big_a, {"M": 3000, "N": 5000, "K": 2000}) == ("smem_fits",)
