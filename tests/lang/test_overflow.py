"""Signed integer overflow: raised by default (``sanitize_overflow``), wrapped on request."""

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import autotile.lang as tl
from autotile.errors import IntegerOverflowError, LangError, OutOfBoundsError
from autotile.lang import jit

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


@jit
def strided_load(x_ptr, out_ptr, n, stride):
    pid = tl.program_id(0)
    off = pid * stride
    tl.store(out_ptr + pid, tl.load(x_ptr + off, mask=off < n, other=-1.0))


@jit
def strided_load64(x_ptr, out_ptr, n, stride):
    pid = tl.program_id(0).to(tl.int64)
    off = pid * stride
    tl.store(out_ptr + pid, tl.load(x_ptr + off, mask=off < n, other=-1.0))


def test_wrapped_pointer_offset_raises_naming_kernel_program_operands_and_wrap():
    # Triton #6748: pid * stride leaves int32 from program 2 on (and is 0 again at 4)
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(5, np.float32)
    with pytest.raises(IntegerOverflowError) as info:
        strided_load[(5,)](x, out, 10, 2**30)
    msg = str(info.value)
    assert msg.startswith(
        "int32 overflow in kernel 'strided_load', program_id=(2,): tensor<scalarxint32> * "
        "'stride' tensor<scalarxint32>: 2 * 1073741824 = 2147483648 does not fit in int32 "
        "[-2147483648, 2147483647] (it wraps to -2147483648 on the GPU)")
    assert "sanitize_overflow=False" in msg
    assert out.tolist() == [0.0, -1.0, 0.0, 0.0, 0.0]  # programs 0 and 1 ran
    assert isinstance(info.value, LangError) and isinstance(info.value, OverflowError)


def test_same_access_in_int64_is_exact():
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(5, np.float32)
    strided_load64[(5,)](x, out, 10, 2**30)
    assert out.tolist() == [0.0, -1.0, -1.0, -1.0, -1.0]  # program 4 is masked off


def test_same_access_in_int64_without_mask_raises_out_of_bounds():
    @jit
    def k(x_ptr, stride):
        tl.load(x_ptr + tl.program_id(0).to(tl.int64) * stride)

    with pytest.raises(OutOfBoundsError, match="program_id=\\(1,\\)"):
        k[(5,)](np.arange(10, dtype=np.float32), 2**30)


def test_sanitize_overflow_false_keeps_gpu_wrapping():
    x = np.arange(10, dtype=np.float32) + 1
    out = np.zeros(1, np.float32)

    @jit
    def k(x_ptr, out_ptr, stride):
        pid = tl.program_id(0) + 4
        tl.store(out_ptr, tl.load(x_ptr + pid * stride))

    k[(1,)](x, out, 2**30, sanitize_overflow=False)
    assert out.tolist() == [1.0]  # 4 * 2**30 wrapped to 0: x[0]
    with pytest.raises(IntegerOverflowError, match=r"program_id=\(0,\): .*: 4 \* 1073741824 = "
                                                   r"4294967296 .*wraps to 0 on the GPU"):
        k[(1,)](x, out, 2**30)


def test_sanitize_overflow_option_must_be_a_bool():
    with pytest.raises(LangError, match="sanitize_overflow must be a bool .*, got "
                                        "sanitize_overflow='no'"):
        strided_load[(1,)](np.zeros(1, np.float32), np.zeros(1, np.float32), 1, 0,
                           sanitize_overflow="no")


@pytest.mark.parametrize("batch", [False, True])
def test_batched_programs_raise_at_the_same_program(batch):
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(8, np.float32)
    with pytest.raises(IntegerOverflowError, match=r"program_id=\(2,\): .*: 2 \* 1073741824"):
        strided_load[(8,)](x, out, 10, 2**30, batch_programs=batch)


def test_batched_programs_wrap_when_asked():
    @jit
    def hash_kernel(out_ptr, seed):
        pid = tl.program_id(0)
        h = (pid + seed) * 1103515245 + 12345  # an LCG step: wraps in int32 on purpose
        tl.store(out_ptr + pid, h)

    p = np.arange(64, dtype=np.int64)
    want = (((p + 0) * 1103515245 + 12345) % 2**32).astype(np.uint32).view(np.int32)
    for batch in (False, True):
        out = np.zeros(64, np.int32)
        hash_kernel[(64,)](out, 0, batch_programs=batch, sanitize_overflow=False)
        np.testing.assert_array_equal(out, want)
        assert hash_kernel.last_record.n_programs_batched == (64 if batch else 0)
        with pytest.raises(IntegerOverflowError, match=r"program_id=\(2,\)"):
            hash_kernel[(64,)](out, 0, batch_programs=batch)


