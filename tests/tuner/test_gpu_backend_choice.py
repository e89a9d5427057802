"""Which backend ``@autotune`` uses, and the GPU path's disk cache keys."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import autotile.tuner._gpu_backend as gb
from autotile.errors import InvalidConfigError, MeasureError
from autotile.tuner import Autotuner, GpuAutotuner, LaunchConfig, autotune, resolve_backend
from tests.tuner._fake_gpu import FakeBackend, FakeTritonKernel
from tests.tuner.test_gpu_autotune import BLOCKS, CONFIGS, _data, _time, double_kernel, grid


def test_auto_without_triton_is_the_model_path_as_today():
    assert gb.gpu_unavailable_reason().startswith("cannot import triton")
    assert resolve_backend("auto") is None and resolve_backend("model") is None
    k = autotune(configs=CONFIGS, key=["n"])(double_kernel)
    assert type(k) is Autotuner
    k2 = autotune(configs=CONFIGS, key=["n"], backend="model", compile_timeout_s=5.0,
                  retime_rounds=5)(double_kernel)  # GPU-only options are ignored here
    assert type(k2) is Autotuner


def test_gpu_without_a_device_names_what_is_missing():
    with pytest.raises(MeasureError, match=r"backend='gpu'\) needs Triton, PyTorch and a CUDA "
                                           r"device: cannot import triton \(ModuleNotFound"):
        autotune(configs=CONFIGS, key=["n"], backend="gpu")


def test_gpu_when_torch_sees_no_device(monkeypatch):
    monkeypatch.setattr(gb, "gpu_unavailable_reason",
                        lambda: "torch.cuda.is_available() is False (no CUDA device visible)")
    with pytest.raises(MeasureError, match=r"torch.cuda.is_available\(\) is False"):
        resolve_backend("gpu")
    assert resolve_backend("auto") is None


def test_auto_picks_the_gpu_when_triton_torch_and_a_device_are_present(monkeypatch):
    monkeypatch.setattr(gb, "gpu_unavailable_reason", lambda: None)
    monkeypatch.setattr(gb, "TritonBackend", lambda: FakeBackend(_time))
    assert isinstance(resolve_backend("auto"), FakeBackend)
    assert isinstance(resolve_backend("gpu"), FakeBackend)
    k = autotune(configs=CONFIGS, key=["n"])(double_kernel)
    assert isinstance(k, GpuAutotuner)
    assert resolve_backend("model") is None


def test_bad_backend_value():
    with pytest.raises(InvalidConfigError, match=r"backend must be one of \('auto', 'gpu', "
                                                 r"'model'\) or a GpuBackend, got backend='cuda'"):
        autotune(configs=CONFIGS, backend="cuda")


def test_triton_kernel_without_the_gpu_backend_is_a_clear_error():
    kern = FakeTritonKernel(lambda x_ptr, n: None, lambda **kw: None)
    kern.fn.__name__ = "my_kernel"
    with pytest.raises(InvalidConfigError, match=r"triton.jit kernel 'my_kernel' needs the GPU "
                                                 r"backend.*from_triton\(my_kernel\)"):
        autotune(configs=CONFIGS, key=["n"])(kern)


def test_import_autotile_tuner_loads_neither_optuna_nor_torch():
    code = ("import sys, autotile.tuner, autotile; autotile.autotune; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('optuna', 'sqlalchemy', 'xgboost', 'torch', 'triton')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_gpu_options_are_validated():
    be = FakeBackend(_time)
    for kw, msg in ((dict(prune_factor=0.5), "prune_factor must be a number >= 1"),
                    (dict(retime_rounds=0), "retime_rounds must be an int >= 1"),
                    (dict(n_compile_jobs=0), "n_compile_jobs must be an int >= 1"),
                    (dict(compile_timeout_s=0), "compile_timeout_s must be > 0"),
                    (dict(model_budget_s=-1.0), r"model_budget_s must be a number of seconds "
                                                r">= 0 or None, got model_budget_s=-1.0")):
        with pytest.raises(InvalidConfigError, match=msg):
            autotune(configs=CONFIGS, key=["n"], backend=be, **kw)(double_kernel)


# -- disk cache ----------------------------------------------------------------------
def _tune(be, configs=CONFIGS, n=200, **kw):
    k = autotune(configs=configs, key=["n"], backend=be, model_prior=False, **kw)(double_kernel)
    x, y = _data(n)
    k[grid](x, y, n)
    np.testing.assert_array_equal(y, 2 * x)
    return k


def test_disk_cache_reuses_every_measured_config(tmp_path):
    _tune(FakeBackend(_time), cache_dir=tmp_path)
    be = FakeBackend(_time)
    k = _tune(be, cache_dir=tmp_path)
    assert k.cache_source == "disk" and k.cache_hit
    assert be.benched == [] and be.compiled == [] and be.launched == [64]
    assert be.n_clones == 0  # nothing measured: the call's tensors are not even copied
    assert k.best_config.kwargs["BLOCK"] == 64
    assert all(r.metrics["from_cache"] == 1.0 for r in k.history)
    assert [r.time_s for r in k.history] == [_time({"BLOCK": b}) for b in BLOCKS]


def test_disk_cache_is_keyed_on_gpu_name_and_triton_version(tmp_path):
    _tune(FakeBackend(_time), cache_dir=tmp_path)
    other_gpu = FakeBackend(_time, device="Fake H100")
    assert _tune(other_gpu, cache_dir=tmp_path).cache_source == "tuned"
    assert sorted(other_gpu.benched[:4]) == sorted(BLOCKS)
    other_triton = FakeBackend(_time, version="3.5.0")
    assert _tune(other_triton, cache_dir=tmp_path).cache_source == "tuned"
    assert len(other_triton.benched) >= 4
    same = FakeBackend(_time)
    assert _tune(same, cache_dir=tmp_path).cache_source == "disk"
    # three files: one per (GPU, Triton) pair
    assert len(list(tmp_path.glob("double_kernel-*.json"))) == 3


def test_disk_cache_is_keyed_on_the_call_key(tmp_path):
    _tune(FakeBackend(_time), cache_dir=tmp_path)
    be = FakeBackend(_time)
    assert _tune(be, n=300, cache_dir=tmp_path).cache_source == "tuned"


def test_adding_a_config_measures_only_the_new_one(tmp_path):
    _tune(FakeBackend(_time), cache_dir=tmp_path)
    new = LaunchConfig({"BLOCK": 256})
    times = {**{b: _time({"BLOCK": b}) for b in BLOCKS}, 256: 0.5e-3}
    be = FakeBackend(lambda meta: times[meta["BLOCK"]])
    k = _tune(be, configs=[*CONFIGS, new], cache_dir=tmp_path)
    assert be.benched == [256]  # only the new config is timed
    # compiled: the new one, and the cached best (64) to give the check its baseline
    assert be.compiled == [64, 256] and k.n_timed == 1
    assert k.best_config == new and k.cache_source == "tuned"
    rec = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert rec[256].status == "ok" and "from_cache" not in rec[256].metrics
    assert rec[16].metrics["from_cache"] == 1.0
    # the file now holds all five
    be2 = FakeBackend(lambda meta: times[meta["BLOCK"]])
    k2 = _tune(be2, configs=[*CONFIGS, new], cache_dir=tmp_path)
    assert k2.cache_source == "disk" and be2.benched == [] and k2.best_config == new


def test_added_config_that_is_wrong_is_caught_against_the_cached_best(tmp_path):
    _tune(FakeBackend(_time), cache_dir=tmp_path)

    def bad(x_ptr, y_ptr, n, BLOCK):
        y_ptr[:n] = 3 * x_ptr[:n] if BLOCK == 256 else 2 * x_ptr[:n]

    kern = FakeTritonKernel(double_kernel.fn, bad)
    be = FakeBackend(lambda meta: 0.1e-3 if meta["BLOCK"] == 256 else _time(meta))
    k = autotune(configs=[*CONFIGS, LaunchConfig({"BLOCK": 256})], key=["n"], backend=be,
                 model_prior=False, cache_dir=tmp_path)(kern)
    x, y = _data()
    k[grid](x, y, 200)
    rec = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert rec[256].status == "wrong" and k.best_config.kwargs["BLOCK"] == 64
    np.testing.assert_array_equal(y, 2 * x)


def test_failed_configs_are_remembered(tmp_path):
    be = FakeBackend(_time, compile_errors={16: "ptxas fatal"})
    _tune(be, cache_dir=tmp_path, compile_ahead=False)
    be2 = FakeBackend(_time)
    k = _tune(be2, cache_dir=tmp_path, compile_ahead=False)
    assert be2.compiled == [] and k.cache_source == "disk"
    rec = {r.config.kwargs["BLOCK"]: r for r in k.history}
    assert rec[16].status == "failed" and rec[16].reason == "compile: RuntimeError: ptxas fatal"


def test_configs_with_a_pre_hook_are_not_cached(tmp_path):
    hooked = LaunchConfig({"BLOCK": 256}, pre_hook=lambda kw: None)
    _tune(FakeBackend(lambda m: 1e-3), configs=[*CONFIGS, hooked], cache_dir=tmp_path)
    be = FakeBackend(lambda m: 1e-3)
    _tune(be, configs=[*CONFIGS, hooked], cache_dir=tmp_path)
    assert 256 in be.benched and 16 not in be.benched


def test_kernel_ref_loads_a_kernel_from_its_file(tmp_path):
    from autotile.tuner._gpu_backend import KernelRef

    path = tmp_path / "user_mod_13.py"
    path.write_text("class K:\n    def warmup(self):\n        pass\n\n"
                    "class Wrapper:\n    fn = K()\n\nmy_kernel = Wrapper()\n")
    ref = KernelRef("user_mod_13", str(path), "my_kernel")
    got = ref.load()
    assert type(got).__name__ == "K"  # unwrapped down to the object with warmup
    assert KernelRef("__main__", str(path), "my_kernel").load() is not None
    with pytest.raises(ImportError, match="module 'nowhere_13' is not importable"):
        KernelRef("nowhere_13", None, "k").load()


def test_ported_source_keeps_jit_and_drops_other_decorators(tmp_path):
    import types

    from autotile.measure.gpu import triton_source

    path = tmp_path / "decorated_13.py"
    path.write_text("import autotile.lang as tl\nfrom autotile.lang import jit\n"
                    "from autotile.tuner import autotune\n\n"
                    "@autotune(configs=[], key=['n'])\n@jit\n"
                    "def k(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n")
    ns: dict = {}
    exec(compile("def k(x_ptr, n, BLOCK):\n    pass\n", str(path), "exec"), ns)
    fn = types.FunctionType(ns["k"].__code__, {}, "k")  # its source file is `path`
    src = triton_source([fn])
    assert "\n@jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n" in src
    assert "autotune" not in src


def test_model_budget_leaves_the_rest_unranked_and_measured(monkeypatch):
    import types

    import autotile.tuner._gpu_tuner as gt

    clock = [0.0]  # a fake clock: each prediction takes 0.05 s
    monkeypatch.setattr(gt, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    calls = []

    def slow_scorer(config, args):
        calls.append(config.kwargs["BLOCK"])
        clock[0] += 0.05
        return 1e-3 / config.kwargs["BLOCK"]  # predicts the largest block fastest

    be = FakeBackend(_time)
    k = autotune(configs=CONFIGS, key=["n"], backend=be, scorer=slow_scorer,
                 model_budget_s=0.08, disk_cache=False)(double_kernel)
    x, y = _data(200)
    k[grid](x, y, 200)
    np.testing.assert_array_equal(y, 2 * x)
    # the first two predictions spent the budget: the others were never scored ...
    assert calls == list(BLOCKS[:2]) and len(k.predictions) == 2
    # ... and were measured after the ranked ones, not pruned
    assert sorted(be.benched[:len(BLOCKS)]) == sorted(BLOCKS)
    assert be.benched[0] == max(BLOCKS[:2])
    calls.clear()
    unlimited = autotune(configs=CONFIGS, key=["n"], backend=FakeBackend(_time),
                         scorer=slow_scorer, model_budget_s=None, disk_cache=False)(double_kernel)
    unlimited[grid](x, y, 200)
    assert calls == list(BLOCKS) and len(unlimited.predictions) == len(BLOCKS)
