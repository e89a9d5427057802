import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import autotile.lang as tl
from autotile.errors import LangError
from autotile.lang import jit


@jit
def reduce_kernel(x_ptr, o_ptr, R: tl.constexpr, C: tl.constexpr, OP: tl.constexpr,
                  AXIS: tl.constexpr, KEEP: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + r[:, None] * C + c[None, :])
    if OP == "sum":
        y = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        y = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "min":
        y = tl.min(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmax":
        y = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
    else:
        y = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
    if AXIS is None:
        tl.store(o_ptr, tl.reshape(y, ()) if KEEP else y)
    elif AXIS == 0:
        tl.store(o_ptr + c, tl.reshape(y, (C,)))
    else:
        tl.store(o_ptr + r, tl.reshape(y, (R,)))


def run_reduce(x, op, axis, keep=False):
    R, C = x.shape
    n = {None: 1, 0: C, 1: R}[axis]
    out_dt = np.int32 if op.startswith("arg") else x.dtype
    out = np.zeros(n, out_dt)
    reduce_kernel[(1,)](x, out, R=R, C=C, OP=op, AXIS=axis, KEEP=keep)
    return out


def test_argmax_ties_and_values():
    x = np.array([[1, 5, 5, 0], [7, 2, 7, 7]], np.float32)
    assert run_reduce(x, "argmax", 1).tolist() == [1, 0]
    assert run_reduce(x, "argmin", 1).tolist() == [3, 1]
    assert run_reduce(x, "argmax", 0).tolist() == [1, 0, 1, 1]
    assert run_reduce(x, "argmax", None).tolist() == [4]
    assert run_reduce(x, "max", None).tolist() == [7]
    assert run_reduce(x, "sum", 0, keep=True).tolist() == [8, 7, 12, 7]


def test_reduction_result_shapes_in_kernel():
    @jit
    def k(ptr):
        x = tl.zeros((4, 8), dtype=tl.float16)
        tl.static_assert(tl.sum(x, axis=1).shape == (4,))
        tl.static_assert(tl.sum(x, axis=1, keep_dims=True).shape == (4, 1))
        tl.static_assert(tl.sum(x).shape == ())
        tl.static_assert(tl.sum(x).dtype == tl.float16)
        tl.static_assert(tl.sum(x.to(tl.int8)).dtype == tl.int32)
        tl.static_assert(tl.argmax(x, axis=0).dtype == tl.int32)
        v, i = tl.max(x, axis=1, return_indices=True)
        tl.static_assert(i.shape == (4,))
        tl.static_assert(x.sum(axis=0).shape == (8,))

    k[(1,)](np.zeros(1, np.float32))


def test_max_ignores_nan_like_gpu_max_unless_all_nan():
    x = np.array([[np.nan, 1.0], [np.nan, np.nan]], np.float32)
    out = run_reduce(x, "max", 1)
    assert out[0] == 1.0 and np.isnan(out[1])
    s = run_reduce(x, "sum", 1)
    assert np.isnan(s).all()


def test_generic_reduce_and_cumsum():
    @jit
    def combine(a, b):
        return a * b

    @jit
    def k(x_ptr, o_ptr, c_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        x = tl.load(x_ptr + offs)
        tl.store(o_ptr, tl.reduce(x, 0, combine))
        tl.store(c_ptr + offs, tl.cumsum(x, axis=0))

    x = np.arange(1, 9, dtype=np.int32)
    o = np.zeros(1, np.int32)
    c = np.zeros(8, np.int32)
    k[(1,)](x, o, c, N=8)
    assert o[0] == 40320
    assert c.tolist() == np.cumsum(x).tolist()


@settings(max_examples=40, deadline=None)
@given(
    shape=st.tuples(st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([1, 2, 4, 8, 32])),
    op=st.sampled_from(["sum", "max", "min", "argmax", "argmin"]),
    axis=st.sampled_from([None, 0, 1]),
    dt=st.sampled_from([np.float32, np.float64, np.int32]),
    data=st.data(),
)
def test_property_reductions_vs_numpy(shape, op, axis, dt, data):
    elems = st.integers(-50, 50) if dt is np.int32 else st.floats(-1e3, 1e3, width=32)
    x = data.draw(hnp.arrays(dt, shape, elements=elems))
    got = run_reduce(x, op, axis)
    ref = {"sum": np.sum, "max": np.max, "min": np.min, "argmax": np.argmax,
           "argmin": np.argmin}[op](x, axis=axis)
    ref = np.atleast_1d(ref)
    if op == "sum" and dt is not np.int32:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-3)
    else:
        np.testing.assert_array_equal(got, ref)


@jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               USE_ACC: tl.constexpr):
    m = tl.arange(0, M)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    if USE_ACC:
        acc = tl.full((M, N), 1.0, dtype=tl.float32)
        c = tl.dot(a, b, acc, input_precision="ieee", allow_tf32=False)
    else:
        c = tl.dot(a, b)
    tl.static_assert(c.dtype == tl.float32)
    tl.store(c_ptr + m[:, None] * N + n[None, :], c)


