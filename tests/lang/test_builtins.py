"""Builtins added for Triton parity: umulhi, histogram, gather, interleave, tl.math, casts."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import erf

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit
from tests.lang._kernels import kernel_from_source


@jit
def umulhi_kernel(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.umulhi(tl.load(x_ptr + offs), tl.load(y_ptr + offs)))


@settings(max_examples=8, deadline=None)
@given(dt=st.sampled_from(["int32", "uint32", "int64", "uint64"]), seed=st.integers(0, 2**16),
       batch=st.booleans())
def test_umulhi_is_the_high_half_of_the_exact_product(dt, seed, batch):
    info = np.iinfo(dt)
    rng = np.random.default_rng(seed)
    x = rng.integers(info.min, info.max, 64, dtype=dt, endpoint=True)
    y = rng.integers(info.min, info.max, 64, dtype=dt, endpoint=True)
    x[:2], y[:2] = info.max, info.min  # extremes
    bits = np.dtype(dt).itemsize * 8
    ref = [((int(a) * int(b)) >> bits) for a, b in zip(x, y)]  # floor: two's complement high
    out = np.zeros(64, dt)
    umulhi_kernel[(1,)](x, y, out, N=64, batch_programs=batch)
    assert out.tolist() == ref


def test_umulhi_refuses_other_types():
    with pytest.raises(LangError, match=r"Expected dtype \['int32', 'int64', 'uint32', "
                                        r"'uint64'\] but got int16"):
        umulhi_kernel[(1,)](np.ones(4, np.int16), np.ones(4, np.int16), np.ones(4, np.int16), N=4)


def test_histogram_counts_masked_and_skips_out_of_range():
    @jit
    def k(x_ptr, o_ptr, m_ptr, M: tl.constexpr, N: tl.constexpr):
        offs = tl.arange(0, M)
        x = tl.load(x_ptr + offs)
        h = tl.histogram(x, N)
        tl.static_assert(h.shape == [N] and h.dtype == tl.int32)
        tl.store(o_ptr + tl.arange(0, N), h)
        tl.store(m_ptr + tl.arange(0, N), x.histogram(N, mask=offs < M // 2))

    rng = np.random.default_rng(0)
    x = rng.integers(-2, 10, 64).astype(np.int32)  # -2, -1, 8, 9 fall outside 8 bins
    o, m = np.zeros(8, np.int32), np.zeros(8, np.int32)
    k[(1,)](x, o, m, M=64, N=8)
    np.testing.assert_array_equal(o, [(x == b).sum() for b in range(8)])
    np.testing.assert_array_equal(m, [(x[:32] == b).sum() for b in range(8)])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_matches_take_along_axis(axis):
    @jit
    def k(s_ptr, i_ptr, o_ptr, R: tl.constexpr, C: tl.constexpr, IR: tl.constexpr,
          IC: tl.constexpr, AXIS: tl.constexpr):
        src = tl.load(s_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
        ioffs = tl.arange(0, IR)[:, None] * IC + tl.arange(0, IC)[None, :]
        tl.store(o_ptr + ioffs, tl.gather(src, tl.load(i_ptr + ioffs), AXIS))

    rng = np.random.default_rng(axis + 5)
    src = rng.standard_normal((4, 8)).astype(np.float32)
    ishape = (16, 8) if axis == 0 else (4, 16)
    idx = rng.integers(0, src.shape[axis], ishape).astype(np.int32)
    out = np.zeros(ishape, np.float32)
    k[(1,)](src, idx, out, R=4, C=8, IR=ishape[0], IC=ishape[1], AXIS=axis)
    np.testing.assert_array_equal(out, np.take_along_axis(src, idx, axis=axis))


@pytest.mark.parametrize("idx,match", [
    ("tl.arange(0, 4)[:, None] + tl.zeros((4, 4), tl.int32) + 3", r"index out of range: "
     r"src.shape\[0\] = 4, got index values \[4, 5, 6\]"),
    ("tl.zeros((4, 2), tl.int32)", r"index dim 1 must match the corresponding source dim"),
    ("tl.zeros((4,), tl.int32)", r"source and index tensors must have the same rank"),
    ("tl.zeros((4, 4), tl.float32)", r"index must be an integer tensor"),
])
def test_gather_errors(idx, match):
    with pytest.raises(LangError, match=match):
        k = kernel_from_source("o_ptr", "s = tl.zeros((4, 4), tl.float32)",
                               f"tl.gather(s, {idx}, 0)")
        k[(1,)](np.zeros(1, np.float32))


def test_interleave_blocks_and_scalars():
    @jit
    def k(o_ptr, s_ptr, N: tl.constexpr):
        z = tl.interleave(tl.arange(0, N), tl.arange(N, 2 * N))
        tl.store(o_ptr + tl.arange(0, 2 * N), z)
        w = tl.interleave(tl.load(s_ptr), tl.load(s_ptr + 1))
        tl.static_assert(w.shape == [2])
        tl.store(s_ptr + 2 + tl.arange(0, 2), w)

    o = np.zeros(16, np.int32)
    s = np.array([7, 9, 0, 0], np.int32)
    k[(1,)](o, s, N=8)
    np.testing.assert_array_equal(o, np.stack([np.arange(8), np.arange(8, 16)], -1).ravel())
    assert s.tolist() == [7, 9, 7, 9]


def test_tl_math_namespace_is_correctly_rounded():
    @jit
    def k(x_ptr, y_ptr, w_ptr, d_ptr, s_ptr, e_ptr, f_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        x, y, w = tl.load(x_ptr + offs), tl.load(y_ptr + offs), tl.load(w_ptr + offs)
        tl.store(d_ptr + offs, tl.math.div_rn(x, y))
        tl.store(s_ptr + offs, tl.math.sqrt_rn(tl.abs(x)))
        tl.store(e_ptr + offs, tl.math.erf(x))
        tl.store(f_ptr + offs, tl.math.fma(x, y, w))

    rng = np.random.default_rng(7)
    x, y, w = rng.standard_normal((3, 128)).astype(np.float32)
    d, s, e, f = np.zeros((4, 128), np.float32)
    k[(1,)](x, y, w, d, s, e, f, N=128)
    x64, y64, w64 = x.astype(np.float64), y.astype(np.float64), w.astype(np.float64)
    np.testing.assert_array_equal(d, (x64 / y64).astype(np.float32))  # one rounding
    np.testing.assert_array_equal(s, np.sqrt(np.abs(x64)).astype(np.float32))
    np.testing.assert_allclose(e, erf(x64), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(f, (x64 * y64 + w64).astype(np.float32))  # fused


def test_tensor_cast_pointer_cast_and_constexpr_dtype():
    @jit
    def k(f_ptr, o_ptr):
        x = tl.load(f_ptr + tl.arange(0, 4))
        tl.static_assert(x.cast(tl.int32).dtype == tl.int32)
        tl.static_assert(tl.constexpr(5).dtype == tl.int32)
        tl.static_assert(tl.constexpr(1e50).dtype == tl.float64)
        bits = f_ptr.to(tl.pointer_type(tl.int32))  # the same float32 memory seen as int32
        tl.static_assert(bits.dtype.element_ty == tl.int32)
        tl.store(o_ptr + tl.arange(0, 4), tl.load(bits + tl.arange(0, 4)))

    f = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    o = np.zeros(4, np.int32)
    k[(1,)](f, o)
    np.testing.assert_array_equal(o, f.view(np.int32))

    @jit
    def bad(f_ptr):
        f_ptr.to(tl.pointer_type(tl.int8))

    with pytest.raises(LangError, match=r"only between element types of one size \(4 and 1 "
                                        r"bytes\)"):
        bad[(1,)](f)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_topk_and_reduce_or_match_numpy(descending):
    @jit
    def k(x_ptr, s_ptr, t_ptr, o_ptr, DESC: tl.constexpr):
        offs = tl.arange(0, 4)[:, None] * 16 + tl.arange(0, 16)[None, :]
        x = tl.load(x_ptr + offs)
        tl.store(s_ptr + offs, tl.sort(x, descending=DESC))
        tl.store(t_ptr + tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :], tl.topk(x, 4))
        tl.store(o_ptr + tl.arange(0, 4), x.reduce_or(1))

    x = np.random.default_rng(int(descending)).integers(-50, 50, (4, 16)).astype(np.int32)
    s, t, o = np.zeros_like(x), np.zeros((4, 4), np.int32), np.zeros(4, np.int32)
    k[(1,)](x, s, t, o, DESC=descending)
    ref = np.sort(x, axis=1)
    np.testing.assert_array_equal(s, ref[:, ::-1] if descending else ref)
    np.testing.assert_array_equal(t, np.sort(x, axis=1)[:, ::-1][:, :4])
    np.testing.assert_array_equal(o, np.bitwise_or.reduce(x, axis=1))


def test_swizzle2d_groups_rows_like_triton():
    @jit
    def k(o_ptr):
        i = tl.arange(0, 4)[:, None] + tl.zeros((4, 4), tl.int32)
        j = tl.arange(0, 4)[None, :] + tl.zeros((4, 4), tl.int32)
        ni, nj = tl.swizzle2d(i, j, 4, 4, 2)
        tl.store(o_ptr + ni * 4 + nj, i * 4 + j)

    lin = np.zeros((4, 4), np.int32)
    k[(1,)](lin)
    np.testing.assert_array_equal(lin, [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14],
                                        [9, 11, 13, 15]])  # Triton's docstring example


def test_unsupported_builtins_name_themselves():
    from autotile.errors import UnsupportedBuiltinError

    assert not hasattr(tl, "dot_scaled")
    with pytest.raises(UnsupportedBuiltinError, match=r"tl.inline_asm_elementwise is a "
                                                      r"triton.language builtin that autotile"):
        tl.inline_asm_elementwise  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'no_such_builtin'"):
        tl.no_such_builtin  # noqa: B018


@pytest.mark.parametrize("name", sorted(tl.UNSUPPORTED_BUILTINS))
def test_importing_an_unsupported_builtin_explains_why(name):
    # Python turns an AttributeError raised during `from m import x` into a bare "cannot
    # import name"; the import form raises an ImportError that keeps the explanation
    from autotile.errors import UnsupportedBuiltinImportError

    with pytest.raises(UnsupportedBuiltinImportError) as ei:
        exec(f"from autotile.lang import {name}", {})
    msg = str(ei.value)
    assert f"tl.{name} is a triton.language builtin" in msg
    assert tl.UNSUPPORTED_BUILTINS[name] in msg
    assert "docs/guide/language.md" in msg
    assert ei.value.name == name
    assert not hasattr(tl, name)


def test_importing_a_name_triton_lacks_is_a_plain_import_error():
    from autotile.errors import UnsupportedBuiltinImportError

    with pytest.raises(ImportError, match="cannot import name 'no_such_builtin'") as ei:
        exec("from autotile.lang import no_such_builtin", {})
    assert not isinstance(ei.value, UnsupportedBuiltinImportError)


#: Triton 3.4 ``math._check_dtype``: the element types each math builtin accepts
_MATH_DTYPES = {"exp": ("float32", "float64"), "exp2": ("float32", "float64"),
                "log": ("float32", "float64"), "log2": ("float32", "float64"),
                "cos": ("float32", "float64"), "sin": ("float32", "float64"),
                "sqrt": ("float32", "float64"), "sqrt_rn": ("float32",),
                "rsqrt": ("float32", "float64"), "erf": ("float32", "float64"),
                "floor": ("float32", "float64"), "ceil": ("float32", "float64"),
                "div_rn": ("float32",)}
_NP_MATH = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "cos": np.cos,
            "sin": np.sin, "sqrt": np.sqrt, "sqrt_rn": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v),
            "erf": erf, "floor": np.floor, "ceil": np.ceil}


@settings(max_examples=60, deadline=None)
@given(fn=st.sampled_from(sorted(_MATH_DTYPES)),
       dt=st.sampled_from(["float16", "bfloat16", "float32", "float64", "int32", "float8e5"]),
       n=st.sampled_from([1, 8, 32]), seed=st.integers(0, 2**16))
def test_math_builtins_take_tritons_types(fn, dt, n, seed):
    x = np.random.default_rng(seed).uniform(0.5, 4.0, n)   # positive: log, sqrt, rsqrt defined
    call = "tl.math.div_rn(x, x + 1.0)" if fn == "div_rn" else f"tl.math.{fn}(x)"
    k = kernel_from_source("x_ptr, o_ptr, N: tl.constexpr",
                           "offs = tl.arange(0, N)",
                           f"x = tl.load(x_ptr + offs).to(tl.{dt})",
                           f"y = {call}",
                           "tl.static_assert(y.dtype == x.dtype)",
                           "tl.store(o_ptr + offs, y.to(tl.float64))")
    o = np.zeros(n, np.float64)
    if dt not in _MATH_DTYPES[fn]:
        with pytest.raises(LangError, match=re.escape(
                f"Expected dtype {list(_MATH_DTYPES[fn])} but got {dt}")):
            k[(1,)](x, o, N=n)
        return
    k[(1,)](x, o, N=n)
    xv = x.astype(dt).astype(np.float64)
    ref = xv / (xv + 1.0) if fn == "div_rn" else _NP_MATH[fn](xv)
    np.testing.assert_allclose(o, ref.astype(dt), rtol=2e-7 if dt == "float32" else 1e-15)


@jit
def _gather2d(s_ptr, i_ptr, o_ptr, R: tl.constexpr, C: tl.constexpr, IR: tl.constexpr,
              IC: tl.constexpr, AXIS: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.load(s_ptr + pid * R * C + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    ioffs = pid * IR * IC + tl.arange(0, IR)[:, None] * IC + tl.arange(0, IC)[None, :]
    out = tl.gather(src, tl.load(i_ptr + ioffs), AXIS)
    tl.static_assert(out.shape == [IR, IC] and out.dtype == src.dtype)
    tl.store(o_ptr + ioffs, out)


@settings(max_examples=25, deadline=None)
@given(r=st.sampled_from([1, 2, 4]), c=st.sampled_from([1, 4, 8]), n=st.sampled_from([1, 2, 8]),
       axis=st.sampled_from([0, 1, -1, -2]), dt=st.sampled_from(["float32", "int8", "uint64"]),
       idt=st.sampled_from(["int32", "int64", "uint8"]), seed=st.integers(0, 2**16),
       batch=st.booleans())
def test_gather_matches_take_along_axis_over_shapes_and_types(r, c, n, axis, dt, idt, seed,
                                                               batch):
    rng = np.random.default_rng(seed)
    n_prog = 4
    src = rng.integers(0, 100, (n_prog, r, c)).astype(dt)
    a = axis % 2
    ishape = (n, c) if a == 0 else (r, n)  # the other axis matches the source
    idx = rng.integers(0, src.shape[1 + a], (n_prog,) + ishape).astype(idt)
    out = np.zeros((n_prog,) + ishape, dt)
    _gather2d[(n_prog,)](src, idx, out, R=r, C=c, IR=ishape[0], IC=ishape[1], AXIS=axis,
                         batch_programs=batch)
    np.testing.assert_array_equal(out, np.take_along_axis(src, idx.astype(np.int64), axis=1 + a))


@jit
def _histogram(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, HALF: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, M)
    x = tl.load(x_ptr + pid * M + offs)
    if HALF:
        h = tl.histogram(x, N, mask=offs < M // 2)
    else:
        h = tl.histogram(x, N)
    tl.static_assert(h.shape == [N] and h.dtype == tl.int32)
    tl.store(o_ptr + pid * N + tl.arange(0, N), h)


@settings(max_examples=25, deadline=None)
@given(m=st.sampled_from([1, 8, 64]), n=st.sampled_from([1, 4, 32]), half=st.booleans(),
       dt=st.sampled_from(["int8", "int32", "uint16", "int64"]), seed=st.integers(0, 2**16),
       batch=st.booleans())
def test_histogram_matches_bincount(m, n, half, dt, seed, batch):
    # Triton's interpreter histogram: bins 0..N-1, values outside them are not counted
    lo = 0 if dt.startswith("u") else -3
    x = np.random.default_rng(seed).integers(lo, n + 3, (4, m)).astype(dt)
    o = np.zeros((4, n), np.int32)
    _histogram[(4,)](x, o, M=m, N=n, HALF=half, batch_programs=batch)
    used = x[:, : m // 2] if half else x
    ref = [[int(np.count_nonzero(row == b)) for b in range(n)] for row in used]
    np.testing.assert_array_equal(o, ref)


@settings(max_examples=20, deadline=None)
@given(r=st.sampled_from([1, 2, 4]), c=st.sampled_from([1, 2, 8]),
       dt=st.sampled_from(["float16", "int8", "uint32", "float64"]), seed=st.integers(0, 2**16))
def test_interleave_matches_stack_on_the_last_axis(r, c, dt, seed):
    @jit
    def k(a_ptr, b_ptr, o_ptr, R: tl.constexpr, C: tl.constexpr):
        offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
        z = tl.interleave(tl.load(a_ptr + offs), tl.load(b_ptr + offs))
        tl.static_assert(z.shape == [R, 2 * C])
        tl.store(o_ptr + tl.arange(0, R)[:, None] * 2 * C + tl.arange(0, 2 * C)[None, :], z)

    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 100, (2, r, c)).astype(dt)
    o = np.zeros((r, 2 * c), dt)
    k[(1,)](a, b, o, R=r, C=c)
    np.testing.assert_array_equal(o, np.stack([a, b], -1).reshape(r, 2 * c))


@pytest.mark.parametrize("call,ok", [("tl.fdiv(x, 2.0)", True), ("tl.math.fdiv(x, x + 1)", True),
                                     ("tl.fdiv(x, 2)", False),
                                     ("tl.math.fdiv(x.to(tl.int32), x)", False)])
def test_fdiv_takes_floating_operands_only(call, ok):
    k = kernel_from_source("x_ptr, o_ptr", "x = tl.load(x_ptr + tl.arange(0, 4))",
                           f"tl.store(o_ptr + tl.arange(0, 4), {call})")
    x = np.arange(1, 5, dtype=np.float32)
    o = np.zeros(4, np.float32)
    if ok:
        k[(1,)](x, o)
        np.testing.assert_array_equal(o, eval(call.replace("tl.math.fdiv", "np.divide")
                                              .replace("tl.fdiv", "np.divide")))
        return
    with pytest.raises(LangError, match="both operands of fdiv must have floating scalar type"):
        k[(1,)](x, o)
