from __future__ import annotations

import numpy as np
import pytest

from autotile import te
from autotile.errors import ScheduleError

from .conftest import make_gemm

SEED_LISTING = """\
for i_o in range(4):
    for j_o in range(4):
        for k_o in range(16):
            for k_i in range(4):
                for i_i in range(16):
                    for j_i in range(16):
                        i = (i_o * 16 + i_i); j = (j_o * 16 + j_i); k = (k_o * 4 + k_i)
                        C[i, j] += A[i, k] * B[k, j]"""


def tvm_tutorial_schedule(n=64):
    A, B, C = make_gemm(n)
    s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    xo, yo, xi, yi = s[C].tile(i, j, x_factor=16, y_factor=16)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, ki, xi, yi)
    return A, B, C, s


def test_seed_listing_verbatim():
    *_, s = tvm_tutorial_schedule()
    text = str(te.lower(s))
    assert text == "C[:, :] = 0\n" + SEED_LISTING


def test_default_schedule_listing():
    A, B, C = make_gemm(8)
    assert str(te.lower(te.create_schedule(C))) == (
        "C[:, :] = 0\n"
        "for i in range(8):\n"
        "    for j in range(8):\n"
        "        for k in range(8):\n"
        "            C[i, j] += A[i, k] * B[k, j]"
    )


def test_packed_listing_has_layout_comment_and_same_nest():
    A, B, C, s = tvm_tutorial_schedule()
    s.pack(B, tile=16)
    lines = str(te.lower(s)).split("\n")
    assert lines[0] == "# B[k, j]: packed: stored at [j // 16, k, j % 16]"
    assert "\n".join(lines[2:]) == SEED_LISTING


def test_fused_listing():
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    f = s[C].fuse(i, j)
    assert f.name == "i_j_f" and f.extent == 4096
    assert str(te.lower(s)).split("\n")[1:] == [
        "for i_j_f in range(4096):",
        "    for k in range(64):",
        "        i = i_j_f // 64; j = i_j_f % 64",
        "        C[i, j] += A[i, k] * B[k, j]",
    ]


def test_create_schedule_accepts_tensor_and_op():
    A, B, C = make_gemm(8)
    assert te.create_schedule(C)[C].op is C.op
    assert te.create_schedule(C.op)[C.op].op is C.op
    assert te.create_schedule([C.op]).op is C.op
    with pytest.raises(ScheduleError, match="needs a compute op"):
        te.create_schedule(A)


def test_split_factor_and_nparts():
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    io, ii = s[C].split(i, factor=16)
    assert (io.name, io.extent, ii.name, ii.extent) == ("i_o", 4, "i_i", 16)
    jo, ji = s[C].split(j, nparts=16)
    assert (jo.extent, ji.extent) == (16, 4)
    assert [a.name for a in s[C].leaf_iter_vars] == ["i_o", "i_i", "j_o", "j_i", "k"]
    nest = te.lower(s)
    assert [(lp.name, lp.extent) for lp in nest.loops] == [
        ("i_o", 4),
        ("i_i", 16),
        ("j_o", 16),
        ("j_i", 4),
        ("k", 64),
    ]
    assert [lp.kind for lp in nest.loops] == ["spatial"] * 4 + ["reduce"]
    # split of a split
    ioo, ioi = s[C].split(io, factor=2)
    assert [a.name for a in s[C].leaf_iter_vars][:3] == ["i_o_o", "i_o_i", "i_i"]
    assert "i_o = (i_o_o * 2 + i_o_i); i = (i_o * 16 + i_i)" in str(te.lower(s))


def test_tile_returns_tvm_order():
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    xo, yo, xi, yi = s[C].tile(i, j, x_factor=8, y_factor=32)
    assert [a.name for a in (xo, yo, xi, yi)] == ["i_o", "j_o", "i_i", "j_i"]
    assert [(a.name, a.extent) for a in s[C].leaf_iter_vars] == [
        ("i_o", 8),
        ("j_o", 2),
        ("i_i", 8),
        ("j_i", 32),
        ("k", 64),
    ]