@pytest.mark.parametrize("op, a, b, exact", [
    ("add", I32_MAX, 1, 2**31),
    ("sub", I32_MIN, 1, -(2**31) - 1),
    ("mul", 65536, 65536, 2**32),
    ("lshift", 1, 31, 2**31),
])
def test_each_op_is_checked(op, a, b, exact):
    @jit
    def k(o_ptr, a, b, OP: tl.constexpr):
        if OP == "add":
            r = a + b
        elif OP == "sub":
            r = a - b
        elif OP == "mul":
            r = a * b
        else:
            r = a << b
        tl.store(o_ptr, r)

    out = np.zeros(1, np.int32)
    with pytest.raises(IntegerOverflowError, match=f"= {exact} does not fit in int32"):
        k[(1,)](out, a, b, OP=op)
    k[(1,)](out, a, b, OP=op, sanitize_overflow=False)
    assert out[0] == np.int64(exact).astype(np.int32)


def test_negation_of_int_min_is_checked():
    @jit
    def k(o_ptr, a):
        tl.store(o_ptr, -a)

    out = np.zeros(1, np.int32)
    with pytest.raises(IntegerOverflowError, match="-2147483648"):
        k[(1,)](out, I32_MIN)


def test_block_overflow_names_the_first_bad_element():
    @jit
    def k(o_ptr, base):
        offs = tl.arange(0, 8)
        tl.store(o_ptr + offs, base + offs)

    out = np.zeros(8, np.int32)
    with pytest.raises(IntegerOverflowError, match=r"element \(5,\): 2147483643 \+ 5 = "
                                                   r"2147483648"):
        k[(1,)](out, I32_MAX - 4)


def test_int64_overflow_is_checked():
    @jit
    def k(o_ptr, a, b):
        tl.store(o_ptr, a.to(tl.int64) * b)

    out = np.zeros(1, np.int64)
    k[(1,)](out, 2**31, 2**31 - 1)
    assert out[0] == 2**31 * (2**31 - 1)
    with pytest.raises(IntegerOverflowError, match="does not fit in int64"):
        k[(1,)](out, 2**32, 2**31)


def test_unsigned_arithmetic_wraps_by_definition():
    @jit
    def k(o_ptr, a):
        x = a.to(tl.uint32)
        tl.store(o_ptr, x * 2654435761 + x)

    out = np.zeros(1, np.uint32)
    k[(1,)](out, 123456789)
    assert out[0] == (123456789 * 2654435761 + 123456789) % 2**32


def test_scalar_out_of_range_for_the_tensor_type_raises():
    @jit
    def k(o_ptr, BIG: tl.constexpr):
        tl.store(o_ptr + tl.arange(0, 2), tl.arange(0, 2) + BIG)

    out = np.zeros(2, np.int32)
    with pytest.raises(LangError, match="Scalar 4294967296 is out of range for type int32"):
        k[(1,)](out, BIG=2**32)


def _near_int32_limits():
    edge = 2**20
    return st.one_of(st.integers(-(2**31), 2**31 - 1),
                     st.integers(2**31 - edge, 2**31 - 1),
                     st.integers(-(2**31), -(2**31) + edge),
                     st.integers(2**15 - 64, 2**16 + 64), st.integers(-64, 64))


@jit
def offset_kernel(x_ptr, out_ptr, base, stride, lane, P: tl.constexpr, WIDE: tl.constexpr):
    p = tl.program_id(0) + P
    if WIDE:
        p = p.to(tl.int64)
    off = base + p * stride + tl.arange(0, 4) * lane
    vals = tl.load(x_ptr + off, mask=(off >= 0) & (off < 16), other=-1)
    tl.store(out_ptr + tl.program_id(0) * 4 + tl.arange(0, 4), vals)


def _fits32(v):
    return I32_MIN <= v <= I32_MAX


@settings(max_examples=300, deadline=None)
@given(pid=st.integers(0, 2**16), stride=_near_int32_limits(), base=_near_int32_limits(),
       lane=_near_int32_limits(), wide=st.booleans(), batch=st.booleans(),
       aim=st.none() | st.integers(0, 15))