@pytest.mark.parametrize("dt", [np.float16, np.float32])
@pytest.mark.parametrize("shape", [(16, 32, 16), (4, 8, 16), (1, 2, 16), (64, 16, 32)])
def test_dot_accumulates_in_fp32(dt, shape):  # (M, N, K): M and N may be below 16, K not
    M, N, K = shape
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(dt)
    b = rng.standard_normal((K, N)).astype(dt)
    c = np.zeros((M, N), np.float32)
    dot_kernel[(1,)](a, b, c, M=M, N=N, K=K, USE_ACC=False)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)
    dot_kernel[(1,)](a, b, c, M=M, N=N, K=K, USE_ACC=True)
    np.testing.assert_allclose(c, ref + 1.0, rtol=1e-5, atol=1e-5)


_SMALL_K = [
    (np.float32, (16, 16, 8), 16), (np.float16, (4, 8, 2), 16), (np.float64, (32, 32, 8), 16),
    (np.int8, (16, 16, 16), 32), (np.uint8, (64, 64, 16), 32)]


def _small_k_message(M, N, K, k_min):
    return (f"Input shapes should have M >= 1, N >= 1 and K >= {k_min}; got a.shape=({M}, {K}) "
            f"and b.shape=({K}, {N}) (M={M}, N={N}, K={K}); this is the minimum of Triton's "
            "NVIDIA backend, which Triton's CPU interpreter does not check")


@pytest.mark.parametrize("dt, shape, k_min", _SMALL_K)
def test_dot_refuses_k_below_the_nvidia_minimum_under_its_rules(dt, shape, k_min):
    # Triton's NVIDIA backend (min_dot_size): K >= 16, K >= 32 for 8-bit operands
    M, N, K = shape
    a, b = np.ones((M, K), dt), np.ones((K, N), dt)
    c = np.zeros((M, N), np.int32 if np.dtype(dt).kind in "iu" else np.float32)
    with tl.backend_rules("nvidia"), pytest.raises(LangError) as err:
        dot_kernel[(1,)](a, b, c, M=M, N=N, K=K, USE_ACC=False)
    assert _small_k_message(M, N, K, k_min) in str(err.value)


@pytest.mark.parametrize("dt, shape, k_min", [x for x in _SMALL_K if x[0] is not np.float64])
def test_dot_below_the_nvidia_minimum_computes_and_warns_as_tritons_interpreter(
        dt, shape, k_min):
    # Triton's CPU interpreter runs these (its test_core test_dot has K = 4 cases);
    # autotile computes them too, and warns that the GPU will not compile them
    M, N, K = shape
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (M, K)).astype(dt) if np.dtype(dt).kind == "i" else \
        rng.integers(0, 4, (M, K)).astype(dt)
    b = rng.integers(0, 4, (K, N)).astype(dt)
    c = np.zeros((M, N), np.int32 if np.dtype(dt).kind in "iu" else np.float32)
    kern = int_dot_kernel if np.dtype(dt).kind in "iu" else dot_kernel
    extra = {} if np.dtype(dt).kind in "iu" else {"USE_ACC": False}
    with pytest.warns(tl.TritonBackendWarning) as rec:
        kern[(1,)](a, b, c, M=M, N=N, K=K, **extra)
    assert _small_k_message(M, N, K, k_min) in str(rec[0].message)
    assert "backend_rules('nvidia')" in str(rec[0].message)
    want = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(c, want.astype(c.dtype))


