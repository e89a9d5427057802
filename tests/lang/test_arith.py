import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import autotile.lang as tl
from autotile.errors import IntegerOverflowError, LangError
from autotile.lang import jit


@jit
def binop_kernel(a_ptr, b_ptr, o_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=1)
    b = tl.load(b_ptr + offs, mask=m, other=1)
    if OP == "floordiv":
        r = a // b
    elif OP == "mod":
        r = a % b
    elif OP == "add":
        r = a + b
    elif OP == "sub":
        r = a - b
    elif OP == "mul":
        r = a * b
    elif OP == "div":
        r = a / b
    elif OP == "max":
        r = tl.maximum(a, b)
    elif OP == "min":
        r = tl.minimum(a, b)
    elif OP == "lt":
        r = a < b
    elif OP == "and":
        r = a & b
    elif OP == "or":
        r = a | b
    else:
        r = ~a
    tl.store(o_ptr + offs, r, mask=m)


def run_binop(op, a, b, out_dtype):
    out = np.zeros(a.size, out_dtype)
    binop_kernel[(1,)](a, b, out, a.size, OP=op, BLOCK=tl.next_power_of_2(max(a.size, 1)))
    return out


def test_int_floordiv_and_mod_truncate_toward_zero():
    a = np.array([7, -7, 7, -7, 0, 5], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5], np.int32)
    assert run_binop("floordiv", a, b, np.int32).tolist() == [3, -3, -3, 3, 0, 1]
    assert run_binop("mod", a, b, np.int32).tolist() == [1, -1, 1, -1, 0, 0]


def test_float_mod_is_fmod_and_float_floordiv_rejected():
    a = np.array([7.5, -7.5], np.float32)
    b = np.array([2.0, 2.0], np.float32)
    assert run_binop("mod", a, b, np.float32).tolist() == [1.5, -1.5]
    with pytest.raises(LangError, match="integer"):
        run_binop("floordiv", a, b, np.float32)


def test_promotion_rules():
    @jit
    def k(h_ptr, i_ptr):
        h = tl.load(h_ptr + tl.arange(0, 2))
        i = tl.load(i_ptr + tl.arange(0, 2))
        tl.static_assert((h * 2.0).dtype == tl.float16)
        tl.static_assert((h + 1).dtype == tl.float16)
        tl.static_assert((h / h).dtype == tl.float32)
        tl.static_assert((h + h.to(tl.float32)).dtype == tl.float32)
        tl.static_assert((i / i).dtype == tl.float32)
        tl.static_assert((i * 2).dtype == tl.int32)
        tl.static_assert((i * 2.0).dtype == tl.float32)
        tl.static_assert((i + i.to(tl.int64)).dtype == tl.int64)
        tl.static_assert((i < 1).dtype == tl.int1)
        tl.static_assert((h.to(tl.bfloat16) + 1.0).dtype == tl.bfloat16)
        # Triton 3.4 (semantic.computation_type_impl, rule 3): fp16 with bf16 is fp16
        tl.static_assert((h.to(tl.bfloat16) + h).dtype == tl.float16)
        tl.static_assert(tl.program_id(0).dtype == tl.int32)

    k[(1,)](np.ones(2, np.float16), np.ones(2, np.int32))


def test_int32_index_arithmetic_wraps_like_the_gpu_with_sanitize_overflow_false():
    @jit
    def k(o_ptr, big):
        tl.store(o_ptr, tl.program_id(0) + big * 2)

    out = np.zeros(1, np.int32)
    k[(1,)](out, 2**30 + 1, sanitize_overflow=False)
    assert out[0] == np.int32(-(2**31) + 2)
    with pytest.raises(IntegerOverflowError, match="1073741825 \\* 2 = 2147483650"):
        k[(1,)](out, 2**30 + 1)  # the default raises (tests/lang/test_overflow.py)


