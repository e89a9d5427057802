from __future__ import annotations

import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit


@jit
def pid_kernel(out_ptr, GX: tl.constexpr, GY: tl.constexpr):
    x = tl.program_id(0)
    y = tl.program_id(axis=1)
    z = tl.program_id(2)
    idx = x + GX * (y + GY * z)
    tl.store(out_ptr + idx * 4 + tl.arange(0, 4),
             tl.where(tl.arange(0, 4) == 0, x,
                      tl.where(tl.arange(0, 4) == 1, y,
                               tl.where(tl.arange(0, 4) == 2, z, tl.num_programs(0)))))


@pytest.mark.parametrize("grid", [(5,), (3, 2), (2, 3, 4)])
def test_grids_1d_2d_3d(grid):
    g = tuple(grid) + (1,) * (3 - len(grid))
    out = np.full((g[0] * g[1] * g[2], 4), -1, dtype=np.int32)
    pid_kernel[grid](out, GX=g[0], GY=g[1])
    exp = np.array([(x, y, z, g[0]) for z in range(g[2]) for y in range(g[1])
                    for x in range(g[0])], dtype=np.int32)
    np.testing.assert_array_equal(out, exp)
    rec = pid_kernel.last_record
    assert rec.n_programs == g[0] * g[1] * g[2]
    assert rec.grid == g
    np.testing.assert_array_equal(rec.program_ids, exp[:, :3])