def test_backend_rules_names_the_bad_backend():
    with pytest.raises(ValueError, match=r"backend_rules\(\) takes one of \('interpreter', "
                                         r"'nvidia'\), got 'amd'"):
        with tl.backend_rules("amd"):
            pass


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_dot_8bit_at_k_32_accumulates_in_int32(dt):
    a = np.full((2, 32), 3, dt)
    b = np.full((32, 4), 5, dt)
    c = np.zeros((2, 4), np.int32)
    int_dot_kernel[(1,)](a, b, c, M=2, N=4, K=32)
    np.testing.assert_array_equal(c, np.full((2, 4), 32 * 15, np.int32))


@jit
def int_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m = tl.arange(0, M)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    c = tl.dot(a, b)
    tl.static_assert(c.dtype == tl.int32)
    tl.store(c_ptr + m[:, None] * N + n[None, :], c)


def test_dot_fp16_products_exact_in_fp32():
    # 2049 * 2049 is not representable in fp16 but is exact in fp32 accumulation
    a = np.full((16, 16), 45.0, np.float16)
    b = np.full((16, 16), 45.5, np.float16)
    c = np.zeros((16, 16), np.float32)
    dot_kernel[(1,)](a, b, c, M=16, N=16, K=16, USE_ACC=False)
    assert c[0, 0] == 16 * 45.0 * 45.5


def test_dot_errors():
    @jit
    def k(ptr):
        a = tl.zeros((16, 32), dtype=tl.float16)
        b = tl.zeros((16, 16), dtype=tl.float16)
        tl.dot(a, b)

    with pytest.raises(LangError, match=r"inner dimensions must match.*\(16, 32\).*\(16, 16\)"):
        k[(1,)](np.zeros(1, np.float32))

    @jit
    def k2(ptr):
        tl.dot(tl.zeros((16, 16), dtype=tl.float16), tl.zeros((16, 16), dtype=tl.float32))

    with pytest.raises(LangError, match="same dtype"):
        k2[(1,)](np.zeros(1, np.float32))


def test_shape_ops():
    @jit
    def k(o_ptr):
        x = tl.arange(0, 8)
        y = tl.reshape(x, (2, 4))
        t = tl.trans(y)
        tl.static_assert(t.shape == (4, 2))
        p = tl.permute(tl.reshape(x, 2, 2, 2), (2, 0, 1))
        tl.static_assert(p.shape == (2, 2, 2))
        b = tl.broadcast_to(x[None, :], (3, 8))
        e = tl.expand_dims(x, 1)
        tl.static_assert(e.shape == (8, 1))
        tl.store(o_ptr + tl.arange(0, 8), tl.reshape(t, (8,)))
        tl.store(o_ptr + 8 + tl.arange(0, 8), tl.sum(b, axis=0))

    out = np.zeros(16, np.int32)
    k[(1,)](out)
    assert out[:8].tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    assert out[8:].tolist() == (3 * np.arange(8)).tolist()


# -- NaN rule of argmax/argmin (Triton #10291, #10697) -------------------------------------
@jit
def arg_kernel(x_ptr, v_ptr, i_ptr, j_ptr, N: tl.constexpr, IS_MAX: tl.constexpr,
               LEFT: tl.constexpr):
    offs = tl.arange(0, N)
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + offs)
    if IS_MAX:
        v, i = tl.max(x, 0, return_indices=True)
        j = tl.argmax(x, 0, tie_break_left=LEFT)
    else:
        v, i = tl.min(x, 0, return_indices=True)
        j = tl.argmin(x, 0, tie_break_left=LEFT)
    tl.store(v_ptr + row, v)
    tl.store(i_ptr + row, i)
    tl.store(j_ptr + row, j)


