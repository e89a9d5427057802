import numpy as np
import pytest

import autotile.lang as tl
from autotile.errors import LangError, OutOfBoundsError
from autotile.lang import jit
from tests.lang._kernels import add_kernel, add_kernel_unmasked


def test_unmasked_oob_load_names_kernel_program_buffer_offsets():
    n = 1000
    x = np.ones(n, np.float32)
    y = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    with pytest.raises(OutOfBoundsError) as ei:
        add_kernel_unmasked[(tl.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
    msg = str(ei.value)
    assert "'add_kernel_unmasked'" in msg
    assert "program_id=(3,)" in msg
    assert "'x_ptr'" in msg
    assert "[1000, 1001, 1002, 1003, 1004]" in msg
    assert isinstance(ei.value, IndexError) and isinstance(ei.value, LangError)
    # programs 0..2 ran completely before the error
    np.testing.assert_array_equal(out[:768], 2.0)


def test_oob_store_and_2d_program_id():
    @jit
    def k(ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK) - 3
        tl.store(ptr + offs, 1.0)

    pat = r"store .*program_id=\(0, 0\).*'ptr'.*\[-3, -2, -1\]"
    with pytest.raises(OutOfBoundsError, match=pat):
        k[(1, 2)](np.zeros(16, np.float32), BLOCK=8)


def test_masked_lanes_never_touch_memory_of_neighbours():
    big = np.arange(64, dtype=np.float32)
    view = big[16:32]  # neighbours on both sides hold real data

    @jit
    def k(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK) - 8
        m = (offs >= 0) & (offs < n)
        v = tl.load(src + offs, mask=m, other=-7.0)
        tl.store(dst + tl.arange(0, BLOCK), v)

    dst = np.zeros(32, np.float32)
    k[(1,)](view, dst, 16, BLOCK=32)
    np.testing.assert_array_equal(dst[:8], -7.0)
    np.testing.assert_array_equal(dst[8:24], np.arange(16, 32))
    np.testing.assert_array_equal(dst[24:], -7.0)
    assert k.last_record.program(0)["src"]["elems_read"] == 16
    assert k.last_record.summary()["masked_lanes"] == 16

    @jit
    def k2(src, dst, BLOCK: tl.constexpr):
        tl.store(dst + tl.arange(0, BLOCK), tl.load(src + tl.arange(0, BLOCK)))

    with pytest.raises(OutOfBoundsError, match="'src' has 16 elements"):
        k2[(1,)](view, dst, BLOCK=32)


def test_masked_store_leaves_masked_lanes_untouched():
    x = np.arange(10, dtype=np.float32)
    y = np.arange(10, dtype=np.float32)
    out = np.full(16, 99.0, np.float32)
    add_kernel[(1,)](x, y, out, 10, BLOCK_SIZE=16)
    np.testing.assert_array_equal(out[:10], 2 * np.arange(10))
    np.testing.assert_array_equal(out[10:], 99.0)


def test_nan_inf_propagate():
    x = np.array([np.nan, np.inf, -np.inf, 1.0, 0.0, np.inf], np.float32)
    y = np.array([1.0, 1.0, np.inf, np.nan, 0.0, -np.inf], np.float32)
    out = np.zeros(8, np.float32)

    @jit
    def k(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        a = tl.load(x_ptr + offs, mask=m)
        b = tl.load(y_ptr + offs, mask=m)
        tl.store(o_ptr + offs, a + b / a, mask=m)

    k[(1,)](x, y, out, 6, BLOCK=8)
    with np.errstate(all="ignore"):
        ref = x + y / x
    np.testing.assert_array_equal(out[:6], ref)
    assert np.isnan(out[0]) and np.isnan(out[4]) and np.isnan(out[5])


def test_scalar_load_store_and_transposed_argument():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    at = a.T  # non-contiguous view, strides (1, 4) in elements

    @jit
    def k(src, dst, s0, s1):
        i = tl.program_id(0)
        j = tl.program_id(1)
        v = tl.load(src + i * s0 + j * s1)
        tl.store(dst + i * 3 + j, v)

    dst = np.zeros(12, np.float64)
    k[(4, 3)](at, dst, at.strides[0] // 8, at.strides[1] // 8)
    np.testing.assert_array_equal(dst, at.reshape(-1))


def test_atomic_add_returns_old_values_with_duplicates():
    @jit
    def k(ctr, old_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        old = tl.atomic_add(ctr + offs % 2, 1, mask=offs < 6)
        tl.store(old_ptr + tl.program_id(0) * BLOCK + offs, old)

    ctr = np.zeros(2, np.int32)
    old = np.full(16, -1, np.int32)
    k[(2,)](ctr, old, BLOCK=8)
    assert ctr.tolist() == [6, 6]
    assert old[:8].tolist() == [0, 0, 1, 1, 2, 2, 0, 0]
    assert old[8:].tolist() == [3, 3, 4, 4, 5, 5, 0, 0]
    rec = k.last_record
    assert rec.total_elems_read("ctr") == 12 and rec.total_elems_written("ctr") == 12


def test_atomic_max_float():
    @jit
    def k(m_ptr, x_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.atomic_max(m_ptr, tl.max(tl.load(x_ptr + offs), axis=0))

    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    m = np.array([-np.inf], np.float32)
    k[(4,)](m, x, BLOCK=16)
    assert m[0] == x.max()


def test_pointer_element_type_and_cast_store():
    @jit
    def k(src, dst, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        v = tl.load(src + offs)
        tl.store(dst + offs, v.to(dst.dtype.element_ty))

    src = np.array([1.7, -1.7, 2.5, 3e4], np.float32)
    dst = np.zeros(4, np.int32)
    k[(1,)](src, dst, BLOCK=4)
    assert dst.tolist() == [1, -1, 2, 30_000]
    dst16 = np.zeros(4, np.float16)
    k[(1,)](src, dst16, BLOCK=4)
    np.testing.assert_array_equal(dst16, src.astype(np.float16))


# -- read-only arrays (new-user test: NumPy's "assignment destination is read-only") ---------
def _read_only(a):
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("batch", [False, True])
def test_store_to_read_only_output_names_the_argument(batch):
    n = 100
    x, y = np.ones(n, np.float32), np.ones(n, np.float32)
    out = _read_only(np.zeros(n, np.float32))
    with pytest.raises(LangError, match=r"store to read-only argument 'out_ptr' in kernel "
                                        r"'add_kernel', program_id=\(0,\).*writeable"):
        add_kernel[(4,)](x, y, out, n, BLOCK_SIZE=32, batch_programs=batch)
    np.testing.assert_array_equal(out, 0)


def test_read_only_inputs_are_fine():
    n = 100
    x, y = _read_only(np.ones(n, np.float32)), _read_only(np.full(n, 2, np.float32))
    out = np.zeros(n, np.float32)
    add_kernel[(4,)](x, y, out, n, BLOCK_SIZE=32)
    np.testing.assert_array_equal(out, 3)


def test_read_only_strided_view_and_atomic_name_the_argument():
    @jit
    def k(ptr, cnt_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.atomic_add(cnt_ptr, 1)
        tl.store(ptr + offs * 2, offs)

    base = np.zeros(16, np.int32)
    view = _read_only(base[::2].view())
    with pytest.raises(LangError, match="atomic_add to read-only argument 'cnt_ptr'"):
        k[(1,)](np.zeros(8, np.int32), _read_only(np.zeros(1, np.int32)), BLOCK=8)
    with pytest.raises(LangError, match="store to read-only argument 'ptr'"):
        k[(1,)](view, np.zeros(1, np.int32), BLOCK=4)


# Triton 3.4's semantic.atom_red_typechecking_impl and atomic_cas, transcribed: which
# element types each atomic refuses (Triton's CPU interpreter refuses them too).
_ATOMIC_KINDS = ["add", "max", "min", "xchg", "and", "or", "xor", "cas"]
_ATOMIC_TYPES = {  # numpy dtype or fp8 dtype -> Triton's name, primitive bits
    "int1": ("int1", 1), "int8": ("int8", 8), "uint8": ("uint8", 8), "int16": ("int16", 16),
    "uint16": ("uint16", 16), "int32": ("int32", 32), "uint32": ("uint32", 32),
    "int64": ("int64", 64), "uint64": ("uint64", 64), "float16": ("fp16", 16),
    "bfloat16": ("bf16", 16), "float32": ("fp32", 32), "float64": ("fp64", 64),
    "float8e4nv": ("fp8e4nv", 8), "float8e5": ("fp8e5", 8),
}


def _triton_atomic_refusal(kind, name, bits):
    if kind == "cas":
        if bits in (16, 32, 64):
            return None
        return "atomic_cas only supports elements with width {16, 32, 64}"
    if name in ("fp16", "bf16") and kind != "add":
        return f"atomic_{kind} does not support {name}"
    if name in ("int16", "uint16") or bits < 16:
        return f"atomic_{kind} does not support {name}"
    return None


def _atomic_buffer(type_name):
    if type_name == "bfloat16":
        return tl.bf16_array(np.zeros(4, np.float32))
    if type_name.startswith("float8"):
        return tl.fp8_array(np.zeros(4), getattr(tl, type_name))
    return np.zeros(4, np.bool_ if type_name == "int1" else type_name)


@jit
def _atomic_kernel(p, KIND: tl.constexpr):
    if KIND == "add":
        tl.atomic_add(p, 1)
    elif KIND == "max":
        tl.atomic_max(p, 1)
    elif KIND == "min":
        tl.atomic_min(p, 1)
    elif KIND == "xchg":
        tl.atomic_xchg(p, 1)
    elif KIND == "and":
        tl.atomic_and(p, 1)
    elif KIND == "or":
        tl.atomic_or(p, 1)
    elif KIND == "xor":
        tl.atomic_xor(p, 1)
    else:
        tl.atomic_cas(p, 0, 1)


@pytest.mark.parametrize("kind, type_name", [
    (k, t) for k in _ATOMIC_KINDS for t in _ATOMIC_TYPES
    # bitwise atomics on floats are not decided by this rule
    if not (k in ("and", "or", "xor") and _ATOMIC_TYPES[t][0].startswith(("fp", "bf")))])
def test_atomics_refuse_the_element_types_triton_refuses(kind, type_name):
    name, bits = _ATOMIC_TYPES[type_name]
    buf = _atomic_buffer(type_name)
    want = _triton_atomic_refusal(kind, name, bits)
    if want is None:
        _atomic_kernel[(1,)](buf, KIND=kind)
        got = float(np.asarray(tl.bf16_to_float32(buf) if type_name == "bfloat16" else buf,
                               np.float64)[0])
        assert got == (0.0 if kind in ("and", "min") else 1.0)
    else:
        with pytest.raises(LangError) as err:
            _atomic_kernel[(1,)](buf, KIND=kind)
        assert want in str(err.value)
        assert np.asarray(buf).view(np.uint8).max() == 0  # nothing was written


@jit
def _const_copy(in_ptr: tl.const, out, c_out: tl.const, TO_CONST: tl.constexpr,
                ATOMIC: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    val = tl.load(in_ptr + offs)
    dst = c_out if TO_CONST else out
    if ATOMIC:
        tl.atomic_add(dst + offs, val)
    else:
        tl.store(dst + offs, val)


@pytest.mark.parametrize("atomic", [False, True])
@pytest.mark.parametrize("batch", [False, True])
def test_tl_const_pointer_loads_but_refuses_stores(atomic, batch):
    # Triton's test_const ("direct" mode): out and c_out alias one array; only the
    # parameter annotated tl.const refuses the store, with Triton's message
    x = np.arange(1, 9, dtype=np.float32)
    y = np.zeros(8, np.float32)
    _const_copy[(1,)](x, y, y, TO_CONST=False, ATOMIC=atomic, N=8, batch_programs=batch)
    np.testing.assert_array_equal(y, x)
    with pytest.raises(LangError) as err:
        _const_copy[(1,)](x, y, y, TO_CONST=True, ATOMIC=atomic, N=8, batch_programs=batch)
    op = "atomic_add" if atomic else "store"
    assert (f"Cannot store to a constant pointer: {op} through argument 'c_out', annotated "
            "tl.const") in str(err.value)
    np.testing.assert_array_equal(y, x)  # unchanged by the refused launch
    # a pointer cast keeps the constness
    @jit
    def cast_store(p: tl.const):
        tl.store(p.to(tl.pointer_type(tl.int32)), 1)

    with pytest.raises(LangError, match="Cannot store to a constant pointer"):
        cast_store[(1,)](np.zeros(1, np.float32))