def test_broadcast_errors_name_shapes():
    @jit
    def k(ptr):
        a = tl.arange(0, 4)
        b = tl.arange(0, 8)
        tl.store(ptr + a, (a + b).to(tl.float32))

    with pytest.raises(LangError, match=r"incompatible shapes for add: tensor<4xint32> and "
                                         r"tensor<8xint32>"):
        k[(1,)](np.zeros(8, np.float32))


def test_broadcasting_none_indexing():
    @jit
    def k(ptr, R: tl.constexpr, C: tl.constexpr):
        r = tl.arange(0, R)
        c = tl.arange(0, C)
        tl.store(ptr + r[:, None] * C + c[None, :], r[:, None] * 10 + c[None, :])

    out = np.zeros((4, 8), np.int32)
    k[(1,)](out, R=4, C=8)
    np.testing.assert_array_equal(out, np.arange(4)[:, None] * 10 + np.arange(8)[None, :])


def bf16_reference(x):
    """Round float32 -> bfloat16 (nearest, ties to even) by exhaustive neighbour search."""
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    for i, v in enumerate(x):
        if np.isnan(v) or np.isinf(v):
            out[i] = v
            continue
        b = np.array([v], np.float32).view(np.uint32)[0]
        lo = np.array([b & 0xFFFF0000], np.uint32).view(np.float32)[0]
        hi_bits = (b & 0xFFFF0000) + 0x10000
        hi = np.array([hi_bits], np.uint32).view(np.float32)[0]
        dlo, dhi = abs(float(np.float32(v)) - float(lo)), abs(float(hi) - float(np.float32(v)))
        if dlo < dhi or (dlo == dhi and ((b >> 16) & 1) == 0):
            out[i] = lo
        else:
            out[i] = hi
    return out


def test_bf16_rounding_matches_reference():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-5, 5, 300),
                        [1.0 + 2**-8, 1.0 + 3 * 2**-8, -(1.0 + 2**-8), 3.0e38, np.inf, -np.inf,
                         0.0, -0.0, 1e-40]]).astype(np.float32)
    got = tl.bf16_to_float32(tl.bf16_array(x))
    np.testing.assert_array_equal(got, bf16_reference(x).astype(np.float32))
    assert tl.bf16_to_float32(tl.bf16_array([1.0 + 2**-8]))[0] == 1.0  # tie -> even
    assert tl.bf16_to_float32(tl.bf16_array([1.0 + 3 * 2**-8]))[0] == 1.0 + 2**-6
    assert np.isnan(tl.bf16_to_float32(tl.bf16_array([np.nan]))[0])