def test_reorder_subset_permutes_occupied_positions():
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, factor=4)
    # loops: i_o i_i j k; reorder (k, i_i) -> positions 1 and 3 hold k, i_i
    s[C].reorder(k, ii)
    assert [a.name for a in s[C].leaf_iter_vars] == ["i_o", "k", "j", "i_i"]


def test_fuse_after_tile_and_errors():
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    xo, yo, xi, yi = s[C].tile(i, j, 16, 16)
    with pytest.raises(ScheduleError, match="fuse needs axis i_o directly outside axis i_i"):
        s[C].fuse(xo, xi)
    with pytest.raises(ScheduleError, match="fuse needs axis j_o directly outside axis i_o"):
        s[C].fuse(yo, xo)
    f = s[C].fuse(xo, yo)
    assert (f.name, f.extent) == ("i_o_j_o_f", 16)
    assert [a.name for a in s[C].leaf_iter_vars] == ["i_o_j_o_f", "i_i", "j_i", "k"]
    with pytest.raises(ScheduleError, match="axis i_o has already been fused"):
        s[C].split(xo, factor=2)
    # a fused axis can be split again
    fo, fi = s[C].split(f, factor=4)
    assert (fo.name, fi.name) == ("i_o_j_o_f_o", "i_o_j_o_f_i")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"factor": 5}, "split factor 5 does not divide extent 64 of axis i"),
        ({"nparts": 3}, "split nparts 3 does not divide extent 64 of axis i"),
        ({"factor": 0}, "split factor must be an int >= 1, got factor=0 for axis i"),
        ({"nparts": -2}, "split nparts must be an int >= 1, got nparts=-2 for axis i"),
        ({"factor": 2.0}, "split factor must be an int >= 1, got factor=2.0 for axis i"),
        ({}, "split of axis i needs exactly one of factor and nparts"),
        ({"factor": 4, "nparts": 16}, "split of axis i needs exactly one of factor and nparts"),
    ],
)
def test_split_errors(kwargs, message):
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    i, _ = s[C].op.axis
    with pytest.raises(ScheduleError, match=message):
        s[C].split(i, **kwargs)


def test_split_message_mentions_no_tails():
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    with pytest.raises(ScheduleError, match="guarded tail loops are not implemented"):
        s[C].split(s[C].op.axis[0], factor=5)


def test_axis_used_twice():
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    s[C].split(i, factor=8)
    with pytest.raises(ScheduleError, match="axis i has already been split"):
        s[C].split(i, factor=4)
    with pytest.raises(ScheduleError, match="axis i has already been split"):
        s[C].reorder(j, i)
    with pytest.raises(ScheduleError, match="axis i has already been split"):
        s[C].tile(i, j, 8, 8)


def test_axis_from_another_stage():
    A, B, C = make_gemm(64)
    D = te.compute((64, 64), lambda i, j: A[i, j] * 2, name="D")
    s = te.create_schedule(C)
    with pytest.raises(ScheduleError, match="axis i does not belong to stage C"):
        s[C].split(D.op.axis[0], factor=8)
    with pytest.raises(ScheduleError, match="D is not a stage of this schedule"):
        s[D]
    k2 = te.reduce_axis((0, 64), name="k2")
    with pytest.raises(ScheduleError, match="axis k2 does not belong to stage C"):
        s[C].reorder(k2, s[C].op.axis[0])


def test_reorder_errors():
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    with pytest.raises(ScheduleError, match="reorder lists axis j more than once"):
        s[C].reorder(i, j, j)
    with pytest.raises(ScheduleError, match="tile needs two distinct axes, got axis i twice"):
        s[C].tile(i, i, 8, 8)
    with pytest.raises(ScheduleError, match="fuse needs at least two axes"):
        s[C].fuse(i)


