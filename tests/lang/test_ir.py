import numpy as np

import autotile.lang as tl
from tests.lang._kernels import matmul_kernel, softmax_kernel

SOFTMAX_1024 = """\
%0 = tt.get_program_id axis=0
%1 = tt.make_range {start=0, end=1024} : tensor<1024xi32>
%2 = tt.load x (masked) : tensor<1024xfloat32>
%3 = tt.reduce(max) axis=0 : 1024 -> scalar
%4 = math.exp : 1024
%5 = tt.reduce(add) axis=0 : 1024 -> scalar
%6 = tt.store y (masked) : tensor<1024xfloat32>"""


def test_fused_softmax_listing_is_pinned():
    x = np.random.default_rng(0).standard_normal((3, 781)).astype(np.float32)
    y = np.zeros_like(x)
    listing = softmax_kernel.trace(y, x, 781, 781, BLOCK=1024, grid=(3,))
    assert str(listing) == SOFTMAX_1024
    # only program 0 ran
    assert np.all(y[1:] == 0) and abs(y[0].sum() - 1) < 1e-5
    assert str(tl.ir_listing(softmax_kernel, y, x, 781, 781, BLOCK=1024, grid=(3,))) == \
        SOFTMAX_1024


def test_listing_with_arith_ops():
    x = np.zeros((1, 16), np.float32)
    y = np.zeros_like(x)
    lines = softmax_kernel.trace(y, x, 16, 16, BLOCK=16, grid=(1,), include_arith=True).lines
    assert "%2 = arith.muli : scalar" in lines
    assert any(line.endswith("arith.subf : 16") for line in lines)
    assert any(line.endswith("arith.divf : 16") for line in lines)
    assert len(lines) == 17


def test_matmul_listing_has_dot_with_shapes():
    M = N = K = 32
    a = np.zeros((M, K), np.float16)
    b = np.zeros((K, N), np.float16)
    c = np.zeros((M, N), np.float16)
    lines = matmul_kernel.trace(a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=16, BLOCK_N=16,
                                BLOCK_K=16, GROUP_M=1, grid=(4,)).lines
    dots = [ln for ln in lines if "tt.dot" in ln]
    assert len(dots) == 2
    assert dots[0].endswith("tt.dot : 16x16 * 16x16 -> 16x16")
    assert any(ln.endswith("tt.load a_ptr (masked) : tensor<16x16xfloat16>") for ln in lines)
