"""A kernel added in one file and one registry line (``autotile/kernels/_swiglu.py``)
is scored by the GPU model, checked in the interpreter and tuned by @autotune by name,
with no other library edit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import autotile
from autotile.errors import MeasureError
from autotile.kernels import KERNELS
from autotile.kernels._swiglu import swiglu, swiglu_kernel, swiglu_reference
from autotile.measure import H200, KernelModelMeasurer, TritonMeasurer
from autotile.tuner import Config, autotune


def test_the_added_kernel_is_named_in_exactly_its_file_and_one_registry_line():
    root = Path(autotile.__file__).parent
    hits = subprocess.run(["grep", "-rlw", "SWIGLU_SPEC", str(root), "--include=*.py"],
                          capture_output=True, text=True).stdout.split()
    assert sorted(Path(h).name for h in hits) == ["_registry.py", "_swiglu.py"]
    reg = (root / "kernels" / "_registry.py").read_text()
    assert reg.count("SWIGLU_SPEC") == 2  # the import and the registry line


def test_the_added_kernel_is_modelled_and_runs():
    spec = KERNELS["swiglu"]
    m = KernelModelMeasurer("swiglu", {"n": 1 << 22}, H200, dtype="float16")
    r = m.measure({"BLOCK": 1024, "num_warps": 4})
    assert r.ok and r.metrics["hbm_bytes"] == pytest.approx(
        spec.compulsory_bytes({"n": 1 << 22}, "float16"), rel=0.02)
    g = np.random.default_rng(0).standard_normal(3000).astype(np.float32)
    u = np.random.default_rng(1).standard_normal(3000).astype(np.float32)
    np.testing.assert_allclose(swiglu(g, u), swiglu_reference(g, u), rtol=1e-5, atol=1e-6)


def test_the_added_kernel_is_timed_by_name_where_a_gpu_exists():
    try:
        import torch
        have_gpu = torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        have_gpu = False
    if have_gpu:  # pragma: no cover - the H200 run covers this
        assert TritonMeasurer("swiglu", {"n": 4096}).spec is KERNELS["swiglu"]
    else:
        with pytest.raises(MeasureError, match="needs triton and a CUDA device"):
            TritonMeasurer("swiglu", {"n": 4096})


def test_the_added_kernel_autotunes_with_its_spec_model():
    k = autotune([Config({"BLOCK": b}, num_warps=4) for b in (256, 1024)], key=["n_elements"])(
        swiglu_kernel)
    n = 2000
    g = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    u = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    k[lambda m: (-(-n // m["BLOCK"]),)](g, u, out, n)
    np.testing.assert_allclose(out, swiglu_reference(g, u), rtol=1e-5, atol=1e-6)
    assert all(r.status == "ok" for r in k.history)
