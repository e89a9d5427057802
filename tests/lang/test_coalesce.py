import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import LangError


def test_seed_layouts_exact_counts():
    a = tl.coalesce(tl.layout_contiguous_per_thread(1024, 128, 4), elem_bytes=4)
    b = tl.coalesce(tl.layout_coalesced_vector(1024, 128, 4), elem_bytes=4)
    c = tl.coalesce(tl.layout_coalesced_scalar(1024, 128), elem_bytes=4)
    assert (a.n_requests, set(a.sectors_per_request), a.n_sectors) == (8, {32}, 256)
    assert (b.n_requests, set(b.sectors_per_request), b.n_sectors) == (8, {16}, 128)
    assert (c.n_requests, set(c.sectors_per_request), c.n_sectors) == (32, {4}, 128)
    assert a.bytes_used == b.bytes_used == c.bytes_used == 4096
    assert (a.bytes_moved, b.bytes_moved, c.bytes_moved) == (8192, 4096, 4096)
    assert (a.efficiency, b.efficiency, c.efficiency) == (0.5, 1.0, 1.0)
    assert min([a, b, c], key=lambda r: r.cost) is b
    assert b.n_transactions == 128


def test_layout_shapes_and_validation():
    lay = tl.layout_contiguous_per_thread()
    assert (lay.n_instructions, lay.n_threads, lay.vec_elems) == (2, 128, 4)
    assert sorted(lay.elem_idx.reshape(-1).tolist()) == list(range(1024))
    with pytest.raises(LangError, match="multiple of warp_size"):
        tl.coalesce(tl.ThreadLayout("x", np.zeros((1, 20, 1), np.int64)))


def test_fp16_scalar_layout_uses_two_sectors():
    r = tl.coalesce(tl.layout_coalesced_scalar(1024, 128), elem_bytes=2)
    assert set(r.sectors_per_request) == {2} and r.n_sectors == 64