def test_callable_grid_gets_all_arguments():
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (tl.cdiv(meta["n"], meta["BLOCK"]),)

    @jit(do_not_specialize=["n"])
    def fill(ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(ptr + offs, offs.to(tl.float32) * 2.0, mask=offs < n)

    out = np.zeros(100, dtype=np.float32)
    fill[grid](out, 100, BLOCK=32, num_warps=2)
    np.testing.assert_array_equal(out, np.arange(100) * 2.0)
    assert seen["n"] == 100 and seen["BLOCK"] == 32 and seen["num_warps"] == 2
    assert fill.last_record.n_programs == 4
    assert fill.last_record.num_warps == 2


def test_int_grid_and_zero_grid():
    out = np.zeros((1, 4), dtype=np.int32)
    pid_kernel[1](out, GX=1, GY=1)
    pid_kernel[(0,)](out, GX=1, GY=1)
    assert pid_kernel.last_record.n_programs == 0


def test_bad_grid_and_args():
    out = np.zeros((1, 4), dtype=np.int32)
    with pytest.raises(LangError, match="1 to 3"):
        pid_kernel[(1, 1, 1, 1)](out, GX=1, GY=1)
    with pytest.raises(LangError, match="missing argument 'GY'"):
        pid_kernel[(1,)](out, GX=1)
    with pytest.raises(LangError, match="unexpected keyword"):
        pid_kernel[(1,)](out, GX=1, GY=1, BOGUS=3)


def test_runtime_block_shape_is_rejected_by_name():
    @jit
    def bad(ptr, n):
        tl.store(ptr + tl.arange(0, n), 1.0)

    with pytest.raises(LangError, match="'n'"):
        bad[(1,)](np.zeros(8, np.float32), 8)


def test_arange_power_of_two_error_names_value():
    @jit
    def bad(ptr, B: tl.constexpr):
        tl.store(ptr + tl.arange(0, B), 1.0)

    with pytest.raises(LangError, match="= 48"):
        bad[(1,)](np.zeros(64, np.float32), B=48)


def test_builtins_outside_kernel_raise():
    with pytest.raises(LangError, match="inside a @jit kernel"):
        tl.program_id(0)


def test_host_helpers():
    assert tl.cdiv(98_432, 1024) == 97
    assert tl.next_power_of_2(781) == 1024
    assert tl.next_power_of_2(1024) == 1024
    assert tl.next_power_of_2(1) == 1
    assert tl.arange(0, 4).v.tolist() == [0, 1, 2, 3]


def test_device_function_and_scalar_control_flow():
    @jit
    def helper(x):
        return x * 2

    @jit
    def k(ptr, n, BLOCK: tl.constexpr):
        acc = tl.zeros((BLOCK,), dtype=tl.int32)
        for i in tl.range(0, n, num_stages=2):
            acc += helper(i)
        for j in tl.static_range(2):
            acc = acc + j
        if n > 3:
            acc = acc + 100
        tl.store(ptr + tl.arange(0, BLOCK), acc)

    out = np.zeros(4, dtype=np.int32)
    k[(1,)](out, 5, BLOCK=4)
    assert out.tolist() == [2 * (0 + 1 + 2 + 3 + 4) + 1 + 100] * 4


def test_python_scalar_arguments_have_triton_types():
    @jit
    def k(out_i, out_f, a, b, big):
        tl.static_assert(a.dtype == tl.int32)
        tl.static_assert(b.dtype == tl.float32)
        tl.static_assert(big.dtype == tl.int64)
        tl.store(out_i, a * 3)
        tl.store(out_f, b / 2)

    oi = np.zeros(1, np.int32)
    of = np.zeros(1, np.float32)
    k[(1,)](oi, of, 7, 3.0, 2**40)
    assert oi[0] == 21 and of[0] == 1.5


@pytest.mark.parametrize("grid", [(96.125,), (8.0,), (np.float32(2.0),), (True,), (np.bool_(True),),
                                  ("8",), "8", (2, "1"), (2, None), None])
def test_non_integer_grid_entries_raise(grid):
    out = np.zeros((8, 4), dtype=np.int32)
    with pytest.raises(LangError, match=r"grid must (hold ints|be a tuple)") as ei:
        pid_kernel[grid](out, GX=8, GY=1)
    bad = grid[-1] if isinstance(grid, tuple) else grid
    assert f"grid={grid!r}" in str(ei.value) and repr(bad) in str(ei.value)
    assert not out.any()


def test_float_grid_error_names_value_and_hints_cdiv():
    out = np.zeros((97, 4), dtype=np.int32)
    with pytest.raises(LangError, match=r"grid=\(96\.125,\).*tl\.cdiv"):
        pid_kernel[(98_432 / 1024,)](out, GX=97, GY=1)


def test_numpy_integer_grid_entries_are_accepted():
    out = np.full((6, 4), -1, dtype=np.int32)
    pid_kernel[(np.int64(3), np.uint8(2))](out, GX=3, GY=2)
    assert pid_kernel.last_record.grid == (3, 2, 1)
    assert all(type(x) is int for x in pid_kernel.last_record.grid)
    np.testing.assert_array_equal(out[:, 0], [0, 1, 2, 0, 1, 2])
    pid_kernel[np.int32(2)](out, GX=2, GY=1)
    assert pid_kernel.last_record.n_programs == 2


def test_callable_grid_result_is_checked():
    out = np.zeros((8, 4), dtype=np.int32)
    with pytest.raises(LangError, match=r"grid=\(2\.5,\).*grid callable"):
        pid_kernel[lambda meta: (meta["GX"] / 4,)](out, GX=10, GY=1)
    with pytest.raises(LangError, match=r"bool"):
        pid_kernel[lambda meta: (True,)](out, GX=1, GY=1)
    with pytest.raises(LangError, match=r"at most 16777216 programs.*grid callable"):
        pid_kernel[lambda meta: (2**20, 2**5)](out, GX=1, GY=1)


@pytest.mark.parametrize("grid", [(2**30,), (2**12, 2**12, 2), (2**24 + 1,)])
def test_huge_grid_raises_before_allocating(grid):
    out = np.zeros((1, 4), dtype=np.int32)
    with pytest.raises(LangError, match=r"at most 16777216 programs .*got grid=") as ei:
        pid_kernel[grid](out, GX=1, GY=1)
    assert str(grid[0]) in str(ei.value)


def test_trace_of_huge_grid_runs_program_zero_only():
    out = np.zeros((1, 4), dtype=np.int32)
    ir = pid_kernel.trace(out, GX=1, GY=1, grid=(2**30, 4))
    assert len(ir) > 0
    assert pid_kernel.last_record.n_programs == 1


def test_grid_entry_beyond_int32_raises():
    out = np.zeros((1, 4), dtype=np.int32)
    with pytest.raises(LangError, match=r"at most 2\*\*31 - 1.*grid=\(2147483648,\)"):
        pid_kernel[(2**31,)](out, GX=1, GY=1)
    with pytest.raises(LangError, match=r"at most 2\*\*31 - 1"):
        pid_kernel.trace(out, GX=1, GY=1, grid=(2**31,))


def test_calling_a_kernel_without_a_grid_says_how_to_launch_it():
    out = np.zeros(4, np.int32)
    with pytest.raises(LangError, match=r"'pid_kernel' is a @jit kernel: launch it with "
                                        r"pid_kernel\[grid\]\(\.\.\.\)"):
        pid_kernel(out, GX=2, GY=2)


@pytest.mark.parametrize("bad", [3, 0, -4, 6, 2.0, "4", True])
def test_num_warps_must_be_a_power_of_2(bad):
    # Triton's compiler options assert "num_warps must be a power of 2" (test_num_warps_pow2)
    @jit
    def k(dst):
        pass

    dst = np.zeros(4, np.float32)
    with pytest.raises(LangError) as err:
        k[(1,)](dst, num_warps=bad)
    assert f"num_warps must be a power of 2, got num_warps={bad!r}" in str(err.value)
    for good in (1, 2, 4, 8, 16, 32, None):
        k[(1,)](dst, num_warps=good)
        assert k.last_record.num_warps == (4 if good is None else good)


@pytest.mark.parametrize("value, fits", [(2**64 - 1, True), (2**64, False), (-2**63, True),
                                         (-2**63 - 1, False)])
def test_int_argument_outside_64_bits_is_an_overflow_error_naming_it(value, fits):
    # Triton's test_value_specialization_overflow: OverflowError outside [-2**63, 2**64)
    from autotile.errors import IntegerOverflowError

    @jit
    def k(VALUE, x_ptr):
        tl.store(x_ptr, VALUE.to(tl.float64))

    x = np.zeros(1, np.float64)
    if fits:
        k[(1,)](value, x)
        assert x[0] == float(value)
    else:
        with pytest.raises(IntegerOverflowError) as err:
            k[(1,)](value, x)
        assert isinstance(err.value, OverflowError)
        assert f"argument 'VALUE' = {value} does not fit in 64 bits" in str(err.value)