def test_layout_errors():
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    with pytest.raises(ScheduleError, match="padded width 63 is smaller than the row length 64"):
        s.pad(A, width=63)
    with pytest.raises(ScheduleError, match="pack tile 5 does not divide dimension 1 .extent 64."):
        s.pack(B, tile=5)
    with pytest.raises(ScheduleError, match="pack tile must be an int >= 1, got tile=0"):
        te.PackedLayout(tile=0)
    with pytest.raises(ScheduleError, match="not an input|input buffer of compute C"):
        s.transform_layout(C, te.PackedLayout(16))
    other = te.placeholder((64, 64), name="Z")
    msg = r"input buffer of compute C \(one of \['A', 'B'\]\), got Z"
    with pytest.raises(ScheduleError, match=msg):
        s.pad(other, width=65)


def test_duplicate_buffer_names_rejected():
    A = te.placeholder((4,), name="X")
    B = te.placeholder((4,), name="X")
    C = te.compute((4,), lambda i: A[i] + B[i], name="C")
    with pytest.raises(ScheduleError, match="buffer names of compute C must be distinct"):
        te.create_schedule(C)


def test_lower_is_a_snapshot():
    A, B, C = make_gemm(16)
    s = te.create_schedule(C)
    nest = te.lower(s)
    s[C].split(s[C].op.axis[0], factor=4)
    s.pad(A, 17)
    assert [lp.name for lp in nest.loops] == ["i", "j", "k"]
    assert isinstance(nest.buffers[0].layout, te.RowMajor)


def test_tvm_tutorial_sequence_correct_with_packing():
    A, B, C, s = tvm_tutorial_schedule()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 64)), rng.standard_normal((64, 64))
    fn = te.build(s)
    c_tiled = fn(a, b)
    s.pack(B, tile=16)
    c_packed = te.build(s)(a, b)
    want = a @ b
    assert np.max(np.abs(c_tiled - want)) / np.max(np.abs(want)) <= 1e-12
    np.testing.assert_array_equal(c_packed, c_tiled)
    assert c_packed.dtype == np.float64
    out = np.full((64, 64), np.nan)
    assert fn(a, b, out=out) is out
    np.testing.assert_array_equal(out, c_tiled)


def _stage_state(stage):
    return ([a.name for a in stage.leaf_iter_vars], [a.name for a in stage.all_iter_vars],
            len(stage.relations))


@pytest.mark.parametrize("factors", [(8, 7), (7, 8), (8, 0), (8, 128)])
def test_failed_tile_leaves_schedule_unchanged(factors):
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    before = _stage_state(s[C])
    with pytest.raises(ScheduleError, match="split factor"):
        s[C].tile(i, j, *factors)
    assert _stage_state(s[C]) == before
    xo, yo, xi, yi = s[C].tile(i, j, 8, 8)
    assert [a.name for a in (xo, yo, xi, yi)] == ["i_o", "j_o", "i_i", "j_i"]
    assert [a.name for a in s[C].leaf_iter_vars] == ["i_o", "j_o", "i_i", "j_i", "k"]
    a = np.random.default_rng(0).standard_normal((64, 64))
    np.testing.assert_allclose(te.build(s)(a, a), a @ a, rtol=1e-12, atol=1e-12)


def test_failed_split_fuse_reorder_leave_schedule_unchanged():
    A, B, C = make_gemm(64)
    s = te.create_schedule(C)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, nparts=4)
    before = _stage_state(s[C])
    with pytest.raises(ScheduleError, match="nparts 3 does not divide"):
        s[C].split(j, nparts=3)
    with pytest.raises(ScheduleError, match="directly outside"):
        s[C].fuse(io, ii, k)
    with pytest.raises(ScheduleError, match="more than once"):
        s[C].reorder(k, j, k)
    with pytest.raises(ScheduleError, match="already been split"):
        s[C].reorder(k, i)
    assert _stage_state(s[C]) == before
    f = s[C].fuse(io, ii, j)
    assert f.name == "i_o_i_i_j_f" and f.extent == 64 * 64