def test_bf16_kernel_arithmetic_rounds_every_op():
    @jit
    def k(a_ptr, b_ptr, o_ptr, f_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        a = tl.load(a_ptr + offs)
        b = tl.load(b_ptr + offs)
        tl.static_assert(a.dtype == tl.bfloat16)
        c = a * b + a
        tl.store(o_ptr + offs, c)
        tl.store(f_ptr + offs, c.to(tl.float32))

    rng = np.random.default_rng(3)
    a = tl.bf16_array(rng.standard_normal(64))
    b = tl.bf16_array(rng.standard_normal(64))
    o = tl.bf16_array(np.zeros(64))
    f = np.zeros(64, np.float32)
    k[(1,)](a, b, o, f, BLOCK=64)
    af, bf = tl.bf16_to_float32(a), tl.bf16_to_float32(b)
    ref = bf16_reference(bf16_reference(af * bf) + af).astype(np.float32)
    np.testing.assert_array_equal(tl.bf16_to_float32(o), ref)
    np.testing.assert_array_equal(f, ref)
    assert k.last_record.itemsize_bytes == (2, 2, 2, 4)


def test_casts():
    @jit
    def k(x_ptr, i_ptr, h_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        tl.store(i_ptr + offs, x.to(tl.int32))
        tl.store(h_ptr + offs, x.to(tl.float16).to(tl.float32))

    x = np.array([2.7, -2.7, np.nan, 1e10, -1e10, 65520.0, 1e-8, 0.5], np.float32)
    i = np.zeros(8, np.int32)
    h = np.zeros(8, np.float32)
    k[(1,)](x, i, h, BLOCK=8)
    assert i.tolist() == [2, -2, 0, 2**31 - 1, -(2**31), 65520, 0, 0]
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(h, x.astype(np.float16).astype(np.float32))


def test_math_functions():
    @jit
    def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        outs = (tl.exp(x), tl.exp2(x), tl.log(x), tl.log2(x), tl.sqrt(x), tl.rsqrt(x),
                tl.abs(-x), tl.sigmoid(x), tl.cos(x), tl.sin(x), tl.fma(x, x, x),
                tl.where(x > 1.0, x, 0.0), tl.clamp(x, 0.5, 1.5), tl.floor(x), tl.ceil(x))
        for j in tl.static_range(len(outs)):
            tl.store(o_ptr + j * BLOCK + offs, outs[j])

    x = np.linspace(0.1, 3.0, 16).astype(np.float32)
    o = np.zeros((15, 16), np.float32)
    k[(1,)](x, o, BLOCK=16)
    ref = [np.exp(x), np.exp2(x), np.log(x), np.log2(x), np.sqrt(x), 1 / np.sqrt(x), x,
           1 / (1 + np.exp(-x)), np.cos(x), np.sin(x), x * x + x, np.where(x > 1, x, 0),
           np.clip(x, 0.5, 1.5), np.floor(x), np.ceil(x)]
    np.testing.assert_allclose(o, np.array(ref, np.float32), rtol=1e-6)


def test_math_on_int_rejected():
    @jit
    def k(ptr):
        tl.store(ptr, tl.exp(tl.arange(0, 2)).to(tl.float32))

    with pytest.raises(LangError, match=r"Expected dtype \['float32', 'float64'\] but got int32"):
        k[(1,)](np.zeros(2, np.float32))


def test_maximum_nan_semantics():
    a = np.array([np.nan, 1.0, np.nan], np.float32)
    b = np.array([2.0, np.nan, np.nan], np.float32)
    out = run_binop("max", a, b, np.float32)
    assert out[0] == 2.0 and out[1] == 1.0 and np.isnan(out[2])


_OPS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.fmax, "min": np.fmin,
    "lt": np.less,
}


@settings(max_examples=40, deadline=None)
@given(
    op=st.sampled_from(sorted(_OPS)),
    dt=st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.float16]),
    n=st.integers(1, 70),
    data=st.data(),
)
def test_property_elementwise_vs_numpy(op, dt, n, data):
    if np.issubdtype(dt, np.integer):
        elems = st.integers(-1000, 1000)
    else:
        elems = st.floats(-1e3, 1e3, width=np.dtype(dt).itemsize * 8)
    a = data.draw(hnp.arrays(dt, n, elements=elems))
    b = data.draw(hnp.arrays(dt, n, elements=elems))
    out_dt = np.bool_ if op == "lt" else dt
    got = run_binop(op, a, b, out_dt)
    with np.errstate(all="ignore"):
        ref = _OPS[op](a, b).astype(out_dt)
    np.testing.assert_array_equal(got, ref)


@settings(max_examples=30, deadline=None)
@given(a=hnp.arrays(np.int64, st.integers(1, 40), elements=st.integers(-10**6, 10**6)),
       b=st.integers(1, 1000) | st.integers(-1000, -1))
def test_property_c_division(a, b):
    bb = np.full(a.size, b, np.int64)
    q = run_binop("floordiv", a, bb, np.int64)
    r = run_binop("mod", a, bb, np.int64)
    ref_q = np.array([int(x / b) if abs(x) < 2**52 else 0 for x in a.tolist()])
    np.testing.assert_array_equal(q, ref_q)
    np.testing.assert_array_equal(q * b + r, a)
    assert np.all((r == 0) | (np.sign(r) == np.sign(a)))