def test_pointer_offsets_near_the_int32_limit_are_exact_or_raise(pid, stride, base, lane, wide,
                                                                 batch, aim):
    """``base + p * stride + arange(4) * lane``: the exact offsets, or an error; never wrapped.

    Four programs ``p = pid .. pid + 3`` (batched or one at a time); ``p`` is int32, or
    int64 with ``WIDE``.  Lanes outside ``[0, 16)`` are masked off, so a wrapped offset
    landing inside the buffer would load a wrong element silently; ``aim`` picks ``base``
    so that it does (Triton #6748).
    """
    if aim is not None:
        # the dangerous case: base chosen so that int32 wrapping lands program ``pid`` on
        # element ``aim`` of the buffer
        base = (aim - pid * stride + 2**31) % 2**32 - 2**31
    x = np.arange(100, 116, dtype=np.int64)
    out = np.full(16, -2, np.int64)
    lanes = [i * lane for i in range(4)]
    ok = all(_fits32(v) for v in lanes)
    want = []
    for q in range(pid, pid + 4):
        prod = q * stride
        ok = ok and _fits32(q) and (wide or _fits32(prod))
        head = base + prod
        ok = ok and (wide or _fits32(head))
        offs = [head + v for v in lanes]
        ok = ok and (wide or all(_fits32(o) for o in offs))
        ok = ok and all(-(2**63) <= o < 2**63 for o in offs)
        want += [int(x[o]) if 0 <= o < 16 else -1 for o in offs]
    try:
        offset_kernel[(4,)](x, out, base, stride, lane, P=pid, WIDE=wide, batch_programs=batch)
    except IntegerOverflowError:
        event("raised")
        assert not ok
        return
    event("exact, some lane loaded" if max(want) >= 0 else "exact, all lanes masked")
    assert ok
    assert out.tolist() == want


# -- with the op counters and the programs= launch option -----------------------------
@jit
def lcg_block_kernel(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    h = (offs + seed) * 1103515245 + 12345  # wraps in int32 on purpose
    tl.store(out_ptr + offs, -h)


def _lcg_want(n):
    p = np.arange(n, dtype=np.int64)
    h = ((p * 1103515245 + 12345) % 2**32).astype(np.uint32).view(np.int32)
    return -h  # int32 negation wraps too (no lane holds INT32_MIN here)


@pytest.mark.parametrize("batch", [False, True])
def test_subset_launch_raises_at_its_first_program_that_overflows(batch):
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(16, np.float32)
    # programs 0 and 1 are exact, 5 is the first of the subset whose pid * 2**30 wraps
    with pytest.raises(IntegerOverflowError, match=r"program_id=\(5,\): .*: 5 \* 1073741824"):
        strided_load[(16,)](x, out, 10, 2**30, programs=[0, 1, 5, 6, 7, 8, 9, 10, 11],
                            batch_programs=batch)
    assert out[:2].tolist() == [0.0, -1.0]


@pytest.mark.parametrize("batch", [False, True])
def test_subset_launch_wraps_when_asked_with_the_full_launch_rows(batch):
    n_prog, block = 64, 8
    full = np.zeros(n_prog * block, np.int32)
    lcg_block_kernel[(n_prog,)](full, 0, BLOCK=block, sanitize_overflow=False,
                                batch_programs=batch)
    np.testing.assert_array_equal(full, _lcg_want(n_prog * block))
    rec_full = lcg_block_kernel.last_record
    keep = np.array([1, 2, 3, 4, 5, 6, 7, 8, 40, 63])
    sub = np.zeros_like(full)
    lcg_block_kernel[(n_prog,)](sub, 0, BLOCK=block, sanitize_overflow=False,
                                batch_programs=batch, programs=keep)
    rec = lcg_block_kernel.last_record
    rows = (keep[:, None] * block + np.arange(block)).ravel()
    np.testing.assert_array_equal(sub[rows], full[rows])
    assert rec.n_programs_batched == (8 if batch else 0)  # the run 1..8 is batched
    for name in ("alu_ops", "max_tile_elems", "elems_written"):
        np.testing.assert_array_equal(getattr(rec, name), getattr(rec_full, name)[keep])
    # per program: offs (mul, add), + seed, * C, + 12345, negation: 6 ops on 8 lanes but
    # pid * BLOCK is one lane
    assert rec.alu_ops.tolist() == [1 + 5 * block] * keep.size
    with pytest.raises(IntegerOverflowError, match=r"program_id=\(1,\)"):
        lcg_block_kernel[(n_prog,)](sub, 0, BLOCK=block, batch_programs=batch, programs=keep)


def test_negation_is_checked_and_counted_as_one_alu_lane_per_element():
    @jit
    def k(o_ptr, a, BLOCK: tl.constexpr):
        tl.store(o_ptr + tl.arange(0, BLOCK), -(a + tl.zeros((BLOCK,), tl.int32)))

    out = np.zeros(4, np.int32)
    k[(1,)](out, 7, BLOCK=4)
    assert out.tolist() == [-7] * 4
    assert k.last_record.alu_ops.tolist() == [8]  # the add and the negation
    with pytest.raises(IntegerOverflowError, match=r"-\(-2147483648\) = 2147483648"):
        k[(1,)](out, I32_MIN, BLOCK=4)
    k[(1,)](out, I32_MIN, BLOCK=4, sanitize_overflow=False)
    assert out.tolist() == [I32_MIN] * 4
    assert k.last_record.alu_ops.tolist() == [8]
