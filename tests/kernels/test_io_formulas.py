"""Closed-form IO helpers against the seed's numbers (no interpreter involved)."""

from autotile.kernels import (
    default_block_n,
    io_flash,
    io_fused_softmax,
    io_naive_softmax,
    onchip_flash_bytes,
)

MiB = 1 << 20


def test_io_naive_softmax_seed_numbers():
    assert io_naive_softmax(1823, 781) == (7_122_461, 4_274_935)
    assert io_fused_softmax(1823, 781) == (1_423_763, 1_423_763)
    r, w = io_naive_softmax(1823, 781)
    assert round((r + w) / (2 * 1_423_763), 2) == 4.00


def test_io_flash_seed_number():
    assert io_flash(1024, 64, 64, 4) == 8_916_992


def test_flash_block_size_tradeoff_seed_numbers():
    n, d = 4096, 128
    rows = {bm: io_flash(n, d, bm, 2) / MiB for bm in (32, 64, 128, 256)}
    print("HBM MiB by BLOCK_M:", rows)
    assert round(rows[32]) == 258
    assert round(rows[256]) == 34
    assert rows[32] > rows[64] > rows[128] > rows[256]
    # on-chip bytes: fp32 accumulator BLOCK_M x d + fp32 scores BLOCK_M x BLOCK_N,
    # BLOCK_N = min(BLOCK_M, 64)
    assert default_block_n(32) == 32 and default_block_n(256) == 64
    assert onchip_flash_bytes(32, d) == 20 * 1024
    assert onchip_flash_bytes(256, d) == 192 * 1024
    assert -(-n // 32) == 128 and -(-n // 256) == 16


def test_io_flash_causal_reads_about_half():
    full = io_flash(1024, 64, 64, 4)
    causal = io_flash(1024, 64, 64, 4, causal=True)
    # K and V rows read: sum_{i<16} 64 (i + 1) = 64 * 136 instead of 16 * 1024
    assert causal == full - 2 * (16 * 1024 - 64 * 136) * 64 * 4
