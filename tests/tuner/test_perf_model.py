"""autotile.perf_model for triton.autotune's prune_configs_by, and from_triton.

Triton is not installed on the CI machine, so the kernels below are written the
way a Triton user writes them (``tl`` is a module named ``triton.language``,
``triton.cdiv`` on the host) against a stand-in module of that name, which
from_triton recognises by ``__name__`` alone, as it does the real one."""

from __future__ import annotations

import types

import numpy as np
import pytest

import autotile
from autotile.errors import InvalidConfigError
from autotile.lang import from_triton
from autotile.tuner import Config, PerfModel

TL = types.ModuleType("triton.language")
TRITON = types.ModuleType("triton")

SRC = '''
def helper(x):
    return x * 2.0

def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, helper(tl.exp(x.to(tl.float32))), mask=mask)  # fp32/fp64 exp
'''


def _kernel():
    ns = {"tl": TL, "triton": TRITON, "__name__": "user_kernels"}
    exec(compile(SRC, "<user>", "exec"), ns)
    return ns["scale_kernel"]


def test_from_triton_runs_the_same_source_in_the_interpreter():
    k = from_triton(_kernel())
    assert k.arg_names == ["x_ptr", "y_ptr", "n", "BLOCK"] and k.constexprs == [3]
    x = np.linspace(-1, 1, 1000).astype(np.float32)
    y = np.zeros_like(x)
    k[(4,)](x, y, 1000, BLOCK=256)
    np.testing.assert_allclose(y, 2 * np.exp(x), rtol=1e-6)
    assert from_triton(k) is k