def run_arg(x, is_max, left=True, batch=False):
    n_rows, n = x.shape
    v = np.zeros(n_rows, x.dtype)
    i = np.zeros(n_rows, np.int32)
    j = np.zeros(n_rows, np.int32)
    arg_kernel[(n_rows,)](x, v, i, j, N=n, IS_MAX=is_max, LEFT=left, batch_programs=batch)
    return v, i, j


NAN = np.nan
NAN_ROWS = np.array([[1, NAN, 5, 2],      # Triton #10291: argmax must be 2, not the NaN lane
                     [NAN, 3, 3, NAN],     # ties among numbers: lowest index
                     [NAN, -np.inf, NAN, NAN],  # max ignoring NaN is -inf
                     [NAN, NAN, NAN, NAN]], np.float32)  # all NaN: max NaN, index 0


@pytest.mark.parametrize("batch", [False, True])
def test_argmax_argmin_ignore_nan_like_max_and_min(batch):
    v, i, j = run_arg(NAN_ROWS, True, batch=batch)
    assert v[:3].tolist() == [5.0, 3.0, -np.inf] and np.isnan(v[3])
    assert i.tolist() == [2, 1, 1, 0]
    assert j.tolist() == [2, 1, 1, 0]
    v, i, j = run_arg(NAN_ROWS, False, batch=batch)
    assert v[:3].tolist() == [1.0, 3.0, -np.inf] and np.isnan(v[3])
    assert i.tolist() == [0, 1, 1, 0]
    assert j.tolist() == [0, 1, 1, 0]


def test_x_at_argmax_is_max_even_with_nan():
    v, _, j = run_arg(NAN_ROWS, True)
    picked = NAN_ROWS[np.arange(4), j]
    np.testing.assert_array_equal(picked, v)  # NaN == NaN for assert_array_equal


def test_tie_break_right_with_nan_takes_the_highest_index():
    _, _, j = run_arg(NAN_ROWS, True, left=False)
    assert j.tolist() == [2, 2, 1, 3]
    _, _, j = run_arg(NAN_ROWS, False, left=False)
    assert j.tolist() == [0, 2, 1, 3]


@settings(max_examples=60, deadline=None)
@given(x=hnp.arrays(np.float32, (3, 8), elements=st.sampled_from(
    [NAN, -np.inf, np.inf, -1.0, 0.0, 1.0, 2.0])), is_max=st.booleans())
def test_property_argmax_points_at_the_nan_ignoring_extremum(x, is_max):
    v, i, j = run_arg(x, is_max)
    ref = (np.fmax if is_max else np.fmin).reduce(x, axis=1)
    np.testing.assert_array_equal(v, ref)
    np.testing.assert_array_equal(x[np.arange(3), j], ref)
    np.testing.assert_array_equal(i, j)
    for r in range(3):
        hits = np.flatnonzero(x[r] == ref[r]) if not np.isnan(ref[r]) else [0]
        assert j[r] == hits[0]


@pytest.mark.parametrize("prec", ["tf32", "tf32x3", "ieee", "bf16x3", "bf16x6", "IEEE", None])
def test_dot_accepts_tritons_input_precisions(prec):
    @jit
    def k(o_ptr, P: tl.constexpr):
        a = tl.full((16, 16), 1.0, tl.float32)
        tl.store(o_ptr, tl.sum(tl.dot(a, a, input_precision=P)))

    out = np.zeros(1, np.float32)
    k[(1,)](out, P=prec)
    assert out[0] == 16 * 16 * 16


def test_dot_rejects_unknown_input_precision():
    @jit
    def k(o_ptr):
        a = tl.full((16, 16), 1.0, tl.float32)
        tl.store(o_ptr, tl.sum(tl.dot(a, a, input_precision="bogus")))

    with pytest.raises(LangError, match=r"input_precision must be one of \('tf32', 'tf32x3', "
                                        r"'ieee', 'bf16x3', 'bf16x6'\) or None, got "
                                        r"input_precision='bogus'"):
        k[(1,)](np.zeros(1, np.float32))