def test_perf_model_ranks_configs_and_marks_infeasible_ones_inf():
    n = 1 << 22
    pm = autotile.perf_model(_kernel(), grid=lambda meta: ((n + meta["BLOCK"] - 1)
                                                           // meta["BLOCK"],))
    assert isinstance(pm, PerfModel)
    x, y = np.zeros(n, np.float32), np.zeros(n, np.float32)
    est = {}
    for block in (128, 1024):
        for warps in (1, 4):
            cfg = Config({"BLOCK": block}, num_warps=warps)
            est[(block, warps)] = pm(x_ptr=x, y_ptr=y, n=n, **cfg.all_kwargs())
    assert all(np.isfinite(v) and v > 0 for v in est.values())
    # 128 elements with 4 warps keeps too few bytes in flight: slower than 1024 with 4
    assert est[(128, 4)] > est[(1024, 4)]
    # the caller's buffers are never written by the model
    assert not y.any()


def test_perf_model_takes_torch_like_tensors_without_touching_them():
    class FakeTensor:
        def __init__(self, shape, dtype):
            self.shape, self.dtype = shape, dtype

        def data_ptr(self):
            raise AssertionError("perf_model must not read device memory")

    n = 1 << 20
    pm = autotile.perf_model(_kernel(), grid=(n // 512,))
    t = pm(x_ptr=FakeTensor((n,), "torch.float16"), y_ptr=FakeTensor((n,), "torch.float16"),
           n=n, BLOCK=512, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None)
    assert np.isfinite(t) and t > 0


def test_perf_model_needs_a_grid_outside_the_registry():
    with pytest.raises(InvalidConfigError, match="needs grid="):
        autotile.perf_model(_kernel())
    with pytest.raises(TypeError, match="HardwareProfile"):
        autotile.perf_model(_kernel(), grid=(1,), hardware="H200")


def test_perf_model_of_a_registered_kernel_uses_its_spec_model():
    from autotile.kernels import matmul_kernel
    from autotile.measure import H200

    pm = autotile.perf_model(matmul_kernel, hardware=H200)
    M = N = K = 2048
    a, b = np.zeros((M, K), np.float16), np.zeros((K, N), np.float16)
    c = np.zeros((M, N), np.float16)
    call = dict(a_ptr=a, b_ptr=b, c_ptr=c, M=M, N=N, K=K, stride_am=K, stride_ak=1,
                stride_bk=N, stride_bn=1, stride_cm=N, stride_cn=1, PID_ORDER="grouped")
    good = pm(**call, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8,
              num_stages=3)
    tiny = pm(**call, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=8, num_warps=2,
              num_stages=2)
    assert np.isfinite(good) and good < tiny


def test_from_triton_never_returns_another_functions_kernel():
    """The cache keeps each converted function alive, so a freed function's id reused by a
    new one cannot hand back the old kernel (a kernel factory, a notebook redefinition)."""
    src = '''
def make(c):
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * c, mask=m)
    return scale_kernel
'''
    ns = {"tl": TL, "__name__": "factory"}
    exec(compile(src, "<factory>", "exec"), ns)
    wrong = []
    for c in range(1, 60):
        k = from_triton(ns["make"](float(c)))
        y = np.zeros(64, np.float32)
        k[(1,)](np.ones(64, np.float32), y, 64, BLOCK=64)
        if y[0] != c:
            wrong.append((c, float(y[0])))
    assert wrong == []


def test_perf_model_scores_a_config_that_reads_out_of_bounds_as_inf_with_its_reason():
    src = '''
def unmasked(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))
'''
    ns = {"tl": TL, "__name__": "user"}
    exec(compile(src, "<user>", "exec"), ns)
    pm = autotile.perf_model(ns["unmasked"], grid=lambda m: (-(-1000 // m["BLOCK"]),))
    x, y = np.zeros(1000, np.float32), np.zeros(1000, np.float32)
    assert pm(x_ptr=x, y_ptr=y, n=1000, BLOCK=256, num_warps=4, num_stages=3) == float("inf")
    assert any("OutOfBounds" in r for r in pm.last_reasons.values())
    assert np.isfinite(pm(x_ptr=x, y_ptr=y, n=1000, BLOCK=8, num_warps=1,
                          num_stages=3))


def test_perf_model_does_not_truncate_a_fractional_or_nan_launch_option():
    n = 1000
    pm = autotile.perf_model(_kernel(), grid=lambda meta: (-(-n // meta["BLOCK"]),))
    x, y = np.zeros(n, np.float32), np.zeros(n, np.float32)
    two = pm(x_ptr=x, y_ptr=y, n=n, BLOCK=128, num_warps=2, num_stages=3)
    assert np.isfinite(two)
    # 2.5 warps used to be scored as 2 (int() truncated it): now inf with the rule
    assert pm(x_ptr=x, y_ptr=y, n=n, BLOCK=128, num_warps=2.5, num_stages=3) == float("inf")
    assert pm.last_reasons["BLOCK=128, num_warps=2.5, num_stages=3"] == (
        "InvalidConfigError: num_warps must be a positive power of two, got num_warps=2.5")
    assert pm(x_ptr=x, y_ptr=y, n=n, BLOCK=128, num_warps=4,
              num_stages=float("nan")) == float("inf")
    assert pm.last_reasons["BLOCK=128, num_warps=4, num_stages=nan"] == (
        "InvalidConfigError: num_stages must be an int >= 1, got num_stages=nan")
    # NumPy ints (a config read from an array) still work
    assert pm(x_ptr=x, y_ptr=y, n=n, BLOCK=128, num_warps=np.int64(2),
              num_stages=np.int64(3)) == two


def test_a_missing_or_misspelled_argument_raises_naming_it_instead_of_inf():
    import numpy as np

    import autotile
    import autotile.lang as tl
    from autotile.errors import InvalidConfigError

    @tl.jit
    def scale_k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    pm = autotile.perf_model(scale_k, grid=lambda meta: (tl.cdiv(meta["n"], meta["BLOCK"]),))
    x = np.ones(4096, np.float32)
    ok = pm(x_ptr=x, y_ptr=np.zeros_like(x), n=4096, BLOCK=256, num_warps=4, num_stages=3)
    assert 0 < ok < float("inf")
    with pytest.raises(InvalidConfigError, match=r"missing \['n'\]; unknown names given: \['N'\]"):
        pm(x_ptr=x, y_ptr=np.zeros_like(x), N=4096, BLOCK=256, num_warps=4, num_stages=3)


def test_perf_model_makes_one_stand_in_per_tensor_shape():
    from autotile.kernels import matmul_kernel
    from autotile.measure import H200

    class FakeTensor:
        def __init__(self, shape):
            self.shape, self.dtype = shape, "torch.float16"

        def data_ptr(self):
            raise AssertionError("perf_model must not read device memory")

    pm = autotile.perf_model(matmul_kernel, hardware=H200)
    a, b = FakeTensor((512, 256)), FakeTensor((256, 1024))
    first = pm._stand_in(a)
    assert first.shape == (512, 256) and first.dtype == np.float16 and not first.any()
    assert pm._stand_in(FakeTensor((512, 256))) is first
    assert pm._stand_in(b) is not first
    call = dict(a_ptr=a, b_ptr=b, c_ptr=FakeTensor((512, 1024)), M=512, N=1024, K=256,
                stride_am=256, stride_ak=1, stride_bk=1024, stride_bn=1, stride_cm=1024,
                stride_cn=1, PID_ORDER="grouped", num_warps=4, num_stages=3)
    t1 = pm(**call, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8)
    t2 = pm(**call, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=4)
    assert np.isfinite(t1) and np.isfinite(t2) and len(pm._stand_ins) == 3
    pm.clear()
    assert not pm._stand_ins
